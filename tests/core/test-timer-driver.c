/* test-timer-driver.c: timers of a GMainContext (ws-timer-driver)
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Against the module alone, on contexts the test creates and iterates,
 * with wakers of the test's own (D7: the driver treats every waker
 * alike): one driver per context; where a thread's timers go; an arm
 * whose deadline has passed links nothing and takes no reference; a timer
 * expires once, never before its deadline (D4); a disarm, a conditional
 * disarm and a re-arm take out the waker they should and no other (D1,
 * D7); a reset moves a linked timer and leaves an unlinked one alone; an
 * arm from another thread wakes the context asleep in its poll (D3); a
 * dispatch past one batch wakes every due timer (D2); a wake that
 * iterates the context again finds the rest of its batch woken by the
 * nested dispatch, each once (D8); a timer the dispatch of another
 * thread expired is disarmed without the lock and freed at once (D10).
 * The D-numbers are those of
 * ws-timer-driver.c's opening comment.
 *
 * The driver has no fake clock: deadlines are read against the
 * monotonic clock, and the assertions compare what the test observed
 * (the clock at the wake against the deadline), never how long a wait
 * took; a lost wake is a hang, which the watchdog reports.
 */

#include "config.h"

#include <stdatomic.h>

#include "../ws-test-util.h"
#include "ws-timer-driver-private.h"
#include "ws-thread-private.h"
#include "ws-waker-private.h"

#define HOUR (G_USEC_PER_SEC * (gint64) 3600)

/* A waker that counts: its references held by others, its wakes, and the
 * clock and the deadline at its last wake. */
typedef struct
{
  WsWaker        waker;
  _Atomic gint   refs;
  _Atomic gint   wakes;
  gint64         woken_at;
  _Atomic gint64 deadline;
  WsTimer        timer;
  void         (*on_wake) (gpointer data);
  gpointer       on_wake_data;
} Waiter;

static void
waiter_wake (WsWaker *waker)
{
  Waiter *w = (Waiter *) waker;

  w->woken_at = g_get_monotonic_time ();
  atomic_fetch_add (&w->wakes, 1);
  if (w->on_wake != NULL)
    w->on_wake (w->on_wake_data);
}

static void
waiter_ref (WsWaker *waker)
{
  atomic_fetch_add (&((Waiter *) waker)->refs, 1);
}

static void
waiter_unref (WsWaker *waker)
{
  g_assert_cmpint (atomic_fetch_sub (&((Waiter *) waker)->refs, 1), >, 0);
}

static const WsWakerVTable waiter_vtable = { waiter_wake, waiter_ref, waiter_unref };

static void
waiter_init (Waiter *w,
             gint64  deadline)
{
  *w = (Waiter) { .waker = { &waiter_vtable } };
  atomic_init (&w->refs, 0);
  atomic_init (&w->wakes, 0);
  atomic_init (&w->deadline, deadline);
  ws_timer_init (&w->timer);
}

/* Arms @w's own timer with @w's waker. */
static gboolean
waiter_arm (WsTimerDriver *driver,
            Waiter        *w)
{
  return ws_timer_driver_arm_waker (driver, &w->timer, &w->deadline,
                                    g_get_monotonic_time (), &w->waker);
}

/* Woken once, not before its deadline, and no reference left held. */
static void
waiter_assert_expired (Waiter *w)
{
  g_assert_cmpint (atomic_load (&w->wakes), ==, 1);
  g_assert_cmpint (w->woken_at, >=, atomic_load (&w->deadline));
  g_assert_cmpint (atomic_load (&w->refs), ==, 0);
  g_assert_null (w->timer.waker);
  g_assert_false (ws_timer_entry_is_linked (&w->timer.entry));
}

/* One driver per context, found again by a second ref; another context
 * gets its own. A thread's timers go to its host context if it has one,
 * else to its thread-default context, else to the global default. */
static void
test_driver_per_context (void)
{
  GMainContext *a = g_main_context_new ();
  GMainContext *b = g_main_context_new ();
  WsTimerDriver *da = ws_timer_driver_ref_for_context (a);
  WsTimerDriver *da2 = ws_timer_driver_ref_for_context (a);
  WsTimerDriver *db = ws_timer_driver_ref_for_context (b);
  WsTimerDriver *d;

  g_assert_true (da == da2);
  g_assert_true (da != db);
  g_assert_true (g_source_get_context ((GSource *) da) == a);
  g_assert_true (g_source_get_context ((GSource *) db) == b);
  g_assert_cmpuint (ws_timer_driver_get_n_timers (da), ==, 0);

  d = ws_timer_driver_ref_for_current_thread ();
  g_assert_true (g_source_get_context ((GSource *) d) == g_main_context_default ());
  ws_timer_driver_unref (d);

  g_main_context_push_thread_default (a);
  d = ws_timer_driver_ref_for_current_thread ();
  g_assert_true (d == da);
  ws_timer_driver_unref (d);

  /* The host's context wins over the thread's default. */
  ws_thread.host_context = b;
  d = ws_timer_driver_ref_for_current_thread ();
  g_assert_true (d == db);
  ws_timer_driver_unref (d);
  ws_thread.host_context = NULL;
  g_main_context_pop_thread_default (a);

  ws_timer_driver_unref (da);
  ws_timer_driver_unref (da2);
  ws_timer_driver_unref (db);
  g_main_context_unref (a);
  g_main_context_unref (b);
}

