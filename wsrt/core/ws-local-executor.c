/* ws-local-executor.c: tasks bound to one GMainContext
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A GSource on the application's context polls the tasks; wakes from any
 * thread enter a locked queue and g_source_set_ready_time (0). One
 * dispatch runs a bounded slice and returns, so a flood of local tasks
 * never stalls a frame (ws-frame-slice-private.h). Cancellation is queued
 * like a wake, so a local task's future is always destroyed on the thread
 * that owns the context.
 *
 * Recursion. A poll may run a nested main loop on the executor's own
 * context (a modal dialog run to completion, a synchronous helper), and
 * the other local tasks of that context are polled from it: the source
 * can recurse (g_source_set_can_recurse), and a nested dispatch runs a
 * slice of its own from the same queue, in the same order. The task whose
 * poll is running is never polled again from inside that poll: it is
 * RUNNING, so it is on no queue, and a wake or a cancel of it meanwhile
 * only marks its state word NOTIFIED; the poller queues it again once the
 * poll has returned (ws-raw-task.c). The queue is the batch that every
 * level shares: the outer dispatch cleared the ready time before its
 * slice, so while a slice is in progress (depth > 0) prepare and check
 * report a non-empty queue themselves, and a nested loop sees tasks woken
 * before it started as well as after. Only the outermost slice may end
 * with the executor's retirement or the release of its zombies (a
 * dispatch that finds no other slice on the stack): a nested one may run
 * inside a complete () of one of its tasks (a destroy notify that runs a
 * loop, also in shutdown's run_or_prod), and both need every complete ()
 * to be over.
 *
 * Lifetime. The executor is reference counted: the table of its set
 * (WsLocalExecutors) holds one until shutdown, every task holds one from creation until it is
 * freed (a task holds its host), and a spawner or a waker holds one
 * across its push. The memory lives as long as the GSource: when the last
 * reference goes, the source is destroyed and released, and its finalize,
 * which GLib runs only once no dispatch of it is in progress, frees the
 * executor. So neither a late wake on another thread nor a shutdown can
 * pull the executor from under a running dispatch, and a dispatch never
 * reads freed memory.
 *
 * The executor holds a reference on its context. Every call of ours that
 * may run the source's finalize (and with it drop that reference) holds a
 * reference of its own across the call: GLib locks the context again
 * after a finalize returns, so the finalize must never drop the last one.
 *
 * Shutdown: close the task registry (spawns are refused from then on), queue
 * the cancellation of every task and make every executor's source ready,
 * run them at once where the shutting down thread can acquire the
 * context, and otherwise wait (up to the deadline) for the owner to
 * dispatch them; each dispatch of a closed executor signals the set's
 * condition. The owner's dispatch also retires an executor that has no
 * task left (retire_on_owner): it leaves the set and the set's reference
 * goes, so a shutdown that could not wait (called on a runtime thread)
 * needs no later call to let the runtime go. Whoever takes an executor
 * out of the set, under the set's lock, drops that reference: the owner
 * or ws_local_executors_shutdown, once.
 */

#include "config.h"

#include "ws-local-executor-private.h"
#include "ws-task-fifo-private.h"
#include "ws-chaos-private.h"
#include "ws-trace-private.h"

/* The executors of one runtime: one per GMainContext, in a table until
 * shutdown, then on the list of detached executors until their tasks have
 * ended. */
struct _WsLocalExecutors
{
  const WsConfig *config;         /* the runtime's */
  WsRuntimeRef   *runtime;        /* the count a task holds (H) */
  WsLock          lock;           /* guards what follows */
  WsCond          cond;           /* a detached executor dispatched */
  gboolean        closed;
  GHashTable     *table;          /* GMainContext* -> WsLocalExecutor* */
  GPtrArray      *detached;       /* shut down, with tasks left (refs) */
  guint64         retired_spawned; /* spawns counted by executors off both */
};

