/* ws-scheduler.c: the worker pool: creation, spawn, remote schedule,
 * shutdown
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The shutdown protocol (doc/architecture.md, "Shutdown", gives the same
 * argument at more length; models/shutdown.pml checks it).
 *
 * What must hold, under every interleaving:
 *
 *  (R) Every spawned task is either refused (never counted alive, its
 *      destroy notify run on the spawning thread before the spawn
 *      returns) or reachable by shutdown on a thread that shutdown
 *      synchronises with before it returns.
 *  (P) No task is completed or cancelled from inside a schedule or push
 *      path: a push never runs user code, and the stack never grows with
 *      the length of an await chain.
 *  (H) A task keeps its host alive: it holds a reference on it from
 *      ws_raw_task_new () to dealloc (), so a late wake, spawn or metric
 *      read never touches freed memory, whatever the owner of the runtime
 *      did meanwhile.
 *  (T) Every thread that runs the runtime's code is known to shutdown:
 *      workers and a thread inside ws_block_in_place () (counted in
 *      n_running_threads until its poll returns), blocking threads (the
 *      blocking pool counts them), local dispatches and the sweep's own
 *      destroy notifies (they set the current scheduler). Shutdown from
 *      any of them starts the shutdown and returns FALSE at once instead
 *      of waiting for itself.
 *  (D) ws_scheduler_shutdown () returns TRUE only when every destroy
 *      notify has run and its effects are visible to the caller.
 *
 * Where a live task of the pool can be: (a) in transit on a spawning
 * thread, between ws_raw_task_new () and its push; (b) in a worker's LIFO
 * slot or run queue, or in the injection queue; (c) being polled; (d)
 * idle, waiting on a waker, which is only possible after a poll returned
 * PENDING, so the task is bound to the owned set (late binding:
 * ws_raw_task_run binds on the first PENDING, under the set's shard lock,
 * and cancels the task itself if the set is closed); (e) in transit on a
 * waking thread, between the wake's CAS and its push, which also means it
 * is bound (it was idle).
 *
 * The steps:
 *
 *  1. begin_shutdown: close the owned set (seq_cst), which is also the
 *     spawn gate; close the blocking pool and the local executors; raise
 *     the shutdown flag (release) and unpark every worker.
 *  2. Each worker, on seeing the flag (worker_shutdown, ws-worker.c):
 *     walks the set, cancelling idle tasks at once and marking running
 *     ones CANCELLED (their poller cancels them when the poll returns),
 *     drains its LIFO slot and run queue (ws_raw_task_drop_queued cancels
 *     a task that has not ended); the last worker drains every run queue
 *     and the injection queue; the thread dispatches its context and
 *     leaves. From the flag on, a worker's own schedules go to the
 *     injection queue.
 *  3. The caller waits until n_running_threads is 0 (workers, and a
 *     thread still inside a poll after ws_block_in_place ()) and joins the
 *     workers: every poll has returned, and what the workers did is
 *     visible.
 *  4. The caller waits until the spawn gate is empty
 *     (ws_task_registry_wait_spawns): every foreign spawn that was accepted
 *     has been pushed. The gate is a Dekker pair on (closed, gate_entered),
 *     argued in ws-task-registry.c: a spawner either sees the set closed and
 *     refuses, or is seen in flight and waited for.
 *  5. The last sweep (final_sweep): walk the set again, drain every run
 *     queue, and pop the injection queue until it is empty, sealing it in
 *     the same critical section. Cancelling a task wakes its awaiter,
 *     whose schedule pushes it to the (not yet sealed) injection queue;
 *     the loop pops it in turn, so cancellation is iterative (P).
 *  6. Dispatch the workers' contexts: completions (ws_task_wait_async)
 *     posted there after a worker's last dispatch are delivered.
 *  7. The blocking pool and the local executors: wait, up to the deadline,
 *     for running blocking jobs and for the owners of local contexts to
 *     run the cancellations (or run them here where this thread can
 *     acquire the context); then dispatch the workers' contexts again.
 *
 * Why every accepted task of the pool has ended when step 5 is over: a
 * task in (a) was pushed before step 4 ended, so it is in (b); (c) ended
 * with step 3, leaving the task in (b), (d), or ended; the walk of step 5
 * ends every task in (d) and (e) (the set is closed, so no task binds
 * behind the walk; a wake whose CAS came first leaves the task NOTIFIED
 * but not RUNNING, which the walk takes); the drains end every task in
 * (b), including the ones the walk's cancellations pushed. After the seal
 * a push can only come from a wake of a task that has ended (every task
 * has), so push_remote drops that reference and nothing is lost (R).
 * Refused spawns never reach complete (), so they are never counted; the
 * alive count read at the end is exact because every thread that counted
 * has been joined or synchronised with (D).
 *
 * A shutdown that returns early (from a runtime thread, (T), or at a
 * timeout) leaves steps 4 to 6 to the last pool thread to stop
 * (ws_scheduler_finish_from_last_thread), and step 7 to a later call:
 * dispose calls again until a shutdown saw every task end.
 *
 * Without the gate, a spawn that read "open" and was then descheduled
 * would push after the last sweep, and its destroy notify would run after
 * shutdown returned TRUE; without the seal's single critical section, a
 * push could land between the last pop and the seal. Without (H), a
 * foreign wake of a task that shutdown ended would push into a freed
 * injection queue once the program dropped the runtime. Without (P), a
 * chain of 80,000 tasks awaiting each other overflowed a worker's stack.
 */

