/* ws-metrics.c: a snapshot of a runtime's counters
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "ws-metrics-private.h"
#include "ws-core-private.h"

/**
 * WsMetrics:
 *
 * A snapshot of the counters of a [class@Ws.Runtime], from
 * [method@Ws.Runtime.get_metrics]. Counts are totals since the runtime
 * started. Worker counters are written by their worker alone and read
 * here without stopping it, so a snapshot is consistent per counter, not
 * across counters.
 *
 * Which tasks each counter includes:
 *
 * - [method@Ws.Metrics.get_spawned_tasks] and
 *   [method@Ws.Metrics.get_alive_tasks]: every task of the runtime, on
 *   the workers (with a [class@Ws.Task], a [struct@Ws.JoinHandle], a
 *   callback or detached), in the blocking pool, and local tasks
 *   ([method@Ws.Runtime.spawn_local] and its variants) on every
 *   #GMainContext. A spawn refused after shutdown is counted in neither.
 * - The per-worker counters (polls, steals, parks, schedules, the queue
 *   depth, ...) and [method@Ws.Metrics.get_remote_schedule_count] and
 *   [method@Ws.Metrics.get_injection_queue_depth]: the worker pool only.
 *   Local tasks are polled by their main context and blocking jobs by the
 *   blocking pool, so neither shows there.
 * - The blocking counters: the blocking pool only.
 *
 * The counters are totals over all tasks: they hold no per-task entry, so
 * no task names ([method@Ws.Task.set_name]).
 */

typedef WsCoreWorkerStats WorkerMetrics;

/* The counters are the core's snapshot (ws_core_read_stats), as read. */
struct _WsMetrics
{
  gatomicrefcount  ref_count;
  WsCoreStats      stats;
};

G_DEFINE_BOXED_TYPE (WsMetrics, ws_metrics, ws_metrics_ref, ws_metrics_unref)

WsMetrics *
ws_metrics_new_snapshot (WsRuntimeCore *core)
{
  WsMetrics *self = g_new0 (WsMetrics, 1);

  g_atomic_ref_count_init (&self->ref_count);
  ws_core_read_stats (core, &self->stats);
  return self;
}

/**
 * ws_metrics_ref:
 * @self: a #WsMetrics
 *
 * Takes a reference on @self.
 *
 * Returns: (transfer full): @self
 */
WsMetrics *
ws_metrics_ref (WsMetrics *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  g_atomic_ref_count_inc (&self->ref_count);
  return self;
}

/**
 * ws_metrics_unref:
 * @self: (transfer full): a #WsMetrics
 *
 * Releases a reference.
 */
void
ws_metrics_unref (WsMetrics *self)
{
  g_return_if_fail (self != NULL);

  if (g_atomic_ref_count_dec (&self->ref_count))
    {
      g_free (self->stats.workers);
      g_free (self);
    }
}

#define GETTER(type, name, field, doc)                     \
  type                                                     \
  ws_metrics_get_##name (WsMetrics *self)                  \
  {                                                        \
    g_return_val_if_fail (self != NULL, 0);                \
    return self->stats.field;                              \
  }

#define WORKER_GETTER(type, name, field)                              \
  type                                                                \
  ws_metrics_get_worker_##name (WsMetrics *self,                      \
                                guint      worker)                    \
  {                                                                   \
    g_return_val_if_fail (self != NULL, 0);                           \
    g_return_val_if_fail (worker < self->stats.n_workers, 0);         \
    return self->stats.workers[worker].field;                         \
  }

/**
 * ws_metrics_get_n_workers:
 * @self: a #WsMetrics
 *
 * Gets the number of worker threads; workers are numbered from 0 in the
 * per-worker getters. The workers start with the first task spawned onto
 * them ([class@Ws.Runtime]); before that this is the number the runtime
 * will start, and every worker's counters are 0.
 *
 * Returns: the number of worker threads
 */
GETTER (guint, n_workers, n_workers, "")

/**
 * ws_metrics_get_alive_tasks:
 * @self: a #WsMetrics
 *
 * Counts the tasks that were spawned and have not ended yet: on the
 * workers, in the blocking pool, and local tasks on any #GMainContext
 * (see [method@Ws.Runtime.spawn_local]). The count is read without
 * stopping the threads that start and end tasks, so while they run it can
 * lag behind by the tasks that started or ended during the read; it is
 * never negative, and exact once nothing starts or ends.
 *
 * Returns: the number of tasks spawned that have not ended
 */