struct _WsLocalExecutor
{
  WsTaskHost     host;            /* first */
  WsTaskRegistry   registry;
  _Atomic gint   ref_count;
  WsLocalExecutors *set;         /* its runtime held: dropped by the finalize */
  GMainContext  *context;         /* strong: dropped by the finalize */
  GSource       *source;          /* strong until the last reference goes */
  WsLock         lock;
  WsTaskFifo     queue;           /* woken tasks, under the lock */
  gboolean       backlogged;      /* owner thread only: source demoted */
  /* Slices in progress on the stack of the thread that holds the context
   * (dispatches, nested ones, and shutdown's run_or_prod). Written and
   * read by that thread only; another thread that iterates the context
   * later acquired it after this one released it. */
  guint          depth;
  /* The poll context of each depth's slice, kept for the executor's
   * life (same thread rule as depth): a context kept past its poll, as a
   * binding's closure may keep it, then reads a NULL task and is refused
   * with a critical (ws-context.c), where a slice's stack frame, reused
   * since, would have been read as a task. Allocated one by one, never
   * moved. */
  GPtrArray     *contexts;
  _Atomic gboolean detached;      /* shut down: out of the table */
  /* Closed, and every task bound before the close was found and
   * cancelled (ws_task_registry_cancel_all took each shard lock after
   * the close, so no bind is in flight): no task can join any more. */
  _Atomic gboolean swept;
  _Atomic guint  dispatches;      /* see local_source_finalize */
};

typedef struct
{
  GSource          parent;
  WsLocalExecutor *exec;
} WsLocalSource;

_Atomic guint ws_local_executor_max_slice_polls;

static void local_schedule (WsTaskHost *host,
                            WsRawTask  *task,
                            gboolean    is_yield);
static void local_ref      (WsTaskHost *host);
static void local_unref    (WsTaskHost *host);

static const WsTaskHostVTable local_host_vtable = {
  .schedule = local_schedule,
  .ref = local_ref,
  .unref = local_unref,
  .bind = ws_task_registry_bind_task,
  .release = ws_task_registry_release_task,
};

static WsLocalExecutor *
executor_ref (WsLocalExecutor *self)
{
  /* Relaxed: the caller holds a reference already. */
  atomic_fetch_add_explicit (&self->ref_count, 1, memory_order_relaxed);
  return self;
}

void
ws_local_executor_unref (WsLocalExecutor *self)
{
  GMainContext *context;
  GSource *source;

  /* AcqRel: the usual pairing before a release of the memory. */
  if (atomic_fetch_sub_explicit (&self->ref_count, 1, memory_order_acq_rel) != 1)
    return;

  /* The last reference: no task, no table entry, no push in progress.
   * Destroy the source; its finalize frees us once no dispatch runs. Our
   * own context reference outlives the finalize (see the top). */
  context = g_main_context_ref (self->context);
  source = g_steal_pointer (&self->source);
  g_source_destroy (source);
  g_source_unref (source);
  g_main_context_unref (context);
}

static void
local_ref (WsTaskHost *host)
{
  executor_ref ((WsLocalExecutor *) host);
}

static void
local_unref (WsTaskHost *host)
{
  ws_local_executor_unref ((WsLocalExecutor *) host);
}

gboolean
ws_local_executor_is_current (void)
{
  return ws_thread.in_local_dispatch;
}

/* The context whose iteration polls the tasks of @host if @host is a
 * local executor, NULL for any other host. The executor holds the context
 * until it is freed, and a task that has not ended holds its host, so
 * the context lives as long as the caller's reference on such a task;
 * an ended one may hold the dead host (ws-raw-task.c): ask before. */
GMainContext *
ws_local_executor_get_host_context (WsTaskHost *host)
{
  if (host->vtable != &local_host_vtable)
    return NULL;
  return ((WsLocalExecutor *) host)->context;
}

static WsRawTask *
pop (WsLocalExecutor *self)
{
  WsRawTask *t;

  ws_lock_lock (&self->lock);
  t = ws_task_fifo_pop (&self->queue);
  ws_lock_unlock (&self->lock);
  return t;
}