#include "config.h"

#include <stdio.h>

#include "ws-scheduler-private.h"
#include "ws-blocking-pool-private.h"
#include "ws-local-executor-private.h"
#include "ws-error.h"

static void pool_schedule (WsTaskHost *host,
                           WsRawTask  *task,
                           gboolean    is_yield);
static void pool_ref      (WsTaskHost *host);
static void pool_unref    (WsTaskHost *host);

static const WsTaskHostVTable pool_host_class = {
  pool_schedule,
  pool_ref,
  pool_unref,
};

WsScheduler *
ws_scheduler_new (const WsSchedulerConfig *config)
{
  WsScheduler *self = g_aligned_alloc0 (1, sizeof (WsScheduler), 64); /* members on lines of their own */
  guint n = config->n_workers;

  if (n == 0)
    n = g_get_num_processors ();

  self->host.vtable = &pool_host_class;
  self->host.registry = &self->registry;
  self->host.bind_on_pending = TRUE;
  atomic_init (&self->ref_count, 1);
  self->config = *config;
  memset (self->config.hooks, 0, sizeof self->config.hooks);
  self->config.thread_name_prefix = g_strdup (config->thread_name_prefix ? config->thread_name_prefix : "ws");
  self->n_workers = n;
  ws_inject_queue_init (&self->inject);
  ws_sleepers_init (&self->sleepers, n);
  ws_task_registry_init (&self->registry);
  atomic_init (&self->shutdown, FALSE);
  atomic_init (&self->remote_schedules, 0);
  atomic_init (&self->local_polls, 0);
  atomic_init (&self->started_flag, FALSE);
  ws_lock_init (&self->lock);
  ws_lock_init (&self->sweep_lock);
  ws_cond_init (&self->cond);
  self->local_executors = g_hash_table_new (NULL, NULL);
  self->detached_executors = g_ptr_array_new ();
  self->blocking = ws_blocking_pool_new (self);

  self->workers = g_new0 (WsWorker *, n);
  for (guint i = 0; i < n; i++)
    {
      WsWorker *w = g_new0 (WsWorker, 1);

      w->sched = self;
      w->index = i;
      ws_local_queue_init (&w->queue);
      w->context = g_main_context_new ();
      ws_parker_init (&w->parker, w->context);
      /* Any non-zero seed works for xorshift; spread them out. */
      w->rand_state = 0x9e3779b9u * (i + 1);
      self->workers[i] = w;
    }

  return self;
}

