/* ws-runtime-core.c: one runtime: the worker pool, the blocking pool and
 * the local executors side by side
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The runtime owns its configuration and three task hosts, which do not
 * know each other:
 *
 *   - the worker pool (ws-worker-pool.c), where ws_runtime_spawn () puts
 *     tasks;
 *   - the blocking pool (ws-blocking-pool.c), for spawn_blocking and for
 *     the threads that leave ws_block_in_place () (the worker pool hands
 *     them over through the WsThreadHandOff the runtime gives it);
 *   - the local executors (ws-local-executor.c), one per GMainContext
 *     that spawn_local has been given.
 *
 * They share one reference count (WsRuntimeRef, the first member here):
 * every task holds it through its host, every runtime thread holds it,
 * and the WsRuntime GObject holds one. The runtime is freed when the last
 * goes; if nobody shut it down, that last unref does.
 *
 * Shutdown, in this order (the protocol and its argument are written at
 * the top of ws-worker-pool.c and in doc/architecture.md, "Shutdown"):
 *
 *   1. close every way in: the worker pool's registry and spawn gate,
 *      its flag and its workers' parkers (ws_worker_pool_begin_shutdown);
 *      the blocking pool (its queued jobs are cancelled); the local
 *      executors (their tasks' cancellations are queued on the owners'
 *      contexts). The destroy notifies this runs count as the runtime's
 *      code (ws_thread.runtime), so a shutdown called from one returns at
 *      once;
 *   2.-6. the worker pool stops: its workers drain and leave, the caller
 *      joins them, waits for the spawn gate, makes the last sweep and
 *      dispatches the workers' contexts (ws_worker_pool_stop);
 *   7. wait, up to the deadline, for the blocking threads, and for the
 *      owners of local contexts to run the cancellations (or run them
 *      here where this thread can acquire the context); then dispatch the
 *      workers' contexts again, for completions that those ends posted.
 *
 * A fiber (ws-fiber.c) is ended as every task is, by destroying its
 * future with RUNNING held; for a fiber waiting inside its function that
 * resumes the fiber, with its awaits returning FALSE, until the function
 * returns: when shutdown returns TRUE no fiber's stack holds a live frame
 * (the argument is at the top of ws-worker-pool.c, "Fibers";
 * models/fiber.pml checks it).
 *
 * A call from a runtime thread starts the shutdown and returns FALSE at
 * once (it cannot wait for itself; the last pool thread makes the sweep);
 * a call that times out returns FALSE; dispose calls again until one has
 * seen every task end. Then the hooks are released: their data may own
 * tasks of this runtime, which hold the runtime, so keeping it until the
 * runtime is freed would keep both for ever.
 *
 * The stuck watchdog. With WS_DEBUG=stuck (ws-debug-private.h) the runtime
 * owns one more thread from its creation to step 1 of its shutdown, which
 * stops and joins it before anything closes. Every half threshold (at
 * most a second) it walks the task registries of the worker pool and of
 * the local executors, each under its own locks (a task registry's shard
 * lock keeps the task alive), and reports in one warning the tasks whose
 * last poll returned PENDING longer ago than the threshold, each once per
 * wait. It holds no runtime reference: the runtime cannot be freed before
 * a shutdown has begun. It touches no main context. The blocking pool's
 * jobs are not walked: a job runs in one poll, it never waits.
 */

#include "config.h"

#include <stddef.h>

#include "ws-runtime-core-struct-private.h"
#include "ws-time-private.h"
#include "ws-trace-private.h"
#include "ws-worker-private.h"

static void runtime_last_unref (WsRuntimeRef *ref);
static void start_watchdog     (WsRuntimeCore *self);

static inline WsRuntimeCore *
from_ref (const WsRuntimeRef *ref)
{
  return (WsRuntimeCore *) ((const char *) ref - offsetof (WsRuntimeCore, ref));
}

static gboolean
adopt_thread (gpointer blocking)
{
  return ws_blocking_pool_try_adopt (blocking);
}

