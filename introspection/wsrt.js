// wsrt.js: await-friendly helpers for GJS
//
// Copyright 2026 The wsrt authors
// SPDX-License-Identifier: LGPL-2.1-or-later
//
// Import it once; it promisifies wsrt's async methods, so that
// `await task.wait_async (null)`, `await ch.receive_async (null)`,
// `await limiter.acquire_async (null)` and
// `await Ws.Sleep.for_async (usec, null)` work with no boilerplate.
// libwsrt-1 carries it as a resource, registered when the library is
// loaded, which GJS does at the first use of the Ws namespace; so, under
// any prefix:
//
//     import Ws from 'gi://Ws?version=1';
//     const rt = Ws.Runtime.get_default();
//     const Wsrt = await import('resource:///org/gnome/wsrt/js/wsrt.js');
//
// The file is installed too: `pkg-config --variable=gjs_module wsrt-1`
// prints its path. doc/getting-started-gjs.md tells the trap of a main
// loop run after a top-level await.
//
// Everything here runs on the thread that runs the main loop: JavaScript
// never runs on a worker (doc/architecture.md, "Rules: bindings"). Native code (C, Vala) runs tasks on
// the workers and hands JavaScript the WsTask to await.

import Gio from 'gi://Gio';
import GLib from 'gi://GLib';
import Ws from 'gi://Ws?version=1';

export {Ws};

Gio._promisify(Ws.Task.prototype, 'wait_async', 'wait_finish');
Gio._promisify(Ws.TaskGroup.prototype, 'wait_all_async', 'wait_all_finish');
Gio._promisify(Ws.TaskGroup.prototype, 'wait_any_async', 'wait_any_finish');
Gio._promisify(Ws.Sleep, 'for_async', 'for_finish');

// Gio._promisify calls the finish method on the callback's source object,
// or else on the prototype; the boxed types (channels, limiters, sleeps)
// complete with no source object, so their finish is called here on the
// instance the async method was called on. Called with its callback, the
// method is the plain one.
function promisifyBoxed(proto, asyncName, finishName) {
    const original = proto[asyncName];
    if (original === undefined || original._wsrtPromisified)
        return;
    const promisified = function (...args) {
        if (args.length === original.length)
            return original.call(this, ...args);
        return new Promise((resolve, reject) => {
            original.call(this, ...args, (_source, res) => {
                try {
                    resolve(this[finishName](res));
                } catch (e) {
                    reject(e);
                }
            });
        });
    };
    promisified._wsrtPromisified = true;
    proto[asyncName] = promisified;
}

promisifyBoxed(Ws.Channel.prototype, 'send_async', 'send_finish');
promisifyBoxed(Ws.Channel.prototype, 'receive_async', 'receive_finish');
promisifyBoxed(Ws.Limiter.prototype, 'acquire_async', 'acquire_finish');
promisifyBoxed(Ws.Sleep.prototype, 'wait_async', 'wait_finish');

/**
 * Waits for @task on the main loop and returns its value.
 *
 * Resolves with the task's result (a task that returned the integer 42
 * gives 42; a task without a value gives null), or rejects with the task's
 * GLib.Error (Gio.IOErrorEnum.CANCELLED if it was cancelled, or if
 * @cancellable was). A native task that returned a C pointer
 * (ws_context_return_pointer) has no value for JavaScript: get_value()
 * logs a critical and gives null.
 *
 * @param {Ws.Task} task - the task to await
 * @param {Gio.Cancellable} [cancellable] - stops the wait (not the task)
 * @returns {Promise<*>} the value the task returned
 */
export async function result(task, cancellable = null) {
    await task.wait_async(cancellable);
    return task.get_value();
}