/* The executor's memory lives as long as its GSource (see the top). */
static void
local_source_finalize (GSource *source)
{
  WsLocalExecutor *self = ((WsLocalSource *) source)->exec;
  WsRuntimeRef *runtime = self->set->runtime;

  /* GLib runs the finalize after the last dispatch and after the last
   * unref, through its own locks and atomics. Acquire loads that pair with
   * the release at the end of each dispatch and with the last unref make
   * that order visible in C11 terms (and to ThreadSanitizer, which does
   * not see GLib's). */
  (void) atomic_load_explicit (&self->dispatches, memory_order_acquire);
  g_assert (atomic_load_explicit (&self->ref_count, memory_order_acquire) == 0);
  g_assert (ws_task_fifo_is_empty (&self->queue));
  g_main_context_unref (self->context);
  g_clear_pointer (&self->contexts, g_ptr_array_unref);
  ws_task_registry_clear (&self->registry);
  ws_lock_clear (&self->lock);
  g_aligned_free (self);
  ws_runtime_ref_release (runtime);
}

/* The context of the slice at @depth, outside any poll. */
static WsContext *
context_at_depth (WsLocalExecutor *self,
                  guint            depth)
{
  WsContext *cx;

  if (self->contexts == NULL)
    self->contexts = g_ptr_array_new_with_free_func (g_free);
  while (self->contexts->len <= depth)
    g_ptr_array_add (self->contexts, g_new0 (WsContext, 1));
  cx = g_ptr_array_index (self->contexts, depth);
  memset (cx, 0, sizeof *cx);
  return cx;
}

/* Polls queued tasks until the queue is empty or the slice is over.
 * Returns TRUE if tasks remain queued. */
static gboolean
run_slice (WsLocalExecutor *self,
           gint64           slice_usec,
           guint            max_polls)
{
  const WsRuntimeRef *prev_runtime = ws_thread.runtime;
  gboolean prev_in_dispatch = ws_thread.in_local_dispatch;
  GMainContext *prev_host_context = ws_thread.host_context;
  gint64 trace_begin = ws_trace_begin ();
  WsFrameSlice slice;
  WsContext *cx = context_at_depth (self, self->depth);
  gboolean more;

  ws_frame_slice_begin (&slice, slice_usec, max_polls);

  ws_thread.runtime = self->set->runtime;
  ws_thread.in_local_dispatch = TRUE;
  ws_thread.host_context = self->context;
  self->depth++;

  for (;;)
    {
      WsRawTask *t = pop (self);

      if (t == NULL)
        break;
      cx->budget = self->set->config->budget;
      ws_raw_task_run (t, cx);
      if (ws_frame_slice_item_done (&slice))
        break;
    }

  /* Test hook: the largest slice so far (a slice is bounded by polls). */
  if (slice.items > atomic_load_explicit (&ws_local_executor_max_slice_polls, memory_order_relaxed))
    atomic_store_explicit (&ws_local_executor_max_slice_polls, slice.items, memory_order_relaxed);

  self->depth--;
  ws_thread.host_context = prev_host_context;
  ws_thread.in_local_dispatch = prev_in_dispatch;
  ws_thread.runtime = prev_runtime;

  ws_lock_lock (&self->lock);
  more = !ws_task_fifo_is_empty (&self->queue);
  ws_lock_unlock (&self->lock);

  ws_trace_end (trace_begin, WS_TRACE_LOCAL_SLICE, slice.items);
  return more;
}

/* Under the set's lock: an executor with no task left leaves the set
 * (the caller has taken it out of the table or the detached list). Its
 * registry is closed, so its spawn count is final: kept for the metrics. */
static void
note_retired_locked (WsLocalExecutors *set,
                     WsLocalExecutor  *self)
{
  set->retired_spawned += ws_task_registry_spawned (&self->registry);
}

/* Whether @self may retire on this dispatch: swept, and no queued
 * instance left (of ended tasks: a slice may end before the queue is
 * empty; the next dispatch pops them first). */
static gboolean
ready_to_retire (WsLocalExecutor *self)
{
  gboolean empty;

  /* Acquire: pairs with the release after the sweep in close. Before
   * that, a spawn that found the executor open may still bind a task:
   * the count read below would miss it. */
  if (!atomic_load_explicit (&self->swept, memory_order_acquire))
    return FALSE;
  ws_lock_lock (&self->lock);
  empty = ws_task_fifo_is_empty (&self->queue);
  ws_lock_unlock (&self->lock);
  return empty;
}

