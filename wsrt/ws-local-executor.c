/* ws-local-executor.c: tasks bound to one GMainContext
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * DESIGN 3: a GSource on the application's context polls the tasks; wakes
 * from any thread enter a locked queue and g_source_set_ready_time (0).
 * One dispatch runs a bounded slice and returns, so a flood of local tasks
 * never stalls a frame. Cancellation is queued like a wake, so a local
 * task's future is always destroyed on the owner thread.
 */

#include "config.h"

#include "ws-local-executor-private.h"
#include "ws-chaos-private.h"

struct _WsLocalExecutor
{
  WsTaskHost     host;            /* first */
  WsOwnedTasks   owned;
  WsScheduler   *sched;           /* strong: dropped when we go away */
  GMainContext  *context;
  GSource       *source;
  WsLock         lock;
  WsRawTask     *head;
  WsRawTask     *tail;
  gboolean       closed;
  gboolean       backlogged;      /* owner thread only: source demoted */
  _Atomic gboolean detached;      /* closed with live tasks: frees itself */
};

/* The source's priority. A few wakes are served at G_PRIORITY_DEFAULT,
 * like any GIO completion. A backlog (a slice ended with tasks still
 * queued) drops the source below GDK_PRIORITY_REDRAW (G_PRIORITY_HIGH_IDLE
 * + 20): GLib dispatches only the highest ready priority, so a source that
 * stays ready at DEFAULT would starve the frame clock however short each
 * slice is (DESIGN 3: a flood of local tasks never stalls a frame). */
#define WS_LOCAL_PRIORITY         G_PRIORITY_DEFAULT
#define WS_LOCAL_BACKLOG_PRIORITY G_PRIORITY_DEFAULT_IDLE

typedef struct
{
  GSource          parent;
  WsLocalExecutor *exec;
} WsLocalSource;

static _Thread_local gboolean tls_in_local_dispatch;

_Atomic guint ws_local_executor_max_slice_polls;

static void local_schedule (WsTaskHost *host,
                            WsRawTask  *task,
                            gboolean    is_yield);

static const WsTaskHostClass local_host_class = {
  local_schedule,
};

gboolean
ws_local_executor_is_current (void)
{
  return tls_in_local_dispatch;
}

static WsRawTask *
pop (WsLocalExecutor *self)
{
  WsRawTask *t;

  ws_lock_lock (&self->lock);
  t = self->head;
  if (t != NULL)
    {
      self->head = t->queue_next;
      if (self->head == NULL)
        self->tail = NULL;
      t->queue_next = NULL;
    }
  ws_lock_unlock (&self->lock);
  return t;
}

/* The executor lives as long as its GSource: it is freed by the source's
 * finalize, which GLib runs only once no dispatch is in progress. Nothing
 * but the source frees it, so a shutdown on another thread never pulls it
 * from under a running dispatch. */
static void
local_source_finalize (GSource *source)
{
  WsLocalExecutor *self = ((WsLocalSource *) source)->exec;
  WsScheduler *sched = self->sched;

  g_main_context_unref (self->context);
  ws_owned_tasks_clear (&self->owned);
  ws_lock_clear (&self->lock);
  g_free (self);
  ws_scheduler_unref (sched);
}

/* Polls queued tasks until the queue is empty or the slice is over.
 * Returns TRUE if tasks remain queued. */
static gboolean
run_slice (WsLocalExecutor *self,
           gint64           slice_usec,
           guint            max_polls)
{
  WsScheduler *prev_sched = ws_scheduler_get_current ();
  gboolean prev_in_dispatch = tls_in_local_dispatch;
  gint64 start = g_get_monotonic_time ();
  guint polls = 0;
  WsContext cx;
  gboolean more;

  memset (&cx, 0, sizeof cx);

  ws_scheduler_set_current (self->sched);
  tls_in_local_dispatch = TRUE;

  for (;;)
    {
      WsRawTask *t = pop (self);

      if (t == NULL)
        break;
      cx.budget = self->sched->config.budget;
      ws_raw_task_run (t, &cx);
      polls++;
      atomic_fetch_add_explicit (&self->sched->local_polls, 1, memory_order_relaxed);
      if (polls >= max_polls
          || (slice_usec >= 0 && g_get_monotonic_time () - start >= slice_usec))
        break;
    }

  /* Test hook: the largest slice so far (a slice is bounded by polls). */
  if (polls > atomic_load_explicit (&ws_local_executor_max_slice_polls, memory_order_relaxed))
    atomic_store_explicit (&ws_local_executor_max_slice_polls, polls, memory_order_relaxed);

  tls_in_local_dispatch = prev_in_dispatch;
  ws_scheduler_set_current (prev_sched);

  ws_lock_lock (&self->lock);
  more = self->head != NULL;
  ws_lock_unlock (&self->lock);

  return more;
}

static gboolean
local_source_dispatch (GSource     *source,
                       GSourceFunc  callback,
                       gpointer     user_data)
{
  WsLocalExecutor *self = ((WsLocalSource *) source)->exec;

  gboolean more;

  /* Clear first: a push after this point sets it again. */
  g_source_set_ready_time (source, -1);

  more = run_slice (self, self->sched->config.local_slice, WS_LOCAL_SLICE_MAX_POLLS);
  if (more)
    g_source_set_ready_time (source, 0);
  if (more != self->backlogged)
    {
      self->backlogged = more;
      g_source_set_priority (source, more ? WS_LOCAL_BACKLOG_PRIORITY : WS_LOCAL_PRIORITY);
    }

  if (atomic_load_explicit (&self->detached, memory_order_acquire)
      && ws_owned_tasks_count (&self->owned) == 0)
    return G_SOURCE_REMOVE;      /* finalize frees the executor */

  return G_SOURCE_CONTINUE;
}