WsScheduler *
ws_scheduler_ref (WsScheduler *self)
{
  atomic_fetch_add_explicit (&self->ref_count, 1, memory_order_relaxed);
  return self;
}

static void
pool_ref (WsTaskHost *host)
{
  ws_scheduler_ref ((WsScheduler *) host);
}

static void
pool_unref (WsTaskHost *host)
{
  ws_scheduler_unref ((WsScheduler *) host);
}

static void
scheduler_free (WsScheduler *self)
{
  /* Every thread and every task that could touch us held a reference, so
   * all are gone. */
  for (guint i = 0; i < self->n_workers; i++)
    {
      WsWorker *w = self->workers[i];

      g_assert (w->lifo == NULL);
      g_assert (!ws_local_queue_has_tasks (&w->queue));
      if (w->thread != NULL)
        g_thread_unref (w->thread);
      g_main_context_unref (w->context);
      g_free (w);
    }
  g_free (self->workers);

  g_assert (g_hash_table_size (self->local_executors) == 0);
  g_hash_table_unref (self->local_executors);
  g_assert (self->detached_executors->len == 0);
  g_ptr_array_unref (self->detached_executors);
  ws_blocking_pool_free (self->blocking);
  ws_task_registry_clear (&self->registry);
  ws_inject_queue_clear (&self->inject);
  ws_sleepers_clear (&self->sleepers);
  ws_lock_clear (&self->lock);
  ws_lock_clear (&self->sweep_lock);
  ws_cond_clear (&self->cond);
  for (guint i = 0; i < WS_N_HOOKS; i++)
    if (self->config.hooks[i].destroy != NULL)
      self->config.hooks[i].destroy (self->config.hooks[i].data);
  g_free (self->config.thread_name_prefix);
  g_aligned_free (self);
}

/* Hooks can be set until the first thread starts; they are read without a
 * lock afterwards (the thread creation orders the write before). Returns
 * FALSE (and frees @data) if the runtime has started. */
gboolean
ws_scheduler_set_hook (WsScheduler    *self,
                       WsHookKind      kind,
                       void          (*func) (gpointer),
                       gpointer        data,
                       GDestroyNotify  destroy)
{
  WsHook old = { NULL, };

  ws_lock_lock (&self->lock);
  if (self->started)
    {
      ws_lock_unlock (&self->lock);
      if (destroy != NULL)
        destroy (data);
      return FALSE;
    }
  old = self->config.hooks[kind];
  self->config.hooks[kind].func = func;
  self->config.hooks[kind].data = data;
  self->config.hooks[kind].destroy = destroy;
  ws_lock_unlock (&self->lock);

  if (old.destroy != NULL)
    old.destroy (old.data);
  return TRUE;
}

void
ws_scheduler_unref (WsScheduler *self)
{
  /* AcqRel: the usual reference-count pairing before a free. */
  if (atomic_fetch_sub_explicit (&self->ref_count, 1, memory_order_acq_rel) == 1)
    {
      /* No task and no thread holds us any more: a shutdown that began has
       * nothing left to wait for. */
      if (!ws_scheduler_is_shutdown (self))
        ws_scheduler_shutdown (self, -1);
      scheduler_free (self);
    }
}