/* Takes @self out of the closed set (the table, or the detached list),
 * under the set's lock; TRUE if this call did, and then the set's
 * reference is the caller's to drop. */
static gboolean
take_out_of_set (WsLocalExecutor *self)
{
  WsLocalExecutors *set = self->set;
  gboolean retired = FALSE;

  ws_lock_lock (&set->lock);
  if (set->closed)
    {
      if (g_hash_table_lookup (set->table, self->context) == self)
        retired = g_hash_table_remove (set->table, self->context);
      else
        retired = g_ptr_array_remove_fast (set->detached, self);
    }
  if (retired)
    {
      note_retired_locked (set, self);
      atomic_store_explicit (&self->detached, TRUE, memory_order_release);
      ws_cond_broadcast (&set->cond);
    }
  ws_lock_unlock (&set->lock);
  return retired;
}

/* Shutdown has begun (the set is closed, @self is swept) and @self has no
 * task left:
 * take it out of the set here, on its owner's dispatch, and drop the
 * set's reference. A shutdown that returned early (called from a task, a
 * blocking job, a local dispatch: the last WsRuntime reference dropped
 * on a runtime thread) leaves the executors to nobody else; without this
 * they would hold the runtime, and the set would hold them, for ever.
 * Whoever takes an executor out of the set under its lock (this, or
 * ws_local_executors_shutdown) drops that reference, once. Returns TRUE
 * if this call retired @self. */
static gboolean
retire_on_owner (WsLocalExecutor *self)
{
  gboolean retired = ready_to_retire (self) && take_out_of_set (self);

  /* GLib holds the source across this dispatch: the finalize, and with it
   * the free, comes after the dispatch returns. Every task has ended: the
   * ones something still holds by a waker let go of us (ws-raw-task.c). */
  if (retired)
    {
      ws_raw_task_release_zombies (&self->host);
      ws_local_executor_unref (self);
    }
  return retired;
}

/* After the outermost dispatch's slice: a detached executor signals the
 * shutdown that may wait for its cancellations, and the executor leaves
 * once it has no task left. Returns what the dispatch returns. */
static gboolean
end_of_outer_dispatch (WsLocalExecutor *self)
{
  gboolean ret = G_SOURCE_CONTINUE;

  if (atomic_load_explicit (&self->detached, memory_order_acquire))
    {
      WsLocalExecutors *set = self->set;

      ws_lock_lock (&set->lock);
      ws_cond_broadcast (&set->cond);
      ws_lock_unlock (&set->lock);
      if (ws_task_registry_count (&self->registry) == 0)
        {
          /* On the owner, after every complete () it ran: see
           * release_zombies_off_owner. */
          ws_raw_task_release_zombies (&self->host);
          ret = G_SOURCE_REMOVE;
        }
    }
  if (ws_task_registry_count (&self->registry) == 0 && retire_on_owner (self))
    ret = G_SOURCE_REMOVE;
  return ret;
}

/* Inside a slice (a nested loop, see the top), the ready time was cleared
 * by the outer dispatch: tasks queued are reported here. Outside one the
 * ready time alone says it, and this reads nothing. */
static gboolean
local_source_has_nested_work (GSource *source)
{
  WsLocalExecutor *self = ((WsLocalSource *) source)->exec;
  gboolean queued;

  if (self->depth == 0)
    return FALSE;
  ws_lock_lock (&self->lock);
  queued = !ws_task_fifo_is_empty (&self->queue);
  ws_lock_unlock (&self->lock);
  return queued;
}

static gboolean
local_source_prepare (GSource *source,
                      gint    *timeout)
{
  *timeout = -1;
  return local_source_has_nested_work (source);
}

static gboolean
local_source_check (GSource *source)
{
  return local_source_has_nested_work (source);
}

