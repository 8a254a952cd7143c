/* ws-limiter.c: bounded concurrency, a counting semaphore that tasks await
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A count of free permits and a FIFO queue of waiters, as tokio's
 * batch_semaphore: a permit that is given back while someone waits is
 * handed to the oldest waiter directly, never put back in the count for
 * whoever comes next to grab. What must hold:
 *
 *  - The invariant: while the queue is not empty, `available` is 0. Only
 *    the lock holder adds to `available` (give_back), and it adds only
 *    when the queue is empty; a waiter is queued only under the lock,
 *    after a take under that lock found `available` at 0, and from then
 *    on nobody can add. Taking a permit (take_permit) needs no lock: it
 *    only subtracts from a count above 0, which means nobody waits. So a
 *    permit taken without the lock never overtakes a waiter (FIFO holds
 *    for try_acquire too), and at most max_permits are held at any time.
 *  - Each waiter ends exactly once: granted (give_back unlinks it and
 *    hands it the permit), or dropped (ws_limiter_waiter_free, or the
 *    cancellation of an acquire_async, unlinks it). Both happen under the
 *    lock, so one of them wins. A waiter dropped after it was granted
 *    passes its permit on to the next waiter: a task cancelled between
 *    the grant and its next poll loses nothing.
 *  - The waiter is the waiting task's, not the limiter's: its memory
 *    lives in the pointer the task keeps in its state (acquire_poll makes
 *    it on the first PENDING, the task frees it when it gets its permit or
 *    stops waiting), or in the operation of an acquire_async. The limiter
 *    touches it only under the lock while it is queued; the grant's
 *    release store of GRANTED is its last touch, so the owner may free it
 *    as soon as it sees GRANTED with an acquire load, without the lock.
 *    (A waiter per task, found by the limiter, could not be freed when a
 *    task that gave up waiting or was cancelled ends: the core tells no
 *    one when a task ends, and its permit would be lost.)
 *  - Wakers are stored and taken under the lock and woken outside it
 *    (ws-waker-private.h).
 */

#include "config.h"

#include <stdatomic.h>

#include "ws-limiter.h"
#include "ws-context.h"
#include "ws-error.h"
#include "ws-core-private.h"
#include "ws-context-private.h"
#include "ws-completion-private.h"
#include "ws-refuse-private.h"

typedef enum
{
  WAITER_NEW,             /* made, not queued yet (acquire_async only) */
  WAITER_QUEUED,          /* in the queue */
  WAITER_GRANTED,         /* handed a permit; out of the queue for good */
  WAITER_CANCELLED,       /* out of the queue without one (acquire_async only) */
} WaiterState;

struct _WsLimiterWaiter
{
  WsLimiterWaiter *prev;          /* the queue's links, under the lock */
  WsLimiterWaiter *next;
  WsWaker         *waker;         /* under the lock; taken by whoever unlinks */
  WsLimiter       *limiter;       /* a reference */
  _Atomic guint    state;         /* WaiterState, written under the lock only */
};

struct _WsLimiter
{
  gatomicrefcount  ref_count;
  guint            max_permits;
  _Atomic guint    available;     /* permits nobody holds */
  WsLock           lock;          /* guards the queue and every increment of available */
  WsLimiterWaiter *head;          /* the oldest waiter */
  WsLimiterWaiter *tail;
};

