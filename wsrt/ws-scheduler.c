/* ws-scheduler.c: the worker pool: creation, spawn, remote schedule,
 * shutdown
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
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

static const WsTaskHostClass pool_host_class = {
  pool_schedule,
};

WsScheduler *
ws_scheduler_new (const WsSchedulerConfig *config)
{
  WsScheduler *self = g_new0 (WsScheduler, 1);
  guint n = config->n_workers;

  if (n == 0)
    n = g_get_num_processors ();

  self->host.klass = &pool_host_class;
  self->host.owned = &self->owned;
  self->host.bind_on_pending = TRUE;
  atomic_init (&self->ref_count, 1);
  self->config = *config;
  memset (self->config.hooks, 0, sizeof self->config.hooks);
  self->config.thread_name_prefix = g_strdup (config->thread_name_prefix ? config->thread_name_prefix : "ws");
  self->n_workers = n;
  ws_inject_queue_init (&self->inject);
  ws_idle_init (&self->idle, n);
  ws_owned_tasks_init (&self->owned);
  atomic_init (&self->shutdown, FALSE);
  atomic_init (&self->remote_schedules, 0);
  atomic_init (&self->local_polls, 0);
  atomic_init (&self->started_flag, FALSE);
  ws_lock_init (&self->lock);
  ws_cond_init (&self->cond);
  self->local_executors = g_hash_table_new (NULL, NULL);
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
scheduler_free (WsScheduler *self)
{
  /* Every thread that could touch us held a reference, so all are gone. */
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
  ws_blocking_pool_free (self->blocking);
  ws_owned_tasks_clear (&self->owned);
  ws_inject_queue_clear (&self->inject);
  ws_idle_clear (&self->idle);
  ws_lock_clear (&self->lock);
  ws_cond_clear (&self->cond);
  for (guint i = 0; i < WS_N_HOOKS; i++)
    if (self->config.hooks[i].destroy != NULL)
      self->config.hooks[i].destroy (self->config.hooks[i].data);
  g_free (self->config.thread_name_prefix);
  g_free (self);
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

gboolean
ws_scheduler_is_shutdown (WsScheduler *self)
{
  return atomic_load_explicit (&self->shutdown, memory_order_acquire);
}

gint64
ws_scheduler_alive_tasks (WsScheduler *self)
{
  return ws_owned_tasks_count (&self->owned)
         + ws_owned_tasks_count (ws_blocking_pool_get_owned (self->blocking))
         + ws_local_executors_count_alive (self);
}

void
ws_scheduler_notify_parked (WsScheduler *self)
{
  gint idx = ws_idle_worker_to_notify (&self->idle);

  if (idx >= 0)
    ws_parker_unpark (&self->workers[idx]->parker);
}

static void
pool_schedule (WsTaskHost *host,
               WsRawTask  *task,
               gboolean    is_yield)
{
  WsScheduler *self = (WsScheduler *) host;
  WsWorker *w = ws_worker_get_current ();

  if (w != NULL && w->sched == self && !w->in_park && !w->is_shutdown)
    {
      ws_worker_schedule_local (w, task, is_yield);
      return;
    }

  /* DESIGN 5: from any other thread (or from our own context while we are
   * parked), go through the injection queue and wake a sleeper if nobody
   * searches. */
  atomic_fetch_add_explicit (&self->remote_schedules, 1, memory_order_relaxed);
  ws_inject_queue_push (&self->inject, task);
  ws_scheduler_notify_parked (self);
}

WsRawTask *
ws_task_host_spawn (WsTaskHost     *host,
                    WsTaskFunc      func,
                    gpointer        data,
                    GDestroyNotify  destroy,
                    gboolean        join_interest)
{
  WsRawTask *task = ws_raw_task_new (host, func, data, destroy, join_interest);
  gboolean accepted;

  /* A host that binds on the first PENDING only refuses a spawn once it
   * is closed (acquire: pairs with the seq_cst store in close). A spawn
   * that passes the test while shutdown begins lands in a queue whose
   * drain, or whose refused push, cancels it (ws_raw_task_drop_queued). */
  if (host->bind_on_pending)
    accepted = !ws_owned_tasks_is_closed (host->owned);
  else
    accepted = ws_owned_tasks_bind (host->owned, task);

  if (!accepted)
    {
      /* DESIGN 7: a spawn that races shutdown returns a task that is
       * already cancelled, and its destroy notify has run. */
      ws_raw_task_cancel_unbound (task);
      if (!join_interest)
        return NULL;
      return task;
    }

  ws_owned_tasks_count_spawned (host->owned);
  host->klass->schedule (host, task, FALSE);
  return join_interest ? task : NULL;
}