static gboolean
local_source_dispatch (GSource     *source,
                       GSourceFunc  callback,
                       gpointer     user_data)
{
  WsLocalExecutor *self = ((WsLocalSource *) source)->exec;
  gboolean ret = G_SOURCE_CONTINUE;
  gboolean more;

  /* Clear first: a push after this point sets it again. */
  g_source_set_ready_time (source, -1);

  more = run_slice (self, self->set->config->local_slice, WS_LOCAL_SLICE_MAX_POLLS);
  if (more)
    g_source_set_ready_time (source, 0);
  ws_frame_slice_note_backlog (source, &self->backlogged, more);

  /* A nested dispatch leaves the executor's end to the outermost slice
   * (see the top). */
  if (self->depth == 0)
    ret = end_of_outer_dispatch (self);

  /* Release: the last thing this dispatch does to the executor (see
   * local_source_finalize). */
  atomic_fetch_add_explicit (&self->dispatches, 1, memory_order_release);
  return ret;
}

static GSourceFuncs local_source_funcs = {
  local_source_prepare, local_source_check, local_source_dispatch, local_source_finalize,
  NULL, NULL,
};

static void
local_schedule (WsTaskHost *host,
                WsRawTask  *task,
                gboolean    is_yield)
{
  WsLocalExecutor *self = executor_ref ((WsLocalExecutor *) host);
  gboolean was_empty;

  /* Our reference: once the task is queued, the owner may run it and free
   * it (and with it the task's reference on us) before we arm the
   * source. */
  ws_lock_lock (&self->lock);
  was_empty = ws_task_fifo_is_empty (&self->queue);
  ws_task_fifo_push (&self->queue, task);
  ws_lock_unlock (&self->lock);

  WS_CHAOS_POINT ();

  /* Only the push that makes the queue non-empty needs to arm the source:
   * the dispatch re-arms it while tasks remain. Thread-safe, and wakes the
   * context. */
  if (was_empty)
    g_source_set_ready_time (self->source, 0);
  ws_local_executor_unref (self);
}

WsLocalExecutor *
ws_local_executors_lookup (WsLocalExecutors *set,
                           GMainContext     *context)
{
  WsLocalExecutor *self;

  ws_lock_lock (&set->lock);
  if (set->closed)
    {
      ws_lock_unlock (&set->lock);
      return NULL;
    }

  self = g_hash_table_lookup (set->table, context);
  if (self == NULL)
    {
      self = g_aligned_alloc0 (1, sizeof (WsLocalExecutor), 64); /* members on lines of their own */
      atomic_init (&self->ref_count, 1);     /* the table's */
      self->host.vtable = &local_host_vtable;
      self->host.trace_kind = WS_TRACE_LOCAL_TASK;
      self->host.registry = &self->registry;
      ws_task_registry_init (&self->registry);
      ws_runtime_ref_acquire (set->runtime);
      self->set = set;
      self->context = g_main_context_ref (context);
      ws_lock_init (&self->lock);
      self->source = g_source_new (&local_source_funcs, sizeof (WsLocalSource));
      ((WsLocalSource *) self->source)->exec = self;
      g_source_set_static_name (self->source, "[wsrt] local tasks");
      g_source_set_priority (self->source, WS_FRAME_PRIORITY);
      /* Polled from nested loops too (see the top). */
      g_source_set_can_recurse (self->source, TRUE);
      g_source_attach (self->source, context);
      g_hash_table_insert (set->table, context, self);
    }
  executor_ref (self);
  ws_lock_unlock (&set->lock);

  return self;
}

typedef struct
{
  WsRawTask *task;      /* NULL once ended */
} Refusal;

static void
end_refused (Refusal *r)
{
  WsRawTask *task = g_steal_pointer (&r->task);

  /* Acquire: pairs with the release in refuse_on_owner_thread. */
  (void) atomic_load_explicit (&task->state, memory_order_acquire);

  /* Takes the task and cancels it here (the destroy notify runs now);
   * drops the queued reference otherwise. */
  if (!ws_raw_task_shutdown (task))
    ws_raw_task_unref (task);
}

static gboolean
refusal_dispatch (gpointer data)
{
  end_refused (data);
  return G_SOURCE_REMOVE;
}

static void
refusal_free (gpointer data)
{
  Refusal *r = data;

  /* Destroyed without a dispatch (the context went away): the owner will
   * never run it, so end it here rather than leak it. */
  if (r->task != NULL)
    end_refused (r);
  g_free (r);
}

/* A local spawn refused because the runtime is shut down. The destroy
 * notify of local data runs on the thread that owns the context: at once
 * when the spawner can acquire the context (it is the owner, or nobody
 * is), otherwise from a source that the owner dispatches; the task
 * returned ends then. The task is never counted. */
