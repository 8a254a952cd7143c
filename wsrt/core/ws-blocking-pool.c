/* ws-blocking-pool.c: threads for blocking work, grown on demand
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Threads start on demand up to max-blocking-threads; an idle thread exits
 * after blocking-keep-alive; jobs run in submission order
 * (doc/architecture.md, "Rules: blocking").
 *
 * What holds:
 *
 *  - A job is bound to the pool's task registry at spawn (under the
 *    registry's lock: refused once it is closed, never counted), so
 *    shutdown reaches every job through the registry, queued or not.
 *  - A schedule takes the queue lock and either queues the job (waking an
 *    idle thread, or counting a new thread in n_threads before it starts
 *    it outside the lock) or, for a job that returned PENDING, hands it
 *    back to the thread that polled it (the "pinned" table): a pending job
 *    keeps its thread, which parks on its own GMainContext until the job
 *    is woken, like a dedicated block_on. A closed pool drops the queued
 *    reference; it never completes or cancels a job.
 *  - Every thread that runs jobs is counted (n_threads, then n_exiting
 *    until its stop hook has run), so shutdown waits for all of them; a
 *    job that shuts its own runtime down is recognised
 *    (ws_thread.blocking_pool) and not waited for.
 *  - A thread that left ws_block_in_place () is adopted with its context
 *    (ws_thread.adopted_context) when the pool has room and is open.
 *
 * Its part in shutdown (ws-worker-pool.c, steps 1 and 7): close (the
 * registry, then the queue: queued jobs are cancelled through the
 * registry and their queue references dropped; idle and pinned threads
 * are woken), then wait, up to the deadline, until every thread is gone.
 */

#include "config.h"

#include "ws-blocking-pool-private.h"
#include "ws-task-fifo-private.h"

typedef struct _BlockingSlot BlockingSlot;

struct _WsBlockingPool
{
  WsTaskHost     host;           /* first */
  WsTaskRegistry   registry;
  const WsConfig *config;        /* the runtime's */
  WsRuntimeRef  *runtime;        /* the count a task holds (H) */
  WsLock         lock;
  WsCond         exit_cond;      /* shutdown waits here */
  BlockingSlot  *idle;           /* idle threads, most recent first */
  WsTaskFifo     queue;          /* jobs waiting for a thread */
  guint          n_threads;
  guint          n_idle;
  guint          n_exiting;      /* left the loop, stop hook not yet run */
  gboolean       closed;
  GHashTable    *pinned;         /* WsRawTask* -> BlockingSlot*: jobs being polled */
};

static void blocking_schedule (WsTaskHost *host,
                               WsRawTask  *task,
                               gboolean    is_yield);

static const WsTaskHostVTable blocking_host_class = {
  .schedule = blocking_schedule,
  /* The pool's memory is the runtime's: a task holds the runtime. */
  .ref = ws_task_host_ref_runtime,
  .unref = ws_task_host_unref_runtime,
  .bind = ws_task_registry_bind_task,
  .release = ws_task_registry_release_task,
};

WsBlockingPool *
ws_blocking_pool_new (const WsConfig *config,
                      WsRuntimeRef   *runtime)
{
  /* Aligned: the members marked _Alignas sit on cache lines of their own. */
  WsBlockingPool *self = g_aligned_alloc0 (1, sizeof (WsBlockingPool), 64);

  self->host.vtable = &blocking_host_class;
  self->host.registry = &self->registry;
  self->host.runtime = runtime;
  ws_task_registry_init (&self->registry);
  self->config = config;
  self->runtime = runtime;
  ws_lock_init (&self->lock);
  ws_cond_init (&self->exit_cond);
  self->pinned = g_hash_table_new (NULL, NULL);
  return self;
}

void
ws_blocking_pool_free (WsBlockingPool *self)
{
  g_assert (ws_task_fifo_is_empty (&self->queue));
  g_hash_table_unref (self->pinned);
  ws_task_registry_clear (&self->registry);
  ws_lock_clear (&self->lock);
  ws_cond_clear (&self->exit_cond);
  g_aligned_free (self);
}

