/* test-parker.c: a worker sleeps by iterating its GMainContext
 * (ws-parker)
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * An unpark before the park is kept and taken at once, exactly once; an
 * unpark from another thread wakes a parked thread; park_until times out
 * at its deadline, not before; a parked thread dispatches its context and
 * goes on sleeping.
 */

#include "config.h"

#include "../ws-test-fixture.h"
#include "ws-parker-private.h"

/* The deadline of a park that an unpark must end: an hour, so that a
 * TRUE from park_until is the unpark's, and a lost one is a hang the
 * watchdog reports, not a timing the machine decides. */
#define UNPARKED_WITHIN G_TIME_SPAN_HOUR

typedef struct
{
  GMainContext *context;
  WsParker      parker;
} Parked;

static void
parked_init (Parked *p)
{
  p->context = g_main_context_new ();
  ws_parker_init (&p->parker, p->context);
}

static void
parked_clear (Parked *p)
{
  g_main_context_unref (p->context);
}

/* Parks until @timeout_usec from now; returns what park_until returned and
 * how long it took. */
static gboolean
park_for (Parked *p,
          gint64  timeout_usec,
          gint64 *took)
{
  gint64 start = g_get_monotonic_time ();
  gboolean notified = ws_parker_park_until (&p->parker, start + timeout_usec);

  *took = g_get_monotonic_time () - start;
  return notified;
}

static void
test_unpark_before_park (void)
{
  Parked p;
  gint64 took;

  parked_init (&p);
  ws_parker_unpark (&p.parker);
  g_assert_true (park_for (&p, UNPARKED_WITHIN, &took));

  /* Taken once: the next park sleeps to its deadline. */
  g_assert_false (park_for (&p, 20 * G_TIME_SPAN_MILLISECOND, &took));
  g_assert_cmpint (took, >=, 20 * G_TIME_SPAN_MILLISECOND);

  /* Two unparks are one notification. */
  ws_parker_unpark (&p.parker);
  ws_parker_unpark (&p.parker);
  g_assert_true (park_for (&p, UNPARKED_WITHIN, &took));
  g_assert_false (park_for (&p, 1 * G_TIME_SPAN_MILLISECOND, &took));

  /* ws_parker_park () takes a pending notification too. */
  ws_parker_unpark (&p.parker);
  ws_parker_park (&p.parker);
  g_assert_false (park_for (&p, 1 * G_TIME_SPAN_MILLISECOND, &took));
  parked_clear (&p);
}

/* A thread that unparks @data (a Parked) after 50 ms. */
static gpointer
unpark_later_thread (gpointer data)
{
  Parked *p = data;

  g_usleep (50 * 1000);
  ws_parker_unpark (&p->parker);
  return NULL;
}

typedef struct
{
  Parked           p;
  _Atomic gboolean returned;
} Sleeper;

static gpointer
park_thread (gpointer data)
{
  Sleeper *s = data;

  ws_parker_park (&s->p.parker);
  atomic_store (&s->returned, TRUE);
  return NULL;
}

/* Another thread's unpark wakes the parked thread: promptly, not at its
 * deadline (without g_main_context_wakeup the poll would sleep on). */
static void
test_unpark_from_another_thread (void)
{
  Parked p;
  Sleeper s = { { NULL, }, };
  GThread *thread;
  gint64 took;

  parked_init (&p);
  thread = g_thread_new ("unparker", unpark_later_thread, &p);
  g_assert_true (park_for (&p, UNPARKED_WITHIN, &took));
  g_thread_join (thread);
  parked_clear (&p);

  /* The other way round: a thread parks without a deadline. */
  parked_init (&s.p);
  thread = g_thread_new ("parked", park_thread, &s);
  g_usleep (50 * 1000);
  g_assert_false (atomic_load (&s.returned));
  ws_parker_unpark (&s.p.parker);
  ws_test_wait_until (atomic_load (&s.returned));
  g_thread_join (thread);
  parked_clear (&s.p);
}

