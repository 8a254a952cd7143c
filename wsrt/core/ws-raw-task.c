/* ws-raw-task.c: the task harness: poll, complete, join, cancel
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The harness of a task: it creates the task, polls it, stores its
 * outcome, hands the outcome to the join handle, and ends the task on
 * cancel or shutdown. The state word and its transitions are in
 * ws-task-state-private.h, the waker in ws-waker-private.h; what the task
 * needs from its executor (queueing, the task registry) it asks its host
 * (ws-task-host-private.h), never a scheduler or a registry directly.
 *
 * The rules (doc/architecture.md, "The task and its state word") and how
 * the state word keeps them:
 *
 *  - never polled by two threads at once: polling needs RUNNING, set by a
 *    CAS that only succeeds from idle;
 *  - a wake during a poll re-polls exactly once: the wake only sets
 *    NOTIFIED while RUNNING is set, and the poller re-queues the task when
 *    it sees NOTIFIED on its way back to idle;
 *  - a wake after completion or cancellation does nothing: COMPLETE and
 *    NOTIFIED both make the wake a no-op;
 *  - no spurious polls: a task is queued only by spawn, or by the one wake
 *    that moved it from idle to NOTIFIED;
 *  - cancel never destroys a future during a poll: it sets CANCELLED and
 *    queues the task, and whoever next owns RUNNING destroys the future.
 *
 * References: one for the task registry once the task is bound to it, one
 * for each queued (notified) instance, one for the join handle, one per
 * WsWaker reference. The task itself holds one reference on its host
 * from ws_raw_task_new () until dealloc (), so nothing a task does can
 * reach a freed host; an ended task kept by a stale waker gives it back
 * earlier ("Stale wakers" below).
 *
 * Counting: a task is counted alive by the spawner once its host has
 * accepted it (ws_raw_task_mark_counted) and uncounted by its host's
 * release, which complete () calls before it publishes COMPLETE. A
 * refused spawn (ws_raw_task_refuse) is never counted and never reaches
 * complete (): its destroy notify runs on the spawning thread before the
 * spawn returns. That flag is also how a spawner that keeps the join
 * reference tells a refused task from one that ended at once
 * (ws_raw_task_was_refused, for the face's spawn_with_callback).
 *
 * A tail: a spawner may ask for bytes of its own after the task, in the
 * same allocation (ws_raw_task_new_with_tail). The face's
 * spawn_with_callback keeps its callback, the callback's data and the
 * delivery queue of the caller's context there, so a completion delivered
 * to a main loop costs no allocation beyond the task; a task spawned with
 * a state (ws_context_spawn_with_state) keeps a copy of it there, as
 * tokio's task cell keeps its future; a fiber keeps its WsFiber there
 * (ws-fiber.c). The core never reads a tail; it frees a task that has
 * one to the allocator's class the tail fitted (tailed or large blocks),
 * or to malloc when it was too large for them.
 *
 * Cancellation the work can see. A poll may attach a WsCancelHook to its
 * task (once; the face makes a GCancellable of it). Its cancel () runs on
 * the thread that cancels the task, right after the state says
 * CANCELLED (ws_raw_task_cancel, ws_raw_task_shutdown), so a poll that is
 * running, such as a blocking job, sees it at once; and again, with
 * RUNNING held, just before a cancelled task's future is destroyed
 * (cancel_task). An install racing a cancel is a Dekker pair: the
 * installer stores the hook, fences (seq_cst) and reads the state; the
 * canceller changes the state, fences and reads the hook; one of them
 * sees the other, so the hook runs. Running it twice is harmless (a
 * GCancellable cancels once). The hook is freed with the task's memory.
 *
 * The run in cancel_task settles: a GCancellable that another thread is
 * cancelling returns at once from a second g_cancellable_cancel (), while
 * that thread may still be in the handlers, which use what the destroy
 * notify frees (the task's data). So the last run waits until no other
 * thread is inside the hook's cancel (), never for its own thread (a
 * handler that ends the task where it runs, by a shutdown, cannot be
 * waited for). The thread that ends the task blocks meanwhile, as in
 * g_cancellable_disconnect (): handlers must not wait for the runtime's
 * work. A canceller that comes after that finds the cancellable
 * cancelled and runs no handler. models/cancel-hook.pml checks both,
 * the second thread and the nested end.
 *
 * Stale wakers. A task that ends while something still holds its waker
 * (a channel's or a oneshot's waiter list, a sleep, a GIO operation of a
 * task that was cancelled) stays in memory until that holder lets go,
 * and a task holds its host: the registration would pin the whole
 * runtime for as long as the awaitable lives. So complete () notes such
 * a task (more references than its poller's, its set's and its join
 * handle's) as a zombie of its host, and the host, once every one of its
 * tasks has ended (the worker pool's last sweep, the blocking pool's
 * shutdown, a local executor's retirement), hands each zombie's host
 * reference back with ws_raw_task_release_zombies (): the zombie's host
 * becomes a dead host whose ref and unref do nothing. Nothing that an
 * ended task can still meet reads its host but its dealloc: a wake or a
 * cancel of an ended task changes nothing (COMPLETE), a join handle reads
 * the outcome from the task's own memory, and no ended task is queued
 * once its host's queues are drained. The zombie lock (one for all
 * hosts: zombies are rare) orders the swap against the zombie's dealloc:
 * whichever takes it first owns the host reference, and unlinks the task.
 *
 * Nothing here completes or cancels a task from inside a schedule path:
 * schedule () only hands the task to its host, which queues it or, once
 * the host has ended, drops the queued reference of a task that has
 * ended (doc/architecture.md, "Shutdown").
 */

#include "config.h"

#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
# include <sanitizer/asan_interface.h>
#elif defined(__has_feature)
# if __has_feature(address_sanitizer)
#  include <sanitizer/asan_interface.h>
# endif
#endif

