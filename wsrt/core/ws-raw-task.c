/* ws-raw-task.c: the task state machine
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The rules (DESIGN 4) and how the state word keeps them:
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
 * References: one for the owned-task set once the task is bound to it, one
 * for each queued (notified) instance, one for the join handle, one per
 * WsWaker reference. The task itself holds one reference on its host
 * from ws_raw_task_new () until dealloc (), so nothing a task does can
 * reach a freed host.
 *
 * Counting: a task is counted alive by the spawner once its host has
 * accepted it (ws_raw_task_mark_counted) and uncounted by complete (). A
 * refused spawn (ws_raw_task_refuse) is never counted and never reaches
 * complete (): its destroy notify runs on the spawning thread before the
 * spawn returns.
 *
 * Nothing here completes or cancels a task from inside a schedule path:
 * schedule () only hands the task to its host, which queues it or, once
 * the host has ended, drops the queued reference of a task that has
 * ended (doc/architecture.md, "Shutdown").
 */

#include "config.h"

#include "ws-raw-task-private.h"
#include "ws-task-registry-private.h"
#include "ws-task-allocator-private.h"
#include "ws-chaos-private.h"

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

gint64
ws_raw_task_get_n_live (void)
{
#ifdef WS_ENABLE_LEAK_COUNTERS
  return atomic_load_explicit (&n_live_tasks, memory_order_relaxed);
#else
  return -1;
#endif
}

#ifdef WS_ENABLE_LEAK_COUNTERS
_Atomic gint64 ws_raw_task_n_live_wakers;
#endif

gint64
ws_raw_task_get_n_live_wakers (void)
{
#ifdef WS_ENABLE_LEAK_COUNTERS
  return atomic_load_explicit (&ws_raw_task_n_live_wakers, memory_order_relaxed);
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
    case WS_RESULT_CANCELLED:
    default:
      break;
    }
  result->kind = WS_RESULT_NONE;
  memset (&result->u, 0, sizeof result->u);
}

WsRawTask *
ws_raw_task_new (WsTaskHost     *host,
                 WsTaskFunc      func,
                 gpointer        data,
                 GDestroyNotify  destroy,
                 gboolean        join_interest)
{
  WsRawTask *task = ws_task_allocator_alloc0 ();
  guint64 refs = join_interest ? 2 : 1;   /* notified (+ handle); bind adds the set's */

  host->vtable->ref (host);
  task->waker.vtable = &task_waker_vtable;
  task->host = host;
  task->stage = WS_STAGE_FUTURE;
  task->u.future.func = func;
  task->u.future.data = data;
  task->u.future.destroy = destroy;

  /* Relaxed: the task is not shared yet; the queue push that publishes it
   * is a release. */
  atomic_init (&task->state,
               WS_STATE_NOTIFIED
               | (join_interest ? WS_STATE_JOIN_INTEREST : 0)
               | (refs << WS_STATE_REF_SHIFT));
  COUNT_LIVE (1);

  return task;
}

/* The host accepted the task, which its owned set counts (the spawner
 * counts it, see ws-task-registry.c), so complete () must count its end.
 * Called before the task is published (the push that publishes it is a
 * release, and complete () runs after an acquire of that push). */
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
  guint64 cur = atomic_load_explicit (&task->state, memory_order_relaxed);
  guint64 join = cur & WS_STATE_JOIN_INTEREST;

  g_assert (!task->counted && (cur & WS_STATE_NOTIFIED));

  drop_stage (task);
  store_result (task, &result);
  if (!join)
    {
      dealloc (task);
      return;
    }
  /* Relaxed: not shared yet; whoever receives the handle gets it through
   * a release (the return of the spawn, or a queue). */
  atomic_store_explicit (&task->state,
                         WS_STATE_COMPLETE | WS_STATE_CANCELLED | join
                         | ((guint64) 1 << WS_STATE_REF_SHIFT),
                         memory_order_relaxed);
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

