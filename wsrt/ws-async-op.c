/* ws-async-op.c: await any GIO _async/_finish pair from a task
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The _async call is made by the task, on the thread that polls it, so GIO
 * completes it on that thread's context: the worker's own GMainContext
 * (doc/architecture.md, "Rules: main contexts"), dispatched while the
 * worker sleeps and every event-interval ticks while it is busy. No
 * thread blocks.
 *
 * The hand-over of the result. GIO calls the callback from inside
 * g_task_return_now () (or its own source's dispatch), and goes on
 * writing to the GTask after the callback returns (its "completed" flag
 * and notification). A task woken from the callback could be polled on
 * another worker and call _finish () on that GTask at that very moment.
 * So the callback only keeps the result aside and queues the op on the
 * delivery source of the context it runs on (ws-delivery.c); that
 * dispatch, which comes after GIO's has returned, publishes the result
 * and wakes the task. Until then a poll sees no result.
 *
 * The cancel goes to the call's context. GIO watches the cancellable
 * with a GCancellableSource attached to the context the call was started
 * on, and GLib 2.74 leaks such a source when its last reference goes on
 * that context's thread while another thread is inside
 * g_cancellable_cancel () (ws-cancel-link-private.h). So the operation's
 * cancellable, the one GIO sees, is cancelled only on the thread that
 * iterates that context, never by the thread that cancels the task, the
 * operation or drops the task's reference: each of those is forwarded
 * (forward_cancel) as an item on the context's delivery source
 * (ws-delivery.c), which cancels it in a dispatch of that context. The
 * decision is taken under the operation's lock:
 *
 *  - not started: no GIO call watches the cancellable yet (the call is
 *    made after ws_async_op_start () returned its user data), and start
 *    waits for the lock: it is cancelled at once, on the calling thread;
 *  - in flight (started, result not yet published): the cancel item is
 *    queued, once. GIO's callback holds a reference on the operation
 *    until the result is published, under the same lock, so the
 *    operation is alive when the item takes its own. The item holds the
 *    context and a count of completions owed to it (ws-owed.c), acquired
 *    before the lock is let go and so before the delivery can release
 *    the call's own: a runtime thread iterates the context until the
 *    item is dispatched, and the item never strands the context;
 *  - completed: there is no call left to cancel; nothing is done.
 *
 * The task's cancel reaches the operation through a "cancelled" handler
 * whose data is the operation without a reference (a reference would
 * keep the operation alive until it is disconnected, at its own last
 * unref): the last unref disconnects it with g_cancellable_disconnect (),
 * which waits for a handler running on another thread, so the handler
 * never sees a freed operation.
 */

#include "config.h"

#include <stdatomic.h>

#include "ws-async-op.h"
#include "ws-async-op-private.h"
#include "ws-context.h"
#include "ws-core-private.h"
#include "ws-context-private.h"
#include "ws-delivery-private.h"

struct _WsAsyncOp
{
  _Atomic gint     ref_count;
  GCancellable    *cancellable;
  WsLock           lock;          /* guards what follows */
  WsWaker         *waker;
  GAsyncResult    *result;        /* published by deliver_result () */
  gboolean         started;
  /* Between GIO's callback and the dispatch that publishes the result:
   * the result, the context it came on (a reference) and the item queued
   * there, which holds the callback's reference on us. */
  GAsyncResult    *pending_result;
  GMainContext    *callback_context;
  WsDeliveryItem   item;
  /* The count of the context GIO completes the call on, held from start
   * until the result is delivered: a runtime thread iterates that context
   * until then (ws-owed.c). Written by start and by the delivery, which
   * the call's own ordering keeps apart. */
  WsOwed          *owed;
  /* The task's cancellable (ws_context_get_cancellable), linked at start:
   * cancelling the task cancels the call. Written once, by start. */
  GCancellable    *task_cancellable;
  gulong           task_link;
  /* The context the call was started on (a reference), from start until
   * the result is published: the call is in flight while it is set.
   * Under the lock. */
  GMainContext    *start_context;
  /* Broadcast when the result is published, for a fiber that waits for
   * it in place (ws_async_op_wait_published). */
  WsCond           published;
  WsDelivery      *start_delivery;   /* its delivery source, found by start */
  /* The forwarded cancel (see the top): queued at most once, under the
   * lock; its context and owed count are the item's until dispatched. */
  gboolean         cancel_queued;
  WsDeliveryItem   cancel_item;
  GMainContext    *cancel_context;
  WsOwed          *cancel_owed;
};

