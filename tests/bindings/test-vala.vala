/* test-vala.vala: wsrt from Vala, compiled with the real valac
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * GLib.Test speaks TAP with --tap. Every case runs under a watchdog
 * thread: a hang aborts the program with a message, it is not a CI
 * timeout.
 */

static int deadline_sec;  /* monotonic seconds; 0: no test running */
static string? current_test;

static void watchdog_start () {
    var env = Environment.get_variable ("WS_TEST_TIMEOUT");
    int64 secs = env != null ? int64.parse (env) : 30;
    AtomicInt.set (ref deadline_sec, 0);
    new Thread<void*> ("watchdog", () => {
        for (;;) {
            var deadline = AtomicInt.get (ref deadline_sec);
            if (deadline > 0 && get_monotonic_time () / 1000000 > deadline) {
                stderr.printf ("Bail out! watchdog: test %s hung\n", current_test);
                Process.abort ();
            }
            Thread.usleep (50000);
        }
    });
    watchdog_secs = secs > 0 ? secs : 30;
}

static int64 watchdog_secs;

delegate void TestBody ();

class Case {
    public string path;
    public TestBody body;
    public Case (string path, owned TestBody body) {
        this.path = path;
        this.body = (owned) body;
    }
    public void run () {
        current_test = path;
        AtomicInt.set (ref deadline_sec, (int) (get_monotonic_time () / 1000000 + watchdog_secs));
        body ();
        AtomicInt.set (ref deadline_sec, 0);
    }
}

static GenericArray<Case> cases;

static void add (string path, owned TestBody body) {
    var c = new Case (path, (owned) body);
    cases.add (c);
    Test.add_data_func (path, c.run);
}

/* Runs the default main context until @done says so. */
static void iterate_until (owned SourceFunc done) {
    var ctx = MainContext.default ();
    while (!done ())
        ctx.iteration (true);
}

static bool on_runtime_thread () {
    return Ws.Handle.get_current () != null;
}

/* A Vala delegate runs on a worker; the main loop awaits it with yield. */
async uint64 sum_on_worker (Ws.Runtime rt, uint n, out bool on_worker) throws Error {
    bool ran_on_worker = false;
    var task = rt.spawn ((cx) => {
        uint64 sum = 0;
        for (uint i = 1; i <= n; i++)
            sum += i;
        ran_on_worker = on_runtime_thread ();
        cx.return_value (sum);
        return Ws.Poll.READY;
    });
    yield task.wait_async (null);
    on_worker = ran_on_worker;
    return task.get_value ().get_uint64 ();
}

void test_delegate_on_worker () {
    var rt = new Ws.Runtime (2);
    uint64 result = 0;
    bool on_worker = false;
    bool done = false;
    sum_on_worker.begin (rt, 1000, (obj, res) => {
        try {
            result = sum_on_worker.end (res, out on_worker);
        } catch (Error e) {
            assert_no_error (e);
        }
        done = true;
    });
    iterate_until (() => done);
    assert_cmpuint ((uint) result, CompareOperator.EQ, 500500);
    assert_true (on_worker);
    assert_true (!on_runtime_thread ());
    assert_true (rt.shutdown (-1));
}

async void await_cancelled (Ws.Task task, out bool raised) {
    raised = false;
    try {
        yield task.wait_async (null);
    } catch (IOError.CANCELLED e) {
        raised = true;
    } catch (Error e) {
        assert_no_error (e);
    }
}

void test_cancelled_raises () {
    var rt = new Ws.Runtime (2);
    var task = rt.spawn ((cx) => Ws.Poll.PENDING);
    bool raised = false;
    bool done = false;
    await_cancelled.begin (task, (obj, res) => {
        await_cancelled.end (res, out raised);
        done = true;
    });
    task.cancel ();
    iterate_until (() => done);
    assert_true (raised);
    assert_true (task.is_finished ());
    assert_true (rt.shutdown (-1));
}

/* A Vala async method that uses GIO, started by a task on a worker: it
 * runs on the worker's thread-default context, and its completion wakes
 * the task. */
async string load_first_line (File file) throws Error {
    uint8[] contents;
    yield file.load_contents_async (null, out contents, null);
    return ((string) contents).split ("\n", 2)[0];
}

