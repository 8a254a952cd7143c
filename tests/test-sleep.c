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
 * order of their deadlines, none early. On a main context, wait_async
 * and for_async call back on the caller's context, never early, never
 * from inside the call; a cancel ends them at once, and a reset from
 * another thread moves them as it moves a poll.
 */

#include "config.h"

#include "ws-test-fixture.h"

#include <gio/gio.h>

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
  /* From one base, 50 ms apart, the first 250 ms away: the first spawn
   * starts the workers, which takes tens of milliseconds under valgrind. */
  const guint ms[] = { 450, 250, 400, 300, 350 };
  const guint expect[] = { 1, 3, 4, 2, 0 };
  gint64 base = g_get_monotonic_time ();
  WsTask *tasks[G_N_ELEMENTS (ms)];
  WsLock lock;
  g_autoptr(GArray) order = g_array_new (FALSE, FALSE, sizeof (guint));

  ws_lock_init (&lock);
  for (guint i = 0; i < G_N_ELEMENTS (ms); i++)
    {
      Sleeper *s = g_new0 (Sleeper, 1);

      s->nap = ws_sleep_new_deadline (base + ms[i] * G_TIME_SPAN_MILLISECOND);
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
} SleepWaitResult;

static void
sleep_wait_cb (GObject      *object,
               GAsyncResult *result,
               gpointer      data)
{
  SleepWaitResult *r = data;
  WsSleep *nap = g_task_get_task_data (G_TASK (result));

  r->calls++;
  r->at = g_get_monotonic_time ();
  r->thread = g_thread_self ();
  r->ok = ws_sleep_wait_finish (nap, result, &r->error);
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
  ws_sleep_wait_async (nap, NULL, sleep_wait_cb, &a);
  ws_sleep_for_async (20 * G_TIME_SPAN_MILLISECOND, NULL, sleep_for_cb, &b);
  ws_sleep_wait_async (past, NULL, sleep_wait_cb, &c);
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
  ws_sleep_wait_async (nap, cancellable, sleep_wait_cb, &a);
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
  WsSleep *nap;
  gint64   deadline;
} ResetArgs;

static gpointer
reset_later (gpointer data)
{
  ResetArgs *args = data;

  g_usleep (10000);
  ws_sleep_reset (args->nap, args->deadline);
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
  ws_sleep_wait_async (hour, NULL, sleep_wait_cb, &a);
  args.nap = hour;
  args.deadline = g_get_monotonic_time () + 30 * G_TIME_SPAN_MILLISECOND;
  resetter = g_thread_new ("resetter", reset_later, &args);
  ws_test_iterate_until (ctx, a.calls == 1);
  g_assert_true (a.ok);
  g_assert_cmpint (a.at, >=, args.deadline);
  g_thread_join (g_steal_pointer (&resetter));

  ws_sleep_wait_async (later, NULL, sleep_wait_cb, &b);
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

/* ---- many sleeps --------------------------------------------------------- */

/* The tasks are spawned and await sleeps an hour away; the main thread
 * then moves every deadline into a window (in random order, as the tasks
 * were spawned), starting once all resets can have been made. Each task
 * records when it saw its sleep ready and in which order it ended. None
 * may end before its deadline, and no task may end after one whose
 * deadline is more than a tenth of the window later than its own.
 * 10,000 here (also under valgrind); a million in the stress suite
 * (test-stress, /stress/million-sleeps). */
#define MANY 10000
#define SPREAD_USEC (2 * G_USEC_PER_SEC)

static void
test_many_in_deadline_order (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  WsTestSleepers *m = ws_test_sleepers_new (MANY);

  ws_test_sleepers_run (m, rt, SPREAD_USEC);
  g_assert_cmpint (m->max_inversion, <=, m->spread / 10);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  ws_test_sleepers_free (m);
}

WS_TEST_MAIN ({ "/sleep/in-deadline-order", test_in_deadline_order },
              { "/sleep/reset-earlier-from-another-thread", test_reset_earlier_from_another_thread },
              { "/sleep/reset-later-then-earlier", test_reset_later_then_earlier },
              { "/sleep/reset-to-past-from-another-thread", test_reset_to_past_from_another_thread },
              { "/sleep/reset-races-timers", test_reset_races_timers },
              { "/sleep/cancelled-with-its-task", test_cancelled_with_its_task },
              { "/sleep/in-local-task", test_in_local_task },
              { "/sleep/after-block-in-place", test_after_block_in_place },
              { "/sleep/many-in-deadline-order", test_many_in_deadline_order },
              { "/sleep/wait-async", test_wait_async },
              { "/sleep/wait-async-cancelled", test_wait_async_cancelled },
              { "/sleep/wait-async-reset", test_wait_async_reset },
              { "/sleep/wait-async-bad-input", test_wait_async_bad_input })
