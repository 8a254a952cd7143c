// test-gjs.js: wsrt from GJS, with the real gjs (run by meson test)
//
// Copyright 2026 The wsrt authors
// SPDX-License-Identifier: LGPL-2.1-or-later

import Gio from 'gi://Gio';
import GLib from 'gi://GLib';
import GObject from 'gi://GObject';
import Ws from 'gi://Ws?version=1';
import WsTest from 'gi://WsTest?version=1';

import {test, assert, assertEqual, assertRejects, run} from './tap.js';

// What every GJS program that awaits wsrt tasks does once (the helper
// module, introspection/wsrt.js, does it for its importers).
Gio._promisify(Ws.Task.prototype, 'wait_async', 'wait_finish');
Gio._promisify(Ws.TaskGroup.prototype, 'wait_all_async', 'wait_all_finish');
Gio._promisify(Ws.TaskGroup.prototype, 'wait_any_async', 'wait_any_finish');

const rt = Ws.Runtime.new(2);
const isCancelled = e => e instanceof GLib.Error &&
    e.matches(Gio.IOErrorEnum, Gio.IOErrorEnum.CANCELLED);

test('a JS future that yields twice then returns 42', async () => {
    const mainCtx = GLib.MainContext.default();
    let polls = 0;
    const task = rt.spawn_local(null, cx => {
        assert(mainCtx.is_owner(), 'polled on the main thread');
        if (polls++ < 2)
            return cx.yield();
        cx.return_value(42);
        return Ws.Poll.READY;
    });
    assert(task instanceof Ws.Task, 'spawn_local returns a Ws.Task');
    assertEqual(await task.wait_async(null), true, 'wait_async');
    assertEqual(task.get_value(), 42, 'value');
    assertEqual(polls, 3, 'polls');
    assert(task.is_finished(), 'finished');
});

test('a waker woken from a JS timeout re-polls the task once', async () => {
    let polls = 0;
    let waker = null;
    const task = rt.spawn_local(null, cx => {
        polls++;
        if (waker === null) {
            waker = cx.get_waker();
            GLib.timeout_add(GLib.PRIORITY_DEFAULT, 10, () => {
                waker.wake();
                waker.wake();  // a second wake before the poll does nothing
                return GLib.SOURCE_REMOVE;
            });
            return Ws.Poll.PENDING;
        }
        cx.return_value('done');
        return Ws.Poll.READY;
    });
    await task.wait_async(null);
    assertEqual(task.get_value(), 'done', 'string value');
    assertEqual(polls, 2, 'polls');
});

test('a local task awaits a Ws.Sleep', async () => {
    const start = GLib.get_monotonic_time();
    const sleep = Ws.Sleep.new(20 * 1000);
    let polls = 0;
    const task = rt.spawn_local(null, cx => {
        polls++;
        return sleep.poll(cx);
    });
    await task.wait_async(null);
    assert(GLib.get_monotonic_time() >= sleep.get_deadline(), 'woke after the deadline');
    assert(sleep.get_deadline() - start >= 20 * 1000, 'deadline 20 ms on');
    assertEqual(polls, 2, 'polled when spawned and when the timer fired');
});

test('an error returned by a task rejects with its GLib.Error', async () => {
    const task = rt.spawn_local(null, cx => {
        cx.return_error(new GLib.Error(Ws.Error, Ws.Error.INVALID_CONFIG, 'bad input'));
        return Ws.Poll.READY;
    });
    const e = await assertRejects(task.wait_async(null),
        err => err instanceof GLib.Error && err.matches(Ws.Error, Ws.Error.INVALID_CONFIG),
        'JS task error');
    assertEqual(e.message, 'bad input', 'message');
    assertEqual(task.get_value(), null, 'no value after an error');

    const native = WsTest.spawn_failing(rt, 'no such thing');
    const e2 = await assertRejects(native.wait_async(null),
        err => err.matches(Gio.IOErrorEnum, Gio.IOErrorEnum.NOT_FOUND),
        'native task error');
    assertEqual(e2.message, 'no such thing', 'native message');
});

test('cancelling a pending task rejects with CANCELLED', async () => {
    const local = rt.spawn_local(null, () => Ws.Poll.PENDING);
    const native = WsTest.spawn_pending(rt);
    const waits = [local.wait_async(null), native.wait_async(null)];
    local.cancel();
    native.cancel();
    await assertRejects(waits[0], isCancelled, 'local task');
    await assertRejects(waits[1], isCancelled, 'native task');
    assert(local.is_finished() && native.is_finished(), 'both ended');
});