GETTER (guint, alive_tasks, alive_tasks, "")

/**
 * ws_metrics_get_spawned_tasks:
 * @self: a #WsMetrics
 *
 * Counts the tasks spawned since the runtime started: on the workers, in
 * the blocking pool, and local tasks on any #GMainContext (see
 * [method@Ws.Runtime.spawn_local]). Spawns refused after shutdown are not
 * counted.
 *
 * Returns: the number of tasks, blocking jobs and local tasks spawned so
 *   far
 */
GETTER (guint64, spawned_tasks, spawned_tasks, "")

/**
 * ws_metrics_get_remote_schedule_count:
 * @self: a #WsMetrics
 *
 * Counts the spawns and wakes that came from outside the workers and
 * went through the injection queue.
 *
 * Returns: how many spawns and wakes came from outside the workers and went
 *   through the injection queue
 */
GETTER (guint64, remote_schedule_count, remote_schedules, "")

/**
 * ws_metrics_get_injection_queue_depth:
 * @self: a #WsMetrics
 *
 * Counts the tasks waiting in the injection queue, the queue for spawns
 * and wakes from outside the workers.
 *
 * Returns: the number of tasks in the injection queue
 */
GETTER (guint, injection_queue_depth, injection_queue_depth, "")

/**
 * ws_metrics_get_blocking_threads:
 * @self: a #WsMetrics
 *
 * Counts the threads of the blocking pool, busy or idle.
 *
 * Returns: the number of threads in the blocking pool
 */
GETTER (guint, blocking_threads, blocking_threads, "")

/**
 * ws_metrics_get_idle_blocking_threads:
 * @self: a #WsMetrics
 *
 * Counts the threads of the blocking pool that wait for a job.
 *
 * Returns: the number of blocking threads waiting for a job
 */
GETTER (guint, idle_blocking_threads, idle_blocking_threads, "")

/**
 * ws_metrics_get_blocking_queue_depth:
 * @self: a #WsMetrics
 *
 * Counts the jobs queued for the blocking pool that no thread has
 * started.
 *
 * Returns: the number of blocking jobs waiting for a thread
 */
GETTER (guint, blocking_queue_depth, blocking_queue_depth, "")

/**
 * ws_metrics_get_worker_poll_count:
 * @self: a #WsMetrics
 * @worker: a worker index
 *
 * Counts the task polls run by @worker.
 *
 * Returns: how many times the worker polled a task
 */
WORKER_GETTER (guint64, poll_count, polls)

/**
 * ws_metrics_get_worker_steal_count:
 * @self: a #WsMetrics
 * @worker: a worker index
 *
 * Counts the tasks @worker stole from other workers.
 *
 * Returns: how many tasks the worker stole from other workers
 */
WORKER_GETTER (guint64, steal_count, steals)

/**
 * ws_metrics_get_worker_steal_operations:
 * @self: a #WsMetrics
 * @worker: a worker index
 *
 * Counts the steal operations of @worker; one operation takes half of a
 * victim's queue.
 *
 * Returns: how many successful steals (each of one or more tasks) the worker
 *   made
 */
WORKER_GETTER (guint64, steal_operations, steal_operations)

/**
 * ws_metrics_get_worker_park_count:
 * @self: a #WsMetrics
 * @worker: a worker index
 *
 * Counts the times @worker went to sleep on its main context.
 *
 * Returns: how many times the worker went to sleep
 */
WORKER_GETTER (guint64, park_count, parks)

/**
 * ws_metrics_get_worker_unpark_count:
 * @self: a #WsMetrics
 * @worker: a worker index
 *
 * Counts the times @worker woke from a park.
 *
 * Returns: how many times the worker woke up
 */
WORKER_GETTER (guint64, unpark_count, unparks)

/**
 * ws_metrics_get_worker_noop_count:
 * @self: a #WsMetrics
 * @worker: a worker index
 *
 * Counts the times @worker was unparked and found no work.
 *
 * Returns: how many times the worker woke up and found nothing to do
 */
WORKER_GETTER (guint64, noop_count, noop_wakes)

/**
 * ws_metrics_get_worker_local_schedule_count:
 * @self: a #WsMetrics
 * @worker: a worker index
 *
 * Counts the spawns and wakes made on @worker that went to its own LIFO
 * slot or local queue.
 *
 * Returns: how many spawns and wakes the worker queued locally
 */
WORKER_GETTER (guint64, local_schedule_count, local_schedules)

