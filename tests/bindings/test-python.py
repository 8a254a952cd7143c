#!/usr/bin/env python3
# test-python.py: wsrt from Python with PyGObject (python3-gi), run by
# meson test when a python3 with the gi module is found
#
# Copyright 2026 The wsrt authors
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# What doc/getting-started-python.md shows: local tasks (spawn_local),
# native tasks awaited from Python, load_file, typed channels (with the
# callback that finishes on the captured channel), cancellation, and the
# errors of a poll function that raises and of a value of the wrong type.
#
# TAP output. Each test runs on the main loop until it calls done(); a
# watchdog (a GLib timeout, WS_TEST_TIMEOUT seconds, 30 by default) prints
# "Bail out!" and exits non-zero if one has not finished by then.

import os
import sys
import threading

import gi

gi.require_version('Ws', '1')
gi.require_version('WsTest', '1')
from gi.repository import Gio, GLib, GObject, Ws, WsTest  # noqa: E402

tests = []


def test(fn):
    tests.append(fn)
    return fn


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure('assertion failed: ' + what)


def check_equal(actual, expected, what):
    if actual != expected:
        raise Failure('%s: expected %r, got %r' % (what, expected, actual))


def is_cancelled(e):
    return isinstance(e, GLib.Error) and e.matches(Gio.io_error_quark(), Gio.IOErrorEnum.CANCELLED)


rt = Ws.Runtime.new(2)
main_thread = threading.get_ident()


class Run:
    """One test's run: the loop it iterates and its outcome."""

    def __init__(self):
        self.loop = GLib.MainLoop()
        self.error = None
        self.finished = False

    def done(self):
        self.finished = True
        self.loop.quit()

    def fail(self, e):
        if self.error is None:
            self.error = e
        self.done()

    def guard(self, fn):
        """Wraps a callback: an exception in it fails the test."""
        def wrapped(*args):
            try:
                return fn(*args)
            except Exception as e:  # noqa: BLE001
                self.fail(e)
                return None
        return wrapped


def wait_value(run, task, then):
    """Awaits @task on the main loop, then calls then(value)."""
    def waited(source, res):
        source.wait_finish(res)        # a Ws.Task is a GObject: source is the task
        then(source.get_value())
    task.wait_async(None, run.guard(waited))


@test
def local_task_yields_then_returns(run):
    """spawn_local: a Python poll function on the main loop."""
    polls = []

    def poll(cx):
        check(threading.get_ident() == main_thread, 'polled on the main thread')
        polls.append(1)
        if len(polls) < 3:
            return cx.yield_()
        cx.return_value(42)
        return Ws.Poll.READY

    task = rt.spawn_local(None, poll)

    def then(value):
        check_equal(value, 42, 'value')
        check_equal(len(polls), 3, 'polls')
        run.done()
    wait_value(run, task, then)


@test
def waker_from_a_timeout(run):
    """A waker kept past the poll (not the context) wakes the task later."""
    state = {'waker': None, 'polls': 0}

    def poll(cx):
        state['polls'] += 1
        if state['waker'] is None:
            state['waker'] = cx.get_waker()

            def later():
                state['waker'].wake()
                return GLib.SOURCE_REMOVE
            GLib.timeout_add(5, run.guard(later))
            return Ws.Poll.PENDING
        cx.return_value('woken')
        return Ws.Poll.READY

    task = rt.spawn_local(None, poll)

    def then(value):
        check_equal(value, 'woken', 'value')
        check_equal(state['polls'], 2, 'polls')
        run.done()
    wait_value(run, task, then)


@test
def native_task_on_the_workers(run):
    """A task that C code runs on the workers, awaited from Python."""
    def then(value):
        check_equal(value, 55, 'sum of 1..10')
        run.done()
    wait_value(run, WsTest.spawn_sum(rt, 10), then)


@test
def load_file(run):
    """runtime.load_file: the load on a worker, its GLib.Bytes as the value."""
    path = os.path.abspath(__file__)
    with open(path, 'rb') as f:
        expected = f.read()

    def then(value):
        check(isinstance(value, GLib.Bytes), 'a GLib.Bytes')
        check_equal(value.get_data(), expected, 'the file')
        run.done()
    wait_value(run, rt.load_file(Gio.File.new_for_path(path)), then)


@test
def load_file_missing(run):
    """A failed load rejects with the GIO error."""
    task = rt.load_file(Gio.File.new_for_path('/nonexistent/wsrt-test'))

    def waited(source, res):
        try:
            source.wait_finish(res)
        except GLib.Error as e:
            check(e.matches(Gio.io_error_quark(), Gio.IOErrorEnum.NOT_FOUND), 'NOT_FOUND: ' + e.message)
            run.done()
            return
        raise Failure('the load of a missing file succeeded')
    task.wait_async(None, run.guard(waited))


@test
def channel_callback_closes_over_the_channel(run):
    """receive_async's source object is None (a boxed type): the callback
    finishes on the channel it captured (doc/getting-started-python.md)."""
    ch = Ws.Channel.new_for_type(4, GObject.TYPE_STRING)
    check(ch.try_send_value('hello'), 'try_send_value')

    def received(source, res):
        check(source is None, 'the source object is None')
        check_equal(ch.receive_finish(res), 'hello', 'received')
        run.done()
    ch.receive_async(None, run.guard(received))