/* A deadline that has passed: the arm says so, links nothing, takes no
 * reference and wakes nothing. */
static void
test_arm_passed (void)
{
  GMainContext *context = g_main_context_new ();
  WsTimerDriver *driver = ws_timer_driver_ref_for_context (context);
  Waiter w;

  waiter_init (&w, g_get_monotonic_time ());
  g_assert_false (waiter_arm (driver, &w));
  g_assert_cmpuint (ws_timer_driver_get_n_timers (driver), ==, 0);
  g_assert_cmpint (atomic_load (&w.refs), ==, 0);
  g_assert_false (ws_timer_entry_is_linked (&w.timer.entry));
  while (g_main_context_iteration (context, FALSE))
    ;
  g_assert_cmpint (atomic_load (&w.wakes), ==, 0);

  ws_timer_driver_unref (driver);
  g_main_context_unref (context);
}

/* Armed a few milliseconds ahead: linked with one reference, then woken
 * by the context's own iteration, once, not before its deadline. */
static void
test_expire (void)
{
  GMainContext *context = g_main_context_new ();
  WsTimerDriver *driver = ws_timer_driver_ref_for_context (context);
  Waiter w[3];

  for (guint i = 0; i < G_N_ELEMENTS (w); i++)
    {
      waiter_init (&w[i], g_get_monotonic_time () + (i + 1) * 2000);
      g_assert_true (waiter_arm (driver, &w[i]));
      g_assert_cmpint (atomic_load (&w[i].refs), ==, 1);
    }
  g_assert_cmpuint (ws_timer_driver_get_n_timers (driver), ==, 3);

  ws_test_iterate_until (context, atomic_load (&w[2].wakes) > 0);
  for (guint i = 0; i < G_N_ELEMENTS (w); i++)
    waiter_assert_expired (&w[i]);
  g_assert_cmpuint (ws_timer_driver_get_n_timers (driver), ==, 0);

  ws_timer_driver_unref (driver);
  g_main_context_unref (context);
}

/* A disarm unlinks the timer and drops its waker unwoken. A second arm
 * of the same timer replaces the waker and drops the first one unwoken
 * (one waiter per timer); the conditional disarm of the replaced waker
 * takes nothing out, that of the current one does. */
static void
test_disarm_and_replace (void)
{
  GMainContext *context = g_main_context_new ();
  WsTimerDriver *driver = ws_timer_driver_ref_for_context (context);
  Waiter w, other;

  waiter_init (&w, g_get_monotonic_time () + HOUR);
  waiter_init (&other, 0);
  g_assert_true (waiter_arm (driver, &w));
  ws_timer_driver_disarm (driver, &w.timer);
  g_assert_cmpint (atomic_load (&w.refs), ==, 0);
  g_assert_cmpuint (ws_timer_driver_get_n_timers (driver), ==, 0);
  /* A second disarm of an unlinked timer is harmless. */
  ws_timer_driver_disarm (driver, &w.timer);

  /* The same deadline, then another waker on w's timer. */
  g_assert_true (waiter_arm (driver, &w));
  g_assert_true (ws_timer_driver_arm_waker (driver, &w.timer, &w.deadline,
                                            g_get_monotonic_time (), &other.waker));
  g_assert_cmpint (atomic_load (&w.refs), ==, 0);
  g_assert_cmpint (atomic_load (&other.refs), ==, 1);
  g_assert_cmpuint (ws_timer_driver_get_n_timers (driver), ==, 1);

  g_assert_false (ws_timer_driver_disarm_waker (driver, &w.timer, &w.waker));
  g_assert_true (ws_timer_entry_is_linked (&w.timer.entry));
  g_assert_cmpint (atomic_load (&other.refs), ==, 1);
  g_assert_true (ws_timer_driver_disarm_waker (driver, &w.timer, &other.waker));
  g_assert_false (ws_timer_entry_is_linked (&w.timer.entry));
  g_assert_cmpint (atomic_load (&other.refs), ==, 0);
  g_assert_cmpuint (ws_timer_driver_get_n_timers (driver), ==, 0);

  while (g_main_context_iteration (context, FALSE))
    ;
  g_assert_cmpint (atomic_load (&w.wakes), ==, 0);
  g_assert_cmpint (atomic_load (&other.wakes), ==, 0);

  ws_timer_driver_unref (driver);
  g_main_context_unref (context);
}

