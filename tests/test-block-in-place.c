/* test-block-in-place.c: ws_block_in_place
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A worker that blocks in place hands its core to a new thread, so the
 * runtime keeps running tasks; off the runtime, or nested, the function
 * just runs; a local task is refused (it would block its main loop); the
 * threads the blocking pool adopts afterwards retire like its own.
 */

#include "config.h"

#include "ws-test-fixture.h"

/* A task that calls ws_block_in_place (func, func_data) and notes what
 * it returned and whether it came back on the thread it left from. */
typedef struct
{
  WsBlockingFunc  func;
  gpointer        func_data;
  gboolean        ok;
  GError         *error;
  gboolean        same_thread;
  gboolean        ran;          /* set by the blocking function */
} InPlace;

static WsPoll
in_place_func (WsContext *cx,
               gpointer   data)
{
  InPlace *p = data;
  GThread *before = g_thread_self ();

  p->ok = ws_block_in_place (p->func, p->func_data, &p->error);
  p->same_thread = before == g_thread_self ();
  return WS_POLL_READY;
}

static void
set_flag (gpointer data)
{
  *(gboolean *) data = TRUE;
}

/* Both workers block in ws_block_in_place at a gate; new tasks still run
 * because the cores moved to new threads. */
static void
test_keeps_workers (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  WsTestGate gate;
  InPlace p[2] = { { ws_test_gate_wait, &gate }, { ws_test_gate_wait, &gate } };
  WsTask *blockers[2];
  WsTask *tasks[1000];

  ws_test_gate_init (&gate);
  ws_test_reset_counters ();
  for (guint i = 0; i < 2; i++)
    blockers[i] = ws_runtime_spawn (rt, in_place_func, &p[i], NULL);
  ws_test_gate_wait_for_waiters (&gate, 2);

  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    tasks[i] = ws_runtime_spawn (rt, ws_test_count_poll, NULL, NULL);
  ws_test_wait_all (tasks, G_N_ELEMENTS (tasks));
  /* All ran while both original worker threads sat at the gate. */
  g_assert_cmpuint (atomic_load (&ws_test_n_polled), ==, G_N_ELEMENTS (tasks));
  g_assert_cmpuint (ws_test_gate_get_waiting (&gate), ==, 2);

  ws_test_gate_open (&gate);
  ws_test_wait_all (blockers, 2);
  for (guint i = 0; i < 2; i++)
    {
      g_assert_no_error (p[i].error);
      g_assert_true (p[i].ok);
      g_assert_true (p[i].same_thread);
    }

  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
  ws_test_gate_clear (&gate);
}

static void
test_off_runtime (void)
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
  InPlace *p = data;
  g_autoptr(GError) error = NULL;

  g_assert_true (ws_block_in_place (set_flag, &p->ran, &error));
  g_assert_no_error (error);
}