#include "ws-raw-task-private.h"
#include "ws-task-allocator-private.h"
#include "ws-chaos-private.h"
#include "ws-lock-private.h"
#include "ws-error.h"
#include "ws-trace-private.h"
#include "ws-thread-private.h"

/* "Stale wakers" above. The value of `bound` that marks a zombie: set
 * by complete () before its unref, read by dealloc () after the last. */
#define WS_BOUND_ZOMBIE 2

static WsLock zombie_lock = WS_LOCK_INIT;

static void
dead_host_schedule (WsTaskHost *host,
                    WsRawTask  *task,
                    gboolean    is_yield)
{
  /* An ended task is never scheduled; drop the reference all the same. */
  ws_raw_task_unref (task);
}

static void
dead_host_ref (WsTaskHost *host)
{
}

static gboolean
dead_host_bind (WsTaskHost *host,
                WsRawTask  *task)
{
  return FALSE;
}

static const WsTaskHostVTable dead_host_vtable = {
  .schedule = dead_host_schedule,
  .ref = dead_host_ref,
  .unref = dead_host_ref,
  .bind = dead_host_bind,
  .release = dead_host_bind,
};

static WsTaskHost dead_host = { .vtable = &dead_host_vtable };

static void drop_stage   (WsRawTask *task);
static void store_result (WsRawTask *task,
                          WsResult  *result);
static void dealloc      (WsRawTask *task);
static void waker_wake  (WsWaker *waker);
static void waker_ref   (WsWaker *waker);
static void waker_unref (WsWaker *waker);

static const WsWakerVTable task_waker_vtable = {
  waker_wake,
  waker_ref,
  waker_unref,
};

#ifdef WS_ENABLE_LEAK_COUNTERS
/* A debug counter of live tasks. Relaxed: it only has to be exact once
 * every thread that touched a task is done, which the test's own joins
 * order. Left out of release builds: it is one more shared cache line per
 * spawn and per free. */
static _Atomic gint64 n_live_tasks;
# define COUNT_LIVE(n) \
  ((void) atomic_fetch_add_explicit (&n_live_tasks, (n), memory_order_relaxed))
#else
# define COUNT_LIVE(n) ((void) 0)
#endif

/* ---- Sysprof marks (ws-trace-private.h) --------------------------------- */

/* The name a task's span carries in Sysprof: the task's own
 * (ws_raw_task_set_name), or NULL for its kind's ("task", "blocking job",
 * "local task"). */
static inline const char *
trace_task_name (WsRawTask *task)
{
  return ws_raw_task_get_name (task);
}

static inline void
trace_spawn (WsRawTask *task)
{
#ifdef WS_ENABLE_SYSPROF
  task->trace_begin = ws_trace_begin ();
#endif
}

/* The end of @task's span, with RUNNING held and the outcome stored. */
static inline void
trace_end (WsRawTask *task)
{
#ifdef WS_ENABLE_SYSPROF
  static const char *const outcomes[] = {
    [WS_RESULT_NONE] = "ready",
    [WS_RESULT_POINTER] = "ready",
    [WS_RESULT_PAYLOAD] = "ready",
    [WS_RESULT_UINT64] = "ready",
    [WS_RESULT_ERROR] = "error",
    [WS_RESULT_CANCELLED] = "cancelled",
  };

  ws_trace_task_end (task->trace_begin, task->host->trace_kind, trace_task_name (task),
                     outcomes[task->result_kind]);
#endif
}

gint64
ws_raw_task_get_n_live (void)
{
#ifdef WS_ENABLE_LEAK_COUNTERS
  return atomic_load_explicit (&n_live_tasks, memory_order_relaxed);
#else
  return -1;
#endif
}

void
ws_result_clear (WsResult *result)
{
  switch (result->kind)
    {
    case WS_RESULT_POINTER:
    case WS_RESULT_PAYLOAD:
      if (result->u.pointer.destroy != NULL && result->u.pointer.data != NULL)
        result->u.pointer.destroy (result->u.pointer.data);
      break;
    case WS_RESULT_ERROR:
      g_clear_error (&result->u.error);
      break;
    case WS_RESULT_NONE:
    case WS_RESULT_UINT64:
    case WS_RESULT_CANCELLED:
    default:
      break;
    }
  result->kind = WS_RESULT_NONE;
  memset (&result->u, 0, sizeof result->u);
}

/* @task is zeroed memory. */
static inline WsRawTask *
init_task (WsRawTask      *task,
           WsTaskHost     *host,
           WsTaskFunc      func,
           gpointer        data,
           GDestroyNotify  destroy,
           gboolean        join_interest)
{
  host->vtable->ref (host);
  task->waker.vtable = &task_waker_vtable;
  task->host = host;
  task->stage = WS_STAGE_FUTURE;
  task->u.future.func = func;
  task->u.future.data = data;
  task->u.future.destroy = destroy;

  /* Notified, with its queued reference (and the handle's); binding adds
   * the task registry's. */
  ws_task_state_init (&task->state, join_interest);
  COUNT_LIVE (1);
  trace_spawn (task);

  return task;
}

WsRawTask *
ws_raw_task_new (WsTaskHost     *host,
                 WsTaskFunc      func,
                 gpointer        data,
                 GDestroyNotify  destroy,
                 gboolean        join_interest)
{
  return init_task (ws_task_allocator_alloc0 (sizeof (WsRawTask)), host, func, data, destroy,
                    join_interest);
}

/* How a task's memory was allocated (WsRawTask.has_tail). */
typedef enum
{
  WS_TAIL_NONE,          /* a task class block (ws_task_allocator_alloc0) */
  WS_TAIL_TAILED,        /* a tailed block (ws_task_allocator_alloc_tailed) */
  WS_TAIL_LARGE,         /* a large block (ws_task_allocator_alloc_large) */
  WS_TAIL_MALLOC,        /* a tail too large for those classes: malloc's */
} WsTailKind;