static void
run_adopted_thread (gpointer blocking)
{
  ws_blocking_pool_run_adopted (blocking);
}

/* Sysprof's counters of this runtime, on the sampling thread
 * (ws-trace.c), which holds @data until ws_trace_remove_sampler () in
 * runtime_last_unref. Reads only what the pools count already, as a
 * metrics snapshot does (ws_core_read_stats, whose orders apply). */
static void
trace_sample (gpointer       data,
              WsTraceSample *sample)
{
  WsRuntimeCore *self = data;
  WsWorkerPool *pool = self->pool;
  gint64 now = g_get_monotonic_time ();
  gint64 busy = 0;
  gint64 queued = ws_inject_queue_len (&pool->inject);
  guint n_threads, n_idle, n_queued;

  for (guint i = 0; i < pool->n_workers; i++)
    {
      WsWorker *w = pool->workers[i];

      /* Relaxed: a counter with one writer, as in ws_core_read_stats. */
      busy += atomic_load_explicit (&w->core.stats.busy_usec, memory_order_relaxed);
      queued += ws_local_queue_len (&w->core.queue);
    }
  if (self->trace_time != 0 && now > self->trace_time)
    sample->busy_workers = (gdouble) (busy - self->trace_busy_usec) / (now - self->trace_time);
  self->trace_busy_usec = busy;
  self->trace_time = now;

  ws_blocking_pool_get_counts (self->blocking, &n_threads, &n_idle, &n_queued);
  sample->queued_tasks = queued;
  sample->blocking_threads = n_threads;
  sample->blocking_queued = n_queued;
}

WsRuntimeCore *
ws_runtime_core_new (const WsConfig *settings)
{
  /* Aligned: the count sits on a cache line of its own. */
  WsRuntimeCore *self = g_aligned_alloc0 (1, sizeof (WsRuntimeCore), 64);
  WsThreadHandOff hand_off;

  atomic_init (&self->ref.count, 1);
  self->ref.last_unref = runtime_last_unref;
  ws_config_init_from (&self->config, settings);
  ws_lock_init (&self->lock);
  ws_cond_init (&self->cond);
  self->blocking = ws_blocking_pool_new (&self->config, &self->ref);
  self->locals = ws_local_executors_new (&self->config, &self->ref);
  if (self->config.max_fiber_stacks == 0)
    self->config.max_fiber_stacks = ws_fiber_stack_get_default_max_mapped ();
  self->fiber_stacks = ws_fiber_stack_pool_new (self->config.max_fiber_stacks);
  hand_off.adopt = adopt_thread;
  hand_off.run = run_adopted_thread;
  hand_off.data = self->blocking;
  self->pool = ws_worker_pool_new (&self->config, &self->ref, &hand_off);
  ws_trace_init ();
  self->trace_sampler = ws_trace_add_sampler (trace_sample, self);
  ws_cond_init (&self->watchdog_cond);
  ws_debug_init ();
  if (ws_debug_get_flags () & WS_DEBUG_STUCK)
    start_watchdog (self);
  return self;
}

WsRuntimeCore *
ws_runtime_core_ref (WsRuntimeCore *self)
{
  ws_runtime_ref_acquire (&self->ref);
  return self;
}

void
ws_runtime_core_unref (WsRuntimeCore *self)
{
  ws_runtime_ref_release (&self->ref);
}

static void
runtime_last_unref (WsRuntimeRef *ref)
{
  WsRuntimeCore *self = from_ref (ref);

  /* No task and no thread holds us any more: a shutdown that began has
   * nothing left to wait for. */
  if (!ws_runtime_core_is_shutdown (self))
    ws_runtime_core_shutdown (self, -1);

  ws_trace_remove_sampler (self->trace_sampler);
  ws_worker_pool_free (self->pool);
  ws_blocking_pool_free (self->blocking);
  ws_local_executors_free (self->locals);
  /* Every fiber released its stack before its task let go of us, and
   * every worker's thread flushed its cache before it did. */
  ws_fiber_stack_pool_free (self->fiber_stacks);
  /* Every offloaded call ended before its task let go of us. Relaxed:
   * the last unref orders everything before it. */
  ws_offload_free (atomic_load_explicit (&self->offload, memory_order_relaxed));
  ws_config_clear (&self->config);
  ws_lock_clear (&self->lock);
  ws_cond_clear (&self->cond);
  ws_cond_clear (&self->watchdog_cond);
  g_aligned_free (self);
}