/* A reset moves a linked timer from an hour ahead to a few milliseconds
 * ahead, where the context's iteration expires it; a reset of an
 * unlinked timer leaves it unlinked (its owner arms it when it polls). */
static void
test_reset (void)
{
  GMainContext *context = g_main_context_new ();
  WsTimerDriver *driver = ws_timer_driver_ref_for_context (context);
  Waiter w, idle;

  waiter_init (&w, g_get_monotonic_time () + HOUR);
  g_assert_true (waiter_arm (driver, &w));
  atomic_store (&w.deadline, g_get_monotonic_time () + 2000);
  ws_timer_driver_reset (driver, &w.timer, &w.deadline);
  g_assert_cmpuint (ws_timer_driver_get_n_timers (driver), ==, 1);
  ws_test_iterate_until (context, atomic_load (&w.wakes) > 0);
  waiter_assert_expired (&w);

  waiter_init (&idle, g_get_monotonic_time () + 2000);
  ws_timer_driver_reset (driver, &idle.timer, &idle.deadline);
  g_assert_false (ws_timer_entry_is_linked (&idle.timer.entry));
  g_assert_cmpuint (ws_timer_driver_get_n_timers (driver), ==, 0);

  ws_timer_driver_unref (driver);
  g_main_context_unref (context);
}

/* D3: the context sleeps in its poll with a timeout computed for a timer
 * an hour ahead; another thread arms one a millisecond ahead, which must
 * wake the poll (a lost wake sleeps for the hour: the watchdog). */
typedef struct
{
  WsTimerDriver *driver;
  Waiter         near;
  _Atomic gint   go;
} CrossArm;

static gpointer
arm_thread (gpointer data)
{
  CrossArm *c = data;

  ws_test_wait_until (atomic_load (&c->go));
  /* Let the owner reach its poll most of the time; the wake must come
   * either way. */
  g_usleep (1000);
  atomic_store (&c->near.deadline, g_get_monotonic_time () + 1000);
  g_assert_true (waiter_arm (c->driver, &c->near));
  return NULL;
}

static void
test_arm_from_other_thread (void)
{
  GMainContext *context = g_main_context_new ();
  CrossArm c = { ws_timer_driver_ref_for_context (context), };
  Waiter far;
  GThread *t;

  waiter_init (&far, g_get_monotonic_time () + HOUR);
  waiter_init (&c.near, 0);
  atomic_init (&c.go, 0);
  g_assert_true (waiter_arm (c.driver, &far));
  /* Prepared once: the driver's armed tick is the far one's. */
  g_main_context_iteration (context, FALSE);

  t = g_thread_new ("arm", arm_thread, &c);
  atomic_store (&c.go, 1);
  ws_test_iterate_until (context, atomic_load (&c.near.wakes) > 0);
  g_thread_join (t);
  waiter_assert_expired (&c.near);
  g_assert_cmpint (atomic_load (&far.wakes), ==, 0);

  ws_timer_driver_disarm (c.driver, &far.timer);
  g_assert_cmpint (atomic_load (&far.refs), ==, 0);
  ws_timer_driver_unref (c.driver);
  g_main_context_unref (context);
}

/* More timers due at once than one batch takes (64): the dispatch that
 * wakes the first of them wakes them all (no worker: no bound, D9). */
#define N_MANY 200

static void
test_many_due (void)
{
  GMainContext *context = g_main_context_new ();
  WsTimerDriver *driver = ws_timer_driver_ref_for_context (context);
  g_autofree Waiter *w = g_new (Waiter, N_MANY);
  gint64 deadline = g_get_monotonic_time () + 2000;
  guint woken = 0;

  for (guint i = 0; i < N_MANY; i++)
    {
      waiter_init (&w[i], deadline);
      g_assert_true (waiter_arm (driver, &w[i]));
    }
  g_assert_cmpuint (ws_timer_driver_get_n_timers (driver), ==, N_MANY);

  while (woken == 0)
    {
      g_main_context_iteration (context, TRUE);
      for (guint i = 0; i < N_MANY; i++)
        woken += atomic_load (&w[i].wakes);
    }
  g_assert_cmpuint (woken, ==, N_MANY);
  for (guint i = 0; i < N_MANY; i++)
    waiter_assert_expired (&w[i]);

  ws_timer_driver_unref (driver);
  g_main_context_unref (context);
}

