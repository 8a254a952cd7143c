/* test-blocking-pool.c: ws_runtime_spawn_blocking and the blocking pool
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Blocking jobs run on their own threads, at most max-blocking-threads at
 * once; idle threads leave after the keep-alive; shutdown gives up on a
 * stuck job after its timeout and cancels the queued ones; a job that
 * returns PENDING keeps its thread until woken.
 */

#include "config.h"

#include "ws-test-fixture.h"

/* Jobs run and return their values. */
static WsPoll
blocking_job (WsContext *cx,
              gpointer   data)
{
  g_usleep (1000);
  return ws_test_return_index (cx, data);
}

static void
test_spawn_blocking (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  WsTask *tasks[16];

  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    tasks[i] = ws_runtime_spawn_blocking (rt, blocking_job, GUINT_TO_POINTER (i), NULL);
  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    {
      g_assert_true (ws_task_wait (tasks[i], NULL, NULL));
      g_assert_cmpuint (g_value_get_uint (ws_task_get_value (tasks[i])), ==, i);
      g_object_unref (tasks[i]);
    }
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* A pool capped at 3 threads runs 12 jobs, never more than 3 at once. */
static _Atomic gint running_now;
static _Atomic gint running_max;

static WsPoll
capped_job (WsContext *cx,
            gpointer   data)
{
  gint now = atomic_fetch_add (&running_now, 1) + 1;
  gint max = atomic_load (&running_max);

  while (now > max && !atomic_compare_exchange_weak (&running_max, &max, now))
    ;
  g_usleep (5000);
  atomic_fetch_sub (&running_now, 1);
  atomic_fetch_add (&ws_test_n_polled, 1);
  return WS_POLL_READY;
}

static void
test_pool_cap (void)
{
  g_autoptr(WsRuntime) rt = ws_test_runtime_new ("n-workers", 1,
                                                 "max-blocking-threads", 3,
                                                 NULL);
  WsTask *jobs[12];
  g_autoptr(WsMetrics) m = NULL;

  atomic_store (&running_now, 0);
  atomic_store (&running_max, 0);
  ws_test_reset_counters ();
  for (guint i = 0; i < G_N_ELEMENTS (jobs); i++)
    jobs[i] = ws_runtime_spawn_blocking (rt, capped_job, NULL, NULL);
  ws_test_wait_all (jobs, G_N_ELEMENTS (jobs));
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, 12);
  g_assert_cmpint (atomic_load (&running_max), <=, 3);
  g_assert_cmpint (atomic_load (&running_max), >=, 2);

  m = ws_runtime_get_metrics (rt);
  g_assert_cmpuint (ws_metrics_get_blocking_threads (m), <=, 3);

  /* The spawn-at-cap race: one job at a time, as the last thread goes
   * idle, 512 times. */
  ws_test_reset_counters ();
  for (guint i = 0; i < 512; i++)
    {
      g_autoptr(WsTask) t = ws_runtime_spawn_blocking (rt, ws_test_count_poll, NULL, NULL);

      g_assert_true (ws_task_wait (t, NULL, NULL));
    }
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, 512);
  g_assert_true (ws_runtime_shutdown (rt, 5 * G_USEC_PER_SEC));
}

static void
test_keep_alive (void)
{
  g_autoptr(WsRuntime) rt = ws_test_runtime_new ("n-workers", 1,
                                                 "blocking-keep-alive", (gint64) 50000,
                                                 NULL);
  WsTask *jobs[4];
  guint threads;

  for (guint i = 0; i < G_N_ELEMENTS (jobs); i++)
    jobs[i] = ws_runtime_spawn_blocking (rt, capped_job, NULL, NULL);
  ws_test_wait_all (jobs, G_N_ELEMENTS (jobs));

  {
    g_autoptr(WsMetrics) m = ws_runtime_get_metrics (rt);

    g_assert_cmpuint (ws_metrics_get_blocking_threads (m), >, 0);
  }

  /* Idle threads leave after the keep-alive (50 ms); wait for it. */
  do
    {
      g_autoptr(WsMetrics) m = NULL;

      g_usleep (10000);
      m = ws_runtime_get_metrics (rt);
      threads = ws_metrics_get_blocking_threads (m);
    }
  while (threads > 0);
  g_assert_cmpuint (threads, ==, 0);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* A job stuck in a loop: shutdown gives up after its timeout. */
static _Atomic gboolean release_stuck;

static WsPoll
stuck_job (WsContext *cx,
           gpointer   data)
{
  atomic_fetch_add (&ws_test_n_polled, 1);
  while (!atomic_load (&release_stuck))
    g_usleep (1000);
  return WS_POLL_READY;
}

static void
test_shutdown_timeout_with_stuck_job (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(WsTask) job = NULL;
  gint64 start;
  gint64 took;

  atomic_store (&release_stuck, FALSE);
  ws_test_reset_counters ();
  job = ws_runtime_spawn_blocking (rt, stuck_job, NULL, NULL);
  ws_test_wait_until (atomic_load (&ws_test_n_polled) > 0);

  start = g_get_monotonic_time ();
  g_assert_false (ws_runtime_shutdown (rt, 100 * 1000));
  took = g_get_monotonic_time () - start;
  g_assert_cmpint (took, <, 5 * G_USEC_PER_SEC);
  g_test_message ("shutdown with a stuck job returned FALSE after %" G_GINT64_FORMAT " us", took);

  atomic_store (&release_stuck, TRUE);
  g_assert_true (ws_task_wait (job, NULL, NULL));
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Queued blocking jobs are cancelled at shutdown, their data freed. */
static void
test_shutdown_cancels_queued_jobs (void)
{
  g_autoptr(WsRuntime) rt = ws_test_runtime_new ("n-workers", 1,
                                                 "max-blocking-threads", 1,
                                                 NULL);
  WsTask *jobs[10];

  atomic_store (&release_stuck, FALSE);
  ws_test_reset_counters ();
  for (guint i = 0; i < G_N_ELEMENTS (jobs); i++)
    jobs[i] = ws_runtime_spawn_blocking (rt, stuck_job, NULL, ws_test_count_destroy);
  ws_test_wait_until (atomic_load (&ws_test_n_polled) > 0);

  /* One runs (stuck), nine wait: those are cancelled at once. */
  g_assert_false (ws_runtime_shutdown (rt, 10 * 1000));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 9);
  atomic_store (&release_stuck, TRUE);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 10);
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, 1);
  for (guint i = 0; i < G_N_ELEMENTS (jobs); i++)
    g_object_unref (jobs[i]);
}