static void
dealloc (WsRawTask *task)
{
  WsTaskHost *host = task->host;

  /* Normally the stage was consumed by completion or by the join handle;
   * a task can only reach here with a live stage if it was never run,
   * which the spawn paths do not allow. Drop it all the same. */
  drop_stage (task);
  if (task->join_waker != NULL)
    task->join_waker->vtable->unref (task->join_waker);
  COUNT_LIVE (-1);
  ws_task_allocator_free (task);

  /* Last: this may free the host, and with it the runtime's memory. */
  host->vtable->unref (host);
}

void
ws_raw_task_ref (WsRawTask *task)
{
  /* Relaxed, as for any reference count increment: the caller already
   * holds a reference, so nothing needs to be made visible. */
  guint64 prev = atomic_fetch_add_explicit (&task->state, WS_STATE_REF_ONE,
                                            memory_order_relaxed);
  g_assert ((prev >> WS_STATE_REF_SHIFT) > 0);
}

void
ws_raw_task_unref_n (WsRawTask *task,
                     guint      n)
{
  /* Release so that our writes to the task happen before the free;
   * acquire (on the last one) so that the freeing thread sees everyone
   * else's writes. */
  guint64 prev = atomic_fetch_sub_explicit (&task->state,
                                            (guint64) n * WS_STATE_REF_ONE,
                                            memory_order_acq_rel);
  guint64 refs = prev >> WS_STATE_REF_SHIFT;

  g_assert (refs >= n);
  if (refs == n)
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

/* Called with RUNNING held and the stage set to FINISHED. Drops the
 * reference of the poller. */
static void
complete (WsRawTask *task)
{
  WsTaskHost *host = task->host;
  guint64 prev;
  guint n_unref = 1;

  WS_CHAOS_POINT ();

  /* Leave the owned set before COMPLETE is published, so that the
   * alive-task count is right by the time a waiter looks: a handle that
   * reads COMPLETE without waiting (ws_task_wait on a finished task) gets
   * no wake to order it after a later removal. We hold RUNNING, so a
   * shutdown that misses the task here cannot destroy it under us. The
   * host outlives the task (the task holds a reference on it). */
  if (task->counted)
    {
      if (ws_task_registry_remove (host->registry, task))
        n_unref++;
      ws_task_registry_count_completed (host->registry);
    }

  /* AcqRel: release publishes the stage (outcome) and the removal to the
   * join handle, which reads them after an acquire load that sees
   * COMPLETE; acquire pairs with the handle's release when it set
   * JOIN_WAKER or dropped JOIN_INTEREST. */
  prev = atomic_fetch_xor_explicit (&task->state,
                                    WS_STATE_RUNNING | WS_STATE_COMPLETE,
                                    memory_order_acq_rel);
  g_assert (prev & WS_STATE_RUNNING);
  g_assert (!(prev & WS_STATE_COMPLETE));

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
      waker->vtable->wake (waker);
      waker->vtable->unref (waker);
    }

  ws_raw_task_unref_n (task, n_unref);
}

/* With RUNNING held: destroy the future and complete as cancelled. */
static void
cancel_task (WsRawTask *task)
{
  WsResult result = { WS_RESULT_CANCELLED, };

  drop_stage (task);
  store_result (task, &result);
  complete (task);
}

/* ---- polling ----------------------------------------------------------- */

typedef enum
{
  TO_RUNNING_SUCCESS,
  TO_RUNNING_CANCELLED,
  TO_RUNNING_FAILED,
  TO_RUNNING_DEALLOC,
} ToRunning;