/**
 * WsLimiter:
 *
 * Bounded concurrency: a counting semaphore with a fixed number of
 * permits, which tasks await, as tokio's `Semaphore`.
 *
 * A task takes a permit with [method@Ws.Limiter.acquire_poll], which
 * returns %WS_POLL_PENDING while all permits are held, and gives it back
 * with [method@Ws.Limiter.release]. Waiters get permits in the order they
 * started to wait: a permit given back while tasks wait is handed to the
 * oldest of them directly, so a task that arrives later, or a
 * [method@Ws.Limiter.try_acquire], cannot take it first.
 *
 * A task that waits keeps a [struct@Ws.LimiterWaiter] pointer in its state:
 * the waiter is its place in the queue. If the task stops waiting (it is
 * cancelled, or gives up), its destroy notify frees the waiter with
 * [method@Ws.LimiterWaiter.free]; a permit already handed to it goes on to
 * the next waiter, so none is lost:
 *
 * ```c
 * typedef struct {
 *   WsLimiter       *limiter;
 *   WsLimiterWaiter *waiter;     // NULL unless waiting
 *   gboolean         holding;
 * } Job;
 *
 * static WsPoll
 * job_poll (WsContext *cx, gpointer data)
 * {
 *   Job *job = data;
 *
 *   if (!job->holding)
 *     {
 *       if (ws_limiter_acquire_poll (job->limiter, cx,
 *                                    &job->waiter) == WS_POLL_PENDING)
 *         return WS_POLL_PENDING;
 *       job->holding = TRUE;
 *     }
 *   // ... at most max_permits tasks are here at once ...
 *   ws_limiter_release (job->limiter);
 *   job->holding = FALSE;
 *   return WS_POLL_READY;
 * }
 *
 * static void
 * job_free (gpointer data)
 * {
 *   Job *job = data;
 *
 *   // cancelled while waiting
 *   g_clear_pointer (&job->waiter, ws_limiter_waiter_free);
 *   // cancelled while holding
 *   if (job->holding)
 *     ws_limiter_release (job->limiter);
 *   ws_limiter_unref (job->limiter);
 *   g_free (job);
 * }
 * ```
 *
 * [method@Ws.Limiter.spawn] does all of that for you: it runs a task
 * function once the task holds a permit and gives the permit back when the
 * task ends, however it ends. [method@Ws.Limiter.spawn_blocking] caps jobs
 * on the blocking pool the same way: jobs beyond the cap wait in the
 * limiter, not on blocking threads.
 *
 * On a main loop (and from GJS) wait with [method@Ws.Limiter.acquire_async].
 * Permits are not tied to the task or thread that took them: any thread
 * may release a permit that another took.
 */

G_DEFINE_BOXED_TYPE (WsLimiter, ws_limiter, ws_limiter_ref, ws_limiter_unref)

/**
 * WsLimiterWaiter:
 *
 * The place of a waiting task in the queue of a [struct@Ws.Limiter].
 *
 * [method@Ws.Limiter.acquire_poll] makes it when the task has to wait and
 * stores it in a pointer that the task keeps in its state; the call that
 * hands the task its permit frees it and sets the pointer back to %NULL.
 * A task that ends while the pointer is set (cancelled, or no longer
 * interested) frees it with [method@Ws.LimiterWaiter.free].
 */

/* ---- permits and the queue ---------------------------------------------- */

/* Takes a free permit without the lock: TRUE if there was one. Only ever
 * subtracts from a count above 0, which means nobody waits (the invariant
 * at the top of this file). */
static gboolean
take_permit (WsLimiter *self)
{
  /* Relaxed: a first guess for the CAS, which checks it. */
  guint n = atomic_load_explicit (&self->available, memory_order_relaxed);

  /* Acquire on success: pairs with the release in give_back (), so what
   * the previous holder did before it gave the permit back happens before
   * what the new holder does with it (a limiter of one permit is a lock).
   * Relaxed on failure: only the count is read again. */
  while (n > 0)
    if (atomic_compare_exchange_weak_explicit (&self->available, &n, n - 1,
                                               memory_order_acquire, memory_order_relaxed))
      return TRUE;
  return FALSE;
}

static void
waiter_init (WsLimiterWaiter *w,
             WsLimiter       *self)
{
  w->prev = w->next = NULL;
  w->waker = NULL;
  w->limiter = ws_limiter_ref (self);
  atomic_init (&w->state, WAITER_NEW);
}

/* Relaxed stores of the state are made under the lock, where every reader
 * that matters holds it too; the one store read without the lock is the
 * grant's (give_back). */
static void
queue_push_locked (WsLimiter       *self,
                   WsLimiterWaiter *w)
{
  w->prev = self->tail;
  w->next = NULL;
  if (self->tail != NULL)
    self->tail->next = w;
  else
    self->head = w;
  self->tail = w;
  atomic_store_explicit (&w->state, WAITER_QUEUED, memory_order_relaxed);
}

static void
queue_unlink_locked (WsLimiter       *self,
                     WsLimiterWaiter *w)
{
  if (w->prev != NULL)
    w->prev->next = w->next;
  else
    self->head = w->next;
  if (w->next != NULL)
    w->next->prev = w->prev;
  else
    self->tail = w->prev;
  w->prev = w->next = NULL;
}

/* Gives a permit back: to the oldest waiter if anyone waits, otherwise to
 * the count. FALSE, changing nothing, if no permit was held. */