/* A blocking job that returns PENDING sleeps on its thread until woken,
 * and is polled there again. */
typedef struct
{
  GThread *threads[2];
  guint    polls;
  WsWaker *_Atomic waker;
} PendingJob;

static WsPoll
pending_job (WsContext *cx,
             gpointer   data)
{
  PendingJob *p = data;

  p->threads[MIN (p->polls, 1)] = g_thread_self ();
  if (p->polls++ == 0)
    {
      atomic_store (&p->waker, ws_context_get_waker (cx));
      return WS_POLL_PENDING;
    }
  return WS_POLL_READY;
}

static void
test_pending_job_keeps_its_thread (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  PendingJob p = { 0, };
  WsWaker *waker;
  g_autoptr(WsTask) job = NULL;

  job = ws_runtime_spawn_blocking (rt, pending_job, &p, NULL);
  ws_test_wait_until ((waker = atomic_load (&p.waker)) != NULL);
  /* Other jobs meanwhile use other threads. */
  ws_test_reset_counters ();
  {
    g_autoptr(WsTask) other = ws_runtime_spawn_blocking (rt, ws_test_count_poll, NULL, NULL);

    g_assert_true (ws_task_wait (other, NULL, NULL));
  }
  ws_test_wake_and_unref (waker);
  g_assert_true (ws_task_wait (job, NULL, NULL));
  g_assert_cmpuint (p.polls, ==, 2);
  g_assert_true (p.threads[0] == p.threads[1]);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* A long blocking job sees its task's cancellation through the task's
 * GCancellable, from ws_task_cancel and from shutdown, and stops. */
typedef struct
{
  _Atomic gboolean running;
  _Atomic gboolean saw_cancel;
} LongJob;

static WsPoll
long_job (WsContext *cx,
          gpointer   data)
{
  LongJob *job = data;
  GCancellable *cancellable = ws_context_get_cancellable (cx);
  GError *error = NULL;

  g_assert_true (G_IS_CANCELLABLE (cancellable));
  g_assert_true (cancellable == ws_context_get_cancellable (cx));
  atomic_store (&job->running, TRUE);
  /* "Hashing a large file": until cancelled (the watchdog ends a hang). */
  while (!g_cancellable_is_cancelled (cancellable))
    g_usleep (100);
  atomic_store (&job->saw_cancel, TRUE);
  /* Stop with the cancellation as the task's error. */
  g_assert_true (g_cancellable_set_error_if_cancelled (cancellable, &error));
  ws_context_return_error (cx, error);
  return WS_POLL_READY;
}

static void
test_job_sees_task_cancel (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  LongJob job = { FALSE, };
  g_autoptr(WsTask) task = ws_runtime_spawn_blocking (rt, long_job, &job, NULL);
  g_autoptr(GError) error = NULL;

  ws_test_wait_until (atomic_load (&job.running));
  ws_task_cancel (task);
  /* The job stopped and returned the cancellation as its error. */
  g_assert_false (ws_task_wait (task, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_true (atomic_load (&job.saw_cancel));
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static void
test_job_sees_shutdown (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  LongJob job = { FALSE, };
  g_autoptr(WsTask) task = ws_runtime_spawn_blocking (rt, long_job, &job, NULL);

  ws_test_wait_until (atomic_load (&job.running));
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_assert_true (atomic_load (&job.saw_cancel));
  g_assert_true (ws_task_is_finished (task));
}

WS_TEST_MAIN ({ "/blocking-pool/spawn-blocking", test_spawn_blocking },
              { "/blocking-pool/job-sees-task-cancel", test_job_sees_task_cancel },
              { "/blocking-pool/job-sees-shutdown", test_job_sees_shutdown },
              { "/blocking-pool/cap", test_pool_cap },
              { "/blocking-pool/keep-alive", test_keep_alive },
              { "/blocking-pool/shutdown-timeout-with-stuck-job", test_shutdown_timeout_with_stuck_job },
              { "/blocking-pool/shutdown-cancels-queued-jobs", test_shutdown_cancels_queued_jobs },
              { "/blocking-pool/pending-job-keeps-its-thread", test_pending_job_keeps_its_thread })
