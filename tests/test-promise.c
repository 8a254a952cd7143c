/* test-promise.c: WsPromise, a task whose result comes from a callback
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The start function runs once on a worker, with the worker's context as
 * the thread-default one; the task stays pending until the promise is
 * completed, from any thread, and ends with that value, pointer or error.
 * A promise dropped without a result ends the task with WS_ERROR_FAILED;
 * a second completion is refused and freed. Cancelling the task cancels
 * the promise's cancellable and ends the task at once, and a result given
 * later is freed; shutdown with a promise pending neither hangs nor
 * leaks. Work started in the start function (ws_sleep_for_async, a
 * oneshot's receive_async, GIO) resumes on the worker; the task is
 * awaited from a main loop, a plain thread and another task.
 */

#include "config.h"

#include "ws-test-fixture.h"

#include <gio/gio.h>
#include <glib/gstdio.h>

/* What a start function saw and kept. */
typedef struct
{
  WsLock        lock;
  WsPromise    *promise;          /* kept, when the case wants it */
  GThread      *start_thread;
  gboolean      on_worker;
  gboolean      own_context;      /* thread-default is not the global default */
  _Atomic gint  n_started;
  _Atomic gint  n_destroyed;
} Start;

static void
start_init (Start *s)
{
  memset (s, 0, sizeof *s);
  ws_lock_init (&s->lock);
}

static void
start_clear (Start *s)
{
  g_clear_pointer (&s->promise, ws_promise_unref);
  ws_lock_clear (&s->lock);
}

static void
start_destroy (gpointer data)
{
  Start *s = data;

  atomic_fetch_add (&s->n_destroyed, 1);
}

static void
record_start (Start *s)
{
  g_autoptr(WsHandle) handle = ws_handle_get_current ();
  GMainContext *ctx = g_main_context_get_thread_default ();

  s->start_thread = g_thread_self ();
  s->on_worker = handle != NULL;
  s->own_context = ctx != NULL && ctx != g_main_context_default ();
  atomic_fetch_add (&s->n_started, 1);
}

/* Keeps the promise for the test to complete. The promise is stored
 * before the start is counted: take_kept() waits for the count, then
 * takes the promise. */
static void
start_keep (WsPromise *promise,
            gpointer   data)
{
  Start *s = data;

  ws_lock_lock (&s->lock);
  s->promise = ws_promise_ref (promise);
  ws_lock_unlock (&s->lock);
  record_start (s);
}

static WsPromise *
take_kept (Start *s)
{
  WsPromise *p;

  ws_test_wait_until (atomic_load (&s->n_started) == 1);
  ws_lock_lock (&s->lock);
  p = g_steal_pointer (&s->promise);
  ws_lock_unlock (&s->lock);
  return p;
}

static void
return_int (WsPromise *promise,
            gint       value)
{
  GValue v = G_VALUE_INIT;

  g_value_init (&v, G_TYPE_INT);
  g_value_set_int (&v, value);
  ws_promise_return_value (promise, &v);
  g_value_unset (&v);
}

/* Completes inside the start function. */
static void
start_complete_at_once (WsPromise *promise,
                        gpointer   data)
{
  record_start (data);
  return_int (promise, 41);
}

static gpointer
complete_later_thread (gpointer data)
{
  WsPromise *promise = data;

  g_usleep (20000);
  return_int (promise, 42);
  ws_promise_unref (promise);
  return NULL;
}

/* The value arrives from another thread, after the start function
 * returned; the task was pending until then, and the start function ran
 * once, on a worker, with the worker's context as the thread default. */