gboolean
ws_runtime_core_start (WsRuntimeCore  *self,
                       GError        **error)
{
  if (ws_worker_pool_start (self->pool, error))
    return TRUE;
  ws_runtime_core_shutdown (self, -1);
  return FALSE;
}

typedef struct
{
  WsConfig  *config;
  WsHookKind kind;
  WsHook     hook;
} SetHook;

static void
swap_hook (gpointer data)
{
  SetHook *set = data;
  WsHook old = set->config->hooks[set->kind];

  set->config->hooks[set->kind] = set->hook;
  set->hook = old;
}

/* Hooks can be set until the worker pool starts (ws-config-private.h).
 * Returns FALSE (and frees @data) once it has. */
gboolean
ws_runtime_core_set_hook (WsRuntimeCore   *self,
                          WsHookKind       kind,
                          void           (*func) (gpointer),
                          gpointer         data,
                          GDestroyNotify   destroy)
{
  SetHook set = { &self->config, kind, { func, data, destroy } };

  if (!ws_worker_pool_run_unstarted (self->pool, swap_hook, &set))
    {
      if (destroy != NULL)
        destroy (data);
      return FALSE;
    }

  /* The previous hook, swapped out. */
  if (set.hook.destroy != NULL)
    set.hook.destroy (set.hook.data);
  return TRUE;
}

/* What is used starts, when it is first used: the workers on the first
 * spawn onto them, or the first timer a blocking job arms
 * (ws_runtime_core_get_timer_context); the blocking pool's first thread
 * on the first blocking spawn (ws-blocking-pool.c); local tasks start no
 * thread. A runtime whose workers cannot start is shut down, and the
 * spawn is refused. Either start fixes the hooks first
 * (ws_worker_pool_fix_hooks): threads of both pools run them. */
static inline void
start_if_unstarted (WsRuntimeCore *self)
{
  if G_UNLIKELY (!ws_worker_pool_has_started (self->pool))
    {
      GError *error = NULL;

      if (!ws_runtime_core_start (self, &error))
        {
          g_warning ("wsrt: %s; the runtime is shut down", error->message);
          g_error_free (error);
        }
    }
}

WsRawTask *
ws_runtime_core_spawn (WsRuntimeCore  *self,
                       WsTaskFunc      func,
                       gpointer        data,
                       GDestroyNotify  destroy,
                       gboolean        join_interest)
{
  start_if_unstarted (self);
  return ws_worker_pool_spawn (self->pool, func, data, destroy, join_interest, 0, NULL, 0);
}

/* A task with a join handle and @tail_size bytes of the caller's after it
 * (ws_raw_task_get_tail). */
WsRawTask *
ws_runtime_core_spawn_with_tail (WsRuntimeCore  *self,
                                 WsTaskFunc      func,
                                 gpointer        data,
                                 GDestroyNotify  destroy,
                                 gsize           tail_size)
{
  start_if_unstarted (self);
  return ws_worker_pool_spawn (self->pool, func, data, destroy, TRUE, tail_size, NULL, 0);
}

/* A task whose data is @tail_size bytes in the task's own allocation,
 * the first @state_size of them a copy of @state (the rest is the
 * poll's to set before it reads it: ws_raw_task_new_with_tail); @clear
 * runs on that copy after the last poll (or on the spawning thread, if
 * the spawn is refused). */