static void
test_nested (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  InPlace p = { nested_inner, };
  g_autoptr(WsTask) task = NULL;

  p.func_data = &p;
  task = ws_runtime_spawn (rt, in_place_func, &p, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_true (p.ok);
  g_assert_no_error (p.error);
  g_assert_true (p.ran);
  /* The runtime still works on its new thread. */
  g_clear_object (&task);
  task = ws_runtime_spawn (rt, ws_test_count_poll, NULL, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
}

/* A local task may not block its main loop: refused with
 * WS_ERROR_WOULD_BLOCK, pointing to ws_runtime_spawn_blocking. */
static void
test_local_refused (void)
{
  WsTestOnContext f;
  InPlace p = { set_flag, };
  g_autoptr(WsTask) task = NULL;

  p.func_data = &p.ran;
  ws_test_on_context_init (&f, 1);
  task = ws_runtime_spawn_local (f.rt, f.ctx, in_place_func, &p, NULL);
  ws_test_iterate_until (f.ctx, ws_task_is_finished (task));
  g_assert_false (p.ok);
  g_assert_error (p.error, WS_ERROR, WS_ERROR_WOULD_BLOCK);
  g_assert_nonnull (strstr (p.error->message, "ws_runtime_spawn_blocking"));
  g_assert_false (p.ran);
  g_clear_error (&p.error);
  ws_test_on_context_clear (&f);
}

/* 32 tasks block in place at once; afterwards their threads join the
 * blocking pool and retire under its rule (the surplus first, the rest
 * after the keep-alive), down to the one idle thread the pool keeps: at
 * least 31 of the 32 threads that called ws_block_in_place () leave (the
 * kept one may be one of them). */
#define N_IN_PLACE 32

typedef struct
{
  WsTestGate *gate;
  GThread    *caller;     /* ran the blocking function; read after the task ends */
  gboolean    ok;
} Caller;

static WsLock stopped_lock;
static GPtrArray *stopped_threads;

static void
note_stop (gpointer data)
{
  ws_lock_lock (&stopped_lock);
  g_ptr_array_add (stopped_threads, g_thread_self ());
  ws_lock_unlock (&stopped_lock);
}

static void
caller_blocks (gpointer data)
{
  Caller *c = data;

  c->caller = g_thread_self ();
  ws_test_gate_wait (c->gate);
}

static WsPoll
caller_task (WsContext *cx,
             gpointer   data)
{
  Caller *c = data;

  c->ok = ws_block_in_place (caller_blocks, c, NULL);
  return WS_POLL_READY;
}

static guint
count_stopped (Caller *c,
               guint   n)
{
  guint found = 0;

  ws_lock_lock (&stopped_lock);
  for (guint i = 0; i < n; i++)
    if (g_ptr_array_find (stopped_threads, c[i].caller, NULL))
      found++;
  ws_lock_unlock (&stopped_lock);
  return found;
}

static gboolean
pool_down_to_one (WsRuntime *rt)
{
  g_autoptr(WsMetrics) m = ws_runtime_get_metrics (rt);

  return ws_metrics_get_blocking_threads (m) == 1
         && ws_metrics_get_idle_blocking_threads (m) == 1;
}

static void
test_adopted_threads_retire (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(WsRuntime) rt = g_object_new (WS_TYPE_RUNTIME,
                                          "n-workers", 2,
                                          "blocking-keep-alive", (gint64) 200000,
                                          NULL);
  WsTestGate gate;
  Caller c[N_IN_PLACE];
  WsTask *tasks[N_IN_PLACE];

  ws_lock_init (&stopped_lock);
  stopped_threads = g_ptr_array_new ();
  ws_runtime_set_on_thread_stop (rt, note_stop, NULL, NULL);
  g_assert_true (g_initable_init (G_INITABLE (rt), NULL, &error));
  g_assert_no_error (error);

  ws_test_gate_init (&gate);
  for (guint i = 0; i < N_IN_PLACE; i++)
    {
      c[i] = (Caller) { &gate, NULL, FALSE };
      tasks[i] = ws_runtime_spawn (rt, caller_task, &c[i], NULL);
    }
  ws_test_gate_wait_for_waiters (&gate, N_IN_PLACE);
  ws_test_gate_open (&gate);
  for (guint i = 0; i < N_IN_PLACE; i++)
    {
      g_assert_true (ws_task_wait (tasks[i], NULL, NULL));
      g_assert_true (c[i].ok);
      g_object_unref (tasks[i]);
    }

  ws_test_wait_until (count_stopped (c, N_IN_PLACE) >= N_IN_PLACE - 1);
  ws_test_wait_until (pool_down_to_one (rt));

  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_assert_cmpuint (count_stopped (c, N_IN_PLACE), ==, N_IN_PLACE);
  ws_test_gate_clear (&gate);
  g_clear_pointer (&stopped_threads, g_ptr_array_unref);
  ws_lock_clear (&stopped_lock);
}

/* ws_block_in_place () from a source that a nested iteration inside a
 * poll dispatches (a sync-over-async helper in a task) is refused: the
 * iteration on the stack holds the worker's context, which the new
 * thread could never take over. */
typedef struct
{
  GError   *error;
  gboolean  ran;
  gboolean  result;
} NestedBlock;

static void
block_nothing (gpointer data)
{
}

static gboolean
block_from_source (gpointer data)
{
  NestedBlock *n = data;

  n->result = ws_block_in_place (block_nothing, NULL, &n->error);
  n->ran = TRUE;
  return G_SOURCE_REMOVE;
}

static WsPoll
nested_iteration_blocks (WsContext *cx,
                         gpointer   data)
{
  NestedBlock *n = data;
  GSource *idle = g_idle_source_new ();

  g_source_set_callback (idle, block_from_source, n, NULL);
  g_source_attach (idle, g_main_context_get_thread_default ());
  g_source_unref (idle);
  while (!n->ran)
    g_main_context_iteration (g_main_context_get_thread_default (), TRUE);
  return WS_POLL_READY;
}

static void
test_nested_iteration_refused (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  NestedBlock n = { NULL, FALSE, FALSE };
  g_autoptr(WsTask) task = ws_runtime_spawn (rt, nested_iteration_blocks, &n, NULL);

  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_false (n.result);
  g_assert_error (n.error, WS_ERROR, WS_ERROR_WOULD_BLOCK);
  g_clear_error (&n.error);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* The thread bounds doc/blocking.md states for ws_block_in_place: each
 * call in flight adds one thread (the one that took over its worker is
 * the worker), whatever max-blocking-threads is, and afterwards the pool
 * keeps at most max-blocking-threads of them. 60 calls wait at a gate on
 * a runtime of 2 workers capped at @cap blocking threads; the runtime's
 * threads are counted by name in /proc/self/task (its thread-name
 * prefix), the pool's through the metrics. */
#define N_CALLS 60

/* The threads of this process whose name starts with @prefix. */
static guint
count_named_threads (const char *prefix)
{
  g_autoptr(GDir) dir = g_dir_open ("/proc/self/task", 0, NULL);
  const char *tid;
  guint n = 0;

  g_assert_nonnull (dir);
  while ((tid = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *path = g_strdup_printf ("/proc/self/task/%s/comm", tid);
      g_autofree char *name = NULL;

      if (g_file_get_contents (path, &name, NULL, NULL) && g_str_has_prefix (name, prefix))
        n++;
    }
  return n;
}

static guint
pool_threads (WsRuntime *rt)
{
  g_autoptr(WsMetrics) m = ws_runtime_get_metrics (rt);

  return ws_metrics_get_blocking_threads (m);
}

static void
check_calls_in_flight (guint cap)
{
  g_autoptr(WsRuntime) rt = ws_test_runtime_new ("n-workers", 2,
                                                 "max-blocking-threads", cap,
                                                 "thread-name-prefix", "wsbip",
                                                 NULL);
  WsTestGate gate;
  Caller c[N_CALLS];
  WsTask *tasks[N_CALLS];
  guint n;

  ws_test_gate_init (&gate);
  for (guint i = 0; i < N_CALLS; i++)
    {
      c[i] = (Caller) { &gate, NULL, FALSE };
      tasks[i] = ws_runtime_spawn (rt, caller_task, &c[i], NULL);
    }
  ws_test_gate_wait_for_waiters (&gate, N_CALLS);

  /* In flight: the 2 workers and one thread per call; the pool runs no
   * job and holds none of them yet. */
  n = count_named_threads ("wsbip");
  g_test_message ("cap %u: %u runtime threads with %d calls in flight", cap, n, N_CALLS);
  g_assert_cmpuint (n, <=, 2 + cap + N_CALLS);
  g_assert_cmpuint (n, >=, N_CALLS);
  g_assert_cmpuint (pool_threads (rt), <=, cap);

  ws_test_gate_open (&gate);
  for (guint i = 0; i < N_CALLS; i++)
    {
      g_assert_true (ws_task_wait (tasks[i], NULL, NULL));
      g_assert_true (c[i].ok);
      g_assert_cmpuint (pool_threads (rt), <=, cap);
      g_object_unref (tasks[i]);
    }

  /* Afterwards: the pool adopted at most cap of them; the others leave
   * (each on its own, so the count is waited for). */
  ws_test_wait_until (count_named_threads ("wsbip") <= 2 + cap);
  g_assert_cmpuint (pool_threads (rt), <=, cap);
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
  ws_test_wait_until (count_named_threads ("wsbip") == 0);
  ws_test_gate_clear (&gate);
}

static void
test_calls_in_flight_bound (void)
{
  check_calls_in_flight (1);
  check_calls_in_flight (3);
}

WS_TEST_MAIN ({ "/block-in-place/keeps-workers", test_keeps_workers },
              { "/block-in-place/off-runtime", test_off_runtime },
              { "/block-in-place/nested", test_nested },
              { "/block-in-place/local-refused", test_local_refused },
              { "/block-in-place/adopted-threads-retire", test_adopted_threads_retire },
              { "/block-in-place/calls-in-flight-bound", test_calls_in_flight_bound },
              { "/block-in-place/nested-iteration-refused", test_nested_iteration_refused })
