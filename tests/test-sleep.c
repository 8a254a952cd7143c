/* test-sleep.c: WsSleep, timers with a deadline that can be reset
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Sleeps end in deadline order, never early; a reset from another thread
 * while a task awaits the sleep carries the task's waker to the new
 * deadline (earlier, later then earlier, in the past), and resets racing
 * the timers never lose a wake.
 */

#include "config.h"

#include "ws-test-fixture.h"

typedef struct
{
  WsSleep *nap;
  guint    id;
  WsLock  *lock;
  GArray  *order;
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
    return WS_POLL_PENDING;
  g_assert_cmpint (g_get_monotonic_time (), >=, ws_sleep_get_deadline (s->nap));
  ws_lock_lock (s->lock);
  g_array_append_val (s->order, s->id);
  ws_lock_unlock (s->lock);
  return WS_POLL_READY;
}

static void
test_in_deadline_order (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  const guint ms[] = { 50, 10, 40, 20, 30 };
  const guint expect[] = { 1, 3, 4, 2, 0 };
  WsTask *tasks[G_N_ELEMENTS (ms)];
  WsLock lock;
  g_autoptr(GArray) order = g_array_new (FALSE, FALSE, sizeof (guint));

  ws_lock_init (&lock);
  for (guint i = 0; i < G_N_ELEMENTS (ms); i++)
    {
      Sleeper *s = g_new0 (Sleeper, 1);

      s->nap = ws_sleep_new (ms[i] * 1000);
      s->id = i;
      s->lock = &lock;
      s->order = order;
      tasks[i] = ws_runtime_spawn (rt, sleeper_func, s, sleeper_free);
    }
  ws_test_wait_all (tasks, G_N_ELEMENTS (tasks));
  g_assert_cmpuint (order->len, ==, G_N_ELEMENTS (ms));
  for (guint i = 0; i < G_N_ELEMENTS (ms); i++)
    g_assert_cmpuint (g_array_index (order, guint, i), ==, expect[i]);
  ws_lock_clear (&lock);
  g_assert_true (ws_runtime_shutdown (rt, -1));
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

/* Waits until the task saw the sleep ready, for at most 5 s: far more than
 * the deadlines the tests set, far less than the 10 s they reset away
 * from. Returns when it woke, or 0. */
static gint64
reset_sleeper_wait_woken (ResetSleeper *s)
{
  (void) ws_test_wait_until_for (atomic_load (&s->woke_at) != 0, 5 * G_USEC_PER_SEC);
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

  reset_test_start (&t, 10 * G_USEC_PER_SEC);
  reset_test_finish_at (&t, g_get_monotonic_time () + 50 * G_TIME_SPAN_MILLISECOND);
}

static void
test_reset_later_then_earlier (void)
{
  ResetTest t;
  gint64 first;

  reset_test_start (&t, 100 * G_TIME_SPAN_MILLISECOND);
  first = ws_sleep_get_deadline (t.s.nap);
  ws_sleep_reset (t.s.nap, g_get_monotonic_time () + 10 * G_USEC_PER_SEC);
  /* The first deadline passes: the task may be woken, but the sleep it
   * awaits is not ready. */
  while (g_get_monotonic_time () < first + 100 * G_TIME_SPAN_MILLISECOND)
    g_usleep (10 * 1000);
  g_assert_cmpint (atomic_load (&t.s.woke_at), ==, 0);

  reset_test_finish_at (&t, g_get_monotonic_time () + 50 * G_TIME_SPAN_MILLISECOND);
}

static void
test_reset_to_past_from_another_thread (void)
{
  ResetTest t;
  gint64 reset_at;
  gint64 woke_at;

  reset_test_start (&t, 10 * G_USEC_PER_SEC);
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
      s[i].nap = ws_sleep_new (10 * G_USEC_PER_SEC);
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

WS_TEST_MAIN ({ "/sleep/in-deadline-order", test_in_deadline_order },
              { "/sleep/reset-earlier-from-another-thread", test_reset_earlier_from_another_thread },
              { "/sleep/reset-later-then-earlier", test_reset_later_then_earlier },
              { "/sleep/reset-to-past-from-another-thread", test_reset_to_past_from_another_thread },
              { "/sleep/reset-races-timers", test_reset_races_timers })
