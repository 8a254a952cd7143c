/* test-blocking-pool-core.c: the blocking pool against the core alone
 * (ws-blocking-pool; tests/test-blocking-pool.c tests it through the
 * GObject face, tests/core/test-run-meter.c its run meter)
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A configuration and a runtime count of the test's own: no thread before
 * the first spawn; a job runs on a thread of the pool (which holds the
 * runtime while it lives), never on the spawner's; with one thread,
 * jobs run in submission order; a job that returned PENDING keeps its
 * thread and is polled again there when woken from elsewhere; the close
 * refuses later spawns (destroy notify run before the spawn returns,
 * never polled) and cancels the job left waiting; the shutdown returns
 * once every thread has left, and each thread lets go of the runtime.
 * ws-blocking-pool.c's opening comment states each of these.
 */

#include "config.h"

#include <stdatomic.h>

#include "../ws-test-util.h"
#include "ws-blocking-pool-private.h"
#include "ws-waker-private.h"

typedef struct
{
  WsConfig        config;
  WsRuntimeRef    runtime;
  WsBlockingPool *pool;
} Fixture;

static void
runtime_last_unref (WsRuntimeRef *self)
{
  /* The fixture holds one reference to the end. */
  g_assert_not_reached ();
}

static void
fixture_init (Fixture *f,
              guint    max_threads)
{
  /* A keep-alive no test reaches: no thread retires under a test. */
  f->config = (WsConfig) { .thread_name_prefix = (gchar *) "blocking-test", .budget = 128,
                           .max_blocking_threads = max_threads,
                           .blocking_keep_alive = 3600 * (gint64) G_USEC_PER_SEC };
  atomic_init (&f->runtime.count, 1);
  f->runtime.last_unref = runtime_last_unref;
  f->pool = ws_blocking_pool_new (&f->config, &f->runtime);
}

static void
fixture_clear (Fixture *f)
{
  guint n_threads, n_idle, depth;

  ws_blocking_pool_close (f->pool);
  g_assert_true (ws_blocking_pool_shutdown (f->pool, -1));
  ws_blocking_pool_get_counts (f->pool, &n_threads, &n_idle, &depth);
  g_assert_cmpuint (n_threads, ==, 0);
  g_assert_cmpuint (depth, ==, 0);
  g_assert_cmpint (ws_task_registry_count (ws_blocking_pool_get_registry (f->pool)), ==, 0);
  /* A thread lets go of the runtime last, after the shutdown saw it
   * leave: the runtime's last unref, not the shutdown, frees the pool. */
  ws_test_wait_until (atomic_load (&f->runtime.count) == 1);
  ws_blocking_pool_free (f->pool);
}

/* A job of the test: READY at its @ready_at-th poll (0: never); a poll
 * before that keeps its waker. Notes the order it first ran in and the
 * threads of its polls. */
typedef struct
{
  Fixture      *f;
  guint         ready_at;
  _Atomic guint *next_order;
  guint         order;
  _Atomic guint polls;
  _Atomic guint destroyed;
  GThread      *first_thread;
  GThread      *last_thread;
  gboolean      on_pool;        /* every poll had ws_thread.blocking_pool */
  WsLock        lock;
  WsWaker      *waker;          /* under lock */
} Job;

static void
job_init (Job     *j,
          Fixture *f,
          guint    ready_at)
{
  *j = (Job) { .f = f, .ready_at = ready_at, .on_pool = TRUE };
  atomic_init (&j->polls, 0);
  atomic_init (&j->destroyed, 0);
  ws_lock_init (&j->lock);
}

static void
job_clear (Job *j)
{
  g_assert_null (j->waker);
  ws_lock_clear (&j->lock);
}

static WsPoll
job_poll (WsContext *cx,
          gpointer   data)
{
  Job *j = data;
  guint polls = atomic_load (&j->polls) + 1;
  WsWaker *old;

  if (polls == 1)
    {
      j->first_thread = g_thread_self ();
      if (j->next_order != NULL)
        j->order = atomic_fetch_add (j->next_order, 1);
    }
  j->last_thread = g_thread_self ();
  if (ws_thread.blocking_pool != j->f->pool)
    j->on_pool = FALSE;
  if (j->ready_at == 0 || polls < j->ready_at)
    {
      ws_lock_lock (&j->lock);
      old = ws_waker_slot_replace (&j->waker, cx);
      ws_lock_unlock (&j->lock);
      if (old != NULL)
        old->vtable->unref (old);
    }
  /* Last: the test reads what the poll wrote once it sees the count. */
  atomic_store (&j->polls, polls);
  return j->ready_at != 0 && polls >= j->ready_at ? WS_POLL_READY : WS_POLL_PENDING;
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
  g_assert_null (ws_blocking_pool_spawn (j->f->pool, job_poll, j, job_destroy, FALSE));
}