static const WsDeliveryItemVTable result_item_vtable;
static const WsDeliveryItemVTable cancel_item_vtable;

/**
 * WsAsyncOp:
 *
 * Awaits one GIO `_async()`/`_finish()` pair inside a task, without
 * blocking a thread.
 *
 * ```c
 * static WsPoll
 * load (WsContext *cx, gpointer user_data)
 * {
 *   Load *s = user_data;
 *   g_autoptr(GError) error = NULL;
 *
 *   if (s->op == NULL)
 *     {
 *       s->op = ws_async_op_new ();
 *       g_file_load_contents_async (s->file,
 *                                   ws_async_op_get_cancellable (s->op),
 *                                   ws_async_op_callback,
 *                                   ws_async_op_start (s->op, cx));
 *     }
 *   if (ws_async_op_poll (s->op, cx) == WS_POLL_PENDING)
 *     return WS_POLL_PENDING;
 *
 *   if (!g_file_load_contents_finish (s->file,
 *                                     ws_async_op_get_result (s->op),
 *                                     &s->contents, &s->length, NULL,
 *                                     &error))
 *     {
 *       ws_context_return_error (cx, g_steal_pointer (&error));
 *       return WS_POLL_READY;
 *     }
 *   ...
 * }
 * ```
 *
 * Pass [method@Ws.AsyncOp.get_cancellable] to the `_async()` call: it is
 * cancelled when the task is cancelled ([method@Ws.AsyncOp.start] links
 * it to the task's own, [method@Ws.Context.get_cancellable]), when the
 * task frees its state while the call is in flight (the last unref of the
 * operation), and by [method@Ws.AsyncOp.cancel]. The operation stays
 * alive until GIO calls back.
 */

G_DEFINE_BOXED_TYPE (WsAsyncOp, ws_async_op, ws_async_op_ref, ws_async_op_unref)

/**
 * ws_async_op_new:
 *
 * Creates an awaitable for one GIO `_async()`/`_finish()` pair: start
 * the call inside a task with [method@Ws.AsyncOp.start], passing
 * [func@Ws.AsyncOp.callback] as its callback, then poll it with
 * [method@Ws.AsyncOp.poll].
 *
 * Returns: (transfer full): a new operation, not started
 */
WsAsyncOp *
ws_async_op_new (void)
{
  WsAsyncOp *self = g_new0 (WsAsyncOp, 1);

  atomic_init (&self->ref_count, 1);
  self->cancellable = g_cancellable_new ();
  ws_lock_init (&self->lock);
  ws_cond_init (&self->published);
  self->item.vtable = &result_item_vtable;
  self->cancel_item.vtable = &cancel_item_vtable;
  return self;
}

/**
 * ws_async_op_ref:
 * @self: a #WsAsyncOp
 *
 * Takes a reference on @self.
 *
 * Returns: (transfer full): @self
 */
WsAsyncOp *
ws_async_op_ref (WsAsyncOp *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  atomic_fetch_add_explicit (&self->ref_count, 1, memory_order_relaxed);
  return self;
}

/**
 * ws_async_op_unref:
 * @self: (transfer full): a #WsAsyncOp
 *
 * Releases a reference. While the GIO call is in flight, GIO's callback
 * holds one; dropping the task's reference then cancels the call.
 */
static void forward_cancel (WsAsyncOp *self);

static void
op_free (WsAsyncOp *self)
{
  if (self->task_cancellable != NULL)
    {
      /* Waits for a cancel of the task that is running the link's handler
       * on another thread (the handler holds no reference, see the top);
       * it never runs ours. */
      g_cancellable_disconnect (self->task_cancellable, self->task_link);
      g_clear_object (&self->task_cancellable);
    }
  g_clear_pointer (&self->waker, ws_waker_unref);
  g_clear_object (&self->result);
  g_clear_object (&self->pending_result);
  /* Started, but GIO never called back (the call was never made). */
  g_clear_pointer (&self->owed, ws_owed_release);
  g_clear_pointer (&self->start_context, g_main_context_unref);
  g_clear_object (&self->cancellable);
  ws_lock_clear (&self->lock);
  ws_cond_clear (&self->published);
  g_free (self);
}

/* Drops a reference that is not the task's (GIO's callback, a queued
 * item, a guard): no cancel. */
static void
op_release (WsAsyncOp *self)
{
  /* AcqRel: the usual pairing before a free. */
  if (atomic_fetch_sub_explicit (&self->ref_count, 1, memory_order_acq_rel) == 1)
    op_free (self);
}