class GioJob {
    public File file;
    public bool started;
    public bool finished;
    public string? line;
    public Error? error;
    public bool completed_on_worker;
    public Ws.Waker? waker;
}

void test_async_gio_in_task () {
    var rt = new Ws.Runtime (2);
    var job = new GioJob ();
    job.file = File.new_for_path (Path.build_filename (Environment.get_variable ("G_TEST_SRCDIR"), "test-vala.vala"));
    var task = rt.spawn ((cx) => {
        if (!job.started) {
            job.started = true;
            job.waker = cx.get_waker ();
            load_first_line.begin (job.file, (obj, res) => {
                try {
                    job.line = load_first_line.end (res);
                } catch (Error e) {
                    job.error = e;
                }
                job.completed_on_worker = on_runtime_thread ();
                job.finished = true;
                job.waker.wake ();
            });
            return Ws.Poll.PENDING;
        }
        if (!job.finished)
            return Ws.Poll.PENDING;
        cx.return_value (job.line);
        return Ws.Poll.READY;
    });
    try {
        assert_true (task.wait (null));
    } catch (Error e) {
        assert_no_error (e);
    }
    assert_no_error (job.error);
    assert_cmpstr (task.get_value ().get_string (), CompareOperator.EQ,
                   "/* test-vala.vala: wsrt from Vala, compiled with the real valac");
    assert_true (job.completed_on_worker);
    assert_true (rt.shutdown (-1));
}

void test_metadata_reexposes_worker_apis () {
    int starts = 0;
    int stops = 0;
    Ws.Runtime? rt = null;
    try {
        rt = (Ws.Runtime) Object.new (typeof (Ws.Runtime), "n-workers", 2,
                                      "thread-name-prefix", "vala");
        rt.set_on_thread_start (() => AtomicInt.inc (ref starts));
        rt.set_on_thread_stop (() => AtomicInt.inc (ref stops));
        rt.init (null);
    } catch (Error e) {
        assert_no_error (e);
        return;
    }

    /* spawn_detached, spawn_blocking, Handle.spawn and block_in_place:
     * all (skip) in the GIR, given back by introspection/Ws-1.metadata. */
    int detached_ran = 0;
    rt.spawn_detached ((cx) => {
        AtomicInt.inc (ref detached_ran);
        return Ws.Poll.READY;
    });
    var blocking = rt.spawn_blocking ((cx) => {
        bool blocked = false;
        try {
            Ws.block_in_place (() => { blocked = true; });
        } catch (Error e) {
            cx.return_error (e);
            return Ws.Poll.READY;
        }
        cx.return_value (blocked);
        return Ws.Poll.READY;
    });
    Ws.Task? child = null;
    var nested = rt.spawn ((cx) => {
        if (child == null) {
            child = Ws.Handle.get_current ().spawn ((ccx) => {
                ccx.return_value (7);
                return Ws.Poll.READY;
            });
        }
        /* Await the child from the task: its waker re-polls us. */
        if (child.poll (cx) == Ws.Poll.PENDING)
            return Ws.Poll.PENDING;
        cx.return_value (child.get_value ().get_int () + 1);
        return Ws.Poll.READY;
    });
    try {
        assert_true (blocking.wait (null));
        assert_true (blocking.get_value ().get_boolean ());
        assert_true (nested.wait (null));
        assert_cmpint (nested.get_value ().get_int (), CompareOperator.EQ, 8);
    } catch (Error e) {
        assert_no_error (e);
    }
    iterate_until (() => AtomicInt.get (ref detached_ran) == 1);
    assert_true (rt.shutdown (-1));
    assert_cmpint (AtomicInt.get (ref starts), CompareOperator.GE, 2);
    assert_cmpint (AtomicInt.get (ref starts), CompareOperator.EQ, AtomicInt.get (ref stops));
}

/* Fork-join from Vala without a GObject per task: a task spawns two
 * halves with Context.spawn and joins their JoinHandles; the results are
 * plain integers, and finishing a handle frees it. */