static gboolean
give_back (WsLimiter *self)
{
  WsLimiterWaiter *w;
  WsWaker *waker = NULL;
  gboolean ok = TRUE;

  ws_lock_lock (&self->lock);
  w = self->head;
  if (w != NULL)
    {
      queue_unlink_locked (self, w);
      waker = g_steal_pointer (&w->waker);
      /* Release, and our last touch of @w: its owner, seeing GRANTED with
       * an acquire load, may free it at once, and sees our writes to it
       * and, through the lock, what the previous holder did. */
      atomic_store_explicit (&w->state, WAITER_GRANTED, memory_order_release);
    }
  else if (atomic_load_explicit (&self->available, memory_order_relaxed) >= self->max_permits)
    {
      /* Relaxed: only the lock holder adds, so the count read here is at
       * least what it is now; at max_permits nobody holds a permit. */
      ok = FALSE;
    }
  else
    {
      /* Release: pairs with take_permit ()'s acquire. */
      atomic_fetch_add_explicit (&self->available, 1, memory_order_release);
    }
  ws_lock_unlock (&self->lock);

  ws_waker_take_and_wake (waker);
  return ok;
}

/* ---- the limiter ---------------------------------------------------------- */

/**
 * ws_limiter_new:
 * @max_permits: how many holders at once; at least 1
 *
 * Creates a limiter with @max_permits permits, all free.
 *
 * Returns: (transfer full): a new limiter
 */
WsLimiter *
ws_limiter_new (guint max_permits)
{
  WsLimiter *self;

  g_return_val_if_fail (max_permits > 0, NULL);

  self = g_new0 (WsLimiter, 1);
  g_atomic_ref_count_init (&self->ref_count);
  self->max_permits = max_permits;
  atomic_init (&self->available, max_permits);
  ws_lock_init (&self->lock);
  return self;
}

/**
 * ws_limiter_ref:
 * @self: a #WsLimiter
 *
 * Takes a reference on @self.
 *
 * Returns: (transfer full): @self
 */
WsLimiter *
ws_limiter_ref (WsLimiter *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  g_atomic_ref_count_inc (&self->ref_count);
  return self;
}

/**
 * ws_limiter_unref:
 * @self: (transfer full): a #WsLimiter
 *
 * Releases a reference. Every waiter holds one, so the last reference goes
 * only when nobody waits.
 */
void
ws_limiter_unref (WsLimiter *self)
{
  g_return_if_fail (self != NULL);

  if (!g_atomic_ref_count_dec (&self->ref_count))
    return;

  g_assert (self->head == NULL);
  ws_lock_clear (&self->lock);
  g_free (self);
}

/**
 * ws_limiter_acquire_poll: (skip)
 * @self: a #WsLimiter
 * @context: the context of the task that wants a permit
 * @waiter: (inout) (transfer full) (nullable): where the task keeps its
 *   place in the queue: a pointer in its state, %NULL when it starts to
 *   wait and left as this call leaves it between polls
 *
 * Takes a permit for the task of @context, waiting while all are held.
 *
 * When it returns %WS_POLL_READY the task holds one permit (and
 * `*waiter` is %NULL): give it back with [method@Ws.Limiter.release]. When
 * it returns %WS_POLL_PENDING, `*waiter` is the task's place in the
 * queue: return %WS_POLL_PENDING and call this again with the same
 * pointer when the task is polled again. A task that ends while `*waiter`
 * is set, cancelled or no longer interested, frees it with
 * [method@Ws.LimiterWaiter.free] (from its destroy notify), which passes
 * on a permit that was handed to it in the meantime.
 *
 * Waiters get permits in the order of their first call. Consumes one unit
 * of the cooperative budget.
 *
 * Not for GJS, which cannot keep a waiter: it waits with
 * [method@Ws.Limiter.acquire_async].
 *
 * Returns: %WS_POLL_READY when the task holds a permit
 */
