/* test-local-tasks.c: tasks spawned on a GMainContext
 * (ws_runtime_spawn_local)
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Every poll and the destroy notify run on the context's owner thread,
 * whoever wakes or cancels the task; a dispatch runs a bounded slice, so
 * other sources of the context (a timer, a redraw) keep running under a
 * flood; a poll that runs a nested main loop on the context does not
 * stop the other local tasks, which that loop polls; shutdown ends local
 * tasks on the owner thread.
 */

#include "config.h"

#include "ws-test-fixture.h"
#include "ws-local-executor-private.h"

typedef struct
{
  GThread   *owner;
  WsRuntime *rt;
  guint      polls;
  gboolean   wrong_thread;
  GThread   *destroy_thread;
  WsWaker   *_Atomic waker;
} Local;

static void
local_destroy (gpointer data)
{
  ((Local *) data)->destroy_thread = g_thread_self ();
}

/* Counts the poll; notes a poll off the owner thread. */
static void
local_polled (Local *l)
{
  if (g_thread_self () != l->owner)
    l->wrong_thread = TRUE;
  l->polls++;
}

/* The task ran and ended on the owner thread only. */
static void
assert_all_on_owner (Local *l)
{
  g_assert_false (l->wrong_thread);
  g_assert_true (l->destroy_thread == l->owner);
}

static WsPoll
wake_from_worker (WsContext *cx,
                  gpointer   data)
{
  Local *l = data;

  ws_test_wake_and_unref (atomic_exchange (&l->waker, NULL));
  return WS_POLL_READY;
}

static WsPoll
local_woken_by_worker (WsContext *cx,
                       gpointer   data)
{
  Local *l = data;

  local_polled (l);
  if (l->polls == 1)
    {
      atomic_store (&l->waker, ws_context_get_waker (cx));
      ws_runtime_spawn_detached (l->rt, wake_from_worker, l, NULL);
      return WS_POLL_PENDING;
    }
  return WS_POLL_READY;
}

/* The runtime and context of a test, and a Local for its task. */
static void
local_init (WsTestOnContext *f,
            guint            n_workers,
            Local           *l)
{
  ws_test_on_context_init (f, n_workers);
  *l = (Local) { .owner = g_thread_self (), .rt = f->rt };
}

/* A second Local on the runtime and context of @f. */
static void
local_init_same (WsTestOnContext *f,
                 Local           *l)
{
  *l = (Local) { .owner = g_thread_self (), .rt = f->rt };
}

static void
test_wake_from_worker (void)
{
  WsTestOnContext f;
  Local l;
  g_autoptr(WsTask) task = NULL;

  local_init (&f, 2, &l);
  task = ws_runtime_spawn_local (f.rt, NULL, local_woken_by_worker, &l, local_destroy);
  ws_test_iterate_until (f.ctx, ws_task_is_finished (task));
  g_assert_cmpuint (l.polls, ==, 2);
  assert_all_on_owner (&l);
  ws_test_on_context_clear (&f);
}

static WsPoll
local_pending_forever (WsContext *cx,
                       gpointer   data)
{
  local_polled (data);
  return WS_POLL_PENDING;
}

static WsPoll
cancel_from_worker (WsContext *cx,
                    gpointer   data)
{
  ws_task_cancel (data);
  return WS_POLL_READY;
}

static void
test_cancel_from_worker (void)
{
  WsTestOnContext f;
  Local l;
  g_autoptr(WsTask) task = NULL;
  g_autoptr(WsTask) canceller = NULL;

  local_init (&f, 2, &l);
  task = ws_runtime_spawn_local (f.rt, f.ctx, local_pending_forever, &l, local_destroy);
  ws_test_iterate_until (f.ctx, l.polls == 1);

  canceller = ws_runtime_spawn (f.rt, cancel_from_worker, g_object_ref (task), g_object_unref);
  g_assert_true (ws_task_wait (canceller, NULL, NULL));
  /* Cancelled on a worker, destroyed here, at the next dispatch. */
  g_assert_null (l.destroy_thread);
  ws_test_iterate_until (f.ctx, ws_task_is_finished (task));
  assert_all_on_owner (&l);
  g_assert_cmpuint (l.polls, ==, 1);
  ws_test_on_context_clear (&f);
}