void test_join_handles () {
    var rt = new Ws.Runtime (2);
    Ws.JoinHandle? left = null;
    Ws.JoinHandle? right = null;
    var root = rt.spawn_joinable ((cx) => {
        if (left == null) {
            left = cx.spawn ((c) => { c.return_uint64 (20); return Ws.Poll.READY; });
            right = cx.spawn ((c) => { c.return_uint64 (22); return Ws.Poll.READY; });
        }
        if (left.poll (cx) == Ws.Poll.PENDING || right.poll (cx) == Ws.Poll.PENDING)
            return Ws.Poll.PENDING;
        uint64 a = 0, b = 0;
        try {
            ((owned) left).finish_uint64 (out a);
            ((owned) right).finish_uint64 (out b);
        } catch (Error e) {
            assert_no_error (e);
        }
        cx.return_uint64 (a + b);
        return Ws.Poll.READY;
    });
    uint64 sum = 0;
    try {
        root.wait ();
        ((owned) root).finish_uint64 (out sum);
    } catch (Error e) {
        assert_no_error (e);
    }
    assert_cmpuint ((uint) sum, CompareOperator.EQ, 42);
    assert_true (rt.shutdown (-1));
}

/* spawn_with_callback, given back by the metadata: the callback runs on
 * this thread's context with the task's JoinHandle, which it finishes. */
void test_spawn_with_callback () {
    var rt = new Ws.Runtime (2);
    uint64 result = 0;
    int calls = 0;
    bool on_worker = true;
    bool accepted = rt.spawn_with_callback ((cx) => {
        cx.return_uint64 (42);
        return Ws.Poll.READY;
    }, (handle) => {
        try {
            ((owned) handle).finish_uint64 (out result);
        } catch (Error e) {
            assert_no_error (e);
        }
        on_worker = on_runtime_thread ();
        calls++;
    });
    assert_true (accepted);
    iterate_until (() => calls == 1);
    assert_cmpuint ((uint) result, CompareOperator.EQ, 42);
    assert_true (!on_worker);
    assert_true (rt.shutdown (-1));
}

/* WsLimiter: at most max_permits holders at once, counted with atomics. */
class Census {
    public int holders;
    public int max_holders;

    public void enter () {
        int now = AtomicInt.add (ref holders, 1) + 1;
        int max = AtomicInt.get (ref max_holders);
        while (now > max && !AtomicInt.compare_and_exchange (ref max_holders, max, now))
            max = AtomicInt.get (ref max_holders);
    }

    public void leave () {
        AtomicInt.add (ref holders, -1);
    }
}

/* Each closure in a function of its own, so the task alone owns what it
 * captures. */
static Ws.Task spawn_counted (Ws.Limiter limiter, Ws.Runtime rt, Census census) {
    bool entered = false;
    return limiter.spawn (rt, (cx) => {
        if (!entered) {
            census.enter ();
            entered = true;
            return cx.yield ();
        }
        census.leave ();
        return Ws.Poll.READY;
    });
}

static Ws.Task spawn_counted_blocking (Ws.Limiter limiter, Ws.Runtime rt, Census census, int i) {
    return limiter.spawn_blocking (rt, (cx) => {
        census.enter ();
        Thread.usleep (1000);
        census.leave ();
        cx.return_value (i);
        return Ws.Poll.READY;
    });
}

void test_limiter_spawn () {
    var rt = new Ws.Runtime (2);
    var limiter = new Ws.Limiter (2);
    var census = new Census ();
    var blocking_census = new Census ();
    var tasks = new GenericArray<Ws.Task> ();
    var jobs = new GenericArray<Ws.Task> ();
    for (int i = 0; i < 40; i++)
        tasks.add (spawn_counted (limiter, rt, census));
    for (int i = 0; i < 8; i++)
        jobs.add (spawn_counted_blocking (limiter, rt, blocking_census, i));
    try {
        foreach (var task in tasks)
            assert_true (task.wait (null));
        for (int i = 0; i < 8; i++) {
            assert_true (jobs[i].wait (null));
            assert_cmpint (jobs[i].get_value ().get_int (), CompareOperator.EQ, i);
        }
    } catch (Error e) {
        assert_no_error (e);
    }
    assert_cmpint (census.max_holders, CompareOperator.LE, 2);
    assert_cmpint (census.max_holders, CompareOperator.GE, 1);
    assert_cmpint (blocking_census.max_holders, CompareOperator.LE, 2);
    assert_cmpuint (limiter.get_available (), CompareOperator.EQ, 2);
    assert_true (rt.shutdown (-1));
}

