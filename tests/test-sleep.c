/* test-sleep.c: WsSleep, timers with a deadline that can be reset
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Sleeps end in deadline order, never early; a reset from another thread
 * while a task awaits the sleep carries the task's waker to the new
 * deadline (earlier, later then earlier, in the past), and resets racing
 * the timers never lose a wake. A task cancelled while it awaits a sleep
 * ends at once and drops the timer's waker; sleeps work in local tasks
 * and on a thread that left ws_block_in_place(); and 10,000 sleeps,
 * moved from the main thread while their tasks await them, end in the
 * order of their deadlines, none early; more sleeps due at one tick than
 * a busy worker's queue holds all end. On a main context, wait_async
 * and for_async call back on the caller's context, never early, never
 * from inside the call; a cancel ends them at once, and a reset from
 * another thread moves them as it moves a poll.
 */

#include "config.h"

#include "ws-test-fixture.h"

#include <gio/gio.h>

#include "ws-timer-driver-private.h"

typedef struct
{
  WsSleep  *nap;
  guint     id;
  gboolean  awaiting;
  GArray   *order;
} Sleeper;

static void
sleeper_free (gpointer data)
{
  Sleeper *s = data;

  ws_sleep_unref (s->nap);
  g_free (s);
}

static WsPoll
sleeper_func (WsContext *cx,
              gpointer   data)
{
  Sleeper *s = data;

  if (ws_sleep_poll (s->nap, cx) == WS_POLL_PENDING)
    {
      s->awaiting = TRUE;
      return WS_POLL_PENDING;
    }
  g_assert_cmpint (g_get_monotonic_time (), >=, ws_sleep_get_deadline (s->nap));
  g_array_append_val (s->order, s->id);
  return WS_POLL_READY;
}

/* Tasks on the test's own context, each awaiting a sleep; once all await,
 * their deadlines are set 50 ms apart in another order than the spawns'.
 * The context's timer driver fires them only while this thread iterates
 * it, after every reset was made, and it fires them in deadline order: so
 * they end in that order however late the thread gets to run (the order
 * on the workers, whose threads the system may stop at any time, is that
 * of /sleep/many-in-deadline-order). */
static void
test_in_deadline_order (void)
{
  WsTestOnContext f;
  const guint ms[] = { 200, 0, 150, 50, 100 };
  const guint expect[] = { 1, 3, 4, 2, 0 };
  Sleeper *sleepers[G_N_ELEMENTS (ms)];
  WsTask *tasks[G_N_ELEMENTS (ms)];
  g_autoptr(GArray) order = g_array_new (FALSE, FALSE, sizeof (guint));
  gboolean all;
  gint64 base;

  ws_test_on_context_init (&f, 2);
  for (guint i = 0; i < G_N_ELEMENTS (ms); i++)
    {
      Sleeper *s = g_new0 (Sleeper, 1);

      s->nap = ws_sleep_new (G_TIME_SPAN_HOUR);
      s->id = i;
      s->order = order;
      sleepers[i] = s;
      tasks[i] = ws_runtime_spawn_local (f.rt, NULL, sleeper_func, s, sleeper_free);
    }
  do
    {
      g_main_context_iteration (f.ctx, TRUE);
      all = TRUE;
      for (guint i = 0; i < G_N_ELEMENTS (ms); i++)
        all = all && sleepers[i]->awaiting;
    }
  while (!all);
  base = g_get_monotonic_time () + 20 * G_TIME_SPAN_MILLISECOND;
  for (guint i = 0; i < G_N_ELEMENTS (ms); i++)
    ws_sleep_reset (sleepers[i]->nap, base + ms[i] * G_TIME_SPAN_MILLISECOND);
  ws_test_iterate_until (f.ctx, order->len == G_N_ELEMENTS (ms));
  for (guint i = 0; i < G_N_ELEMENTS (ms); i++)
    {
      ws_test_iterate_until (f.ctx, ws_task_is_finished (tasks[i]));
      g_object_unref (tasks[i]);
      g_assert_cmpuint (g_array_index (order, guint, i), ==, expect[i]);
    }
  ws_test_on_context_clear (&f);
}

/* A sleep that another thread resets while a task awaits it: the task
 * polled it on a worker and returned PENDING, so its only waker is in the
 * sleep's timer. The reset must carry that waker to the new deadline. */
typedef struct
{
  WsSleep         *nap;
  _Atomic gboolean awaiting;   /* the task got PENDING from the sleep */
  _Atomic gint64   woke_at;    /* when the sleep was READY; 0 before */
} ResetSleeper;

static WsPoll
reset_sleeper_func (WsContext *cx,
                    gpointer   data)
{
  ResetSleeper *s = data;

  if (ws_sleep_poll (s->nap, cx) == WS_POLL_PENDING)
    {
      atomic_store (&s->awaiting, TRUE);
      return WS_POLL_PENDING;
    }
  atomic_store (&s->woke_at, g_get_monotonic_time ());
  return WS_POLL_READY;
}

static void
reset_sleeper_wait_awaiting (ResetSleeper *s)
{
  ws_test_wait_until (atomic_load (&s->awaiting));
}

/* Waits until the task saw the sleep ready, and returns when. The tests
 * reset sleeps an hour away: a wake at all is the reset's, and one that
 * never comes is a hang the watchdog reports. */
static gint64
reset_sleeper_wait_woken (ResetSleeper *s)
{
  ws_test_wait_until (atomic_load (&s->woke_at) != 0);
  return atomic_load (&s->woke_at);
}

/* The sleep never ends early; the 1 ms is for the clock reads of the test
 * and the task being different reads. */
#define RESET_SLACK_USEC (1 * G_TIME_SPAN_MILLISECOND)

/* A task on a runtime of two workers that awaits a sleep of @duration,
 * once it got PENDING from the sleep. */
