// primes.js: the logic of the GJS example, without any window
//
// Copyright 2026 The wsrt authors
// SPDX-License-Identifier: LGPL-2.1-or-later
//
// JavaScript asks native code for tasks and awaits them; the work itself
// runs on the wsrt workers, in C (ws-example.c). JavaScript never runs on a
// worker: every line here runs on the main loop.

import Gio from 'gi://Gio';
import Ws from 'gi://Ws?version=1';
import WsExample from 'gi://WsExample?version=1';

// `await task.wait_async(cancellable)`: ws_task_wait_async() calls back on
// the main loop; _promisify turns the _async/_finish pair into a promise.
Gio._promisify(Ws.Task.prototype, 'wait_async', 'wait_finish');

/**
 * Counts the primes below @limit on the workers of @runtime, cut into
 * @chunks native tasks.
 *
 * @param {Ws.Runtime} runtime - where the tasks run
 * @param {number} limit - count the primes p < limit
 * @param {object} [options]
 * @param {number} [options.chunks] - how many tasks (default 64)
 * @param {function(number, number)} [options.onProgress] - called on the
 *   main loop with (tasks done, tasks in all) each time a task ends
 * @param {Gio.Cancellable} [options.cancellable] - cancelling it cancels
 *   every task still running (ws_task_cancel()): they stop at their next
 *   poll, and the promise rejects with Gio.IOErrorEnum.CANCELLED
 * @returns {Promise<number>} the number of primes
 */
export async function countPrimes(runtime, limit, {chunks = 64, onProgress = null, cancellable = null} = {}) {
    const size = Math.max(1, Math.ceil(limit / chunks));
    const tasks = [];
    for (let start = 0; start < limit; start += size)
        tasks.push(WsExample.count_primes(runtime, start, Math.min(limit, start + size)));

    const cancelAll = () => tasks.forEach(task => task.cancel());
    // g_cancellable_connect(): calls at once if already cancelled.
    const handlerId = cancellable?.connect(cancelAll) ?? 0;

    let done = 0;
    const outcomes = await Promise.allSettled(tasks.map(async task => {
        try {
            await task.wait_async(null);
        } catch (e) {
            cancelAll();   // one failed: the whole count is lost
            throw e;
        }
        done++;
        onProgress?.(done, tasks.length);
        return task.get_value();
    }));

    if (handlerId)
        cancellable.disconnect(handlerId);
    const failed = outcomes.find(o => o.status === 'rejected');
    if (failed)
        throw failed.reason;
    return outcomes.reduce((sum, o) => sum + o.value, 0);
}

/**
 * One line per worker: its polls and steals, from the runtime's metrics.
 *
 * @param {Ws.Runtime} runtime - the runtime
 * @returns {string} e.g. "worker 0: 120 polls, 3 steals · worker 1: …"
 */
export function describeWorkers(runtime) {
    const metrics = runtime.get_metrics();
    const parts = [];
    for (let i = 0; i < metrics.get_n_workers(); i++) {
        parts.push(`worker ${i}: ${metrics.get_worker_poll_count(i)} polls, ` +
                   `${metrics.get_worker_steal_count(i)} steals`);
    }
    return parts.join(' · ');
}