static void
test_return_value (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GError) error = NULL;
  g_autoptr(WsTask) at_once = NULL;
  g_autoptr(WsTask) later = NULL;
  g_autoptr(GThread) completer = NULL;
  WsPromise *promise;
  Start a, b;

  start_init (&a);
  start_init (&b);
  at_once = ws_runtime_spawn_promise (rt, start_complete_at_once, &a, start_destroy);
  g_assert_true (ws_task_wait (at_once, NULL, &error));
  g_assert_no_error (error);
  g_assert_cmpint (g_value_get_int (ws_task_get_value (at_once)), ==, 41);

  later = ws_runtime_spawn_promise (rt, start_keep, &b, start_destroy);
  promise = take_kept (&b);
  g_usleep (10000);
  g_assert_false (ws_task_is_finished (later));
  g_assert_false (ws_promise_is_completed (promise));
  completer = g_thread_new ("completer", complete_later_thread, promise);
  g_assert_true (ws_task_wait (later, NULL, &error));
  g_assert_no_error (error);
  g_assert_cmpint (g_value_get_int (ws_task_get_value (later)), ==, 42);

  g_assert_cmpint (atomic_load (&a.n_started), ==, 1);
  g_assert_cmpint (atomic_load (&b.n_started), ==, 1);
  g_assert_true (a.on_worker && a.own_context);
  g_assert_true (b.on_worker && b.own_context);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_thread_join (g_steal_pointer (&completer));
  g_assert_cmpint (atomic_load (&a.n_destroyed), ==, 1);
  g_assert_cmpint (atomic_load (&b.n_destroyed), ==, 1);
  start_clear (&a);
  start_clear (&b);
}

/* return_error and return_pointer reach the waiter; a second completion
 * is refused with a critical and frees what it was given. */
static void
test_error_and_pointer (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GError) error = NULL;
  g_autoptr(WsTask) failing = NULL;
  g_autoptr(WsTask) pointing = NULL;
  WsPromise *promise;
  gchar *text;
  Start a, b;

  start_init (&a);
  start_init (&b);
  ws_test_reset_counters ();
  failing = ws_runtime_spawn_promise (rt, start_keep, &a, NULL);
  promise = take_kept (&a);
  ws_promise_return_error (promise, g_error_new_literal (G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "gone"));
  g_assert_true (ws_promise_is_completed (promise));
  WS_TEST_REFUSED (ws_promise_return_pointer,
                   ws_promise_return_pointer (promise, GUINT_TO_POINTER (1), ws_test_count_destroy));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 1);
  ws_promise_unref (promise);
  g_assert_false (ws_task_wait (failing, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
  g_clear_error (&error);

  pointing = ws_runtime_spawn_promise (rt, start_keep, &b, NULL);
  promise = take_kept (&b);
  ws_promise_return_pointer (promise, g_strdup ("forty-two"), g_free);
  WS_TEST_REFUSED (ws_promise_return_error,
                   ws_promise_return_error (promise, g_error_new_literal (WS_ERROR, WS_ERROR_FAILED, "late")));
  ws_promise_unref (promise);
  g_assert_true (ws_task_wait (pointing, NULL, NULL));
  text = ws_task_propagate_pointer (pointing, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (text, ==, "forty-two");
  g_free (text);

  g_assert_true (ws_runtime_shutdown (rt, -1));
  start_clear (&a);
  start_clear (&b);
}

static void
start_drop (WsPromise *promise,
            gpointer   data)
{
  record_start (data);
}

/* A promise dropped without a result ends the task with WS_ERROR_FAILED:
 * at once when the start function keeps none, and when the last
 * reference goes later, from another thread. */
static void
test_dropped (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GError) error = NULL;
  g_autoptr(WsTask) never_kept = NULL;
  g_autoptr(WsTask) dropped_later = NULL;
  g_autoptr(GThread) dropper = NULL;
  Start a, b;

  start_init (&a);
  start_init (&b);
  never_kept = ws_runtime_spawn_promise (rt, start_drop, &a, NULL);
  g_assert_false (ws_task_wait (never_kept, NULL, &error));
  g_assert_error (error, WS_ERROR, WS_ERROR_FAILED);
  g_clear_error (&error);

  dropped_later = ws_runtime_spawn_promise (rt, start_keep, &b, NULL);
  dropper = g_thread_new ("dropper", (GThreadFunc) (void (*) (void)) ws_promise_unref,
                          take_kept (&b));
  g_assert_false (ws_task_wait (dropped_later, NULL, &error));
  g_assert_error (error, WS_ERROR, WS_ERROR_FAILED);
  g_thread_join (g_steal_pointer (&dropper));

  g_assert_true (ws_runtime_shutdown (rt, -1));
  start_clear (&a);
  start_clear (&b);
}

typedef struct
{
  Start         start;
  _Atomic gint  n_cancelled;      /* the cancellable's handler ran */
} CancelWatch;

static void
on_cancelled (GCancellable *cancellable,
              gpointer      data)
{
  atomic_fetch_add (&((CancelWatch *) data)->n_cancelled, 1);
}

static void
start_watch_cancel (WsPromise *promise,
                    gpointer   data)
{
  CancelWatch *w = data;

  g_cancellable_connect (ws_promise_get_cancellable (promise), G_CALLBACK (on_cancelled), w, NULL);
  start_keep (promise, &w->start);
}

/* Cancelling the task while its work is in flight ends it as cancelled
 * at once and cancels the promise's cancellable; the result the work
 * gives afterwards is accepted and freed with the promise. */
static void
test_cancel_in_flight (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GError) error = NULL;
  g_autoptr(WsTask) task = NULL;
  WsPromise *promise;
  CancelWatch w = { 0 };

  start_init (&w.start);
  ws_test_reset_counters ();
  task = ws_runtime_spawn_promise (rt, start_watch_cancel, &w, start_destroy);
  promise = take_kept (&w.start);
  g_assert_false (g_cancellable_is_cancelled (ws_promise_get_cancellable (promise)));
  ws_task_cancel (task);
  g_assert_false (ws_task_wait (task, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_true (g_cancellable_is_cancelled (ws_promise_get_cancellable (promise)));
  g_assert_cmpint (atomic_load (&w.n_cancelled), ==, 1);
  ws_test_wait_until (atomic_load (&w.start.n_destroyed) == 1);

  /* The work notices and completes: stored, then freed with the promise. */
  ws_promise_return_pointer (promise, GUINT_TO_POINTER (7), ws_test_count_destroy);
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 0);
  ws_promise_unref (promise);
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 1);

  g_assert_true (ws_runtime_shutdown (rt, -1));
  start_clear (&w.start);
}

