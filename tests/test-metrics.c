/* test-metrics.c: WsMetrics, the runtime's counters
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Snapshots agree with known scenarios.
 */

#include "config.h"

#include "ws-test-fixture.h"

/* 100 tasks spawned from this thread: the counts agree, and the table
 * names them. */
static void
test_spawned_from_outside (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsMetrics) m = NULL;
  g_autofree char *table = NULL;
  guint64 polls = 0;
  WsTask *tasks[100];

  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    tasks[i] = ws_runtime_spawn (rt, ws_test_return_index, GUINT_TO_POINTER (i), NULL);
  ws_test_wait_all (tasks, G_N_ELEMENTS (tasks));

  m = ws_runtime_get_metrics (rt);
  g_assert_cmpuint (ws_metrics_get_n_workers (m), ==, 2);
  for (guint i = 0; i < 2; i++)
    polls += ws_metrics_get_worker_poll_count (m, i);
  g_assert_cmpuint (polls, ==, G_N_ELEMENTS (tasks));
  g_assert_cmpuint (ws_metrics_get_spawned_tasks (m), ==, G_N_ELEMENTS (tasks));
  g_assert_cmpuint (ws_metrics_get_remote_schedule_count (m), ==, G_N_ELEMENTS (tasks));
  g_assert_cmpuint (ws_metrics_get_alive_tasks (m), ==, 0);

  table = ws_metrics_to_string (m);
  g_assert_nonnull (strstr (table, "polls"));
  g_assert_nonnull (strstr (table, "steals"));
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Workers park when idle; one spawn from outside and one from a worker
 * are one remote and one local schedule, two polls. */
typedef struct
{
  WsTask *child;
} FromWorker;

static WsPoll
spawn_from_worker (WsContext *cx,
                   gpointer   data)
{
  FromWorker *f = data;
  g_autoptr(WsHandle) handle = ws_handle_get_current ();

  f->child = ws_handle_spawn (handle, ws_test_count_poll, NULL, NULL);
  return WS_POLL_READY;
}

static void
test_remote_and_local_schedules (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsMetrics) m0 = NULL;
  g_autoptr(WsMetrics) m1 = NULL;
  g_autoptr(WsMetrics) m2 = NULL;
  g_autoptr(WsTask) t = NULL;
  FromWorker f = { NULL };
  guint64 local0 = 0, local1 = 0, polls = 0;

  /* The workers start with the first spawn; then every worker parks at
   * least once when idle. */
  {
    g_autoptr(WsTask) first = ws_runtime_spawn (rt, ws_test_count_poll, NULL, NULL);

    g_assert_true (ws_task_wait (first, NULL, NULL));
  }
  for (;;)
    {
      g_autoptr(WsMetrics) m = ws_runtime_get_metrics (rt);

      if (ws_metrics_get_worker_park_count (m, 0) > 0 && ws_metrics_get_worker_park_count (m, 1) > 0)
        break;
      g_usleep (1000);
    }

  m0 = ws_runtime_get_metrics (rt);
  t = ws_runtime_spawn (rt, spawn_from_worker, &f, NULL);
  g_assert_true (ws_task_wait (t, NULL, NULL));
  g_assert_true (ws_task_wait (f.child, NULL, NULL));
  m1 = ws_runtime_get_metrics (rt);

  /* One spawn from this (foreign) thread: one remote schedule. One spawn
   * from a worker: one local schedule. Two tasks: two polls. */
  g_assert_cmpuint (ws_metrics_get_remote_schedule_count (m1)
                    - ws_metrics_get_remote_schedule_count (m0), ==, 1);
  for (guint i = 0; i < 2; i++)
    {
      local0 += ws_metrics_get_worker_local_schedule_count (m0, i);
      local1 += ws_metrics_get_worker_local_schedule_count (m1, i);
      polls += ws_metrics_get_worker_poll_count (m1, i) - ws_metrics_get_worker_poll_count (m0, i);
    }
  g_assert_cmpuint (local1 - local0, ==, 1);
  g_assert_cmpuint (polls, ==, 2);
  g_assert_cmpuint (ws_metrics_get_spawned_tasks (m1) - ws_metrics_get_spawned_tasks (m0), ==, 2);

  g_clear_object (&f.child);
  g_clear_object (&t);
  m2 = ws_runtime_get_metrics (rt);
  g_assert_cmpuint (ws_metrics_get_alive_tasks (m2), ==, 0);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Local tasks count in the spawned and alive counts, on every context,
 * and still in the spawned count once their executors are gone; a local
 * spawn refused after shutdown counts in neither. A worker task and a
 * blocking job count too. */
