/* test-async.c: local tasks, completion delivery, timers, GIO awaitables,
 * channels, task groups, coroutine macros, the cooperative budget
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <gio/gio.h>

#include "ws-test-util.h"
#include "wsrt.h"
#include "ws-lock-private.h"   /* POSIX locks: visible to TSan, unlike GMutex */
#include "ws-local-executor-private.h"

/* ---- local tasks: every poll and the destroy notify on the owner ---- */

typedef struct
{
  GThread *owner;
  WsRuntime *rt;
  guint    polls;
  gboolean wrong_thread;
  GThread *destroy_thread;
  WsWaker *_Atomic waker;
} Local;

static void
local_destroy (gpointer data)
{
  ((Local *) data)->destroy_thread = g_thread_self ();
}

static WsPoll
wake_from_worker (WsContext *cx,
                  gpointer   data)
{
  Local *l = data;
  WsWaker *w = atomic_exchange (&l->waker, NULL);

  ws_waker_wake (w);
  ws_waker_unref (w);
  return WS_POLL_READY;
}

static WsPoll
local_woken_by_worker (WsContext *cx,
                       gpointer   data)
{
  Local *l = data;

  if (g_thread_self () != l->owner)
    l->wrong_thread = TRUE;
  if (l->polls++ == 0)
    {
      atomic_store (&l->waker, ws_context_get_waker (cx));
      ws_runtime_spawn_detached (l->rt, wake_from_worker, l, NULL);
      return WS_POLL_PENDING;
    }
  return WS_POLL_READY;
}

static void
test_local_wake_from_worker (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GMainContext) ctx = g_main_context_new ();
  Local l = { .owner = g_thread_self (), .rt = rt };
  g_autoptr(WsTask) task = NULL;

  g_main_context_push_thread_default (ctx);
  task = ws_runtime_spawn_local (rt, NULL, local_woken_by_worker, &l, local_destroy);
  ws_test_iterate_until (ctx, ws_task_is_finished (task));
  g_assert_cmpuint (l.polls, ==, 2);
  g_assert_false (l.wrong_thread);
  g_assert_true (l.destroy_thread == l.owner);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_main_context_pop_thread_default (ctx);
}

static WsPoll
local_pending_forever (WsContext *cx,
                       gpointer   data)
{
  Local *l = data;

  if (g_thread_self () != l->owner)
    l->wrong_thread = TRUE;
  l->polls++;
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
test_local_cancel_from_worker (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GMainContext) ctx = g_main_context_new ();
  Local l = { .owner = g_thread_self (), .rt = rt };
  g_autoptr(WsTask) task = NULL;
  g_autoptr(WsTask) canceller = NULL;
  g_autoptr(GError) error = NULL;

  g_main_context_push_thread_default (ctx);
  task = ws_runtime_spawn_local (rt, ctx, local_pending_forever, &l, local_destroy);
  ws_test_iterate_until (ctx, l.polls == 1);

  canceller = ws_runtime_spawn (rt, cancel_from_worker, g_object_ref (task), g_object_unref);
  g_assert_true (ws_task_wait (canceller, NULL, NULL));
  /* Cancelled on a worker, destroyed here, at the next dispatch. */
  g_assert_null (l.destroy_thread);
  ws_test_iterate_until (ctx, ws_task_is_finished (task));
  g_assert_true (l.destroy_thread == l.owner);
  g_assert_false (l.wrong_thread);
  g_assert_cmpuint (l.polls, ==, 1);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_main_context_pop_thread_default (ctx);
}

/* A flood of local tasks: each dispatch returns after a bounded slice, so
 * a timeout on the same context keeps firing. */
static _Atomic guint flood_done;

static WsPoll
flood_task (WsContext *cx,
            gpointer   data)
{
  atomic_fetch_add (&flood_done, 1);
  return WS_POLL_READY;
}

static gboolean
count_tick (gpointer data)
{
  (*(guint *) data)++;
  return G_SOURCE_CONTINUE;
}