static void
test_park_until_times_out (void)
{
  Parked p;
  gint64 took;

  parked_init (&p);
  g_assert_false (park_for (&p, 50 * G_TIME_SPAN_MILLISECOND, &took));
  g_assert_cmpint (took, >=, 50 * G_TIME_SPAN_MILLISECOND);

  /* A deadline already past returns at once. */
  g_assert_false (ws_parker_park_until (&p.parker, g_get_monotonic_time () - 1));

  /* After a timeout the parker still takes a notification. */
  ws_parker_unpark (&p.parker);
  g_assert_true (park_for (&p, UNPARKED_WITHIN, &took));
  parked_clear (&p);
}

/* While parked, the thread dispatches its context: a timer fires, and the
 * park goes on; a source that unparks ends it. */
typedef struct
{
  WsParker *parker;
  guint     fired;
} FireCount;

/* Counts its fires; the third unparks. */
static gboolean
count_fire (gpointer data)
{
  FireCount *c = data;

  if (++c->fired == 3)
    ws_parker_unpark (c->parker);
  return G_SOURCE_CONTINUE;
}

static gboolean
unpark_from_source (gpointer data)
{
  ws_parker_unpark (data);
  return G_SOURCE_REMOVE;
}

static void
test_dispatches_context (void)
{
  Parked p;
  GSource *timer = g_timeout_source_new (5);
  GSource *waker;
  FireCount count = { NULL, 0 };
  gint64 took, before;

  parked_init (&p);
  count.parker = &p.parker;
  g_source_set_callback (timer, count_fire, &count, NULL);
  g_source_attach (timer, p.context);
  /* Only the timer's third fire ends the park: the park dispatched the
   * context, and went on after each of the first two. */
  g_assert_true (park_for (&p, UNPARKED_WITHIN, &took));
  g_assert_cmpuint (count.fired, ==, 3);
  g_source_destroy (timer);
  g_source_unref (timer);

  /* Its 30 ms count from its creation. */
  before = g_get_monotonic_time ();
  waker = g_timeout_source_new (30);
  g_source_set_callback (waker, unpark_from_source, &p.parker, NULL);
  g_source_attach (waker, p.context);
  g_assert_true (park_for (&p, UNPARKED_WITHIN, &took));
  g_assert_cmpint (g_get_monotonic_time () - before, >=, 30 * G_TIME_SPAN_MILLISECOND);
  g_source_destroy (waker);
  g_source_unref (waker);
  parked_clear (&p);
}

/* Unparks at random moments around the park, from another thread: every
 * round is woken promptly. */
typedef struct
{
  Parked       *p;
  _Atomic guint round;
  _Atomic guint unparked;
  guint         n_rounds;
} Racer;

static gpointer
racing_unparker_thread (gpointer data)
{
  Racer *r = data;

  for (guint i = 0; i < r->n_rounds; i++)
    {
      ws_test_wait_until (atomic_load (&r->round) > i);
      for (volatile guint spin = g_random_int_range (0, 20000); spin > 0; spin--)
        ;
      ws_parker_unpark (&r->p->parker);
      atomic_store (&r->unparked, i + 1);
    }
  return NULL;
}

static void
test_unpark_races_park (void)
{
  Parked p;
  Racer r = { &p, 0, 0, 200 };
  GThread *thread;
  gint64 took;

  parked_init (&p);
  thread = g_thread_new ("unparker", racing_unparker_thread, &r);
  for (guint i = 0; i < r.n_rounds; i++)
    {
      atomic_store (&r.round, i + 1);
      g_assert_true (park_for (&p, UNPARKED_WITHIN, &took));
          /* The notification taken was this round's. */
      ws_test_wait_until (atomic_load (&r.unparked) == i + 1);
    }
  g_thread_join (thread);
  parked_clear (&p);
}

WS_TEST_MAIN ({ "/parker/unpark-before-park", test_unpark_before_park },
              { "/parker/unpark-from-another-thread", test_unpark_from_another_thread },
              { "/parker/park-until-times-out", test_park_until_times_out },
              { "/parker/dispatches-context", test_dispatches_context },
              { "/parker/unpark-races-park", test_unpark_races_park })
