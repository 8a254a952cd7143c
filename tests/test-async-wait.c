/* test-async-wait.c: completion delivery to a main context
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * ws_task_wait_async: the callback runs exactly once, on the
 * thread-default context of the caller, never from inside the call: for a
 * task already finished, one that finishes later, one cancelled, and a
 * wait whose GCancellable is cancelled (the task then ends later without a
 * second call); without a GCancellable the result is the task itself, and
 * several waits on one task each get their own call.
 *
 * ws_runtime_spawn_with_callback: the callback runs once per task, on the
 * context of the spawning thread (not another thread's), with the task's
 * pointer, integer, error or cancelled outcome; tasks cancelled by a
 * shutdown and tasks ended before it are delivered after it, with nothing
 * lost or leaked; a spawn refused after shutdown frees its data, returns
 * FALSE and still calls back once, as cancelled.
 *
 * Bursts (ws-delivery.c, "Arming"): completions queued while the
 * context's source waits out a burst's cooldown are delivered by a loop
 * that iterates anyway, a flush with g_main_context_iteration (ctx, FALSE)
 * included, and a lone completion after a burst wakes a loop blocked in
 * poll; rounds of completions racing the loop's dispatches lose none.
 */

#include "config.h"

#include "ws-test-fixture.h"

static void
test_exactly_once (void)
{
  WsTestOnContext f;
  g_autoptr(WsTask) done = NULL;
  g_autoptr(WsTask) pending = NULL;
  g_autoptr(WsTask) cancelled = NULL;
  g_autoptr(WsTask) forever = NULL;
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  WsTestWaitResult r_done = { 0 }, r_pending = { 0 }, r_cancelled = { 0 }, r_wait_cancelled = { 0 };

  ws_test_on_context_init (&f, 2);

  done = ws_runtime_spawn (f.rt, ws_test_ready, NULL, NULL);
  g_assert_true (ws_task_wait (done, NULL, NULL));
  ws_task_wait_async (done, NULL, ws_test_wait_cb, &r_done);
  g_assert_cmpuint (r_done.calls, ==, 0);

  pending = ws_runtime_spawn (f.rt, ws_test_ready, NULL, NULL);
  ws_task_wait_async (pending, NULL, ws_test_wait_cb, &r_pending);
  g_assert_cmpuint (r_pending.calls, ==, 0);

  cancelled = ws_runtime_spawn (f.rt, ws_test_pending_forever, NULL, NULL);
  ws_task_wait_async (cancelled, NULL, ws_test_wait_cb, &r_cancelled);
  ws_task_cancel (cancelled);

  forever = ws_runtime_spawn (f.rt, ws_test_pending_forever, NULL, NULL);
  ws_task_wait_async (forever, cancellable, ws_test_wait_cb, &r_wait_cancelled);
  g_cancellable_cancel (cancellable);
  g_assert_cmpuint (r_wait_cancelled.calls, ==, 0);

  ws_test_iterate_until (f.ctx, r_done.calls && r_pending.calls && r_cancelled.calls
                              && r_wait_cancelled.calls);
  g_assert_true (r_done.ok);
  g_assert_true (r_pending.ok);
  g_assert_false (r_cancelled.ok);
  g_assert_error (r_cancelled.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_false (r_wait_cancelled.ok);
  g_assert_error (r_wait_cancelled.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);

  /* The task behind the cancelled wait ends later: still no second call. */
  ws_task_cancel (forever);
  g_assert_false (ws_task_wait (forever, NULL, NULL));
  while (g_main_context_iteration (f.ctx, FALSE))
    ;
  g_assert_cmpuint (r_done.calls, ==, 1);
  g_assert_cmpuint (r_pending.calls, ==, 1);
  g_assert_cmpuint (r_cancelled.calls, ==, 1);
  g_assert_cmpuint (r_wait_cancelled.calls, ==, 1);

  g_clear_error (&r_cancelled.error);
  g_clear_error (&r_wait_cancelled.error);
  ws_test_on_context_clear (&f);
}

/* Without a GCancellable the GAsyncResult is the task itself (tagged,
 * with the wait's user data); a second wait on the same task meanwhile,
 * and a wait started from the callback, each get their own call. */
typedef struct
{
  guint           calls;
  gboolean        ok;
  GAsyncResult   *result;       /* of the last call, not a reference */
  gpointer        user_data;
  WsTestWaitResult again;       /* of a wait started from the callback */
  gboolean        wait_again;
} OwnWait;

static void
own_wait_cb (GObject      *object,
             GAsyncResult *result,
             gpointer      data)
{
  OwnWait *w = data;
  g_autoptr(GObject) source = g_async_result_get_source_object (result);

  w->calls++;
  w->result = result;
  w->user_data = g_async_result_get_user_data (result);
  g_assert_true (source == object);
  g_assert_true (g_async_result_is_tagged (result, ws_task_wait_async));
  w->ok = ws_task_wait_finish (WS_TASK (object), result, NULL);
  if (w->wait_again)
    {
      w->wait_again = FALSE;
      ws_task_wait_async (WS_TASK (object), NULL, ws_test_wait_cb, &w->again);
    }
}

static void
test_own_result (void)
{
  WsTestOnContext f;
  g_autoptr(WsTask) task = NULL;
  OwnWait first = { 0 }, second = { 0 };

  ws_test_on_context_init (&f, 2);
  task = ws_runtime_spawn (f.rt, ws_test_ready, NULL, NULL);
  first.wait_again = TRUE;
  ws_task_wait_async (task, NULL, own_wait_cb, &first);
  ws_task_wait_async (task, NULL, own_wait_cb, &second);
  g_assert_cmpuint (first.calls + second.calls, ==, 0);

  ws_test_iterate_until (f.ctx, first.calls && second.calls && first.again.calls);
  g_assert_true (first.ok);
  g_assert_true (second.ok);
  g_assert_true (first.again.ok);
  /* The first wait's result is the task; the second, made while the
   * first was pending, has its own. Each has its own user data. */
  g_assert_true (first.result == G_ASYNC_RESULT (task));
  g_assert_true (second.result != G_ASYNC_RESULT (task));
  g_assert_true (first.user_data == &first);
  g_assert_true (second.user_data == &second);
  while (g_main_context_iteration (f.ctx, FALSE))
    ;
  g_assert_cmpuint (first.calls, ==, 1);
  g_assert_cmpuint (second.calls, ==, 1);
  g_assert_cmpuint (first.again.calls, ==, 1);

  /* Once the first is over, the task is the result of a wait again. */
  second = (OwnWait) { 0 };
  ws_task_wait_async (task, NULL, own_wait_cb, &second);
  ws_test_iterate_until (f.ctx, second.calls);
  g_assert_true (second.result == G_ASYNC_RESULT (task));
  g_assert_true (second.user_data == &second);
  while (g_main_context_iteration (f.ctx, FALSE))
    ;
  g_assert_cmpuint (second.calls, ==, 1);
  ws_test_on_context_clear (&f);
}

/* ---- ws_runtime_spawn_with_callback ------------------------------------ */

#define N_CALLBACK_TASKS 200

/* What the callbacks of one test saw. */
typedef struct
{
  GThread      *thread;         /* where the callbacks must run */
  guint         calls;
  guint         wrong_thread;
  guint         ok;
  guint         cancelled;
  guint         failed;
  guint64       sum;
  gchar        *pointer;
} Delivered;

static WsPoll
return_index (WsContext *cx,
              gpointer   data)
{
  ws_context_return_uint64 (cx, GPOINTER_TO_UINT (data));
  return WS_POLL_READY;
}

/* Counts its poll, then returns 1 as an integer. */
static WsPoll
count_and_return_one (WsContext *cx,
                      gpointer   data)
{
  atomic_fetch_add (&ws_test_n_polled, 1);
  ws_context_return_uint64 (cx, 1);
  return WS_POLL_READY;
}

static WsPoll
return_pointer (WsContext *cx,
                gpointer   data)
{
  ws_context_return_pointer (cx, g_strdup ("delivered"), g_free);
  return WS_POLL_READY;
}

static void
count_outcome (Delivered *d,
               gboolean   ok,
               GError    *error)
{
  d->calls++;
  if (g_thread_self () != d->thread)
    d->wrong_thread++;
  if (ok)
    d->ok++;
  else if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    d->cancelled++;
  else
    d->failed++;
}

/* Takes an integer result. */
static void
on_uint64 (WsJoinHandle *handle,
           gpointer      data)
{
  Delivered *d = data;
  g_autoptr(GError) error = NULL;
  guint64 v = 0;
  gboolean ok = ws_join_handle_finish_uint64 (handle, &v, &error);

  count_outcome (d, ok, error);
  d->sum += v;
}

/* Takes a pointer result, or none. */
static void
on_pointer (WsJoinHandle *handle,
            gpointer      data)
{
  Delivered *d = data;
  g_autoptr(GError) error = NULL;
  gchar *p = ws_join_handle_finish (handle, &error);

  count_outcome (d, error == NULL, error);
  if (p != NULL)
    {
      g_assert_null (d->pointer);
      d->pointer = p;
    }
}

/* Every callback runs once, on the context of the spawning thread, with
 * the task's outcome; none runs from inside the spawn. */
static void
test_callback_spawn_outcomes (void)
{
  WsTestOnContext f;
  Delivered d = { g_thread_self () };
  guint64 expected = 0;

  ws_test_on_context_init (&f, 2);
  for (guint i = 0; i < N_CALLBACK_TASKS; i++)
    {
      g_assert_true (ws_runtime_spawn_with_callback (f.rt, return_index, GUINT_TO_POINTER (i),
                                                     NULL, on_uint64, &d));
      expected += i;
    }
  g_assert_true (ws_runtime_spawn_with_callback (f.rt, return_pointer, NULL, NULL,
                                                 on_pointer, &d));
  g_assert_true (ws_runtime_spawn_with_callback (f.rt, ws_test_return_not_found, NULL, NULL,
                                                 on_pointer, &d));
  g_assert_cmpuint (d.calls, ==, 0);

  ws_test_iterate_until (f.ctx, d.calls == N_CALLBACK_TASKS + 2);
  g_assert_cmpuint (d.wrong_thread, ==, 0);
  g_assert_cmpuint (d.ok, ==, N_CALLBACK_TASKS + 1);
  g_assert_cmpuint (d.failed, ==, 1);
  g_assert_cmpuint (d.sum, ==, expected);
  g_assert_cmpstr (d.pointer, ==, "delivered");
  g_free (d.pointer);

  while (g_main_context_iteration (f.ctx, FALSE))
    ;
  g_assert_cmpuint (d.calls, ==, N_CALLBACK_TASKS + 2);
  ws_test_on_context_clear (&f);
}

/* A thread with a context of its own: its spawns call back there, not on
 * the test thread's context. */
typedef struct
{
  WsRuntime    *rt;
  Delivered     d;
  GMainContext *ctx;
} OtherThread;

static gpointer
other_thread_main (gpointer data)
{
  OtherThread *o = data;

  o->d.thread = g_thread_self ();
  g_main_context_push_thread_default (o->ctx);
  for (guint i = 0; i < N_CALLBACK_TASKS; i++)
    g_assert_true (ws_runtime_spawn_with_callback (o->rt, return_index, GUINT_TO_POINTER (1),
                                                   NULL, on_uint64, &o->d));
  ws_test_iterate_until (o->ctx, o->d.calls == N_CALLBACK_TASKS);
  g_main_context_pop_thread_default (o->ctx);
  return NULL;
}

static void
test_callback_spawn_right_context (void)
{
  WsTestOnContext f;
  OtherThread o = { NULL, };
  Delivered d = { g_thread_self () };
  GThread *t;

  ws_test_on_context_init (&f, 2);
  o.rt = f.rt;
  o.ctx = g_main_context_new ();
  t = g_thread_new ("other", other_thread_main, &o);
  for (guint i = 0; i < N_CALLBACK_TASKS; i++)
    g_assert_true (ws_runtime_spawn_with_callback (f.rt, return_index, GUINT_TO_POINTER (2),
                                                   NULL, on_uint64, &d));
  ws_test_iterate_until (f.ctx, d.calls == N_CALLBACK_TASKS);
  g_thread_join (t);

  g_assert_cmpuint (d.wrong_thread, ==, 0);
  g_assert_cmpuint (d.sum, ==, 2 * N_CALLBACK_TASKS);
  g_assert_cmpuint (o.d.calls, ==, N_CALLBACK_TASKS);
  g_assert_cmpuint (o.d.wrong_thread, ==, 0);
  g_assert_cmpuint (o.d.sum, ==, N_CALLBACK_TASKS);
  g_main_context_unref (o.ctx);
  ws_test_on_context_clear (&f);
}

/* Pending tasks are cancelled by a shutdown (their destroy notifies run
 * before it returns), tasks that ended before it keep their results; no
 * callback runs before the context is iterated, each runs once after,
 * also once the runtime is gone, and nothing is left behind (the leak
 * check of the harness). */
static void
test_callback_spawn_shutdown_before_delivery (void)
{
  WsTestOnContext f;
  Delivered d = { g_thread_self () };
  Delivered pending = { g_thread_self () };

  ws_test_on_context_init (&f, 2);
  ws_test_reset_counters ();
  for (guint i = 0; i < N_CALLBACK_TASKS; i++)
    g_assert_true (ws_runtime_spawn_with_callback (f.rt, count_and_return_one, NULL,
                                                   NULL, on_uint64, &d));
  /* Polled means ended: each returns READY from its only poll. */
  ws_test_wait_until (atomic_load (&ws_test_n_polled) == N_CALLBACK_TASKS);
  for (guint i = 0; i < N_CALLBACK_TASKS; i++)
    g_assert_true (ws_runtime_spawn_with_callback (f.rt, ws_test_pending_forever, NULL,
                                                   ws_test_count_destroy, on_uint64, &pending));

  g_assert_true (ws_runtime_shutdown (f.rt, -1));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, N_CALLBACK_TASKS);
  g_clear_object (&f.rt);
  g_assert_cmpuint (d.calls + pending.calls, ==, 0);

  ws_test_iterate_until (f.ctx, d.calls == N_CALLBACK_TASKS
                                && pending.calls == N_CALLBACK_TASKS);
  while (g_main_context_iteration (f.ctx, FALSE))
    ;
  g_assert_cmpuint (d.calls, ==, N_CALLBACK_TASKS);
  g_assert_cmpuint (d.ok, ==, N_CALLBACK_TASKS);
  g_assert_cmpuint (d.sum, ==, N_CALLBACK_TASKS);
  g_assert_cmpuint (pending.calls, ==, N_CALLBACK_TASKS);
  g_assert_cmpuint (pending.cancelled, ==, N_CALLBACK_TASKS);
  g_assert_cmpuint (d.wrong_thread + pending.wrong_thread, ==, 0);

  g_main_context_pop_thread_default (f.ctx);
  g_clear_pointer (&f.ctx, g_main_context_unref);
}

