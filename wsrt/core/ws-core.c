/* ws-core.c: the one door from the GObject face into the core
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The functions the face needs of the hosts, so that it includes none of
 * their headers (ws-core-private.h says what the door lets through). Each
 * asks the module that keeps the answer: what a thread is lives in
 * ws_thread (ws-thread-private.h), block_in_place's hand-off in
 * ws-worker.c, the counters in the pools. Nothing here keeps state.
 */

#include "config.h"

#include "ws-core-private.h"
#include "ws-error.h"
#include "ws-runtime-core-struct-private.h"
#include "ws-worker-private.h"

WsCoreThread
ws_core_current_thread (void)
{
  if (ws_worker_get_current () != NULL)
    return WS_CORE_THREAD_WORKER;
  if (ws_local_executor_is_current ())
    return WS_CORE_THREAD_LOCAL_DISPATCH;
  return WS_CORE_THREAD_OTHER;
}

/* block_in_place's policy, before the blocking work runs on this thread:
 * a worker hands its core (queue, LIFO slot, context) to a new thread
 * and becomes a blocking thread (doc/architecture.md, "Rules: blocking");
 * a local dispatch refuses, since its tasks cannot leave their context's
 * thread; any other thread just runs the work.
 *
 * A worker always hands its core off, however many calls are in flight:
 * max-blocking-threads caps the threads the calls leave behind (the
 * blocking pool adopts one only below it), not the calls. Running a call
 * beyond a cap on the worker with its core would block the core's
 * context and its queue's LIFO work for the call's length, and a call
 * that waits for them (a GIO callback dispatched on that context, as a
 * cancelled fiber's wait for its GIO call is in ws-fiber-gio.c; a task
 * that only this worker would run) would never return. */
gboolean
ws_core_block_in_place_begin (GError **error)
{
  switch (ws_core_current_thread ())
    {
    case WS_CORE_THREAD_WORKER:
      return ws_worker_hand_off_core (error);
    case WS_CORE_THREAD_LOCAL_DISPATCH:
      g_set_error_literal (error, WS_ERROR, WS_ERROR_WOULD_BLOCK,
                           "ws_block_in_place() cannot move a main context's local "
                           "tasks off their thread; run the blocking work with "
                           "ws_runtime_spawn_blocking() and await that task instead");
      return FALSE;
    case WS_CORE_THREAD_OTHER:
    default:
      return TRUE;
    }
}

/* Work-first for a task that awaits @task's end: runs @task now, nested,
 * if it is queued to run next on this worker, in its LIFO slot or at the
 * back of its run queue (ws-worker.c). Returns TRUE if it ran. */
gboolean
ws_core_run_awaited (WsContext *cx,
                     WsRawTask *task)
{
  return ws_worker_run_awaited (cx, task);
}

/* The context whose iteration polls @task if it is a local task, else
 * NULL. The caller's reference on @task keeps the context alive
 * (ws_local_executor_get_host_context). */
GMainContext *
ws_core_task_local_context (WsRawTask *task)
{
  return ws_local_executor_get_host_context (task->host);
}

/* Relaxed: each counter has one writer and a snapshot promises no order
 * across counters (doc/architecture.md, "Why each memory order is what
 * it is": counters). */
#define LOAD(w, f) atomic_load_explicit (&(w)->core.stats.f, memory_order_relaxed)

void
ws_core_read_stats (WsRuntimeCore *core,
                    WsCoreStats   *stats)
{
  WsWorkerPool *pool = core->pool;

  stats->n_workers = pool->n_workers;
  stats->alive_tasks = (guint) CLAMP (ws_runtime_core_alive_tasks (core), 0, G_MAXUINT);
  stats->spawned_tasks = ws_runtime_core_spawned_tasks (core);
  stats->remote_schedules = ws_inject_queue_n_remote (&pool->inject, memory_order_relaxed);
  stats->injection_queue_depth = (guint) ws_inject_queue_len (&pool->inject);
  ws_blocking_pool_get_counts (core->blocking, &stats->blocking_threads,
                               &stats->idle_blocking_threads,
                               &stats->blocking_queue_depth);

  stats->workers = g_new0 (WsCoreWorkerStats, pool->n_workers);
  for (guint i = 0; i < pool->n_workers; i++)
    {
      WsWorker *w = pool->workers[i];
      WsCoreWorkerStats *m = &stats->workers[i];

      m->polls = LOAD (w, polls);
      m->steals = LOAD (w, steals);
      m->steal_operations = LOAD (w, steal_operations);
      m->parks = LOAD (w, parks);
      m->unparks = LOAD (w, unparks);
      m->noop_wakes = LOAD (w, noop_wakes);
      m->local_schedules = LOAD (w, local_schedules);
      m->overflows = LOAD (w, overflows);
      m->forced_yields = LOAD (w, forced_yields);
      m->busy_usec = LOAD (w, busy_usec);
      m->queue_depth = ws_local_queue_len (&w->core.queue);
    }
}
