/* test-worker-pool.c: the worker pool (ws-worker-pool)
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Against the pool alone, without a runtime core: a configuration, a
 * runtime count and a hand-off of the test's own. The workers start
 * lazily, once, each holding the runtime; a task spawned from outside or
 * from a worker is polled once on a worker and destroyed; a wake from a
 * thread of the test (a foreign push) brings a waiting task back to a
 * worker; shutdown refuses later spawns (their destroy notify run before
 * the spawn returns, never polled), ends a task left waiting, joins the
 * workers and gives their runtime references back; a pool never started
 * is shut down without a thread. The steps and the properties (R), (S),
 * (H) are those of ws-worker-pool.c's opening comment.
 */

#include "config.h"

#include <stdatomic.h>

#include "../ws-test-util.h"
#include "ws-worker-pool-private.h"
#include "ws-worker-private.h"
#include "ws-waker-private.h"

typedef struct
{
  WsConfig      config;
  WsRuntimeRef  runtime;
  WsWorkerPool *pool;
} Fixture;

static void
runtime_last_unref (WsRuntimeRef *self)
{
  /* The fixture holds one reference to the end. */
  g_assert_not_reached ();
}

/* No task of these tests calls ws_block_in_place (). */
static gboolean
adopt_none (gpointer data)
{
  return FALSE;
}

static void
run_none (gpointer data)
{
  g_assert_not_reached ();
}

static void
fixture_init (Fixture *f)
{
  WsThreadHandOff hand_off = { adopt_none, run_none, NULL };

  f->config = (WsConfig) { .n_workers = 2, .thread_name_prefix = (gchar *) "pool-test",
                           .global_queue_interval = 31, .event_interval = 61,
                           .budget = 128 };
  atomic_init (&f->runtime.count, 1);
  f->runtime.last_unref = runtime_last_unref;
  f->pool = ws_worker_pool_new (&f->config, &f->runtime, &hand_off);
}

/* Shutdown from a thread of the test (steps 1 to 6): every task has
 * ended, the workers are joined, and the runtime count is the fixture's
 * alone. */
static void
fixture_clear (Fixture *f)
{
  gboolean drained = FALSE;

  if (!ws_worker_pool_is_shutdown (f->pool))
    ws_worker_pool_begin_shutdown (f->pool);
  g_assert_true (ws_worker_pool_stop (f->pool, -1, TRUE, &drained));
  g_assert_true (drained);
  g_assert_true (ws_worker_pool_dispatch_contexts (f->pool, -1, TRUE));
  g_assert_cmpint (ws_worker_pool_alive_tasks (f->pool), ==, 0);
  g_assert_cmpint (atomic_load (&f->runtime.count), ==, 1);
  ws_worker_pool_free (f->pool);
}

/* A task of the test: READY at its @ready_at-th poll (0: never); a poll
 * before that keeps its waker in the slot. Each poll notes whether it
 * ran on one of the pool's workers. */
typedef struct _Job Job;
struct _Job
{
  Fixture      *f;
  guint         ready_at;
  guint         n_children;     /* spawned from its first poll */
  Job          *children;
  _Atomic guint polls;
  _Atomic guint polls_off_worker;
  _Atomic guint destroyed;
  WsLock        lock;
  WsWaker      *waker;          /* under lock */
};

static void
job_init (Job     *j,
          Fixture *f,
          guint    ready_at)
{
  *j = (Job) { .f = f, .ready_at = ready_at };
  atomic_init (&j->polls, 0);
  atomic_init (&j->polls_off_worker, 0);
  atomic_init (&j->destroyed, 0);
  ws_lock_init (&j->lock);
}

static void
job_clear (Job *j)
{
  g_assert_null (j->waker);
  ws_lock_clear (&j->lock);
}

static void job_spawn (Job *j);