WsRawTask *
ws_runtime_core_spawn_with_state (WsRuntimeCore  *self,
                                  WsTaskFunc      func,
                                  gconstpointer   state,
                                  gsize           state_size,
                                  gsize           tail_size,
                                  GDestroyNotify  clear,
                                  gboolean        join_interest)
{
  start_if_unstarted (self);
  return ws_worker_pool_spawn (self->pool, func, NULL, clear, join_interest, tail_size, state,
                               state_size);
}

WsRawTask *
ws_runtime_core_spawn_blocking (WsRuntimeCore  *self,
                                WsTaskFunc      func,
                                gpointer        data,
                                GDestroyNotify  destroy,
                                gboolean        join_interest)
{
  ws_worker_pool_fix_hooks (self->pool);
  return ws_blocking_pool_spawn (self->blocking, func, data, destroy, join_interest);
}

WsRawTask *
ws_runtime_core_spawn_local (WsRuntimeCore  *self,
                             GMainContext   *context,
                             WsTaskFunc      func,
                             gpointer        data,
                             GDestroyNotify  destroy,
                             gboolean        join_interest)
{
  WsLocalExecutor *exec = ws_local_executors_lookup (self->locals, context);
  WsRawTask *task;

  if (exec == NULL)
    return ws_local_executors_refuse_spawn (self->locals, &self->pool->host, context,
                                            func, data, destroy, join_interest);

  /* The lookup's executor reference keeps it alive across the push. */
  task = ws_local_executor_spawn (exec, func, data, destroy, join_interest);
  ws_local_executor_unref (exec);
  return task;
}

gboolean
ws_runtime_core_is_shutdown (WsRuntimeCore *self)
{
  return ws_worker_pool_is_shutdown (self->pool);
}

/* TRUE once a shutdown call has seen every task end. */
gboolean
ws_runtime_core_is_finished (WsRuntimeCore *self)
{
  /* Acquire: pairs with the release at the end of a shutdown. */
  return atomic_load_explicit (&self->finished, memory_order_acquire);
}

/* The tasks of every host: the workers', the blocking pool's jobs and the
 * local executors' tasks (WsMetrics reports both counts). */
gint64
ws_runtime_core_alive_tasks (WsRuntimeCore *self)
{
  return ws_worker_pool_alive_tasks (self->pool)
         + ws_task_registry_count (ws_blocking_pool_get_registry (self->blocking))
         + ws_local_executors_count_alive (self->locals);
}

guint64
ws_runtime_core_spawned_tasks (WsRuntimeCore *self)
{
  return ws_task_registry_spawned (&self->pool->registry)
         + ws_task_registry_spawned (ws_blocking_pool_get_registry (self->blocking))
         + ws_local_executors_count_spawned (self->locals);
}

WsRuntimeCore *
ws_runtime_core_get_current (void)
{
  return ws_thread.runtime != NULL ? from_ref (ws_thread.runtime) : NULL;
}

WsOffload *
ws_runtime_core_get_offload (WsRuntimeCore *self)
{
  /* Acquire: pairs with the release below, so the offload is seen
   * whole. */
  WsOffload *offload = atomic_load_explicit (&self->offload, memory_order_acquire);

  if G_LIKELY (offload != NULL)
    return offload;
  ws_lock_lock (&self->lock);
  offload = atomic_load_explicit (&self->offload, memory_order_relaxed);
  if (offload == NULL)
    {
      offload = ws_offload_new (self->config.max_blocking_threads);
      /* Release: the offload's fields before its pointer. */
      atomic_store_explicit (&self->offload, offload, memory_order_release);
    }
  ws_lock_unlock (&self->lock);
  return offload;
}

WsOffload *
ws_runtime_core_peek_offload (WsRuntimeCore *self)
{
  /* Acquire, as ws_runtime_core_get_offload's first load. */
  return atomic_load_explicit (&self->offload, memory_order_acquire);
}

const WsConfig *
ws_runtime_core_get_config (WsRuntimeCore *self)
{
  return &self->config;
}