/* A flood of local tasks: each dispatch returns after a bounded slice, so
 * a timeout on the same context keeps firing. */
#define N_FLOOD 100000

static gboolean
count_tick (gpointer data)
{
  (*(guint *) data)++;
  return G_SOURCE_CONTINUE;
}

/* Spawns the flood (ws_test_count_poll tasks) on @ctx. */
static void
spawn_flood (WsRuntime    *rt,
             GMainContext *ctx)
{
  ws_test_reset_counters ();
  for (guint i = 0; i < N_FLOOD; i++)
    ws_runtime_spawn_local_detached (rt, ctx, ws_test_count_poll, NULL, NULL);
}

static gboolean
flood_done (void)
{
  return atomic_load (&ws_test_n_polled) >= N_FLOOD;
}

static void
test_flood_bounded (void)
{
  WsTestOnContext f;
  GSource *timer = g_timeout_source_new (16);
  guint ticks = 0;
  guint dispatches = 0;

  ws_test_on_context_init (&f, 1);
  g_source_set_callback (timer, count_tick, &ticks, NULL);
  g_source_attach (timer, f.ctx);

  atomic_store (&ws_local_executor_max_slice_polls, 0);
  spawn_flood (f.rt, f.ctx);

  while (!flood_done ())
    {
      g_main_context_iteration (f.ctx, TRUE);
      dispatches++;
    }
  /* No dispatch ran more than the poll cap, so control returned to the
   * main loop at least 100000 / cap times. */
  g_assert_cmpuint (atomic_load (&ws_local_executor_max_slice_polls), <=, WS_LOCAL_SLICE_MAX_POLLS);
  g_assert_cmpuint (dispatches, >=, N_FLOOD / WS_LOCAL_SLICE_MAX_POLLS);
  g_test_message ("100000 local tasks in %u main-loop iterations; timer fired %u times",
                  dispatches, ticks);
  /* And the timer still fires. */
  ws_test_iterate_until (f.ctx, ticks > 0);

  g_source_destroy (timer);
  g_source_unref (timer);
  ws_test_on_context_clear (&f);
}

static gboolean
count_redraw (gpointer data)
{
  guint *during_flood = data;

  if (!flood_done ())
    (*during_flood)++;
  return G_SOURCE_CONTINUE;
}

/* GTK paints from a source at GDK_PRIORITY_REDRAW (G_PRIORITY_HIGH_IDLE +
 * 20), below G_PRIORITY_DEFAULT, when a frame is due. GLib dispatches only
 * the highest ready priority, so a backlog of local tasks must not keep the
 * executor's source ready at DEFAULT: a 1 ms timer at redraw priority (a
 * stand-in for the frame clock) runs during the flood. */
static void
test_flood_lets_redraw_run (void)
{
  WsTestOnContext f;
  GSource *redraw = g_timeout_source_new (1);
  guint during_flood = 0;

  ws_test_on_context_init (&f, 1);
  g_source_set_priority (redraw, G_PRIORITY_HIGH_IDLE + 20);
  g_source_set_callback (redraw, count_redraw, &during_flood, NULL);
  g_source_attach (redraw, f.ctx);

  spawn_flood (f.rt, f.ctx);
  ws_test_iterate_until (f.ctx, flood_done ());

  g_test_message ("a redraw-priority source ran %u times during the flood", during_flood);
  g_assert_cmpuint (during_flood, >, 0);

  g_source_destroy (redraw);
  g_source_unref (redraw);
  ws_test_on_context_clear (&f);
}

/* Local tasks run on their context's thread; wait_async calls back there
 * exactly once, never from inside the call. */
static WsPoll
local_yield_thrice (WsContext *cx,
                    gpointer   data)
{
  Local *l = data;

  local_polled (l);
  if (l->polls <= 3)
    return ws_context_yield (cx);
  return WS_POLL_READY;
}