static WsPoll
job_poll (WsContext *cx,
          gpointer   data)
{
  Job *j = data;
  guint polls = atomic_fetch_add (&j->polls, 1) + 1;
  WsWorker *w = ws_worker_get_current ();
  WsWaker *old;

  if (w == NULL || w->pool != j->f->pool)
    atomic_fetch_add (&j->polls_off_worker, 1);
  if (polls == 1)
    for (guint i = 0; i < j->n_children; i++)
      job_spawn (&j->children[i]);
  if (j->ready_at != 0 && polls >= j->ready_at)
    return WS_POLL_READY;
  ws_lock_lock (&j->lock);
  old = ws_waker_slot_replace (&j->waker, cx);
  ws_lock_unlock (&j->lock);
  if (old != NULL)
    old->vtable->unref (old);
  return WS_POLL_PENDING;
}

static void
job_destroy (gpointer data)
{
  Job *j = data;
  WsWaker *waker;

  ws_lock_lock (&j->lock);
  waker = g_steal_pointer (&j->waker);
  ws_lock_unlock (&j->lock);
  if (waker != NULL)
    waker->vtable->unref (waker);
  atomic_fetch_add (&j->destroyed, 1);
}

static void
job_spawn (Job *j)
{
  g_assert_null (ws_worker_pool_spawn (j->f->pool, job_poll, j, job_destroy, FALSE, 0, NULL, 0));
}

/* Polled once, on a worker, and destroyed. */
static void
job_assert_ran_once (Job *j)
{
  g_assert_cmpuint (atomic_load (&j->polls), ==, 1);
  g_assert_cmpuint (atomic_load (&j->polls_off_worker), ==, 0);
  g_assert_cmpuint (atomic_load (&j->destroyed), ==, 1);
}

/* No worker before the start; the start is once-only, and each worker
 * holds the runtime while it runs. */
static void
test_lazy_start (void)
{
  Fixture f;
  GError *error = NULL;

  fixture_init (&f);
  g_assert_false (ws_worker_pool_has_started (f.pool));
  g_assert_nonnull (ws_worker_pool_get_context (f.pool, 0));
  g_assert_true (ws_worker_pool_get_context (f.pool, 0)
                 != ws_worker_pool_get_context (f.pool, 1));
  g_assert_cmpint (atomic_load (&f.runtime.count), ==, 1);

  g_assert_true (ws_worker_pool_start (f.pool, &error));
  g_assert_no_error (error);
  g_assert_true (ws_worker_pool_has_started (f.pool));
  g_assert_cmpint (atomic_load (&f.runtime.count), ==, 1 + 2);
  g_assert_true (ws_worker_pool_start (f.pool, &error));
  g_assert_cmpint (atomic_load (&f.runtime.count), ==, 1 + 2);
  g_assert_false (ws_worker_pool_is_shutdown (f.pool));

  fixture_clear (&f);
}

/* Spawned from a thread of the test (the gate, the injection queue):
 * each polled once on a worker, then destroyed; the alive count goes
 * back to 0. */
#define N_OUTSIDE 200

static void
test_spawn_from_outside (void)
{
  Fixture f;
  g_autofree Job *j = g_new (Job, N_OUTSIDE);

  fixture_init (&f);
  g_assert_true (ws_worker_pool_start (f.pool, NULL));
  for (guint i = 0; i < N_OUTSIDE; i++)
    {
      job_init (&j[i], &f, 1);
      job_spawn (&j[i]);
    }
  for (guint i = 0; i < N_OUTSIDE; i++)
    ws_test_wait_until (atomic_load (&j[i].destroyed) == 1);
  ws_test_wait_until (ws_worker_pool_alive_tasks (f.pool) == 0);
  for (guint i = 0; i < N_OUTSIDE; i++)
    {
      job_assert_ran_once (&j[i]);
      job_clear (&j[i]);
    }
  fixture_clear (&f);
}

/* Spawned from a worker's poll (its local queue, no gate): each child
 * polled once on a worker. */
#define N_CHILDREN 50

