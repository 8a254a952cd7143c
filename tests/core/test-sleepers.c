/* test-sleepers.c: which workers sleep and how many search (ws-sleepers)
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The bounds of the searching count, the last searcher, the stack of
 * parked workers and who is picked to be woken, removal by id, and the
 * Dekker pattern of the whole protocol: producers that store work and
 * then look for a worker to wake, against workers that announce their
 * park and then look at the work, never leave work behind while every
 * worker sleeps.
 */

#include "config.h"

#include "../ws-test-fixture.h"
#include "ws-sleepers-private.h"
#include "ws-parker-private.h"

/* Fewer than half the workers search: ceil (n / 2) may start. */
static void
test_to_searching_limit (void)
{
  for (guint n = 1; n <= 9; n++)
    {
      WsSleepers s;
      guint started = 0;

      ws_sleepers_init (&s, n);
      while (ws_sleepers_transition_to_searching (&s))
        started++;
      g_assert_cmpuint (started, ==, (n + 1) / 2);
      g_assert_cmpuint (ws_sleepers_n_searching (&s), ==, started);

      /* One ends: one more may start, and only one. */
      ws_sleepers_transition_from_searching (&s);
      g_assert_true (ws_sleepers_transition_to_searching (&s));
      g_assert_false (ws_sleepers_transition_to_searching (&s));

      while (ws_sleepers_n_searching (&s) > 0)
        ws_sleepers_transition_from_searching (&s);
      ws_sleepers_clear (&s);
    }
}

/* Only the last searcher to stop is told so (it must wake another). */
static void
test_from_searching_last (void)
{
  WsSleepers s;

  ws_sleepers_init (&s, 8);
  for (guint i = 0; i < 3; i++)
    g_assert_true (ws_sleepers_transition_to_searching (&s));
  g_assert_false (ws_sleepers_transition_from_searching (&s));
  g_assert_false (ws_sleepers_transition_from_searching (&s));
  g_assert_cmpuint (ws_sleepers_n_searching (&s), ==, 1);
  g_assert_true (ws_sleepers_transition_from_searching (&s));
  g_assert_cmpuint (ws_sleepers_n_searching (&s), ==, 0);

  /* Again from zero: a lone searcher is the last. */
  g_assert_true (ws_sleepers_transition_to_searching (&s));
  g_assert_true (ws_sleepers_transition_from_searching (&s));
  ws_sleepers_clear (&s);
}

/* Parked workers form a stack; one is picked only when nobody searches,
 * and it then counts as searching. */
static void
test_park_and_notify (void)
{
  WsSleepers s;

  ws_sleepers_init (&s, 4);
  /* Nobody parked: nobody to wake. */
  g_assert_cmpint (ws_sleepers_worker_to_notify (&s), ==, -1);

  g_assert_false (ws_sleepers_transition_to_parked (&s, 2, FALSE));
  g_assert_false (ws_sleepers_transition_to_parked (&s, 0, FALSE));
  g_assert_true (ws_sleepers_is_parked (&s, 2));
  g_assert_true (ws_sleepers_is_parked (&s, 0));
  g_assert_false (ws_sleepers_is_parked (&s, 1));
  g_assert_false (ws_sleepers_is_parked (&s, 3));
  g_assert_cmpuint (ws_sleepers_n_searching (&s), ==, 0);

  /* The last to park is the first woken; it searches now. */
  g_assert_cmpint (ws_sleepers_worker_to_notify (&s), ==, 0);
  g_assert_false (ws_sleepers_is_parked (&s, 0));
  g_assert_cmpuint (ws_sleepers_n_searching (&s), ==, 1);

  /* While it searches, work it may find wakes nobody else. */
  g_assert_cmpint (ws_sleepers_worker_to_notify (&s), ==, -1);
  g_assert_true (ws_sleepers_is_parked (&s, 2));

  /* It stops searching, as the last searcher: now 2 can be woken. */
  g_assert_true (ws_sleepers_transition_from_searching (&s));
  g_assert_cmpint (ws_sleepers_worker_to_notify (&s), ==, 2);
  g_assert_false (ws_sleepers_is_parked (&s, 2));
  g_assert_true (ws_sleepers_transition_from_searching (&s));

  /* Everyone awake again. */
  g_assert_cmpint (ws_sleepers_worker_to_notify (&s), ==, -1);
  ws_sleepers_clear (&s);
}