/**
 * ws_metrics_get_worker_overflow_count:
 * @self: a #WsMetrics
 * @worker: a worker index
 *
 * Counts the times the local queue of @worker was full and moved half
 * of itself to the injection queue.
 *
 * Returns: how many times the worker's queue overflowed into the injection
 *   queue
 */
WORKER_GETTER (guint64, overflow_count, overflows)

/**
 * ws_metrics_get_worker_forced_yield_count:
 * @self: a #WsMetrics
 * @worker: a worker index
 *
 * Counts the polls on @worker that ran out of cooperative budget and
 * were made to yield.
 *
 * Returns: how many times a task on the worker ran out of cooperative budget
 */
WORKER_GETTER (guint64, forced_yield_count, forced_yields)

/**
 * ws_metrics_get_worker_busy_time:
 * @self: a #WsMetrics
 * @worker: a worker index
 *
 * Gets the time @worker spent running tasks, in microseconds, as last
 * published by the worker.
 *
 * Returns: the time the worker spent awake, in microseconds
 */
WORKER_GETTER (guint64, busy_time, busy_usec)

/**
 * ws_metrics_get_worker_local_queue_depth:
 * @self: a #WsMetrics
 * @worker: a worker index
 *
 * Counts the tasks in the local run queue of @worker now.
 *
 * Returns: the number of tasks in the worker's run queue
 */
WORKER_GETTER (guint, local_queue_depth, queue_depth)

/**
 * ws_metrics_to_string:
 * @self: a #WsMetrics
 *
 * Formats the snapshot as a table with one line per worker, for logs and
 * command-line tools.
 *
 * Returns: (transfer full): the table
 */
char *
ws_metrics_to_string (WsMetrics *self)
{
  GString *s;
  WorkerMetrics total = { 0, };

  g_return_val_if_fail (self != NULL, NULL);

  s = g_string_new (NULL);
  g_string_append_printf (s, "%-6s %10s %9s %7s %7s %9s %9s %9s %9s %10s %5s\n",
                          "worker", "polls", "steals", "steal-op", "parks", "unparks",
                          "local", "overflow", "yields", "busy-ms", "queue");
  for (guint i = 0; i < self->stats.n_workers; i++)
    {
      WorkerMetrics *m = &self->stats.workers[i];

      g_string_append_printf (s, "%-6u %10" G_GUINT64_FORMAT " %9" G_GUINT64_FORMAT
                              " %7" G_GUINT64_FORMAT " %7" G_GUINT64_FORMAT
                              " %9" G_GUINT64_FORMAT " %9" G_GUINT64_FORMAT
                              " %9" G_GUINT64_FORMAT " %9" G_GUINT64_FORMAT
                              " %10.1f %5u\n",
                              i, m->polls, m->steals, m->steal_operations, m->parks,
                              m->unparks, m->local_schedules, m->overflows,
                              m->forced_yields, m->busy_usec / 1000.0, m->queue_depth);
      total.polls += m->polls;
      total.steals += m->steals;
      total.steal_operations += m->steal_operations;
      total.parks += m->parks;
      total.unparks += m->unparks;
      total.local_schedules += m->local_schedules;
      total.overflows += m->overflows;
      total.forced_yields += m->forced_yields;
      total.busy_usec += m->busy_usec;
      total.queue_depth += m->queue_depth;
    }
  g_string_append_printf (s, "%-6s %10" G_GUINT64_FORMAT " %9" G_GUINT64_FORMAT
                          " %7" G_GUINT64_FORMAT " %7" G_GUINT64_FORMAT
                          " %9" G_GUINT64_FORMAT " %9" G_GUINT64_FORMAT
                          " %9" G_GUINT64_FORMAT " %9" G_GUINT64_FORMAT
                          " %10.1f %5u\n",
                          "total", total.polls, total.steals, total.steal_operations,
                          total.parks, total.unparks, total.local_schedules,
                          total.overflows, total.forced_yields, total.busy_usec / 1000.0,
                          total.queue_depth);
  g_string_append_printf (s, "spawned %" G_GUINT64_FORMAT ", alive %u, remote schedules %"
                          G_GUINT64_FORMAT ", injection queue %u, blocking threads %u "
                          "(%u idle, %u queued)\n",
                          self->stats.spawned_tasks, self->stats.alive_tasks,
                          self->stats.remote_schedules, self->stats.injection_queue_depth,
                          self->stats.blocking_threads, self->stats.idle_blocking_threads,
                          self->stats.blocking_queue_depth);

  return g_string_free (s, FALSE);
}