class Waiting {
    public int queued;
    public int ran;
}

/* A task that takes a permit with acquire_poll: its waiter is captured, so
 * Vala frees it (ws_limiter_waiter_free) with the task's data. */
static Ws.Task spawn_acquiring (Ws.Limiter limiter, Ws.Runtime rt, Waiting w) {
    Ws.LimiterWaiter? waiter = null;
    return rt.spawn ((cx) => {
        if (limiter.acquire_poll (cx, ref waiter) == Ws.Poll.PENDING) {
            AtomicInt.set (ref w.queued, 1);
            return Ws.Poll.PENDING;
        }
        AtomicInt.inc (ref w.ran);
        limiter.release ();
        return Ws.Poll.READY;
    });
}

void test_limiter_acquire_poll () {
    var rt = new Ws.Runtime (2);
    var limiter = new Ws.Limiter (1);
    var first = new Waiting ();
    var second = new Waiting ();
    assert_true (limiter.try_acquire ());
    var cancelled = spawn_acquiring (limiter, rt, first);
    while (AtomicInt.get (ref first.queued) == 0)
        Thread.usleep (100);
    var waiting = spawn_acquiring (limiter, rt, second);
    while (AtomicInt.get (ref second.queued) == 0)
        Thread.usleep (100);

    /* Cancelled while it waits: its waiter leaves the queue with it. */
    cancelled.cancel ();
    try {
        cancelled.wait (null);
        assert_not_reached ();
    } catch (Error e) {
        assert_error (e, IOError.quark (), IOError.CANCELLED);
    }
    limiter.release ();
    try {
        assert_true (waiting.wait (null));
    } catch (Error e) {
        assert_no_error (e);
    }
    assert_cmpint (AtomicInt.get (ref first.ran), CompareOperator.EQ, 0);
    assert_cmpint (AtomicInt.get (ref second.ran), CompareOperator.EQ, 1);
    assert_cmpuint (limiter.get_available (), CompareOperator.EQ, 1);
    assert_true (rt.shutdown (-1));
}

async bool take_permit (Ws.Limiter limiter, Cancellable? cancellable) throws Error {
    return yield limiter.acquire_async (cancellable);
}

void test_limiter_acquire_async () {
    var limiter = new Ws.Limiter (1);
    var cancellable = new Cancellable ();
    bool got = false;
    bool cancelled = false;
    int done = 0;
    assert_true (limiter.try_acquire ());
    take_permit.begin (limiter, null, (obj, res) => {
        try {
            got = take_permit.end (res);
        } catch (Error e) {
            assert_no_error (e);
        }
        done++;
    });
    take_permit.begin (limiter, cancellable, (obj, res) => {
        try {
            take_permit.end (res);
        } catch (IOError.CANCELLED e) {
            cancelled = true;
        } catch (Error e) {
            assert_no_error (e);
        }
        done++;
    });
    MainContext.default ().iteration (false);
    assert_cmpint (done, CompareOperator.EQ, 0);
    cancellable.cancel ();
    iterate_until (() => done == 1);
    assert_true (cancelled);
    limiter.release ();
    iterate_until (() => done == 2);
    assert_true (got);
    assert_cmpuint (limiter.get_available (), CompareOperator.EQ, 0);
    limiter.release ();
    assert_cmpuint (limiter.get_available (), CompareOperator.EQ, 1);
}

/* Typed channels: Vala async methods send and receive with yield (the
 * cancellable defaults to null), tasks on the workers with the poll
 * calls. */
async void send_ints (Ws.Channel ch, int n) throws Error {
    for (int i = 1; i <= n; i++)
        yield ch.send_async (i);
    ch.close ();
}

async int sum_ints (Ws.Channel ch) throws Error {
    int sum = 0;
    for (;;) {
        try {
            var v = yield ch.receive_async ();
            sum += (int) v;
        } catch (Ws.Error.CLOSED e) {
            return sum;
        }
    }
}