/* A task with @tail_size bytes of the spawner's after it, in the same
 * allocation (see the top of this file). 0 is a plain task. Without
 * @state the tail is zeroed. With @state, the task's data is the tail,
 * whose first @state_size bytes are a copy of @state: the spawner's
 * state lives in the task and goes with it. The rest of that tail is
 * left as the allocator had it, for the task's poll to set before it
 * reads it (a fiber's switch state, set at its first poll). */
WsRawTask *
ws_raw_task_new_with_tail (WsTaskHost     *host,
                           WsTaskFunc      func,
                           gpointer        data,
                           GDestroyNotify  destroy,
                           gboolean        join_interest,
                           gsize           tail_size,
                           gconstpointer   state,
                           gsize           state_size)
{
  gsize size = WS_RAW_TASK_TAIL_OFFSET + tail_size;
  /* The task is always zeroed, a tail only when no state fills it. */
  gsize n_zero = state != NULL ? sizeof (WsRawTask) : size;
  WsRawTask *task;

  /* The public promise: a state of up to 288 bytes comes from the
   * allocator's caches (ws_context_spawn_with_state). */
  G_STATIC_ASSERT (WS_RAW_TASK_TAIL_OFFSET + 64 <= WS_TASK_ALLOCATOR_TAILED);
  G_STATIC_ASSERT (WS_RAW_TASK_TAIL_OFFSET + 288 <= WS_TASK_ALLOCATOR_LARGE);
  g_assert (state_size <= tail_size);

  if (tail_size == 0)
    return ws_raw_task_new (host, func, data, destroy, join_interest);

  if (size <= WS_TASK_ALLOCATOR_TAILED)
    {
      task = ws_task_allocator_alloc_tailed (size, n_zero);
      task->has_tail = WS_TAIL_TAILED;
    }
  else if (size <= WS_TASK_ALLOCATOR_LARGE)
    {
      task = ws_task_allocator_alloc_large (size, n_zero);
      task->has_tail = WS_TAIL_LARGE;
    }
  else
    {
      task = g_malloc (size);
      memset (task, 0, n_zero);
      task->has_tail = WS_TAIL_MALLOC;
    }
  if (state != NULL)
    {
      data = ws_raw_task_get_tail (task);
      memcpy (data, state, state_size);
    }
  return init_task (task, host, func, data, destroy, join_interest);
}

/* The host accepted the task, which its task registry counts (the spawner
 * counts it, see ws-task-registry.c), so complete () must have the host
 * count its end (WsTaskHostVTable.release). Called before the task is
 * published (the push that publishes it is a release, and complete ()
 * runs after an acquire of that push). */
void
ws_raw_task_mark_counted (WsRawTask *task)
{
  task->counted = TRUE;
}

/* A spawn its host refused (the host is shut down): the task was never
 * published, counted or queued. Runs the destroy notify here, on the
 * spawning thread, and leaves the task ended as cancelled for its join
 * handle, if it has one. */
void
ws_raw_task_refuse (WsRawTask *task)
{
  WsResult result = { WS_RESULT_CANCELLED, };
  /* Relaxed: not shared yet. */
  guint64 cur = ws_task_state_load (&task->state, memory_order_relaxed);

  WS_STATE_INVARIANT (!task->counted && (cur & WS_STATE_NOTIFIED));

  drop_stage (task);
  store_result (task, &result);
  if (!(cur & WS_STATE_JOIN_INTEREST))
    {
      dealloc (task);
      return;
    }
  ws_task_state_store_refused (&task->state);
}

static void
drop_stage (WsRawTask *task)
{
  if (task->stage == WS_STAGE_FUTURE)
    {
      GDestroyNotify destroy = task->u.future.destroy;
      gpointer data = task->u.future.data;

      task->stage = WS_STAGE_CONSUMED;
      memset (&task->u, 0, sizeof task->u);
      if (destroy != NULL)
        destroy (data);
    }
  else if (task->stage == WS_STAGE_FINISHED)
    {
      WsResult r;

      r.kind = task->result_kind;
      memcpy (&r.u, &task->u, sizeof r.u);
      task->stage = WS_STAGE_CONSUMED;
      memset (&task->u, 0, sizeof task->u);
      ws_result_clear (&r);
    }
}

/* A zombie is freed: take it off its host's list, unless the host gave
 * the zombies back already. Returns the host whose reference the caller
 * now drops (the dead host's is nothing). */
static WsTaskHost *
forget_zombie (WsRawTask *task)
{
  WsTaskHost *host;

  ws_lock_lock (&zombie_lock);
  host = task->host;
  if (host != &dead_host)
    {
      if (task->registry_prev != NULL)
        task->registry_prev->registry_next = task->registry_next;
      else
        host->zombies = task->registry_next;
      if (task->registry_next != NULL)
        task->registry_next->registry_prev = task->registry_prev;
      task->registry_prev = task->registry_next = NULL;
    }
  ws_lock_unlock (&zombie_lock);
  return host;
}

static void
dealloc (WsRawTask *task)
{
  WsTaskHost *host = G_UNLIKELY (task->bound == WS_BOUND_ZOMBIE) ? forget_zombie (task)
                                                                  : task->host;

  /* Normally the stage was consumed by completion or by the join handle;
   * a task can only reach here with a live stage if it was never run,
   * which the spawn paths do not allow. Drop it all the same. */
  drop_stage (task);
  if (task->join_waker != NULL)
    task->join_waker->vtable->unref (task->join_waker);
  if (task->cancel_hook != NULL)
    task->cancel_hook->free (task->cancel_hook);
  if G_UNLIKELY (task->debug != NULL)
    g_free (task->debug);
  COUNT_LIVE (-1);
  if G_LIKELY (task->has_tail == WS_TAIL_NONE)
    ws_task_allocator_free (task);
  else if (task->has_tail == WS_TAIL_TAILED)
    ws_task_allocator_free_tailed (task);
  else if (task->has_tail == WS_TAIL_LARGE)
    ws_task_allocator_free_large (task);
  else
    g_free (task);

  /* Last: this may free the host, and with it the runtime's memory. */
  host->vtable->unref (host);
}