WsPoll
ws_limiter_acquire_poll (WsLimiter        *self,
                         WsContext        *context,
                         WsLimiterWaiter **waiter)
{
  WsLimiterWaiter *w;
  WsWaker *old = NULL;
  guint state;

  g_return_val_if_fail (self != NULL, WS_POLL_READY);
  ws_context_return_val_if_not_in_poll (context, WS_POLL_READY);
  g_return_val_if_fail (waiter != NULL, WS_POLL_READY);
  g_return_val_if_fail (*waiter == NULL || (*waiter)->limiter == self, WS_POLL_READY);
  ws_context_note_await (context, G_STRFUNC);

  if (!ws_context_poll_proceed (context))
    return WS_POLL_PENDING;

  w = *waiter;
  if (w == NULL)
    {
      if (take_permit (self))
        return WS_POLL_READY;

      /* Made outside the lock; wasted if a permit comes back meanwhile. */
      w = g_new (WsLimiterWaiter, 1);
      waiter_init (w, self);
      ws_lock_lock (&self->lock);
      state = take_permit (self) ? WAITER_GRANTED : WAITER_QUEUED;
      if (state == WAITER_QUEUED)
        {
          old = ws_waker_slot_replace (&w->waker, context);
          queue_push_locked (self, w);
        }
      ws_lock_unlock (&self->lock);
      g_assert (old == NULL);

      if (state == WAITER_QUEUED)
        {
          *waiter = w;
          return WS_POLL_PENDING;
        }
      ws_limiter_unref (w->limiter);
      g_free (w);
      return WS_POLL_READY;
    }

  /* Polled again while queued. Acquire: pairs with the grant's release
   * store; after it the waiter is ours alone. */
  state = atomic_load_explicit (&w->state, memory_order_acquire);
  if (state != WAITER_GRANTED)
    {
      ws_lock_lock (&self->lock);
      /* Relaxed: written under the lock only. */
      state = atomic_load_explicit (&w->state, memory_order_relaxed);
      if (state == WAITER_QUEUED)
        old = ws_waker_slot_replace (&w->waker, context);
      ws_lock_unlock (&self->lock);

      if (old != NULL)
        old->vtable->unref (old);
      if (state == WAITER_QUEUED)
        return WS_POLL_PENDING;
    }

  *waiter = NULL;
  ws_limiter_unref (w->limiter);
  g_free (w);
  return WS_POLL_READY;
}

/**
 * ws_limiter_try_acquire:
 * @self: a #WsLimiter
 *
 * Takes a permit if one is free, without waiting, from any thread. It
 * never takes a permit ahead of a waiting task: while tasks wait, no
 * permit is free.
 *
 * Returns: %TRUE if the caller now holds a permit; give it back with
 *   [method@Ws.Limiter.release]
 */
gboolean
ws_limiter_try_acquire (WsLimiter *self)
{
  g_return_val_if_fail (self != NULL, FALSE);

  return take_permit (self);
}

/**
 * ws_limiter_release:
 * @self: a #WsLimiter
 *
 * Gives back one permit, from any thread: to the task that has waited
 * longest, which is woken, or, if nobody waits, to the free permits.
 * Giving back a permit that nobody holds is a programmer error.
 */
void
ws_limiter_release (WsLimiter *self)
{
  g_return_if_fail (self != NULL);

  if (!give_back (self))
    g_critical ("ws_limiter_release: no permit of this limiter is held (all %u are free); "
                "release each permit once, after it was acquired", self->max_permits);
}

/**
 * ws_limiter_get_available:
 * @self: a #WsLimiter
 *
 * Counts the free permits now. Other threads may change it at once. While
 * tasks wait it is 0.
 *
 * Returns: the number of free permits
 */
guint
ws_limiter_get_available (WsLimiter *self)
{
  g_return_val_if_fail (self != NULL, 0);

  /* Relaxed: a snapshot, ordering nothing. */
  return atomic_load_explicit (&self->available, memory_order_relaxed);
}

/**
 * ws_limiter_get_max_permits:
 * @self: a #WsLimiter
 *
 * Gets the number of permits the limiter was made with: the most holders
 * it allows at once.
 *
 * Returns: the number of permits
 */
guint
ws_limiter_get_max_permits (WsLimiter *self)
{
  g_return_val_if_fail (self != NULL, 0);

  return self->max_permits;
}

/**
 * ws_limiter_waiter_free:
 * @waiter: (transfer full): a waiter made by [method@Ws.Limiter.acquire_poll]
 *
 * Stops waiting: takes @waiter out of the queue and frees it. If a permit
 * was already handed to it (the task was woken but not polled again), the
 * permit goes on to the next waiter, or back to the free permits: a
 * cancelled task never keeps a permit it did not see. Call it from the
 * destroy notify of a task whose waiter pointer is set.
 */