static void
test_local_flood_bounded (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(GMainContext) ctx = g_main_context_new ();
  GSource *timer = g_timeout_source_new (16);
  guint ticks = 0;
  guint dispatches = 0;

  g_main_context_push_thread_default (ctx);
  g_source_set_callback (timer, count_tick, &ticks, NULL);
  g_source_attach (timer, ctx);

  atomic_store (&flood_done, 0);
  atomic_store (&ws_local_executor_max_slice_polls, 0);
  for (guint i = 0; i < 100000; i++)
    ws_runtime_spawn_local_detached (rt, ctx, flood_task, NULL, NULL);

  while (atomic_load (&flood_done) < 100000)
    {
      g_main_context_iteration (ctx, TRUE);
      dispatches++;
    }
  /* No dispatch ran more than the poll cap, so control returned to the
   * main loop at least 100000 / cap times. */
  g_assert_cmpuint (atomic_load (&ws_local_executor_max_slice_polls), <=, WS_LOCAL_SLICE_MAX_POLLS);
  g_assert_cmpuint (dispatches, >=, 100000 / WS_LOCAL_SLICE_MAX_POLLS);
  g_test_message ("100000 local tasks in %u main-loop iterations; timer fired %u times",
                  dispatches, ticks);
  /* And the timer still fires. */
  ws_test_iterate_until (ctx, ticks > 0);

  g_source_destroy (timer);
  g_source_unref (timer);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_main_context_pop_thread_default (ctx);
}

typedef struct
{
  guint during_flood;
} RedrawCount;

static gboolean
count_redraw (gpointer data)
{
  RedrawCount *rc = data;

  if (atomic_load (&flood_done) < 100000)
    rc->during_flood++;
  return G_SOURCE_CONTINUE;
}

/* GTK paints from a source at GDK_PRIORITY_REDRAW (G_PRIORITY_HIGH_IDLE +
 * 20), below G_PRIORITY_DEFAULT, when a frame is due. GLib dispatches only
 * the highest ready priority, so a backlog of local tasks must not keep the
 * executor's source ready at DEFAULT: a 1 ms timer at redraw priority (a
 * stand-in for the frame clock) runs during the flood. */
static void
test_local_flood_lets_redraw_run (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(GMainContext) ctx = g_main_context_new ();
  GSource *redraw = g_timeout_source_new (1);
  RedrawCount rc = { 0 };

  g_main_context_push_thread_default (ctx);
  g_source_set_priority (redraw, G_PRIORITY_HIGH_IDLE + 20);
  g_source_set_callback (redraw, count_redraw, &rc, NULL);
  g_source_attach (redraw, ctx);

  atomic_store (&flood_done, 0);
  for (guint i = 0; i < 100000; i++)
    ws_runtime_spawn_local_detached (rt, ctx, flood_task, NULL, NULL);
  while (atomic_load (&flood_done) < 100000)
    g_main_context_iteration (ctx, TRUE);

  g_test_message ("a redraw-priority source ran %u times during the flood", rc.during_flood);
  g_assert_cmpuint (rc.during_flood, >, 0);

  g_source_destroy (redraw);
  g_source_unref (redraw);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_main_context_pop_thread_default (ctx);
}

/* ---- completion delivery: exactly once, never from inside the call --- */

typedef struct
{
  guint   calls;
  gboolean ok;
  GError *error;
} WaitResult;

static void
wait_cb (GObject      *object,
         GAsyncResult *result,
         gpointer      data)
{
  WaitResult *r = data;

  r->calls++;
  g_clear_error (&r->error);
  r->ok = ws_task_wait_finish (WS_TASK (object), result, &r->error);
}

static WsPoll
pending_forever (WsContext *cx,
                 gpointer   data)
{
  return WS_POLL_PENDING;
}

static WsPoll
ready_now (WsContext *cx,
           gpointer   data)
{
  return WS_POLL_READY;
}