void test_channel_yield () {
    var ch = new Ws.Channel.for_type (2, typeof (int));
    assert_true (ch.get_item_type () == typeof (int));
    int sum = -1;
    bool sent = false;
    send_ints.begin (ch, 100, (obj, res) => {
        try {
            send_ints.end (res);
        } catch (Error e) {
            assert_no_error (e);
        }
        sent = true;
    });
    sum_ints.begin (ch, (obj, res) => {
        try {
            sum = sum_ints.end (res);
        } catch (Error e) {
            assert_no_error (e);
        }
    });
    iterate_until (() => sent && sum >= 0);
    assert_cmpint (sum, CompareOperator.EQ, 5050);
    try {
        ch.try_send_value (1);
        assert_not_reached ();
    } catch (Error e) {
        assert_error (e, Ws.Error.quark (), Ws.Error.CLOSED);
    }
}

async string[] receive_strings (Ws.Channel ch) throws Error {
    string[] got = {};
    for (;;) {
        try {
            Value? v = yield ch.receive_async ();
            got += v.get_string ();
        } catch (Ws.Error.CLOSED e) {
            return got;
        }
    }
}

void test_channel_with_tasks () {
    var rt = new Ws.Runtime (2);
    var strings = new Ws.Channel.for_type (4, typeof (string));
    var ints = new Ws.Channel.for_type (4, typeof (int));
    int next = 0;
    int sum = 0;

    /* Strings from a worker to a yield on the main loop. */
    var producer = rt.spawn ((cx) => {
        for (; next < 50; next++) {
            try {
                if (strings.poll_send_value (cx, "item %d".printf (next)) == Ws.Poll.PENDING)
                    return Ws.Poll.PENDING;
            } catch (Error e) {
                assert_no_error (e);
            }
        }
        strings.close ();
        return Ws.Poll.READY;
    });
    string[]? got = null;
    receive_strings.begin (strings, (obj, res) => {
        try {
            got = receive_strings.end (res);
        } catch (Error e) {
            assert_no_error (e);
        }
    });
    iterate_until (() => got != null);
    assert_cmpint (got.length, CompareOperator.EQ, 50);
    assert_cmpstr (got[0], CompareOperator.EQ, "item 0");
    assert_cmpstr (got[49], CompareOperator.EQ, "item 49");

    /* Ints from a yield on the main loop to a worker. */
    var consumer = rt.spawn ((cx) => {
        for (;;) {
            Value? v;
            try {
                if (ints.poll_receive_value (cx, out v) == Ws.Poll.PENDING)
                    return Ws.Poll.PENDING;
            } catch (Error e) {
                assert_error (e, Ws.Error.quark (), Ws.Error.CLOSED);
                return Ws.Poll.READY;
            }
            sum += v.get_int ();
        }
    });
    bool sent = false;
    send_ints.begin (ints, 100, (obj, res) => {
        try {
            send_ints.end (res);
        } catch (Error e) {
            assert_no_error (e);
        }
        sent = true;
    });
    iterate_until (() => sent);
    try {
        assert_true (producer.wait (null));
        assert_true (consumer.wait (null));
    } catch (Error e) {
        assert_no_error (e);
    }
    assert_cmpint (sum, CompareOperator.EQ, 5050);
    assert_true (rt.shutdown (-1));
}

/* A Vala async method spawned as a task with spawn_promise: it runs on a
 * worker, and resumes there after each yield (a sleep, a oneshot, a task
 * group, the limiter, GIO with the promise's cancellable); the main loop
 * awaits the task with `yield task.wait_async ()`, no argument. */
class Trail {
    public int steps;
    public bool same_thread = true;
    public bool on_worker = true;
    public void* thread;

    public void mark () {
        if (thread == null)
            thread = (void*) Thread.self<void*> ();
        same_thread &= thread == (void*) Thread.self<void*> ();
        on_worker &= on_runtime_thread ();
        AtomicInt.inc (ref steps);
    }
}

/* A Vala closure captures a variable, not its value: a lambda spawned in
 * a loop would read the loop's counter while the loop goes on.  A call
 * gives each task a variable of its own. */
static Ws.Task spawn_returning (Ws.Runtime rt, int value) {
    return rt.spawn ((cx) => { cx.return_value (value); return Ws.Poll.READY; });
}

