/* test-hooks.c: the runtime's thread hooks and thread names
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * on-thread-start / on-thread-stop balance, each hook's destroy notify
 * runs once, threads carry the name prefix, and a before-park hook that
 * spawns does not let its worker sleep on the task.
 */

#include "config.h"

#include "ws-test-fixture.h"

/* Hooks balance over 100 runtimes; thread names carry the prefix. A hook
 * set after the start is refused and its data freed. */
static _Atomic gint n_started;
static _Atomic gint n_stopped;

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

/* A runtime starts what is used: nothing at g_initable_init(), no
 * worker for an app that only runs blocking jobs (one blocking thread
 * and its reserve), no blocking thread for one that only spawns tasks.
 * A hook can be set until the first spawn, after g_initable_init(). */
static _Atomic gint n_blocking_started;
static _Atomic gint n_workers_started;

static void
on_start_by_name (gpointer data)
{
  g_autofree gchar *name = read_thread_name ();

  if (g_str_has_suffix (name, "-blk"))
    atomic_fetch_add (&n_blocking_started, 1);
  else
    atomic_fetch_add (&n_workers_started, 1);
}

static void
test_start_what_is_used (void)
{
  for (guint kind = 0; kind < 2; kind++)
    {
      g_autoptr(WsRuntime) rt = ws_test_runtime_new ("n-workers", 2,
                                                     "thread-name-prefix", "used",
                                                     NULL);
      g_autoptr(WsTask) task = NULL;
      g_autoptr(WsMetrics) m = NULL;

      atomic_store (&n_blocking_started, 0);
      atomic_store (&n_workers_started, 0);
      /* After g_initable_init(), before the first spawn: accepted. */
      ws_runtime_set_on_thread_start (rt, on_start_by_name, NULL, NULL);
      m = ws_runtime_get_metrics (rt);
      g_assert_cmpuint (ws_metrics_get_blocking_threads (m), ==, 0);

      if (kind == 0)
        task = ws_runtime_spawn_blocking (rt, name_func, NULL, NULL);
      else
        task = ws_runtime_spawn (rt, name_func, NULL, NULL);
      g_assert_true (ws_task_wait (task, NULL, NULL));
      g_clear_pointer (&m, ws_metrics_unref);
      m = ws_runtime_get_metrics (rt);
      if (kind == 0)
        {
          g_assert_cmpint (atomic_load (&n_workers_started), ==, 0);
          g_assert_cmpint (atomic_load (&n_blocking_started), >=, 1);
          g_assert_cmpint (atomic_load (&n_blocking_started), <=, 2);
        }
      else
        {
          g_assert_cmpint (atomic_load (&n_blocking_started), ==, 0);
          g_assert_cmpuint (ws_metrics_get_blocking_threads (m), ==, 0);
        }
      g_assert_true (ws_runtime_shutdown (rt, -1));
      if (kind == 1)
        g_assert_cmpint (atomic_load (&n_workers_started), ==, 2);
    }
}

static void
test_balance_and_names (void)
{
  atomic_store (&n_started, 0);
  atomic_store (&n_stopped, 0);
  ws_test_reset_counters ();

  for (guint i = 0; i < 100; i++)
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(WsRuntime) rt = g_object_new (WS_TYPE_RUNTIME,
                                              "n-workers", 2,
                                              "thread-name-prefix", "hooky",
                                              NULL);
      g_autoptr(WsTask) task = NULL;
      g_autoptr(WsTask) job = NULL;

      ws_runtime_set_on_thread_start (rt, on_start, NULL, ws_test_count_destroy);
      ws_runtime_set_on_thread_stop (rt, on_stop, NULL, ws_test_count_destroy);
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
          ws_runtime_set_before_park (rt, on_start, NULL, ws_test_count_destroy);
          g_test_assert_expected_messages ();
          g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 1);
        }
      else
        {
          /* The workers start with the first spawn onto them. */
          task = ws_runtime_spawn (rt, ws_test_count_poll, NULL, NULL);
          g_assert_true (ws_task_wait (task, NULL, NULL));
        }

      g_assert_true (ws_runtime_shutdown (rt, -1));
    }

  g_assert_cmpint (atomic_load (&n_started), >=, 200);
  g_assert_cmpint (atomic_load (&n_started), ==, atomic_load (&n_stopped));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 201);
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
      g_autoptr(WsTask) task = ws_handle_spawn (handle, ws_test_count_poll, NULL, NULL);
    }
}

static WsPoll
do_nothing (WsContext *cx,
            gpointer   data)
{
  return WS_POLL_READY;
}

static void
test_before_park_spawn (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(WsRuntime) rt = g_object_new (WS_TYPE_RUNTIME, "n-workers", 1, NULL);
  ParkSpawn p = { NULL, };

  ws_test_reset_counters ();
  ws_runtime_set_before_park (rt, spawn_on_park, &p, NULL);
  g_assert_true (g_initable_init (G_INITABLE (rt), NULL, &error));
  /* The worker starts with the first spawn (this task does not count). */
  g_object_unref (ws_runtime_spawn (rt, do_nothing, NULL, NULL));

  /* The worker parks once it has nothing to do; the hook's task must run
   * although no one wakes the worker. */
  ws_test_wait_until (atomic_load (&ws_test_n_polled) > 0);
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, 1);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* A blocking spawn starts the blocking pool, not the workers; the hooks,
 * which blocking threads run too, cannot be changed under them any more;
 * a late set is refused and its data freed. */
static void
test_blocking_spawn_freezes_hooks (void)
{
  g_autoptr(WsRuntime) rt = g_object_new (WS_TYPE_RUNTIME, "n-workers", 1, NULL);
  g_autoptr(WsTask) job = NULL;

  ws_test_reset_counters ();
  job = ws_runtime_spawn_blocking (rt, ws_test_count_poll, NULL, NULL);
  g_assert_true (ws_task_wait (job, NULL, NULL));

  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*already started its threads*");
  ws_runtime_set_on_thread_start (rt, (WsHookFunc) ws_test_count_destroy, NULL,
                                  ws_test_count_destroy);
  g_test_assert_expected_messages ();
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 1);
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, 1);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

WS_TEST_MAIN ({ "/hooks/balance-and-names", test_balance_and_names },
              { "/hooks/start-what-is-used", test_start_what_is_used },
              { "/hooks/before-park-spawn", test_before_park_spawn },
              { "/hooks/blocking-spawn-freezes-hooks", test_blocking_spawn_freezes_hooks })