static WsRawTask *
refuse_on_owner_thread (GMainContext *context,
                        WsRawTask    *task,
                        gboolean      join_interest)
{
  Refusal *r;
  GSource *source;

  if (g_main_context_acquire (context))
    {
      ws_raw_task_refuse (task);
      g_main_context_release (context);
      return join_interest ? task : NULL;
    }

  /* The source holds the queued reference; the handle's, if any, is the
   * caller's. Release: the owner takes the task with an acquire, which
   * makes what we wrote to it visible there in C11 terms rather than
   * through GLib's own locks only. */
  atomic_fetch_add_explicit (&task->state, 0, memory_order_release);
  r = g_new0 (Refusal, 1);
  r->task = task;
  source = g_idle_source_new ();
  g_source_set_priority (source, G_PRIORITY_DEFAULT);
  g_source_set_static_name (source, "[wsrt] refused local task");
  g_source_set_callback (source, refusal_dispatch, r, refusal_free);
  g_source_attach (source, context);
  g_source_unref (source);

  return join_interest ? task : NULL;
}

/* spawn_local after shutdown began (no executor): the task is made on
 * @host, a host of the same runtime (the runtime passes its worker pool),
 * and refused on the owner thread; it is never polled or scheduled. */
WsRawTask *
ws_local_executors_refuse_spawn (WsLocalExecutors *set,
                                 WsTaskHost       *host,
                                 GMainContext     *context,
                                 WsTaskFunc        func,
                                 gpointer          data,
                                 GDestroyNotify    destroy,
                                 gboolean          join_interest)
{
  WsRawTask *task = ws_raw_task_new (host, func, data, destroy, join_interest);

  return refuse_on_owner_thread (context, task, join_interest);
}

/* Binding at spawn counts the task under the set's lock; a spawn that
 * meets the closed set is refused on the owner thread. */
WsRawTask *
ws_local_executor_spawn (WsLocalExecutor *self,
                         WsTaskFunc       func,
                         gpointer         data,
                         GDestroyNotify   destroy,
                         gboolean         join_interest)
{
  WsRawTask *task = ws_raw_task_new (&self->host, func, data, destroy, join_interest);

  if (!ws_task_registry_bind (&self->registry, task))
    return refuse_on_owner_thread (self->context, task, join_interest);

  local_schedule (&self->host, task, FALSE);
  return join_interest ? task : NULL;
}

/* Close, first part: from here a lookup finds nothing and a local spawn
 * is refused. Returns a reference on every executor of the table. */
static GPtrArray *
close_table (WsLocalExecutors *set)
{
  GPtrArray *execs = g_ptr_array_new ();
  GHashTableIter iter;
  gpointer value;

  ws_lock_lock (&set->lock);
  set->closed = TRUE;
  g_hash_table_iter_init (&iter, set->table);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    g_ptr_array_add (execs, executor_ref (value));
  ws_lock_unlock (&set->lock);
  return execs;
}

/* Close, second part, per executor: close its registry, queue the
 * cancellation of every task (the owner thread destroys the futures),
 * mark it swept and make its source ready. */
static void
sweep (WsLocalExecutor *self)
{
  ws_task_registry_close (&self->registry);
  ws_task_registry_cancel_all (&self->registry);
  /* Release: pairs with retire_on_owner's acquire. */
  atomic_store_explicit (&self->swept, TRUE, memory_order_release);
  /* Every executor gets a dispatch from its owner, with tasks or
   * without: that dispatch retires it (see retire_on_owner). */
  g_source_set_ready_time (self->source, 0);
}

void
ws_local_executors_close (WsLocalExecutors *set)
{
  GPtrArray *execs = close_table (set);

  for (guint i = 0; i < execs->len; i++)
    {
      sweep (execs->pdata[i]);
      ws_local_executor_unref (execs->pdata[i]);
    }
  g_ptr_array_unref (execs);
}

/* A finished executor's zombies (ws-raw-task.c, "Stale wakers") are
 * released only where no complete () of its tasks can still be running:
 * the count drops at the start of complete (), and the zombie is noted at
 * its end, on the owner, inside a dispatch. Where this thread can
 * acquire the context, no dispatch runs; otherwise the owner's next
 * dispatch of the detached executor releases them. */