/* A searcher that parks says whether it was the last searcher (it must
 * then re-check every queue); a worker that was not searching never is. */
static void
test_to_parked_last_searcher (void)
{
  WsSleepers s;

  ws_sleepers_init (&s, 4);
  g_assert_true (ws_sleepers_transition_to_searching (&s));
  g_assert_true (ws_sleepers_transition_to_searching (&s));
  g_assert_false (ws_sleepers_transition_to_parked (&s, 0, TRUE));
  g_assert_cmpuint (ws_sleepers_n_searching (&s), ==, 1);
  g_assert_true (ws_sleepers_transition_to_parked (&s, 1, TRUE));
  g_assert_cmpuint (ws_sleepers_n_searching (&s), ==, 0);
  g_assert_false (ws_sleepers_transition_to_parked (&s, 2, FALSE));
  g_assert_true (ws_sleepers_is_parked (&s, 0));
  g_assert_true (ws_sleepers_is_parked (&s, 1));
  g_assert_true (ws_sleepers_is_parked (&s, 2));

  for (guint i = 0; i < 3; i++)
    g_assert_true (ws_sleepers_unpark_worker_by_id (&s, i));
  ws_sleepers_clear (&s);
}

/* Removal by id: only a listed worker, once; it counts as awake and not
 * searching, and the others stay listed. */
static void
test_unpark_by_id (void)
{
  WsSleepers s;

  ws_sleepers_init (&s, 4);
  ws_sleepers_transition_to_parked (&s, 1, FALSE);
  ws_sleepers_transition_to_parked (&s, 3, FALSE);

  g_assert_true (ws_sleepers_unpark_worker_by_id (&s, 1));
  g_assert_false (ws_sleepers_is_parked (&s, 1));
  g_assert_true (ws_sleepers_is_parked (&s, 3));
  g_assert_cmpuint (ws_sleepers_n_searching (&s), ==, 0);
  g_assert_false (ws_sleepers_unpark_worker_by_id (&s, 1));
  g_assert_false (ws_sleepers_unpark_worker_by_id (&s, 0));

  /* 3 is still the one to wake, and then nobody. */
  g_assert_cmpint (ws_sleepers_worker_to_notify (&s), ==, 3);
  g_assert_cmpint (ws_sleepers_worker_to_notify (&s), ==, -1);
  g_assert_false (ws_sleepers_unpark_worker_by_id (&s, 3));
  ws_sleepers_clear (&s);

  /* All four parked: each is woken once, last parked first. */
  ws_sleepers_init (&s, 4);
  for (guint i = 0; i < 4; i++)
    ws_sleepers_transition_to_parked (&s, i, FALSE);
  for (gint i = 3; i >= 0; i--)
    {
      g_assert_cmpint (ws_sleepers_worker_to_notify (&s), ==, i);
      g_assert_true (ws_sleepers_transition_from_searching (&s));
    }
  g_assert_cmpint (ws_sleepers_worker_to_notify (&s), ==, -1);
  ws_sleepers_clear (&s);
}

/* Producers against parking workers, with the protocol of ws-worker.c
 * (work is a counter here, the injection queue's length): a worker takes
 * work while there is some, searches, announces its park, re-checks and
 * sleeps on its parker; a producer adds work and wakes the worker
 * ws_sleepers_worker_to_notify () picks. A lost wake leaves work while
 * every worker sleeps: the consumed count then stops short. */
#define N_WORKERS 3
#define N_ITEMS   20000

typedef struct _Pool Pool;

typedef struct
{
  Pool         *pool;
  guint         index;
  GMainContext *context;
  WsParker      parker;
  GThread      *thread;
} Worker;

struct _Pool
{
  WsSleepers       sleepers;
  Worker           workers[N_WORKERS];
  _Atomic guint    work;
  _Atomic guint    consumed;
  _Atomic guint    parks;
  _Atomic gboolean stop;
};

static void
notify_parked (Pool *pool)
{
  gint w = ws_sleepers_worker_to_notify (&pool->sleepers);

  if (w >= 0)
    ws_parker_unpark (&pool->workers[w].parker);
}