WsTaskRegistry *
ws_blocking_pool_get_registry (WsBlockingPool *self)
{
  return &self->registry;
}

/* One per thread of the pool, on its stack. A thread polls tasks, so it
 * has a thread-default GMainContext of its own that it iterates while it
 * waits (WsParker), idle or for the job it polls: a GIO call made by a
 * job, or after ws_block_in_place (), completes here. A job that returned
 * PENDING keeps its thread, which sleeps until the job is woken, like a
 * dedicated block_on (tokio's spawn_blocking + block_on). */
struct _BlockingSlot
{
  WsRawTask     *job;        /* the job this thread polls, while it does */
  WsRawTask     *ready;      /* set by a wake of that job */
  GMainContext  *context;
  WsParker       parker;
  BlockingSlot  *next_idle;  /* in the pool's idle list, under its lock */
  gboolean       listed;     /* in the idle list */
};

static void
wait_locked (WsBlockingPool *self,
             BlockingSlot   *slot,
             gint64          deadline,
             gboolean       *notified)
{
  gboolean n;

  ws_lock_unlock (&self->lock);
  n = ws_parker_park_until (&slot->parker, deadline);
  ws_lock_lock (&self->lock);
  if (notified != NULL)
    *notified = n;
}

static void
run_job (WsBlockingPool *self,
         BlockingSlot   *slot,
         WsContext      *cx,
         WsRawTask      *task)
{
  /* Our own reference, so that we can look at the task after the poll. */
  ws_raw_task_ref (task);
  ws_lock_lock (&self->lock);
  slot->job = task;
  g_hash_table_insert (self->pinned, task, slot);
  ws_lock_unlock (&self->lock);

  for (;;)
    {
      cx->budget = self->config->budget;
      ws_raw_task_run (task, cx);

      ws_lock_lock (&self->lock);
      while (slot->ready == NULL && !ws_raw_task_is_complete (task) && !self->closed)
        wait_locked (self, slot, -1, NULL);
      if (slot->ready == NULL)
        break;                  /* complete, or shut down (the task registry ends it) */
      task = g_steal_pointer (&slot->ready);
      ws_lock_unlock (&self->lock);
    }

  g_hash_table_remove (self->pinned, task);
  slot->job = NULL;
  ws_lock_unlock (&self->lock);
  ws_raw_task_unref (task);
}

static void
unlist_idle_locked (WsBlockingPool *self,
                    BlockingSlot   *slot)
{
  BlockingSlot **link = &self->idle;

  if (!slot->listed)
    return;
  while (*link != slot)
    link = &(*link)->next_idle;
  *link = slot->next_idle;
  slot->next_idle = NULL;
  slot->listed = FALSE;
  self->n_idle--;
}

/* With the lock held and n_threads already counting this thread. */
static void
thread_loop (WsBlockingPool *self)
{
  BlockingSlot slot = { NULL, };
  WsContext cx;

  memset (&cx, 0, sizeof cx);
  slot.context = g_steal_pointer (&ws_thread.adopted_context);
  if (slot.context == NULL)
    {
      slot.context = g_main_context_new ();
      g_main_context_push_thread_default (slot.context);
    }
  ws_parker_init (&slot.parker, slot.context);
  ws_thread.blocking_pool = self;

  for (;;)
    {
      WsRawTask *task;

      while (ws_task_fifo_is_empty (&self->queue) && !self->closed)
        {
          gint64 deadline = g_get_monotonic_time () + self->config->blocking_keep_alive;
          gboolean notified;

          slot.next_idle = self->idle;
          self->idle = &slot;
          slot.listed = TRUE;
          self->n_idle++;
          wait_locked (self, &slot, deadline, &notified);
          unlist_idle_locked (self, &slot);
          if (!notified && ws_task_fifo_is_empty (&self->queue)
              && g_get_monotonic_time () >= deadline)
            goto out;           /* keep-alive passed */
        }

      task = ws_task_fifo_pop (&self->queue);
      if (task == NULL)
        break;                  /* closed and drained */
      ws_lock_unlock (&self->lock);

      run_job (self, &slot, &cx, task);

      ws_lock_lock (&self->lock);
    }

out:
  ws_thread.blocking_pool = NULL;
  /* No longer serving jobs (a job queued from now on starts or wakes
   * another thread), but still counted for shutdown until the stop hook
   * has run. */
  self->n_threads--;
  self->n_exiting++;
  ws_lock_unlock (&self->lock);

  /* Dispatch what is still owed to this thread's context. */
  while (g_main_context_iteration (slot.context, FALSE))
    ;
  g_main_context_pop_thread_default (slot.context);
  g_main_context_unref (slot.context);

  /* While still counted: shutdown waits for the count, and may release
   * the hooks after it. */
  ws_hook_run (&self->config->hooks[WS_HOOK_THREAD_STOP]);

  ws_lock_lock (&self->lock);
  self->n_exiting--;
  ws_cond_broadcast (&self->exit_cond);
  ws_lock_unlock (&self->lock);
}