static void
test_yield_and_wait_async (void)
{
  WsTestOnContext f;
  Local l;
  g_autoptr(WsTask) task = NULL;
  WsTestWaitResult r = { 0, };

  local_init (&f, 1, &l);
  task = ws_runtime_spawn_local (f.rt, NULL, local_yield_thrice, &l, local_destroy);
  ws_task_wait_async (task, NULL, ws_test_wait_cb, &r);
  g_assert_cmpuint (r.calls, ==, 0);        /* never from inside the call */

  ws_test_iterate_until (f.ctx, r.calls > 0);
  g_assert_cmpuint (r.calls, ==, 1);
  g_assert_true (r.ok);
  g_assert_no_error (r.error);
  g_assert_cmpuint (l.polls, ==, 4);
  assert_all_on_owner (&l);

  /* Waiting on a finished task: still exactly once, still not inside. */
  ws_task_wait_async (task, NULL, ws_test_wait_cb, &r);
  g_assert_cmpuint (r.calls, ==, 1);
  ws_test_iterate_until (f.ctx, r.calls > 1);
  while (g_main_context_iteration (f.ctx, FALSE))
    ;
  g_assert_cmpuint (r.calls, ==, 2);

  ws_test_on_context_clear (&f);
}

/* A cancelled wait calls back once with CANCELLED; shutdown then ends the
 * local task on the owner thread. */
static void
test_cancelled_wait_and_shutdown (void)
{
  WsTestOnContext f;
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  Local l;
  g_autoptr(WsTask) task = NULL;
  WsTestWaitResult r = { 0, };

  local_init (&f, 1, &l);
  task = ws_runtime_spawn_local (f.rt, f.ctx, local_pending_forever, &l, local_destroy);
  ws_task_wait_async (task, cancellable, ws_test_wait_cb, &r);
  ws_test_iterate_until (f.ctx, l.polls > 0);
  g_cancellable_cancel (cancellable);
  g_assert_cmpuint (r.calls, ==, 0);
  ws_test_iterate_until (f.ctx, r.calls > 0);
  g_assert_false (r.ok);
  g_assert_error (r.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&r.error);
  g_assert_false (ws_task_is_finished (task));

  /* This thread owns ctx, so shutdown runs the cancellation right here. */
  g_assert_true (ws_runtime_shutdown (f.rt, -1));
  g_assert_true (ws_task_is_finished (task));
  assert_all_on_owner (&l);
  while (g_main_context_iteration (f.ctx, FALSE))
    ;
  g_assert_cmpuint (r.calls, ==, 1);

  ws_test_on_context_clear (&f);
}

/* ws_task_wait on the thread of a local task's context would wait for
 * ever (only an iteration of the context polls the task): it fails at
 * once with WS_ERROR_WOULD_BLOCK naming the ways out, whether the task has
 * ended or not; another thread waits as usual. */
static void
assert_wait_would_block (WsTask *task)
{
  g_autoptr(GError) error = NULL;

  g_assert_false (ws_task_wait (task, NULL, &error));
  g_assert_error (error, WS_ERROR, WS_ERROR_WOULD_BLOCK);
  g_assert_nonnull (strstr (error->message, "ws_task_wait_async()"));
  g_assert_nonnull (strstr (error->message, "iterate the context"));
}

typedef struct
{
  WsTask   *task;
  gboolean  ran;
} InDispatch;

static gboolean
wait_in_dispatch (gpointer data)
{
  InDispatch *d = data;

  g_assert_true (g_main_context_is_owner (g_main_context_get_thread_default ()));
  assert_wait_would_block (d->task);
  d->ran = TRUE;
  return G_SOURCE_REMOVE;
}

static gpointer
wait_on_other_thread (gpointer data)
{
  return GINT_TO_POINTER (ws_task_wait (data, NULL, NULL));
}

static void
test_wait_on_context_thread_fails (void)
{
  WsTestOnContext f;
  Local l;
  g_autoptr(WsTask) task = NULL;
  InDispatch d = { NULL, FALSE };
  GSource *idle;
  GThread *waiter;

  local_init (&f, 1, &l);
  task = ws_runtime_spawn_local (f.rt, NULL, local_yield_thrice, &l, local_destroy);

  /* Another thread waits (for as long as this one does not iterate the
   * context). */
  waiter = g_thread_new ("waiter", wait_on_other_thread, task);

  /* This thread pushed the context as its thread default, which acquired
   * it: not inside an iteration, but the owner all the same. */
  g_assert_true (g_main_context_is_owner (f.ctx));
  assert_wait_would_block (task);

  /* Inside a dispatch of the context: this thread owns it. */
  d.task = task;
  idle = g_idle_source_new ();
  g_source_set_priority (idle, G_PRIORITY_HIGH);
  g_source_set_callback (idle, wait_in_dispatch, &d, NULL);
  g_source_attach (idle, f.ctx);
  g_source_unref (idle);
  ws_test_iterate_until (f.ctx, d.ran);

  ws_test_iterate_until (f.ctx, ws_task_is_finished (task));
  g_assert_true (GPOINTER_TO_INT (g_thread_join (waiter)));
  g_assert_cmpuint (l.polls, ==, 4);
  assert_all_on_owner (&l);

  /* Refused after the end too, so the mistake shows on the first run. */
  assert_wait_would_block (task);

  ws_test_on_context_clear (&f);
}

