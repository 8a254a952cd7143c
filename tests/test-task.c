/* test-task.c: the task state machine, through the public API
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The rules of doc/architecture.md, "Rules: tasks": one poller at a time, exactly one re-poll for a
 * wake during a poll, no polls after the end, no spurious polls, one
 * destroy notify, one outcome. Also the task's name, and the WS_DEBUG
 * diagnostics (in subprocesses, which read the environment afresh).
 */

#include "config.h"

#include "ws-test-fixture.h"
#include "ws-raw-task-private.h"

typedef struct
{
  _Atomic gint  polls;
  _Atomic gint  destroyed;
  _Atomic gint  in_poll;
  _Atomic gint  overlap;
  gint          wakes_in_first_poll;
  WsWaker      *_Atomic waker;       /* kept by some tests */
  gboolean      destroyed_before_end;
} Probe;

static void
probe_destroy (gpointer data)
{
  Probe *p = data;

  atomic_fetch_add (&p->destroyed, 1);
}

static void
assert_no_live_tasks (void)
{
  ws_test_assert_n_live (0);
}

/* Wakes itself several times during its first poll, then returns PENDING;
 * READY on the second poll. */
static WsPoll
wake_during_poll_func (WsContext *cx,
                       gpointer   data)
{
  Probe *p = data;
  gint n = atomic_fetch_add (&p->polls, 1);

  if (atomic_fetch_add (&p->in_poll, 1) != 0)
    atomic_fetch_add (&p->overlap, 1);

  if (n == 0)
    {
      g_autoptr(WsWaker) waker = ws_context_get_waker (cx);

      for (gint i = 0; i < p->wakes_in_first_poll; i++)
        ws_waker_wake (waker);
      /* Give a second worker every chance to poll concurrently (it must
       * not). */
      g_usleep (2000);
      atomic_fetch_sub (&p->in_poll, 1);
      return WS_POLL_PENDING;
    }

  atomic_fetch_sub (&p->in_poll, 1);
  return WS_POLL_READY;
}

static void
test_wake_during_poll (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  Probe p = { .wakes_in_first_poll = 5 };
  g_autoptr(WsTask) task = ws_runtime_spawn (rt, wake_during_poll_func, &p, probe_destroy);
  g_autoptr(GError) error = NULL;

  g_assert_true (ws_task_wait (task, NULL, &error));
  g_assert_no_error (error);
  g_assert_cmpint (atomic_load (&p.polls), ==, 2);
  g_assert_cmpint (atomic_load (&p.overlap), ==, 0);
  g_assert_cmpint (atomic_load (&p.destroyed), ==, 1);

  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_clear_object (&task);
  g_clear_object (&rt);
  assert_no_live_tasks ();
}

static WsPoll
keep_waker_then_ready (WsContext *cx,
                       gpointer   data)
{
  Probe *p = data;

  atomic_fetch_add (&p->polls, 1);
  atomic_store (&p->waker, ws_context_get_waker (cx));
  return WS_POLL_READY;
}

static void
test_wake_after_completion (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  Probe p = { 0, };
  g_autoptr(WsTask) task = ws_runtime_spawn (rt, keep_waker_then_ready, &p, probe_destroy);
  WsWaker *waker;

  g_assert_true (ws_task_wait (task, NULL, NULL));
  waker = atomic_load (&p.waker);
  g_assert_nonnull (waker);

  for (guint i = 0; i < 100; i++)
    ws_waker_wake (waker);

  /* Let the runtime go idle: if a wake had queued the task, a poll would
   * happen before shutdown returns. */
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_assert_cmpint (atomic_load (&p.polls), ==, 1);
  g_assert_cmpint (atomic_load (&p.destroyed), ==, 1);

  /* The waker kept the task alive; the last unref frees it. */
  ws_test_assert_n_live (1);
  ws_waker_unref (waker);
  g_clear_object (&task);
  g_clear_object (&rt);
  assert_no_live_tasks ();
}

/* PENDING for ever, and drops its waker: only cancel ends it. */
static WsPoll
pending_forever (WsContext *cx,
                 gpointer   data)
{
  Probe *p = data;

  atomic_fetch_add (&p->polls, 1);
  return WS_POLL_PENDING;
}