static GSourceFuncs local_source_funcs = {
  NULL, NULL, local_source_dispatch, local_source_finalize, NULL, NULL,
};

static void
local_schedule (WsTaskHost *host,
                WsRawTask  *task,
                gboolean    is_yield)
{
  WsLocalExecutor *self = (WsLocalExecutor *) host;
  gboolean was_empty;

  task->queue_next = NULL;
  ws_lock_lock (&self->lock);
  was_empty = self->head == NULL;
  if (self->tail != NULL)
    self->tail->queue_next = task;
  else
    self->head = task;
  self->tail = task;
  ws_lock_unlock (&self->lock);

  WS_CHAOS_POINT ();

  /* Only the push that makes the queue non-empty needs to arm the source:
   * the dispatch re-arms it while tasks remain. Thread-safe, and wakes the
   * context. */
  if (was_empty)
    g_source_set_ready_time (self->source, 0);
}

WsLocalExecutor *
ws_local_executor_lookup (WsScheduler  *sched,
                          GMainContext *context)
{
  WsLocalExecutor *self;

  ws_lock_lock (&sched->lock);
  if (sched->shutdown_begun)
    {
      ws_lock_unlock (&sched->lock);
      return NULL;
    }

  self = g_hash_table_lookup (sched->local_executors, context);
  if (self == NULL)
    {
      self = g_new0 (WsLocalExecutor, 1);
      self->host.klass = &local_host_class;
      self->host.owned = &self->owned;
      ws_owned_tasks_init (&self->owned);
      self->sched = ws_scheduler_ref (sched);
      self->context = g_main_context_ref (context);
      ws_lock_init (&self->lock);
      self->source = g_source_new (&local_source_funcs, sizeof (WsLocalSource));
      ((WsLocalSource *) self->source)->exec = self;
      g_source_set_static_name (self->source, "[wsrt] local tasks");
      g_source_set_priority (self->source, WS_LOCAL_PRIORITY);
      g_source_attach (self->source, context);
      g_hash_table_insert (sched->local_executors, context, self);
    }
  ws_lock_unlock (&sched->lock);

  return self;
}

static void
cancel_all (WsLocalExecutor *self)
{
  for (guint i = 0; i < WS_OWNED_SHARDS; i++)
    {
      WsOwnedShard *shard = &self->owned.shards[i];
      GPtrArray *tasks = g_ptr_array_new ();

      ws_lock_lock (&shard->lock);
      for (WsRawTask *t = shard->head; t != NULL; t = t->owned_next)
        {
          ws_raw_task_ref (t);
          g_ptr_array_add (tasks, t);
        }
      ws_lock_unlock (&shard->lock);

      /* Queue the cancellation: the owner thread destroys the futures. */
      for (guint j = 0; j < tasks->len; j++)
        {
          ws_raw_task_cancel (tasks->pdata[j]);
          ws_raw_task_unref (tasks->pdata[j]);
        }
      g_ptr_array_unref (tasks);
    }
}

void
ws_local_executors_close (WsScheduler *sched)
{
  GPtrArray *execs = g_ptr_array_new ();
  GHashTableIter iter;
  gpointer value;

  ws_lock_lock (&sched->lock);
  g_hash_table_iter_init (&iter, sched->local_executors);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    g_ptr_array_add (execs, value);
  ws_lock_unlock (&sched->lock);

  for (guint i = 0; i < execs->len; i++)
    {
      WsLocalExecutor *self = execs->pdata[i];

      ws_owned_tasks_close (&self->owned);
      cancel_all (self);
    }
  g_ptr_array_unref (execs);
}

/* After close: runs the cancellations of every executor whose context this
 * thread can own right now, and lets the others free themselves once their
 * owner has run them. Returns TRUE if no local task is left. */
gboolean
ws_local_executors_shutdown (WsScheduler *sched)
{
  GPtrArray *execs = g_ptr_array_new ();
  GHashTableIter iter;
  gpointer value;
  gboolean all_done = TRUE;

  ws_lock_lock (&sched->lock);
  g_hash_table_iter_init (&iter, sched->local_executors);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    g_ptr_array_add (execs, value);
  g_hash_table_remove_all (sched->local_executors);
  ws_lock_unlock (&sched->lock);

  for (guint i = 0; i < execs->len; i++)
    {
      WsLocalExecutor *self = execs->pdata[i];
      /* The executor's own reference to its source, now ours: the
       * executor may be freed once we drop it. */
      GSource *source = self->source;

      if (g_main_context_acquire (self->context))
        {
          while (run_slice (self, -1, G_MAXUINT))
            ;
          g_main_context_release (self->context);
        }

      atomic_store_explicit (&self->detached, TRUE, memory_order_release);
      if (ws_owned_tasks_count (&self->owned) == 0)
        g_source_destroy (source);
      else
        {
          /* The owner thread has yet to run the cancellations; the source
           * removes itself after it has. */
          g_source_set_ready_time (source, 0);
          all_done = FALSE;
        }
      g_source_unref (source);
    }
  g_ptr_array_unref (execs);

  return all_done;
}

gint64
ws_local_executors_count_alive (WsScheduler *sched)
{
  GHashTableIter iter;
  gpointer value;
  gint64 n = 0;

  ws_lock_lock (&sched->lock);
  g_hash_table_iter_init (&iter, sched->local_executors);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    n += ws_owned_tasks_count (&((WsLocalExecutor *) value)->owned);
  ws_lock_unlock (&sched->lock);

  return n;
}