/* D8: the first wake of a batch iterates the context again (a nested
 * main loop run by a GTask's callback): the nested dispatch wakes the
 * rest of the batch; every waker is woken once. */
typedef struct
{
  GMainContext *context;
  Waiter       *w;
  guint         n;
  guint         woken_in_nested;
} Nested;

static void
iterate_nested (gpointer data)
{
  Nested *n = data;

  for (guint i = 0; i < n->n; i++)
    n->w[i].on_wake = NULL;
  g_main_context_iteration (n->context, FALSE);
  for (guint i = 0; i < n->n; i++)
    n->woken_in_nested += atomic_load (&n->w[i].wakes);
}

static void
test_nested_dispatch (void)
{
  GMainContext *context = g_main_context_new ();
  WsTimerDriver *driver = ws_timer_driver_ref_for_context (context);
  Waiter w[8];
  Nested n = { context, w, G_N_ELEMENTS (w), 0 };
  gint64 deadline = g_get_monotonic_time () + 2000;

  /* Whichever waker the batch wakes first runs the nested iteration,
   * after it took the hook off every waker. */
  for (guint i = 0; i < G_N_ELEMENTS (w); i++)
    {
      waiter_init (&w[i], deadline);
      w[i].on_wake = iterate_nested;
      w[i].on_wake_data = &n;
      g_assert_true (waiter_arm (driver, &w[i]));
    }
  ws_test_iterate_until (context, n.woken_in_nested > 0);
  g_assert_cmpuint (n.woken_in_nested, ==, G_N_ELEMENTS (w));
  for (guint i = 0; i < G_N_ELEMENTS (w); i++)
    waiter_assert_expired (&w[i]);

  ws_timer_driver_unref (driver);
  g_main_context_unref (context);
}

/* D10: the owner of a timer that a dispatch on another thread expired
 * finds its waker slot empty, disarms without the lock and frees the
 * timer at once. The dispatch wrote the timer for the last time when it
 * emptied the slot; a write after it would be a use after free (ASan)
 * and a race with the free (TSan). */
#define N_FREED 200

typedef struct
{
  GMainContext  *context;
  _Atomic gint   stop;
} Dispatcher;

static gpointer
dispatch_thread (gpointer data)
{
  Dispatcher *d = data;

  while (!atomic_load (&d->stop))
    g_main_context_iteration (d->context, TRUE);
  return NULL;
}

static void
test_free_after_dispatch (void)
{
  GMainContext *context = g_main_context_new ();
  WsTimerDriver *driver = ws_timer_driver_ref_for_context (context);
  Dispatcher d = { context, };
  gint n_armed = 0;
  Waiter w;
  GThread *t;

  waiter_init (&w, 0);
  atomic_init (&d.stop, 0);
  t = g_thread_new ("dispatch", dispatch_thread, &d);
  for (guint i = 0; i < N_FREED; i++)
    {
      WsTimer *timer = g_new (WsTimer, 1);
      gint64 now = g_get_monotonic_time ();

      ws_timer_init (timer);
      atomic_store (&w.deadline, now + 500);
      /* FALSE only if the dispatching thread's clock passed the tick
       * already: the slot is then empty too. */
      if (ws_timer_driver_arm_waker (driver, timer, &w.deadline, now, &w.waker))
        {
          n_armed++;
          /* What a poll woken by something else sees once the timer
           * fired: the slot emptied by the dispatch. */
          ws_test_wait_until (atomic_load_explicit (&timer->waker, memory_order_acquire) == NULL);
        }
      ws_timer_driver_disarm (driver, timer);
      g_free (timer);
    }
  atomic_store (&d.stop, 1);
  g_main_context_wakeup (context);
  g_thread_join (t);

  /* Every armed timer was expired by the dispatch and woke its waiter
   * once, and the driver dropped every reference it took. */
  g_assert_cmpint (atomic_load (&w.wakes), ==, n_armed);
  g_assert_cmpint (atomic_load (&w.refs), ==, 0);
  g_assert_cmpuint (ws_timer_driver_get_n_timers (driver), ==, 0);
  ws_timer_driver_unref (driver);
  g_main_context_unref (context);
}

WS_TEST_MAIN ({ "/timer-driver/per-context", test_driver_per_context },
              { "/timer-driver/arm-passed", test_arm_passed },
              { "/timer-driver/expire", test_expire },
              { "/timer-driver/disarm-and-replace", test_disarm_and_replace },
              { "/timer-driver/reset", test_reset },
              { "/timer-driver/arm-from-other-thread", test_arm_from_other_thread },
              { "/timer-driver/many-due", test_many_due },
              { "/timer-driver/nested-dispatch", test_nested_dispatch },
              { "/timer-driver/free-after-dispatch", test_free_after_dispatch })