void
ws_raw_task_ref (WsRawTask *task)
{
  ws_task_state_ref_inc (&task->state);
}

void
ws_raw_task_unref_n (WsRawTask *task,
                     guint      n)
{
  if (ws_task_state_ref_dec (&task->state, n))
    dealloc (task);
}

void
ws_raw_task_unref (WsRawTask *task)
{
  ws_raw_task_unref_n (task, 1);
}

gboolean
ws_raw_task_is_complete (WsRawTask *task)
{
  return (ws_raw_task_get_state (task) & WS_STATE_COMPLETE) != 0;
}

static void
schedule (WsRawTask *task,
          gboolean   is_yield)
{
  task->host->vtable->schedule (task->host, task, is_yield);
}

/* ---- completion ------------------------------------------------------ */

static void
store_result (WsRawTask *task,
              WsResult  *result)
{
  g_assert (task->stage == WS_STAGE_CONSUMED);
  task->result_kind = result->kind;
  G_STATIC_ASSERT (sizeof result->u <= sizeof task->u);
  memcpy (&task->u, &result->u, sizeof result->u);
  task->stage = WS_STAGE_FINISHED;
  result->kind = WS_RESULT_NONE;
  memset (&result->u, 0, sizeof result->u);
}

/* With RUNNING held, before the unref of complete (): @task goes on its
 * host's zombie list. */
static void
hold_zombie (WsRawTask *task)
{
  WsTaskHost *host = task->host;

  task->bound = WS_BOUND_ZOMBIE;
  ws_lock_lock (&zombie_lock);
  task->registry_prev = NULL;
  task->registry_next = host->zombies;
  if (host->zombies != NULL)
    host->zombies->registry_prev = task;
  host->zombies = task;
  ws_lock_unlock (&zombie_lock);
}

/* Called with RUNNING held and the stage set to FINISHED. Drops the
 * reference of the poller. @awaited: the poll ran nested in the await of
 * the handle's owner (ws_raw_task_run_awaited). */
static void
complete (WsRawTask *task,
          gboolean   awaited)
{
  WsTaskHost *host = task->host;
  guint64 prev;
  guint n_unref = 1;

  WS_CHAOS_POINT ();

  trace_end (task);

  /* Leave the task registry before COMPLETE is published, so that the
   * alive-task count is right by the time a waiter looks: a handle that
   * reads COMPLETE without waiting (ws_task_wait on a finished task) gets
   * no wake to order it after a later removal. We hold RUNNING, so a
   * shutdown that misses the task here cannot destroy it under us. The
   * host outlives the task (the task holds a reference on it). */
  if (host->vtable->release (host, task))
    n_unref++;

  /* Where nothing is left to do between COMPLETE and the unref (no join
   * waker to wake, no zombie to note), both in one CAS; see
   * ws_task_state_transition_to_complete_and_unref. */
  switch (ws_task_state_transition_to_complete_and_unref (&task->state, n_unref,
                                                          awaited))
    {
    case WS_TO_COMPLETE_HANDLE:
      return;
    case WS_TO_COMPLETE_DEALLOC:
      drop_stage (task);
      dealloc (task);
      return;
    case WS_TO_COMPLETE_SPLIT:
    default:
      break;
    }

  prev = ws_task_state_transition_to_complete (&task->state);

  if (!(prev & WS_STATE_JOIN_INTEREST))
    {
      /* No handle will ever read the outcome. */
      drop_stage (task);
    }
  else if (prev & WS_STATE_JOIN_WAKER)
    {
      /* Once COMPLETE is set the handle never touches join_waker again
       * (its CAS on JOIN_WAKER fails), so it is ours to take. */
      WsWaker *waker = task->join_waker;

      task->join_waker = NULL;
      ws_waker_take_and_wake (waker);
    }

  /* More references than the poller's, the set's and the join handle's:
   * a waker is held somewhere ("Stale wakers"). The word read by the
   * transition counts them all; a false alarm (a waker on its way to
   * being dropped) costs a lock and nothing else. */
  if G_UNLIKELY (ws_task_state_ref_count (prev)
                 > n_unref + ((prev & WS_STATE_JOIN_INTEREST) != 0 ? 1 : 0))
    hold_zombie (task);

  ws_raw_task_unref_n (task, n_unref);
}

/**
 * ws_raw_task_release_zombies:
 * @host: a host every one of whose tasks has ended
 *
 * Hands back the host reference of every zombie of @host ("Stale wakers"
 * at the top of this file): from now on they hold the dead host, and
 * @host may go while they stay. The caller holds @host across the call.
 */
void
ws_raw_task_release_zombies (WsTaskHost *host)
{
  guint n = 0;

  ws_lock_lock (&zombie_lock);
  for (WsRawTask *t = host->zombies; t != NULL;)
    {
      WsRawTask *next = t->registry_next;

      t->host = &dead_host;
      t->registry_prev = t->registry_next = NULL;
      t = next;
      n++;
    }
  host->zombies = NULL;
  ws_lock_unlock (&zombie_lock);

  while (n-- > 0)
    host->vtable->unref (host);
}

/* Runs the task's cancel hook, if a poll installed one. Called after the
 * state change that cancels the task (see the top of this file), by a
 * thread that holds a reference. */
static void
run_cancel_hook (WsRawTask *task)
{
  WsCancelHook *hook;

  /* seq_cst: the canceller's half of the Dekker pair with the install. */
  atomic_thread_fence (memory_order_seq_cst);
  hook = ws_raw_task_get_cancel_hook (task);
  if (hook != NULL)
    hook->cancel (hook, FALSE);
}