test('a cancelled GCancellable stops a wait, not the task', async () => {
    let release = false;
    let waker = null;
    const task = rt.spawn_local(null, cx => {
        if (!release) {
            waker = cx.get_waker();
            return Ws.Poll.PENDING;
        }
        cx.return_value(7);
        return Ws.Poll.READY;
    });
    const cancellable = new Gio.Cancellable();
    const wait = task.wait_async(cancellable);
    cancellable.cancel();
    await assertRejects(wait, isCancelled, 'wait');
    assert(!task.is_finished(), 'the task goes on');
    release = true;
    waker.wake();
    await task.wait_async(null);
    assertEqual(task.get_value(), 7, 'value after the cancelled wait');
});

test('a task spawned natively runs on a worker and is awaited from JS', async () => {
    const task = WsTest.spawn_sum(rt, 1000);
    await task.wait_async(null);
    assertEqual(task.get_value(), 500500, 'sum of 1..1000');
});

test('Runtime.load_file loads a file on the workers, a GBytes for JS', async () => {
    const dir = GLib.dir_make_tmp('test-gjs-XXXXXX');
    const path = GLib.build_filenamev([dir, 'data']);
    GLib.file_set_contents(path, 'loaded on a worker');
    try {
        const task = rt.load_file(Gio.File.new_for_path(path));
        assertEqual(await task.wait_async(null), true, 'wait_async');
        const bytes = task.get_value();
        assert(bytes instanceof GLib.Bytes, 'a GLib.Bytes');
        assertEqual(new TextDecoder().decode(bytes.toArray()), 'loaded on a worker',
            'contents');

        const missing = rt.load_file(Gio.File.new_for_path(`${path}.missing`));
        await assertRejects(missing.wait_async(null),
            e => e.matches(Gio.IOErrorEnum, Gio.IOErrorEnum.NOT_FOUND), 'NOT_FOUND');

        // A local task polls a Ws.IoOp on the main loop.
        const op = Ws.file_query_info(Gio.File.new_for_path(path), 'standard::size');
        const local = rt.spawn_local(null, cx => op.poll(cx));
        await local.wait_async(null);
        assertEqual(op.finish_info().get_size(), 18, 'size from a local task');
    } finally {
        GLib.unlink(path);
        GLib.rmdir(dir);
    }
});

test('Runtime.spawn_io: an enumeration and a subprocess on the workers', async () => {
    const dir = GLib.dir_make_tmp('test-gjs-XXXXXX');
    const names = ['a', 'b', 'c'];
    for (const name of names)
        GLib.file_set_contents(GLib.build_filenamev([dir, name]), name);
    try {
        // The task runs the GIO calls on a worker; the script takes the
        // typed result from the operation once the task has ended.
        const list = Ws.file_enumerate_children(Gio.File.new_for_path(dir), 'standard::name');
        const task = rt.spawn_io(list);
        assertEqual(await task.wait_async(null), true, 'wait_async');
        const infos = list.finish_infos();
        assert(infos.every(info => info instanceof Gio.FileInfo), 'Gio.FileInfo elements');
        assertEqual(infos.map(info => info.get_name()).sort().join(','), 'a,b,c', 'children');

        const missing = Ws.file_enumerate_children(Gio.File.new_for_path(`${dir}/none`), '*');
        await assertRejects(rt.spawn_io(missing).wait_async(null),
            e => e.matches(Gio.IOErrorEnum, Gio.IOErrorEnum.NOT_FOUND), 'missing directory');
    } finally {
        for (const name of names)
            GLib.unlink(GLib.build_filenamev([dir, name]));
        GLib.rmdir(dir);
    }

    const cat = Gio.Subprocess.new(['cat'],
        Gio.SubprocessFlags.STDIN_PIPE | Gio.SubprocessFlags.STDOUT_PIPE);
    const talk = Ws.subprocess_communicate(cat, new TextEncoder().encode('through cat'));
    await rt.spawn_io(talk).wait_async(null);
    const [ok, out, err] = talk.finish_communicate();
    assert(ok, 'exited with 0');
    assertEqual(new TextDecoder().decode(out.toArray()), 'through cat', 'stdout');
    assertEqual(err, null, 'stderr was no pipe');

    const failing = Ws.subprocess_communicate(Gio.Subprocess.new(['false'], 0), null);
    await assertRejects(rt.spawn_io(failing).wait_async(null),
        e => e.matches(GLib.spawn_exit_error_quark(), 1), 'exit status 1');

    // A cancelled task rejects with CANCELLED and cancels its GIO call
    // (tests/test-io-op.c checks the call); the process goes on until killed.
    const sleeper = Gio.Subprocess.new(['sleep', '60'], Gio.SubprocessFlags.STDOUT_PIPE);
    const waiting = rt.spawn_io(Ws.subprocess_communicate(sleeper, null));
    const cancelled = waiting.wait_async(null);
    waiting.cancel();
    await assertRejects(cancelled, isCancelled, 'cancelled');
    sleeper.force_exit();
});