static void
test_wait_async_exactly_once (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GMainContext) ctx = g_main_context_new ();
  g_autoptr(WsTask) done = NULL;
  g_autoptr(WsTask) pending = NULL;
  g_autoptr(WsTask) cancelled = NULL;
  g_autoptr(WsTask) forever = NULL;
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  WaitResult r_done = { 0 }, r_pending = { 0 }, r_cancelled = { 0 }, r_wait_cancelled = { 0 };

  g_main_context_push_thread_default (ctx);

  done = ws_runtime_spawn (rt, ready_now, NULL, NULL);
  g_assert_true (ws_task_wait (done, NULL, NULL));
  ws_task_wait_async (done, NULL, wait_cb, &r_done);
  g_assert_cmpuint (r_done.calls, ==, 0);

  pending = ws_runtime_spawn (rt, ready_now, NULL, NULL);
  ws_task_wait_async (pending, NULL, wait_cb, &r_pending);
  g_assert_cmpuint (r_pending.calls, ==, 0);

  cancelled = ws_runtime_spawn (rt, pending_forever, NULL, NULL);
  ws_task_wait_async (cancelled, NULL, wait_cb, &r_cancelled);
  ws_task_cancel (cancelled);

  forever = ws_runtime_spawn (rt, pending_forever, NULL, NULL);
  ws_task_wait_async (forever, cancellable, wait_cb, &r_wait_cancelled);
  g_cancellable_cancel (cancellable);
  g_assert_cmpuint (r_wait_cancelled.calls, ==, 0);

  ws_test_iterate_until (ctx, r_done.calls && r_pending.calls && r_cancelled.calls
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
  while (g_main_context_iteration (ctx, FALSE))
    ;
  g_assert_cmpuint (r_done.calls, ==, 1);
  g_assert_cmpuint (r_pending.calls, ==, 1);
  g_assert_cmpuint (r_cancelled.calls, ==, 1);
  g_assert_cmpuint (r_wait_cancelled.calls, ==, 1);

  g_clear_error (&r_cancelled.error);
  g_clear_error (&r_wait_cancelled.error);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_main_context_pop_thread_default (ctx);
}

/* ---- channels -------------------------------------------------------- */

#define N_MESSAGES 100000
#define N_SIDES    4

typedef struct
{
  WsChannel      *ch;
  _Atomic guint8 *seen;
  _Atomic guint   received;
} ChannelTest;

typedef struct
{
  ChannelTest *t;
  guint        next;
  guint        end;
} Producer;

static WsPoll
producer_func (WsContext *cx,
               gpointer   data)
{
  Producer *p = data;

  while (p->next < p->end)
    {
      g_autoptr(GError) error = NULL;

      if (ws_channel_poll_send (p->t->ch, cx, GUINT_TO_POINTER (p->next + 1), &error) == WS_POLL_PENDING)
        return WS_POLL_PENDING;
      g_assert_no_error (error);
      p->next++;
    }
  return WS_POLL_READY;
}

static WsPoll
consumer_func (WsContext *cx,
               gpointer   data)
{
  ChannelTest *t = data;

  for (;;)
    {
      g_autoptr(GError) error = NULL;
      gpointer item;

      if (ws_channel_poll_receive (t->ch, cx, &item, &error) == WS_POLL_PENDING)
        return WS_POLL_PENDING;
      if (error != NULL)
        {
          g_assert_error (error, WS_ERROR, WS_ERROR_CLOSED);
          return WS_POLL_READY;
        }
      atomic_fetch_add (&t->seen[GPOINTER_TO_UINT (item) - 1], 1);
      atomic_fetch_add (&t->received, 1);
    }
}