/* Takes the waker a poll of @j kept. */
static WsWaker *
job_take_waker (Job *j)
{
  WsWaker *waker = NULL;

  while (waker == NULL)
    {
      ws_lock_lock (&j->lock);
      waker = g_steal_pointer (&j->waker);
      ws_lock_unlock (&j->lock);
      if (waker == NULL)
        g_thread_yield ();
    }
  return waker;
}

/* No thread before the first spawn; the job runs on a thread of the
 * pool, which holds the runtime while it lives. */
static void
test_runs_on_pool_thread (void)
{
  Fixture f;
  guint n_threads, n_idle, depth;
  Job j;

  fixture_init (&f, 4);
  ws_blocking_pool_get_counts (f.pool, &n_threads, &n_idle, &depth);
  g_assert_cmpuint (n_threads, ==, 0);
  g_assert_cmpint (atomic_load (&f.runtime.count), ==, 1);

  job_init (&j, &f, 1);
  job_spawn (&j);
  ws_test_wait_until (atomic_load (&j.destroyed) == 1);
  g_assert_cmpuint (atomic_load (&j.polls), ==, 1);
  g_assert_true (j.on_pool);
  g_assert_true (j.first_thread != g_thread_self ());
  ws_blocking_pool_get_counts (f.pool, &n_threads, &n_idle, &depth);
  g_assert_cmpuint (n_threads, >=, 1);
  g_assert_cmpuint (n_threads, <=, 4);
  g_assert_cmpint (atomic_load (&f.runtime.count), >, 1);
  job_clear (&j);
  fixture_clear (&f);
}

/* One thread: jobs run one at a time, in submission order. */
#define N_ORDER 50

static void
test_submission_order (void)
{
  Fixture f;
  g_autofree Job *j = g_new (Job, N_ORDER);
  _Atomic guint next_order;

  fixture_init (&f, 1);
  atomic_init (&next_order, 0);
  for (guint i = 0; i < N_ORDER; i++)
    {
      job_init (&j[i], &f, 1);
      j[i].next_order = &next_order;
      job_spawn (&j[i]);
    }
  for (guint i = 0; i < N_ORDER; i++)
    ws_test_wait_until (atomic_load (&j[i].destroyed) == 1);
  for (guint i = 0; i < N_ORDER; i++)
    {
      g_assert_cmpuint (j[i].order, ==, i);
      g_assert_true (j[i].first_thread == j[0].first_thread);
      job_clear (&j[i]);
    }
  fixture_clear (&f);
}

/* A job that returned PENDING keeps its thread: woken from this thread,
 * it is polled again on the thread that polled it first. */
static void
test_pending_keeps_thread (void)
{
  Fixture f;
  Job j;

  fixture_init (&f, 4);
  job_init (&j, &f, 2);
  job_spawn (&j);
  ws_waker_take_and_wake (job_take_waker (&j));
  ws_test_wait_until (atomic_load (&j.destroyed) == 1);
  g_assert_cmpuint (atomic_load (&j.polls), ==, 2);
  g_assert_true (j.last_thread == j.first_thread);
  g_assert_true (j.on_pool);
  job_clear (&j);
  fixture_clear (&f);
}

/* The close refuses a later spawn (its destroy notify has run when the
 * spawn returns; never polled) and cancels the job left waiting, once;
 * the shutdown then sees every thread gone (fixture_clear). */
static void
test_close_cancels_waiting (void)
{
  Fixture f;
  Job waiting, late;

  fixture_init (&f, 4);
  job_init (&waiting, &f, 0);
  job_spawn (&waiting);
  ws_test_wait_until (atomic_load (&waiting.polls) == 1);
  g_assert_cmpint (ws_task_registry_count (ws_blocking_pool_get_registry (f.pool)), ==, 1);

  ws_blocking_pool_close (f.pool);
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

WS_TEST_MAIN ({ "/blocking-pool-core/runs-on-pool-thread", test_runs_on_pool_thread },
              { "/blocking-pool-core/submission-order", test_submission_order },
              { "/blocking-pool-core/pending-keeps-thread", test_pending_keeps_thread },
              { "/blocking-pool-core/close-cancels-waiting", test_close_cancels_waiting })