gboolean
ws_scheduler_start (WsScheduler *self,
                    GError     **error)
{
  gboolean ok = TRUE;

  ws_lock_lock (&self->lock);
  if (self->started)
    {
      ws_lock_unlock (&self->lock);
      return TRUE;
    }
  self->started = TRUE;
  /* Release: a spawner that sees the flag (acquire) sees the workers. */
  atomic_store_explicit (&self->started_flag, TRUE, memory_order_release);

  for (guint i = 0; i < self->n_workers; i++)
    {
      WsWorker *w = self->workers[i];
      g_autofree gchar *name = g_strdup_printf ("%s-%u", self->config.thread_name_prefix, i);

      ws_scheduler_ref (self);
      self->n_running_threads++;
      w->thread = g_thread_try_new (name, ws_worker_thread_main, w, error);
      if (w->thread == NULL)
        {
          self->n_running_threads--;
          ws_scheduler_unref (self);
          g_prefix_error (error, "Could not start wsrt worker thread %u of %u: ",
                          i + 1, self->n_workers);
          ok = FALSE;
          break;
        }
    }
  ws_lock_unlock (&self->lock);

  if (!ok)
    ws_scheduler_shutdown (self, -1);

  return ok;
}

/* TRUE once a shutdown call has seen every task end. */
gboolean
ws_scheduler_is_finished (WsScheduler *self)
{
  return atomic_load_explicit (&self->finished, memory_order_acquire);
}

gboolean
ws_scheduler_is_shutdown (WsScheduler *self)
{
  return atomic_load_explicit (&self->shutdown, memory_order_acquire);
}

gint64
ws_scheduler_alive_tasks (WsScheduler *self)
{
  return ws_task_registry_count (&self->registry)
         + ws_task_registry_count (ws_blocking_pool_get_registry (self->blocking))
         + ws_local_executors_count_alive (self);
}

void
ws_scheduler_notify_parked (WsScheduler *self)
{
  gint idx = ws_sleepers_worker_to_notify (&self->sleepers);

  if (idx >= 0)
    ws_parker_unpark (&self->workers[idx]->parker);
}

/* From any thread but a running worker of this pool (or from our own
 * context while the worker is parked): through the injection queue, and
 * wake a sleeper if nobody searches. The caller keeps the pool alive
 * across the call. */
static void
push_remote (WsScheduler *self,
             WsRawTask   *task)
{
  atomic_fetch_add_explicit (&self->remote_schedules, 1, memory_order_relaxed);
  if G_UNLIKELY (!ws_inject_queue_push (&self->inject, task))
    {
      /* Sealed: shutdown's last sweep is over, every task of the pool has
       * ended (doc/architecture.md, "Shutdown"), and this is a late wake
       * of one of them. Drop the queued reference; never cancel here. */
      ws_raw_task_unref (task);
      return;
    }
  ws_scheduler_notify_parked (self);
}

static inline gboolean
on_running_worker (WsScheduler *self,
                   WsWorker    *w)
{
  return w != NULL && w->sched == self && !w->in_park && !w->is_shutdown;
}

static void
pool_schedule (WsTaskHost *host,
               WsRawTask  *task,
               gboolean    is_yield)
{
  WsScheduler *self = (WsScheduler *) host;
  WsWorker *w = ws_worker_get_current ();

  if (on_running_worker (self, w))
    {
      ws_worker_schedule_local (w, task, is_yield);
      return;
    }

  if (w != NULL && w->sched == self)
    {
      /* Our own worker (parked, or stopping): it holds the pool. */
      push_remote (self, task);
      return;
    }

  /* A foreign waker holds the task, not the pool: a task reference of our
   * own keeps the task, and through it the pool, alive until the push and
   * the notify are done. The unref may free both, so it comes last. */
  ws_raw_task_ref (task);
  push_remote (self, task);
  ws_raw_task_unref (task);
}

/* Refused spawns return a task that has ended as cancelled, with its
 * destroy notify run (doc/architecture.md, "Shutdown"). */
static WsRawTask *
refuse (WsRawTask *task,
        gboolean   join_interest)
{
  ws_raw_task_refuse (task);
  return join_interest ? task : NULL;
}

