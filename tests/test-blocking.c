/* test-blocking.c: the blocking pool, ws_block_in_place, hooks, thread
 * names and metrics
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <gio/gio.h>

#include "ws-test-util.h"
#include "wsrt.h"
#include "ws-lock-private.h"   /* POSIX locks: visible to TSan, unlike GMutex */
#include "ws-raw-task-private.h"

/* A gate that blocking work waits at. */
typedef struct
{
  WsLock   lock;
  WsCond   cond;
  gboolean open;
  guint    waiting;
} Gate;

static void
gate_init (Gate *g)
{
  ws_lock_init (&g->lock);
  ws_cond_init (&g->cond);
  g->open = FALSE;
  g->waiting = 0;
}

static void
gate_clear (Gate *g)
{
  ws_lock_clear (&g->lock);
  ws_cond_clear (&g->cond);
}

static void
gate_wait (gpointer data)
{
  Gate *g = data;

  ws_lock_lock (&g->lock);
  g->waiting++;
  ws_cond_broadcast (&g->cond);
  while (!g->open)
    ws_cond_wait (&g->cond, &g->lock);
  g->waiting--;
  ws_cond_broadcast (&g->cond);
  ws_lock_unlock (&g->lock);
}

static void
gate_wait_for_waiters (Gate  *g,
                       guint  n)
{
  ws_lock_lock (&g->lock);
  while (g->waiting < n)
    ws_cond_wait (&g->cond, &g->lock);
  ws_lock_unlock (&g->lock);
}

static void
gate_open (Gate *g)
{
  ws_lock_lock (&g->lock);
  g->open = TRUE;
  ws_cond_broadcast (&g->cond);
  ws_lock_unlock (&g->lock);
}

static _Atomic guint n_done;

static WsPoll
count_done (WsContext *cx,
            gpointer   data)
{
  atomic_fetch_add (&n_done, 1);
  return WS_POLL_READY;
}

/* Both workers block in ws_block_in_place at a gate; new tasks still run
 * because the cores moved to new threads. */
typedef struct
{
  Gate     *gate;
  gboolean  ok;
  GThread  *before;
  GThread  *after;
} InPlace;

static WsPoll
block_in_place_func (WsContext *cx,
                     gpointer   data)
{
  InPlace *p = data;
  g_autoptr(GError) error = NULL;

  p->before = g_thread_self ();
  p->ok = ws_block_in_place (gate_wait, p->gate, &error);
  g_assert_no_error (error);
  p->after = g_thread_self ();
  return WS_POLL_READY;
}

static void
test_block_in_place_keeps_workers (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  Gate gate;
  InPlace p[2] = { { &gate }, { &gate } };
  WsTask *blockers[2];
  WsTask *tasks[1000];

  gate_init (&gate);
  atomic_store (&n_done, 0);
  for (guint i = 0; i < 2; i++)
    blockers[i] = ws_runtime_spawn (rt, block_in_place_func, &p[i], NULL);
  gate_wait_for_waiters (&gate, 2);

  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    tasks[i] = ws_runtime_spawn (rt, count_done, NULL, NULL);
  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    {
      g_assert_true (ws_task_wait (tasks[i], NULL, NULL));
      g_object_unref (tasks[i]);
    }
  /* All ran while both original worker threads sat at the gate. */
  g_assert_cmpuint (atomic_load (&n_done), ==, G_N_ELEMENTS (tasks));
  ws_lock_lock (&gate.lock);
  g_assert_cmpuint (gate.waiting, ==, 2);
  ws_lock_unlock (&gate.lock);

  gate_open (&gate);
  for (guint i = 0; i < 2; i++)
    {
      g_assert_true (ws_task_wait (blockers[i], NULL, NULL));
      g_assert_true (p[i].ok);
      g_assert_true (p[i].before == p[i].after);
      g_object_unref (blockers[i]);
    }

  g_assert_true (ws_runtime_shutdown (rt, 5 * G_USEC_PER_SEC));
  gate_clear (&gate);
}

static void
set_flag (gpointer data)
{
  *(gboolean *) data = TRUE;
}

static void
test_block_in_place_off_runtime (void)
{
  gboolean ran = FALSE;
  g_autoptr(GError) error = NULL;

  g_assert_true (ws_block_in_place (set_flag, &ran, &error));
  g_assert_no_error (error);
  g_assert_true (ran);
}

/* Nested block_in_place calls just run. */
static void
nested_inner (gpointer data)
{
  g_autoptr(GError) error = NULL;

  g_assert_true (ws_block_in_place (set_flag, data, &error));
  g_assert_no_error (error);
}