static void
test_channel_mpmc (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  ChannelTest t = { 0 };
  Producer producers[N_SIDES];
  WsTask *prod[N_SIDES];
  WsTask *cons[N_SIDES];

  t.ch = ws_channel_new (64, NULL);
  t.seen = g_new0 (_Atomic guint8, N_MESSAGES);
  for (guint i = 0; i < N_SIDES; i++)
    {
      producers[i] = (Producer) { &t, i * (N_MESSAGES / N_SIDES), (i + 1) * (N_MESSAGES / N_SIDES) };
      prod[i] = ws_runtime_spawn (rt, producer_func, &producers[i], NULL);
      cons[i] = ws_runtime_spawn (rt, consumer_func, &t, NULL);
    }
  for (guint i = 0; i < N_SIDES; i++)
    g_assert_true (ws_task_wait (prod[i], NULL, NULL));
  ws_channel_close (t.ch);
  for (guint i = 0; i < N_SIDES; i++)
    g_assert_true (ws_task_wait (cons[i], NULL, NULL));

  g_assert_cmpuint (atomic_load (&t.received), ==, N_MESSAGES);
  for (guint i = 0; i < N_MESSAGES; i++)
    if (atomic_load (&t.seen[i]) != 1)
      g_error ("message %u received %u times", i, (guint) atomic_load (&t.seen[i]));

  for (guint i = 0; i < N_SIDES; i++)
    {
      g_object_unref (prod[i]);
      g_object_unref (cons[i]);
    }
  g_free ((gpointer) t.seen);
  ws_channel_unref (t.ch);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static void
test_channel_back_pressure_and_close (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  ChannelTest t = { 0 };
  Producer p;
  g_autoptr(WsTask) prod = NULL;
  WsTask *waiters[3];
  gpointer item;
  g_autoptr(GError) error = NULL;

  t.ch = ws_channel_new (2, NULL);
  t.seen = g_new0 (_Atomic guint8, 8);
  p = (Producer) { &t, 0, 5 };
  prod = ws_runtime_spawn (rt, producer_func, &p, NULL);

  /* The producer fills the channel and is held there. */
  while (ws_channel_get_length (t.ch) < 2)
    g_usleep (1000);
  g_usleep (20000);
  g_assert_cmpuint (ws_channel_get_length (t.ch), ==, 2);
  g_assert_false (ws_task_is_finished (prod));

  /* Taking items lets it go on, in order. */
  for (guint i = 1; i <= 5; i++)
    {
      while (!ws_channel_try_receive (t.ch, &item, NULL))
        g_usleep (100);
      g_assert_cmpuint (GPOINTER_TO_UINT (item), ==, i);
    }
  g_assert_true (ws_task_wait (prod, NULL, NULL));
  g_assert_false (ws_channel_try_receive (t.ch, &item, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK);
  g_clear_error (&error);

  /* Closing wakes every waiting receiver. */
  for (guint i = 0; i < 3; i++)
    waiters[i] = ws_runtime_spawn (rt, consumer_func, &t, NULL);
  g_usleep (10000);
  ws_channel_close (t.ch);
  for (guint i = 0; i < 3; i++)
    {
      g_assert_true (ws_task_wait (waiters[i], NULL, NULL));
      g_object_unref (waiters[i]);
    }
  g_assert_false (ws_channel_try_send (t.ch, GUINT_TO_POINTER (9), &error));
  g_assert_error (error, WS_ERROR, WS_ERROR_CLOSED);

  g_free ((gpointer) t.seen);
  ws_channel_unref (t.ch);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static _Atomic gint n_items_freed;

static void
item_free (gpointer data)
{
  atomic_fetch_add (&n_items_freed, 1);
}

typedef struct
{
  WsOneshot *shot;
  gpointer   item;
  GError    *error;
} ShotWait;

static WsPoll
shot_func (WsContext *cx,
           gpointer   data)
{
  ShotWait *s = data;

  return ws_oneshot_poll (s->shot, cx, &s->item, &s->error);
}

static void
test_oneshot (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  ShotWait a = { ws_oneshot_new (item_free) };
  ShotWait b = { ws_oneshot_new (item_free) };
  g_autoptr(WsTask) ta = ws_runtime_spawn (rt, shot_func, &a, NULL);
  g_autoptr(WsTask) tb = ws_runtime_spawn (rt, shot_func, &b, NULL);

  atomic_store (&n_items_freed, 0);
  g_usleep (5000);
  g_assert_true (ws_oneshot_send (a.shot, GUINT_TO_POINTER (7)));
  g_assert_false (ws_oneshot_send (a.shot, GUINT_TO_POINTER (8)));   /* refused, freed */
  g_assert_cmpint (atomic_load (&n_items_freed), ==, 1);
  ws_oneshot_close (b.shot);

  g_assert_true (ws_task_wait (ta, NULL, NULL));
  g_assert_true (ws_task_wait (tb, NULL, NULL));
  g_assert_cmpuint (GPOINTER_TO_UINT (a.item), ==, 7);
  g_assert_no_error (a.error);
  g_assert_null (b.item);
  g_assert_error (b.error, WS_ERROR, WS_ERROR_CLOSED);

  g_clear_error (&b.error);
  ws_oneshot_unref (a.shot);
  ws_oneshot_unref (b.shot);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ---- timers ---------------------------------------------------------- */

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
test_sleeps_in_deadline_order (void)
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
  for (guint i = 0; i < G_N_ELEMENTS (ms); i++)
    {
      g_assert_true (ws_task_wait (tasks[i], NULL, NULL));
      g_object_unref (tasks[i]);
    }
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
  while (!atomic_load (&s->awaiting))
    g_usleep (100);
}

/* Waits until the task saw the sleep ready, for at most 5 s: far more than
 * the deadlines the tests set, far less than the 10 s they reset away
 * from. Returns when it woke, or 0. */
static gint64
reset_sleeper_wait_woken (ResetSleeper *s)
{
  gint64 until = g_get_monotonic_time () + 5 * G_USEC_PER_SEC;

  while (atomic_load (&s->woke_at) == 0 && g_get_monotonic_time () < until)
    g_usleep (1000);
  return atomic_load (&s->woke_at);
}

/* The sleep never ends early; the 1 ms is for the clock reads of the test
 * and the task being different reads. */
#define RESET_SLACK_USEC (1 * G_TIME_SPAN_MILLISECOND)

/* The task woke, not before @deadline, and ends; then the runtime. */
static void
reset_sleeper_finish (WsRuntime    *rt,
                      WsTask       *task,
                      ResetSleeper *s,
                      gint64        deadline)
{
  gint64 woke_at = reset_sleeper_wait_woken (s);

  g_assert_cmpint (woke_at, !=, 0);
  g_assert_cmpint (woke_at, >=, deadline - RESET_SLACK_USEC);
  g_test_message ("woke %" G_GINT64_FORMAT " us after the deadline", woke_at - deadline);

  g_assert_true (ws_task_wait (task, NULL, NULL));
  ws_sleep_unref (s->nap);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static void
test_sleep_reset_earlier_from_another_thread (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  ResetSleeper s = { .nap = ws_sleep_new (10 * G_USEC_PER_SEC) };
  g_autoptr(WsTask) task = ws_runtime_spawn (rt, reset_sleeper_func, &s, NULL);
  gint64 deadline;

  reset_sleeper_wait_awaiting (&s);
  deadline = g_get_monotonic_time () + 50 * G_TIME_SPAN_MILLISECOND;
  ws_sleep_reset (s.nap, deadline);

  reset_sleeper_finish (rt, task, &s, deadline);
}

static void
test_sleep_reset_later_then_earlier (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  ResetSleeper s = { .nap = ws_sleep_new (100 * G_TIME_SPAN_MILLISECOND) };
  g_autoptr(WsTask) task = ws_runtime_spawn (rt, reset_sleeper_func, &s, NULL);
  gint64 first = ws_sleep_get_deadline (s.nap);
  gint64 deadline;

  reset_sleeper_wait_awaiting (&s);
  ws_sleep_reset (s.nap, g_get_monotonic_time () + 10 * G_USEC_PER_SEC);
  /* The first deadline passes: the task may be woken, but the sleep it
   * awaits is not ready. */
  while (g_get_monotonic_time () < first + 100 * G_TIME_SPAN_MILLISECOND)
    g_usleep (10 * 1000);
  g_assert_cmpint (atomic_load (&s.woke_at), ==, 0);

  deadline = g_get_monotonic_time () + 50 * G_TIME_SPAN_MILLISECOND;
  ws_sleep_reset (s.nap, deadline);

  reset_sleeper_finish (rt, task, &s, deadline);
}

static void
test_sleep_reset_to_past_from_another_thread (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  ResetSleeper s = { .nap = ws_sleep_new (10 * G_USEC_PER_SEC) };
  g_autoptr(WsTask) task = ws_runtime_spawn (rt, reset_sleeper_func, &s, NULL);
  gint64 reset_at;
  gint64 woke_at;

  reset_sleeper_wait_awaiting (&s);
  reset_at = g_get_monotonic_time ();
  ws_sleep_reset (s.nap, reset_at - G_USEC_PER_SEC);

  woke_at = reset_sleeper_wait_woken (&s);
  g_assert_cmpint (woke_at, !=, 0);
  g_test_message ("woke %" G_GINT64_FORMAT " us after the reset", woke_at - reset_at);

  g_assert_true (ws_task_wait (task, NULL, NULL));
  ws_sleep_unref (s.nap);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Resets that race the timers firing and the tasks polling: deadlines
 * 0 to 2 ms ahead, moved every 0.5 ms, so a reset meets an armed timer, one
 * firing, one that fired for a deadline since moved, and a task polling
 * again. No wake may be lost: every task ends once the last deadline
 * passes. */
#define N_RACERS 16

static void
test_sleep_reset_races_timers (void)
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

/* ---- GIO awaitables ------------------------------------------------- */

typedef struct
{
  GFile     *file;
  WsAsyncOp *op;
  gchar     *contents;
  GError    *error;
} LoadState;

static void
load_state_free (gpointer data)
{
  LoadState *s = data;

  g_clear_pointer (&s->op, ws_async_op_unref);
  /* contents and error are read by the test after the task ends */
}

static WsPoll
load_func (WsContext *cx,
           gpointer   data)
{
  LoadState *s = data;

  if (s->op == NULL)
    {
      s->op = ws_async_op_new ();
      g_file_load_contents_async (s->file, ws_async_op_get_cancellable (s->op),
                                  ws_async_op_callback, ws_async_op_start (s->op, cx));
    }
  if (ws_async_op_poll (s->op, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  g_file_load_contents_finish (s->file, ws_async_op_get_result (s->op),
                               &s->contents, NULL, NULL, &s->error);
  return WS_POLL_READY;
}

static void
test_gio_load_contents (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autofree gchar *path = g_test_build_filename (G_TEST_DIST, "test-async.c", NULL);
  LoadState s = { 0 };
  g_autoptr(WsTask) task = NULL;

  s.file = g_file_new_for_path (path);
  task = ws_runtime_spawn (rt, load_func, &s, load_state_free);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_no_error (s.error);
  g_assert_nonnull (strstr (s.contents, "GIO awaitables"));
  g_free (s.contents);
  g_object_unref (s.file);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

typedef struct
{
  gchar             *host;
  WsAsyncOp         *op;
  GSocketConnection *conn;
  GError            *error;
} ConnectState;

static WsPoll
connect_func (WsContext *cx,
              gpointer   data)
{
  ConnectState *s = data;

  if (s->op == NULL)
    {
      g_autoptr(GSocketClient) client = g_socket_client_new ();

      s->op = ws_async_op_new ();
      g_socket_client_connect_to_host_async (client, s->host, 0,
                                             ws_async_op_get_cancellable (s->op),
                                             ws_async_op_callback, ws_async_op_start (s->op, cx));
    }
  if (ws_async_op_poll (s->op, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  {
    g_autoptr(GObject) client = g_async_result_get_source_object (ws_async_op_get_result (s->op));

    s->conn = g_socket_client_connect_to_host_finish (G_SOCKET_CLIENT (client),
                                                      ws_async_op_get_result (s->op), &s->error);
  }
  g_clear_pointer (&s->op, ws_async_op_unref);
  return WS_POLL_READY;
}

static void
test_gio_socket_connect (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GSocketListener) listener = g_socket_listener_new ();
  g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr(GSocketAddress) addr = g_inet_socket_address_new (loopback, 0);
  g_autoptr(GSocketAddress) bound = NULL;
  g_autoptr(GSocketConnection) server_side = NULL;
  g_autoptr(GError) error = NULL;
  ConnectState s = { 0 };
  g_autoptr(WsTask) task = NULL;

  g_assert_true (g_socket_listener_add_address (listener, addr, G_SOCKET_TYPE_STREAM,
                                                G_SOCKET_PROTOCOL_TCP, NULL, &bound, &error));
  g_assert_no_error (error);
  s.host = g_strdup_printf ("127.0.0.1:%u",
                            g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound)));

  task = ws_runtime_spawn (rt, connect_func, &s, NULL);
  /* This thread is no worker: it may block on accept. */
  server_side = g_socket_listener_accept (listener, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_no_error (s.error);
  g_assert_nonnull (s.conn);

  g_object_unref (s.conn);
  g_free (s.host);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Cancelling the operation makes _finish fail with CANCELLED. */
typedef struct
{
  GSocketListener   *listener;
  WsAsyncOp         *op;
  GError            *error;
  _Atomic gboolean   started;
} AcceptState;

static WsPoll
accept_func (WsContext *cx,
             gpointer   data)
{
  AcceptState *s = data;
  GSocketConnection *conn;

  if (s->op == NULL)
    {
      s->op = ws_async_op_new ();
      g_socket_listener_accept_async (s->listener, ws_async_op_get_cancellable (s->op),
                                      ws_async_op_callback, ws_async_op_start (s->op, cx));
      atomic_store (&s->started, TRUE);
    }
  if (ws_async_op_poll (s->op, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  conn = g_socket_listener_accept_finish (s->listener, ws_async_op_get_result (s->op), NULL, &s->error);
  g_assert_null (conn);
  return WS_POLL_READY;
}

static void
test_gio_cancel (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr(GSocketAddress) addr = g_inet_socket_address_new (loopback, 0);
  AcceptState s = { g_socket_listener_new () };
  g_autoptr(WsTask) task = NULL;
  g_autoptr(GError) error = NULL;

  g_assert_true (g_socket_listener_add_address (s.listener, addr, G_SOCKET_TYPE_STREAM,
                                                G_SOCKET_PROTOCOL_TCP, NULL, NULL, &error));
  task = ws_runtime_spawn (rt, accept_func, &s, NULL);
  while (!atomic_load (&s.started))
    g_usleep (100);
  ws_async_op_cancel (s.op);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_error (s.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);

  g_clear_error (&s.error);
  ws_async_op_unref (s.op);
  g_object_unref (s.listener);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ---- coroutine macros: a sleep, a channel, a task, in sequence ------- */

typedef struct
{
  WS_ASYNC_STATE;
  WsSleep   *nap;
  WsChannel *inbox;
  WsTask    *child;
  gpointer   item;
  guint      steps;
} Job;

static WsPoll
child_value (WsContext *cx,
             gpointer   data)
{
  GValue v = G_VALUE_INIT;

  g_value_init (&v, G_TYPE_INT);
  g_value_set_int (&v, 40);
  ws_context_return_value (cx, &v);
  return WS_POLL_READY;
}

static WsPoll
job_func (WsContext *cx,
          gpointer   data)
{
  Job *s = data;
  g_autoptr(GError) error = NULL;
  GValue v = G_VALUE_INIT;

  WS_ASYNC_BEGIN (s);

  WS_AWAIT (s, ws_sleep_poll (s->nap, cx));
  s->steps++;
  WS_AWAIT (s, ws_channel_poll_receive (s->inbox, cx, &s->item, &error));
  g_assert_no_error (error);
  s->steps++;
  WS_ASYNC_YIELD (s, cx);
  WS_AWAIT (s, ws_task_poll (s->child, cx));
  s->steps++;

  g_value_init (&v, G_TYPE_INT);
  g_value_set_int (&v, g_value_get_int (ws_task_get_value (s->child)) + GPOINTER_TO_INT (s->item));
  ws_context_return_value (cx, &v);

  WS_ASYNC_END (s);
}

static void
test_coroutine_macros (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  Job job = { 0 };
  g_autoptr(WsTask) task = NULL;

  job.nap = ws_sleep_new (5000);
  job.inbox = ws_channel_new (1, NULL);
  job.child = ws_runtime_spawn (rt, child_value, NULL, NULL);
  task = ws_runtime_spawn (rt, job_func, &job, NULL);
  g_usleep (10000);
  g_assert_true (ws_channel_try_send (job.inbox, GINT_TO_POINTER (2), NULL));
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_cmpuint (job.steps, ==, 3);
  g_assert_cmpint (g_value_get_int (ws_task_get_value (task)), ==, 42);

  ws_sleep_unref (job.nap);
  ws_channel_unref (job.inbox);
  g_object_unref (job.child);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ---- the cooperative budget ------------------------------------------ */

typedef struct
{
  WsChannel *ch;
  guint      received_in_first_poll;
  guint      polls;
  guint      total;
} Greedy;

static WsPoll
greedy_func (WsContext *cx,
             gpointer   data)
{
  Greedy *g = data;

  g->polls++;
  while (g->total < 1000)
    {
      gpointer item;

      if (ws_channel_poll_receive (g->ch, cx, &item, NULL) == WS_POLL_PENDING)
        return WS_POLL_PENDING;
      g->total++;
      if (g->polls == 1)
        g->received_in_first_poll++;
    }
  return WS_POLL_READY;
}

static void
test_budget_forces_yield (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  Greedy g = { ws_channel_new (1000, NULL) };
  g_autoptr(WsTask) task = NULL;
  g_autoptr(WsMetrics) m = NULL;

  for (guint i = 0; i < 1000; i++)
    g_assert_true (ws_channel_try_send (g.ch, GUINT_TO_POINTER (i + 1), NULL));
  task = ws_runtime_spawn (rt, greedy_func, &g, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));

  /* Always ready, yet the first poll gave up before the 1,000th item. */
  g_assert_cmpuint (g.total, ==, 1000);
  g_assert_cmpuint (g.received_in_first_poll, <, 1000);
  g_assert_cmpuint (g.received_in_first_poll, ==, 128);
  g_assert_cmpuint (g.polls, >, 1);
  m = ws_runtime_get_metrics (rt);
  g_assert_cmpuint (ws_metrics_get_worker_forced_yield_count (m, 0), >=, g.polls - 1);

  ws_channel_unref (g.ch);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ---- task groups ----------------------------------------------------- */

static WsPoll
sleepy_value (WsContext *cx,
              gpointer   data)
{
  g_usleep (GPOINTER_TO_UINT (data) * 1000);
  return child_value (cx, NULL);
}

typedef struct
{
  guint        calls;
  gboolean     ok;
  WsTask      *first;
  GError      *error;
} GroupResult;

static void
all_cb (GObject      *object,
        GAsyncResult *result,
        gpointer      data)
{
  GroupResult *r = data;

  r->calls++;
  r->ok = ws_task_group_wait_all_finish (WS_TASK_GROUP (object), result, &r->error);
}

static void
any_cb (GObject      *object,
        GAsyncResult *result,
        gpointer      data)
{
  GroupResult *r = data;

  r->calls++;
  r->first = ws_task_group_wait_any_finish (WS_TASK_GROUP (object), result, &r->error);
}

static void
test_task_group (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GMainContext) ctx = g_main_context_new ();
  g_autoptr(WsTaskGroup) all = ws_task_group_new ();
  g_autoptr(WsTaskGroup) any = ws_task_group_new ();
  GroupResult r_all = { 0 }, r_any = { 0 };

  g_main_context_push_thread_default (ctx);
  for (guint i = 0; i < 100; i++)
    {
      g_autoptr(WsTask) t = ws_runtime_spawn (rt, sleepy_value, GUINT_TO_POINTER (i % 3), NULL);

      ws_task_group_add (all, t);
    }
  ws_task_group_wait_all_async (all, NULL, all_cb, &r_all);

  {
    g_autoptr(WsTask) fast = ws_runtime_spawn (rt, ready_now, NULL, NULL);
    g_autoptr(WsTask) slow1 = ws_runtime_spawn (rt, pending_forever, NULL, NULL);
    g_autoptr(WsTask) slow2 = ws_runtime_spawn (rt, pending_forever, NULL, NULL);

    ws_task_group_add (any, slow1);
    ws_task_group_add (any, fast);
    ws_task_group_add (any, slow2);
  }
  ws_task_group_wait_any_async (any, NULL, any_cb, &r_any);

  ws_test_iterate_until (ctx, r_all.calls && r_any.calls);
  g_assert_true (r_all.ok);
  g_assert_no_error (r_all.error);
  g_assert_cmpuint (ws_task_group_get_n_finished (all), ==, 100);
  g_assert_true (r_any.first == ws_task_group_get_task (any, 1));

  /* Cancel the rest; then waiting for all reports the cancellation. */
  ws_task_group_cancel_all (any);
  r_all = (GroupResult) { 0 };
  ws_task_group_wait_all_async (any, NULL, all_cb, &r_all);
  ws_test_iterate_until (ctx, r_all.calls);
  g_assert_false (r_all.ok);
  g_assert_error (r_all.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpuint (ws_task_group_get_n_finished (any), ==, 3);

  g_clear_error (&r_all.error);
  g_clear_object (&r_any.first);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_main_context_pop_thread_default (ctx);
}

int
main (int   argc,
      char *argv[])
{
  ws_test_init (&argc, &argv);

  ws_test_add_func ("/async/local-wake-from-worker", test_local_wake_from_worker);
  ws_test_add_func ("/async/local-cancel-from-worker", test_local_cancel_from_worker);
  ws_test_add_func ("/async/local-flood-bounded", test_local_flood_bounded);
  ws_test_add_func ("/async/local-flood-lets-redraw-run", test_local_flood_lets_redraw_run);
  ws_test_add_func ("/async/wait-async-exactly-once", test_wait_async_exactly_once);
  ws_test_add_func ("/async/channel-mpmc", test_channel_mpmc);
  ws_test_add_func ("/async/channel-back-pressure-and-close", test_channel_back_pressure_and_close);
  ws_test_add_func ("/async/oneshot", test_oneshot);
  ws_test_add_func ("/async/sleeps-in-deadline-order", test_sleeps_in_deadline_order);
  ws_test_add_func ("/async/sleep-reset-earlier-from-another-thread",
                    test_sleep_reset_earlier_from_another_thread);
  ws_test_add_func ("/async/sleep-reset-later-then-earlier", test_sleep_reset_later_then_earlier);
  ws_test_add_func ("/async/sleep-reset-to-past-from-another-thread",
                    test_sleep_reset_to_past_from_another_thread);
  ws_test_add_func ("/async/sleep-reset-races-timers", test_sleep_reset_races_timers);
  ws_test_add_func ("/async/gio-load-contents", test_gio_load_contents);
  ws_test_add_func ("/async/gio-socket-connect", test_gio_socket_connect);
  ws_test_add_func ("/async/gio-cancel", test_gio_cancel);
  ws_test_add_func ("/async/coroutine-macros", test_coroutine_macros);
  ws_test_add_func ("/async/budget-forces-yield", test_budget_forces_yield);
  ws_test_add_func ("/async/task-group", test_task_group);

  return g_test_run ();
}