WsRawTask *
ws_scheduler_spawn (WsScheduler    *self,
                    WsTaskFunc      func,
                    gpointer        data,
                    GDestroyNotify  destroy,
                    gboolean        join_interest)
{
  WsWorker *w = ws_worker_get_current ();
  WsRawTask *task;

  if G_UNLIKELY (!atomic_load_explicit (&self->started_flag, memory_order_acquire))
    ws_scheduler_start (self, NULL);

  task = ws_raw_task_new (&self->host, func, data, destroy, join_interest);

  if (on_running_worker (self, w))
    {
      /* A worker's own spawn needs no gate: shutdown reaches its queues
       * after the worker stopped, on a thread it joins. Refused once
       * closed all the same (acquire: pairs with the seq_cst close). */
      if G_UNLIKELY (ws_task_registry_is_closed (&self->registry))
        return refuse (task, join_interest);
      ws_raw_task_mark_counted (task);
      ws_task_registry_count_accepted (&self->registry);
      ws_worker_schedule_local (w, task, FALSE);
      return join_interest ? task : NULL;
    }

  /* Any other thread passes the spawn gate (ws-task-registry.c): refused
   * once closed, or counted and pushed before shutdown's last sweep. */
  if G_UNLIKELY (!ws_task_registry_enter_spawn (&self->registry))
    return refuse (task, join_interest);
  ws_raw_task_mark_counted (task);
  /* The spawner's caller holds the runtime, so the pool outlives the push
   * without a task reference of ours. Leaving the gate counts the task. */
  push_remote (self, task);
  ws_task_registry_leave_spawn (&self->registry);

  return join_interest ? task : NULL;
}

/* A host that binds at spawn (the blocking pool; local executors have
 * their own, ws_local_executor_spawn, which refuses on the owner thread):
 * the owned set's lock decides, so a spawn is refused (never counted) or
 * in the set that shutdown walks. */
WsRawTask *
ws_task_host_spawn (WsTaskHost     *host,
                    WsTaskFunc      func,
                    gpointer        data,
                    GDestroyNotify  destroy,
                    gboolean        join_interest)
{
  WsRawTask *task = ws_raw_task_new (host, func, data, destroy, join_interest);

  g_assert (!host->bind_on_pending);
  /* Binding counts the task, under the set's lock. */
  if (!ws_task_registry_bind (host->registry, task))
    return refuse (task, join_interest);

  host->vtable->schedule (host, task, FALSE);
  return join_interest ? task : NULL;
}

WsRawTask *
ws_scheduler_spawn_blocking (WsScheduler    *self,
                             WsTaskFunc      func,
                             gpointer        data,
                             GDestroyNotify  destroy,
                             gboolean        join_interest)
{
  return ws_task_host_spawn ((WsTaskHost *) self->blocking, func, data, destroy, join_interest);
}

WsRawTask *
ws_scheduler_spawn_local (WsScheduler    *self,
                          GMainContext   *context,
                          WsTaskFunc      func,
                          gpointer        data,
                          GDestroyNotify  destroy,
                          gboolean        join_interest)
{
  WsLocalExecutor *exec = ws_local_executor_lookup (self, context);
  WsRawTask *task;

  if (exec == NULL)
    return ws_local_executor_refuse_spawn (self, context, func, data, destroy, join_interest);

  /* The lookup's executor reference keeps it alive across the push. */
  task = ws_local_executor_spawn (exec, func, data, destroy, join_interest);
  ws_local_executor_unref (exec);
  return task;
}

/* Step 1 of shutdown: close every way in, raise the flag and wake every
 * worker. Idempotent; a later caller waits (if @wait) until the first one
 * is through, so that every caller proceeds with everything closed. */
