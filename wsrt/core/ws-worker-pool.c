/* ws-worker-pool.c: the worker pool: creation, spawn, remote schedule,
 * and its part of shutdown
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The shutdown protocol of the runtime, written here once
 * (doc/architecture.md, "Shutdown", points here; models/shutdown.pml
 * checks it).
 * The runtime (ws-runtime-core.c) runs the steps in order; this pool
 * carries out steps 1 to 6 for its own tasks, the blocking pool and the
 * local executors their parts of steps 1 and 7.
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
 *      did meanwhile. One exception, which no late access can meet: an
 *      ended task that a stale waker keeps (a zombie) gives its reference
 *      back once every task of the host has ended (step 5 here), and
 *      holds a dead host from then on (ws-raw-task.c, "Stale wakers";
 *      models/zombie.pml). For the worker and blocking pools that
 *      reference is one on the runtime's count, taken from and given
 *      back to a runtime thread's credit where it can be, so that no
 *      task writes the shared count (ws-runtime-ref-private.h, "Credit";
 *      models/runtime-ref.pml).
 *  (T) Every thread that runs the runtime's code is known to shutdown:
 *      workers and a thread inside ws_block_in_place () (counted in
 *      n_running_threads until its poll returns), blocking threads (the
 *      blocking pool counts them), local dispatches and the sweep's own
 *      destroy notifies (they set ws_thread.runtime). Shutdown from
 *      any of them starts the shutdown and returns FALSE at once instead
 *      of waiting for itself.
 *  (D) ws_runtime_core_shutdown () returns TRUE only when every destroy
 *      notify has run and its effects are visible to the caller.
 *  (S) A spawn that the gate accepts finds at least one worker started
 *      ("Lazy start" below): a task is never left in the injection queue
 *      of a pool that has no thread to take it and none to sweep it.
 *
 * Where a live task of the pool can be: (a) in transit on a spawning
 * thread, between ws_raw_task_new () and its push; (b) in a worker's LIFO
 * slot or run queue, or in the injection queue; (c) being polled; (d)
 * idle, waiting on a waker, which is only possible after a poll returned
 * PENDING, so the task is bound to the task registry (late binding:
 * ws_raw_task_run binds on the first PENDING, under the set's shard lock,
 * and cancels the task itself if the set is closed); (e) in transit on a
 * waking thread, between the wake's CAS and its push, which also means it
 * is bound (it was idle).
 *
 * The steps:
 *
 *  1. begin_shutdown (ws-runtime-core.c): close the task registry
 *     (seq_cst), which is also the spawn gate; raise the shutdown flag
 *     (release) and unpark every worker (ws_worker_pool_begin_shutdown);
 *     then close the blocking pool and the local executors.
 *  2. Each worker, on seeing the flag (worker_shutdown, ws-worker.c):
 *     walks the set, cancelling idle tasks at once and marking running
 *     and NOTIFIED ones CANCELLED (their poller, or the drain that takes
 *     their queued instance, cancels them: "Foreign pushes" below),
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
 *     queue and the injection queue until no task of the pool is alive
 *     (a task still alive is one whose queued instance a waker holds
 *     between its CAS and its push: the sweep yields until the push
 *     lands and drains it), then pop the injection queue until it is
 *     empty, sealing it with both of its locks held. Cancelling a task
 *     wakes its awaiter, whose schedule pushes it to the (not yet sealed)
 *     injection queue; the loop pops it in turn, so cancellation is
 *     iterative (P). Then the zombies' host references go back
 *     (ws-raw-task.c, "Stale wakers").
 *  6. Dispatch the workers' contexts: completions (ws_task_wait_async)
 *     posted there after a worker's last dispatch are delivered, and GIO
 *     calls of cancelled tasks that GIO still owes these contexts
 *     ("Owed completions" below).
 *  7. The blocking pool and the local executors: wait, up to the deadline,
 *     for running blocking jobs and for the owners of local contexts to
 *     run the cancellations (or run them here where this thread can
 *     acquire the context); then dispatch the workers' contexts again.
 *
 * Why every accepted task of the pool has ended when step 5 is over: a
 * task in (a) was pushed before step 4 ended, so it is in (b); (c) ended
 * with step 3, leaving the task in (b), (d), (e), or ended; the walk of
 * step 5 ends every task in (d) (the set is closed, so no task binds
 * behind the walk); a task in (e) is NOTIFIED, which the walk leaves, and
 * lands in (b) when its waker pushes; the drains end every task in (b),
 * including the ones the walk's cancellations pushed, and the sweep seals
 * only when the alive count, exact once no spawn or poll is in flight,
 * is 0, so no task is in (e) any more. After the seal no push can come:
 * a wake of an ended task changes nothing (R); push_remote still drops
 * the reference of a sealed push, never cancelling.
 *
 * Lazy start. No worker runs until something needs one: the workers
 * start (ws_worker_pool_start, called by ws-runtime-core.c) on the first
 * spawn onto them, ws_runtime_spawn* and fibers alike, or the first
 * timer a blocking job arms on the first worker's context. Blocking jobs
 * and local tasks start none. Every other way in needs a task of the pool
 * that a spawn made first: a wake (a foreign push included) is of such a
 * task, and ws_block_in_place () and a worker's own spawn run on a
 * worker. So (S) is about the gate alone. The start is one critical
 * section under the pool's lock, which begin_shutdown takes too; `started`
 * makes it once-only, and started_flag, stored last in it with release,
 * lets later spawners skip the lock. The flag is raised in three places:
 *  - a start that started k >= 1 workers, counted in n_running_threads in
 *    the same section;
 *  - a start that started none: it found the gate closed, or it could not
 *    start the first thread and closed the gate itself (then the caller
 *    shuts the runtime down);
 *  - begin_shutdown, on a pool never started: after it closed the gate.
 * A spawner reaches the gate only after it saw the flag (acquire) or took
 * the lock after one of these sections, and the gate reads `closed`
 * seq_cst. So a spawn that the gate accepts comes after a section that
 * started a worker: that worker, or the last pool thread to stop, takes
 * or sweeps the task (ws_worker_pool_thread_stopped waits for the gate
 * first), even when shutdown is called from a runtime thread and leaves
 * the sweep to the pool's threads ((T) above). Had begin_shutdown raised
 * the flag before closing the gate, a spawn in between would pass
 * the open gate into a pool with no thread: shut down from a blocking job
 * or a local task, which returns at once, nothing would end the task
 * (models/shutdown.pml, -DLAZY_START -DBROKEN_START_BEFORE_CLOSE). A
 * start that misses a close made just before it starts its workers
 * anyway; they see the shutdown flag, raised after the close, and stop
 * as in step 2. Until the workers start, WsMetrics reports the workers
 * the runtime will start (n-workers), each with counters at 0.
 *
 * Foreign pushes. A waker on a thread that is not one of the pool's
 * (a GIO callback's thread, a blocking job, another runtime's worker, a
 * thread of the program) holds a task reference, not the runtime. Its
 * CAS to NOTIFIED adds the queued instance; then pool_schedule pushes it
 * and notifies a sleeper, both on the pool's memory. The push gives the
 * task away: a drain may end it right after, and once every task has
 * ended the last sweep hands each zombie's host reference back, so the
 * program's last unref may free the pool while the waker is still in
 * its notify. So the waker takes a runtime reference of its own for the
 * push and the notify, and releases it last (acq_rel: the notify happens
 * before the free). Taking it is safe because the task holds the runtime
 * from the CAS to the push: a task is ended only by holding RUNNING,
 * which a poller takes only from a popped instance, and the walks take
 * only from a task that is not NOTIFIED (ws_raw_task_shutdown_idle); the
 * queued instance is the waker's until it pushes, so the task cannot end,
 * nor become a zombie whose host reference goes back, before the push.
 * Were the walks to take NOTIFIED tasks, as they did, a walk could end
 * the task between the waker's CAS and its push, the sweep could seal
 * and release the zombie, and the waker's read of the task's host and
 * its reference would touch a pool already freed.
 * models/shutdown.pml checks both halves (-DBROKEN_NO_FOREIGN_REF,
 * -DBROKEN_WALK_TAKES_NOTIFIED).
 *
 * Owed completions (ws-owed.c). A cancelled task's GIO call may ignore
 * its cancellable and call back late, or never, on the context of the
 * worker that made it. That context must stay alive, and be iterated,
 * until GIO has called back: GIO's GTask holds it, and the callback frees
 * the operation, the waker and the task that GIO's data holds. The last
 * pool thread to stop drains the workers' contexts with no deadline,
 * after its sweep, holding its own runtime reference, so the runtime and
 * the contexts it frees outlive every owed completion; a call that never
 * calls back keeps that thread and the runtime for the life of the
 * process (nothing else could deliver it). A drain token (`draining`,
 * under the pool's lock) lets one thread at a time dispatch these
 * contexts, and the last thread takes it in the same critical section
 * that marks its sweep done, so "sweep done and token free" means its
 * drain is over. A shutdown caller waits for the pool's threads, the last
 * sweep and (for ws_runtime_shutdown) that drain, each only until its
 * deadline, and returns FALSE when GIO still owes a completion then: it
 * joins the workers only once no drain runs. Dispose waits for the tasks
 * to end, not for the drain (ws_runtime_core_shutdown_full). Without the
 * deadline on that wait, a call that completes late held
 * ws_runtime_shutdown (rt, 1 s) until it did, and one that never
 * completes held it for ever (models/owed.pml, -DBROKEN_NO_DEADLINE);
 * without the runtime reference across the drain, the program's drop
 * would free the context under the late completion
 * (-DBROKEN_DRAIN_UNHELD).
 * Refused spawns never reach complete (), so they are never counted; the
 * alive count read at the end is exact because every thread that counted
 * has been joined or synchronised with (D).
 *
 * A shutdown that returns early (from a runtime thread, (T), or at a
 * deadline) leaves steps 4 to 6 to the last pool thread to stop
 * (ws_worker_pool_thread_stopped), and the local executors to their
 * owners: each owner's next dispatch retires its executor once it has no
 * task left (ws-local-executor.c). Nothing waits for a later call, which
 * may never come (the last WsRuntime reference dropped inside a task);
 * dispose still calls again until a shutdown saw every task end.
 *
 * Fibers (ws-fiber.c; models/fiber.pml). A fiber is a task whose future
 * owns a stack with live frames while it waits: a fiber in (d) is
 * SUSPENDED inside its function. Every way shutdown ends a task, the
 * walk's ws_raw_task_shutdown () and the drains' ws_raw_task_drop_queued (),
 * and a poller that finds CANCELLED, goes through cancel_task (), which
 * destroys the future with RUNNING held; a fiber's future destroy notify
 * resumes the fiber there, on the thread that ends it, with every
 * suspend returning FALSE, and returns only once the fiber's function
 * has returned and its stack is released. So a fiber is in one of (a) to
 * (e) like any task, and the argument above, which says every task in
 * them ends by step 5, also says every fiber's function has returned by
 * then, its g_autoptr cleanups run, and its stack was never dropped with
 * live frames. The resumed function may spawn (refused: the gate is
 * closed) or wake other tasks (their pushes are drained, (P)).
 *
 * Without the gate, a spawn that read "open" and was then descheduled
 * would push after the last sweep, and its destroy notify would run after
 * shutdown returned TRUE; without the seal's holding both of the queue's
 * locks, a push could land between the last pop and the seal. Without (H), a
 * foreign wake of a task that shutdown ended would push into a freed
 * injection queue once the program dropped the runtime; without the
 * foreign push's own runtime reference, its notify would touch a freed
 * pool ("Foreign pushes"). Without (P), a
 * chain of 80,000 tasks awaiting each other overflowed a worker's stack.
 */