/**
 * ws_raw_task_set_cancel_hook:
 * @task: the task being polled (RUNNING held by the caller)
 * @hook: (transfer full): the hook
 *
 * Attaches @hook to @task, once; runs it at once if the task was
 * cancelled already.
 */
void
ws_raw_task_set_cancel_hook (WsRawTask    *task,
                             WsCancelHook *hook)
{
  g_assert (task->cancel_hook == NULL);

  /* Release: the hook's contents for ws_raw_task_get_cancel_hook (). */
  atomic_store_explicit (&task->cancel_hook, hook, memory_order_release);
  /* seq_cst: the installer's half of the Dekker pair (top of file). */
  atomic_thread_fence (memory_order_seq_cst);
  if (ws_task_state_load (&task->state, memory_order_relaxed) & WS_STATE_CANCELLED)
    hook->cancel (hook, FALSE);
}

/* Names: g_intern_string () copies the name once per distinct string and
 * never frees it, so setting a name allocates at most once per name, a
 * spawn that sets none costs nothing (the memory is zeroed), and a reader
 * holds no reference to anything. Any thread may set it, any time; the
 * last store wins. */
void
ws_raw_task_set_name (WsRawTask  *task,
                      const char *name)
{
  /* Release: the interned bytes before the pointer (see
   * ws_raw_task_get_name ()). */
  atomic_store_explicit (&task->name, name != NULL ? g_intern_string (name) : NULL,
                         memory_order_release);
}

const char *
ws_raw_task_label_for_name (gconstpointer  task,
                            const char    *name,
                            char           buf[WS_RAW_TASK_LABEL_SIZE])
{
  if (name != NULL)
    g_snprintf (buf, WS_RAW_TASK_LABEL_SIZE, "“%s” (%p)", name, task);
  else
    g_snprintf (buf, WS_RAW_TASK_LABEL_SIZE, "%p (unnamed)", task);
  return buf;
}

const char *
ws_raw_task_label (WsRawTask *task,
                   char       buf[WS_RAW_TASK_LABEL_SIZE])
{
  return ws_raw_task_label_for_name (task, ws_raw_task_get_name (task), buf);
}

/* ---- diagnostics (WS_DEBUG) ------------------------------------------- */

/* What WS_DEBUG records of a task, made by its poller at the first poll
 * with debugging on and freed with the task. The poller writes it with
 * RUNNING held; the stuck dump reads it from another thread while a task
 * registry's shard lock keeps the task (and so this) alive. The debug
 * pointer is published with a release store and read with acquire, for
 * the zeroed contents; the fields are relaxed: each is read alone, and a
 * stale value only makes the dump a poll late. */
struct _WsRawTaskDebug
{
  _Atomic gint64       pending_since;   /* end of the last PENDING poll; 0 in a poll */
  const char *_Atomic  awaiting;        /* a static string, or NULL */
  _Atomic gint64       reported_since;  /* the pending_since the watchdog reported */
  guint8               warned_slow;     /* the poller's: slow-poll said once */
};

/* With RUNNING held. */
static WsRawTaskDebug *
get_debug (WsRawTask *task)
{
  WsRawTaskDebug *debug = atomic_load_explicit (&task->debug, memory_order_relaxed);

  if (debug == NULL)
    {
      debug = g_new0 (WsRawTaskDebug, 1);
      /* Release: the zeroed record before the pointer (the dump's
       * acquire). Only the poller writes it. */
      atomic_store_explicit (&task->debug, debug, memory_order_release);
    }
  return debug;
}

void
ws_raw_task_note_await_slow (WsRawTask  *task,
                             const char *what)
{
  atomic_store_explicit (&get_debug (task)->awaiting, what, memory_order_relaxed);
}

/* The start of a poll with debugging on: the time, never 0. A poll run
 * inside another on this thread (a work-first run, ws-worker.c) is not
 * counted in the outer one's time: @outer_nested saves the outer poll's
 * count of nested time, which this poll starts afresh. */
static G_GNUC_NO_INLINE gint64
debug_poll_begin (WsRawTask *task,
                  gint64    *outer_nested)
{
  WsRawTaskDebug *debug = get_debug (task);

  atomic_store_explicit (&debug->pending_since, 0, memory_order_relaxed);
  atomic_store_explicit (&debug->awaiting, NULL, memory_order_relaxed);
  *outer_nested = ws_thread.debug_nested_usec;
  ws_thread.debug_nested_usec = 0;
  return MAX (g_get_monotonic_time (), 1);
}

static G_GNUC_NO_INLINE void
debug_poll_end (WsRawTask *task,
                WsWorker  *worker,
                gint64     start,
                gint64     outer_nested,
                gint       poll)
{
  WsRawTaskDebug *debug = atomic_load_explicit (&task->debug, memory_order_relaxed);
  gint64 now = g_get_monotonic_time ();
  gint64 elapsed = now - start;
  gint64 own = elapsed - ws_thread.debug_nested_usec;
  guint flags = ws_debug_get_flags ();

  ws_thread.debug_nested_usec = outer_nested + elapsed;

  /* On a worker that this thread still runs: a poll that handed its
   * worker on (ws_block_in_place ()) stalls no queue, and the blocking
   * pool and the main contexts are not workers. */
  if ((flags & WS_DEBUG_SLOW_POLL) && worker != NULL && ws_thread.worker == worker
      && own > ws_debug_slow_poll_usec () && !debug->warned_slow)
    {
      char label[WS_RAW_TASK_LABEL_SIZE];

      debug->warned_slow = TRUE;
      g_warning ("wsrt: task %s ran for %" G_GINT64_FORMAT " ms in one poll on a worker "
                 "thread (WS_DEBUG=slow-poll, threshold %" G_GINT64_FORMAT " ms; said once "
                 "per task). A poll function, or a fiber between two awaits, must not "
                 "block: it holds the worker and the tasks queued behind it. Run blocking "
                 "calls with ws_runtime_spawn_blocking(), or ws_fiber_run_in_thread() in "
                 "a fiber, and split long computations with ws_context_yield()",
                 ws_raw_task_label (task, label), own / 1000,
                 ws_debug_slow_poll_usec () / 1000);
    }
  if ((flags & WS_DEBUG_STUCK) && poll == WS_POLL_PENDING)
    atomic_store_explicit (&debug->pending_since, now, memory_order_relaxed);
}