void
ws_async_op_unref (WsAsyncOp *self)
{
  gboolean in_flight;
  gint prev;

  g_return_if_fail (self != NULL);

  /* If the one reference left after ours will be GIO's callback data,
   * nobody waits for the result any more: cancel the call. Look before
   * dropping our reference (after it, another thread may publish the
   * result and drop the last one); while the call is in flight, a guard
   * reference keeps the operation for the forward. */
  ws_lock_lock (&self->lock);
  in_flight = self->start_context != NULL;
  if (in_flight)
    atomic_fetch_add_explicit (&self->ref_count, 1, memory_order_relaxed);
  ws_lock_unlock (&self->lock);

  /* C11, not gatomicrefcount (CONTRIBUTING.md, "Reference counts"): the
   * count this drop replaced says whether GIO's is the one left. AcqRel:
   * the usual pairing before a free. */
  prev = atomic_fetch_sub_explicit (&self->ref_count, 1, memory_order_acq_rel);
  if (in_flight)
    {
      /* Left: the guard and GIO's, and nobody else's. */
      if (prev == 3)
        forward_cancel (self);
      op_release (self);
    }
  else if (prev == 1)
    op_free (self);
}

/**
 * ws_async_op_get_cancellable:
 * @self: a #WsAsyncOp
 *
 * Gets the cancellable that [method@Ws.AsyncOp.cancel] cancels; pass it
 * to the GIO `_async()` call.
 *
 * Returns: (transfer none): the cancellable to pass to the `_async()` call
 */
GCancellable *
ws_async_op_get_cancellable (WsAsyncOp *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return self->cancellable;
}

/* Cancels the call on the thread that iterates its context (see the
 * top). The caller keeps @self alive. */
static void
forward_cancel (WsAsyncOp *self)
{
  WsDelivery *queued_on = NULL;

  ws_lock_lock (&self->lock);
  if (!self->started)
    /* No call watches it yet, and start waits for our lock. */
    g_cancellable_cancel (self->cancellable);
  else if (self->start_context != NULL && !self->cancel_queued)
    {
      /* In flight: GIO's reference keeps us alive for this one. */
      self->cancel_queued = TRUE;
      atomic_fetch_add_explicit (&self->ref_count, 1, memory_order_relaxed);
      self->cancel_context = g_main_context_ref (self->start_context);
      /* The call's own count is held until the result is published,
       * which the lock keeps after this. */
      self->cancel_owed = ws_owed_acquire_more (self->owed);
      queued_on = self->start_delivery;
    }
  ws_lock_unlock (&self->lock);

  /* The item, not yet pushed, holds the context, and with it the
   * delivery source. */
  if (queued_on != NULL)
    ws_delivery_push (queued_on, &self->cancel_item);
}

/* On the context the call was started on. */
static void
deliver_cancel (WsDeliveryItem *item)
{
  WsAsyncOp *self = (WsAsyncOp *) ((guint8 *) item - G_STRUCT_OFFSET (WsAsyncOp, cancel_item));
  GMainContext *context = g_steal_pointer (&self->cancel_context);

  g_cancellable_cancel (self->cancellable);
  g_clear_pointer (&self->cancel_owed, ws_owed_release);
  op_release (self);             /* the item's */
  g_main_context_unref (context);
}

/* The context went away with the item queued, and with it GIO's sources
 * there: nothing is left to cancel. */
static void
discard_cancel (WsDeliveryItem *item)
{
  WsAsyncOp *self = (WsAsyncOp *) ((guint8 *) item - G_STRUCT_OFFSET (WsAsyncOp, cancel_item));
  GMainContext *context = g_steal_pointer (&self->cancel_context);

  g_clear_pointer (&self->cancel_owed, ws_owed_release);
  op_release (self);
  g_main_context_unref (context);
}

static const WsDeliveryItemVTable cancel_item_vtable = {
  deliver_cancel,
  discard_cancel,
};

/* The task was cancelled: cancel the call. @data is the operation,
 * without a reference (see the top). */
static void
cancel_linked (GCancellable *task_cancellable,
               gpointer      data)
{
  forward_cancel (data);
}

/**
 * ws_async_op_start:
 * @self: a #WsAsyncOp
 * @context: the context of the task making the call
 *
 * Registers the task's waker and returns the `user_data` to pass, with
 * ws_async_op_callback(), to the `_async()` call. Call it once. It links
 * the operation's cancellable to the task's
 * ([method@Ws.Context.get_cancellable]): cancelling the task cancels the
 * call.
 *
 * Returns: (transfer full): callback data that holds a reference to @self,
 *   released by ws_async_op_callback()
 */