static void
test_spawn_from_worker (void)
{
  Fixture f;
  Job parent;
  g_autofree Job *children = g_new (Job, N_CHILDREN);

  fixture_init (&f);
  g_assert_true (ws_worker_pool_start (f.pool, NULL));
  for (guint i = 0; i < N_CHILDREN; i++)
    job_init (&children[i], &f, 1);
  job_init (&parent, &f, 1);
  parent.n_children = N_CHILDREN;
  parent.children = children;
  job_spawn (&parent);
  for (guint i = 0; i < N_CHILDREN; i++)
    ws_test_wait_until (atomic_load (&children[i].destroyed) == 1);
  ws_test_wait_until (atomic_load (&parent.destroyed) == 1);
  job_assert_ran_once (&parent);
  for (guint i = 0; i < N_CHILDREN; i++)
    {
      job_assert_ran_once (&children[i]);
      job_clear (&children[i]);
    }
  job_clear (&parent);
  fixture_clear (&f);
}

/* A task waiting on its waker, woken from this thread (a foreign push):
 * polled again on a worker, READY, destroyed. */
static void
test_foreign_wake (void)
{
  Fixture f;
  WsWaker *waker = NULL;
  Job j;

  fixture_init (&f);
  g_assert_true (ws_worker_pool_start (f.pool, NULL));
  job_init (&j, &f, 2);
  job_spawn (&j);
  while (waker == NULL)
    {
      ws_lock_lock (&j.lock);
      waker = g_steal_pointer (&j.waker);
      ws_lock_unlock (&j.lock);
      if (waker == NULL)
        g_thread_yield ();
    }
  g_assert_cmpint (ws_worker_pool_alive_tasks (f.pool), ==, 1);
  ws_waker_take_and_wake (waker);
  ws_test_wait_until (atomic_load (&j.destroyed) == 1);
  g_assert_cmpuint (atomic_load (&j.polls), ==, 2);
  g_assert_cmpuint (atomic_load (&j.polls_off_worker), ==, 0);
  job_clear (&j);
  fixture_clear (&f);
}

/* Shutdown of a started pool: a spawn after its first step is refused
 * (destroy notify run before the spawn returns, never polled, never
 * counted); the task left waiting is ended once, after its one poll;
 * the workers are joined and their references given back
 * (fixture_clear). */
static void
test_shutdown_ends_waiting (void)
{
  Fixture f;
  Job waiting, late;

  fixture_init (&f);
  g_assert_true (ws_worker_pool_start (f.pool, NULL));
  job_init (&waiting, &f, 0);
  job_spawn (&waiting);
  ws_test_wait_until (atomic_load (&waiting.polls) == 1);

  ws_worker_pool_begin_shutdown (f.pool);
  g_assert_true (ws_worker_pool_is_shutdown (f.pool));
  job_init (&late, &f, 1);
  job_spawn (&late);
  g_assert_cmpuint (atomic_load (&late.destroyed), ==, 1);
  g_assert_cmpuint (atomic_load (&late.polls), ==, 0);

  fixture_clear (&f);
  g_assert_cmpuint (atomic_load (&waiting.destroyed), ==, 1);
  g_assert_cmpuint (atomic_load (&waiting.polls), ==, 1);
  job_clear (&waiting);
  job_clear (&late);
}

/* Shutdown of a pool never started: no worker starts (S), a spawn is
 * refused, a start afterwards starts nothing, and the stop has nothing to
 * wait for. */
static void
test_shutdown_unstarted (void)
{
  Fixture f;
  Job late;

  fixture_init (&f);
  ws_worker_pool_begin_shutdown (f.pool);
  g_assert_true (ws_worker_pool_has_started (f.pool));
  job_init (&late, &f, 1);
  job_spawn (&late);
  g_assert_cmpuint (atomic_load (&late.destroyed), ==, 1);
  g_assert_cmpuint (atomic_load (&late.polls), ==, 0);
  g_assert_true (ws_worker_pool_start (f.pool, NULL));
  g_assert_cmpint (atomic_load (&f.runtime.count), ==, 1);
  fixture_clear (&f);
  job_clear (&late);
}

WS_TEST_MAIN ({ "/worker-pool/lazy-start", test_lazy_start },
              { "/worker-pool/spawn-from-outside", test_spawn_from_outside },
              { "/worker-pool/spawn-from-worker", test_spawn_from_worker },
              { "/worker-pool/foreign-wake", test_foreign_wake },
              { "/worker-pool/shutdown-ends-waiting", test_shutdown_ends_waiting },
              { "/worker-pool/shutdown-unstarted", test_shutdown_unstarted })