WsFiberStackPool *
ws_runtime_core_get_fiber_stacks (WsRuntimeCore *self)
{
  return self->fiber_stacks;
}

GMainContext *
ws_runtime_core_get_timer_context (WsRuntimeCore *self)
{
  /* A blocking job's timer is driven by the first worker: it runs. */
  start_if_unstarted (self);
  return ws_worker_pool_get_context (self->pool, 0);
}

/* ---- the stuck watchdog (top of this file) ------------------------------ */

typedef struct
{
  gint64   now;
  gint64   min_age;
  gboolean mark;
  GString *out;
  guint    n;
} Dump;

static void
dump_task (WsRawTask *task,
           gpointer   data)
{
  Dump *d = data;

  if (ws_raw_task_describe_pending (task, d->now, d->min_age, d->mark, d->out))
    d->n++;
}

/* Appends to @out a line per task of the worker pool and the local
 * executors that has been pending at least @min_age_usec (only tasks
 * polled with WS_DEBUG=stuck on are known); returns how many. With @mark,
 * each is reported once per wait (the watchdog's use). */
guint
ws_runtime_core_dump_pending (WsRuntimeCore *self,
                              gint64         min_age_usec,
                              gboolean       mark,
                              GString       *out)
{
  Dump d = { g_get_monotonic_time (), min_age_usec, mark, out, 0 };

  ws_task_registry_foreach (&self->pool->registry, dump_task, &d);
  ws_local_executors_foreach_task (self->locals, dump_task, &d);
  return d.n;
}

static void
watchdog_scan (WsRuntimeCore *self)
{
  g_autoptr(GString) out = g_string_new (NULL);
  gint64 threshold = ws_debug_stuck_usec ();
  guint n = ws_runtime_core_dump_pending (self, threshold, TRUE, out);

  if (n > 0)
    g_warning ("wsrt: %u task%s pending for longer than %.1f s (WS_DEBUG=stuck; each "
               "is said once per wait):%s\n"
               "A task that returned WS_POLL_PENDING is polled again only once its waker "
               "is woken: make sure that what it awaits is woken (a channel sent to or "
               "closed, a oneshot or a promise completed, a GIO call finished), give "
               "the wait a timeout, or cancel the task.",
               n, n == 1 ? "" : "s", threshold / (double) G_USEC_PER_SEC, out->str);
}

static gpointer
watchdog_main (gpointer data)
{
  WsRuntimeCore *self = data;
  gint64 period = CLAMP (ws_debug_stuck_usec () / 2, 10 * G_TIME_SPAN_MILLISECOND,
                         G_TIME_SPAN_SECOND);
  gint64 next = g_get_monotonic_time () + period;

  ws_lock_lock (&self->lock);
  while (!self->watchdog_stop)
    {
      if (g_get_monotonic_time () < next)
        {
          ws_cond_wait_until (&self->watchdog_cond, &self->lock, next);
          continue;
        }
      /* Without our lock: the walk takes the registries' locks, and a
       * warning may run a log handler of the program's. */
      ws_lock_unlock (&self->lock);
      watchdog_scan (self);
      next = g_get_monotonic_time () + period;
      ws_lock_lock (&self->lock);
    }
  ws_lock_unlock (&self->lock);
  return NULL;
}

static void
start_watchdog (WsRuntimeCore *self)
{
  g_autofree gchar *name = g_strdup_printf ("%s-debug", self->config.thread_name_prefix);
  GError *error = NULL;

  self->watchdog = g_thread_try_new (name, watchdog_main, self, &error);
  if (self->watchdog == NULL)
    {
      g_warning ("wsrt: WS_DEBUG=stuck: could not start its thread: %s", error->message);
      g_error_free (error);
    }
}

/* Before step 1 of the shutdown, by its first caller. A log handler
 * called by the watchdog's own warning that shuts the runtime down must
 * not join itself: the thread then ends on its own. */