test('task groups: all and first', async () => {
    const group = new Ws.TaskGroup();
    for (let n = 1; n <= 10; n++)
        group.add(WsTest.spawn_sum(rt, n * 100));
    assertEqual(await group.wait_all_async(null), true, 'wait_all');
    assertEqual(group.get_n_finished(), 10, 'finished');
    assertEqual(group.get_task(9).get_value(), 500500, 'last value');

    const race = new Ws.TaskGroup();
    const slow = WsTest.spawn_pending(rt);
    const fast = WsTest.spawn_sum(rt, 3);
    race.add(slow);
    race.add(fast);
    const first = await race.wait_any_async(null);
    assert(first === fast, 'the finished task wins');
    race.cancel_all();
    await assertRejects(slow.wait_async(null), isCancelled, 'cancel_all');
});

test('metrics are readable', async () => {
    const before = rt.get_metrics().get_spawned_tasks();
    const tasks = [];
    for (let i = 0; i < 20; i++)
        tasks.push(WsTest.spawn_sum(rt, i));
    for (const t of tasks)
        await t.wait_async(null);
    const m = rt.get_metrics();
    assertEqual(m.get_n_workers(), 2, 'workers');
    assert(m.get_spawned_tasks() >= before + 20, 'spawned counts the native spawns');
    let polls = 0;
    for (let w = 0; w < m.get_n_workers(); w++)
        polls += m.get_worker_poll_count(w);
    assert(polls >= 20, 'polls');
    assert(m.to_string().includes('worker'), 'to_string has the table');
});

test('worker-callback APIs are absent from GJS', async () => {
    for (const name of ['spawn', 'spawn_detached', 'spawn_blocking',
        'set_on_thread_start', 'set_on_thread_stop',
        'set_before_park', 'set_after_unpark'])
        assertEqual(rt[name], undefined, `Ws.Runtime.${name}`);
    const handle = rt.get_handle();
    assert(handle instanceof Ws.Handle, 'a handle');
    assertEqual(handle.spawn, undefined, 'Ws.Handle.spawn');
    assertEqual(Ws.block_in_place, undefined, 'Ws.block_in_place');
    assertEqual(typeof rt.spawn_local, 'function', 'spawn_local is there');
    assertEqual(Ws.Handle.get_current(), null, 'the main thread is no runtime thread');
});

test('the helper module: result, spawnPromise, all, race', async () => {
    // The module as installed; meson points at the source copy. (Imported
    // here, not with a top-level await: GJS runs no promise jobs inside a
    // main loop started from a module's top-level await.)
    const Wsrt = await import(GLib.filename_to_uri(GLib.getenv('WSRT_GJS_MODULE'), null));
    assertEqual(await Wsrt.result(WsTest.spawn_sum(rt, 10)), 55, 'result');

    const promised = Wsrt.spawnPromise(rt, async () => {
        await new Promise(resolve => GLib.timeout_add(GLib.PRIORITY_DEFAULT, 5, () => {
            resolve();
            return GLib.SOURCE_REMOVE;
        }));
        return 'from a promise';
    });
    assertEqual(await Wsrt.result(promised), 'from a promise', 'spawnPromise value');

    const rejected = Wsrt.spawnPromise(rt, async () => {
        throw new Error('js failure');
    });
    const e = await assertRejects(Wsrt.result(rejected),
        err => err.matches(Ws.Error, Ws.Error.FAILED), 'spawnPromise rejection');
    assertEqual(e.message, 'js failure', 'message');

    const values = await Wsrt.all([1, 2, 3].map(n => WsTest.spawn_sum(rt, n)));
    assertEqual(values.join(','), '1,3,6', 'all');

    const pending = WsTest.spawn_pending(rt);
    const first = await Wsrt.race([pending, WsTest.spawn_sum(rt, 4)]);
    assertEqual(first.get_value(), 10, 'race winner');
    await assertRejects(Wsrt.result(pending), isCancelled, 'race loser cancelled');
});