static ToRunning
transition_to_running (WsRawTask *task)
{
  guint64 cur = atomic_load_explicit (&task->state, memory_order_acquire);

  for (;;)
    {
      guint64 next;
      ToRunning action;

      g_assert (cur & WS_STATE_NOTIFIED);

      if (cur & (WS_STATE_RUNNING | WS_STATE_COMPLETE))
        {
          /* Taken by shutdown, or already finished: drop our ref. */
          next = cur - WS_STATE_REF_ONE;
          action = (next >> WS_STATE_REF_SHIFT) == 0 ? TO_RUNNING_DEALLOC : TO_RUNNING_FAILED;
        }
      else
        {
          next = (cur | WS_STATE_RUNNING) & ~WS_STATE_NOTIFIED;
          action = (cur & WS_STATE_CANCELLED) ? TO_RUNNING_CANCELLED : TO_RUNNING_SUCCESS;
        }

      /* Acquire: we must see everything the previous poller did to the
       * future (it released in transition_to_idle) and whatever the waker
       * published before its release in the wake. */
      if (atomic_compare_exchange_weak_explicit (&task->state, &cur, next,
                                                 memory_order_acq_rel,
                                                 memory_order_acquire))
        return action;
    }
}

typedef enum
{
  TO_IDLE_OK,
  TO_IDLE_NOTIFIED,
  TO_IDLE_DEALLOC,
  TO_IDLE_CANCELLED,
} ToIdle;

static ToIdle
transition_to_idle (WsRawTask *task)
{
  guint64 cur = atomic_load_explicit (&task->state, memory_order_acquire);

  for (;;)
    {
      guint64 next;
      ToIdle action;

      g_assert (cur & WS_STATE_RUNNING);

      if (cur & WS_STATE_CANCELLED)
        return TO_IDLE_CANCELLED;   /* keep RUNNING: we destroy it now */

      next = cur & ~WS_STATE_RUNNING;
      if (cur & WS_STATE_NOTIFIED)
        {
          /* Woken during the poll: our reference becomes the queued one. */
          action = TO_IDLE_NOTIFIED;
        }
      else
        {
          next -= WS_STATE_REF_ONE;
          action = (next >> WS_STATE_REF_SHIFT) == 0 ? TO_IDLE_DEALLOC : TO_IDLE_OK;
        }

      /* Release: the next poller (on any thread) acquires in
       * transition_to_running and must see the future as we left it. */
      if (atomic_compare_exchange_weak_explicit (&task->state, &cur, next,
                                                 memory_order_acq_rel,
                                                 memory_order_acquire))
        return action;
    }
}

void
ws_raw_task_run (WsRawTask *task,
                 WsContext *cx)
{
  WsPoll poll;

  WS_CHAOS_POINT ();

  switch (transition_to_running (task))
    {
    case TO_RUNNING_FAILED:
      return;
    case TO_RUNNING_DEALLOC:
      dealloc (task);
      return;
    case TO_RUNNING_CANCELLED:
      cancel_task (task);
      return;
    case TO_RUNNING_SUCCESS:
    default:
      break;
    }

  g_assert (task->stage == WS_STAGE_FUTURE);

  cx->task = task;
  cx->yielded = FALSE;
  cx->result.kind = WS_RESULT_NONE;

  poll = task->u.future.func (cx, task->u.future.data);

  cx->task = NULL;

  WS_CHAOS_POINT ();

  if (poll == WS_POLL_READY)
    {
      /* DESIGN 4: the destroy notify runs after the last poll and before
       * any waiter learns that the task ended. */
      drop_stage (task);
      store_result (task, &cx->result);
      complete (task);
      return;
    }

  if G_UNLIKELY (cx->result.kind != WS_RESULT_NONE)
    {
      g_critical ("A wsrt task set a result but returned WS_POLL_PENDING; "
                  "the result was dropped. Return WS_POLL_READY after "
                  "ws_context_return_*().");
      ws_result_clear (&cx->result);
    }

  /* The first PENDING of a task on a host that binds late: from now on
   * the task may wait on a waker in no queue, where only the owned set
   * lets shutdown reach it. Still RUNNING, so nobody else can complete
   * or destroy it while we bind. If the set is closed, shutdown has
   * begun (and may have walked the set already): cancel it here. */
  if (!task->bound && task->host->bind_on_pending
      && !ws_task_registry_bind (task->host->registry, task))
    {
      cancel_task (task);
      return;
    }

  switch (transition_to_idle (task))
    {
    case TO_IDLE_OK:
      break;
    case TO_IDLE_NOTIFIED:
      schedule (task, cx->yielded);
      break;
    case TO_IDLE_DEALLOC:
      dealloc (task);
      break;
    case TO_IDLE_CANCELLED:
      cancel_task (task);
      break;
    default:
      g_assert_not_reached ();
    }
}