static void
stop_watchdog (WsRuntimeCore *self)
{
  GThread *thread;

  ws_lock_lock (&self->lock);
  self->watchdog_stop = TRUE;
  thread = g_steal_pointer (&self->watchdog);
  ws_cond_broadcast (&self->watchdog_cond);
  ws_lock_unlock (&self->lock);

  if (thread == NULL)
    return;
  if (thread == g_thread_self ())
    g_thread_unref (thread);
  else
    g_thread_join (thread);
}

/* Step 1: close every way in. Idempotent; a later caller waits (if @wait)
 * until the first one is through, so that every caller proceeds with
 * everything closed. */
static void
begin_shutdown (WsRuntimeCore *self,
                gboolean       wait)
{
  const WsRuntimeRef *prev = ws_thread.runtime;
  gboolean first;

  ws_lock_lock (&self->lock);
  first = !self->shutdown_begun;
  self->shutdown_begun = TRUE;
  if (!first)
    {
      while (wait && !self->closing_done)
        ws_cond_wait (&self->cond, &self->lock);
      ws_lock_unlock (&self->lock);
      return;
    }
  ws_lock_unlock (&self->lock);

  stop_watchdog (self);
  ws_worker_pool_begin_shutdown (self->pool);

  ws_thread.runtime = &self->ref;
  ws_blocking_pool_close (self->blocking);
  ws_local_executors_close (self->locals);
  ws_thread.runtime = prev;

  ws_lock_lock (&self->lock);
  self->closing_done = TRUE;
  ws_cond_broadcast (&self->cond);
  ws_lock_unlock (&self->lock);
}

/* Once no thread of the runtime runs (each ran its stop hook while still
 * counted). */
static void
release_hooks (WsRuntimeCore *self)
{
  WsHook hooks[WS_N_HOOKS];

  ws_lock_lock (&self->lock);
  ws_config_take_hooks (&self->config, hooks);
  ws_lock_unlock (&self->lock);
  ws_hooks_release (hooks);
}

/* The entry point of the shutdown protocol (top of this file). With
 * @wait_owed, a GIO completion still owed to a worker's context at
 * @deadline makes it return FALSE; without (dispose), the tasks' end is
 * waited for and the completions are left to the pool thread that drains
 * them ("Owed completions", ws-worker-pool.c). */
gboolean
ws_runtime_core_shutdown_full (WsRuntimeCore *self,
                               gint64         timeout_usec,
                               gboolean       wait_owed)
{
  gint64 deadline = timeout_usec < 0 ? -1
                    : ws_time_deadline_after (g_get_monotonic_time (), timeout_usec);
  gboolean from_runtime = ws_thread.runtime == &self->ref;
  gboolean done;
  gboolean drained;

  begin_shutdown (self, !from_runtime);

  /* A thread that runs the runtime's code (a worker, a blocking thread, a
   * thread inside ws_block_in_place (), a local executor's dispatch, a
   * destroy notify run by this very sweep) cannot wait for the threads
   * and tasks that include itself. */
  if (from_runtime)
    return FALSE;

  if (!ws_worker_pool_stop (self->pool, deadline, wait_owed, &drained))
    return FALSE;

  done = ws_blocking_pool_shutdown (self->blocking, deadline);
  done = ws_local_executors_shutdown (self->locals, deadline) && done;

  /* Blocking jobs and local tasks that ended since may owe completions to
   * a worker's context too. */
  drained = ws_worker_pool_dispatch_contexts (self->pool, deadline, wait_owed) && drained;

  done = done && ws_runtime_core_alive_tasks (self) == 0;
  if (done && !ws_runtime_core_is_finished (self))
    {
      release_hooks (self);
      /* Release: pairs with ws_runtime_core_is_finished (). */
      atomic_store_explicit (&self->finished, TRUE, memory_order_release);
    }
  return done && (drained || !wait_owed);
}

gboolean
ws_runtime_core_shutdown (WsRuntimeCore *self,
                          gint64         timeout_usec)
{
  return ws_runtime_core_shutdown_full (self, timeout_usec, TRUE);
}