void
ws_limiter_waiter_free (WsLimiterWaiter *waiter)
{
  WsLimiter *self;
  WsWaker *waker = NULL;
  gboolean granted;

  g_return_if_fail (waiter != NULL);

  self = waiter->limiter;
  /* Acquire: pairs with the grant's release store (as in acquire_poll). */
  granted = atomic_load_explicit (&waiter->state, memory_order_acquire) == WAITER_GRANTED;
  if (!granted)
    {
      ws_lock_lock (&self->lock);
      /* Relaxed: written under the lock only. */
      granted = atomic_load_explicit (&waiter->state, memory_order_relaxed) == WAITER_GRANTED;
      if (!granted)
        {
          queue_unlink_locked (self, waiter);
          waker = g_steal_pointer (&waiter->waker);
        }
      ws_lock_unlock (&self->lock);
    }

  if (waker != NULL)
    waker->vtable->unref (waker);
  if (granted)
    give_back (self);
  ws_limiter_unref (self);
  g_free (waiter);
}

/* ---- waiting on a main loop ----------------------------------------------- */

/* One ws_limiter_acquire_async (), the data of its GTask. The waiter is
 * embedded: its waker is the operation, and a reference on that waker is
 * one on the GTask, so a queued waiter keeps the operation alive. It ends
 * through its WsCompletion (ws-completion.c); the limiter's own rule is
 * that the waiter's state decides, under the limiter's lock: a grant
 * (GRANTED) or a cancel (CANCELLED) comes first, and only that one claims.
 * A permit granted to an operation whose caller never takes it (no
 * finish, or a finish that sees the cancel) is passed on. */
typedef struct
{
  WsWaker          waker;         /* first */
  WsCompletion     completion;
  WsLimiterWaiter  waiter;
  GTask           *task;          /* not a reference: we are its data */
  gboolean         settled;       /* the permit went to the caller or was passed on */
} AcquireOp;

static void
op_waker_wake (WsWaker *waker)
{
  AcquireOp *op = (AcquireOp *) waker;

  /* Woken only by a grant: the permit is the operation's. Delivered on
   * the caller's context, never from inside this call. */
  (void) ws_completion_complete (&op->completion, NULL);
}

static void
op_waker_ref (WsWaker *waker)
{
  g_object_ref (((AcquireOp *) waker)->task);
}

static void
op_waker_unref (WsWaker *waker)
{
  g_object_unref (((AcquireOp *) waker)->task);
}

static const WsWakerVTable op_waker_vtable = {
  op_waker_wake,
  op_waker_ref,
  op_waker_unref,
};

/* The GTask is finalized. The cancel link held it, so it is gone too. */
static void
op_free (gpointer data)
{
  AcquireOp *op = data;
  WsLimiter *self = op->waiter.limiter;

  /* Granted, but nobody called finish: pass the permit on. Acquire: pairs
   * with the grant's release store. */
  if (atomic_load_explicit (&op->waiter.state, memory_order_acquire) == WAITER_GRANTED
      && !op->settled)
    give_back (self);
  ws_limiter_unref (self);
  g_free (op);
}

/* The completion's cancel handler, on the cancelling thread (or in
 * acquire_async for a cancellable cancelled already). */
static void
on_cancelled (WsCompletion *completion)
{
  AcquireOp *op = (AcquireOp *) ((guint8 *) completion - G_STRUCT_OFFSET (AcquireOp, completion));
  WsLimiter *self = op->waiter.limiter;
  WsWaker *waker = NULL;
  gboolean cancelled = FALSE;

  ws_lock_lock (&self->lock);
  switch (atomic_load_explicit (&op->waiter.state, memory_order_relaxed))
    {
    case WAITER_QUEUED:
      queue_unlink_locked (self, &op->waiter);
      waker = g_steal_pointer (&op->waiter.waker);
      G_GNUC_FALLTHROUGH;
    case WAITER_NEW:
      /* acquire_async sees CANCELLED and does not queue it. */
      atomic_store_explicit (&op->waiter.state, WAITER_CANCELLED, memory_order_relaxed);
      cancelled = TRUE;
      break;
    case WAITER_GRANTED:
    case WAITER_CANCELLED:
    default:
      /* Granted first: finish sees the cancellable and passes it on. */
      break;
    }
  ws_lock_unlock (&self->lock);

  if (!cancelled)
    return;
  /* CANCELLED under the lock: no grant can claim. */
  (void) ws_completion_complete (completion,
                                 g_error_new_literal (G_IO_ERROR, G_IO_ERROR_CANCELLED,
                                                      "The wait for a permit was cancelled"));
  /* A reference on the GTask; the completion holds another. */
  if (waker != NULL)
    waker->vtable->unref (waker);
}