/* ---- wake and cancel ------------------------------------------------ */

void
ws_raw_task_wake_by_ref (WsRawTask *task)
{
  guint64 cur = atomic_load_explicit (&task->state, memory_order_relaxed);

  WS_CHAOS_POINT ();

  for (;;)
    {
      guint64 next;
      gboolean submit = FALSE;

      if (cur & (WS_STATE_COMPLETE | WS_STATE_NOTIFIED))
        return;

      if (cur & WS_STATE_RUNNING)
        next = cur | WS_STATE_NOTIFIED;
      else
        {
          next = (cur | WS_STATE_NOTIFIED) + WS_STATE_REF_ONE;
          submit = TRUE;
        }

      /* Release: whatever the waker wrote before waking (a channel slot, a
       * GIO result) must be visible to the poller, which acquires in
       * transition_to_running or transition_to_idle. */
      if (atomic_compare_exchange_weak_explicit (&task->state, &cur, next,
                                                 memory_order_acq_rel,
                                                 memory_order_relaxed))
        {
          if (submit)
            schedule (task, FALSE);
          return;
        }
    }
}

void
ws_raw_task_cancel (WsRawTask *task)
{
  guint64 cur = atomic_load_explicit (&task->state, memory_order_relaxed);

  WS_CHAOS_POINT ();

  for (;;)
    {
      guint64 next;
      gboolean submit = FALSE;

      if (cur & (WS_STATE_COMPLETE | WS_STATE_CANCELLED))
        return;

      if (cur & (WS_STATE_RUNNING | WS_STATE_NOTIFIED))
        {
          /* The poller, or whoever pops the queued instance, sees
           * CANCELLED and destroys the future at that scheduling point. */
          next = cur | WS_STATE_CANCELLED | WS_STATE_NOTIFIED;
        }
      else
        {
          /* Idle: queue it so that its own executor destroys the future
           * (on the owner thread for local tasks). */
          next = (cur | WS_STATE_CANCELLED | WS_STATE_NOTIFIED) + WS_STATE_REF_ONE;
          submit = TRUE;
        }

      /* AcqRel for the same reasons as a wake. */
      if (atomic_compare_exchange_weak_explicit (&task->state, &cur, next,
                                                 memory_order_acq_rel,
                                                 memory_order_relaxed))
        {
          if (submit)
            schedule (task, FALSE);
          return;
        }
    }
}

/* Shutdown: mark cancelled, and if the task is idle take RUNNING and
 * destroy it right here. Returns TRUE if it was cancelled by this call. */
gboolean
ws_raw_task_shutdown (WsRawTask *task)
{
  guint64 cur = atomic_load_explicit (&task->state, memory_order_relaxed);

  WS_CHAOS_POINT ();

  for (;;)
    {
      guint64 next = cur | WS_STATE_CANCELLED;
      gboolean idle = !(cur & (WS_STATE_RUNNING | WS_STATE_COMPLETE));

      if (idle)
        next |= WS_STATE_RUNNING;

      /* Acquire: if we take RUNNING we own the future and must see the last
       * poller's writes (it released going idle). */
      if (atomic_compare_exchange_weak_explicit (&task->state, &cur, next,
                                                 memory_order_acq_rel,
                                                 memory_order_relaxed))
        {
          if (idle)
            cancel_task (task);
          return idle;
        }
    }
}