/* A local task whose poll runs a nested main loop on its own context (a
 * modal dialog run to completion, a synchronous helper): the other local
 * tasks of the context are polled from that loop, and the running task
 * is not polled again until its poll returns. Task A wakes itself (the
 * wake is deferred: A is running), has a worker wake task B, and runs a
 * nested loop that only B's second poll quits; before the executor's
 * source recursed, the loop never ended (the watchdog reports it). */
typedef struct
{
  Local      a;
  Local      b;
  GMainLoop *nested;
  gboolean   in_a;             /* A's poll is running */
  gboolean   a_reentered;      /* A was polled from inside its own poll */
  gboolean   b_ran_nested;     /* B's second poll ran inside A's loop */
  guint      a_polls_at_quit;
} Nested;

static WsPoll
nested_b (WsContext *cx,
          gpointer   data)
{
  Nested *n = data;

  local_polled (&n->b);
  if (n->b.polls == 1)
    {
      /* Woken later by a worker (wake_from_worker). */
      atomic_store (&n->b.waker, ws_context_get_waker (cx));
      return WS_POLL_PENDING;
    }
  n->b_ran_nested = n->in_a;
  n->a_polls_at_quit = n->a.polls;
  g_main_loop_quit (n->nested);
  return WS_POLL_READY;
}

static WsPoll
nested_a (WsContext *cx,
          gpointer   data)
{
  Nested *n = data;

  if (n->in_a)
    n->a_reentered = TRUE;
  local_polled (&n->a);
  if (n->a.polls > 1)
    return WS_POLL_READY;

  n->in_a = TRUE;
  /* A's own wake, during its poll: deferred until the poll returns. */
  ws_test_wake_and_unref (ws_context_get_waker (cx));
  ws_runtime_spawn_detached (n->a.rt, wake_from_worker, &n->b, NULL);
  g_main_loop_run (n->nested);
  n->in_a = FALSE;
  return WS_POLL_PENDING;
}

static void
test_nested_loop_polls_others (void)
{
  WsTestOnContext f;
  Nested n = { 0, };
  g_autoptr(WsTask) a = NULL;
  g_autoptr(WsTask) b = NULL;

  local_init (&f, 1, &n.a);
  local_init_same (&f, &n.b);
  n.nested = g_main_loop_new (f.ctx, FALSE);

  b = ws_runtime_spawn_local (f.rt, NULL, nested_b, &n, NULL);
  ws_test_iterate_until (f.ctx, n.b.polls == 1);
  a = ws_runtime_spawn_local (f.rt, NULL, nested_a, &n, NULL);
  ws_test_iterate_until (f.ctx, ws_task_is_finished (a) && ws_task_is_finished (b));

  g_assert_true (n.b_ran_nested);
  g_assert_cmpuint (n.a_polls_at_quit, ==, 1);
  g_assert_false (n.a_reentered);
  /* A's deferred wake polled it once more, after its poll returned. */
  g_assert_cmpuint (n.a.polls, ==, 2);
  g_assert_cmpuint (n.b.polls, ==, 2);
  g_assert_false (n.a.wrong_thread);
  g_assert_false (n.b.wrong_thread);

  g_main_loop_unref (n.nested);
  ws_test_on_context_clear (&f);
}

/* The last WsRuntime reference dropped inside a task, while a local
 * executor exists: the shutdown that dispose starts cannot wait on a
 * runtime thread, so the executor's owner retires it on its next
 * dispatch, and the runtime is freed (its hooks' data with it) without a
 * later call. */
typedef struct
{
  WsRuntime *rt;
  gint       freed;           /* atomic */
} LastRef;