test('shutdown ends the runtime and refuses later spawns', async () => {
    const other = Ws.Runtime.new(1);
    const pending = other.spawn_local(null, () => Ws.Poll.PENDING);
    const wait = pending.wait_async(null);
    assertEqual(other.shutdown(-1), true, 'shutdown in time');
    await assertRejects(wait, isCancelled, 'pending local task cancelled');
    const late = other.spawn_local(null, () => Ws.Poll.READY);
    await assertRejects(late.wait_async(null), isCancelled, 'spawn after shutdown');
});

test('the helper module promisifies channels, limiters and sleeps', async () => {
    const Wsrt = await import(GLib.filename_to_uri(GLib.getenv('WSRT_GJS_MODULE'), null));
    const ch = Wsrt.Ws.Channel.new_for_type(1, GObject.TYPE_STRING);
    assertEqual(await ch.send_async('one', null), true, 'send_async as a promise');
    const blocked = ch.send_async('two', null);    // waits: the channel is full
    assertEqual(await ch.receive_async(null), 'one', 'receive_async as a promise');
    assertEqual(await blocked, true, 'the waiting send went in');
    assertEqual(await ch.receive_async(null), 'two', 'in order');
    ch.close();
    await assertRejects(ch.receive_async(null),
        e => e instanceof GLib.Error && e.matches(Ws.Error, Ws.Error.CLOSED), 'closed');

    const limiter = Ws.Limiter.new(1);
    assertEqual(await limiter.acquire_async(null), true, 'acquire_async as a promise');
    limiter.release();

    const start = GLib.get_monotonic_time();
    assertEqual(await Ws.Sleep.for_async(20000, null), true, 'Sleep.for_async');
    const nap = Ws.Sleep.new(10000);
    assertEqual(await nap.wait_async(null), true, 'Sleep.wait_async');
    assert(GLib.get_monotonic_time() - start >= 30000, 'never early');

    // The callback form still works.
    const done = await new Promise(resolve =>
        Ws.Sleep.new(0).wait_async(null, (_source, res) => resolve(res)));
    assert(done instanceof Gio.AsyncResult, 'callback form');
});

test('a limiter is awaited from JS, in order, with cancellation', async () => {
    const limiter = Ws.Limiter.new(1);
    const acquire = cancellable => new Promise((resolve, reject) => {
        limiter.acquire_async(cancellable, (source, res) => {
            try {
                resolve(limiter.acquire_finish(res));
            } catch (e) {
                reject(e);
            }
        });
    });
    assertEqual(limiter.get_max_permits(), 1, 'max permits');
    assertEqual(await acquire(null), true, 'a free permit');
    assertEqual(limiter.get_available(), 0, 'held');
    assertEqual(limiter.try_acquire(), false, 'try_acquire while held');

    // Waiters in order; a cancelled one leaves the queue.
    const order = [];
    const first = acquire(null).then(() => order.push('first'));
    const cancellable = new Gio.Cancellable();
    const dropped = acquire(cancellable);
    const third = acquire(null).then(() => order.push('third'));
    cancellable.cancel();
    await assertRejects(dropped, isCancelled, 'cancelled wait');
    limiter.release();
    await first;
    limiter.release();
    await third;
    assertEqual(order.join(','), 'first,third', 'order');
    limiter.release();
    assertEqual(limiter.get_available(), 1, 'every permit back');

    for (const name of ['spawn', 'spawn_blocking', 'acquire_poll'])
        assertEqual(limiter[name], undefined, `Ws.Limiter.${name}`);
});

