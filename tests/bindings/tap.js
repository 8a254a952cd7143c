// tap.js: a small TAP runner for the GJS tests, with a watchdog
//
// Copyright 2026 The wsrt authors
// SPDX-License-Identifier: LGPL-2.1-or-later
//
// Each test is an async function run in order on the main loop. A test
// that throws is "not ok"; one that has not settled within the watchdog
// (WS_TEST_TIMEOUT seconds, 30 by default) aborts the run with "Bail out!",
// so a hang is a failure, not a CI timeout.

import GLib from 'gi://GLib';
import System from 'system';

const tests = [];

export function test(name, fn) {
    tests.push({name, fn});
}

export function assert(cond, what) {
    if (!cond)
        throw new Error(`assertion failed: ${what}`);
}

export function assertEqual(actual, expected, what) {
    if (actual !== expected)
        throw new Error(`${what}: expected ${expected}, got ${actual}`);
}

export async function assertRejects(promise, check, what) {
    try {
        await promise;
    } catch (e) {
        if (!check(e))
            throw new Error(`${what}: wrong error: ${e}`);
        return e;
    }
    throw new Error(`${what}: resolved, expected a rejection`);
}

// Lets the main loop run until @cond() holds.
export function iterateUntil(cond) {
    const ctx = GLib.MainContext.default();
    while (!cond())
        ctx.iteration(true);
}

export function run() {
    const env = GLib.getenv('WS_TEST_TIMEOUT');
    const secs = env ? Math.max(1, parseInt(env)) : 30;
    const loop = new GLib.MainLoop(null, false);
    let failed = 0;
    let current = '';

    print(`1..${tests.length}`);
    GLib.timeout_add_seconds(GLib.PRIORITY_HIGH, secs * tests.length, () => {
        print(`Bail out! watchdog: test ${current} hung`);
        System.exit(1);
    });
    (async () => {
        let i = 0;
        for (const t of tests) {
            i++;
            current = t.name;
            try {
                await t.fn();
                print(`ok ${i} ${t.name}`);
            } catch (e) {
                failed++;
                print(`not ok ${i} ${t.name}`);
                for (const line of `${e}\n${e.stack ?? ''}`.split('\n'))
                    print(`# ${line}`);
            }
        }
        loop.quit();
    })();
    loop.run();
    System.exit(failed ? 1 : 0);
}