/* After shutdown the spawn is refused: FALSE, the destroy notify run
 * before it returns, no poll, and one callback, as cancelled, from the
 * context. */
static void
test_callback_spawn_refused_after_shutdown (void)
{
  WsTestOnContext f;
  Delivered d = { g_thread_self () };

  ws_test_on_context_init (&f, 1);
  g_assert_true (ws_runtime_shutdown (f.rt, -1));
  ws_test_reset_counters ();
  g_assert_false (ws_runtime_spawn_with_callback (f.rt, ws_test_count_poll, NULL,
                                                  ws_test_count_destroy, on_pointer, &d));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 1);
  g_assert_cmpuint (d.calls, ==, 0);

  ws_test_iterate_until (f.ctx, d.calls == 1);
  while (g_main_context_iteration (f.ctx, FALSE))
    ;
  g_assert_cmpuint (d.calls, ==, 1);
  g_assert_cmpuint (d.cancelled, ==, 1);
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, 0);
  ws_test_on_context_clear (&f);
}

/* ---- bursts ------------------------------------------------------------- */

/* Ends when its oneshot (the data) is sent on. */
static WsPoll
await_oneshot (WsContext *cx,
               gpointer   data)
{
  gpointer item = NULL;

  return ws_oneshot_poll (data, cx, &item, NULL);
}