gboolean
ws_raw_task_describe_pending (WsRawTask *task,
                              gint64     now,
                              gint64     min_age,
                              gboolean   mark,
                              GString   *out)
{
  /* Acquire: pairs with get_debug ()'s release. */
  WsRawTaskDebug *debug = atomic_load_explicit (&task->debug, memory_order_acquire);
  guint64 state = ws_raw_task_get_state (task);
  char label[WS_RAW_TASK_LABEL_SIZE];
  const char *awaiting;
  gint64 since;

  if (state & WS_STATE_COMPLETE)
    return FALSE;
  if (debug == NULL)
    {
      /* Never polled with WS_DEBUG=stuck on: only an explicit dump (no
       * age asked) lists it, without its age. */
      if (min_age > 0)
        return FALSE;
      g_string_append_printf (out, "\n  task %s: %s; pending since: unknown, last awaited: "
                              "unknown (WS_DEBUG=stuck records them)",
                              ws_raw_task_label (task, label),
                              (state & WS_STATE_RUNNING) ? "being polled"
                              : (state & WS_STATE_NOTIFIED) ? "woken, queued for a poll"
                              : "waiting for a wake");
      return TRUE;
    }
  since = atomic_load_explicit (&debug->pending_since, memory_order_relaxed);
  if (since == 0 || now - since < min_age || (state & WS_STATE_RUNNING))
    return FALSE;
  if (mark)
    {
      if (atomic_load_explicit (&debug->reported_since, memory_order_relaxed) == since)
        return FALSE;
      atomic_store_explicit (&debug->reported_since, since, memory_order_relaxed);
    }
  awaiting = atomic_load_explicit (&debug->awaiting, memory_order_relaxed);
  g_string_append_printf (out, "\n  task %s: pending for %.1f s, %s; last awaited: %s",
                          ws_raw_task_label (task, label), (now - since) / (double) G_USEC_PER_SEC,
                          (state & WS_STATE_NOTIFIED) ? "woken, queued for a poll"
                                                      : "waiting for a wake",
                          awaiting != NULL ? awaiting
                                           : "unknown (no wsrt await recorded: a poll "
                                             "function of the program's own)");
  return TRUE;
}

/* A poll function returned neither READY nor PENDING (WsPoll has no 0,
 * which a binding returns for a callback that threw): the task fails,
 * whatever result it set, rather than end as a success. */
static WsPoll
fail_invalid_poll (WsRawTask *task,
                   WsContext *cx,
                   gint       poll)
{
  char label[WS_RAW_TASK_LABEL_SIZE];

  ws_result_clear (&cx->result);
  cx->result.kind = WS_RESULT_ERROR;
  cx->result.u.error = g_error_new (WS_ERROR, WS_ERROR_FAILED,
                                    "The poll function of task %s returned %d, neither "
                                    "WS_POLL_READY nor WS_POLL_PENDING (from a binding "
                                    "such as GJS or PyGObject: the callback raised an "
                                    "exception, see the log, or returned nothing)",
                                    ws_raw_task_label (task, label), poll);
  return WS_POLL_READY;
}

/* With RUNNING held: destroy the future and complete as cancelled. */
static void
cancel_task (WsRawTask *task)
{
  WsResult result = { WS_RESULT_CANCELLED, };

  /* Before the destroy notify, and settled: what it frees may be waiting
   * on the cancellable, or in use by its handlers on the canceller's
   * thread. */
  if (task->cancel_hook != NULL)
    task->cancel_hook->cancel (task->cancel_hook, TRUE);
  drop_stage (task);
  store_result (task, &result);
  complete (task, FALSE);
}

/* ---- polling ----------------------------------------------------------- */