typedef struct
{
  WsRuntime    *rt;
  ResetSleeper  s;
  WsTask       *task;
} ResetTest;

static void
reset_test_start (ResetTest *t,
                  gint64     duration)
{
  t->rt = ws_runtime_new (2);
  t->s = (ResetSleeper) { .nap = ws_sleep_new (duration) };
  t->task = ws_runtime_spawn (t->rt, reset_sleeper_func, &t->s, NULL);
  reset_sleeper_wait_awaiting (&t->s);
}

/* The task ends; then the runtime. */
static void
reset_test_finish (ResetTest *t)
{
  g_assert_true (ws_task_wait (t->task, NULL, NULL));
  ws_sleep_unref (t->s.nap);
  g_assert_true (ws_runtime_shutdown (t->rt, -1));
  g_clear_object (&t->task);
  g_clear_object (&t->rt);
}

/* Resets the sleep to @deadline: the task wakes, not before it, and
 * ends; then the runtime. */
static void
reset_test_finish_at (ResetTest *t,
                      gint64     deadline)
{
  gint64 woke_at;

  ws_sleep_reset (t->s.nap, deadline);
  woke_at = reset_sleeper_wait_woken (&t->s);
  g_assert_cmpint (woke_at, !=, 0);
  g_assert_cmpint (woke_at, >=, deadline - RESET_SLACK_USEC);
  g_test_message ("woke %" G_GINT64_FORMAT " us after the deadline", woke_at - deadline);
  reset_test_finish (t);
}

static void
test_reset_earlier_from_another_thread (void)
{
  ResetTest t;

  reset_test_start (&t, G_TIME_SPAN_HOUR);
  reset_test_finish_at (&t, g_get_monotonic_time () + 50 * G_TIME_SPAN_MILLISECOND);
}

/* A sleep moved an hour away before its first deadline passed: the
 * first deadline passes and the sleep is not ready. Whether the move came
 * in time is what the test saw (when the reset returned); when it did
 * not (a busy machine), the round is not counted and the next one gives
 * the first deadline twice as long. */
static void
test_reset_later_then_earlier (void)
{
  for (gint64 duration = 100 * G_TIME_SPAN_MILLISECOND;; duration *= 2)
    {
      ResetTest t;
      gint64 first, moved_at;

      reset_test_start (&t, duration);
      first = ws_sleep_get_deadline (t.s.nap);
      ws_sleep_reset (t.s.nap, g_get_monotonic_time () + G_TIME_SPAN_HOUR);
      moved_at = g_get_monotonic_time ();
      if (moved_at >= first)
        {
          g_test_message ("moved %" G_GINT64_FORMAT " us after the first deadline: again",
                          moved_at - first);
          reset_test_finish_at (&t, g_get_monotonic_time ());
          continue;
        }
      /* The first deadline passes: the task may be woken, but the sleep
       * it awaits is not ready. */
      while (g_get_monotonic_time () < first + 100 * G_TIME_SPAN_MILLISECOND)
        g_usleep (10 * 1000);
      g_assert_cmpint (atomic_load (&t.s.woke_at), ==, 0);

      reset_test_finish_at (&t, g_get_monotonic_time () + 50 * G_TIME_SPAN_MILLISECOND);
      break;
    }
}

static void
test_reset_to_past_from_another_thread (void)
{
  ResetTest t;
  gint64 reset_at;
  gint64 woke_at;

  reset_test_start (&t, G_TIME_SPAN_HOUR);
  reset_at = g_get_monotonic_time ();
  ws_sleep_reset (t.s.nap, reset_at - G_USEC_PER_SEC);

  woke_at = reset_sleeper_wait_woken (&t.s);
  g_assert_cmpint (woke_at, !=, 0);
  g_test_message ("woke %" G_GINT64_FORMAT " us after the reset", woke_at - reset_at);
  reset_test_finish (&t);
}

/* Resets that race the timers firing and the tasks polling: deadlines
 * 0 to 2 ms ahead, moved every 0.5 ms, so a reset meets an armed timer, one
 * firing, one that fired for a deadline since moved, and a task polling
 * again. No wake may be lost: every task ends once the last deadline
 * passes. */
#define N_RACERS 16