#include "config.h"

#include <string.h>

#include "ws-worker-pool-private.h"
#include "ws-worker-private.h"
#include "ws-owed-private.h"

static void pool_schedule (WsTaskHost *host,
                           WsRawTask  *task,
                           gboolean    is_yield);

static const WsTaskHostVTable pool_host_vtable = {
  .schedule = pool_schedule,
  .ref = ws_task_host_ref_runtime,
  .unref = ws_task_host_unref_runtime,
  .bind = ws_task_registry_bind_task,
  .release = ws_task_registry_release_task,
};

WsWorkerPool *
ws_worker_pool_new (const WsConfig        *config,
                    WsRuntimeRef          *runtime,
                    const WsThreadHandOff *hand_off)
{
  /* Aligned: the injection queue sits on a cache line of its own. */
  WsWorkerPool *self = g_aligned_alloc0 (1, sizeof (WsWorkerPool), 64);
  guint n = config->n_workers;

  g_assert (n > 0);
  self->host.vtable = &pool_host_vtable;
  self->host.trace_kind = WS_TRACE_TASK;
  self->host.registry = &self->registry;
  self->host.bind_on_pending = TRUE;
  self->host.runtime = runtime;
  self->config = config;
  self->runtime = runtime;
  self->hand_off = *hand_off;
  self->n_workers = n;
  ws_inject_queue_init (&self->inject);
  ws_sleepers_init (&self->sleepers, n);
  ws_task_registry_init (&self->registry);
  atomic_init (&self->shutdown, FALSE);
  atomic_init (&self->started_flag, FALSE);
  ws_lock_init (&self->lock);
  ws_lock_init (&self->sweep_lock);
  ws_cond_init (&self->cond);

  self->workers = g_new0 (WsWorker *, n);
  for (guint i = 0; i < n; i++)
    self->workers[i] = ws_worker_new (self, i);

  return self;
}