/**
 * ws_limiter_acquire_async:
 * @self: a #WsLimiter
 * @cancellable: (nullable): stops the wait
 * @callback: (scope async): called once the caller holds a permit, or the
 *   wait was cancelled
 * @user_data: data for @callback
 *
 * Waits for a permit without blocking, in the same queue as the tasks.
 * @callback runs once, on the thread-default main context of the caller,
 * never from inside this call; finish with
 * [method@Ws.Limiter.acquire_finish].
 */
void
ws_limiter_acquire_async (WsLimiter           *self,
                          GCancellable        *cancellable,
                          GAsyncReadyCallback  callback,
                          gpointer             user_data)
{
  g_autoptr(GTask) task = NULL;
  AcquireOp *op;
  gboolean granted = FALSE;

  g_return_if_fail (self != NULL);
  g_return_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable));

  task = g_task_new (NULL, cancellable, callback, user_data);
  g_task_set_source_tag (task, ws_limiter_acquire_async);
  op = g_new0 (AcquireOp, 1);
  op->waker.vtable = &op_waker_vtable;
  op->task = task;
  waiter_init (&op->waiter, self);
  g_task_set_task_data (task, op, op_free);
  ws_completion_init (&op->completion, task);

  if (take_permit (self))
    {
      /* Nobody else sees the operation yet. */
      atomic_store_explicit (&op->waiter.state, WAITER_GRANTED, memory_order_relaxed);
      (void) ws_completion_complete (&op->completion, NULL);
      return;
    }

  /* Connected before the waiter can be granted (C5 in ws-completion.c):
   * a cancellable cancelled already marks it CANCELLED here. */
  ws_completion_connect (&op->completion, cancellable, on_cancelled);

  ws_lock_lock (&self->lock);
  /* Relaxed: written under the lock only. Not NEW if the cancel link's
   * handler already ran (a cancel on another thread, or before). */
  if (atomic_load_explicit (&op->waiter.state, memory_order_relaxed) == WAITER_NEW)
    {
      if (take_permit (self))
        {
          atomic_store_explicit (&op->waiter.state, WAITER_GRANTED, memory_order_relaxed);
          granted = TRUE;
        }
      else
        {
          op_waker_ref (&op->waker);
          op->waiter.waker = &op->waker;
          queue_push_locked (self, &op->waiter);
        }
    }
  ws_lock_unlock (&self->lock);

  if (granted)
    op_waker_wake (&op->waker);
}

/**
 * ws_limiter_acquire_finish:
 * @self: a #WsLimiter
 * @result: the result given to the callback
 * @error: return location for a #GError
 *
 * Finishes [method@Ws.Limiter.acquire_async].
 *
 * Returns: %TRUE if the caller now holds a permit, to give back with
 *   [method@Ws.Limiter.release]; %FALSE with `G_IO_ERROR_CANCELLED` if
 *   the wait was cancelled, and then no permit is held (one granted just
 *   before the cancellation went on to the next waiter)
 */
gboolean
ws_limiter_acquire_finish (WsLimiter     *self,
                           GAsyncResult  *result,
                           GError       **error)
{
  AcquireOp *op;

  g_return_val_if_fail (self != NULL, FALSE);
  g_return_val_if_fail (g_task_is_valid (result, NULL), FALSE);
  g_return_val_if_fail (g_async_result_is_tagged (result, ws_limiter_acquire_async), FALSE);

  op = g_task_get_task_data (G_TASK (result));
  g_return_val_if_fail (op->waiter.limiter == self, FALSE);
  g_return_val_if_fail (!op->settled, FALSE);

  op->settled = TRUE;
  if (g_task_propagate_boolean (G_TASK (result), error))
    return TRUE;

  /* Cancelled after the grant (the GTask checks its cancellable): the
   * permit goes on now. Acquire: pairs with the grant's release store. */
  if (atomic_load_explicit (&op->waiter.state, memory_order_acquire) == WAITER_GRANTED)
    give_back (self);
  return FALSE;
}