async void yield_everywhere (Ws.Promise promise, Ws.Runtime rt, Ws.Oneshot shot,
                             Ws.Limiter limiter, File file, Trail trail) {
    var cancellable = promise.get_cancellable ();
    try {
        trail.mark ();
        yield Ws.Sleep.for_async (10 * TimeSpan.MILLISECOND, cancellable);
        trail.mark ();
        var nap = new Ws.Sleep (5 * TimeSpan.MILLISECOND);
        yield nap.wait_async (cancellable);
        trail.mark ();
        var item = yield shot.receive_async (cancellable);
        trail.mark ();
        var group = new Ws.TaskGroup ();
        for (int i = 0; i < 3; i++)
            group.add (spawn_returning (rt, i));
        yield group.wait_all_async (cancellable);
        trail.mark ();
        yield limiter.acquire_async (cancellable);
        trail.mark ();
        limiter.release ();
        uint8[] contents;
        yield file.load_contents_async (cancellable, out contents, null);
        trail.mark ();
        promise.return_value ("%d %u %s".printf ((int) (intptr) item, group.get_n_finished (),
                                                 (string) contents));
    } catch (Error e) {
        promise.return_error (e);
    }
}

async string await_task (Ws.Task task) throws Error {
    yield task.wait_async ();
    return task.get_value ().get_string ();
}

void test_promise_yields () {
    var rt = new Ws.Runtime (2);
    var shot = new Ws.Oneshot (null);
    var limiter = new Ws.Limiter (1);
    var trail = new Trail ();
    string path;
    try {
        FileUtils.close (FileUtils.open_tmp ("wsrt-vala-XXXXXX", out path));
        FileUtils.set_contents (path, "contents");
    } catch (Error e) {
        assert_no_error (e);
        return;
    }
    var file = File.new_for_path (path);
    var task = rt.spawn_promise ((promise) => {
        yield_everywhere.begin (promise, rt, shot, limiter, file, trail);
    });
    /* Pending, with the work waiting for the oneshot. */
    while (AtomicInt.get (ref trail.steps) < 3)
        Thread.usleep (1000);
    assert_true (!task.is_finished ());
    shot.send ((void*) 7);

    string? result = null;
    bool done = false;
    await_task.begin (task, (obj, res) => {
        try {
            result = await_task.end (res);
        } catch (Error e) {
            assert_no_error (e);
        }
        done = true;
    });
    iterate_until (() => done);
    assert_cmpstr (result, CompareOperator.EQ, "7 3 contents");
    assert_cmpint (trail.steps, CompareOperator.EQ, 7);
    assert_true (trail.on_worker);
    assert_true (trail.same_thread);
    assert_cmpuint (limiter.get_available (), CompareOperator.EQ, 1);
    assert_true (rt.shutdown (-1));
    FileUtils.unlink (path);
}

/* Cancelling the task while its async method waits: the task ends as
 * cancelled at once, and the method sees IOError.CANCELLED through the
 * promise's cancellable. */
class Flag {
    public int value;
}

async void sleep_an_hour (Ws.Promise promise, Flag saw_cancel) {
    try {
        yield Ws.Sleep.for_async (TimeSpan.HOUR, promise.get_cancellable ());
        promise.return_value (true);
    } catch (IOError.CANCELLED e) {
        AtomicInt.set (ref saw_cancel.value, 1);
        promise.return_error (e);
    } catch (Error e) {
        promise.return_error (e);
    }
}

async void await_cancelled_task (Ws.Task task, out bool raised) {
    raised = false;
    try {
        yield task.wait_async ();
    } catch (IOError.CANCELLED e) {
        raised = true;
    } catch (Error e) {
        assert_no_error (e);
    }
}

void test_promise_cancel_in_flight () {
    var rt = new Ws.Runtime (2);
    var saw_cancel = new Flag ();
    var task = rt.spawn_promise ((promise) => sleep_an_hour.begin (promise, saw_cancel));
    Thread.usleep (20000);
    assert_true (!task.is_finished ());
    bool raised = false;
    bool done = false;
    await_cancelled_task.begin (task, (obj, res) => {
        await_cancelled_task.end (res, out raised);
        done = true;
    });
    task.cancel ();
    iterate_until (() => done);
    assert_true (raised);
    while (AtomicInt.get (ref saw_cancel.value) == 0)
        Thread.usleep (1000);
    assert_true (rt.shutdown (-1));
}

/* An async method that returns without completing its promise ends the
 * task with an error instead of leaving it pending. */