/* A queued instance that will never run (a queue drained by shutdown):
 * cancel the task here unless someone already ended it or is polling it,
 * then drop the queued reference. Needed for tasks that were never
 * polled, which a host binding on the first PENDING has not put in its
 * owned set; harmless for the others (their shutdown found them complete,
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

static gboolean
set_join_waker (WsRawTask *task,
                WsWaker   *waker)
{
  guint64 cur;

  waker->vtable->ref (waker);
  task->join_waker = waker;

  WS_CHAOS_POINT ();

  cur = atomic_load_explicit (&task->state, memory_order_acquire);
  for (;;)
    {
      if (cur & WS_STATE_COMPLETE)
        {
          task->join_waker = NULL;
          waker->vtable->unref (waker);
          return FALSE;
        }
      /* Release: the completer reads join_waker after an acquire that
       * sees JOIN_WAKER. */
      if (atomic_compare_exchange_weak_explicit (&task->state, &cur,
                                                 cur | WS_STATE_JOIN_WAKER,
                                                 memory_order_acq_rel,
                                                 memory_order_acquire))
        return TRUE;
    }
}

/* Takes JOIN_WAKER back so the handle may rewrite join_waker; fails once
 * the task is complete (then the completer owns the field). */
static gboolean
unset_join_waker (WsRawTask *task)
{
  guint64 cur = atomic_load_explicit (&task->state, memory_order_acquire);

  WS_CHAOS_POINT ();

  for (;;)
    {
      if (cur & WS_STATE_COMPLETE)
        return FALSE;
      /* Acquire: we are about to rewrite the field the completer may have
       * read; we only do so after it can no longer read it. */
      if (atomic_compare_exchange_weak_explicit (&task->state, &cur,
                                                 cur & ~WS_STATE_JOIN_WAKER,
                                                 memory_order_acq_rel,
                                                 memory_order_acquire))
        return TRUE;
    }
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
 * its outcome into @out and returns TRUE. Otherwise registers @waker
 * (which may be NULL: just check) and returns FALSE. */
gboolean
ws_raw_task_try_read_output (WsRawTask *task,
                             WsWaker   *waker,
                             WsResult  *out)
{
  guint64 cur;

  WS_CHAOS_POINT ();

  cur = atomic_load_explicit (&task->state, memory_order_acquire);
  if (!(cur & WS_STATE_COMPLETE) && waker != NULL)
    {
      gboolean registered;

      if (cur & WS_STATE_JOIN_WAKER)
        {
          /* Only after taking JOIN_WAKER back may we touch the field: until
           * then a completer may be taking it. */
          if (!unset_join_waker (task))
            goto read;
          task->join_waker->vtable->unref (task->join_waker);
          task->join_waker = NULL;
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
  take_output (task, out);
  return TRUE;
}

/* The join handle goes away. */
void
ws_raw_task_drop_join_handle (WsRawTask *task)
{
  guint64 cur = atomic_load_explicit (&task->state, memory_order_acquire);

  WS_CHAOS_POINT ();

  for (;;)
    {
      g_assert (cur & WS_STATE_JOIN_INTEREST);

      if (cur & WS_STATE_COMPLETE)
        {
          /* The completer left the outcome to us. */
          if (task->stage == WS_STAGE_FINISHED)
            drop_stage (task);
          break;
        }

      /* AcqRel: release so that the completer (acquire) sees we no longer
       * want the outcome; we may also take back the join waker. */
      if (atomic_compare_exchange_weak_explicit (&task->state, &cur,
                                                 cur & ~(WS_STATE_JOIN_INTEREST | WS_STATE_JOIN_WAKER),
                                                 memory_order_acq_rel,
                                                 memory_order_acquire))
        {
          if ((cur & WS_STATE_JOIN_WAKER) && task->join_waker != NULL)
            {
              WsWaker *w = task->join_waker;

              task->join_waker = NULL;
              w->vtable->unref (w);
            }
          break;
        }
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