static WsPoll
nested_func (WsContext *cx,
             gpointer   data)
{
  g_autoptr(GError) error = NULL;

  g_assert_true (ws_block_in_place (nested_inner, data, &error));
  g_assert_no_error (error);
  return WS_POLL_READY;
}

static void
test_block_in_place_nested (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  gboolean ran = FALSE;
  g_autoptr(WsTask) task = ws_runtime_spawn (rt, nested_func, &ran, NULL);

  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_true (ran);
  /* The runtime still works on its new thread. */
  g_clear_object (&task);
  task = ws_runtime_spawn (rt, count_done, NULL, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_true (ws_runtime_shutdown (rt, 5 * G_USEC_PER_SEC));
}

typedef struct
{
  gboolean refused_right;
  gboolean ran;
} LocalBlock;

static WsPoll
local_block_func (WsContext *cx,
                  gpointer   data)
{
  LocalBlock *l = data;
  g_autoptr(GError) error = NULL;

  if (!ws_block_in_place (set_flag, &l->ran, &error))
    l->refused_right = g_error_matches (error, WS_ERROR, WS_ERROR_WOULD_BLOCK)
                       && strstr (error->message, "ws_runtime_spawn_blocking") != NULL;
  return WS_POLL_READY;
}

static void
test_block_in_place_local_refused (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(GMainContext) ctx = g_main_context_new ();
  LocalBlock l = { 0, };
  g_autoptr(WsTask) task = NULL;

  g_main_context_push_thread_default (ctx);
  task = ws_runtime_spawn_local (rt, ctx, local_block_func, &l, NULL);
  ws_test_iterate_until (ctx, ws_task_is_finished (task));
  g_assert_true (l.refused_right);
  g_assert_false (l.ran);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_main_context_pop_thread_default (ctx);
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
  atomic_fetch_add (&n_done, 1);
  return WS_POLL_READY;
}

static void
test_pool_cap (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(WsRuntime) rt = g_initable_new (WS_TYPE_RUNTIME, NULL, &error,
                                            "n-workers", 1,
                                            "max-blocking-threads", 3,
                                            NULL);
  WsTask *jobs[12];
  g_autoptr(WsMetrics) m = NULL;

  g_assert_no_error (error);
  atomic_store (&running_now, 0);
  atomic_store (&running_max, 0);
  atomic_store (&n_done, 0);
  for (guint i = 0; i < G_N_ELEMENTS (jobs); i++)
    jobs[i] = ws_runtime_spawn_blocking (rt, capped_job, NULL, NULL);
  for (guint i = 0; i < G_N_ELEMENTS (jobs); i++)
    {
      g_assert_true (ws_task_wait (jobs[i], NULL, NULL));
      g_object_unref (jobs[i]);
    }
  g_assert_cmpint (atomic_load (&n_done), ==, 12);
  g_assert_cmpint (atomic_load (&running_max), <=, 3);
  g_assert_cmpint (atomic_load (&running_max), >=, 2);

  m = ws_runtime_get_metrics (rt);
  g_assert_cmpuint (ws_metrics_get_blocking_threads (m), <=, 3);

  /* The spawn-at-cap race: one job at a time, as the last thread goes
   * idle, 512 times. */
  atomic_store (&n_done, 0);
  for (guint i = 0; i < 512; i++)
    {
      g_autoptr(WsTask) t = ws_runtime_spawn_blocking (rt, count_done, NULL, NULL);

      g_assert_true (ws_task_wait (t, NULL, NULL));
    }
  g_assert_cmpint (atomic_load (&n_done), ==, 512);
  g_assert_true (ws_runtime_shutdown (rt, 5 * G_USEC_PER_SEC));
}

static void
test_keep_alive (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(WsRuntime) rt = g_initable_new (WS_TYPE_RUNTIME, NULL, &error,
                                            "n-workers", 1,
                                            "blocking-keep-alive", (gint64) 50000,
                                            NULL);
  WsTask *jobs[4];
  guint threads;

  g_assert_no_error (error);
  for (guint i = 0; i < G_N_ELEMENTS (jobs); i++)
    jobs[i] = ws_runtime_spawn_blocking (rt, capped_job, NULL, NULL);
  for (guint i = 0; i < G_N_ELEMENTS (jobs); i++)
    {
      g_assert_true (ws_task_wait (jobs[i], NULL, NULL));
      g_object_unref (jobs[i]);
    }

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
  atomic_fetch_add (&n_done, 1);
  while (!atomic_load (&release_stuck))
    g_usleep (1000);
  return WS_POLL_READY;
}

static void
test_shutdown_timeout_with_stuck_job (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(WsTask) job = NULL;
  g_autoptr(WsTask) queued = NULL;
  g_autoptr(GError) error = NULL;
  gint64 start;
  gint64 took;

  atomic_store (&release_stuck, FALSE);
  atomic_store (&n_done, 0);
  job = ws_runtime_spawn_blocking (rt, stuck_job, NULL, NULL);
  while (atomic_load (&n_done) == 0)
    g_usleep (100);

  start = g_get_monotonic_time ();
  g_assert_false (ws_runtime_shutdown (rt, 100 * 1000));
  took = g_get_monotonic_time () - start;
  g_assert_cmpint (took, <, 5 * G_USEC_PER_SEC);
  g_test_message ("shutdown with a stuck job returned FALSE after %" G_GINT64_FORMAT " us", took);

  atomic_store (&release_stuck, TRUE);
  g_assert_true (ws_task_wait (job, NULL, &error));
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Queued blocking jobs are cancelled at shutdown, their data freed. */
static _Atomic gint n_freed;

static void
count_free (gpointer data)
{
  atomic_fetch_add (&n_freed, 1);
}

static void
test_shutdown_cancels_queued_jobs (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(WsRuntime) rt = g_initable_new (WS_TYPE_RUNTIME, NULL, &error,
                                            "n-workers", 1,
                                            "max-blocking-threads", 1,
                                            NULL);
  WsTask *jobs[10];

  atomic_store (&release_stuck, FALSE);
  atomic_store (&n_done, 0);
  atomic_store (&n_freed, 0);
  for (guint i = 0; i < G_N_ELEMENTS (jobs); i++)
    jobs[i] = ws_runtime_spawn_blocking (rt, stuck_job, NULL, count_free);
  while (atomic_load (&n_done) == 0)
    g_usleep (100);

  /* One runs (stuck), nine wait: those are cancelled at once. */
  g_assert_false (ws_runtime_shutdown (rt, 10 * 1000));
  g_assert_cmpint (atomic_load (&n_freed), ==, 9);
  atomic_store (&release_stuck, TRUE);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_assert_cmpint (atomic_load (&n_freed), ==, 10);
  g_assert_cmpint (atomic_load (&n_done), ==, 1);
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
test_pending_blocking_job (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  PendingJob p = { 0, };
  g_autoptr(WsTask) job = ws_runtime_spawn_blocking (rt, pending_job, &p, NULL);
  WsWaker *waker;

  while ((waker = atomic_load (&p.waker)) == NULL)
    g_usleep (100);
  /* Other jobs meanwhile use other threads. */
  atomic_store (&n_done, 0);
  {
    g_autoptr(WsTask) other = ws_runtime_spawn_blocking (rt, count_done, NULL, NULL);

    g_assert_true (ws_task_wait (other, NULL, NULL));
  }
  ws_waker_wake (waker);
  ws_waker_unref (waker);
  g_assert_true (ws_task_wait (job, NULL, NULL));
  g_assert_cmpuint (p.polls, ==, 2);
  g_assert_true (p.threads[0] == p.threads[1]);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Hooks balance over 100 runtimes; thread names carry the prefix. */
static _Atomic gint n_started;
static _Atomic gint n_stopped;
static _Atomic gint n_hook_destroyed;

static void
on_start (gpointer data)
{
  atomic_fetch_add (&n_started, 1);
}

static void
on_stop (gpointer data)
{
  atomic_fetch_add (&n_stopped, 1);
}

static void
hook_destroy (gpointer data)
{
  atomic_fetch_add (&n_hook_destroyed, 1);
}

static gchar *
read_thread_name (void)
{
  gchar *contents = NULL;

  if (!g_file_get_contents ("/proc/thread-self/comm", &contents, NULL, NULL))
    return g_strdup ("?");
  return g_strstrip (contents);
}

static WsPoll
name_func (WsContext *cx,
           gpointer   data)
{
  ws_context_return_pointer (cx, read_thread_name (), g_free);
  return WS_POLL_READY;
}

static void
test_hooks_balance_and_names (void)
{
  atomic_store (&n_started, 0);
  atomic_store (&n_stopped, 0);
  atomic_store (&n_hook_destroyed, 0);

  for (guint i = 0; i < 100; i++)
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(WsRuntime) rt = g_object_new (WS_TYPE_RUNTIME,
                                              "n-workers", 2,
                                              "thread-name-prefix", "hooky",
                                              NULL);
      g_autoptr(WsTask) task = NULL;
      g_autoptr(WsTask) job = NULL;

      ws_runtime_set_on_thread_start (rt, on_start, NULL, hook_destroy);
      ws_runtime_set_on_thread_stop (rt, on_stop, NULL, hook_destroy);
      g_assert_true (g_initable_init (G_INITABLE (rt), NULL, &error));
      g_assert_no_error (error);

      if (i == 0)
        {
          g_autofree gchar *worker_name = NULL;
          g_autofree gchar *blocking_name = NULL;

          task = ws_runtime_spawn (rt, name_func, NULL, NULL);
          job = ws_runtime_spawn_blocking (rt, name_func, NULL, NULL);
          g_assert_true (ws_task_wait (task, NULL, NULL));
          g_assert_true (ws_task_wait (job, NULL, NULL));
          worker_name = ws_task_propagate_pointer (task, NULL);
          blocking_name = ws_task_propagate_pointer (job, NULL);
          g_assert_true (g_str_equal (worker_name, "hooky-0") || g_str_equal (worker_name, "hooky-1"));
          g_assert_cmpstr (blocking_name, ==, "hooky-blk");

          /* Too late: the runtime has started. */
          g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*already started*");
          ws_runtime_set_before_park (rt, on_start, NULL, hook_destroy);
          g_test_assert_expected_messages ();
          g_assert_cmpint (atomic_load (&n_hook_destroyed), ==, 1);
        }

      g_assert_true (ws_runtime_shutdown (rt, -1));
    }

  g_assert_cmpint (atomic_load (&n_started), >=, 200);
  g_assert_cmpint (atomic_load (&n_started), ==, atomic_load (&n_stopped));
  g_assert_cmpint (atomic_load (&n_hook_destroyed), ==, 201);
}

/* A before-park hook that spawns must not let the worker sleep on it. */
typedef struct
{
  WsHandle *handle;
  _Atomic gint spawned;
} ParkSpawn;

static void
spawn_on_park (gpointer data)
{
  ParkSpawn *p = data;

  if (atomic_fetch_add (&p->spawned, 1) == 0)
    {
      g_autoptr(WsHandle) handle = ws_handle_get_current ();
      g_autoptr(WsTask) task = ws_handle_spawn (handle, count_done, NULL, NULL);
    }
}

static void
test_before_park_spawn (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(WsRuntime) rt = g_object_new (WS_TYPE_RUNTIME, "n-workers", 1, NULL);
  ParkSpawn p = { NULL, };

  atomic_store (&n_done, 0);
  ws_runtime_set_before_park (rt, spawn_on_park, &p, NULL);
  g_assert_true (g_initable_init (G_INITABLE (rt), NULL, &error));

  /* The worker parks once it has nothing to do; the hook's task must run
   * although no one wakes the worker. */
  while (atomic_load (&n_done) == 0)
    g_usleep (1000);
  g_assert_cmpint (atomic_load (&n_done), ==, 1);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Metrics agree with known scenarios. */
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

  f->child = ws_handle_spawn (handle, count_done, NULL, NULL);
  return WS_POLL_READY;
}

static void
test_metrics_scenarios (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsMetrics) m0 = NULL;
  g_autoptr(WsMetrics) m1 = NULL;
  g_autoptr(WsMetrics) m2 = NULL;
  g_autoptr(WsTask) t = NULL;
  FromWorker f = { NULL };
  guint64 local0 = 0, local1 = 0, polls = 0;

  /* Every worker parks at least once when idle. */
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
  g_assert_cmpuint (ws_metrics_get_spawned_tasks (m1), ==, 2);

  g_clear_object (&f.child);
  g_clear_object (&t);
  m2 = ws_runtime_get_metrics (rt);
  g_assert_cmpuint (ws_metrics_get_alive_tasks (m2), ==, 0);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

int
main (int   argc,
      char *argv[])
{
  ws_test_init (&argc, &argv);

  ws_test_add_func ("/blocking/block-in-place-keeps-workers", test_block_in_place_keeps_workers);
  ws_test_add_func ("/blocking/block-in-place-off-runtime", test_block_in_place_off_runtime);
  ws_test_add_func ("/blocking/block-in-place-nested", test_block_in_place_nested);
  ws_test_add_func ("/blocking/block-in-place-local-refused", test_block_in_place_local_refused);
  ws_test_add_func ("/blocking/pool-cap", test_pool_cap);
  ws_test_add_func ("/blocking/keep-alive", test_keep_alive);
  ws_test_add_func ("/blocking/shutdown-timeout-with-stuck-job", test_shutdown_timeout_with_stuck_job);
  ws_test_add_func ("/blocking/shutdown-cancels-queued-jobs", test_shutdown_cancels_queued_jobs);
  ws_test_add_func ("/blocking/pending-job-keeps-its-thread", test_pending_blocking_job);
  ws_test_add_func ("/blocking/hooks-balance-and-names", test_hooks_balance_and_names);
  ws_test_add_func ("/blocking/before-park-spawn", test_before_park_spawn);
  ws_test_add_func ("/blocking/metrics-scenarios", test_metrics_scenarios);

  return g_test_run ();
}