static void
begin_shutdown (WsScheduler *self,
                gboolean     wait)
{
  WsScheduler *prev_current = ws_scheduler_get_current ();
  gboolean first;

  ws_lock_lock (&self->lock);
  first = !self->shutdown_begun;
  self->shutdown_begun = TRUE;
  if (first && !self->started)
    {
      /* Never started: no worker will start now, and none runs the
       * shutdown steps; the caller's sweep does. */
      self->started = TRUE;
      atomic_store_explicit (&self->started_flag, TRUE, memory_order_release);
    }
  if (!first)
    {
      while (wait && !self->closing_done)
        ws_cond_wait (&self->cond, &self->lock);
      ws_lock_unlock (&self->lock);
      return;
    }
  ws_lock_unlock (&self->lock);

  /* Close the set (and with it the spawn gate) before workers can see the
   * flag: a worker that sees it walks the set, which must be closed by
   * then so that no task binds behind the walk. */
  ws_task_registry_close (&self->registry);

  /* Release: pairs with the acquire in ws_scheduler_is_shutdown(). */
  atomic_store_explicit (&self->shutdown, TRUE, memory_order_release);

  /* Release in unpark: each worker sees the flag after waking. */
  for (guint i = 0; i < self->n_workers; i++)
    ws_parker_unpark (&self->workers[i]->parker);

  /* These run destroy notifies of queued blocking jobs: the runtime's
   * code, so a shutdown called from one returns at once. */
  ws_scheduler_set_current (self);
  ws_blocking_pool_close (self->blocking);
  ws_local_executors_close (self);
  ws_scheduler_set_current (prev_current);

  ws_lock_lock (&self->lock);
  self->closing_done = TRUE;
  ws_cond_broadcast (&self->cond);
  ws_lock_unlock (&self->lock);
}

/* Waits until no thread of the pool runs: the workers, and a thread that
 * gave its core away in ws_block_in_place () but is still inside that
 * poll. Joins the workers. */
static gboolean
wait_for_pool_threads (WsScheduler *self,
                       gint64       deadline)
{
  gboolean done;

  ws_lock_lock (&self->lock);
  while (self->n_running_threads > 0)
    if (!ws_cond_wait_until (&self->cond, &self->lock, deadline))
      break;
  done = self->n_running_threads == 0;
  ws_lock_unlock (&self->lock);

  if (!done)
    return FALSE;

  for (guint i = 0; i < self->n_workers; i++)
    {
      WsWorker *w = self->workers[i];
      GThread *t;

      ws_lock_lock (&self->lock);
      t = w->thread != g_thread_self () ? g_steal_pointer (&w->thread) : NULL;
      ws_lock_unlock (&self->lock);
      if (t != NULL)
        g_thread_join (t);
    }
  return TRUE;
}

/* Drops every queued instance of every worker's queues. */
static gboolean
drain_worker_queues (WsScheduler *self)
{
  gboolean any = FALSE;

  for (guint i = 0; i < self->n_workers; i++)
    {
      WsWorker *w = self->workers[i];
      WsRawTask *t;

      if (w->lifo != NULL)
        {
          t = g_steal_pointer (&w->lifo);
          ws_raw_task_drop_queued (t);
          any = TRUE;
        }
      while ((t = ws_local_queue_pop (&w->queue)) != NULL)
        {
          ws_raw_task_drop_queued (t);
          any = TRUE;
        }
    }
  return any;
}

/* The last sweep, once no pool thread runs and no accepted spawn is in
 * flight: walk the set, drain every queue, and seal the injection queue
 * when it is found empty. A cancellation here may wake an awaiter, whose
 * schedule pushes it to the injection queue: the loop pops it in turn, so
 * the depth of the stack never grows with the length of an await chain. */
static void
final_sweep (WsScheduler *self)
{
  WsRawTask *t;

  ws_task_registry_shutdown_all (&self->registry);
  drain_worker_queues (self);
  while ((t = ws_inject_queue_pop_or_seal (&self->inject)) != NULL)
    ws_raw_task_drop_queued (t);

  /* Nothing can be left: the set is closed and was walked, the queues are
   * sealed or owned by threads that are gone. */
  g_assert (!drain_worker_queues (self));
}

/* Completions owed to the contexts of workers that have exited (a
 * ws_task_wait_async started on a worker, for a task that shutdown
 * cancelled after that worker's last dispatch): dispatch them here. */