/* By the runtime, once nothing holds it: every thread and every task that
 * could touch the pool held the runtime, so all are gone. */
void
ws_worker_pool_free (WsWorkerPool *self)
{
  for (guint i = 0; i < self->n_workers; i++)
    ws_worker_free (self->workers[i]);
  g_free (self->workers);
  ws_task_registry_clear (&self->registry);
  ws_inject_queue_clear (&self->inject);
  ws_sleepers_clear (&self->sleepers);
  ws_lock_clear (&self->lock);
  ws_lock_clear (&self->sweep_lock);
  ws_cond_clear (&self->cond);
  g_aligned_free (self);
}

/* The runtime's hooks (ws-config-private.h) are fixed from the moment a
 * thread that runs them may start: the workers' start, or the first
 * blocking spawn, whichever comes first (the two pools start apart). */
void
ws_worker_pool_fix_hooks (WsWorkerPool *self)
{
  /* Acquire: pairs with the release below; once fixed, nothing more. */
  if G_LIKELY (atomic_load_explicit (&self->hooks_fixed, memory_order_acquire))
    return;
  ws_lock_lock (&self->lock);
  /* Release: the caller starts a thread that reads the hooks after
   * this; a later caller that sees the flag without the lock also sees
   * the last hook written under it. */
  atomic_store_explicit (&self->hooks_fixed, TRUE, memory_order_release);
  ws_lock_unlock (&self->lock);
}