gpointer
ws_async_op_start (WsAsyncOp *self,
                   WsContext *context)
{
  GCancellable *task_cancellable;
  GMainContext *caller;

  g_return_val_if_fail (self != NULL, NULL);
  ws_context_return_val_if_not_in_poll (context, NULL);

  /* Cancelling the task cancels the call. The handler holds no
   * reference (see the top); connect runs it at once, here, if the task
   * is cancelled already, which cancels before the call is made. */
  task_cancellable = ws_context_get_cancellable (context);
  if (self->task_cancellable == NULL)
    {
      self->task_cancellable = g_object_ref (task_cancellable);
      self->task_link = g_cancellable_connect (task_cancellable, G_CALLBACK (cancel_linked),
                                               self, NULL);
    }

  /* GIO completes the call on the thread-default context of this
   * thread. */
  caller = g_main_context_get_thread_default ();
  if (caller == NULL)
    caller = g_main_context_default ();
  if (self->owed == NULL)
    self->owed = ws_owed_acquire (caller);

  ws_lock_lock (&self->lock);
  g_warn_if_fail (!self->started);
  if (!self->started && self->start_context == NULL && self->result == NULL)
    {
      /* Found here, on the context's own thread (see forward_cancel). */
      self->start_context = g_main_context_ref (caller);
      self->start_delivery = ws_delivery_get (caller);
    }
  self->started = TRUE;
  if (self->waker == NULL)
    self->waker = ws_context_get_waker (context);
  ws_lock_unlock (&self->lock);

  return ws_async_op_ref (self);
}

/**
 * ws_async_op_callback:
 * @source_object: (nullable): the source object of the call
 * @result: the result
 * @user_data: what ws_async_op_start() returned
 *
 * The #GAsyncReadyCallback to pass to the `_async()` call. It keeps
 * @result for ws_async_op_get_result() and wakes the task.
 *
 * Called without a result, it is refused and leaves the operation as it
 * was, holding the reference in @user_data: that is a leak at worst,
 * where releasing it would free the operation under the real callback
 * if GIO still calls it.
 */
void
ws_async_op_callback (GObject      *source_object,
                      GAsyncResult *result,
                      gpointer      user_data)
{
  WsAsyncOp *self = user_data;
  GSource *current = g_main_current_source ();
  GMainContext *context;

  g_return_if_fail (self != NULL);
  g_return_if_fail (G_IS_ASYNC_RESULT (result));

  /* The context GIO is dispatching now (see the top of this file). */
  context = current != NULL ? g_source_get_context (current) : NULL;
  if (context == NULL)
    context = g_main_context_get_thread_default ();
  if (context == NULL)
    context = g_main_context_default ();

  /* Only this thread touches these until the item is delivered; the
   * delivery queue's lock publishes them to the dispatch. */
  self->pending_result = g_object_ref (result);
  self->callback_context = g_main_context_ref (context);
  ws_delivery_push (ws_delivery_get (context), &self->item);
}

/* On the callback's context, after GIO's dispatch has returned. */
static void
deliver_result (WsDeliveryItem *item)
{
  WsAsyncOp *self = (WsAsyncOp *) ((guint8 *) item - G_STRUCT_OFFSET (WsAsyncOp, item));
  GMainContext *context = g_steal_pointer (&self->callback_context);
  WsWaker *waker;

  GMainContext *started_on;

  /* Published with the end of the flight (see the top). */
  ws_lock_lock (&self->lock);
  self->result = g_steal_pointer (&self->pending_result);
  waker = g_steal_pointer (&self->waker);
  started_on = g_steal_pointer (&self->start_context);
  ws_cond_broadcast (&self->published);
  ws_lock_unlock (&self->lock);

  ws_waker_take_and_wake (waker);
  g_clear_pointer (&self->owed, ws_owed_release);
  op_release (self);             /* the callback's */
  g_main_context_unref (context);
  g_clear_pointer (&started_on, g_main_context_unref);
}

/* The context went away with the item queued: the task is never woken
 * by it, and the callback's reference goes. */