static gboolean
take_work (Pool *pool)
{
  guint n = atomic_load (&pool->work);

  while (n > 0)
    if (atomic_compare_exchange_weak (&pool->work, &n, n - 1))
      return TRUE;
  return FALSE;
}

static gpointer
worker_thread (gpointer data)
{
  Worker *w = data;
  Pool *pool = w->pool;
  gboolean searching = FALSE;

  while (!atomic_load (&pool->stop))
    {
      if (!searching && ws_sleepers_transition_to_searching (&pool->sleepers))
        searching = TRUE;
      if (take_work (pool))
        {
          /* The last searcher to find work wakes another. */
          if (searching && ws_sleepers_transition_from_searching (&pool->sleepers))
            notify_parked (pool);
          searching = FALSE;
          atomic_fetch_add (&pool->consumed, 1);
          continue;
        }

      /* Announce the park, then re-check (one queue here, so the last
       * searcher and the others check the same). */
      ws_sleepers_transition_to_parked (&pool->sleepers, w->index, searching);
      searching = FALSE;
      atomic_thread_fence (memory_order_seq_cst);
      if (atomic_load (&pool->work) > 0)
        notify_parked (pool);

      atomic_fetch_add (&pool->parks, 1);
      for (;;)
        {
          ws_parker_park (&w->parker);
          if (!ws_sleepers_is_parked (&pool->sleepers, w->index))
            {
              searching = TRUE;
              break;
            }
          if (atomic_load (&pool->stop))
            break;
        }
    }
  ws_sleepers_unpark_worker_by_id (&pool->sleepers, w->index);
  if (searching)
    ws_sleepers_transition_from_searching (&pool->sleepers);
  return NULL;
}

static void
test_no_lost_wakeup (void)
{
  Pool pool = { 0, };

  ws_sleepers_init (&pool.sleepers, N_WORKERS);
  for (guint i = 0; i < N_WORKERS; i++)
    {
      Worker *w = &pool.workers[i];

      w->pool = &pool;
      w->index = i;
      w->context = g_main_context_new ();
      ws_parker_init (&w->parker, w->context);
    }
  for (guint i = 0; i < N_WORKERS; i++)
    pool.workers[i].thread = g_thread_new ("worker", worker_thread, &pool.workers[i]);

  for (guint i = 0; i < N_ITEMS; i++)
    {
      /* The producer's side of the Dekker pair: the store, then the
       * look at the idle state (a seq_cst fence in worker_to_notify). */
      atomic_fetch_add (&pool.work, 1);
      notify_parked (&pool);
      /* Now and then a pause, so that the workers run dry and park. */
      if (g_test_rand_int_range (0, 100) < 3)
        g_usleep (g_test_rand_int_range (0, 300));
    }

  /* A lost wake strands work: a hang, which the watchdog reports. */
  ws_test_wait_until (atomic_load (&pool.consumed) == N_ITEMS);
  g_test_message ("consumed %u of %u; the workers parked %u times",
                  atomic_load (&pool.consumed), N_ITEMS, atomic_load (&pool.parks));
  g_assert_cmpuint (atomic_load (&pool.work), ==, 0);
  /* The workers sleep once dry: the wakes were needed. */
  ws_test_wait_until (atomic_load (&pool.parks) > 0);

  atomic_store (&pool.stop, TRUE);
  for (guint i = 0; i < N_WORKERS; i++)
    {
      ws_parker_unpark (&pool.workers[i].parker);
      g_thread_join (pool.workers[i].thread);
      g_main_context_unref (pool.workers[i].context);
    }
  g_assert_cmpuint (ws_sleepers_n_searching (&pool.sleepers), ==, 0);
  ws_sleepers_clear (&pool.sleepers);
}

WS_TEST_MAIN ({ "/sleepers/to-searching-limit", test_to_searching_limit },
              { "/sleepers/from-searching-last", test_from_searching_last },
              { "/sleepers/park-and-notify", test_park_and_notify },
              { "/sleepers/to-parked-last-searcher", test_to_parked_last_searcher },
              { "/sleepers/unpark-by-id", test_unpark_by_id },
              { "/sleepers/no-lost-wakeup", test_no_lost_wakeup })