/* Runs @func under the pool's lock if the hooks are not fixed yet, so
 * that what it writes (a hook) is ordered before every thread's reads by
 * the thread creation. Returns FALSE, without running it, once fixed. */
gboolean
ws_worker_pool_run_unstarted (WsWorkerPool *self,
                              void        (*func) (gpointer),
                              gpointer      data)
{
  gboolean fixed;

  ws_lock_lock (&self->lock);
  /* Relaxed: written under this lock only. */
  fixed = atomic_load_explicit (&self->hooks_fixed, memory_order_relaxed);
  if (!fixed)
    func (data);
  ws_lock_unlock (&self->lock);
  return !fixed;
}

/* The lazy start ("Lazy start" above): once, under the lock. Returns
 * FALSE, with @error set, if a worker thread could not be started; the
 * caller then shuts the runtime down. */
gboolean
ws_worker_pool_start (WsWorkerPool *self,
                      GError      **error)
{
  gboolean ok = TRUE;
  guint n_started = 0;

  ws_lock_lock (&self->lock);
  if (self->started)
    {
      ws_lock_unlock (&self->lock);
      return TRUE;
    }
  self->started = TRUE;
  /* Relaxed: under the lock, which run_unstarted takes too. */
  atomic_store_explicit (&self->hooks_fixed, TRUE, memory_order_relaxed);

  /* No thread starts into a pool whose shutdown has closed the gate:
   * every spawn from now on is refused. Acquire: pairs with the seq_cst
   * close. A close this read misses is harmless: the workers started
   * here see the shutdown flag, raised after it, and sweep (S). */
  if (!ws_task_registry_is_closed (&self->registry))
    for (guint i = 0; i < self->n_workers; i++)
      {
        WsWorker *w = self->workers[i];
        g_autofree gchar *name = g_strdup_printf ("%s-%u", self->config->thread_name_prefix, i);

        ws_runtime_ref_acquire (self->runtime);
        self->n_running_threads++;
        w->thread = g_thread_try_new (name, ws_worker_thread_main, w, error);
        if (w->thread == NULL)
          {
            self->n_running_threads--;
            ws_runtime_ref_release (self->runtime);
            g_prefix_error (error, "Could not start wsrt worker thread %u of %u: ",
                            i + 1, self->n_workers);
            ok = FALSE;
            /* No worker runs: close the gate before the flag says
             * "started", so that no spawn is accepted into a pool that no
             * thread of its own will sweep (S). Seq_cst, as every close. */
            if (n_started == 0)
              ws_task_registry_close (&self->registry);
            break;
          }
        n_started++;
      }

  /* Release, last in the critical section: a spawner that sees the flag
   * (acquire) without the lock sees the workers counted in
   * n_running_threads, or the gate closed (S). */
  atomic_store_explicit (&self->started_flag, TRUE, memory_order_release);
  ws_lock_unlock (&self->lock);

  return ok;
}