async void forget (Ws.Promise promise) {
    try {
        yield Ws.Sleep.for_async (1000, promise.get_cancellable ());
    } catch (Error e) {
        assert_no_error (e);
    }
}

void test_promise_dropped () {
    var rt = new Ws.Runtime (2);
    var task = rt.spawn_promise ((promise) => forget.begin (promise));
    try {
        task.wait ();
        assert_not_reached ();
    } catch (Error e) {
        assert_error (e, Ws.Error.quark (), Ws.Error.FAILED);
    }
    assert_true (rt.shutdown (-1));
}

/* "This, or fail after N ms": a yield with a timeout cancels the task
 * that did not make it, and one that makes it gives its value. */
async void await_with_timeouts (Ws.Runtime rt, out bool timed_out, out bool stuck_cancelled,
                                out uint64 value) {
    timed_out = false;
    var stuck = rt.spawn ((cx) => Ws.Poll.PENDING);
    try {
        yield stuck.wait_timeout_async (10 * TimeSpan.MILLISECOND);
    } catch (IOError.TIMED_OUT e) {
        timed_out = true;
    } catch (Error e) {
        assert_no_error (e);
    }
    stuck_cancelled = false;
    try {
        yield stuck.wait_async ();
    } catch (IOError.CANCELLED e) {
        stuck_cancelled = true;
    } catch (Error e) {
        assert_no_error (e);
    }
    var quick = rt.spawn ((cx) => {
        cx.return_value ((uint64) 42);
        return Ws.Poll.READY;
    });
    value = 0;
    try {
        yield quick.wait_timeout_async (int64.MAX);
        value = quick.get_value ().get_uint64 ();
    } catch (Error e) {
        assert_no_error (e);
    }
}

void test_wait_timeout () {
    var rt = new Ws.Runtime (1);
    bool done = false, timed_out = false, stuck_cancelled = false;
    uint64 value = 0;
    await_with_timeouts.begin (rt, (obj, res) => {
        await_with_timeouts.end (res, out timed_out, out stuck_cancelled, out value);
        done = true;
    });
    iterate_until (() => done);
    assert_true (timed_out);
    assert_true (stuck_cancelled);
    assert_cmpuint ((uint) value, CompareOperator.EQ, 42);
    assert_true (rt.shutdown (-1));
}

/* Mistakes are reported, never a silent hang: a send of the wrong type
 * on a typed channel completes with INVALID_ARGUMENT (after a critical
 * naming both types); a second result in one poll is a critical naming
 * the call. Timeout.add () in a promise on a worker (the trap of
 * doc/getting-started-vala.md) is not detected, as wsrt never looks
 * into the default context: the method resumes where that context is
 * iterated. */
async void send_wrong_type (Ws.Channel ch) throws Error {
    yield ch.send_async (42);               // an int on a channel of uint
}

void test_channel_wrong_type_errors () {
    var ch = new Ws.Channel.for_type (1, typeof (uint));
    bool done = false;
    Error? error = null;
    Test.expect_message ("Wsrt", LogLevelFlags.LEVEL_CRITICAL, "*ws_channel_send_async*gint*guint*");
    send_wrong_type.begin (ch, (obj, res) => {
        try {
            send_wrong_type.end (res);
        } catch (Error e) {
            error = e;
        }
        done = true;
    });
    iterate_until (() => done);
    Test.assert_expected_messages ();
    assert_true (error != null);
    assert_error (error, IOError.quark (), IOError.INVALID_ARGUMENT);
    assert_cmpuint (ch.get_length (), CompareOperator.EQ, 0);
}

void test_second_result_names_the_call () {
    var rt = new Ws.Runtime (1);
    Test.expect_message ("Wsrt", LogLevelFlags.LEVEL_CRITICAL,
                         "ws_context_return_error: task * already returned a result*");
    var task = rt.spawn ((cx) => {
        cx.return_value ("first");
        cx.return_error (new IOError.FAILED ("second"));
        return Ws.Poll.READY;
    });
    try {
        task.wait ();
    } catch (Error e) {
        assert_no_error (e);
    }
    Test.assert_expected_messages ();
    assert_cmpstr (task.get_value ().get_string (), CompareOperator.EQ, "first");
    assert_true (rt.shutdown (-1));
}