static void
discard_result (WsDeliveryItem *item)
{
  WsAsyncOp *self = (WsAsyncOp *) ((guint8 *) item - G_STRUCT_OFFSET (WsAsyncOp, item));
  GMainContext *context = g_steal_pointer (&self->callback_context);
  GMainContext *started_on;

  ws_lock_lock (&self->lock);
  started_on = g_steal_pointer (&self->start_context);
  ws_lock_unlock (&self->lock);

  g_clear_pointer (&self->owed, ws_owed_release);
  op_release (self);
  g_main_context_unref (context);
  g_clear_pointer (&started_on, g_main_context_unref);
}

static const WsDeliveryItemVTable result_item_vtable = {
  deliver_result,
  discard_result,
};

/**
 * ws_async_op_poll:
 * @self: a started #WsAsyncOp
 * @context: the context of the task that awaits @self
 *
 * Awaits the callback. Consumes one unit of the cooperative budget.
 *
 * Returns: %WS_POLL_READY once the result is there
 */
WsPoll
ws_async_op_poll (WsAsyncOp *self,
                  WsContext *context)
{
  WsWaker *old = NULL;
  WsPoll ret;

  g_return_val_if_fail (self != NULL, WS_POLL_READY);
  ws_context_return_val_if_not_in_poll (context, WS_POLL_READY);
  ws_context_note_await (context, G_STRFUNC);

  if (!ws_context_poll_proceed (context))
    return WS_POLL_PENDING;

  ws_lock_lock (&self->lock);
  if (self->result != NULL)
    ret = WS_POLL_READY;
  else
    {
      /* The task may be polled on another worker now: keep its waker
       * current. */
      old = ws_waker_slot_replace (&self->waker, context);
      ret = WS_POLL_PENDING;
    }
  ws_lock_unlock (&self->lock);

  if (old != NULL)
    ws_waker_unref (old);
  return ret;
}

/**
 * ws_async_op_get_result:
 * @self: a #WsAsyncOp that is ready
 *
 * Gets the `GAsyncResult` of the operation, to pass to its `_finish()`
 * function once [method@Ws.AsyncOp.poll] returned %WS_POLL_READY.
 *
 * Returns: (transfer none) (nullable): the result to pass to `_finish()`,
 *   or %NULL before the callback
 */
GAsyncResult *
ws_async_op_get_result (WsAsyncOp *self)
{
  GAsyncResult *result;

  g_return_val_if_fail (self != NULL, NULL);

  ws_lock_lock (&self->lock);
  result = self->result;
  ws_lock_unlock (&self->lock);
  return result;
}

/**
 * ws_async_op_cancel:
 * @self: a #WsAsyncOp
 *
 * Cancels the GIO call; its `_finish()` then fails with
 * `G_IO_ERROR_CANCELLED`, unless the call completed first. From any
 * thread: the operation's cancellable is cancelled on the thread that
 * iterates the context the call was started on (at once if it was not
 * started yet), not by the caller, so it may read as not cancelled for
 * a moment after this returns. Once the call has completed there is
 * nothing to cancel and this does nothing.
 */
void
ws_async_op_cancel (WsAsyncOp *self)
{
  g_return_if_fail (self != NULL);

  forward_cancel (self);
}

/* For a cancelled fiber's GIO await (ws-fiber-gio.c): blocks until the
 * result is published, or at once if the call was never started. The
 * result is published by a dispatch of the context the call was started
 * on: this thread runs it if that context is its own thread-default one
 * (a local fiber's main loop, a worker's own context), and otherwise the
 * thread that iterates it does, while this one waits. No other context
 * is touched. The wait looks again every millisecond: a dispatch of its
 * own context that this thread could not run (another iteration of it
 * was going on) is run at the next look. */
void
ws_async_op_wait_published (WsAsyncOp *self)
{
  g_autoptr(GMainContext) own = g_main_context_ref_thread_default ();
  GMainContext *call;

  g_return_if_fail (self != NULL);

  ws_lock_lock (&self->lock);
  call = self->start_context != NULL ? g_main_context_ref (self->start_context) : NULL;
  while (self->result == NULL && self->start_context != NULL)
    {
      ws_lock_unlock (&self->lock);
      if (call == own && g_main_context_acquire (call))
        {
          g_main_context_iteration (call, FALSE);
          g_main_context_release (call);
        }
      ws_lock_lock (&self->lock);
      if (self->result == NULL && self->start_context != NULL)
        ws_cond_wait_until (&self->published, &self->lock,
                            g_get_monotonic_time () + G_TIME_SPAN_MILLISECOND);
    }
  ws_lock_unlock (&self->lock);
  g_clear_pointer (&call, g_main_context_unref);
}