static void
note_hooks_freed (gpointer data)
{
  g_atomic_int_set (&((LastRef *) data)->freed, TRUE);
}

static void
no_hook (gpointer data)
{
}

static WsPoll
drop_runtime (WsContext *cx,
              gpointer   data)
{
  g_clear_object (&((LastRef *) data)->rt);
  return WS_POLL_READY;
}

static void
test_last_ref_in_task (void)
{
  g_autoptr(GMainContext) context = g_main_context_new ();
  g_autoptr(WsTask) local = NULL;
  g_autoptr(GError) error = NULL;
  LastRef r = { g_object_new (WS_TYPE_RUNTIME, "n-workers", 1, NULL), FALSE };

  ws_runtime_set_on_thread_stop (r.rt, no_hook, &r, note_hooks_freed);
  g_assert_true (g_initable_init (G_INITABLE (r.rt), NULL, &error));
  g_main_context_push_thread_default (context);
  local = ws_runtime_spawn_local (r.rt, NULL, ws_test_pending_forever, NULL, NULL);
  ws_runtime_spawn_detached (r.rt, drop_runtime, &r, NULL);

  /* The local task is cancelled on its context, then the runtime goes. */
  ws_test_iterate_until (context, ws_task_is_finished (local));
  g_main_context_pop_thread_default (context);
  g_assert_false (ws_task_wait (local, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  /* The task holds its executor; the runtime goes once it does, freed
   * by whichever of its threads lets go last. */
  g_clear_object (&local);
  while (!g_atomic_int_get (&r.freed))
    {
      g_main_context_iteration (context, FALSE);
      g_usleep (100);
    }
}

static WsPoll
keep_context (WsContext *cx,
              gpointer   data)
{
  *(WsContext **) data = cx;
  return WS_POLL_READY;
}

/* Calls ws_context_yield (@kept) below @depth KiB of stack written
 * over, which stays written over during the call: where a slice's
 * context was, on the stack, it now reads as no context at all. */
static G_GNUC_NO_INLINE WsPoll
yield_below_scribbled_stack (WsContext *kept,
                             guint      depth)
{
  volatile guint8 scribble[1024];
  WsPoll poll;

  for (gsize i = 0; i < sizeof scribble; i++)
    scribble[i] = 0xa5;
  if (depth == 0)
    poll = ws_context_yield (kept);
  else
    poll = yield_below_scribbled_stack (kept, depth - 1);
  /* Read after the call: the frame is live until then. */
  return scribble[depth % sizeof scribble] == 0xa5 ? poll : WS_POLL_READY;
}

/* A context that a local task's closure kept (as a GJS or Python
 * closure may) and used once its poll returned and the dispatch went
 * on: refused with the critical that names the rule, not read as a
 * task from a stack frame reused since. */
static void
test_stale_local_context (void)
{
  WsTestOnContext f;
  g_autoptr(WsTask) local = NULL;
  WsContext *kept = NULL;

  ws_test_on_context_init (&f, 1);
  local = ws_runtime_spawn_local (f.rt, NULL, keep_context, &kept, NULL);
  ws_test_iterate_until (f.ctx, ws_task_is_finished (local));
  g_assert_nonnull (kept);

  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL,
                         "ws_context_yield: *valid only during the call of the poll function*");
  g_assert_cmpint (yield_below_scribbled_stack (kept, 16), ==, WS_POLL_PENDING);
  g_test_assert_expected_messages ();

  ws_test_on_context_clear (&f);
}

WS_TEST_MAIN ({ "/local-tasks/wake-from-worker", test_wake_from_worker },
              { "/local-tasks/stale-context", test_stale_local_context },
              { "/local-tasks/cancel-from-worker", test_cancel_from_worker },
              { "/local-tasks/flood-bounded", test_flood_bounded },
              { "/local-tasks/flood-lets-redraw-run", test_flood_lets_redraw_run },
              { "/local-tasks/yield-and-wait-async", test_yield_and_wait_async },
              { "/local-tasks/cancelled-wait-and-shutdown", test_cancelled_wait_and_shutdown },
              { "/local-tasks/wait-on-context-thread-fails", test_wait_on_context_thread_fails },
              { "/local-tasks/last-ref-in-task", test_last_ref_in_task },
              { "/local-tasks/nested-loop-polls-others", test_nested_loop_polls_others })