static void
release_zombies_off_owner (WsLocalExecutor *self)
{
  if (g_main_context_acquire (self->context))
    {
      ws_raw_task_release_zombies (&self->host);
      g_main_context_release (self->context);
    }
  else if (self->source != NULL)
    g_source_set_ready_time (self->source, 0);
}

/* Shutdown, step 1: every executor of the table moves to the detached
 * list, with the table's reference. */
static void
detach_all (WsLocalExecutors *set)
{
  GHashTableIter iter;
  gpointer value;

  ws_lock_lock (&set->lock);
  g_hash_table_iter_init (&iter, set->table);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    {
      atomic_store_explicit (&((WsLocalExecutor *) value)->detached, TRUE, memory_order_release);
      g_ptr_array_add (set->detached, value);
    }
  g_hash_table_remove_all (set->table);
  ws_lock_unlock (&set->lock);
}

/* A reference on every detached executor, to work on outside the lock. */
static GPtrArray *
ref_detached (WsLocalExecutors *set)
{
  GPtrArray *execs = g_ptr_array_new ();

  ws_lock_lock (&set->lock);
  for (guint i = 0; i < set->detached->len; i++)
    g_ptr_array_add (execs, executor_ref (set->detached->pdata[i]));
  ws_lock_unlock (&set->lock);
  return execs;
}

/* Step 2, per executor with tasks left: run them if this thread can
 * acquire the context; make the owner dispatch if any are still left (a
 * wake or spawn may have come after its last slice). */
static void
run_or_prod (WsLocalExecutor *self)
{
  if (ws_task_registry_count (&self->registry) == 0)
    return;
  if (g_main_context_acquire (self->context))
    {
      while (run_slice (self, -1, G_MAXUINT))
        ;
      g_main_context_release (self->context);
    }
  if (ws_task_registry_count (&self->registry) > 0)
    g_source_set_ready_time (self->source, 0);
}

/* Step 3, under the set's lock: executors with no task left move from the
 * detached list to @finished. Returns whether the list is empty. */
static gboolean
take_finished_locked (WsLocalExecutors *set,
                      GPtrArray        *finished)
{
  for (guint i = 0; i < set->detached->len;)
    {
      WsLocalExecutor *self = set->detached->pdata[i];

      if (ws_task_registry_count (&self->registry) > 0)
        {
          i++;
          continue;
        }
      note_retired_locked (set, self);
      g_ptr_array_add (finished, g_ptr_array_steal_index_fast (set->detached, i));
    }
  return set->detached->len == 0;
}

/* Step 4, under the set's lock, while executors are left and time is:
 * each dispatch of a detached executor signals the condition; wake now
 * and then all the same, to retry the acquire (the owner may have
 * stopped iterating its context). */
static void
wait_for_owners_locked (WsLocalExecutors *set,
                        gint64            now,
                        gint64            deadline)
{
  gint64 until = now + 10 * G_TIME_SPAN_MILLISECOND;

  ws_cond_wait_until (&set->cond, &set->lock, deadline < 0 ? until : MIN (until, deadline));
}

/* Steps 3 and 4 under the set's lock, at @now (set here). */
static gboolean
collect_or_wait (WsLocalExecutors *set,
                 GPtrArray        *finished,
                 gint64            deadline,
                 gint64           *now)
{
  gboolean all_done;

  ws_lock_lock (&set->lock);
  all_done = take_finished_locked (set, finished);
  *now = g_get_monotonic_time ();
  if (!all_done && (deadline < 0 || *now < deadline))
    wait_for_owners_locked (set, *now, deadline);
  ws_lock_unlock (&set->lock);
  return all_done;
}

/* Step 5: the finished executors leave; the list's reference is dropped. */
static void
release_finished (GPtrArray *finished)
{
  for (guint i = 0; i < finished->len; i++)
    release_zombies_off_owner (finished->pdata[i]);
  g_ptr_array_foreach (finished, (GFunc) ws_local_executor_unref, NULL);
  g_ptr_array_unref (finished);
}