G_ALWAYS_INLINE static inline void
run (WsRawTask *task,
     WsContext *cx,
     gboolean   awaited)
{
  WsPoll poll;
  gint64 debug_start = 0;
  gint64 debug_outer = 0;
  WsWorker *debug_worker = NULL;

  WS_CHAOS_POINT ();

  switch (awaited ? ws_task_state_transition_to_running_awaited (&task->state)
                  : ws_task_state_transition_to_running (&task->state))
    {
    case WS_TO_RUNNING_FAILED:
      return;
    case WS_TO_RUNNING_DEALLOC:
      dealloc (task);
      return;
    case WS_TO_RUNNING_CANCELLED:
      cancel_task (task);
      return;
    case WS_TO_RUNNING_SUCCESS:
    default:
      break;
    }

  g_assert (task->stage == WS_STAGE_FUTURE);

  cx->task = task;
  cx->yielded = FALSE;
  cx->result.kind = WS_RESULT_NONE;

  /* WS_DEBUG off: one relaxed load and a branch, no clock read. */
  if G_UNLIKELY (ws_debug_get_flags () != 0)
    {
      debug_start = debug_poll_begin (task, &debug_outer);
      debug_worker = cx->worker;
    }

  poll = task->u.future.func (cx, task->u.future.data);

  cx->task = NULL;

  if G_UNLIKELY (debug_start != 0)
    debug_poll_end (task, debug_worker, debug_start, debug_outer, poll);

  WS_CHAOS_POINT ();

  if G_UNLIKELY (poll != WS_POLL_READY && poll != WS_POLL_PENDING)
    poll = fail_invalid_poll (task, cx, poll);

  if (poll == WS_POLL_READY)
    {
      /* The destroy notify runs after the last poll and before any waiter
       * learns that the task ended (doc/architecture.md, "The task and its
       * state word"). */
      drop_stage (task);
      store_result (task, &cx->result);
      complete (task, awaited);
      return;
    }

  if G_UNLIKELY (cx->result.kind != WS_RESULT_NONE)
    {
      char label[WS_RAW_TASK_LABEL_SIZE];

      g_critical ("wsrt task %s set a result but returned WS_POLL_PENDING; "
                  "the result was dropped. Return WS_POLL_READY after "
                  "ws_context_return_*().", ws_raw_task_label (task, label));
      ws_result_clear (&cx->result);
    }

  /* The first PENDING of a task on a host that binds late: from now on
   * the task may wait on a waker in no queue, where only the task registry
   * lets shutdown reach it. Still RUNNING, so nobody else can complete
   * or destroy it while we bind. If the set is closed, shutdown has
   * begun (and may have walked the set already): cancel it here. */
  if (!task->bound && task->host->bind_on_pending
      && !task->host->vtable->bind (task->host, task))
    {
      cancel_task (task);
      return;
    }

  switch (ws_task_state_transition_to_idle (&task->state, cx->yielded))
    {
    case WS_TO_IDLE_OK:
      break;
    case WS_TO_IDLE_NOTIFIED:
      schedule (task, cx->yielded);
      break;
    case WS_TO_IDLE_DEALLOC:
      dealloc (task);
      break;
    case WS_TO_IDLE_CANCELLED:
      cancel_task (task);
      break;
    default:
      g_assert_not_reached ();
    }
}

void
ws_raw_task_run (WsRawTask *task,
                 WsContext *cx)
{
  run (task, cx, FALSE);
}

/* Runs @task nested in the await of the owner of its join handle, which
 * took @task's queued instance back from its own worker
 * (ws_worker_run_awaited): the handle's owner is below on this stack
 * and cannot act on the handle until this returns, which lets the
 * transitions to RUNNING and COMPLETE be stores where the word shows no
 * other holder (ws_task_state_transition_to_running_awaited). */
void
ws_raw_task_run_awaited (WsRawTask *task,
                         WsContext *cx)
{
  run (task, cx, TRUE);
}

/* ---- wake and cancel ------------------------------------------------ */

/* The waker slot's store (ws-waker-private.h): here, since the waker a
 * poll stands for is its task's own. */
WsWaker *
ws_waker_slot_replace (WsWaker  **slot,
                       WsContext *cx)
{
  WsWaker *old = *slot;

  ws_raw_task_ref (cx->task);
  WS_COUNT_WAKERS (1);
  *slot = &cx->task->waker;
  return old;
}

void
ws_raw_task_wake_by_ref (WsRawTask *task)
{
  if (ws_task_state_transition_to_notified_by_ref (&task->state) == WS_TO_NOTIFIED_SUBMIT)
    schedule (task, FALSE);
}

void
ws_raw_task_cancel (WsRawTask *task)
{
  WsToNotified action = ws_task_state_transition_to_notified_and_cancel (&task->state);

  /* Before the schedule gives our reference's worth of the task away:
   * a running poll sees the cancellation now. */
  run_cancel_hook (task);
  if (action == WS_TO_NOTIFIED_SUBMIT)
    schedule (task, FALSE);
}

/* Shutdown: mark cancelled, and if the task is idle take RUNNING and
 * destroy it right here. Returns TRUE if it was cancelled by this call. */
gboolean
ws_raw_task_shutdown (WsRawTask *task)
{
  if (ws_task_state_transition_to_shutdown (&task->state) == WS_TO_SHUTDOWN_MARKED)
    {
      /* Running (or ended): its poll sees the cancellation now. */
      run_cancel_hook (task);
      return FALSE;
    }
  cancel_task (task);
  return TRUE;
}

/* Shutdown's walk of the worker pool: as ws_raw_task_shutdown (), but a
 * NOTIFIED task is only marked CANCELLED and left to the holder of its
 * queued instance (ws_task_state_to_shutdown_idle_step). */
gboolean
ws_raw_task_shutdown_idle (WsRawTask *task)
{
  if (ws_task_state_transition_to_shutdown_idle (&task->state) == WS_TO_SHUTDOWN_MARKED)
    {
      run_cancel_hook (task);
      return FALSE;
    }
  cancel_task (task);
  return TRUE;
}

/* A queued instance that will never run (a queue drained by shutdown):
 * cancel the task here unless someone already ended it or is polling it,
 * then drop the queued reference. Needed for tasks that were never
 * polled, which a host binding on the first PENDING has not put in its
 * task registry; harmless for the others (their shutdown found them complete,
 * or finds them unlinked). Only shutdown's drains call this, never a
 * push: a cancellation may wake an awaiter, whose schedule pushes again,
 * and the drain loop pops it (no recursion). */
void
ws_raw_task_drop_queued (WsRawTask *task)
{
  if (!ws_raw_task_shutdown (task))
    ws_raw_task_unref (task);
}

/* ---- the join side ------------------------------------------------------ */

/* Stores @waker (a new reference) as the join waker and publishes it
 * with JOIN_WAKER; FALSE if the task completed first (the field is then
 * left empty). Only while JOIN_WAKER is clear. */
static gboolean
set_join_waker (WsRawTask *task,
                WsWaker   *waker)
{
  waker->vtable->ref (waker);
  task->join_waker = waker;

  if (ws_task_state_set_join_waker (&task->state) == WS_JOIN_WAKER_OK)
    return TRUE;
  task->join_waker = NULL;
  waker->vtable->unref (waker);
  return FALSE;
}