static gpointer
blocking_thread_main (gpointer data)
{
  WsBlockingPool *self = data;
  WsRuntimeRef *runtime = self->runtime;

  ws_thread.runtime = runtime;
  ws_hook_run (&self->config->hooks[WS_HOOK_THREAD_START]);

  ws_lock_lock (&self->lock);
  thread_loop (self);

  ws_thread.runtime = NULL;
  ws_runtime_ref_release (runtime);
  return NULL;
}

/* A worker thread that gave its core away (ws_block_in_place) joins the
 * pool, with the context it took as its thread default
 * (ws_thread.adopted_context), unless the pool is full or closed. Called
 * while the thread still counts as a thread of the worker pool; returns
 * TRUE if this pool now counts it, and then the thread calls
 * ws_blocking_pool_run_adopted (). */
gboolean
ws_blocking_pool_try_adopt (WsBlockingPool *self)
{
  gboolean adopted;

  ws_lock_lock (&self->lock);
  adopted = !self->closed && self->n_threads < self->config->max_blocking_threads;
  if (adopted)
    self->n_threads++;
  ws_lock_unlock (&self->lock);

  return adopted;
}

void
ws_blocking_pool_run_adopted (WsBlockingPool *self)
{
  ws_lock_lock (&self->lock);
  thread_loop (self);
}

static void
blocking_schedule (WsTaskHost *host,
                   WsRawTask  *task,
                   gboolean    is_yield)
{
  WsBlockingPool *self = (WsBlockingPool *) host;
  BlockingSlot *slot;
  gboolean spawn = FALSE;

  ws_lock_lock (&self->lock);
  if (self->closed)
    {
      ws_lock_unlock (&self->lock);
      /* Shutdown reaches the task through the task registry. */
      ws_raw_task_unref (task);
      return;
    }

  /* A job that was polled before goes back to its own thread. The slot
   * lives while its thread holds the lock we hold. */
  slot = g_hash_table_lookup (self->pinned, task);
  if (slot != NULL)
    {
      g_assert (slot->ready == NULL);
      slot->ready = task;
      ws_parker_unpark (&slot->parker);
      ws_lock_unlock (&self->lock);
      return;
    }

  ws_task_fifo_push (&self->queue, task);

  if (self->idle != NULL)
    {
      BlockingSlot *idle = self->idle;

      unlist_idle_locked (self, idle);
      ws_parker_unpark (&idle->parker);
    }
  else if (self->n_threads < self->config->max_blocking_threads)
    {
      self->n_threads++;
      spawn = TRUE;
    }
  ws_lock_unlock (&self->lock);

  if (spawn)
    {
      g_autofree gchar *name = g_strdup_printf ("%s-blk", self->config->thread_name_prefix);
      g_autoptr(GError) error = NULL;
      GThread *thread;

      ws_runtime_ref_acquire (self->runtime);
      thread = g_thread_try_new (name, blocking_thread_main, self, &error);
      if (thread == NULL)
        {
          /* The job stays queued for the threads we have. */
          WsTaskFifo stranded = WS_TASK_FIFO_INIT;
          WsRawTask *t;

          g_warning ("wsrt: could not start a blocking thread: %s", error->message);
          ws_lock_lock (&self->lock);
          self->n_threads--;
          if (self->n_threads == 0)
            {
              /* Nobody will run the queue: cancel it rather than hang its
               * waiters. */
              stranded = ws_task_fifo_take_all (&self->queue);
            }
          ws_cond_broadcast (&self->exit_cond);
          ws_lock_unlock (&self->lock);
          while ((t = ws_task_fifo_pop (&stranded)) != NULL)
            {
              ws_raw_task_cancel (t);           /* sets CANCELLED on the queued task */
              ws_raw_task_run (t, &(WsContext) { 0, });  /* ends it here */
            }
          ws_runtime_ref_release (self->runtime);
        }
      else
        g_thread_unref (thread);
    }
}