static int trap_started;
static int trap_resumed;

async void complete_after_timeout_add (Ws.Promise promise) {
    Timeout.add (10, complete_after_timeout_add.callback);   // the trap
    AtomicInt.set (ref trap_started, 1);
    yield;
    AtomicInt.set (ref trap_resumed, 1);
    promise.return_value ("resumed");
}

void test_timeout_add_trap_resumes_on_default_context () {
    var rt = new Ws.Runtime (1);
    AtomicInt.set (ref trap_started, 0);
    AtomicInt.set (ref trap_resumed, 0);
    var task = rt.spawn_promise ((promise) => complete_after_timeout_add.begin (promise));
    while (AtomicInt.get (ref trap_started) == 0)
        Thread.usleep (1000);
    /* The task, which nothing would have completed, ends cancelled; no
     * warning (GTest makes one fatal). */
    assert_true (rt.shutdown (-1));
    assert_true (task.is_finished ());
    assert_true (AtomicInt.get (ref trap_resumed) == 0);
    /* The method resumes where the default context runs: here. */
    iterate_until (() => AtomicInt.get (ref trap_resumed) == 1);
}

/* Two tasks awaiting one join handle: the second registration is a
 * critical naming ws_join_handle_into_task (the way to have several
 * waiters), and the first waiter is woken, not left waiting for ever. */
static int child_release;
static int first_polls;

void test_join_handle_two_waiters_reported () {
    var rt = new Ws.Runtime (2);
    AtomicInt.set (ref child_release, 0);
    AtomicInt.set (ref first_polls, 0);
    var child = rt.spawn_joinable ((cx) => {
        while (AtomicInt.get (ref child_release) == 0)
            Thread.usleep (1000);
        return Ws.Poll.READY;
    });
    var first = rt.spawn ((cx) => {
        if (AtomicInt.add (ref first_polls, 1) > 0)
            return Ws.Poll.READY;           // woken by the second waiter
        return child.poll (cx);
    });
    while (AtomicInt.get (ref first_polls) == 0)
        Thread.usleep (1000);
    Test.expect_message ("Wsrt", LogLevelFlags.LEVEL_CRITICAL, "*ws_join_handle_into_task*");
    var second = rt.spawn ((cx) => child.poll (cx));
    try {
        first.wait ();
    } catch (Error e) {
        assert_no_error (e);
    }
    Test.assert_expected_messages ();
    AtomicInt.set (ref child_release, 1);
    try {
        second.wait ();
        ((owned) child).finish ();
    } catch (Error e) {
        assert_no_error (e);
    }
    assert_true (rt.shutdown (-1));
}

int main (string[] args) {
    Test.init (ref args);
    cases = new GenericArray<Case> ();
    watchdog_start ();
    add ("/vala/delegate-on-worker", test_delegate_on_worker);
    add ("/vala/cancelled-raises", test_cancelled_raises);
    add ("/vala/async-gio-in-task", test_async_gio_in_task);
    add ("/vala/metadata-reexposes-worker-apis", test_metadata_reexposes_worker_apis);
    add ("/vala/join-handles", test_join_handles);
    add ("/vala/spawn-with-callback", test_spawn_with_callback);
    add ("/vala/limiter-spawn", test_limiter_spawn);
    add ("/vala/limiter-acquire-poll", test_limiter_acquire_poll);
    add ("/vala/limiter-acquire-async", test_limiter_acquire_async);
    add ("/vala/channel-yield", test_channel_yield);
    add ("/vala/channel-with-tasks", test_channel_with_tasks);
    add ("/vala/promise-yields", test_promise_yields);
    add ("/vala/promise-cancel-in-flight", test_promise_cancel_in_flight);
    add ("/vala/promise-dropped", test_promise_dropped);
    add ("/vala/wait-timeout", test_wait_timeout);
    add ("/vala/channel-wrong-type-errors", test_channel_wrong_type_errors);
    add ("/vala/second-result-names-the-call", test_second_result_names_the_call);
    add ("/vala/timeout-add-trap-resumes-on-default-context",
         test_timeout_add_trap_resumes_on_default_context);
    add ("/vala/join-handle-two-waiters-reported", test_join_handle_two_waiters_reported);
    return Test.run ();
}