/* Lock-free: TRUE once a start is over, or shutdown has made sure none
 * comes (ws_worker_pool_begin_shutdown): from then on, a spawn that the
 * gate accepts has a worker that takes or sweeps it (S). */
gboolean
ws_worker_pool_has_started (WsWorkerPool *self)
{
  /* Acquire: pairs with the release in ws_worker_pool_start () and
   * ws_worker_pool_begin_shutdown (). */
  return atomic_load_explicit (&self->started_flag, memory_order_acquire);
}

gboolean
ws_worker_pool_is_shutdown (WsWorkerPool *self)
{
  return atomic_load_explicit (&self->shutdown, memory_order_acquire);
}

gint64
ws_worker_pool_alive_tasks (WsWorkerPool *self)
{
  return ws_task_registry_count (&self->registry);
}

GMainContext *
ws_worker_pool_get_context (WsWorkerPool *self,
                            guint         index)
{
  g_return_val_if_fail (index < self->n_workers, NULL);
  return self->workers[index]->core.context;
}

/* Wakes worker @idx, if one was picked (>= 0). */
static void
unpark (WsWorkerPool *self,
        gint          idx)
{
  if (idx >= 0)
    ws_parker_unpark (&self->workers[idx]->core.parker);
}

void
ws_worker_pool_notify_parked (WsWorkerPool *self)
{
  unpark (self, ws_sleepers_worker_to_notify (&self->sleepers));
}

/* After a push whose task became visible by a seq_cst store: no fence
 * (ws_sleepers_worker_to_notify_after_sc, ws-sleepers.c). */
static void
notify_parked_after_sc (WsWorkerPool *self)
{
  unpark (self, ws_sleepers_worker_to_notify_after_sc (&self->sleepers));
}

/* From any thread but a running worker of this pool (or from our own
 * context while the worker is parked): through the injection queue, and
 * wake a sleeper if nobody searches. The caller keeps the pool alive
 * across the call. */
static void
push_remote (WsWorkerPool *self,
             WsRawTask    *task)
{
  if G_UNLIKELY (!ws_inject_queue_push_remote (&self->inject, task))
    {
      /* Sealed: shutdown's last sweep is over and every task of the pool
       * has ended (doc/architecture.md, "Shutdown"); the sweep sealed
       * only once no queued instance was in flight, so no wake comes
       * here, but a push never cancels: drop the queued reference. */
      ws_raw_task_unref (task);
      return;
    }
  /* The push counted itself as remote (ws_inject_queue_push_remote), for
   * the fairness rule of take_injected (ws-worker.c). It made the task
   * visible by a seq_cst store of the queue's count of pushes, which
   * orders it before the look at the idle state without a fence
   * (ws-sleepers.c). */
  notify_parked_after_sc (self);
}

static inline gboolean
on_running_worker (WsWorkerPool *self,
                   WsWorker     *w)
{
  return w != NULL && w->pool == self && !w->in_park && !w->core.is_shutdown;
}