static WsPoll
gate_task (WsContext *cx,
           gpointer   data)
{
  ws_test_gate_wait (data);
  return WS_POLL_READY;
}

/* A task cancelled before its first poll never calls the start function,
 * and frees its data once. The one worker is held at a gate meanwhile. */
static void
test_cancel_before_start (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(GError) error = NULL;
  g_autoptr(WsTask) blocker = NULL;
  g_autoptr(WsTask) task = NULL;
  WsTestGate gate;
  Start s;

  start_init (&s);
  ws_test_gate_init (&gate);
  blocker = ws_runtime_spawn (rt, gate_task, &gate, NULL);
  ws_test_gate_wait_for_waiters (&gate, 1);
  task = ws_runtime_spawn_promise (rt, start_keep, &s, start_destroy);
  ws_task_cancel (task);
  ws_test_gate_open (&gate);
  g_assert_true (ws_task_wait (blocker, NULL, NULL));
  g_assert_false (ws_task_wait (task, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  ws_test_wait_until (atomic_load (&s.n_destroyed) == 1);
  g_assert_cmpint (atomic_load (&s.n_started), ==, 0);

  g_assert_true (ws_runtime_shutdown (rt, -1));
  ws_test_gate_clear (&gate);
  start_clear (&s);
}

/* Shutdown with promises pending: it neither waits for them nor hangs;
 * the tasks end cancelled, the cancellables are cancelled, and the
 * promises, dropped afterwards, free everything. */
static void
test_shutdown_pending (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GError) error = NULL;
  WsTask *tasks[4];
  Start s[4];
  WsPromise *kept[4];

  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    {
      start_init (&s[i]);
      tasks[i] = ws_runtime_spawn_promise (rt, start_keep, &s[i], start_destroy);
      kept[i] = take_kept (&s[i]);
    }
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    {
      g_assert_false (ws_task_wait (tasks[i], NULL, &error));
      g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
      g_clear_error (&error);
      g_assert_true (g_cancellable_is_cancelled (ws_promise_get_cancellable (kept[i])));
      g_assert_cmpint (atomic_load (&s[i].n_destroyed), ==, 1);
      if (i % 2 == 0)
        return_int (kept[i], (gint) i);   /* late: stored and freed */
      ws_promise_unref (kept[i]);
      g_object_unref (tasks[i]);
      start_clear (&s[i]);
    }
}

/* ---- work that resumes on the worker ------------------------------------ */

typedef struct
{
  WsPromise  *promise;
  GThread    *start_thread;
  GFile      *file;
  WsOneshot  *shot;
  gint        step;
  gboolean    same_thread;
} Chain;

static void
chain_free (Chain *c)
{
  g_clear_pointer (&c->promise, ws_promise_unref);
  g_clear_pointer (&c->shot, ws_oneshot_unref);
  g_clear_object (&c->file);
  g_free (c);
}

static void
chain_fail (Chain   *c,
            GError  *error)
{
  ws_promise_return_error (c->promise, error);
  chain_free (c);
}

static void
chain_loaded (GObject      *object,
              GAsyncResult *result,
              gpointer      data)
{
  Chain *c = data;
  GError *error = NULL;
  gchar *contents = NULL;
  gsize length = 0;
  GValue v = G_VALUE_INIT;

  c->same_thread &= g_thread_self () == c->start_thread;
  if (!g_file_load_contents_finish (G_FILE (object), result, &contents, &length, NULL, &error))
    {
      chain_fail (c, error);
      return;
    }
  g_value_init (&v, G_TYPE_STRING);
  g_value_take_string (&v, g_strdup_printf ("%s %d %s", c->same_thread ? "worker" : "moved",
                                            c->step, contents));
  g_free (contents);
  ws_promise_return_value (c->promise, &v);
  g_value_unset (&v);
  chain_free (c);
}

static void
chain_received (GObject      *object,
                GAsyncResult *result,
                gpointer      data)
{
  Chain *c = data;
  GError *error = NULL;
  gpointer item;

  c->same_thread &= g_thread_self () == c->start_thread;
  item = ws_oneshot_receive_finish (c->shot, result, &error);
  if (error != NULL)
    {
      chain_fail (c, error);
      return;
    }
  c->step += GPOINTER_TO_INT (item);
  g_file_load_contents_async (c->file, ws_promise_get_cancellable (c->promise),
                              chain_loaded, c);
}

static void
chain_slept (GObject      *object,
             GAsyncResult *result,
             gpointer      data)
{
  Chain *c = data;
  GError *error = NULL;

  c->same_thread &= g_thread_self () == c->start_thread;
  if (!ws_sleep_for_finish (result, &error))
    {
      chain_fail (c, error);
      return;
    }
  c->step = 1;
  ws_oneshot_receive_async (c->shot, ws_promise_get_cancellable (c->promise),
                            chain_received, c);
}

typedef struct
{
  WsOneshot *shot;
  GFile     *file;
} ChainArgs;

static void
start_chain (WsPromise *promise,
             gpointer   data)
{
  ChainArgs *args = data;
  Chain *c = g_new0 (Chain, 1);

  c->promise = ws_promise_ref (promise);
  c->start_thread = g_thread_self ();
  c->shot = ws_oneshot_ref (args->shot);
  c->file = g_object_ref (args->file);
  c->same_thread = TRUE;
  ws_sleep_for_async (10 * G_TIME_SPAN_MILLISECOND, ws_promise_get_cancellable (promise),
                      chain_slept, c);
}

static gchar *
write_temp_file (const char *contents,
                 GFile     **file)
{
  g_autoptr(GError) error = NULL;
  gchar *path = NULL;
  gint fd = g_file_open_tmp ("wsrt-promise-XXXXXX", &path, &error);

  g_assert_no_error (error);
  close (fd);
  g_file_set_contents (path, contents, -1, &error);
  g_assert_no_error (error);
  *file = g_file_new_for_path (path);
  return path;
}

/* A chain of callbacks started by the start function, a sleep, a
 * oneshot's receive and a GIO load, each resumes on the worker that ran
 * the start function; the main loop awaits the task with wait_async. */
static void
test_work_resumes_on_worker (void)
{
  WsTestOnContext f;
  WsTestWaitResult r = { 0 };
  g_autoptr(WsTask) task = NULL;
  g_autofree gchar *path = NULL;
  ChainArgs args;

  ws_test_on_context_init (&f, 2);
  path = write_temp_file ("contents", &args.file);
  args.shot = ws_oneshot_new (NULL);
  task = ws_runtime_spawn_promise (f.rt, start_chain, &args, NULL);
  g_usleep (20000);
  g_assert_false (ws_task_is_finished (task));
  ws_oneshot_send (args.shot, GINT_TO_POINTER (1));
  ws_task_wait_async (task, NULL, ws_test_wait_cb, &r);
  ws_test_iterate_until (f.ctx, r.calls == 1);
  g_assert_no_error (r.error);
  g_assert_true (r.ok);
  g_assert_cmpstr (g_value_get_string (ws_task_get_value (task)), ==, "worker 2 contents");

  ws_test_on_context_clear (&f);
  ws_oneshot_unref (args.shot);
  g_object_unref (args.file);
  g_unlink (path);
}

/* Cancelling the task while its chain waits (on a sleep an hour long)
 * stops the chain through the cancellable: the sleep's callback comes
 * with G_IO_ERROR_CANCELLED on the worker, and the chain frees itself. */
static void
test_cancel_stops_work (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GError) error = NULL;
  g_autoptr(WsTask) task = NULL;
  ChainArgs args;
  g_autofree gchar *path = write_temp_file ("x", &args.file);

  args.shot = ws_oneshot_new (NULL);
  task = ws_runtime_spawn_promise (rt, start_chain, &args, NULL);
  /* The chain waits in the oneshot's receive: nothing is sent. */
  g_usleep (50000);
  ws_task_cancel (task);
  g_assert_false (ws_task_wait (task, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  /* The chain freed itself (the leak check of the case and ASan see it);
   * its oneshot reference is gone once the cancelled receive ran. */
  ws_oneshot_unref (args.shot);
  g_object_unref (args.file);
  g_unlink (path);
}

/* Work waiting on a sleep an hour long, with the promise's cancellable,
 * when the runtime shuts down: the shutdown cancels it, the callback runs
 * on the worker before the worker's context goes, and the work frees its
 * state (ASan's leak check would see it otherwise). */
typedef struct
{
  WsPromise    *promise;
  _Atomic gint *n_called;
} HourNap;

static void
hour_nap_done (GObject      *object,
               GAsyncResult *result,
               gpointer      data)
{
  HourNap *nap = data;
  GError *error = NULL;

  g_assert_false (ws_sleep_for_finish (result, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  atomic_fetch_add (nap->n_called, 1);
  ws_promise_return_error (nap->promise, error);
  ws_promise_unref (nap->promise);
  g_free (nap);
}

static void
start_hour_nap (WsPromise *promise,
                gpointer   data)
{
  HourNap *nap = g_new0 (HourNap, 1);

  nap->promise = ws_promise_ref (promise);
  nap->n_called = data;
  ws_sleep_for_async (G_TIME_SPAN_HOUR, ws_promise_get_cancellable (promise),
                      hour_nap_done, nap);
  atomic_fetch_add (nap->n_called, 100);
}

static void
test_shutdown_stops_work (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GError) error = NULL;
  WsTask *tasks[4];
  _Atomic gint n_called = 0;

  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    tasks[i] = ws_runtime_spawn_promise (rt, start_hour_nap, (gpointer) &n_called, NULL);
  ws_test_wait_until (atomic_load (&n_called) == 100 * (gint) G_N_ELEMENTS (tasks));
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
  g_assert_cmpint (atomic_load (&n_called), ==, 101 * (gint) G_N_ELEMENTS (tasks));
  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    {
      g_assert_false (ws_task_wait (tasks[i], NULL, &error));
      g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
      g_clear_error (&error);
      g_object_unref (tasks[i]);
    }
}

/* Another task awaits a promise's task with ws_task_poll. */
typedef struct
{
  WsTask *awaited;
} Awaiter;

static WsPoll
awaiter_func (WsContext *cx,
              gpointer   data)
{
  Awaiter *a = data;

  if (ws_task_poll (a->awaited, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  return ws_test_return_int (cx, g_value_get_int (ws_task_get_value (a->awaited)) + 1);
}

static void
test_awaited_by_task (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsTask) task = NULL;
  g_autoptr(WsTask) awaiter = NULL;
  g_autoptr(GThread) completer = NULL;
  Awaiter a;
  Start s;

  start_init (&s);
  task = ws_runtime_spawn_promise (rt, start_keep, &s, NULL);
  a.awaited = task;
  awaiter = ws_runtime_spawn (rt, awaiter_func, &a, NULL);
  completer = g_thread_new ("completer", complete_later_thread, take_kept (&s));
  g_assert_true (ws_task_wait (awaiter, NULL, NULL));
  g_assert_cmpint (g_value_get_int (ws_task_get_value (awaiter)), ==, 43);
  g_thread_join (g_steal_pointer (&completer));
  g_assert_true (ws_runtime_shutdown (rt, -1));
  start_clear (&s);
}

/* Refused calls free what they were given. */
static void
test_bad_input (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  WsTask *task = NULL;
  Start s;

  start_init (&s);
  ws_test_reset_counters ();
  WS_TEST_REFUSED (ws_runtime_spawn_promise,
                   task = ws_runtime_spawn_promise (rt, NULL, NULL, ws_test_count_destroy));
  g_assert_null (task);
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 1);
  WS_TEST_REFUSED (ws_promise_return_pointer,
                   ws_promise_return_pointer (NULL, GUINT_TO_POINTER (1), ws_test_count_destroy));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 2);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  start_clear (&s);
}

/* wsrt never acquires, iterates or looks into a GMainContext it did not
 * create or was not handed (doc/architecture.md, "Rules: main
 * contexts"): the application's default context is the application's.
 *
 * Promises are spawned in batches from this thread and run on two
 * workers, while this thread acquires and releases the default context
 * as fast as it can, as a main loop's non-blocking iteration does. An
 * acquire fails only while another thread owns the context, and
 * nothing else in this process takes it: every failure would be wsrt's.
 * How often two threads meet in a short window depends on the load, so
 * the sources are counted too, which does not: a source attached to the
 * default context gets the next of that context's IDs, so the test's
 * two marker sources, attached before and after the promises ran, have
 * consecutive IDs unless something attached a source to the default
 * context meanwhile. The promises complete with their values, and the
 * acquire loop overlapped their polls. */
static guint
attach_marker (void)
{
  GSource *marker = g_idle_source_new ();
  guint id = g_source_attach (marker, NULL);

  g_source_destroy (marker);
  g_source_unref (marker);
  return id;
}

/* Completes inside the start function, counting the starts only: many
 * promises share one Start. */
static void
start_count_and_complete (WsPromise *promise,
                          gpointer   data)
{
  atomic_fetch_add (&((Start *) data)->n_started, 1);
  return_int (promise, 41);
}

static void
test_default_context_left_alone (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  guint n_batches = ws_test_scaled (200);
  guint n_acquired = 0;
  guint n_refused = 0;
  guint first_marker = attach_marker ();

  for (guint b = 0; b < n_batches; b++)
    {
      WsTask *tasks[16];
      Start s;
      gboolean all_done = FALSE;

      start_init (&s);
      for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
        tasks[i] = ws_runtime_spawn_promise (rt, start_count_and_complete, &s, NULL);
      while (!all_done)
        {
          if (g_main_context_acquire (NULL))
            {
              n_acquired++;
              g_main_context_release (NULL);
            }
          else
            n_refused++;
          all_done = TRUE;
          for (guint i = 0; i < G_N_ELEMENTS (tasks) && all_done; i++)
            all_done = ws_task_is_finished (tasks[i]);
        }
      for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
        {
          g_assert_true (ws_task_wait (tasks[i], NULL, NULL));
          g_assert_cmpint (g_value_get_int (ws_task_get_value (tasks[i])), ==, 41);
          g_object_unref (tasks[i]);
        }
      g_assert_cmpint (atomic_load (&s.n_started), ==, G_N_ELEMENTS (tasks));
      start_clear (&s);
    }
  g_test_message ("default context: %u acquires, %u refused", n_acquired, n_refused);
  g_assert_cmpuint (n_refused, ==, 0);
  g_assert_cmpuint (n_acquired, >, 0);
  g_assert_cmpuint (attach_marker (), ==, first_marker + 1);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Another thread of the application attaches timeouts to the default
 * context (and destroys them) while correct promises run: wsrt has
 * nothing to say about it. GTest makes warnings fatal, so a warning
 * fails the case. The attaching thread keeps some sources alive at a
 * time, as an application's pending timeouts are, and each start
 * function returns only after that thread attached another one, so
 * every promise starts while a foreign timeout is attached. */
static _Atomic gboolean attacher_stop;
static _Atomic guint attacher_n_attached;

static gboolean
never_fires (gpointer data)
{
  g_assert_not_reached ();
  return G_SOURCE_REMOVE;
}

static gpointer
attach_timeouts_thread (gpointer data)
{
  GSource *live[64] = { NULL, };
  guint next = 0;

  while (!atomic_load (&attacher_stop))
    {
      if (live[next] != NULL)
        {
          g_source_destroy (live[next]);
          g_source_unref (live[next]);
        }
      live[next] = g_timeout_source_new_seconds (3600);
      g_source_set_callback (live[next], never_fires, NULL, NULL);
      g_source_attach (live[next], NULL);
      atomic_fetch_add (&attacher_n_attached, 1);
      next = (next + 1) % G_N_ELEMENTS (live);
    }
  for (guint i = 0; i < G_N_ELEMENTS (live); i++)
    if (live[i] != NULL)
      {
        g_source_destroy (live[i]);
        g_source_unref (live[i]);
      }
  return NULL;
}

static void
start_while_timeouts_attached (WsPromise *promise,
                               gpointer   data)
{
  guint attached = atomic_load (&attacher_n_attached);

  record_start (data);
  ws_test_wait_until (atomic_load (&attacher_n_attached) > attached);
  return_int (promise, 41);
}

static void
test_foreign_timeouts_no_warning (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  GThread *attacher;
  guint n = ws_test_scaled (600);

  atomic_store (&attacher_stop, FALSE);
  atomic_store (&attacher_n_attached, 0);
  attacher = g_thread_new ("attacher", attach_timeouts_thread, NULL);
  for (guint i = 0; i < n; i++)
    {
      g_autoptr(WsTask) task = NULL;
      Start s;

      start_init (&s);
      task = ws_runtime_spawn_promise (rt, start_while_timeouts_attached, &s, NULL);
      g_assert_true (ws_task_wait (task, NULL, NULL));
      g_assert_cmpint (g_value_get_int (ws_task_get_value (task)), ==, 41);
      g_assert_cmpint (atomic_load (&s.n_started), ==, 1);
      start_clear (&s);
    }
  atomic_store (&attacher_stop, TRUE);
  g_thread_join (attacher);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* The Timeout.add trap, which wsrt does not detect (it would have to
 * look into the default context): code started as a promise on a worker
 * attaches a timeout to the global default context; it fires on the
 * thread that iterates that context, here, and only once this thread
 * iterates it. */
static _Atomic gboolean trap_fired;
static GThread *_Atomic trap_fired_on;

static gboolean
complete_from_timeout (gpointer data)
{
  ws_promise_return_pointer (data, GINT_TO_POINTER (42), NULL);
  atomic_store (&trap_fired_on, g_thread_self ());
  atomic_store (&trap_fired, TRUE);
  return G_SOURCE_REMOVE;
}

static void
start_with_default_timeout (WsPromise *promise,
                            gpointer   data)
{
  GSource *source = g_timeout_source_new (1);

  g_source_set_callback (source, complete_from_timeout, ws_promise_ref (promise),
                         (GDestroyNotify) ws_promise_unref);
  g_source_attach (source, NULL);
  g_source_unref (source);
  record_start (data);
}

static void
test_timeout_add_trap_resumes_on_default_context (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(WsTask) task = NULL;
  Start s;

  start_init (&s);
  atomic_store (&trap_fired, FALSE);
  atomic_store (&trap_fired_on, NULL);
  task = ws_runtime_spawn_promise (rt, start_with_default_timeout, &s, NULL);
  ws_test_wait_until (atomic_load (&s.n_started) == 1);
  g_assert_true (s.on_worker);
  /* Only this thread can fire it: nothing else iterates the default
   * context. */
  ws_test_iterate_until (NULL, atomic_load (&trap_fired));
  g_assert_true (atomic_load (&trap_fired_on) == g_thread_self ());
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_cmpint (GPOINTER_TO_INT (ws_task_propagate_pointer (task, NULL)), ==, 42);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  start_clear (&s);
}

WS_TEST_MAIN ({ "/promise/return-value", test_return_value },
              { "/promise/default-context-left-alone", test_default_context_left_alone },
              { "/promise/foreign-timeouts-no-warning", test_foreign_timeouts_no_warning },
              { "/promise/timeout-add-trap-resumes-on-default-context",
                test_timeout_add_trap_resumes_on_default_context },
              { "/promise/error-and-pointer", test_error_and_pointer },
              { "/promise/dropped", test_dropped },
              { "/promise/cancel-in-flight", test_cancel_in_flight },
              { "/promise/cancel-before-start", test_cancel_before_start },
              { "/promise/shutdown-pending", test_shutdown_pending },
              { "/promise/work-resumes-on-worker", test_work_resumes_on_worker },
              { "/promise/cancel-stops-work", test_cancel_stops_work },
              { "/promise/shutdown-stops-work", test_shutdown_stops_work },
              { "/promise/awaited-by-task", test_awaited_by_task },
              { "/promise/bad-input", test_bad_input })