/* After close: detaches every executor (step 1), and until @deadline
 * (monotonic, -1: for ever) runs the cancellations of those whose context
 * this thread can acquire and waits for the owners of the others to run
 * theirs (steps 2 to 5); an executor leaves the list once it has no task
 * left. Later calls (a second caller, a call after a timeout) go on with
 * what is left. Returns TRUE if no local task is left: then every destroy
 * notify has run, and the acquire loads of the counters make its effects
 * visible here. */
gboolean
ws_local_executors_shutdown (WsLocalExecutors *set,
                             gint64            deadline)
{
  detach_all (set);
  for (;;)
    {
      GPtrArray *execs = ref_detached (set);
      GPtrArray *finished = g_ptr_array_new ();
      gboolean all_done;
      gint64 now;

      g_ptr_array_foreach (execs, (GFunc) run_or_prod, NULL);
      all_done = collect_or_wait (set, finished, deadline, &now);
      release_finished (finished);
      g_ptr_array_foreach (execs, (GFunc) ws_local_executor_unref, NULL);
      g_ptr_array_unref (execs);
      if (all_done || (deadline >= 0 && now >= deadline))
        return all_done;
    }
}

gint64
ws_local_executors_count_alive (WsLocalExecutors *set)
{
  GHashTableIter iter;
  gpointer value;
  gint64 n = 0;

  ws_lock_lock (&set->lock);
  g_hash_table_iter_init (&iter, set->table);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    n += ws_task_registry_count (&((WsLocalExecutor *) value)->registry);
  for (guint i = 0; i < set->detached->len; i++)
    n += ws_task_registry_count (&((WsLocalExecutor *) set->detached->pdata[i])->registry);
  ws_lock_unlock (&set->lock);

  return n;
}

/* ws_task_registry_foreach () over the registry of every executor, under
 * the set's lock (then each shard's: the set's lock is never taken under
 * a shard's). */
void
ws_local_executors_foreach_task (WsLocalExecutors *set,
                                 WsTaskVisitFunc   func,
                                 gpointer          data)
{
  GHashTableIter iter;
  gpointer value;

  ws_lock_lock (&set->lock);
  g_hash_table_iter_init (&iter, set->table);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    ws_task_registry_foreach (&((WsLocalExecutor *) value)->registry, func, data);
  for (guint i = 0; i < set->detached->len; i++)
    ws_task_registry_foreach (&((WsLocalExecutor *) set->detached->pdata[i])->registry,
                              func, data);
  ws_lock_unlock (&set->lock);
}

/* The local spawns accepted since the runtime started: those of the
 * executors in the table and on the detached list, and those of the
 * executors already gone. A spawn refused after shutdown is not counted. */
guint64
ws_local_executors_count_spawned (WsLocalExecutors *set)
{
  GHashTableIter iter;
  gpointer value;
  guint64 n;

  ws_lock_lock (&set->lock);
  n = set->retired_spawned;
  g_hash_table_iter_init (&iter, set->table);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    n += ws_task_registry_spawned (&((WsLocalExecutor *) value)->registry);
  for (guint i = 0; i < set->detached->len; i++)
    n += ws_task_registry_spawned (&((WsLocalExecutor *) set->detached->pdata[i])->registry);
  ws_lock_unlock (&set->lock);

  return n;
}

WsLocalExecutors *
ws_local_executors_new (const WsConfig *config,
                        WsRuntimeRef   *runtime)
{
  WsLocalExecutors *set = g_new0 (WsLocalExecutors, 1);

  set->config = config;
  set->runtime = runtime;
  ws_lock_init (&set->lock);
  ws_cond_init (&set->cond);
  set->table = g_hash_table_new (NULL, NULL);
  set->detached = g_ptr_array_new ();
  return set;
}

/* By the runtime, once nothing holds it. */
void
ws_local_executors_free (WsLocalExecutors *set)
{
  g_assert (g_hash_table_size (set->table) == 0);
  g_assert (set->detached->len == 0);
  g_hash_table_unref (set->table);
  g_ptr_array_unref (set->detached);
  ws_lock_clear (&set->lock);
  ws_cond_clear (&set->cond);
  g_free (set);
}