static void
pool_schedule (WsTaskHost *host,
               WsRawTask  *task,
               gboolean    is_yield)
{
  WsWorkerPool *self = (WsWorkerPool *) host;
  WsWorker *w = ws_worker_get_current ();

  if (on_running_worker (self, w))
    {
      ws_worker_schedule_local (w, task, is_yield);
      return;
    }

  if (w != NULL && w->pool == self)
    {
      /* Our own worker (parked, or stopping): it holds the runtime. */
      push_remote (self, task);
      return;
    }

  /* A foreign waker holds the task, not the runtime, and the push gives
   * the task away: once it is in the queue a drain may end it, and the
   * last sweep hand its host reference back ("Foreign pushes" above). A
   * runtime reference of our own keeps the pool alive until the push and
   * the notify are done. Taking it is safe: the task has not ended (its
   * instance is ours, and a NOTIFIED task is ended only by the holder of
   * its instance), so it still holds the runtime. The release comes
   * last: it may free the pool, and it orders everything above before
   * that free (acq_rel on the count). */
  ws_runtime_ref_acquire (self->runtime);
  push_remote (self, task);
  ws_runtime_ref_release (self->runtime);
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
ws_worker_pool_spawn (WsWorkerPool   *self,
                      WsTaskFunc      func,
                      gpointer        data,
                      GDestroyNotify  destroy,
                      gboolean        join_interest,
                      gsize           tail_size,
                      gconstpointer   state,
                      gsize           state_size)
{
  WsWorker *w = ws_worker_get_current ();
  WsRawTask *task;

  task = ws_raw_task_new_with_tail (&self->host, func, data, destroy, join_interest, tail_size,
                                    state, state_size);

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

/* Step 1 of shutdown, the pool's part: close the registry (and with it
 * the spawn gate) before workers can see the flag (a worker that sees it
 * walks the registry, which must be closed by then so that no task binds
 * behind the walk), raise the flag and wake every worker. Called once. */
void
ws_worker_pool_begin_shutdown (WsWorkerPool *self)
{
  /* First: a start that comes after this starts no worker, and a spawn
   * that sees "started" below sees the gate closed (S). */
  ws_task_registry_close (&self->registry);

  ws_lock_lock (&self->lock);
  self->shutdown_begun = TRUE;
  if (!self->started)
    {
      /* Never started: no worker will start now, and none runs the
       * shutdown steps; the caller's sweep does, and it has nothing to
       * end, as the gate accepted no spawn (S). Release: pairs with
       * ws_worker_pool_has_started (), after the close. */
      self->started = TRUE;
      atomic_store_explicit (&self->started_flag, TRUE, memory_order_release);
    }
  ws_lock_unlock (&self->lock);

  /* Release: pairs with the acquire in ws_worker_pool_is_shutdown (). */
  atomic_store_explicit (&self->shutdown, TRUE, memory_order_release);

  /* Release in unpark: each worker sees the flag after waking. */
  for (guint i = 0; i < self->n_workers; i++)
    ws_parker_unpark (&self->workers[i]->core.parker);
}

/* Step 3: waits until no thread of the pool runs (the workers, and a
 * thread that gave its core away in ws_block_in_place () but is still
 * inside that poll) and the last of them has made its sweep, then, if
 * @wait_owed, until no thread drains the workers' contexts ("Owed
 * completions" above); then joins the workers, unless one still drains
 * (it is left to finish: ws_worker_free () lets go of its GThread). */
static gboolean
wait_for_pool_threads (WsWorkerPool *self,
                       gint64        deadline,
                       gboolean      wait_owed)
{
  gboolean done;
  gboolean draining;

  ws_lock_lock (&self->lock);
  while (self->n_running_threads > 0 || self->last_sweep_pending
         || (wait_owed && self->draining))
    if (!ws_cond_wait_until (&self->cond, &self->lock, deadline))
      break;
  done = self->n_running_threads == 0 && !self->last_sweep_pending
         && !(wait_owed && self->draining);
  draining = self->draining;
  ws_lock_unlock (&self->lock);

  if (!done)
    return FALSE;
  if (draining)
    return TRUE;

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

/* The one drain of the pool: drops every queued instance in every
 * worker's queues and in the injection queue, sealing the injection queue
 * when it is found empty if @seal (the last sweep). Only once the workers
 * have stopped using their queues. Returns TRUE if anything was queued.
 * A cancellation here may wake an awaiter, whose schedule pushes it to
 * the injection queue: the loop pops it in turn, so the depth of the
 * stack never grows with the length of an await chain (P). */
gboolean
ws_worker_pool_drain (WsWorkerPool *self,
                      gboolean      seal)
{
  gboolean any = FALSE;
  WsRawTask *t;

  for (guint i = 0; i < self->n_workers; i++)
    any |= ws_worker_drain (self->workers[i]);
  while ((t = seal ? ws_inject_queue_pop_or_seal (&self->inject)
                   : ws_inject_queue_pop (&self->inject)) != NULL)
    {
      ws_raw_task_drop_queued (t);
      any = TRUE;
    }
  return any;
}

/* Step 5, the last sweep, once no pool thread runs and no accepted spawn
 * is in flight: walk the registry, drain every queue until no task is
 * alive (a task left alive has its queued instance in the hands of a
 * waker that has not pushed yet: "Foreign pushes" above), then seal the
 * injection queue. Returns FALSE if @deadline passed first. */
static gboolean
final_sweep (WsWorkerPool *self,
             gint64        deadline)
{
  G_GNUC_UNUSED gboolean left;

  ws_task_registry_shutdown_all (&self->registry, TRUE);
  for (;;)
    {
      ws_worker_pool_drain (self, FALSE);
      if (ws_task_registry_count (&self->registry) == 0)
        break;
      /* A waker is between its CAS and its push, a few instructions:
       * yield, as the spawn gate's wait does. */
      if (deadline >= 0 && g_get_monotonic_time () >= deadline)
        return FALSE;
      g_thread_yield ();
    }
  ws_worker_pool_drain (self, TRUE);

  /* Nothing can be left: every task has ended, the registry is closed,
   * the queues are sealed or owned by threads that are gone. The second
   * drain runs also where G_DISABLE_ASSERT leaves the check out. */
  left = ws_worker_pool_drain (self, TRUE);
  g_assert (!left);
  return TRUE;
}

/* Dispatches the workers' contexts, each until GIO owes it nothing or
 * @deadline (ws-owed.c): the GIO calls of tasks that the sweep cancelled
 * complete here. Returns TRUE if nothing is owed to any of them. With the
 * drain token held (self->draining), so no other thread holds one of
 * these contexts. */
static gboolean
dispatch_contexts (WsWorkerPool *self,
                   gint64        deadline)
{
  gboolean drained = TRUE;

  for (guint i = 0; i < self->n_workers; i++)
    {
      GMainContext *context = self->workers[i]->core.context;

      if (!g_main_context_acquire (context))
        {
          drained = FALSE;
          continue;
        }
      g_main_context_push_thread_default (context);
      drained &= ws_owed_drain (context, deadline);
      g_main_context_pop_thread_default (context);
      g_main_context_release (context);
    }
  return drained;
}

/* Takes the drain token, waiting for it until @deadline (-1: for ever);
 * FALSE if it is not free by then. */
static gboolean
take_drain_token (WsWorkerPool *self,
                  gint64        deadline)
{
  gboolean taken;

  ws_lock_lock (&self->lock);
  while (self->draining)
    if (!ws_cond_wait_until (&self->cond, &self->lock, deadline))
      break;
  taken = !self->draining;
  if (taken)
    self->draining = TRUE;
  ws_lock_unlock (&self->lock);
  return taken;
}

static void
give_drain_token (WsWorkerPool *self)
{
  ws_lock_lock (&self->lock);
  self->draining = FALSE;
  ws_cond_broadcast (&self->cond);
  ws_lock_unlock (&self->lock);
}

/* Step 6, by a shutdown caller: with @wait_owed, drains until @deadline,
 * behind any other drain; without, dispatches what is ready if no other
 * thread drains, and waits for nothing. Returns TRUE if nothing is owed
 * to the workers' contexts any more. */
static gboolean
caller_dispatch_contexts (WsWorkerPool *self,
                          gint64        deadline,
                          gboolean      wait_owed)
{
  gboolean drained;

  if (!take_drain_token (self, wait_owed ? deadline : 0))
    return FALSE;
  drained = dispatch_contexts (self, wait_owed ? deadline : 0);
  give_drain_token (self);
  return drained;
}

/* Step 6 again, after the blocking pool and the local executors:
 * completions (ws_task_wait_async) posted since. What runs counts as the
 * runtime's code (T). Returns TRUE if nothing is owed to the workers'
 * contexts. */
gboolean
ws_worker_pool_dispatch_contexts (WsWorkerPool *self,
                                  gint64        deadline,
                                  gboolean      wait_owed)
{
  const WsRuntimeRef *prev = ws_thread.runtime;
  gboolean drained;

  ws_thread.runtime = self->runtime;
  drained = caller_dispatch_contexts (self, deadline, wait_owed);
  ws_thread.runtime = prev;
  return drained;
}

/* Step 5, once no pool thread runs: by the shutdown caller, or by the
 * last pool thread to stop, so that a shutdown started from a runtime
 * thread (which returns at once) still ends every task. */
static gboolean
sweep (WsWorkerPool *self,
       gint64        deadline)
{
  gboolean swept;

  ws_lock_lock (&self->sweep_lock);
  swept = final_sweep (self, deadline);
  ws_lock_unlock (&self->sweep_lock);
  /* Every task of the pool has ended (step 5): the ones that something
   * still holds by a waker need not hold the runtime (ws-raw-task.c,
   * "Stale wakers"). */
  if (swept)
    ws_raw_task_release_zombies (&self->host);
  return swept;
}

/* Steps 3 to 6 (top of this file). Returns FALSE at the deadline, with
 * *@drained FALSE also when every task has ended but GIO still owes a
 * worker's context a completion (with @wait_owed, until @deadline). */
gboolean
ws_worker_pool_stop (WsWorkerPool *self,
                     gint64        deadline,
                     gboolean      wait_owed,
                     gboolean     *drained)
{
  const WsRuntimeRef *prev = ws_thread.runtime;
  gboolean swept;

  *drained = FALSE;
  if (!wait_for_pool_threads (self, deadline, wait_owed)
      || !ws_task_registry_wait_spawns (&self->registry, deadline))
    return FALSE;

  ws_thread.runtime = self->runtime;
  swept = sweep (self, deadline);
  if (swept)
    *drained = caller_dispatch_contexts (self, deadline, wait_owed);
  ws_thread.runtime = prev;
  return swept;
}

/* By a pool thread that has stopped (a worker, or a thread leaving
 * ws_block_in_place () that the runtime did not adopt, or before it
 * runs as an adopted one). The last one, once shutdown has begun, ends
 * what the workers' drains could not reach (a spawn that was in flight, a
 * task re-queued after ws_block_in_place ()), in case no shutdown caller
 * waits to do it: steps 4 to 6. It drains the workers' contexts with no
 * deadline, holding the runtime ("Owed completions" above). Not the
 * local executors: a pool thread could acquire an application context
 * between two of its owner's iterations, and local data's destroy
 * notifies must run on the owner. */
void
ws_worker_pool_thread_stopped (WsWorkerPool *self)
{
  const WsRuntimeRef *prev = ws_thread.runtime;
  gboolean last;

  ws_lock_lock (&self->lock);
  last = --self->n_running_threads == 0 && self->shutdown_begun;
  if (last)
    self->last_sweep_pending = TRUE;
  ws_cond_broadcast (&self->cond);
  ws_lock_unlock (&self->lock);

  if (!last)
    return;

  ws_thread.runtime = self->runtime;
  ws_task_registry_wait_spawns (&self->registry, -1);
  (void) sweep (self, -1);

  /* The sweep is over and the drain token ours in one step: a caller
   * that sees the sweep done and the token free knows the drain is over
   * too. */
  ws_lock_lock (&self->lock);
  while (self->draining)
    ws_cond_wait (&self->cond, &self->lock);
  self->draining = TRUE;
  self->last_sweep_pending = FALSE;
  ws_cond_broadcast (&self->cond);
  ws_lock_unlock (&self->lock);

  (void) dispatch_contexts (self, -1);
  give_drain_token (self);
  ws_thread.runtime = prev;
}