/* ---- spawning with a permit ----------------------------------------------- */

/* The task of ws_limiter_spawn (): the function runs once the task holds
 * a permit, which the destroy notify gives back however the task ends. */
typedef struct
{
  WsLimiter       *limiter;
  WsLimiterWaiter *waiter;
  gboolean         holding;
  WsTaskFunc       func;
  gpointer         data;
  GDestroyNotify   destroy;
} Gated;

static WsPoll
gated_poll (WsContext *cx,
            gpointer   user_data)
{
  Gated *g = user_data;

  if (!g->holding)
    {
      if (ws_limiter_acquire_poll (g->limiter, cx, &g->waiter) == WS_POLL_PENDING)
        return WS_POLL_PENDING;
      g->holding = TRUE;
    }
  return g->func (cx, g->data);
}

static void
gated_free (gpointer user_data)
{
  Gated *g = user_data;

  g_clear_pointer (&g->waiter, ws_limiter_waiter_free);
  /* The user's data first: what it frees is part of the capped work. */
  if (g->destroy != NULL)
    g->destroy (g->data);
  if (g->holding)
    give_back (g->limiter);
  ws_limiter_unref (g->limiter);
  g_free (g);
}

/* A refused call still frees what it was given (ws-refuse-private.h),
 * naming the caller in its critical. */
static gboolean
refuse_spawn (WsLimiter      *self,
              WsRuntime      *runtime,
              WsTaskFunc      func,
              gpointer        user_data,
              GDestroyNotify  destroy,
              const char     *strfunc)
{
  if G_LIKELY (self != NULL && WS_IS_RUNTIME (runtime) && func != NULL)
    return FALSE;

  ws_refused_free (destroy, user_data, strfunc,
                   self == NULL ? "self != NULL"
                   : !WS_IS_RUNTIME (runtime) ? "WS_IS_RUNTIME (runtime)"
                   : "func != NULL");
  return TRUE;
}

/**
 * ws_limiter_spawn: (skip)
 * @self: a #WsLimiter
 * @runtime: the runtime whose workers run the task
 * @func: (scope notified) (closure user_data) (destroy destroy): the task
 * @user_data: data for @func
 * @destroy: (nullable): frees @user_data after the last poll
 *
 * Spawns a task on the workers of @runtime that first waits for a permit
 * of @self, in the limiter's queue, and then runs @func, polled as any
 * task until it returns %WS_POLL_READY. The permit is given back when the
 * task ends: completed, failed or cancelled, while it waited or while it
 * held the permit. @destroy runs before the permit is given back.
 *
 * So at most [method@Ws.Limiter.get_max_permits] tasks spawned this way
 * (and other holders of @self) run @func at once; the others wait in the
 * limiter, costing their task and nothing else.
 *
 * Returns: (transfer full): the join handle of the task
 */
WsTask *
ws_limiter_spawn (WsLimiter      *self,
                  WsRuntime      *runtime,
                  WsTaskFunc      func,
                  gpointer        user_data,
                  GDestroyNotify  destroy)
{
  Gated *g;

  if (refuse_spawn (self, runtime, func, user_data, destroy, G_STRFUNC))
    return NULL;

  g = g_new0 (Gated, 1);
  g->limiter = ws_limiter_ref (self);
  g->func = func;
  g->data = user_data;
  g->destroy = destroy;
  return ws_runtime_spawn (runtime, gated_poll, g, gated_free);
}

/* A job of ws_limiter_spawn_blocking () on the blocking pool. It owns the
 * permit that its waiting task acquired, and gives it back from its
 * destroy notify: after its last poll, or when it is cancelled before it
 * ran. So the permit is held for as long as the job can be running, also
 * when the task that waited for it was cancelled meanwhile. */
typedef struct
{
  WsLimiter      *limiter;
  WsTaskFunc      func;
  gpointer        data;
  GDestroyNotify  destroy;
} CappedJob;

static WsPoll
capped_job_poll (WsContext *cx,
                 gpointer   user_data)
{
  CappedJob *job = user_data;

  return job->func (cx, job->data);
}

static void
capped_job_free (gpointer user_data)
{
  CappedJob *job = user_data;

  if (job->destroy != NULL)
    job->destroy (job->data);
  give_back (job->limiter);
  ws_limiter_unref (job->limiter);
  g_free (job);
}