void
ws_blocking_pool_close (WsBlockingPool *self)
{
  WsTaskFifo queued;
  WsRawTask *t;

  ws_task_registry_close (&self->registry);

  ws_lock_lock (&self->lock);
  self->closed = TRUE;
  queued = ws_task_fifo_take_all (&self->queue);
  while (self->idle != NULL)
    {
      BlockingSlot *idle = self->idle;

      unlist_idle_locked (self, idle);
      ws_parker_unpark (&idle->parker);
    }
  {
    GHashTableIter iter;
    gpointer value;

    /* Wake threads sleeping on a pending job: the registry ends it. */
    g_hash_table_iter_init (&iter, self->pinned);
    while (g_hash_table_iter_next (&iter, NULL, &value))
      ws_parker_unpark (&((BlockingSlot *) value)->parker);
  }
  ws_lock_unlock (&self->lock);

  /* Queued jobs are cancelled (their destroy notifies run here, through
   * the registry, which holds every job of this pool); running ones are
   * waited for in shutdown. The queue's references are dropped. */
  ws_task_registry_shutdown_all (&self->registry);
  while ((t = ws_task_fifo_pop (&queued)) != NULL)
    ws_raw_task_unref (t);
}

gboolean
ws_blocking_pool_shutdown (WsBlockingPool *self,
                           gint64          deadline)
{
  guint self_threads = 0;
  gboolean done;

  /* A blocking job that shuts its own runtime down cannot wait for
   * itself. */
  if (ws_thread.blocking_pool == self)
    self_threads = 1;

  ws_lock_lock (&self->lock);
  while (self->n_threads + self->n_exiting > self_threads)
    if (!ws_cond_wait_until (&self->exit_cond, &self->lock, deadline))
      break;
  done = self->n_threads + self->n_exiting <= self_threads;
  ws_lock_unlock (&self->lock);

  return done && self_threads == 0;
}

void
ws_blocking_pool_get_counts (WsBlockingPool *self,
                             guint          *n_threads,
                             guint          *n_idle,
                             guint          *queue_depth)
{
  ws_lock_lock (&self->lock);
  *n_threads = self->n_threads;
  *n_idle = self->n_idle;
  *queue_depth = (guint) ws_task_fifo_len (&self->queue);
  ws_lock_unlock (&self->lock);
}

/* Binding at spawn: the registry's lock decides, so a spawn is refused
 * (never counted, its destroy notify run here) or in the registry that
 * shutdown walks. */
WsRawTask *
ws_blocking_pool_spawn (WsBlockingPool *self,
                        WsTaskFunc      func,
                        gpointer        data,
                        GDestroyNotify  destroy,
                        gboolean        join_interest)
{
  WsRawTask *task = ws_raw_task_new (&self->host, func, data, destroy, join_interest);

  if (!ws_task_registry_bind (&self->registry, task))
    {
      ws_raw_task_refuse (task);
      return join_interest ? task : NULL;
    }

  blocking_schedule (&self->host, task, FALSE);
  return join_interest ? task : NULL;
}