/* Completions pushed right after the loop took two (its source now waits
 * out the cooldown, armed) are pending and delivered by one non-blocking
 * iteration; once the loop has slept through the cooldown, a lone
 * completion from a worker wakes it. */
static void
test_burst_flush_and_lone (void)
{
  WsTestOnContext f;
  WsTask *tasks[4];
  WsTestWaitResult r[4] = { { 0 } };
  g_autoptr(WsTask) late = NULL;
  WsTestWaitResult r_late = { 0 };
  WsOneshot *go = ws_oneshot_new (NULL);

  ws_test_on_context_init (&f, 2);
  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    {
      tasks[i] = ws_runtime_spawn (f.rt, ws_test_ready, NULL, NULL);
      g_assert_true (ws_task_wait (tasks[i], NULL, NULL));
    }

  /* Two queued at once: the dispatch that takes them is a burst's (on a
   * slow machine its slice may end after the first, and the next
   * iteration delivers the other from the batch). */
  ws_task_wait_async (tasks[0], NULL, ws_test_wait_cb, &r[0]);
  ws_task_wait_async (tasks[1], NULL, ws_test_wait_cb, &r[1]);
  while (r[0].calls + r[1].calls < 2)
    g_assert_true (g_main_context_iteration (f.ctx, FALSE));

  /* Queued during the cooldown: no wake, but a flush sees them. */
  ws_task_wait_async (tasks[2], NULL, ws_test_wait_cb, &r[2]);
  ws_task_wait_async (tasks[3], NULL, ws_test_wait_cb, &r[3]);
  g_assert_true (g_main_context_pending (f.ctx));
  while (g_main_context_iteration (f.ctx, FALSE))
    ;
  g_assert_cmpuint (r[2].calls + r[3].calls, ==, 2);

  /* That take was a burst's too: let its cooldown pass (on a slow machine
   * the flush may have passed it already) and flush again, so that the
   * dispatch that ends it, taking nothing, disarms the source; then a
   * completion from a worker must wake the loop blocked in poll. */
  g_usleep (2 * G_TIME_SPAN_MILLISECOND);
  while (g_main_context_iteration (f.ctx, FALSE))
    ;
  g_assert_false (g_main_context_pending (f.ctx));
  late = ws_runtime_spawn (f.rt, await_oneshot, ws_oneshot_ref (go),
                           (GDestroyNotify) ws_oneshot_unref);
  ws_task_wait_async (late, NULL, ws_test_wait_cb, &r_late);
  g_assert_true (ws_oneshot_send (go, GUINT_TO_POINTER (1)));
  ws_test_iterate_until (f.ctx, r_late.calls == 1);
  g_assert_true (r_late.ok);

  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    {
      g_assert_cmpuint (r[i].calls, ==, 1);
      g_assert_true (r[i].ok);
      g_object_unref (tasks[i]);
    }
  ws_oneshot_unref (go);
  ws_test_on_context_clear (&f);
}