/* The task on the workers that waits for the permit, hands it with the
 * function to a job on the blocking pool, and awaits the job. */
typedef struct
{
  WsLimiter       *limiter;
  WsLimiterWaiter *waiter;
  WsRawTask       *job;           /* its join reference, once spawned */
  WsTaskFunc       func;          /* until handed to the job */
  gpointer         data;
  GDestroyNotify   destroy;
} Capped;

static WsPoll
capped_poll (WsContext *cx,
             gpointer   user_data)
{
  Capped *c = user_data;
  WsResult r;

  if (c->job == NULL)
    {
      WsRuntimeCore *core;
      CappedJob *job;

      if (ws_limiter_acquire_poll (c->limiter, cx, &c->waiter) == WS_POLL_PENDING)
        return WS_POLL_PENDING;

      job = g_new (CappedJob, 1);
      job->limiter = ws_limiter_ref (c->limiter);
      job->func = c->func;
      job->data = g_steal_pointer (&c->data);
      job->destroy = c->destroy;
      c->func = NULL;
      c->destroy = NULL;
      /* Polled by a worker of the runtime it was spawned on. */
      core = ws_runtime_core_get_current ();
      g_assert (core != NULL);
      /* Refused after a shutdown began: then the job is already cancelled
       * and has given the permit back. */
      c->job = ws_runtime_core_spawn_blocking (core, capped_job_poll, job, capped_job_free, TRUE);
    }

  if (!ws_raw_task_try_read_output (c->job, &cx->task->waker, NULL))
    return WS_POLL_PENDING;

  /* The job's outcome becomes this task's. */
  ws_raw_task_try_read_output (c->job, NULL, &r);
  ws_raw_task_drop_join_handle (g_steal_pointer (&c->job));
  if (r.kind == WS_RESULT_CANCELLED)
    ws_context_return_error (cx, g_error_new_literal (G_IO_ERROR, G_IO_ERROR_CANCELLED,
                                                      "The blocking job was cancelled"));
  else
    cx->result = r;
  return WS_POLL_READY;
}

static void
capped_free (gpointer user_data)
{
  Capped *c = user_data;

  g_clear_pointer (&c->waiter, ws_limiter_waiter_free);
  if (c->job != NULL)
    {
      /* Cancelled while the job was queued or running: a queued job is
       * cancelled (and gives the permit back); a running one runs to its
       * end, holding the permit, and its outcome is dropped. */
      ws_raw_task_cancel (c->job);
      ws_raw_task_drop_join_handle (c->job);
    }
  if (c->destroy != NULL)
    c->destroy (c->data);
  ws_limiter_unref (c->limiter);
  g_free (c);
}

/**
 * ws_limiter_spawn_blocking: (skip)
 * @self: a #WsLimiter
 * @runtime: the runtime whose blocking pool runs the job
 * @func: (scope notified) (closure user_data) (destroy destroy): the job
 * @user_data: data for @func
 * @destroy: (nullable): frees @user_data after the last poll
 *
 * Runs @func on the blocking pool of @runtime, as
 * [method@Ws.Runtime.spawn_blocking] does, once it holds a permit of @self:
 * at most [method@Ws.Limiter.get_max_permits] such jobs run at once. Jobs
 * beyond the cap wait in the limiter, in order, as small tasks on the
 * workers; they take no blocking thread while they wait.
 *
 * The returned task ends with the outcome of the job. Cancelling it
 * while it waits for a permit ends it there; once the job has been handed
 * to the blocking pool, a job that has not started is cancelled, and one
 * that runs cannot be stopped: it keeps its permit until it returns, so
 * the cap holds. The permit is given back after @destroy has run.
 *
 * Returns: (transfer full): the join handle of the job
 */
WsTask *
ws_limiter_spawn_blocking (WsLimiter      *self,
                           WsRuntime      *runtime,
                           WsTaskFunc      func,
                           gpointer        user_data,
                           GDestroyNotify  destroy)
{
  Capped *c;

  if (refuse_spawn (self, runtime, func, user_data, destroy, G_STRFUNC))
    return NULL;

  c = g_new0 (Capped, 1);
  c->limiter = ws_limiter_ref (self);
  c->func = func;
  c->data = user_data;
  c->destroy = destroy;
  return ws_runtime_spawn (runtime, capped_poll, c, capped_free);
}