WsRawTask *
ws_scheduler_spawn (WsScheduler    *self,
                    WsTaskFunc      func,
                    gpointer        data,
                    GDestroyNotify  destroy,
                    gboolean        join_interest)
{
  if G_UNLIKELY (!atomic_load_explicit (&self->started_flag, memory_order_acquire))
    ws_scheduler_start (self, NULL);

  return ws_task_host_spawn (&self->host, func, data, destroy, join_interest);
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

  if (exec == NULL)
    {
      /* Shut down: a task that is cancelled at once (it never enters an
       * owned set, so complete() leaves the set alone). */
      WsRawTask *task = ws_raw_task_new (&self->host, func, data, destroy, join_interest);

      ws_raw_task_cancel_unbound (task);
      return join_interest ? task : NULL;
    }

  return ws_task_host_spawn ((WsTaskHost *) exec, func, data, destroy, join_interest);
}

/* DESIGN 7, step 1: close, wake everyone; then wait for the workers to
 * finish steps 2 and 3 (ws-worker.c), and for the blocking pool. */
gboolean
ws_scheduler_shutdown (WsScheduler *self,
                       gint64       timeout_usec)
{
  gint64 deadline = timeout_usec < 0 ? -1 : g_get_monotonic_time () + timeout_usec;
  WsWorker *me = ws_worker_get_current ();
  guint self_threads = (me != NULL && me->sched == self) ? 1 : 0;
  gboolean workers_done;
  gboolean blocking_done;
  gboolean local_done;

  gboolean first;

  ws_lock_lock (&self->lock);
  first = !self->shutdown_begun;
  self->shutdown_begun = TRUE;
  ws_lock_unlock (&self->lock);

  if (first)
    {
      /* Close everything before workers can see the flag: a worker that
       * sees it cancels the owned set, which must be closed by then. */
      ws_inject_queue_close (&self->inject);
      ws_owned_tasks_close (&self->owned);
      ws_blocking_pool_close (self->blocking);
      ws_local_executors_close (self);

      ws_lock_lock (&self->lock);
      if (!self->started)
        {
          /* Never started: no worker will run the shutdown steps, and no
           * task can be in a worker queue. Cancel what was spawned. */
          self->started = TRUE;
          atomic_store_explicit (&self->started_flag, TRUE, memory_order_release);
          ws_lock_unlock (&self->lock);
          ws_owned_tasks_shutdown_all (&self->owned);
          for (WsRawTask *t; (t = ws_inject_queue_pop (&self->inject)) != NULL;)
            ws_raw_task_drop_queued (t);
        }
      else
        ws_lock_unlock (&self->lock);

      /* Release: pairs with the acquire in ws_scheduler_is_shutdown(). */
      atomic_store_explicit (&self->shutdown, TRUE, memory_order_release);

      /* Release in unpark: each worker sees the flag after waking. */
      for (guint i = 0; i < self->n_workers; i++)
        ws_parker_unpark (&self->workers[i]->parker);
    }

  ws_lock_lock (&self->lock);
  while (self->n_running_threads > self_threads)
    {
      if (!ws_cond_wait_until (&self->cond, &self->lock, deadline))
        break;
    }
  workers_done = self->n_running_threads <= self_threads;
  ws_lock_unlock (&self->lock);

  /* Join the workers that have exited, except ourselves. */
  if (workers_done)
    {
      for (guint i = 0; i < self->n_workers; i++)
        {
          WsWorker *w = self->workers[i];

          ws_lock_lock (&self->lock);
          if (w != me && w->thread != NULL)
            {
              GThread *t = w->thread;

              w->thread = NULL;
              ws_lock_unlock (&self->lock);
              g_thread_join (t);
            }
          else
            ws_lock_unlock (&self->lock);
        }
    }

  if (workers_done && self_threads == 0)
    {
      /* Every worker has gone (or none ever started: a failed start). Make
       * sure nothing is left: cancel what the owned set still holds and
       * drop every queued reference. Cheap when the workers did it. */
      ws_owned_tasks_shutdown_all (&self->owned);
      for (guint i = 0; i < self->n_workers; i++)
        {
          WsWorker *w = self->workers[i];
          WsRawTask *t;

          if (w->lifo != NULL)
            {
              ws_raw_task_drop_queued (w->lifo);
              w->lifo = NULL;
            }
          while ((t = ws_local_queue_pop (&w->queue)) != NULL)
            ws_raw_task_drop_queued (t);
        }
      for (WsRawTask *t; (t = ws_inject_queue_pop (&self->inject)) != NULL;)
        ws_raw_task_drop_queued (t);
    }

  blocking_done = ws_blocking_pool_shutdown (self->blocking, deadline);
  local_done = ws_local_executors_shutdown (self);

  return workers_done && self_threads == 0 && blocking_done && local_done
         && ws_scheduler_alive_tasks (self) == 0;
}