static void
take_output (WsRawTask *task,
             WsResult  *out)
{
  g_assert (task->stage == WS_STAGE_FINISHED);
  out->kind = task->result_kind;
  memcpy (&out->u, &task->u, sizeof out->u);
  memset (&task->u, 0, sizeof task->u);
  task->stage = WS_STAGE_CONSUMED;
}

/* Called by the single join handle only. If the task is complete, moves
 * its outcome into @out (unless @out is NULL: then the outcome stays, for
 * a later call to take) and returns TRUE. Otherwise registers @waker
 * (which may be NULL: just check) and returns FALSE. */
gboolean
ws_raw_task_try_read_output (WsRawTask *task,
                             WsWaker   *waker,
                             WsResult  *out)
{
  return ws_raw_task_try_read_output_full (task, waker, out, NULL);
}

/* TRUE if @old, the waker a registration replaces, belongs to another
 * task that has not ended: two tasks awaiting one join handle. */
static gboolean
is_other_live_task (WsWaker *old,
                    WsWaker *waker)
{
  return old != waker && old->vtable == &task_waker_vtable
         && waker->vtable == &task_waker_vtable
         && !ws_raw_task_is_complete ((WsRawTask *) old);
}

/* ws_raw_task_try_read_output (), which also tells (@replaced_other) when
 * @waker replaced the waker of another task that has not ended. That
 * task is woken rather than left waiting for ever: it polls again and
 * finds the handle taken, which its poller reports. */
gboolean
ws_raw_task_try_read_output_full (WsRawTask *task,
                                  WsWaker   *waker,
                                  WsResult  *out,
                                  gboolean  *replaced_other)
{
  guint64 cur;

  WS_CHAOS_POINT ();

  cur = ws_task_state_load (&task->state, memory_order_acquire);
  if (!(cur & WS_STATE_COMPLETE) && waker != NULL)
    {
      gboolean registered;

      if (cur & WS_STATE_JOIN_WAKER)
        {
          /* Only after taking JOIN_WAKER back may we touch the field: until
           * then a completer may be taking it. */
          WsWaker *old;

          if (ws_task_state_unset_join_waker (&task->state) == WS_JOIN_WAKER_COMPLETE)
            goto read;
          old = g_steal_pointer (&task->join_waker);
          if G_UNLIKELY (replaced_other != NULL && is_other_live_task (old, waker))
            {
              *replaced_other = TRUE;
              ws_waker_take_and_wake (old);
            }
          else
            old->vtable->unref (old);
        }

      registered = set_join_waker (task, waker);
      if (registered)
        return FALSE;
    }
  else if (!(cur & WS_STATE_COMPLETE))
    return FALSE;

read:
  /* Acquire (above, or in the failed CAS): pairs with complete()'s
   * release, so the stage is visible. */
  if (out != NULL)
    take_output (task, out);
  return TRUE;
}

/* Whether @task may still be the task of a live join handle. Until it
 * ends, a handle holds a reference and the task's JOIN_INTEREST, and
 * once the task is complete its outcome waits in the stage (FINISHED)
 * for the handle: the handle's finish or free is what consumes it. So a
 * handle used after it ended (finished twice, say) finds a complete task
 * whose stage is CONSUMED, alive or in a thread's cache of freed tasks
 * (the fields stay until the memory is taken for a new task), or, in an
 * ASan build, poisoned memory. Once the memory is another task's,
 * nothing can tell (doc: ws_join_handle_finish). Acquire: pairs with
 * complete()'s release, so the stage is the completer's. */
gboolean
ws_raw_task_has_join_handle (WsRawTask *task)
{
  guint64 cur;

#if defined(__SANITIZE_ADDRESS__)
  if (__asan_address_is_poisoned (&task->state))
    return FALSE;
#elif defined(__has_feature)
# if __has_feature(address_sanitizer)
  if (__asan_address_is_poisoned (&task->state))
    return FALSE;
# endif
#endif
  cur = ws_task_state_load (&task->state, memory_order_acquire);
  if (!(cur & WS_STATE_JOIN_INTEREST) || ws_task_state_ref_count (cur) == 0)
    return FALSE;
  return !(cur & WS_STATE_COMPLETE) || task->stage == WS_STAGE_FINISHED;
}

/* The join handle goes away. */
void
ws_raw_task_drop_join_handle (WsRawTask *task)
{
  /* The handle's reference is the last one: nobody can take another
   * (only a holder of one can, and no transition queues a COMPLETE task),
   * so the handle owns the task and frees it without an RMW. The acquire
   * load pairs with the release of every decrement before it (all of them
   * RMWs on the word, one release sequence). */
  if (ws_task_state_is_last_after_complete (&task->state))
    {
      if (task->stage == WS_STAGE_FINISHED)
        drop_stage (task);
      dealloc (task);
      return;
    }

  switch (ws_task_state_unset_join_interest (&task->state))
    {
    case WS_UNSET_JOIN_INTEREST_COMPLETE:
      /* The completer left the outcome to us. */
      if (task->stage == WS_STAGE_FINISHED)
        drop_stage (task);
      break;
    case WS_UNSET_JOIN_INTEREST_TOOK_WAKER:
      if (task->join_waker != NULL)
        {
          WsWaker *w = task->join_waker;

          task->join_waker = NULL;
          w->vtable->unref (w);
        }
      break;
    case WS_UNSET_JOIN_INTEREST_OK:
    default:
      break;
    }

  ws_raw_task_unref (task);
}

/* ---- the task as a waker ------------------------------------------- */

static void
waker_wake (WsWaker *waker)
{
  ws_raw_task_wake_by_ref ((WsRawTask *) waker);
}

static void
waker_ref (WsWaker *waker)
{
  ws_raw_task_ref ((WsRawTask *) waker);
  WS_COUNT_WAKERS (1);
}

static void
waker_unref (WsWaker *waker)
{
  WS_COUNT_WAKERS (-1);
  ws_raw_task_unref ((WsRawTask *) waker);
}