@test
def channel_between_the_main_loop_and_a_local_task(run):
    """A local task receives with poll_receive_value until the channel is
    closed; the main loop sends with send_async (waiting while full)."""
    ch = Ws.Channel.new_for_type(1, GObject.TYPE_INT)
    got = []

    def consume(cx):
        while True:
            try:
                poll, value = ch.poll_receive_value(cx)
            except GLib.Error as e:
                check(e.matches(Ws.error_quark(), Ws.Error.CLOSED), 'CLOSED: ' + e.message)
                cx.return_value(len(got))
                return Ws.Poll.READY
            if poll == Ws.Poll.PENDING:
                return poll
            got.append(value)

    consumer = rt.spawn_local(None, consume)
    items = [1, 2, 3, 4, 5]

    def send_next(*_):
        if not items:
            ch.close()
            return
        ch.send_async(items.pop(0), None, run.guard(sent))

    def sent(source, res):
        check(ch.send_finish(res), 'sent')
        send_next()

    def then(value):
        check_equal(value, 5, 'items received')
        check_equal(got, [1, 2, 3, 4, 5], 'in order')
        run.done()

    send_next()
    wait_value(run, consumer, then)


@test
def channel_value_of_the_wrong_type(run):
    """A number on a channel of strings: a critical, and a GLib.Error naming
    both types (not a bare False)."""
    ch = Ws.Channel.new_for_type(1, GObject.TYPE_STRING)
    try:
        ch.try_send_value(3)
    except GLib.Error as e:
        check(e.matches(Gio.io_error_quark(), Gio.IOErrorEnum.INVALID_ARGUMENT), 'INVALID_ARGUMENT')
        check('gint' in e.message and 'gchararray' in e.message, 'both types named: ' + e.message)
        check_equal(ch.get_length(), 0, 'nothing went in')
        run.done()
        return
    raise Failure('try_send_value of a wrong type did not raise')


@test
def cancel_a_task(run):
    """task.cancel () ends a pending task: its wait raises CANCELLED."""
    task = rt.spawn_local(None, lambda cx: Ws.Poll.PENDING)

    def waited(source, res):
        try:
            source.wait_finish(res)
        except GLib.Error as e:
            check(is_cancelled(e), 'CANCELLED: ' + e.message)
            check(task.is_finished(), 'the task ended')
            run.done()
            return
        raise Failure('a cancelled task succeeded')
    task.wait_async(None, run.guard(waited))
    task.cancel()


@test
def cancel_a_wait_not_the_task(run):
    """A Gio.Cancellable stops the wait; the task goes on."""
    task = WsTest.spawn_pending(rt)
    cancellable = Gio.Cancellable()

    def waited(source, res):
        try:
            source.wait_finish(res)
        except GLib.Error as e:
            check(is_cancelled(e), 'the wait is cancelled')
            check(not task.is_finished(), 'the task still runs')
            task.cancel()
            run.done()
            return
        raise Failure('the cancelled wait succeeded')
    task.wait_async(cancellable, run.guard(waited))
    cancellable.cancel()


@test
def poll_function_that_raises(run):
    """The task fails with Ws.Error.FAILED, whose message names bindings in
    general, not one language; it never ends as a success."""
    def poll(cx):
        raise ValueError('raised on purpose by the test')

    task = rt.spawn_local(None, poll)

    def waited(source, res):
        try:
            source.wait_finish(res)
        except GLib.Error as e:
            check(e.matches(Ws.error_quark(), Ws.Error.FAILED), 'FAILED')
            check('PyGObject' in e.message, 'names PyGObject: ' + e.message)
            check('JavaScript' not in e.message, 'language-neutral: ' + e.message)
            run.done()
            return
        raise Failure('a poll function that raised succeeded')
    task.wait_async(None, run.guard(waited))


@test
def stale_context_is_refused(run):
    """A Ws.Context kept past its poll and used later: refused with a
    critical that names the rule (returns the refusal's PENDING), not a
    crash (the context lived on the dispatch's stack)."""
    kept = []

    def poll(cx):
        kept.append(cx)
        cx.return_value(1)
        return Ws.Poll.READY

    task = rt.spawn_local(None, poll)

    def then(value):
        check_equal(value, 1, 'value')

        def later():
            check_equal(kept[0].yield_(), Ws.Poll.PENDING, 'the refusal')
            run.done()
            return GLib.SOURCE_REMOVE
        GLib.idle_add(run.guard(later))
    wait_value(run, task, then)


def main():
    timeout = int(os.environ.get('WS_TEST_TIMEOUT', '30'))
    failed = 0
    print('1..%d' % len(tests), flush=True)
    for i, fn in enumerate(tests, 1):
        run = Run()
        name = fn.__name__

        def watchdog(name=name):
            print('Bail out! watchdog: test %s hung' % name, flush=True)
            os._exit(1)
        source = GLib.timeout_add_seconds(timeout, watchdog)
        try:
            fn(run)
        except Exception as e:  # noqa: BLE001
            run.fail(e)
        if not run.finished:
            run.loop.run()
        GLib.source_remove(source)
        if run.error is None:
            print('ok %d %s' % (i, name), flush=True)
        else:
            failed += 1
            print('not ok %d %s' % (i, name), flush=True)
            for line in repr(run.error).splitlines():
                print('# ' + line, flush=True)
    check(rt.shutdown(-1), 'shutdown in time')
    sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()