/* Its data: how many times to yield, then how long to spin, before it
 * returns 1. */
typedef struct
{
  guint yields;
  guint spin_us;
} Trickle;

static WsPoll
trickle_then_one (WsContext *cx,
                  gpointer   data)
{
  Trickle *t = data;
  gint64 until;

  if (t->yields-- > 0)
    return ws_context_yield (cx);
  until = g_get_monotonic_time () + t->spin_us;
  while (g_get_monotonic_time () < until)
    ;
  ws_context_return_uint64 (cx, 1);
  return WS_POLL_READY;
}

/* Rounds of tasks spawned with callbacks: 1 to 64, each yielding 0 to 31
 * times first, and every other round 1 to 4, each spinning up to 30 us
 * before its end, so that the ends come in bursts or one at a time,
 * racing the loop's dispatches (a burst's cooldown, its end, a lone
 * completion, the disarm after it), the loop blocking in poll until the
 * round is in, and sometimes pausing between rounds so that the source
 * disarms: every callback runs once, none is left behind (a lost wake
 * hangs, and the watchdog fails the test). */
static void
test_burst_rounds (void)
{
  WsTestOnContext f;
  Delivered d = { g_thread_self () };
  guint expected = 0;
  g_autoptr(GRand) rand = g_rand_new_with_seed (20261129);

  ws_test_on_context_init (&f, 2);
  for (guint round = 0; round < 1000; round++)
    {
      gboolean spin = round % 2 == 1;
      guint n = g_rand_int_range (rand, 1, spin ? 5 : 65);

      for (guint i = 0; i < n; i++)
        {
          Trickle *t = g_new (Trickle, 1);

          t->yields = spin ? 0 : g_rand_int_range (rand, 0, 32);
          t->spin_us = spin ? g_rand_int_range (rand, 0, 31) : 0;
          g_assert_true (ws_runtime_spawn_with_callback (f.rt, trickle_then_one, t,
                                                         g_free, on_uint64, &d));
        }
      expected += n;
      ws_test_iterate_until (f.ctx, d.calls == expected);
      if (g_rand_boolean (rand))
        g_usleep (g_rand_int_range (rand, 0, 2000));
    }
  while (g_main_context_iteration (f.ctx, FALSE))
    ;
  g_assert_cmpuint (d.calls, ==, expected);
  g_assert_cmpuint (d.ok, ==, expected);
  g_assert_cmpuint (d.sum, ==, expected);
  g_assert_cmpuint (d.wrong_thread, ==, 0);
  ws_test_on_context_clear (&f);
}

WS_TEST_MAIN ({ "/async-wait/exactly-once", test_exactly_once },
              { "/async-wait/own-result", test_own_result },
              { "/async-wait/callback-spawn/outcomes", test_callback_spawn_outcomes },
              { "/async-wait/callback-spawn/right-context", test_callback_spawn_right_context },
              { "/async-wait/callback-spawn/shutdown-before-delivery",
                test_callback_spawn_shutdown_before_delivery },
              { "/async-wait/callback-spawn/refused-after-shutdown",
                test_callback_spawn_refused_after_shutdown },
              { "/async-wait/burst/flush-and-lone", test_burst_flush_and_lone },
              { "/async-wait/burst/rounds", test_burst_rounds })
