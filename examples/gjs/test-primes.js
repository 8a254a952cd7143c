// test-primes.js: the GJS example's logic, without a window (TAP)
//
// Copyright 2026 The wsrt authors
// SPDX-License-Identifier: LGPL-2.1-or-later
//
// Run by meson test with gjs -m, GI_TYPELIB_PATH and LD_LIBRARY_PATH set
// to the build directories. A watchdog ends the run if a case hangs.

import GLib from 'gi://GLib';
import Gio from 'gi://Gio';
import Ws from 'gi://Ws?version=1';
import WsExample from 'gi://WsExample?version=1';
import System from 'system';

import {countPrimes, describeWorkers} from './primes.js';

const WATCHDOG_SECONDS = 60;
const cases = [];
const test = (name, body) => cases.push({name, body});

function assert(condition, message) {
    if (!condition)
        throw new Error(`assertion failed: ${message}`);
}

// Resolves after @ms milliseconds of main loop.
function sleep(ms) {
    return new Promise(resolve => GLib.timeout_add(GLib.PRIORITY_DEFAULT, ms, () => {
        resolve();
        return GLib.SOURCE_REMOVE;
    }));
}

test('counts the primes below 1,000,000 in 50 native tasks', async () => {
    const runtime = Ws.Runtime.new(2);
    const progress = [];
    const count = await countPrimes(runtime, 1000000, {
        chunks: 50,
        onProgress: (done, total) => progress.push([done, total]),
    });
    assert(count === 78498, `78498 primes, got ${count}`);
    assert(progress.length === 50, `50 progress calls, got ${progress.length}`);
    assert(progress.every(([done, total], i) => done === i + 1 && total === 50),
        'progress counts 1 to 50 of 50');
    print(`# ${describeWorkers(runtime)}`);
    assert(runtime.shutdown(-1), 'the runtime shuts down');
});

test('small ranges: 25 primes below 100, none below 2', async () => {
    const runtime = Ws.Runtime.new(2);
    assert(await countPrimes(runtime, 100, {chunks: 7}) === 25, '25 primes below 100');
    assert(await countPrimes(runtime, 2) === 0, 'no prime below 2');
    assert(runtime.shutdown(-1), 'the runtime shuts down');
});

test('cancelling stops the native tasks: they do not test the rest', async () => {
    const runtime = Ws.Runtime.new(2);
    const limit = 200000000;      // minutes of work if it were not cancelled
    const cancellable = new Gio.Cancellable();
    const before = WsExample.get_numbers_tested();
    let landed = 0;
    let error = null;

    GLib.timeout_add(GLib.PRIORITY_DEFAULT, 100, () => {
        cancellable.cancel();
        return GLib.SOURCE_REMOVE;
    });
    try {
        await countPrimes(runtime, limit, {chunks: 100, cancellable, onProgress: () => landed++});
    } catch (e) {
        error = e;
    }
    assert(error?.matches?.(Gio.IOErrorEnum, Gio.IOErrorEnum.CANCELLED),
        `the count rejects with CANCELLED, got ${error}`);

    // Every task has ended (the promise waited for all of them), so the
    // count of tested numbers is final: it does not grow any more.
    const tested = WsExample.get_numbers_tested() - before;
    await sleep(200);
    const testedLater = WsExample.get_numbers_tested() - before;
    print(`# cancelled after 100 ms: ${landed} of 100 tasks had ended; ` +
          `${tested} of ${limit} numbers tested`);
    assert(tested < limit / 2, `most of the range was never tested (${tested})`);
    assert(testedLater === tested, `nothing was tested after the cancel (${tested} then ${testedLater})`);
    assert(runtime.shutdown(-1), 'the runtime shuts down');
});

test('a cancellable cancelled before the start rejects at once', async () => {
    const runtime = Ws.Runtime.new(2);
    const cancellable = new Gio.Cancellable();
    cancellable.cancel();
    let error = null;
    try {
        await countPrimes(runtime, 100000000, {cancellable});
    } catch (e) {
        error = e;
    }
    assert(error?.matches?.(Gio.IOErrorEnum, Gio.IOErrorEnum.CANCELLED),
        `the count rejects with CANCELLED, got ${error}`);
    assert(runtime.shutdown(-1), 'the runtime shuts down');
});

GLib.timeout_add_seconds(GLib.PRIORITY_HIGH, WATCHDOG_SECONDS, () => {
    print(`Bail out! watchdog: no end after ${WATCHDOG_SECONDS} s`);
    System.exit(1);
});

// The cases, one after the other, on the main loop.
const loop = new GLib.MainLoop(null, false);
let failed = 0;
print(`1..${cases.length}`);
(async () => {
    for (const [i, {name, body}] of cases.entries()) {
        try {
            await body();
            print(`ok ${i + 1} - ${name}`);
        } catch (e) {
            failed++;
            print(`not ok ${i + 1} - ${name}`);
            for (const line of `${e}\n${e.stack ?? ''}`.split('\n'))
                print(`# ${line}`);
        }
    }
    loop.quit();
})();
loop.run();
System.exit(failed ? 1 : 0);