/**
 * Runs a JavaScript function as a local task: @poll is called with the
 * task's Ws.Context on the main loop of @context (null: the thread-default
 * one) until it returns Ws.Poll.READY. A @poll that throws fails the task
 * with the exception's message (a GLib.Error as it is); one that returns
 * anything but Ws.Poll.READY or Ws.Poll.PENDING fails it too. (A task
 * spawned with runtime.spawn_local() directly fails with a generic
 * Ws.Error.FAILED in both cases, and GJS logs the exception.)
 *
 * @param {Ws.Runtime} runtime - the runtime the task belongs to
 * @param {function(Ws.Context): Ws.Poll} poll - the poll function
 * @param {GLib.MainContext} [context] - the context that polls it
 * @returns {Ws.Task} its join handle
 */
export function spawnLocal(runtime, poll, context = null) {
    return runtime.spawn_local(context, cx => {
        let ret;
        try {
            ret = poll(cx);
        } catch (e) {
            // The task fails with the exception's message.
            cx.return_error(_toGError(e));
            return Ws.Poll.READY;
        }
        if (ret !== Ws.Poll.READY && ret !== Ws.Poll.PENDING) {
            cx.return_error(new GLib.Error(Ws.Error, Ws.Error.FAILED,
                `the poll function returned ${ret}, not Ws.Poll.READY or Ws.Poll.PENDING`));
            return Ws.Poll.READY;
        }
        return ret;
    });
}

function _setResult(cx, value) {
    if (value === undefined || value === null)
        return;
    cx.return_value(value);
}

function _toGError(error) {
    if (error instanceof GLib.Error)
        return error;
    return new GLib.Error(Ws.Error, Ws.Error.FAILED,
        error instanceof Error ? error.message : String(error));
}

/**
 * Turns a JavaScript promise (or an async function) into a Ws.Task that
 * native code can await, poll or cancel like any other task.
 *
 * The promise is started on the first poll, on the main loop. Its value
 * becomes the task's value; a rejection becomes the task's error (a
 * GLib.Error as it is, anything else as Ws.Error.FAILED with its message).
 * Cancelling the task stops waiting for the promise, which JavaScript
 * cannot abort; pass a Gio.Cancellable into @fn for that.
 *
 * @param {Ws.Runtime} runtime - the runtime the task belongs to
 * @param {function(): Promise<*>} fn - the async function to run
 * @param {GLib.MainContext} [context] - the context that polls it
 * @returns {Ws.Task} its join handle
 */
export function spawnPromise(runtime, fn, context = null) {
    let state = 'new';
    let outcome;
    let waker = null;

    return runtime.spawn_local(context, cx => {
        if (state === 'new') {
            state = 'running';
            waker = cx.get_waker();
            Promise.resolve()
                .then(fn)
                .then(value => {
                    state = 'resolved';
                    outcome = value;
                }, error => {
                    state = 'rejected';
                    outcome = error;
                })
                .finally(() => waker.wake());
        }
        if (state === 'running')
            return Ws.Poll.PENDING;
        waker = null;
        if (state === 'rejected')
            cx.return_error(_toGError(outcome));
        else
            _setResult(cx, outcome);
        return Ws.Poll.READY;
    });
}

/**
 * Waits for every task of @tasks and returns their values, in order.
 * Rejects with the first error met in order of the list.
 *
 * @param {Ws.Task[]} tasks - the tasks to await
 * @param {Gio.Cancellable} [cancellable] - stops the wait
 * @returns {Promise<Array>} their values
 */
export async function all(tasks, cancellable = null) {
    const group = new Ws.TaskGroup();
    for (const task of tasks)
        group.add(task);
    await group.wait_all_async(cancellable);
    const values = [];
    for (const task of tasks)
        values.push(await result(task, cancellable));
    return values;
}

/**
 * Waits for the first of @tasks to finish, cancels the others and
 * returns the first one.
 *
 * @param {Ws.Task[]} tasks - the tasks to race
 * @param {Gio.Cancellable} [cancellable] - stops the wait
 * @returns {Promise<Ws.Task>} the task that finished first
 */
export async function race(tasks, cancellable = null) {
    const group = new Ws.TaskGroup();
    for (const task of tasks)
        group.add(task);
    const first = await group.wait_any_async(cancellable);
    for (const task of tasks) {
        if (task !== first)
            task.cancel();
    }
    return first;
}