test('a typed channel: local tasks and main-loop async calls, ints and strings', async () => {
    const send = (ch, value, cancellable = null) => new Promise((resolve, reject) => {
        ch.send_async(value, cancellable, (_source, res) => {
            try {
                resolve(ch.send_finish(res));
            } catch (e) {
                reject(e);
            }
        });
    });
    const receive = (ch, cancellable = null) => new Promise((resolve, reject) => {
        ch.receive_async(cancellable, (_source, res) => {
            try {
                resolve(ch.receive_finish(res));
            } catch (e) {
                reject(e);
            }
        });
    });
    const isClosed = e => e instanceof GLib.Error && e.matches(Ws.Error, Ws.Error.CLOSED);

    // Ints: the main loop sends, held back while the channel is full; a
    // local task receives with poll_receive_value until the close.
    const ints = Ws.Channel.new_for_type(2, GObject.TYPE_INT);
    assertEqual(ints.get_item_type(), GObject.TYPE_INT, 'item type');
    let sum = 0;
    const consumer = rt.spawn_local(null, cx => {
        for (;;) {
            let poll, value;
            try {
                [poll, value] = ints.poll_receive_value(cx);
            } catch (e) {
                if (!isClosed(e))
                    cx.return_error(e);
                return Ws.Poll.READY;
            }
            if (poll === Ws.Poll.PENDING)
                return poll;
            sum += value;
        }
    });
    for (let i = 1; i <= 20; i++)
        assertEqual(await send(ints, i), true, `send ${i}`);
    ints.close();
    await consumer.wait_async(null);
    assertEqual(sum, 210, 'sum of 1..20');
    await assertRejects(send(ints, 1), isClosed, 'send after close');

    // Strings: a local task sends with poll_send_value, the main loop
    // receives with receive_async.
    const strings = Ws.Channel.new_for_type(1, GObject.TYPE_STRING);
    const words = ['alpha', 'beta', 'gamma'];
    let next = 0;
    const producer = rt.spawn_local(null, cx => {
        for (; next < words.length; next++) {
            if (strings.poll_send_value(cx, words[next]) === Ws.Poll.PENDING)
                return Ws.Poll.PENDING;
        }
        strings.close();
        return Ws.Poll.READY;
    });
    const got = [];
    for (;;) {
        try {
            got.push(await receive(strings));
        } catch (e) {
            if (!isClosed(e))
                throw e;
            break;
        }
    }
    await producer.wait_async(null);
    assertEqual(got.join(','), 'alpha,beta,gamma', 'strings in order');

    // A cancelled send leaves nothing behind; a waiting receive ends with
    // CLOSED when the channel is closed.
    const full = Ws.Channel.new_for_type(1, GObject.TYPE_STRING);
    assertEqual(full.try_send_value('kept'), true, 'try_send_value');
    const cancellable = new Gio.Cancellable();
    const dropped = send(full, 'dropped', cancellable);
    cancellable.cancel();
    await assertRejects(dropped, isCancelled, 'cancelled send');
    assertEqual(full.get_length(), 1, 'one item inside');
    assertEqual(full.try_receive_value(), 'kept', 'try_receive_value');
    let empty = null;
    try {
        full.try_receive_value();
    } catch (e) {
        empty = e;
    }
    assert(empty !== null && empty.matches(Gio.IOErrorEnum, Gio.IOErrorEnum.WOULD_BLOCK),
        'the cancelled item never went in');
    const waiting = receive(full);
    full.close();
    await assertRejects(waiting, isClosed, 'closed while waiting');
});

test('a poll function that throws or returns nothing fails its task', async () => {
    const isFailed = e => e instanceof GLib.Error &&
        e.matches(Ws.Error, Ws.Error.FAILED);
    const Wsrt = await import(GLib.filename_to_uri(GLib.getenv('WSRT_GJS_MODULE'), null));

    // Through the helper module: the exception's message.
    const threw = Wsrt.spawnLocal(rt, () => {
        throw new Error('the scanner broke');
    });
    await assertRejects(Wsrt.result(threw),
        e => isFailed(e) && e.message.includes('the scanner broke'), 'helper: threw');
    const nothing = Wsrt.spawnLocal(rt, () => undefined);
    await assertRejects(Wsrt.result(nothing),
        e => isFailed(e) && e.message.includes('not Ws.Poll.READY'), 'helper: returned nothing');

    // Directly: GJS logs the exception and the task fails, not succeeds.
    const direct = rt.spawn_local(null, () => undefined);
    await assertRejects(direct.wait_async(null),
        e => isFailed(e) && e.message.includes('neither WS_POLL_READY nor WS_POLL_PENDING'),
        'direct: returned nothing');
});