static void
dispatch_worker_contexts (WsScheduler *self)
{
  for (guint i = 0; i < self->n_workers; i++)
    {
      GMainContext *context = self->workers[i]->context;

      if (!g_main_context_acquire (context))
        continue;
      g_main_context_push_thread_default (context);
      while (g_main_context_iteration (context, FALSE))
        ;
      g_main_context_pop_thread_default (context);
      g_main_context_release (context);
    }
}

/* Steps 4 to 6, once no pool thread runs: by the shutdown caller, or by
 * the last pool thread to stop, so that a shutdown started from a
 * runtime thread (which returns at once) still ends every task. */
static void
sweep (WsScheduler *self,
       WsScheduler *prev_current)
{
  ws_lock_lock (&self->sweep_lock);
  ws_scheduler_set_current (self);
  final_sweep (self);
  dispatch_worker_contexts (self);
  ws_scheduler_set_current (prev_current);
  ws_lock_unlock (&self->sweep_lock);
}

/* Called by a pool thread that has just stopped counting, when it was
 * the last one and shutdown has begun. */
void
ws_scheduler_finish_from_last_thread (WsScheduler *self)
{
  ws_task_registry_wait_spawns (&self->registry, -1);
  sweep (self, ws_scheduler_get_current ());
  /* Not the local executors: a pool thread could acquire an application
   * context between two of its owner's iterations, and local data's
   * destroy notifies must run on the owner. Those are left to a shutdown
   * called from outside the runtime, or to dispose. */
}

/* Once no thread of the runtime runs (each ran its stop hook while still
 * counted), the hooks' data is released: a hook's data may own tasks of
 * this runtime (a closure's captured scope), which hold the scheduler, so
 * keeping it until the scheduler is freed would keep both for ever. */
static void
release_hooks (WsScheduler *self)
{
  WsHook hooks[WS_N_HOOKS];

  ws_lock_lock (&self->lock);
  memcpy (hooks, self->config.hooks, sizeof hooks);
  memset (self->config.hooks, 0, sizeof self->config.hooks);
  ws_lock_unlock (&self->lock);

  for (guint i = 0; i < WS_N_HOOKS; i++)
    if (hooks[i].destroy != NULL)
      hooks[i].destroy (hooks[i].data);
}

/* The entry point of the shutdown protocol (top of this file). */
gboolean
ws_scheduler_shutdown (WsScheduler *self,
                       gint64       timeout_usec)
{
  gint64 deadline = timeout_usec < 0 ? -1 : g_get_monotonic_time () + timeout_usec;
  WsScheduler *prev_current = ws_scheduler_get_current ();
  gboolean done;

  begin_shutdown (self, prev_current != self);

  /* A thread that runs the runtime's code (a worker, a blocking thread, a
   * thread inside ws_block_in_place (), a local executor's dispatch, a
   * destroy notify run by this very sweep) cannot wait for the threads
   * and tasks that include itself. */
  if (prev_current == self)
    return FALSE;

  if (!wait_for_pool_threads (self, deadline)
      || !ws_task_registry_wait_spawns (&self->registry, deadline))
    return FALSE;

  /* One sweep at a time; the destroy notifies it runs count as the
   * runtime's code (see above). */
  sweep (self, prev_current);

  done = ws_blocking_pool_shutdown (self->blocking, deadline);
  done = ws_local_executors_shutdown (self, deadline) && done;

  /* Blocking jobs and local tasks that ended since may owe completions to
   * a worker's context too. */
  ws_lock_lock (&self->sweep_lock);
  ws_scheduler_set_current (self);
  dispatch_worker_contexts (self);
  ws_scheduler_set_current (prev_current);
  ws_lock_unlock (&self->sweep_lock);

  done = done && ws_scheduler_alive_tasks (self) == 0;
  if (done)
    {
      release_hooks (self);
      /* Release: pairs with ws_scheduler_is_finished (). */
      atomic_store_explicit (&self->finished, TRUE, memory_order_release);
    }
  return done;
}