static void
test_cancel_pending (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  Probe p = { 0, };
  g_autoptr(WsTask) task = ws_runtime_spawn (rt, pending_forever, &p, probe_destroy);
  g_autoptr(GError) error = NULL;

  ws_test_wait_until (atomic_load (&p.polls) > 0);

  /* No spurious polls: nobody woke it. */
  g_usleep (20000);
  g_assert_cmpint (atomic_load (&p.polls), ==, 1);
  g_assert_false (ws_task_is_finished (task));

  ws_task_cancel (task);
  g_assert_false (ws_task_wait (task, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpint (atomic_load (&p.destroyed), ==, 1);
  g_assert_cmpint (atomic_load (&p.polls), ==, 1);

  /* Cancelling again, or waking, does nothing. */
  ws_task_cancel (task);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_assert_cmpint (atomic_load (&p.destroyed), ==, 1);

  g_clear_object (&task);
  g_clear_object (&rt);
  assert_no_live_tasks ();
}

static WsPoll
ready_with_int (WsContext *cx,
                gpointer   data)
{
  Probe *p = data;

  atomic_fetch_add (&p->polls, 1);
  return ws_test_return_int (cx, 42);
}

static void
test_cancel_races_completion (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  guint n_completed = 0;
  guint n_cancelled = 0;
  GRand *rand = g_rand_new_with_seed (1234);

  /* 10,000 rounds at least, and on until both outcomes were seen: how
   * often each wins depends on the machine (under valgrind, which runs
   * one thread at a time, the cancel may win every round), so past
   * 10,000 a round missing completions lets the worker run first, and
   * one missing cancels cancels at once. The watchdog bounds it. */
  for (guint i = 0; i < 10000 || n_completed == 0 || n_cancelled == 0; i++)
    {
      Probe p = { 0, };
      g_autoptr(WsTask) task = ws_runtime_spawn (rt, ready_with_int, &p, probe_destroy);
      g_autoptr(GError) error = NULL;
      guint spin = g_rand_int_range (rand, 0, 4000);

      if (i >= 10000 && n_cancelled == 0)
        spin = 0;
      for (volatile guint j = 0; j < spin; j++)
        ;
      if (i >= 10000 && n_completed == 0)
        g_usleep (1000);
      ws_task_cancel (task);

      if (ws_task_wait (task, NULL, &error))
        {
          const GValue *v = ws_task_get_value (task);

          g_assert_nonnull (v);
          g_assert_cmpint (g_value_get_int (v), ==, 42);
          g_assert_cmpint (atomic_load (&p.polls), ==, 1);
          n_completed++;
        }
      else
        {
          g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
          g_assert_null (ws_task_get_value (task));
          g_assert_cmpint (atomic_load (&p.polls), ==, 0);
          n_cancelled++;
        }
      g_assert_cmpint (atomic_load (&p.destroyed), ==, 1);
    }

  g_test_message ("completed %u, cancelled %u", n_completed, n_cancelled);
  g_assert_cmpuint (n_completed + n_cancelled, >=, 10000);
  g_assert_cmpuint (n_completed, >, 0);
  g_assert_cmpuint (n_cancelled, >, 0);

  g_rand_free (rand);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_clear_object (&rt);
  assert_no_live_tasks ();
}

static WsPoll
fail_func (WsContext *cx,
           gpointer   data)
{
  ws_context_return_error (cx, g_error_new_literal (G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                                                    "no such thing"));
  return WS_POLL_READY;
}

static void
test_error_result (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(WsTask) bad = ws_runtime_spawn (rt, fail_func, NULL, NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(GError) error2 = NULL;
  Probe p = { 0, };
  g_autoptr(WsTask) good = NULL;

  g_assert_false (ws_task_wait (bad, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
  g_assert_null (ws_task_propagate_pointer (bad, &error2));
  g_assert_error (error2, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);

  /* The runtime goes on. */
  good = ws_runtime_spawn (rt, ready_with_int, &p, NULL);
  g_assert_true (ws_task_wait (good, NULL, NULL));
  g_assert_cmpint (g_value_get_int (ws_task_get_value (good)), ==, 42);

  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static WsPoll
return_string (WsContext *cx,
               gpointer   data)
{
  ws_context_return_pointer (cx, g_strdup ("hello"), g_free);
  return WS_POLL_READY;
}

static void
test_pointer_result (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(WsTask) task = ws_runtime_spawn (rt, return_string, NULL, NULL);
  g_autofree char *s = NULL;

  g_assert_true (ws_task_wait (task, NULL, NULL));
  s = ws_task_propagate_pointer (task, NULL);
  g_assert_cmpstr (s, ==, "hello");
  /* Handed over once. */
  g_assert_null (ws_task_propagate_pointer (task, NULL));
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static WsPoll
return_uint64 (WsContext *cx,
               gpointer   data)
{
  ws_context_return_uint64 (cx, 7);
  return WS_POLL_READY;
}

/* The two accessors of the result keep one rule: asking before the end,
 * or for the kind of result the task did not return, is a programmer
 * error (a critical naming the function, and NULL, no GError); a failed
 * or cancelled task gives NULL (with its error from propagate_pointer);
 * a task that returned nothing gives NULL quietly. */
static void
test_result_accessors (void)
{
  Probe p = { 0, };
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(WsTask) pending = ws_runtime_spawn (rt, ws_test_pending_forever, NULL, NULL);
  g_autoptr(WsTask) value = ws_runtime_spawn (rt, ready_with_int, &p, NULL);
  g_autoptr(WsTask) integer = ws_runtime_spawn (rt, return_uint64, NULL, NULL);
  g_autoptr(WsTask) pointer = ws_runtime_spawn (rt, return_string, NULL, NULL);
  g_autoptr(WsTask) nothing = ws_runtime_spawn (rt, ws_test_ready, NULL, NULL);
  g_autoptr(WsTask) failed = ws_runtime_spawn (rt, fail_func, NULL, NULL);
  g_autoptr(GError) error = NULL;
  g_autofree char *s = NULL;

  /* Before the end. */
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*ws_task_get_value*not ended*");
  g_assert_null (ws_task_get_value (pending));
  g_test_assert_expected_messages ();
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*ws_task_propagate_pointer*not ended*");
  g_assert_null (ws_task_propagate_pointer (pending, &error));
  g_test_assert_expected_messages ();
  g_assert_no_error (error);

  g_assert_true (ws_task_wait (value, NULL, NULL));
  g_assert_true (ws_task_wait (integer, NULL, NULL));
  g_assert_true (ws_task_wait (pointer, NULL, NULL));
  g_assert_true (ws_task_wait (nothing, NULL, NULL));
  g_assert_false (ws_task_wait (failed, NULL, NULL));

  /* The wrong kind: a value is not a pointer, a pointer is not a value,
   * and the result is still there for the right accessor. */
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL,
                         "*ws_task_propagate_pointer*returned a value*ws_task_get_value*");
  g_assert_null (ws_task_propagate_pointer (value, &error));
  g_test_assert_expected_messages ();
  g_assert_no_error (error);
  g_assert_cmpint (g_value_get_int (ws_task_get_value (value)), ==, 42);

  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL,
                         "*ws_task_propagate_pointer*returned a value*ws_task_get_value*");
  g_assert_null (ws_task_propagate_pointer (integer, &error));
  g_test_assert_expected_messages ();
  g_assert_no_error (error);
  g_assert_cmpuint (g_value_get_uint64 (ws_task_get_value (integer)), ==, 7);

  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL,
                         "*ws_task_get_value*returned a pointer*ws_task_propagate_pointer*");
  g_assert_null (ws_task_get_value (pointer));
  g_test_assert_expected_messages ();
  s = ws_task_propagate_pointer (pointer, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (s, ==, "hello");

  /* No result, or a failure: NULL, and no critical. */
  g_assert_null (ws_task_get_value (nothing));
  g_assert_null (ws_task_propagate_pointer (nothing, &error));
  g_assert_no_error (error);
  g_assert_null (ws_task_get_value (failed));
  g_assert_null (ws_task_propagate_pointer (failed, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);

  ws_task_cancel (pending);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* The destroy notify runs before any waiter learns the task ended. */
typedef struct
{
  _Atomic gboolean destroyed;
} Order;

static void
order_destroy (gpointer data)
{
  g_usleep (5000);           /* widen the window a waiter could slip into */
  atomic_store (&((Order *) data)->destroyed, TRUE);
}

static void
test_destroy_before_waiters (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);

  for (guint i = 0; i < 50; i++)
    {
      Order o = { FALSE };
      g_autoptr(WsTask) task = ws_runtime_spawn (rt, ws_test_ready, &o, order_destroy);

      g_assert_true (ws_task_wait (task, NULL, NULL));
      g_assert_true (atomic_load (&o.destroyed));
    }
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ws_task_wait on a worker fails and says what to do instead. */
typedef struct
{
  WsTask   *other;
  gboolean  failed_right;
} WaitOnWorker;

static WsPoll
wait_on_worker_func (WsContext *cx,
                     gpointer   data)
{
  WaitOnWorker *w = data;
  g_autoptr(GError) error = NULL;

  if (!ws_task_wait (w->other, NULL, &error))
    w->failed_right = g_error_matches (error, WS_ERROR, WS_ERROR_WOULD_BLOCK)
                      && strstr (error->message, "ws_task_poll") != NULL
                      && strstr (error->message, "ws_block_in_place") != NULL;
  return WS_POLL_READY;
}

static void
test_wait_on_worker_fails (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  Probe p = { 0, };
  WaitOnWorker w = { 0, };
  g_autoptr(WsTask) task = NULL;

  w.other = ws_runtime_spawn (rt, pending_forever, &p, NULL);
  task = ws_runtime_spawn (rt, wait_on_worker_func, &w, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_true (w.failed_right);

  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_clear_object (&w.other);
}

static void
test_wait_cancellable (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  Probe p = { 0, };
  g_autoptr(WsTask) task = ws_runtime_spawn (rt, pending_forever, &p, probe_destroy);
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  g_autoptr(GError) error = NULL;

  g_cancellable_cancel (cancellable);
  g_assert_false (ws_task_wait (task, cancellable, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  /* Cancelling the wait does not cancel the task. */
  g_assert_false (ws_task_is_finished (task));
  g_assert_cmpint (atomic_load (&p.destroyed), ==, 0);

  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_assert_cmpint (atomic_load (&p.destroyed), ==, 1);
  g_assert_true (ws_task_is_finished (task));
}

/* Awaiting another task from a task. */
typedef struct
{
  WsTask *child;
  gint    polls;
  gint    value;
} Awaiter;

static WsPoll
slow_child (WsContext *cx,
            gpointer   data)
{
  g_usleep (10000);
  return ready_with_int (cx, data);
}

static WsPoll
awaiter_func (WsContext *cx,
              gpointer   data)
{
  Awaiter *a = data;

  a->polls++;
  if (ws_task_poll (a->child, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  a->value = g_value_get_int (ws_task_get_value (a->child));
  return WS_POLL_READY;
}

static void
test_await_task (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  Probe p = { 0, };
  Awaiter a = { 0, };
  g_autoptr(WsTask) task = NULL;

  a.child = ws_runtime_spawn (rt, slow_child, &p, NULL);
  task = ws_runtime_spawn (rt, awaiter_func, &a, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_cmpint (a.value, ==, 42);
  /* Polled once while the child ran, once after it woke us: no more. */
  g_assert_cmpint (a.polls, <=, 2);

  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_clear_object (&a.child);
}

/* Dropping the last reference to a WsTask detaches the task. */
static void
test_drop_handle_detaches (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  Probe p = { 0, };
  WsTask *task = ws_runtime_spawn (rt, slow_child, &p, probe_destroy);

  g_object_unref (task);
  ws_test_wait_until (atomic_load (&p.destroyed) > 0);
  g_assert_cmpint (atomic_load (&p.polls), ==, 1);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_clear_object (&rt);
  assert_no_live_tasks ();
}

/* The task's cancellable: the same object on every poll, cancelled once
 * (its handler runs once) when the pending task is cancelled, before the
 * destroy notify; and already cancelled when first asked for by a poll
 * that runs after a cancel. */
typedef struct
{
  GCancellable     *cancellable;     /* borrowed from the task */
  _Atomic guint     polls;
  _Atomic guint     handler_runs;
  _Atomic guint     handler_runs_at_destroy;
} CancelProbe;

static void
count_cancel (GCancellable *cancellable,
              gpointer      data)
{
  CancelProbe *p = data;

  atomic_fetch_add (&p->handler_runs, 1);
}

static void
cancel_probe_destroy (gpointer data)
{
  CancelProbe *p = data;

  atomic_store (&p->handler_runs_at_destroy, atomic_load (&p->handler_runs));
}

static WsPoll
pending_with_cancellable (WsContext *cx,
                          gpointer   data)
{
  CancelProbe *p = data;
  GCancellable *c = ws_context_get_cancellable (cx);

  if (atomic_fetch_add (&p->polls, 1) == 0)
    {
      p->cancellable = c;
      g_cancellable_connect (c, G_CALLBACK (count_cancel), p, NULL);
    }
  g_assert_true (c == p->cancellable);
  return WS_POLL_PENDING;
}

static void
test_cancellable_of_pending_task (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  CancelProbe p = { NULL, };
  g_autoptr(WsTask) task = ws_runtime_spawn (rt, pending_with_cancellable, &p,
                                             cancel_probe_destroy);

  ws_test_wait_until (atomic_load (&p.polls) == 1);
  g_assert_cmpuint (atomic_load (&p.handler_runs), ==, 0);
  ws_task_cancel (task);
  g_assert_false (ws_task_wait (task, NULL, NULL));
  g_assert_cmpuint (atomic_load (&p.handler_runs), ==, 1);
  g_assert_cmpuint (atomic_load (&p.handler_runs_at_destroy), ==, 1);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

typedef struct
{
  WsTask *_Atomic   self;
  _Atomic gboolean  cancelled_when_asked;
} SelfCancel;

/* Cancels its own task, then asks for the cancellable in the same poll. */
static WsPoll
cancel_self_then_ask (WsContext *cx,
                      gpointer   data)
{
  SelfCancel *s = data;

  ws_test_wait_until (atomic_load (&s->self) != NULL);
  ws_task_cancel (atomic_load (&s->self));
  atomic_store (&s->cancelled_when_asked,
                g_cancellable_is_cancelled (ws_context_get_cancellable (cx)));
  return WS_POLL_PENDING;
}

static void
test_cancellable_after_cancel (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  SelfCancel s = { NULL, };
  g_autoptr(WsTask) task = ws_runtime_spawn (rt, cancel_self_then_ask, &s, NULL);

  atomic_store (&s.self, task);
  g_assert_false (ws_task_wait (task, NULL, NULL));
  g_assert_true (atomic_load (&s.cancelled_when_asked));
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* The cancellable's handlers that a cancel runs on its thread have all
 * returned before the destroy notify frees what they use, though the
 * task ends on another thread meanwhile; and a handler that ends the task
 * on its own thread is not waited for. */
typedef struct
{
  WsRuntime        *rt;
  GCallback         handler;         /* connected at the first poll */
  gboolean          hold;            /* that poll returns once it is in */
  _Atomic gboolean  connected;
  _Atomic gboolean  handler_in;
  _Atomic gboolean  destroyed;
  _Atomic gboolean  destroyed_while_in;
  _Atomic guint     handler_runs;
} SettleProbe;

static void
settle_probe_destroy (gpointer data)
{
  SettleProbe *p = data;

  atomic_store (&p->destroyed, TRUE);
}

static WsPoll
pending_with_handler (WsContext *cx,
                      gpointer   data)
{
  SettleProbe *p = data;

  if (!atomic_load (&p->connected))
    {
      g_cancellable_connect (ws_context_get_cancellable (cx), p->handler, p, NULL);
      atomic_store (&p->connected, TRUE);
      if (p->hold)
        ws_test_wait_until (atomic_load (&p->handler_in));
    }
  return WS_POLL_PENDING;
}

/* Cancels @task (polled by pending_with_handler) @delay_usec after its
 * handler was connected, and checks its end. */
static void
cancel_and_check (WsTask      *task,
                  SettleProbe *p,
                  gulong       delay_usec)
{
  ws_test_wait_until (atomic_load (&p->connected));
  g_usleep (delay_usec);
  ws_task_cancel (task);
  g_assert_false (ws_task_wait (task, NULL, NULL));
  g_assert_cmpuint (atomic_load (&p->handler_runs), ==, 1);
  g_assert_true (atomic_load (&p->destroyed));
  g_assert_false (atomic_load (&p->destroyed_while_in));
  g_assert_true (ws_runtime_shutdown (p->rt, -1));
}

static void
linger_in_handler (GCancellable *cancellable,
                   gpointer      data)
{
  SettleProbe *p = data;

  atomic_fetch_add (&p->handler_runs, 1);
  atomic_store (&p->handler_in, TRUE);
  /* Long enough, on a machine that is not overloaded, for the worker to
   * end the task (its poll returns as soon as the handler is in): a
   * destroy notify that did not wait would run now. */
  if (ws_test_wait_until_for (atomic_load (&p->destroyed), 200 * 1000))
    atomic_store (&p->destroyed_while_in, TRUE);
}

static void
test_cancellable_handlers_end_before_destroy (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  SettleProbe p = { rt, G_CALLBACK (linger_in_handler), TRUE, };
  g_autoptr(WsTask) task = ws_runtime_spawn (rt, pending_with_handler, &p,
                                             settle_probe_destroy);

  cancel_and_check (task, &p, 0);
}

/* A shutdown from the handler takes RUNNING from the blocking job it
 * cancels (NOTIFIED by the cancel, idle since its poll returned) and
 * ends it right there, inside the handler. */
static void
shut_down_in_handler (GCancellable *cancellable,
                      gpointer      data)
{
  SettleProbe *p = data;

  atomic_fetch_add (&p->handler_runs, 1);
  ws_runtime_shutdown (p->rt, 0);
}

static void
test_cancellable_handler_shuts_down (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  SettleProbe p = { rt, G_CALLBACK (shut_down_in_handler), FALSE, };
  g_autoptr(WsTask) task = ws_runtime_spawn_blocking (rt, pending_with_handler, &p,
                                                      settle_probe_destroy);

  /* Most often the job's poll has returned 10 ms after it connected the
   * handler, and the shutdown ends it in the handler; otherwise its
   * thread ends it after the handler. Neither may hang. */
  cancel_and_check (task, &p, 10 * 1000);
}

/* ws_task_wait_timeout_async: in time, the task's outcome; too late,
 * G_IO_ERROR_TIMED_OUT and the task cancelled (the loser stops); the
 * caller's cancel, G_IO_ERROR_CANCELLED and the task left running. */
typedef struct
{
  GError   *error;
  gboolean  ok;
  gboolean  done;
} TimeoutResult;

static void
on_wait_timeout (GObject      *source,
                 GAsyncResult *result,
                 gpointer      data)
{
  TimeoutResult *r = data;

  g_assert_false (r->done);
  r->ok = ws_task_wait_timeout_finish (WS_TASK (source), result, &r->error);
  r->done = TRUE;
}

static WsPoll
ready_with_seven (WsContext *cx,
                  gpointer   data)
{
  return ws_test_return_int (cx, 7);
}

static void
test_wait_timeout (void)
{
  WsTestOnContext f;
  g_autoptr(WsTask) quick = NULL;
  g_autoptr(WsTask) stuck = NULL;
  g_autoptr(WsTask) cancelled = NULL;
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  g_autoptr(GError) error = NULL;
  TimeoutResult a = { NULL }, b = { NULL }, c = { NULL };

  ws_test_on_context_init (&f, 1);

  /* In time: a generous timeout, which must not be what ends the wait. */
  quick = ws_runtime_spawn (f.rt, ready_with_seven, NULL, NULL);
  ws_task_wait_timeout_async (quick, G_MAXINT64, NULL, on_wait_timeout, &a);
  ws_test_iterate_until (f.ctx, a.done);
  g_assert_no_error (a.error);
  g_assert_true (a.ok);
  g_assert_cmpint (g_value_get_int (ws_task_get_value (quick)), ==, 7);

  /* Too late: timed out, and the task is cancelled. */
  stuck = ws_runtime_spawn (f.rt, ws_test_pending_forever, NULL, NULL);
  ws_task_wait_timeout_async (stuck, 10 * 1000, NULL, on_wait_timeout, &b);
  ws_test_iterate_until (f.ctx, b.done);
  g_assert_error (b.error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT);
  g_assert_false (b.ok);
  /* It ends on its worker; nothing of it comes to this context. */
  ws_test_wait_until (ws_task_is_finished (stuck));
  g_assert_false (ws_task_wait (stuck, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);

  /* The caller's cancel stops the wait, not the task. */
  cancelled = ws_runtime_spawn (f.rt, ws_test_pending_forever, NULL, NULL);
  ws_task_wait_timeout_async (cancelled, G_MAXINT64, cancellable, on_wait_timeout, &c);
  g_cancellable_cancel (cancellable);
  ws_test_iterate_until (f.ctx, c.done);
  g_assert_error (c.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_false (ws_task_is_finished (cancelled));
  ws_task_cancel (cancelled);

  g_clear_error (&b.error);
  g_clear_error (&c.error);
  ws_test_on_context_clear (&f);
}

/* ws_task_wait_timeout_async near its deadline: G_IO_ERROR_TIMED_OUT
 * only for a task that ended cancelled, never for one that completed with
 * its value. Blocking jobs of 1-4 ms against a 2 ms timeout: the cancel
 * often comes while the job runs, which a cancel never interrupts, and
 * the job then completes with its value; poll tasks waiting for a sleep of
 * 1-4 ms, whose wake races the cancel. */
static WsPoll
sleep_then_seven (WsContext *cx,
                  gpointer   data)
{
  g_usleep (GPOINTER_TO_UINT (data));
  return ws_test_return_int (cx, 7);
}

/* A poll task that waits for its sleep, then returns 7: cancelled while it
 * waits, or racing its sleep's wake. */
static WsPoll
sleep_poll_then_seven (WsContext *cx,
                       gpointer   data)
{
  if (ws_sleep_poll (data, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  return ws_test_return_int (cx, 7);
}

static void
set_flag_on_finalize (gpointer  data,
                      GObject  *object)
{
  atomic_store ((_Atomic gboolean *) data, TRUE);
}

static void
test_wait_timeout_race (void)
{
  WsTestOnContext f;
  guint n_timed_out = 0, n_in_time = 0;
  const guint rounds = 300;
  _Atomic gboolean finalized;

  ws_test_on_context_init (&f, 2);
  for (guint i = 0; i < rounds; i++)
    {
      g_autoptr(WsTask) task = NULL;
      g_autoptr(GError) error = NULL;
      TimeoutResult r = { NULL };

      if (i % 2 == 0)
        task = ws_runtime_spawn_blocking (f.rt, sleep_then_seven,
                                          GUINT_TO_POINTER (1000 + (i % 8) * 500), NULL);
      else
        task = ws_runtime_spawn (f.rt, sleep_poll_then_seven,
                                 ws_sleep_new (1000 + (i % 8) * 500),
                                 (GDestroyNotify) ws_sleep_unref);
      ws_task_wait_timeout_async (task, 2000, NULL, on_wait_timeout, &r);
      ws_test_iterate_until (f.ctx, r.done);
      /* Ended, whatever the wait said: the wait reports the end. */
      g_assert_true (ws_task_is_finished (task));
      if (r.ok)
        {
          n_in_time++;
          g_assert_no_error (r.error);
          g_assert_cmpint (g_value_get_int (ws_task_get_value (task)), ==, 7);
        }
      else
        {
          n_timed_out++;
          g_assert_error (r.error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT);
          /* TIMED_OUT: the task was cancelled before it completed. */
          g_assert_false (ws_task_wait (task, NULL, &error));
          g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
        }
      g_clear_error (&r.error);
      /* The wait lets go of the task once its other callback has run (the
       * last reference may go on a worker). */
      atomic_store (&finalized, FALSE);
      g_object_weak_ref (G_OBJECT (task), set_flag_on_finalize, &finalized);
      g_clear_object (&task);
      while (!atomic_load (&finalized))
        if (!g_main_context_iteration (f.ctx, FALSE))
          g_usleep (100);
    }
  g_test_message ("%u in time, %u timed out", n_in_time, n_timed_out);
  ws_test_on_context_clear (&f);
}

/* ---- names ------------------------------------------------------------ */

typedef struct
{
  WsWaker      *_Atomic waker;
  _Atomic gint  polls;
  _Atomic gint  stop;
  _Atomic gint  reads;
  _Atomic gint  bad_reads;
  WsTask       *_Atomic self;  /* for the reader */
} NameProbe;

/* Keeps its waker and stays PENDING until woken, then READY. */
static WsPoll
name_pending_until_woken (WsContext *cx,
                          gpointer   data)
{
  NameProbe *p = data;

  if (atomic_fetch_add (&p->polls, 1) == 0)
    {
      atomic_store (&p->waker, ws_context_get_waker (cx));
      return WS_POLL_PENDING;
    }
  return WS_POLL_READY;
}

/* Set, read back, replaced, cleared; the name is copied (interned) and
 * reads the same through the WsTask, the join handle and from inside. */
static void
test_name_round_trip (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  NameProbe p = { 0, };
  g_autoptr(WsTask) task = ws_runtime_spawn (rt, name_pending_until_woken, &p, NULL);
  WsJoinHandle *handle;
  char buf[32];

  g_assert_null (ws_task_get_name (task));

  g_strlcpy (buf, "load thumbnails", sizeof buf);
  ws_task_set_name (task, buf);
  buf[0] = 'X';
  g_assert_cmpstr (ws_task_get_name (task), ==, "load thumbnails");
  g_assert_true (ws_task_get_name (task) == g_intern_string ("load thumbnails"));

  ws_task_set_name (task, "sync mailbox");
  g_assert_cmpstr (ws_task_get_name (task), ==, "sync mailbox");
  ws_task_set_name (task, NULL);
  g_assert_null (ws_task_get_name (task));

  ws_test_wait_until (atomic_load (&p.waker) != NULL);
  ws_task_set_name (task, "named while pending");
  ws_test_wake_and_unref (atomic_exchange (&p.waker, NULL));
  g_assert_true (ws_task_wait (task, NULL, NULL));
  /* Kept after the end. */
  g_assert_cmpstr (ws_task_get_name (task), ==, "named while pending");

  /* A join handle names its task the same way. */
  handle = ws_runtime_spawn_joinable (rt, ws_test_ready, NULL, NULL);
  g_assert_null (ws_join_handle_get_name (handle));
  ws_join_handle_set_name (handle, "joinable");
  g_assert_cmpstr (ws_join_handle_get_name (handle), ==, "joinable");
  g_assert_true (ws_join_handle_wait (handle, NULL));
  {
    g_autoptr(WsTask) as_task = ws_join_handle_into_task (handle);

    g_assert_cmpstr (ws_task_get_name (as_task), ==, "joinable");
  }

  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static WsPoll
name_self (WsContext *cx,
           gpointer   data)
{
  ws_context_set_task_name (cx, data);
  return WS_POLL_READY;
}

/* A task names itself from inside, from its first poll on. */
static void
test_name_from_inside (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(WsTask) task = ws_runtime_spawn (rt, name_self, (gpointer) "self-named", NULL);

  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_cmpstr (ws_task_get_name (task), ==, "self-named");
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Sets a result, then returns PENDING (a critical that names the task);
 * READY on the next poll. */
static WsPoll
result_then_pending (WsContext *cx,
                     gpointer   data)
{
  NameProbe *p = data;

  if (atomic_fetch_add (&p->polls, 1) == 0)
    {
      g_autoptr(WsWaker) waker = ws_context_get_waker (cx);

      ws_context_set_task_name (cx, "bad-result");
      ws_context_return_uint64 (cx, 1);
      ws_waker_wake (waker);
      return WS_POLL_PENDING;
    }
  return WS_POLL_READY;
}

static WsPoll
returns_garbage (WsContext *cx,
                 gpointer   data)
{
  ws_context_set_task_name (cx, "garbage-poll");
  return (WsPoll) 0;
}

/* The task's name is in the critical about its poll and in the error of
 * an invalid poll return. A local task, so that the critical is logged on
 * this thread, where the expectation was set. */
static void
test_name_in_messages (void)
{
  WsTestOnContext f;
  NameProbe p = { 0, };
  g_autoptr(WsTask) task = NULL;
  g_autoptr(WsTask) garbage = NULL;
  g_autoptr(GError) error = NULL;

  ws_test_on_context_init (&f, 1);
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL,
                         "wsrt task “bad-result” (0x*) set a result but returned "
                         "WS_POLL_PENDING*");
  task = ws_runtime_spawn_local (f.rt, NULL, result_then_pending, &p, NULL);
  ws_test_iterate_until (f.ctx, ws_task_is_finished (task));
  g_test_assert_expected_messages ();
  g_assert_cmpint (atomic_load (&p.polls), ==, 2);

  /* Not ended yet: the critical names it. */
  g_clear_object (&task);
  p.polls = 0;
  task = ws_runtime_spawn (f.rt, name_pending_until_woken, &p, NULL);
  ws_task_set_name (task, "unfinished");
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL,
                         "ws_task_get_value: task “unfinished” (0x*) has not ended yet*");
  g_assert_null (ws_task_get_value (task));
  g_test_assert_expected_messages ();
  ws_test_wait_until (atomic_load (&p.waker) != NULL);
  ws_test_wake_and_unref (atomic_exchange (&p.waker, NULL));
  g_assert_true (ws_task_wait (task, NULL, NULL));

  /* Unnamed: the address, said to be unnamed. */
  g_clear_object (&task);
  p.polls = 0;
  task = ws_runtime_spawn (f.rt, name_pending_until_woken, &p, NULL);
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL,
                         "ws_task_get_value: task 0x* (unnamed) has not ended yet*");
  g_assert_null (ws_task_get_value (task));
  g_test_assert_expected_messages ();
  ws_test_wait_until (atomic_load (&p.waker) != NULL);
  ws_test_wake_and_unref (atomic_exchange (&p.waker, NULL));
  g_assert_true (ws_task_wait (task, NULL, NULL));

  garbage = ws_runtime_spawn (f.rt, returns_garbage, NULL, NULL);
  g_assert_false (ws_task_wait (garbage, NULL, &error));
  g_assert_error (error, WS_ERROR, WS_ERROR_FAILED);
  g_assert_nonnull (strstr (error->message, "task “garbage-poll” (0x"));

  ws_test_on_context_clear (&f);
}

static WsPoll
name_self_and_wait (WsContext *cx,
                    gpointer   data)
{
  ws_context_set_task_name (cx, "dump-me");
  return WS_POLL_PENDING;
}

/* TRUE if the dump lists the task as waiting; the dump is freed. */
static gboolean
dump_lists_waiting (WsRuntime *rt)
{
  g_autofree char *dump = ws_runtime_dump_tasks (rt);
  const char *line = strstr (dump, "task “dump-me” (0x");

  return line != NULL && strstr (line, "waiting for a wake") != NULL;
}

/* ws_runtime_dump_tasks () lists a waiting task by its name, and no
 * longer once it has ended. */
static void
test_name_in_dump (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(WsTask) task = ws_runtime_spawn (rt, name_self_and_wait, NULL, NULL);
  g_autofree char *after = NULL;

  /* Listed once its first poll has returned PENDING. */
  ws_test_wait_until (dump_lists_waiting (rt));
  ws_task_cancel (task);
  g_assert_false (ws_task_wait (task, NULL, NULL));
  after = ws_runtime_dump_tasks (rt);
  g_assert_null (strstr (after, "dump-me"));
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Reads its own name on a worker while the test thread renames it: each
 * read is NULL or one of the names, whole (under TSan: no race). */
static WsPoll
read_own_name (WsContext *cx,
               gpointer   data)
{
  NameProbe *p = data;
  WsTask *self;

  while ((self = atomic_load (&p->self)) == NULL)
    ;
  while (!atomic_load (&p->stop))
    {
      const char *name = ws_task_get_name (self);

      if (name != NULL && strcmp (name, "first name") != 0 && strcmp (name, "second name") != 0)
        atomic_fetch_add (&p->bad_reads, 1);
      atomic_fetch_add (&p->reads, 1);
    }
  return WS_POLL_READY;
}

static void
test_name_other_thread (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  NameProbe p = { 0, };
  g_autoptr(WsTask) task = ws_runtime_spawn (rt, read_own_name, &p, NULL);

  atomic_store (&p.self, task);
  for (guint i = 0; i < 2000 || atomic_load (&p.reads) < 100; i++)
    ws_task_set_name (task, i % 3 == 0 ? NULL : i % 3 == 1 ? "first name" : "second name");
  atomic_store (&p.stop, 1);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_cmpint (atomic_load (&p.bad_reads), ==, 0);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ---- WS_DEBUG diagnostics ----------------------------------------------- */

/* In a subprocess: @debug's keys, and warnings that are not fatal (the
 * diagnostics are warnings; the parent reads them from our stderr). */
static void
debug_child_setup (const char *debug,
                   const char *threshold_var,
                   const char *threshold)
{
  g_setenv ("WS_DEBUG", debug, TRUE);
  g_setenv (threshold_var, threshold, TRUE);
  g_log_set_always_fatal (G_LOG_FATAL_MASK);
  g_log_set_fatal_mask ("Wsrt", G_LOG_FATAL_MASK);
}

/* Both polls take far longer than the threshold; the first wakes the task
 * again, the second ends it. */
static WsPoll
slow_twice (WsContext *cx,
            gpointer   data)
{
  NameProbe *p = data;

  ws_context_set_task_name (cx, "slow-twice");
  g_usleep (200 * 1000);
  if (atomic_fetch_add (&p->polls, 1) == 0)
    {
      g_autoptr(WsWaker) waker = ws_context_get_waker (cx);

      ws_waker_wake (waker);
      return WS_POLL_PENDING;
    }
  return WS_POLL_READY;
}

/* A fiber that blocks in two slices, each far longer than the threshold. */
static void
slow_fiber (WsContext *cx,
            gpointer   data)
{
  ws_context_set_task_name (cx, "slow-fiber");
  g_usleep (200 * 1000);
  if (!ws_fiber_yield (cx))
    return;
  g_usleep (200 * 1000);
}

static void
test_debug_slow_poll_subprocess (void)
{
  g_autoptr(WsRuntime) rt = NULL;
  g_autoptr(WsTask) task = NULL;
  g_autoptr(WsTask) fiber = NULL;
  NameProbe p = { 0, };

  debug_child_setup ("slow-poll", "WS_DEBUG_SLOW_POLL_MS", "5");
  rt = ws_runtime_new (1);
  task = ws_runtime_spawn (rt, slow_twice, &p, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_cmpint (atomic_load (&p.polls), ==, 2);
  fiber = ws_runtime_spawn_fiber (rt, slow_fiber, NULL, NULL);
  g_assert_true (ws_task_wait (fiber, NULL, NULL));
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static void
test_debug_slow_poll (void)
{
  g_test_trap_subprocess ("/task/debug/slow-poll/subprocess", 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*WARNING*wsrt: task ?slow-twice? (0x*) ran for * ms in one poll "
                             "on a worker thread (WS_DEBUG=slow-poll, threshold 5 ms*"
                             "ws_runtime_spawn_blocking()*ws_fiber_run_in_thread()*");
  /* Two slow polls, one warning. The quotes are `?` in the patterns:
   * GLib writes them as `?` in a locale without UTF-8. */
  g_test_trap_assert_stderr_unmatched ("*slow-twice*slow-twice*");
  /* A fiber's slice is a poll: two slow slices, one warning. */
  g_test_trap_assert_stderr ("*wsrt: task ?slow-fiber? (0x*) ran for * ms in one poll*");
  g_test_trap_assert_stderr_unmatched ("*slow-fiber*slow-fiber*");
}

/* Off by default: the same slow polls, no warning. */
static void
test_debug_off_by_default_subprocess (void)
{
  g_autoptr(WsRuntime) rt = NULL;
  g_autoptr(WsTask) task = NULL;
  NameProbe p = { 0, };

  g_unsetenv ("WS_DEBUG");
  g_log_set_always_fatal (G_LOG_FATAL_MASK);
  g_log_set_fatal_mask ("Wsrt", G_LOG_FATAL_MASK);
  rt = ws_runtime_new (1);
  task = ws_runtime_spawn (rt, slow_twice, &p, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static void
test_debug_off_by_default (void)
{
  g_test_trap_subprocess ("/task/debug/off-by-default/subprocess", 0,
                          G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr_unmatched ("*slow-twice*");
}

/* Returns PENDING and arranges no wake. */
static WsPoll
never_woken (WsContext *cx,
             gpointer   data)
{
  ws_context_set_task_name (cx, "never-woken");
  return WS_POLL_PENDING;
}

/* Awaits a oneshot that nobody completes. */
static WsPoll
await_forgotten_oneshot (WsContext *cx,
                         gpointer   data)
{
  gpointer item = NULL;

  ws_context_set_task_name (cx, "oneshot-waiter");
  return ws_oneshot_poll (data, cx, &item, NULL);
}

static _Atomic gint stuck_seen;

/* Passes the message on to stderr, and notes which of the two tasks a
 * dump named (one dump, or two if their thresholds fell between scans). */
static void
stuck_log_handler (const char     *domain,
                   GLogLevelFlags  level,
                   const char     *message,
                   gpointer        data)
{
  if (strstr (message, "“never-woken”") != NULL)
    atomic_fetch_or (&stuck_seen, 1);
  if (strstr (message, "“oneshot-waiter”") != NULL)
    atomic_fetch_or (&stuck_seen, 2);
  g_log_default_handler (domain, level, message, data);
}

static void
test_debug_stuck_subprocess (void)
{
  g_autoptr(WsRuntime) rt = NULL;
  g_autoptr(WsTask) stuck = NULL;
  g_autoptr(WsTask) waiter = NULL;
  g_autoptr(WsOneshot) oneshot = ws_oneshot_new (NULL);

  debug_child_setup ("stuck", "WS_DEBUG_STUCK_S", "0.2");
  g_log_set_handler ("Wsrt", G_LOG_LEVEL_WARNING, stuck_log_handler, NULL);
  rt = ws_runtime_new (1);
  stuck = ws_runtime_spawn (rt, never_woken, NULL, NULL);
  waiter = ws_runtime_spawn (rt, await_forgotten_oneshot, ws_oneshot_ref (oneshot),
                             (GDestroyNotify) ws_oneshot_unref);
  /* The runtime's watchdog reports them; a hang is the watchdog's. */
  ws_test_wait_until (atomic_load (&stuck_seen) == 3);
  /* The explicit dump says the same, with the ages. */
  {
    g_autofree char *dump = ws_runtime_dump_tasks (rt);

    g_assert_nonnull (strstr (dump, "task “oneshot-waiter” (0x"));
    g_assert_nonnull (strstr (dump, "last awaited: ws_oneshot_poll"));
    g_assert_nonnull (strstr (dump, "task “never-woken” (0x"));
    g_assert_nonnull (strstr (dump, ": pending for "));
  }
  ws_task_cancel (stuck);
  ws_task_cancel (waiter);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static void
test_debug_stuck (void)
{
  g_test_trap_subprocess ("/task/debug/stuck/subprocess", 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr ("*wsrt: * pending for longer than 0.2 s (WS_DEBUG=stuck*");
  g_test_trap_assert_stderr ("*task ?never-woken? (0x*): pending for * s, waiting for a wake; "
                             "last awaited: unknown*");
  g_test_trap_assert_stderr ("*task ?oneshot-waiter? (0x*): pending for * s, waiting for a "
                             "wake; last awaited: ws_oneshot_poll*");
  /* Once per wait. */
  g_test_trap_assert_stderr_unmatched ("*never-woken*never-woken*");
}

int
main (int   argc,
      char *argv[])
{
  static const WsTestDef defs[] = {
    { "/task/cancellable-of-pending-task", test_cancellable_of_pending_task },
    { "/task/wait-timeout", test_wait_timeout },
    { "/task/wait-timeout-race", test_wait_timeout_race },
    { "/task/cancellable-after-cancel", test_cancellable_after_cancel },
    { "/task/cancellable-handlers-end-before-destroy", test_cancellable_handlers_end_before_destroy },
    { "/task/cancellable-handler-shuts-down", test_cancellable_handler_shuts_down },
    { "/task/wake-during-poll", test_wake_during_poll },
    { "/task/wake-after-completion", test_wake_after_completion },
    { "/task/cancel-pending", test_cancel_pending },
    { "/task/cancel-races-completion", test_cancel_races_completion },
    { "/task/error-result", test_error_result },
    { "/task/pointer-result", test_pointer_result },
    { "/task/result-accessors", test_result_accessors },
    { "/task/destroy-before-waiters", test_destroy_before_waiters },
    { "/task/wait-on-worker-fails", test_wait_on_worker_fails },
    { "/task/wait-cancellable", test_wait_cancellable },
    { "/task/await-task", test_await_task },
    { "/task/drop-handle-detaches", test_drop_handle_detaches },
    { "/task/name/round-trip", test_name_round_trip },
    { "/task/name/from-inside", test_name_from_inside },
    { "/task/name/in-messages", test_name_in_messages },
    { "/task/name/other-thread", test_name_other_thread },
    { "/task/name/in-dump", test_name_in_dump },
    { "/task/debug/slow-poll", test_debug_slow_poll },
    { "/task/debug/off-by-default", test_debug_off_by_default },
    { "/task/debug/stuck", test_debug_stuck },
  };
  /* The WS_DEBUG children, in subprocesses that set the environment
   * before their first runtime. Static: the parent skips them, and a
   * skipped case's data is never freed; for that reason a subprocess adds
   * no other case. */
  static WsTestCase children[] = {
    { "/task/debug/slow-poll/subprocess", test_debug_slow_poll_subprocess, },
    { "/task/debug/off-by-default/subprocess", test_debug_off_by_default_subprocess, },
    { "/task/debug/stuck/subprocess", test_debug_stuck_subprocess, },
  };

  ws_test_init (&argc, &argv);
  for (gsize i = 0; i < G_N_ELEMENTS (defs) && !g_test_subprocess (); i++)
    ws_test_add_func (defs[i].path, defs[i].func);
  for (gsize i = 0; i < G_N_ELEMENTS (children); i++)
    g_test_add_data_func (children[i].path, &children[i], ws_test_run_case);
  return g_test_run ();
}
