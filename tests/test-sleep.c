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

#include "ws-timer-driver-private.h"

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

  /* Pending when it is moved: 20 ms from now, then 80. */
  ws_sleep_reset (later, g_get_monotonic_time () + 20 * G_TIME_SPAN_MILLISECOND);
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

/* A reset from another thread moves a pending wait earlier (an hour-long
 * wait comes 30 ms after it began) and later (a 20 ms wait moved to
 * 100 ms comes then, not at 20 ms). */
static void
test_wait_async_reset_from_thread (void)
{
  GMainContext *ctx = g_main_context_new ();
  g_autoptr(WsSleep) earlier = ws_sleep_new (G_TIME_SPAN_HOUR);
  g_autoptr(WsSleep) later = ws_sleep_new (20 * G_TIME_SPAN_MILLISECOND);
  g_autoptr(GThread) t1 = NULL;
  g_autoptr(GThread) t2 = NULL;
  SleepWaitResult a = { 0 }, b = { 0 };
  ResetArgs early_args, late_args;
  gint64 start;

  g_main_context_push_thread_default (ctx);
  ws_sleep_wait_async (earlier, NULL, sleep_wait_cb, &a);
  ws_sleep_wait_async (later, NULL, sleep_wait_cb, &b);
  start = g_get_monotonic_time ();
  early_args.nap = earlier;
  early_args.deadline = start + 30 * G_TIME_SPAN_MILLISECOND;
  late_args.nap = later;
  late_args.deadline = start + 100 * G_TIME_SPAN_MILLISECOND;
  /* Each resets 10 ms from now: before the 20 ms deadline of `later`. */
  t1 = g_thread_new ("reset-earlier", reset_later, &early_args);
  t2 = g_thread_new ("reset-later", reset_later, &late_args);
  ws_test_iterate_until (ctx, a.calls == 1 && b.calls == 1);
  g_assert_true (a.ok && b.ok);
  g_assert_cmpint (a.at, >=, early_args.deadline);
  g_assert_cmpint (a.at, <, start + 30 * G_TIME_SPAN_SECOND);
  g_assert_cmpint (b.at, >=, late_args.deadline);
  g_assert_cmpint (a.at, <, b.at);
  g_thread_join (g_steal_pointer (&t1));
  g_thread_join (g_steal_pointer (&t2));
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
  ws_sleep_wait_async (nap, NULL, sleep_wait_cb, &a);
  ws_sleep_wait_async (nap, NULL, sleep_wait_cb, &b);
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

  g_assert_true (ws_sleep_for_finish (result, NULL));
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
 * early. */
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

      w->m = &m;
      w->i = i;
      m.deadlines[i] = g_get_monotonic_time () + duration;
      ws_sleep_for_async (duration, NULL, many_wait_cb, w);
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
  ws_sleep_wait_async (due, NULL, sleep_wait_cb, &a);
  ws_sleep_wait_async (cancelled, cancellable, sleep_wait_cb, &b);
  ws_sleep_wait_async (shared, NULL, sleep_wait_cb, &c);
  ws_sleep_wait_async (shared, NULL, sleep_wait_cb, &d);
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
    g_assert_cmpint (ws_raw_task_get_n_live_wakers (), ==, 0);
  else
    ws_test_skip_leak_check ();
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
              { "/sleep/wait-async-bad-input", test_wait_async_bad_input },
              { "/sleep/wait-async-reset-from-thread", test_wait_async_reset_from_thread },
              { "/sleep/wait-async-cancel-races-deadline", test_wait_async_cancel_races_deadline },
              { "/sleep/wait-async-taken-over", test_wait_async_taken_over },
              { "/sleep/wait-async-many-in-deadline-order", test_wait_async_many_in_deadline_order },
              { "/sleep/wait-async-frees-sleep", test_wait_async_frees_sleep })
