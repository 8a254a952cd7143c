/* test-host-context.c: where timers and completions land
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A timer or a completion belongs to a context that the waiting task's
 * host iterates for as long as the task can wait (doc/architecture.md,
 * "Rules: main contexts" and "Rules: timers"): a local task's sleep to its
 * executor's context, a sleep after ws_block_in_place () to the pool's
 * wheel, and the shared sources recurse, so a nested main loop in a
 * callback still gets the next one. Each case below hangs (and the
 * watchdog fails it) where a timer or a completion is bound elsewhere.
 */

#include "ws-test-fixture.h"
#include "ws-frame-slice-private.h"

static void
return_boolean (WsContext *cx,
                gboolean   value)
{
  GValue v = G_VALUE_INIT;

  g_value_init (&v, G_TYPE_BOOLEAN);
  g_value_set_boolean (&v, value);
  ws_context_return_value (cx, &v);
}

/* ---- a local task's sleep ------------------------------------------------ */

typedef struct
{
  WsSleep *sleep;
  guint    polls;
  gint64   first_poll;            /* when the first poll began */
} SleepState;

static WsPoll
sleep_then_ready (WsContext *cx,
                  gpointer   data)
{
  SleepState *s = data;

  if (s->polls++ == 0)
    s->first_poll = g_get_monotonic_time ();
  if (ws_sleep_poll (s->sleep, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  return_boolean (cx, TRUE);
  return WS_POLL_READY;
}

static WsPoll
wait_at_gate (WsContext *cx,
              gpointer   data)
{
  ws_test_gate_wait (data);
  return WS_POLL_READY;
}

/* A runtime with one worker whose blocking pool is full: its one thread
 * is held at @gate by @job, so a thread that leaves ws_block_in_place ()
 * is not adopted. Open the gate and wait for @job before the shutdown. */
static WsRuntime *
full_blocking_pool_runtime_new (WsTestGate  *gate,
                                WsTask     **job)
{
  g_autoptr(GError) error = NULL;
  WsRuntime *rt = g_initable_new (WS_TYPE_RUNTIME, NULL, &error, "n-workers", 1,
                                  "max-blocking-threads", 1, NULL);

  g_assert_no_error (error);
  ws_test_gate_init (gate);
  *job = ws_runtime_spawn_blocking (rt, wait_at_gate, gate, NULL);
  ws_test_gate_wait_for_waiters (gate, 1);
  return rt;
}

static void
full_blocking_pool_runtime_free (WsRuntime  *rt,
                                 WsTestGate *gate,
                                 WsTask     *job)
{
  ws_test_gate_open (gate);
  g_assert_true (ws_task_wait (job, NULL, NULL));
  g_object_unref (job);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_object_unref (rt);
  ws_test_gate_clear (gate);
}

/* Only local tasks on the default runtime: no worker thread runs, so a
 * sleep bound to a worker's wheel would never fire. */
static void
test_local_sleep_default_runtime (void)
{
  WsRuntime *rt = ws_runtime_get_default ();
  SleepState s = { ws_sleep_new (20 * 1000), 0 };
  g_autoptr(WsTask) task = ws_runtime_spawn_local (rt, NULL, sleep_then_ready, &s, NULL);

  ws_test_iterate_until (NULL, ws_task_is_finished (task));
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_cmpint (g_get_monotonic_time (), >=, ws_sleep_get_deadline (s.sleep));
  /* It waited, unless its first poll came after the deadline (a slow
   * machine, valgrind): what the test saw decides, not its speed. */
  if (s.first_poll < ws_sleep_get_deadline (s.sleep))
    g_assert_cmpuint (s.polls, >=, 2);
  ws_sleep_unref (s.sleep);
}

/* The only worker is stuck in a poll until the local sleep has fired: the
 * sleep must fire on the main context, not on the worker's. */
static void
test_local_sleep_worker_busy (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  WsTestGate gate;
  SleepState s = { ws_sleep_new (10 * 1000), 0 };
  g_autoptr(WsTask) blocker = NULL;
  g_autoptr(WsTask) task = NULL;

  ws_test_gate_init (&gate);
  blocker = ws_runtime_spawn (rt, wait_at_gate, &gate, NULL);
  ws_test_gate_wait_for_waiters (&gate, 1);

  task = ws_runtime_spawn_local (rt, NULL, sleep_then_ready, &s, NULL);
  ws_test_iterate_until (NULL, ws_task_is_finished (task));
  g_assert_true (ws_task_wait (task, NULL, NULL));

  ws_test_gate_open (&gate);
  g_assert_true (ws_task_wait (blocker, NULL, NULL));
  g_assert_true (ws_runtime_shutdown (rt, -1));
  ws_sleep_unref (s.sleep);
  ws_test_gate_clear (&gate);
}

/* ---- a sleep after ws_block_in_place () ---------------------------------- */

static void
nothing (gpointer data)
{
}

typedef struct
{
  WsSleep *sleep;
  gboolean blocked;
} BlockThenSleep;

static WsPoll
block_then_sleep (WsContext *cx,
                  gpointer   data)
{
  BlockThenSleep *s = data;

  if (!s->blocked)
    {
      g_autoptr(GError) error = NULL;

      s->blocked = TRUE;
      g_assert_true (ws_block_in_place (nothing, NULL, &error));
      g_assert_no_error (error);
      s->sleep = ws_sleep_new (20 * 1000);
    }
  if (ws_sleep_poll (s->sleep, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  return_boolean (cx, TRUE);
  return WS_POLL_READY;
}

/* The blocking pool is full (one thread, held by a job), so the thread
 * that leaves ws_block_in_place () is not adopted and its own context
 * goes with it: the sleep armed in the rest of that poll must not. */
static void
test_sleep_after_block_in_place_not_adopted (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(WsTask) task = NULL;
  BlockThenSleep s = { NULL, FALSE };
  WsTestGate gate;
  WsTask *job;
  WsRuntime *rt = full_blocking_pool_runtime_new (&gate, &job);

  task = ws_runtime_spawn (rt, block_then_sleep, &s, NULL);
  g_assert_true (ws_task_wait (task, NULL, &error));
  g_assert_no_error (error);

  full_blocking_pool_runtime_free (rt, &gate, job);
  ws_sleep_unref (s.sleep);
}

/* ---- nested main loops --------------------------------------------------- */

typedef struct
{
  GMainContext *context;
  WsTask       *second;
  WsTestGate   *gate;          /* the second task's, or NULL */
  gboolean      first_done;
  gboolean      second_done;
} Nested;

static void
on_second (GObject      *source,
           GAsyncResult *result,
           gpointer      data)
{
  Nested *n = data;

  g_assert_true (ws_task_wait_finish (WS_TASK (source), result, NULL));
  n->second_done = TRUE;
}

static void
on_first (GObject      *source,
          GAsyncResult *result,
          gpointer      data)
{
  Nested *n = data;

  g_assert_true (ws_task_wait_finish (WS_TASK (source), result, NULL));
  if (n->gate != NULL)
    ws_test_gate_open (n->gate);
  /* A synchronous wrapper, a dialog run to completion: a nested loop. */
  while (!n->second_done)
    g_main_context_iteration (n->context, TRUE);
  n->first_done = TRUE;
}

/* @second_waits: the second task ends only once the first callback runs
 * (a completion pushed during the nested loop); otherwise both end before
 * the context is iterated (one batch). */
static void
run_nested_completions (gboolean second_waits)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GMainContext) context = g_main_context_new ();
  g_autoptr(WsTask) first = NULL;
  g_autoptr(WsTask) second = NULL;
  WsTestGate gate;
  Nested n = { context, NULL, NULL, FALSE, FALSE };

  ws_test_gate_init (&gate);
  g_main_context_push_thread_default (context);

  first = ws_runtime_spawn (rt, ws_test_ready, NULL, NULL);
  if (second_waits)
    {
      n.gate = &gate;
      second = ws_runtime_spawn_blocking (rt, wait_at_gate, &gate, NULL);
    }
  else
    second = ws_runtime_spawn (rt, ws_test_ready, NULL, NULL);
  g_assert_true (ws_task_wait (first, NULL, NULL));
  if (!second_waits)
    g_assert_true (ws_task_wait (second, NULL, NULL));

  ws_task_wait_async (first, NULL, on_first, &n);
  ws_task_wait_async (second, NULL, on_second, &n);
  ws_test_iterate_until (context, n.first_done);
  g_assert_true (n.second_done);

  g_main_context_pop_thread_default (context);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  ws_test_gate_clear (&gate);
}

static void
test_nested_loop_same_batch (void)
{
  run_nested_completions (FALSE);
}

static void
test_nested_loop_later_completion (void)
{
  run_nested_completions (TRUE);
}

typedef struct
{
  GMainContext *context;
  gint64        second_usec;   /* the second sleep's duration */
  gboolean      first_done;
  gboolean      second_done;
} NestedSleeps;

static void
on_second_sleep (GObject      *source,
                 GAsyncResult *result,
                 gpointer      data)
{
  NestedSleeps *n = data;

  g_assert_true (ws_sleep_for_finish (result, NULL));
  n->second_done = TRUE;
}

static void
on_first_sleep (GObject      *source,
                GAsyncResult *result,
                gpointer      data)
{
  NestedSleeps *n = data;

  g_assert_true (ws_sleep_for_finish (result, NULL));
  if (n->second_usec > 0)
    ws_sleep_for_async (n->second_usec, NULL, on_second_sleep, n);
  while (!n->second_done)
    g_main_context_iteration (n->context, TRUE);
  n->first_done = TRUE;
}

/* @later: the second sleep starts inside the first callback; otherwise
 * both are due in the same dispatch of the timer source. */
static void
run_nested_sleeps (gboolean later)
{
  g_autoptr(GMainContext) context = g_main_context_new ();
  NestedSleeps n = { context, later ? 5 * 1000 : 0, FALSE, FALSE };

  g_main_context_push_thread_default (context);
  ws_sleep_for_async (5 * 1000, NULL, on_first_sleep, &n);
  if (!later)
    ws_sleep_for_async (5 * 1000, NULL, on_second_sleep, &n);
  /* Both due before the context is first iterated. */
  g_usleep (10 * 1000);
  ws_test_iterate_until (context, n.first_done);
  g_assert_true (n.second_done);
  g_main_context_pop_thread_default (context);
  /* What the context still holds (the GTasks' references) goes now. */
  while (g_main_context_iteration (context, FALSE))
    ;
}

static void
test_nested_loop_sleeps_same_batch (void)
{
  run_nested_sleeps (FALSE);
}

static void
test_nested_loop_sleep_later (void)
{
  run_nested_sleeps (TRUE);
}

/* ---- deadlines that never come ------------------------------------------- */

static void
on_forever (GObject      *source,
            GAsyncResult *result,
            gpointer      data)
{
  GError **error = data;

  g_assert_false (ws_sleep_for_finish (result, error));
}

static WsPoll
poll_forever_once (WsContext *cx,
                   gpointer   data)
{
  g_autoptr(WsSleep) sleep = ws_sleep_new (G_MAXINT64);

  return_boolean (cx, ws_sleep_poll (sleep, cx) == WS_POLL_PENDING);
  return WS_POLL_READY;
}

static void
test_sleep_forever (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(GMainContext) context = g_main_context_new ();
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  g_autoptr(WsSleep) sleep = ws_sleep_new (G_MAXINT64);
  g_autoptr(WsTask) task = NULL;
  g_autoptr(GError) error = NULL;
  GError *wait_error = NULL;

  g_assert_cmpint (ws_sleep_get_deadline (sleep), ==, G_MAXINT64);

  /* A poll of a sleep for ever is pending. */
  task = ws_runtime_spawn (rt, poll_forever_once, NULL, NULL);
  g_assert_true (ws_task_wait (task, NULL, &error));
  g_assert_no_error (error);
  g_assert_true (g_value_get_boolean (ws_task_get_value (task)));

  /* An async sleep for ever ends only by its cancel. */
  g_main_context_push_thread_default (context);
  ws_sleep_for_async (G_MAXINT64, cancellable, on_forever, &wait_error);
  while (g_main_context_iteration (context, FALSE))
    ;
  g_assert_null (wait_error);
  g_cancellable_cancel (cancellable);
  ws_test_iterate_until (context, wait_error != NULL);
  g_assert_error (wait_error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&wait_error);
  g_main_context_pop_thread_default (context);

  g_assert_true (ws_runtime_shutdown (rt, G_MAXINT64));
}

static gpointer
open_gate_later (gpointer data)
{
  g_usleep (20 * 1000);
  ws_test_gate_open (data);
  return NULL;
}

/* A shutdown that may wait for ever waits for the job. */
static void
test_shutdown_forever (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(WsTask) job = NULL;
  WsTestGate gate;
  GThread *opener;

  ws_test_gate_init (&gate);
  job = ws_runtime_spawn_blocking (rt, wait_at_gate, &gate, NULL);
  ws_test_gate_wait_for_waiters (&gate, 1);
  opener = g_thread_new ("opener", open_gate_later, &gate);
  g_assert_true (ws_runtime_shutdown (rt, G_MAXINT64));
  g_assert_true (ws_task_is_finished (job));
  g_thread_join (opener);
  ws_test_gate_clear (&gate);
}

/* ---- completions in slices ------------------------------------------------ */

/* Completions queued at once are delivered in slices of the frame budget
 * (ws-frame-slice-private.h): each callback here sleeps 2 ms, past the
 * 1 ms budget, so the dispatch returns after each one whatever the
 * machine's speed, and the sources queued after them (one at the
 * completions' priority, one at GTK's redraw priority) run before the
 * last one. Nothing is lost or reordered. Before the slices, the five ran
 * in one dispatch and both sources after them. */
#define N_SLICED 5

typedef struct
{
  guint order[N_SLICED];
  guint calls;
  guint other_runs;            /* of the two sources, when the last came */
  guint default_ran;
  guint redraw_ran;
} Sliced;

typedef struct
{
  Sliced *s;
  guint   index;
} SlicedCall;

static void
on_sliced (GObject      *source,
           GAsyncResult *result,
           gpointer      data)
{
  SlicedCall *c = data;
  Sliced *s = c->s;

  g_assert_true (ws_task_wait_finish (WS_TASK (source), result, NULL));
  s->order[s->calls++] = c->index;
  if (s->calls == N_SLICED)
    s->other_runs = s->default_ran + s->redraw_ran;
  g_usleep (2 * WS_FRAME_SLICE_USEC);
}

static gboolean
count_once (gpointer data)
{
  (*(guint *) data)++;
  return G_SOURCE_REMOVE;
}

static void
add_idle (GMainContext *context,
          gint          priority,
          guint        *counter)
{
  GSource *idle = g_idle_source_new ();

  g_source_set_priority (idle, priority);
  g_source_set_callback (idle, count_once, counter, NULL);
  g_source_attach (idle, context);
  g_source_unref (idle);
}

static void
test_completions_sliced (void)
{
  WsTestOnContext f;
  WsTask *tasks[N_SLICED];
  SlicedCall calls[N_SLICED];
  Sliced s = { { 0, }, 0, 0, 0, 0 };

  ws_test_on_context_init (&f, 1);
  for (guint i = 0; i < N_SLICED; i++)
    {
      tasks[i] = ws_runtime_spawn (f.rt, ws_test_ready, NULL, NULL);
      g_assert_true (ws_task_wait (tasks[i], NULL, NULL));
    }
  /* Ended tasks: each wait is queued at once, all in one batch. */
  for (guint i = 0; i < N_SLICED; i++)
    {
      calls[i] = (SlicedCall) { &s, i };
      ws_task_wait_async (tasks[i], NULL, on_sliced, &calls[i]);
    }
  add_idle (f.ctx, G_PRIORITY_DEFAULT, &s.default_ran);
  add_idle (f.ctx, G_PRIORITY_HIGH_IDLE + 20, &s.redraw_ran);

  ws_test_iterate_until (f.ctx, s.calls == N_SLICED);

  for (guint i = 0; i < N_SLICED; i++)
    g_assert_cmpuint (s.order[i], ==, i);
  /* Both had run when the last completion came. */
  g_assert_cmpuint (s.other_runs, ==, 2);

  for (guint i = 0; i < N_SLICED; i++)
    g_object_unref (tasks[i]);
  ws_test_on_context_clear (&f);
}

/* ---- ws_task_wait on a context nobody owns ------------------------------- */

typedef struct
{
  WsSleep *sleep;
} LocalSleep;

static WsPoll
local_sleep (WsContext *cx,
             gpointer   data)
{
  LocalSleep *s = data;

  if (s->sleep == NULL)
    s->sleep = ws_sleep_new (5 * 1000);
  if (ws_sleep_poll (s->sleep, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  return_boolean (cx, TRUE);
  return WS_POLL_READY;
}

/* main () before the main loop runs: no thread owns the context, so the
 * waiting thread iterates it (and with it the task and its sleep). */
static void
test_wait_local_unowned_context (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(GMainContext) context = g_main_context_new ();
  g_autoptr(GError) error = NULL;
  g_autoptr(WsTask) task = NULL;
  LocalSleep s = { NULL };

  task = ws_runtime_spawn_local (rt, context, local_sleep, &s, NULL);
  g_assert_true (ws_task_wait (task, NULL, &error));
  g_assert_no_error (error);
  g_assert_true (g_value_get_boolean (ws_task_get_value (task)));
  /* The context is free again afterwards. */
  g_assert_true (g_main_context_acquire (context));
  g_main_context_release (context);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  ws_sleep_unref (s.sleep);
}

static gpointer
cancel_later (gpointer data)
{
  g_usleep (10 * 1000);
  g_cancellable_cancel (data);
  return NULL;
}

/* The wait, not the task, is cancelled, from another thread, while the
 * waiting thread sleeps in the context's poll. */
static void
test_wait_local_unowned_context_cancelled (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(GMainContext) context = g_main_context_new ();
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  g_autoptr(GError) error = NULL;
  g_autoptr(WsTask) task = NULL;
  GThread *canceller;

  task = ws_runtime_spawn_local (rt, context, ws_test_pending_forever, NULL, NULL);
  canceller = g_thread_new ("canceller", cancel_later, cancellable);
  g_assert_false (ws_task_wait (task, cancellable, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_false (ws_task_is_finished (task));
  g_thread_join (canceller);

  ws_task_cancel (task);
  ws_test_iterate_until (context, ws_task_is_finished (task));
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ---- a local task's cancellable ----------------------------------------- */

typedef struct
{
  GThread *handler_thread;    /* atomic */
  gboolean connected;
} LocalCancel;

static void
on_local_cancelled (GCancellable *cancellable,
                    gpointer      data)
{
  LocalCancel *c = data;

  g_atomic_pointer_set (&c->handler_thread, g_thread_self ());
}

static WsPoll
connect_and_wait (WsContext *cx,
                  gpointer   data)
{
  LocalCancel *c = data;

  if (!c->connected)
    {
      g_signal_connect (ws_context_get_cancellable (cx), "cancelled",
                        G_CALLBACK (on_local_cancelled), c);
      c->connected = TRUE;
    }
  return WS_POLL_PENDING;
}

static gpointer
cancel_task_in_thread (gpointer data)
{
  ws_task_cancel (data);
  return NULL;
}

/* Cancelled from another thread, a local task's cancellable fires on the
 * thread of its main loop. */
static void
test_local_cancellable_on_owner (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(GMainContext) context = g_main_context_new ();
  g_autoptr(WsTask) task = NULL;
  LocalCancel c = { NULL, FALSE };

  g_main_context_push_thread_default (context);
  task = ws_runtime_spawn_local (rt, NULL, connect_and_wait, &c, NULL);
  ws_test_iterate_until (context, c.connected);
  g_thread_join (g_thread_new ("canceller", cancel_task_in_thread, task));
  ws_test_iterate_until (context, ws_task_is_finished (task));
  g_assert_true (g_atomic_pointer_get (&c.handler_thread) == g_thread_self ());
  g_main_context_pop_thread_default (context);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ---- GIO calls that are in flight when their thread or runtime goes --- */

/* A GIO call that ends when it is cancelled, or after @data usec. */
static void
slow_call_thread (GTask        *gtask,
                  gpointer      source,
                  gpointer      data,
                  GCancellable *cancellable)
{
  gint64 until = g_get_monotonic_time () + GPOINTER_TO_SIZE (data);

  while (!g_cancellable_is_cancelled (cancellable) && g_get_monotonic_time () < until)
    g_usleep (1000);
  g_task_return_boolean (gtask, TRUE);
}

static void
start_slow_call (WsAsyncOp *op,
                 WsContext *cx,
                 gint64     usec)
{
  GTask *gtask = g_task_new (NULL, ws_async_op_get_cancellable (op), ws_async_op_callback,
                             ws_async_op_start (op, cx));

  g_task_set_task_data (gtask, GSIZE_TO_POINTER (usec), NULL);
  g_task_run_in_thread (gtask, slow_call_thread);
  g_object_unref (gtask);
}

typedef struct
{
  WsAsyncOp *op;
  gboolean   blocked;
  gint64     usec;
  gint       started;          /* atomic: the call is in flight */
} CallState;

static void
call_state_free (gpointer data)
{
  CallState *s = data;

  g_clear_pointer (&s->op, ws_async_op_unref);
  g_free (s);
}

static WsPoll
block_then_call (WsContext *cx,
                 gpointer   data)
{
  CallState *s = data;

  if (s->op == NULL)
    {
      g_autoptr(GError) error = NULL;

      if (s->blocked)
        {
          g_assert_true (ws_block_in_place (nothing, NULL, &error));
          g_assert_no_error (error);
        }
      s->op = ws_async_op_new ();
      start_slow_call (s->op, cx, s->usec);
      g_atomic_int_set (&s->started, TRUE);
    }
  if (ws_async_op_poll (s->op, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  return_boolean (cx, g_task_propagate_boolean (G_TASK (ws_async_op_get_result (s->op)), NULL));
  return WS_POLL_READY;
}

/* The thread that left ws_block_in_place () is not adopted (the pool is
 * full): the GIO call made in the rest of its poll completes on its
 * context all the same, which it iterates before it goes. */
static void
test_gio_after_block_in_place_not_adopted (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(WsTask) task = NULL;
  CallState *s = g_new0 (CallState, 1);
  WsTestGate gate;
  WsTask *job;
  WsRuntime *rt = full_blocking_pool_runtime_new (&gate, &job);

  s->blocked = TRUE;
  s->usec = 20 * 1000;
  task = ws_runtime_spawn (rt, block_then_call, s, call_state_free);
  g_assert_true (ws_task_wait (task, NULL, &error));
  g_assert_no_error (error);
  g_assert_true (g_value_get_boolean (ws_task_get_value (task)));

  full_blocking_pool_runtime_free (rt, &gate, job);
}

/* A GIO call in flight at shutdown: the task is cancelled, which cancels
 * the call, and shutdown iterates the worker's context until GIO has
 * delivered it, so nothing of the runtime is left behind (the case's
 * leak check counts the task). */
static void
test_gio_in_flight_at_shutdown (void)
{
  WsRuntime *rt = ws_runtime_new (1);
  g_autoptr(WsTask) task = NULL;
  CallState *s = g_new0 (CallState, 1);

  s->usec = (gint64) G_USEC_PER_SEC * 3600;
  task = ws_runtime_spawn (rt, block_then_call, s, call_state_free);
  ws_test_wait_until (g_atomic_int_get (&s->started));
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_assert_true (ws_task_is_finished (task));
  g_object_unref (rt);
}

WS_TEST_MAIN (
  { "/host-context/local-sleep-default-runtime", test_local_sleep_default_runtime },
  { "/host-context/local-sleep-worker-busy", test_local_sleep_worker_busy },
  { "/host-context/sleep-after-block-in-place-not-adopted",
    test_sleep_after_block_in_place_not_adopted },
  { "/host-context/nested-loop-same-batch", test_nested_loop_same_batch },
  { "/host-context/nested-loop-later-completion", test_nested_loop_later_completion },
  { "/host-context/nested-loop-sleeps-same-batch", test_nested_loop_sleeps_same_batch },
  { "/host-context/nested-loop-sleep-later", test_nested_loop_sleep_later },
  { "/host-context/sleep-forever", test_sleep_forever },
  { "/host-context/shutdown-forever", test_shutdown_forever },
  { "/host-context/wait-local-unowned-context", test_wait_local_unowned_context },
  { "/host-context/wait-local-unowned-context-cancelled",
    test_wait_local_unowned_context_cancelled },
  { "/host-context/local-cancellable-on-owner", test_local_cancellable_on_owner },
  { "/host-context/gio-after-block-in-place-not-adopted",
    test_gio_after_block_in_place_not_adopted },
  { "/host-context/gio-in-flight-at-shutdown", test_gio_in_flight_at_shutdown },
  { "/host-context/completions-sliced", test_completions_sliced },
)