#define N_LOCAL 1000

static void
test_local_tasks_counted (void)
{
  WsTestOnContext f;
  g_autoptr(GMainContext) other = g_main_context_new ();
  g_autoptr(WsMetrics) m0 = NULL;
  g_autoptr(WsMetrics) m1 = NULL;
  g_autoptr(WsMetrics) m2 = NULL;
  g_autoptr(WsMetrics) m3 = NULL;
  g_autoptr(WsMetrics) m4 = NULL;
  g_autoptr(WsTask) pending = NULL;
  g_autoptr(WsTask) worker = NULL;
  g_autoptr(WsTask) blocking = NULL;
  g_autoptr(WsTask) refused = NULL;
  g_autofree char *table = NULL;
  g_autofree char *spawned = NULL;

  ws_test_on_context_init (&f, 1);
  ws_test_reset_counters ();

  for (guint i = 0; i < N_LOCAL; i++)
    {
      ws_runtime_spawn_local_detached (f.rt, f.ctx, ws_test_count_poll, NULL, NULL);
      ws_runtime_spawn_local_detached (f.rt, other, ws_test_count_poll, NULL, NULL);
    }
  pending = ws_runtime_spawn_local (f.rt, NULL, ws_test_pending_forever, NULL, NULL);

  /* Nothing polled yet: all of them alive. */
  m0 = ws_runtime_get_metrics (f.rt);
  g_assert_cmpuint (ws_metrics_get_spawned_tasks (m0), ==, 2 * N_LOCAL + 1);
  g_assert_cmpuint (ws_metrics_get_alive_tasks (m0), ==, 2 * N_LOCAL + 1);

  /* Polled by their contexts (this thread iterates both): only the
   * pending one is left. */
  ws_test_iterate_until (f.ctx, atomic_load (&ws_test_n_polled) >= N_LOCAL + 1);
  ws_test_iterate_until (other, atomic_load (&ws_test_n_polled) >= 2 * N_LOCAL + 1);
  m1 = ws_runtime_get_metrics (f.rt);
  g_assert_cmpuint (ws_metrics_get_spawned_tasks (m1), ==, 2 * N_LOCAL + 1);
  g_assert_cmpuint (ws_metrics_get_alive_tasks (m1), ==, 1);

  /* A worker task and a blocking job add to the same counts. */
  worker = ws_runtime_spawn (f.rt, ws_test_ready, NULL, NULL);
  blocking = ws_runtime_spawn_blocking (f.rt, ws_test_ready, NULL, NULL);
  g_assert_true (ws_task_wait (worker, NULL, NULL));
  g_assert_true (ws_task_wait (blocking, NULL, NULL));
  ws_task_cancel (pending);
  ws_test_iterate_until (f.ctx, ws_task_is_finished (pending));
  m2 = ws_runtime_get_metrics (f.rt);
  g_assert_cmpuint (ws_metrics_get_spawned_tasks (m2), ==, 2 * N_LOCAL + 3);
  g_assert_cmpuint (ws_metrics_get_alive_tasks (m2), ==, 0);
  table = ws_metrics_to_string (m2);
  spawned = g_strdup_printf ("spawned %u, alive 0", 2 * N_LOCAL + 3);
  g_assert_nonnull (strstr (table, spawned));

  /* After shutdown the local executors are gone, their counts are not;
   * a refused spawn is not counted. */
  g_assert_true (ws_runtime_shutdown (f.rt, -1));
  m3 = ws_runtime_get_metrics (f.rt);
  g_assert_cmpuint (ws_metrics_get_spawned_tasks (m3), ==, 2 * N_LOCAL + 3);
  refused = ws_runtime_spawn_local (f.rt, NULL, ws_test_ready, NULL, NULL);
  g_assert_true (ws_task_is_finished (refused));
  m4 = ws_runtime_get_metrics (f.rt);
  g_assert_cmpuint (ws_metrics_get_spawned_tasks (m4), ==, 2 * N_LOCAL + 3);
  g_assert_cmpuint (ws_metrics_get_alive_tasks (m4), ==, 0);

  ws_test_on_context_clear (&f);
}

WS_TEST_MAIN ({ "/metrics/spawned-from-outside", test_spawned_from_outside },
              { "/metrics/remote-and-local-schedules", test_remote_and_local_schedules },
              { "/metrics/local-tasks-counted", test_local_tasks_counted })