test('a wait with a timeout: in time, or TIMED_OUT and the task cancelled', async () => {
    Gio._promisify(Ws.Task.prototype, 'wait_timeout_async', 'wait_timeout_finish');
    const stuck = rt.spawn_local(null, () => Ws.Poll.PENDING);
    await assertRejects(stuck.wait_timeout_async(10 * 1000, null),
        e => e instanceof GLib.Error && e.matches(Gio.IOErrorEnum, Gio.IOErrorEnum.TIMED_OUT),
        'timed out');
    await assertRejects(stuck.wait_async(null), isCancelled, 'the loser was cancelled');
    const quick = rt.spawn_local(null, cx => {
        cx.return_value('in time');
        return Ws.Poll.READY;
    });
    assertEqual(await quick.wait_timeout_async(3600 * 1000 * 1000, null), true, 'in time');
    assertEqual(quick.get_value(), 'in time', 'its value');
});

test('a send of the wrong type rejects instead of hanging', async () => {
    const strings = Ws.Channel.new_for_type(1, GObject.TYPE_STRING);
    // A number on a channel of strings: wsrt prints a critical naming
    // both types, and the await rejects with INVALID_ARGUMENT.
    const sent = new Promise((resolve, reject) => {
        strings.send_async(3, null, (_source, res) => {
            try {
                resolve(strings.send_finish(res));
            } catch (e) {
                reject(e);
            }
        });
    });
    await assertRejects(sent,
        e => e instanceof GLib.Error &&
            e.matches(Gio.IOErrorEnum, Gio.IOErrorEnum.INVALID_ARGUMENT),
        'refused');
    assertEqual(strings.get_length(), 0, 'nothing went in');

    // try_send_value throws, with both types in the message, where it
    // returned false with no error.
    let thrown = null;
    try {
        strings.try_send_value(3);
    } catch (e) {
        thrown = e;
    }
    assert(thrown instanceof GLib.Error &&
        thrown.matches(Gio.IOErrorEnum, Gio.IOErrorEnum.INVALID_ARGUMENT), 'try_send_value throws');
    assert(thrown.message.includes('gint') && thrown.message.includes('gchararray'),
        `the message names both types: ${thrown.message}`);
});

test('the library carries the helper module as a resource, the file as installed', async () => {
    // rt above used the namespace, so libwsrt-1 is loaded and its
    // resource registered (doc/getting-started-gjs.md, "The helper module").
    const uri = 'resource:///org/gnome/wsrt/js/wsrt.js';
    const [, fromResource] = Gio.File.new_for_uri(uri).load_contents(null);
    const [, fromFile] = Gio.File.new_for_path(GLib.getenv('WSRT_GJS_MODULE')).load_contents(null);
    const decoder = new TextDecoder();
    assertEqual(decoder.decode(fromResource), decoder.decode(fromFile), 'the same text');

    const Wsrt = await import(uri);
    const task = Wsrt.spawnLocal(rt, cx => {
        cx.return_value(42);
        return Ws.Poll.READY;
    });
    assertEqual(await Wsrt.result(task), 42, 'imported from the resource, it works');
});

test('a channel callback: the source is null, the captured channel finishes', async () => {
    // doc/getting-started-gjs.md, "Channels": a boxed type gives the
    // callback no source object; the closure has the channel.
    const ch = Ws.Channel.new_for_type(2, GObject.TYPE_STRING);
    ch.try_send_value('captured');
    const got = await new Promise((resolve, reject) => {
        ch.receive_async(null, (source, res) => {
            try {
                assertEqual(source, null, 'the source object');
                resolve(ch.receive_finish(res));
            } catch (e) {
                reject(e);
            }
        });
    });
    assertEqual(got, 'captured', 'received through the captured channel');
});

test('a context kept past its poll is refused, not a crash', async () => {
    let kept = null;
    const task = rt.spawn_local(null, cx => {
        kept = cx;
        cx.return_value(1);
        return Ws.Poll.READY;
    });
    await task.wait_async(null);
    await new Promise(resolve => GLib.idle_add(GLib.PRIORITY_DEFAULT, () => {
        resolve();
        return GLib.SOURCE_REMOVE;
    }));
    // A critical names the rule; the refusal returns PENDING.
    assertEqual(kept.yield(), Ws.Poll.PENDING, 'the refusal');
});

run();