static void
test_reset_races_timers (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  ResetSleeper s[N_RACERS] = { { NULL, }, };
  WsTask *tasks[N_RACERS];

  for (guint i = 0; i < N_RACERS; i++)
    {
      s[i].nap = ws_sleep_new (G_TIME_SPAN_HOUR);
      tasks[i] = ws_runtime_spawn (rt, reset_sleeper_func, &s[i], NULL);
    }
  for (guint i = 0; i < N_RACERS; i++)
    reset_sleeper_wait_awaiting (&s[i]);

  for (guint round = 0; round < 40; round++)
    {
      for (guint i = 0; i < N_RACERS; i++)
        ws_sleep_reset (s[i].nap, g_get_monotonic_time () + g_test_rand_int_range (0, 2000));
      g_usleep (500);
    }

  for (guint i = 0; i < N_RACERS; i++)
    {
      g_assert_cmpint (reset_sleeper_wait_woken (&s[i]), !=, 0);
      g_assert_true (ws_task_wait (tasks[i], NULL, NULL));
      g_object_unref (tasks[i]);
      ws_sleep_unref (s[i].nap);
    }
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ---- cancellation, local tasks, blocking threads ------------------------ */

typedef struct
{
  WsSleep        *nap;
  _Atomic guint   polls;
  _Atomic guint   destroyed;
  _Atomic gint64  woke_at;
  GThread        *ran_on;
} Napper;

static void
napper_destroy (gpointer data)
{
  Napper *n = data;

  g_clear_pointer (&n->nap, ws_sleep_unref);
  atomic_fetch_add (&n->destroyed, 1);
}

static WsPoll
napper_func (WsContext *cx,
             gpointer   data)
{
  Napper *n = data;

  atomic_fetch_add (&n->polls, 1);
  if (ws_sleep_poll (n->nap, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  n->ran_on = g_thread_self ();
  atomic_store (&n->woke_at, g_get_monotonic_time ());
  return WS_POLL_READY;
}

static void
test_cancelled_with_its_task (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  Napper n = { .nap = ws_sleep_new (60 * G_USEC_PER_SEC) };
  g_autoptr(WsTask) task = ws_runtime_spawn (rt, napper_func, &n, napper_destroy);
  g_autoptr(GError) error = NULL;

  ws_test_wait_until (atomic_load (&n.polls) > 0);
  ws_task_cancel (task);
  /* It ends now, not in 60 s (the watchdog would fire first), as
   * cancelled, and its state (the sleep) is dropped: the leak check after
   * the case finds no waker left in a timer. */
  g_assert_false (ws_task_wait (task, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpuint (atomic_load (&n.destroyed), ==, 1);
  g_assert_cmpint (atomic_load (&n.woke_at), ==, 0);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static void
test_in_local_task (void)
{
  WsTestOnContext f;
  Napper n = { .nap = ws_sleep_new (20 * G_TIME_SPAN_MILLISECOND) };
  g_autoptr(WsTask) task = NULL;
  gint64 deadline = ws_sleep_get_deadline (n.nap);

  ws_test_on_context_init (&f, 2);
  task = ws_runtime_spawn_local (f.rt, NULL, napper_func, &n, napper_destroy);
  ws_test_iterate_until (f.ctx, ws_task_is_finished (task));
  g_assert_cmpint (atomic_load (&n.woke_at), >=, deadline);
  g_assert_true (n.ran_on == g_thread_self ());
  g_clear_object (&task);
  ws_test_on_context_clear (&f);
  g_assert_cmpuint (atomic_load (&n.destroyed), ==, 1);
}

static void
do_nothing (gpointer data)
{
}

/* A task that leaves ws_block_in_place () goes on on that thread, now a
 * blocking thread of the runtime, and awaits a sleep there. */
static WsPoll
block_then_nap (WsContext *cx,
                gpointer   data)
{
  Napper *n = data;

  if (n->nap == NULL)
    {
      g_assert_true (ws_block_in_place (do_nothing, NULL, NULL));
      n->nap = ws_sleep_new (20 * G_TIME_SPAN_MILLISECOND);
    }
  return napper_func (cx, data);
}

static void
test_after_block_in_place (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  Napper n = { NULL, };
  g_autoptr(WsTask) task = ws_runtime_spawn (rt, block_then_nap, &n, napper_destroy);

  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_cmpint (atomic_load (&n.woke_at), !=, 0);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_assert_cmpuint (atomic_load (&n.destroyed), ==, 1);
}

/* ---- waiting on a main context ------------------------------------------- */

typedef struct
{
  guint     calls;
  gboolean  ok;
  GError   *error;
  gint64    at;                 /* when the callback ran */
  GThread  *thread;
  WsSleep  *nap;                /* awaited; the wait holds it */
} SleepWaitResult;

static void
sleep_wait_cb (GObject      *object,
               GAsyncResult *result,
               gpointer      data)
{
  SleepWaitResult *r = data;

  r->calls++;
  r->at = g_get_monotonic_time ();
  r->thread = g_thread_self ();
  r->ok = ws_sleep_wait_finish (r->nap, result, &r->error);
}

static void
sleep_wait (WsSleep         *nap,
            GCancellable    *cancellable,
            SleepWaitResult *r)
{
  r->nap = nap;
  ws_sleep_wait_async (nap, cancellable, sleep_wait_cb, r);
}

static void
sleep_for_cb (GObject      *object,
              GAsyncResult *result,
              gpointer      data)
{
  SleepWaitResult *r = data;

  r->calls++;
  r->at = g_get_monotonic_time ();
  r->thread = g_thread_self ();
  r->ok = ws_sleep_for_finish (result, &r->error);
}

/* wait_async and for_async call back on the caller's thread-default
 * context, once, never before the deadline and never from inside the
 * call (also when the deadline has passed already). */
static void
test_wait_async (void)
{
  GMainContext *ctx = g_main_context_new ();
  g_autoptr(WsSleep) nap = ws_sleep_new (30 * G_TIME_SPAN_MILLISECOND);
  g_autoptr(WsSleep) past = ws_sleep_new (0);
  SleepWaitResult a = { 0 }, b = { 0 }, c = { 0 };
  gint64 start;

  g_main_context_push_thread_default (ctx);
  start = g_get_monotonic_time ();
  sleep_wait (nap, NULL, &a);
  ws_sleep_for_async (20 * G_TIME_SPAN_MILLISECOND, NULL, sleep_for_cb, &b);
  sleep_wait (past, NULL, &c);
  g_assert_cmpuint (a.calls + b.calls + c.calls, ==, 0);
  ws_test_iterate_until (ctx, a.calls == 1 && b.calls == 1 && c.calls == 1);
  g_assert_true (a.ok && b.ok && c.ok);
  g_assert_no_error (a.error);
  g_assert_cmpint (a.at, >=, ws_sleep_get_deadline (nap));
  g_assert_cmpint (b.at, >=, start + 20 * G_TIME_SPAN_MILLISECOND);
  g_assert_true (a.thread == g_thread_self () && b.thread == g_thread_self ());
  /* Nothing more comes. */
  while (g_main_context_iteration (ctx, FALSE))
    ;
  g_assert_cmpuint (a.calls + b.calls + c.calls, ==, 3);
  g_main_context_pop_thread_default (ctx);
  g_main_context_unref (ctx);
}

/* A cancel ends a wait an hour long at once with G_IO_ERROR_CANCELLED,
 * from another thread too; an already cancelled cancellable still calls
 * back from the context, not from inside the call. */
static gpointer
cancel_later (gpointer data)
{
  g_usleep (10000);
  g_cancellable_cancel (data);
  return NULL;
}

static void
test_wait_async_cancelled (void)
{
  GMainContext *ctx = g_main_context_new ();
  g_autoptr(WsSleep) nap = ws_sleep_new (G_TIME_SPAN_HOUR);
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  g_autoptr(GCancellable) cancelled = g_cancellable_new ();
  g_autoptr(GThread) canceller = NULL;
  SleepWaitResult a = { 0 }, b = { 0 };

  g_main_context_push_thread_default (ctx);
  g_cancellable_cancel (cancelled);
  ws_sleep_for_async (G_TIME_SPAN_HOUR, cancelled, sleep_for_cb, &b);
  sleep_wait (nap, cancellable, &a);
  g_assert_cmpuint (b.calls, ==, 0);
  canceller = g_thread_new ("canceller", cancel_later, cancellable);
  ws_test_iterate_until (ctx, a.calls == 1 && b.calls == 1);
  g_assert_false (a.ok);
  g_assert_error (a.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_false (b.ok);
  g_assert_error (b.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_thread_join (g_steal_pointer (&canceller));
  g_clear_error (&a.error);
  g_clear_error (&b.error);
  g_main_context_pop_thread_default (ctx);
  g_main_context_unref (ctx);
}

typedef struct
{
  WsSleep        *nap;
  gint64          deadline;
  gint64          delay;      /* before the reset */
  _Atomic gint64  done_at;    /* when the reset returned */
} ResetArgs;

static gpointer
reset_later (gpointer data)
{
  ResetArgs *args = data;

  g_usleep (args->delay);
  ws_sleep_reset (args->nap, args->deadline);
  atomic_store (&args->done_at, g_get_monotonic_time ());
  return NULL;
}

/* A reset from another thread moves a pending wait_async: an hour-long
 * wait moved to 20 ms from now comes then (not in an hour: the watchdog
 * would fire), and a wait moved later comes at the new deadline, not
 * the old one. */
static void
test_wait_async_reset (void)
{
  GMainContext *ctx = g_main_context_new ();
  g_autoptr(WsSleep) hour = ws_sleep_new (G_TIME_SPAN_HOUR);
  g_autoptr(WsSleep) later = ws_sleep_new (20 * G_TIME_SPAN_MILLISECOND);
  g_autoptr(GThread) resetter = NULL;
  SleepWaitResult a = { 0 }, b = { 0 };
  ResetArgs args;
  gint64 later_deadline;

  g_main_context_push_thread_default (ctx);
  sleep_wait (hour, NULL, &a);
  args = (ResetArgs) { hour, g_get_monotonic_time () + 30 * G_TIME_SPAN_MILLISECOND,
                      10 * G_TIME_SPAN_MILLISECOND, 0 };
  resetter = g_thread_new ("resetter", reset_later, &args);
  ws_test_iterate_until (ctx, a.calls == 1);
  g_assert_true (a.ok);
  g_assert_cmpint (a.at, >=, args.deadline);
  g_thread_join (g_steal_pointer (&resetter));

  /* Pending when it is moved: 20 ms from now, then 80. */
  ws_sleep_reset (later, g_get_monotonic_time () + 20 * G_TIME_SPAN_MILLISECOND);
  sleep_wait (later, NULL, &b);
  later_deadline = g_get_monotonic_time () + 80 * G_TIME_SPAN_MILLISECOND;
  ws_sleep_reset (later, later_deadline);
  ws_test_iterate_until (ctx, b.calls == 1);
  g_assert_true (b.ok);
  g_assert_cmpint (b.at, >=, later_deadline);

  g_main_context_pop_thread_default (ctx);
  g_main_context_unref (ctx);
}

static void
keep_result_cb (GObject      *object,
                GAsyncResult *result,
                gpointer      data)
{
  *(GAsyncResult **) data = g_object_ref (result);
}

/* Refused calls: no sleep, and the result of a for_async given to
 * wait_finish. */
static void
test_wait_async_bad_input (void)
{
  g_autoptr(WsSleep) nap = ws_sleep_new (0);
  GMainContext *ctx = g_main_context_new ();
  GAsyncResult *result = NULL;
  SleepWaitResult a = { 0 };

  g_main_context_push_thread_default (ctx);
  WS_TEST_REFUSED (ws_sleep_wait_async, ws_sleep_wait_async (NULL, NULL, sleep_wait_cb, &a));
  ws_sleep_for_async (0, NULL, keep_result_cb, &result);
  ws_test_iterate_until (ctx, result != NULL);
  WS_TEST_REFUSED (ws_sleep_wait_finish, g_assert_false (ws_sleep_wait_finish (nap, result, NULL)));
  g_assert_true (ws_sleep_for_finish (result, NULL));
  g_object_unref (result);
  g_assert_cmpuint (a.calls, ==, 0);
  g_main_context_pop_thread_default (ctx);
  g_main_context_unref (ctx);
}

/* A reset from another thread moves a pending wait earlier (an hour-long
 * wait comes 3 units after it began) and later (a 2-unit wait moved to 10
 * units comes then, not at 2), the resetting threads each starting after
 * one unit. Whether a reset came in time is what the test saw: when the
 * second came after the first deadline of its wait (which may then have
 * come already) or the first after the second's new deadline (the two
 * may then come in either order), the round says so and the next one is
 * twice as long; a unit is 10 ms at first. */
static void
test_wait_async_reset_from_thread (void)
{
  GMainContext *ctx = g_main_context_new ();

  g_main_context_push_thread_default (ctx);
  for (gint64 unit = 10 * G_TIME_SPAN_MILLISECOND;; unit *= 2)
    {
      g_autoptr(WsSleep) earlier = ws_sleep_new (G_TIME_SPAN_HOUR);
      g_autoptr(WsSleep) later = ws_sleep_new (2 * unit);
      gint64 later_first = ws_sleep_get_deadline (later);
      GThread *t1, *t2;
      SleepWaitResult a = { 0 }, b = { 0 };
      ResetArgs early_args, late_args;
      guint a_seq = 0, b_seq = 0;
      gint64 start;

      sleep_wait (earlier, NULL, &a);
      sleep_wait (later, NULL, &b);
      start = g_get_monotonic_time ();
      early_args = (ResetArgs) { earlier, start + 3 * unit, unit, 0 };
      late_args = (ResetArgs) { later, start + 10 * unit, unit, 0 };
      t1 = g_thread_new ("reset-earlier", reset_later, &early_args);
      t2 = g_thread_new ("reset-later", reset_later, &late_args);
      for (guint seq = 1; a.calls == 0 || b.calls == 0; seq++)
        {
          g_main_context_iteration (ctx, TRUE);
          if (a.calls > 0 && a_seq == 0)
            a_seq = seq;
          if (b.calls > 0 && b_seq == 0)
            b_seq = seq;
        }
      g_thread_join (t1);
      g_thread_join (t2);
      g_assert_true (a.ok && b.ok);
      g_assert_cmpuint (a.calls, ==, 1);
      g_assert_cmpuint (b.calls, ==, 1);
      /* Never early, however late the resets came. */
      g_assert_cmpint (a.at, >=, early_args.deadline);
      g_assert_cmpint (b.at, >=, MIN (later_first, late_args.deadline));
      if (atomic_load (&late_args.done_at) >= later_first
          || atomic_load (&early_args.done_at) >= late_args.deadline)
        {
          g_test_message ("unit %" G_GINT64_FORMAT " ms: the resets returned %" G_GINT64_FORMAT
                          " and %" G_GINT64_FORMAT " ms after the start, too late: again",
                          unit / 1000, (atomic_load (&early_args.done_at) - start) / 1000,
                          (atomic_load (&late_args.done_at) - start) / 1000);
          continue;
        }
      /* Moved later before its first deadline: it comes at the new one;
       * moved earlier before the other's new deadline: it comes first
       * (the driver fires due timers in deadline order). */
      g_assert_cmpint (b.at, >=, late_args.deadline);
      g_assert_cmpuint (a_seq, <=, b_seq);
      g_assert_cmpint (a.at, <=, b.at);
      break;
    }
  g_main_context_pop_thread_default (ctx);
  g_main_context_unref (ctx);
}

/* ---- cancel racing the deadline ------------------------------------------ */

#define RACE_ROUNDS 60
#define RACE_WIDTH  8

typedef struct
{
  guint         calls;
  gboolean      ok;
  gboolean      cancelled;
  GCancellable *cancellable;
  gint64        deadline;
  gint64        cancel_at;
  gint64        at;
} RaceWait;

static void
race_cb (GObject      *object,
         GAsyncResult *result,
         gpointer      data)
{
  RaceWait *r = data;
  g_autoptr(GError) error = NULL;

  r->calls++;
  r->at = g_get_monotonic_time ();
  r->ok = ws_sleep_for_finish (result, &error);
  g_assert_true (r->ok == (error == NULL));
  if (error != NULL)
    {
      g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
      r->cancelled = TRUE;
    }
}

static gint
race_by_cancel_at (gconstpointer a,
                   gconstpointer b)
{
  const RaceWait *x = *(RaceWait * const *) a, *y = *(RaceWait * const *) b;

  return (x->cancel_at > y->cancel_at) - (x->cancel_at < y->cancel_at);
}

/* Cancels made by the canceller, and waits handed to it: the queue's
 * GMutex is invisible to TSan, these atomics order the hand-over. */
static _Atomic guint race_n_cancels;
static _Atomic guint race_n_pushed;

/* Cancels each wait pushed, in order, at its cancel_at. */
static gpointer
race_canceller (gpointer data)
{
  GAsyncQueue *queue = data;
  RaceWait *w;
  guint n_popped = 0;

  while ((w = g_async_queue_pop (queue)) != (gpointer) queue)
    {
      ws_test_wait_until (atomic_load (&race_n_pushed) > n_popped);
      n_popped++;
      while (g_get_monotonic_time () < w->cancel_at)
        ;
      g_cancellable_cancel (w->cancellable);
      atomic_fetch_add (&race_n_cancels, 1);
    }
  return NULL;
}

/* Waits whose deadline is about now, cancelled from another thread at
 * about the same moment (within 1.5 ms either way): each calls back
 * exactly once, with TRUE (never before its deadline) or
 * G_IO_ERROR_CANCELLED, never both, never neither. */
static void
test_wait_async_cancel_races_deadline (void)
{
  GMainContext *ctx = g_main_context_new ();
  GAsyncQueue *queue = g_async_queue_new ();
  GThread *canceller = g_thread_new ("canceller", race_canceller, queue);
  guint n_ok = 0, n_cancelled = 0;

  atomic_store (&race_n_cancels, 0);
  atomic_store (&race_n_pushed, 0);
  g_main_context_push_thread_default (ctx);
  for (guint round = 0; round < RACE_ROUNDS; round++)
    {
      RaceWait w[RACE_WIDTH] = { { 0 } };
      RaceWait *order[RACE_WIDTH];
      gint64 now = g_get_monotonic_time (), until;
      guint done;

      for (guint i = 0; i < RACE_WIDTH; i++)
        {
          gint64 duration = g_random_int_range (200, 1500);

          w[i].cancellable = g_cancellable_new ();
          w[i].deadline = g_get_monotonic_time () + duration;
          w[i].cancel_at = now + g_random_int_range (0, 3000);
          ws_sleep_for_async (duration, w[i].cancellable, race_cb, &w[i]);
          order[i] = &w[i];
        }
      qsort (order, RACE_WIDTH, sizeof order[0], race_by_cancel_at);
      for (guint i = 0; i < RACE_WIDTH; i++)
        {
          atomic_fetch_add (&race_n_pushed, 1);
          g_async_queue_push (queue, order[i]);
        }
      do
        {
          g_main_context_iteration (ctx, TRUE);
          done = 0;
          for (guint i = 0; i < RACE_WIDTH; i++)
            done += w[i].calls;
        }
      while (done < RACE_WIDTH);
      /* Every cancel was made (the canceller is done with this round's
       * waits), and nothing more comes: no second callback. */
      ws_test_wait_until (atomic_load (&race_n_cancels) == (round + 1) * RACE_WIDTH);
      until = g_get_monotonic_time () + 3 * G_TIME_SPAN_MILLISECOND;
      while (g_get_monotonic_time () < until)
        g_main_context_iteration (ctx, FALSE);
      for (guint i = 0; i < RACE_WIDTH; i++)
        {
          g_assert_cmpuint (w[i].calls, ==, 1);
          g_assert_true (w[i].ok != w[i].cancelled);
          if (w[i].ok)
            g_assert_cmpint (w[i].at, >=, w[i].deadline);
          n_ok += w[i].ok;
          n_cancelled += w[i].cancelled;
        }
      for (guint i = 0; i < RACE_WIDTH; i++)
        g_object_unref (w[i].cancellable);
    }
  g_async_queue_push (queue, queue);
  g_thread_join (canceller);
  g_async_queue_unref (queue);
  g_test_message ("%u waits came due, %u were cancelled", n_ok, n_cancelled);
  g_assert_cmpuint (n_ok + n_cancelled, ==, RACE_ROUNDS * RACE_WIDTH);
  g_main_context_pop_thread_default (ctx);
  g_main_context_unref (ctx);
}

/* One waiter per sleep at a time: a second wait_async of the same sleep
 * takes it over; the first fails with WS_ERROR_FAILED at once (it does
 * not hang), the second comes at the deadline. A poll that finds the
 * sleep ready ends a pending wait with TRUE. */
static void
test_wait_async_taken_over (void)
{
  GMainContext *ctx = g_main_context_new ();
  g_autoptr(WsSleep) nap = ws_sleep_new (G_TIME_SPAN_HOUR);
  SleepWaitResult a = { 0 }, b = { 0 };
  gint64 deadline;

  g_main_context_push_thread_default (ctx);
  sleep_wait (nap, NULL, &a);
  sleep_wait (nap, NULL, &b);
  /* Not from inside the call. */
  g_assert_cmpuint (a.calls, ==, 0);
  ws_test_iterate_until (ctx, a.calls == 1);
  g_assert_false (a.ok);
  g_assert_error (a.error, WS_ERROR, WS_ERROR_FAILED);
  g_assert_cmpuint (b.calls, ==, 0);
  deadline = g_get_monotonic_time () + 20 * G_TIME_SPAN_MILLISECOND;
  ws_sleep_reset (nap, deadline);
  ws_test_iterate_until (ctx, b.calls == 1);
  g_assert_true (b.ok);
  g_assert_no_error (b.error);
  g_assert_cmpint (b.at, >=, deadline);
  g_clear_error (&a.error);
  g_main_context_pop_thread_default (ctx);
  g_main_context_unref (ctx);
}

/* ---- many waits on one context -------------------------------------------- */

#define MANY_WAITS 10000
#define MANY_WAITS_SPREAD (500 * G_TIME_SPAN_MILLISECOND)

typedef struct
{
  gint64 *deadlines;
  gint64  prev_deadline;          /* of the last one that came */
  gint64  max_inversion;
  gint64  max_late;
  guint   n_done;
  guint   n_early;
} ManyWaits;

typedef struct
{
  ManyWaits *m;
  guint      i;
  WsSleep   *nap;                 /* the wait's reference keeps it */
} ManyWait;

static void
many_wait_cb (GObject      *object,
              GAsyncResult *result,
              gpointer      data)
{
  ManyWait *w = data;
  ManyWaits *m = w->m;
  gint64 now = g_get_monotonic_time ();
  gint64 deadline = m->deadlines[w->i];

  g_assert_true (ws_sleep_wait_finish (w->nap, result, NULL));
  if (now < deadline)
    m->n_early++;
  m->max_late = MAX (m->max_late, now - deadline);
  m->max_inversion = MAX (m->max_inversion, m->prev_deadline - deadline);
  m->prev_deadline = MAX (m->prev_deadline, deadline);
  m->n_done++;
  g_free (w);
}

/* 10,000 waits pending on one context are 10,000 timers of its driver
 * (no source each), and come in the order of their deadlines, none
 * early: the driver fires due timers in deadline order, a tick at a time,
 * however late this thread iterates the context. Each deadline is set
 * exactly (ws_sleep_new_deadline), not from a second read of the clock. */
static void
test_wait_async_many_in_deadline_order (void)
{
  GMainContext *ctx = g_main_context_new ();
  WsTimerDriver *driver;
  ManyWaits m = { 0 };
  gint64 setup;

  m.deadlines = g_new (gint64, MANY_WAITS);
  g_main_context_push_thread_default (ctx);
  driver = ws_timer_driver_ref_for_current_thread ();
  setup = g_get_monotonic_time ();
  for (guint i = 0; i < MANY_WAITS; i++)
    {
      ManyWait *w = g_new (ManyWait, 1);
      gint64 duration = 50 * G_TIME_SPAN_MILLISECOND
                        + g_random_int_range (0, MANY_WAITS_SPREAD);
      WsSleep *nap;

      w->m = &m;
      w->i = i;
      m.deadlines[i] = g_get_monotonic_time () + duration;
      nap = ws_sleep_new_deadline (m.deadlines[i]);
      w->nap = nap;
      ws_sleep_wait_async (nap, NULL, many_wait_cb, w);
      ws_sleep_unref (nap);
    }
  setup = g_get_monotonic_time () - setup;
  /* Every wait is a timer (unless the setup took 50 ms, under valgrind). */
  if (setup < 50 * G_TIME_SPAN_MILLISECOND)
    g_assert_cmpuint (ws_timer_driver_get_n_timers (driver), ==, MANY_WAITS);
  ws_test_iterate_until (ctx, m.n_done == MANY_WAITS);
  g_test_message ("%u waits: set up in %" G_GINT64_FORMAT " ms, latest end %" G_GINT64_FORMAT
                  " ms after its deadline; largest order inversion %" G_GINT64_FORMAT " us",
                  MANY_WAITS, setup / 1000, m.max_late / 1000, m.max_inversion);
  g_assert_cmpuint (m.n_early, ==, 0);
  /* The wheel's tick is 1 ms: within a tick the order is free. */
  g_assert_cmpint (m.max_inversion, <=, 2 * G_TIME_SPAN_MILLISECOND);
  g_assert_cmpuint (ws_timer_driver_get_n_timers (driver), ==, 0);
  ws_timer_driver_unref (driver);
  g_free (m.deadlines);
  g_main_context_pop_thread_default (ctx);
  g_main_context_unref (ctx);
}

/* The wait holds its sleep until it ends, however it ends, and then lets
 * it go: the caller may drop the sleep at once, and the fixture's leak
 * check (a wait counts as a live waker until it is freed, and it holds
 * the sleep until then) finds nothing left after each way of ending. */
static void
test_wait_async_frees_sleep (void)
{
  GMainContext *ctx = g_main_context_new ();
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  WsSleep *due = ws_sleep_new (10 * G_TIME_SPAN_MILLISECOND);
  WsSleep *cancelled = ws_sleep_new (G_TIME_SPAN_HOUR);
  WsSleep *shared = ws_sleep_new (G_TIME_SPAN_HOUR);
  SleepWaitResult a = { 0 }, b = { 0 }, c = { 0 }, d = { 0 };

  g_main_context_push_thread_default (ctx);
  sleep_wait (due, NULL, &a);
  sleep_wait (cancelled, cancellable, &b);
  sleep_wait (shared, NULL, &c);
  sleep_wait (shared, NULL, &d);
  /* The caller's references go: the waits hold the sleeps. */
  ws_sleep_unref (due);
  ws_sleep_unref (cancelled);
  g_cancellable_cancel (cancellable);
  ws_sleep_reset (shared, g_get_monotonic_time () + 5 * G_TIME_SPAN_MILLISECOND);
  ws_sleep_unref (shared);
  ws_test_iterate_until (ctx, a.calls + b.calls + c.calls + d.calls == 4);
  g_assert_true (a.ok);
  g_assert_error (b.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_error (c.error, WS_ERROR, WS_ERROR_FAILED);
  g_assert_true (d.ok);
  g_clear_error (&b.error);
  g_clear_error (&c.error);
  g_main_context_pop_thread_default (ctx);
  g_main_context_unref (ctx);
  if (ws_test_have_leak_counters ())
    g_assert_cmpint (ws_waker_get_n_live (), ==, 0);
  else
    ws_test_skip_leak_check ();
}

/* ---- many sleeps --------------------------------------------------------- */

/* The tasks are spawned and await sleeps an hour away; the main thread
 * then moves every deadline into a window (in random order, as the tasks
 * were spawned). None may end before its deadline, every one ends, and
 * the test reports how far from deadline order the ends came
 * (WsTestSleepers in ws-test-fixture.h). 10,000 here (also under
 * valgrind); a million in the stress suite (test-stress,
 * /stress/million-sleeps). */
#define MANY 10000
#define SPREAD_USEC (2 * G_USEC_PER_SEC)

static void
test_many_in_deadline_order (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  WsTestSleepers *m = ws_test_sleepers_new (MANY);

  ws_test_sleepers_run (m, rt, SPREAD_USEC);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  ws_test_sleepers_free (m);
}

/* More timers due at one tick than a worker's local queue holds, on the
 * only worker, whose queue is kept full by tasks that yield: a dispatch
 * there expires only what the queue has room for, at least one timer
 * (ws-timer-driver.c, D9), and leaves the rest due in the wheel. Every
 * sleep still ends (a timer left behind and never expired is a hang the
 * watchdog reports), none before its deadline. */
#define DUE_AT_ONCE 2000
#define BUSY_YIELDERS 512

typedef struct
{
  WsRuntime        *rt;
  gint64            deadline;
  _Atomic gboolean  stop;
  _Atomic guint     n_done;
  _Atomic guint     n_early;
} DueAtOnce;

typedef struct
{
  DueAtOnce *shared;
  WsSleep   *nap;
} DueSleeper;

static void
due_sleeper_free (gpointer data)
{
  DueSleeper *d = data;

  g_clear_pointer (&d->nap, ws_sleep_unref);
  g_free (d);
}

static WsPoll
due_sleeper_func (WsContext *cx,
                  gpointer   data)
{
  DueSleeper *d = data;

  if (d->nap == NULL)
    d->nap = ws_sleep_new_deadline (d->shared->deadline);
  if (ws_sleep_poll (d->nap, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  if (g_get_monotonic_time () < d->shared->deadline)
    atomic_fetch_add (&d->shared->n_early, 1);
  atomic_fetch_add (&d->shared->n_done, 1);
  return WS_POLL_READY;
}

static WsPoll
busy_yielder (WsContext *cx,
              gpointer   data)
{
  DueAtOnce *shared = data;

  if (atomic_load (&shared->stop))
    return WS_POLL_READY;
  return ws_context_yield (cx);
}

/* Runs on the worker: its spawns go to the worker's own queue. */
static WsPoll
due_at_once_root (WsContext *cx,
                  gpointer   data)
{
  DueAtOnce *shared = data;

  shared->deadline = g_get_monotonic_time () + 20 * G_TIME_SPAN_MILLISECOND;
  for (guint i = 0; i < BUSY_YIELDERS; i++)
    ws_runtime_spawn_detached (shared->rt, busy_yielder, shared, NULL);
  for (guint i = 0; i < DUE_AT_ONCE; i++)
    {
      DueSleeper *d = g_new0 (DueSleeper, 1);

      d->shared = shared;
      ws_runtime_spawn_detached (shared->rt, due_sleeper_func, d, due_sleeper_free);
    }
  return WS_POLL_READY;
}

static void
test_many_due_at_once_on_busy_worker (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  DueAtOnce shared = { .rt = rt };

  ws_runtime_spawn_detached (rt, due_at_once_root, &shared, NULL);
  ws_test_wait_until (atomic_load (&shared.n_done) == DUE_AT_ONCE);
  g_assert_cmpuint (atomic_load (&shared.n_early), ==, 0);
  atomic_store (&shared.stop, TRUE);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ws_sleep_race: a task awaits a child with a deadline. A child that
 * never ends loses (a 20 ms deadline): the race reports the timeout, the
 * parent cancels it, and its destroy notify runs. A child that ends at
 * once wins (a deadline an hour away, so that a loaded machine cannot
 * make it lose): no timeout, and its result is read. A NULL deadline
 * never times out. */
typedef struct
{
  WsSleep      *deadline;
  WsJoinHandle *child;
  gboolean      child_forever;
  gboolean      timed_out;
  guint64       value;
} Racer;

static WsPoll
never_ends (WsContext *cx,
            gpointer   data)
{
  return WS_POLL_PENDING;       /* no waker: only a cancel ends it */
}

static WsPoll
ends_at_once (WsContext *cx,
              gpointer   data)
{
  ws_context_return_uint64 (cx, 42);
  return WS_POLL_READY;
}

static WsPoll
race_child (WsContext *cx,
            gpointer   data)
{
  Racer *r = data;

  if (r->child == NULL)
    r->child = ws_context_spawn (cx, r->child_forever ? never_ends : ends_at_once,
                                 NULL, ws_test_count_destroy);
  if (ws_sleep_race (r->deadline, cx, ws_join_handle_poll (r->child, cx),
                     &r->timed_out) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  if (r->timed_out)
    {
      ws_join_handle_cancel (r->child);
      ws_join_handle_free (r->child);
    }
  else
    g_assert_true (ws_join_handle_finish_uint64 (r->child, &r->value, NULL));
  r->child = NULL;
  return WS_POLL_READY;
}

static void
test_race (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);

  for (guint forever = 0; forever < 2; forever++)
    {
      Racer r = { .child_forever = forever };
      g_autoptr(WsTask) task = NULL;
      gint64 start = g_get_monotonic_time ();

      ws_test_reset_counters ();
      r.deadline = ws_sleep_new (forever ? 20 * G_TIME_SPAN_MILLISECOND : G_TIME_SPAN_HOUR);
      task = ws_runtime_spawn (rt, race_child, &r, NULL);
      g_assert_true (ws_task_wait (task, NULL, NULL));
      g_assert_cmpint (r.timed_out, ==, forever);
      if (forever)
        {
          /* Never before the deadline; the loser was cancelled. */
          g_assert_cmpint (g_get_monotonic_time () - start, >=, 20 * G_TIME_SPAN_MILLISECOND);
          ws_test_wait_until (atomic_load (&ws_test_n_destroyed) == 1);
        }
      else
        {
          g_assert_cmpuint (r.value, ==, 42);
        }
      ws_sleep_unref (r.deadline);
    }

  /* No deadline: the operation decides alone. */
  {
    Racer r = { .child_forever = FALSE };
    g_autoptr(WsTask) task = ws_runtime_spawn (rt, race_child, &r, NULL);

    g_assert_true (ws_task_wait (task, NULL, NULL));
    g_assert_false (r.timed_out);
    g_assert_cmpuint (r.value, ==, 42);
  }
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

WS_TEST_MAIN ({ "/sleep/in-deadline-order", test_in_deadline_order },
              { "/sleep/race", test_race },
              { "/sleep/reset-earlier-from-another-thread", test_reset_earlier_from_another_thread },
              { "/sleep/reset-later-then-earlier", test_reset_later_then_earlier },
              { "/sleep/reset-to-past-from-another-thread", test_reset_to_past_from_another_thread },
              { "/sleep/reset-races-timers", test_reset_races_timers },
              { "/sleep/cancelled-with-its-task", test_cancelled_with_its_task },
              { "/sleep/in-local-task", test_in_local_task },
              { "/sleep/after-block-in-place", test_after_block_in_place },
              { "/sleep/many-in-deadline-order", test_many_in_deadline_order },
              { "/sleep/many-due-at-once-on-busy-worker", test_many_due_at_once_on_busy_worker },
              { "/sleep/wait-async", test_wait_async },
              { "/sleep/wait-async-cancelled", test_wait_async_cancelled },
              { "/sleep/wait-async-reset", test_wait_async_reset },
              { "/sleep/wait-async-bad-input", test_wait_async_bad_input },
              { "/sleep/wait-async-reset-from-thread", test_wait_async_reset_from_thread },
              { "/sleep/wait-async-cancel-races-deadline", test_wait_async_cancel_races_deadline },
              { "/sleep/wait-async-taken-over", test_wait_async_taken_over },
              { "/sleep/wait-async-many-in-deadline-order", test_wait_async_many_in_deadline_order },
              { "/sleep/wait-async-frees-sleep", test_wait_async_frees_sleep })
