/* ws-oneshot.c: one item from one sender to one receiving task
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * An item slot and one waker slot under a lock. What must hold: the item
 * is handed over at most once (a send closes the oneshot, and a second
 * send or a send after close is refused and frees its item); the receiver
 * is woken after every change it waits for (a send or a close), and the
 * wake happens outside the lock (ws-waker-private.h); an item nobody
 * received is freed with the last reference.
 *
 * ws_oneshot_receive_async () registers a WsAsyncWait (ws-async-wait.c) as
 * the waker: a send or close wakes it, which queues its callback on the
 * caller's context; its cancellable queues it too, and whichever comes
 * first is delivered (the others find it queued). The finish function, on
 * the caller's context, takes the item under the lock as a poll does, so
 * a cancelled receive leaves the item in the oneshot for a later one. A
 * cancelled wait stays in the waker slot until a send, a close, another
 * receive or the last unref drops it (it holds its main context until
 * then).
 */

#include "config.h"

#include "ws-oneshot.h"
#include "ws-context.h"
#include "ws-error.h"
#include "ws-core-private.h"
#include "ws-async-wait-private.h"

struct _WsOneshot
{
  gatomicrefcount  ref_count;
  GDestroyNotify   item_destroy;
  WsLock           lock;
  gpointer         item;
  gboolean         has_item;
  gboolean         closed;       /* sent, or closed without a value */
  WsWaker         *waker;
};

/**
 * WsOneshot:
 *
 * Carries one item from a sender to one receiving task. Sending never
 * waits; [method@Ws.Oneshot.poll] waits for the item, and fails with
 * %WS_ERROR_CLOSED if the oneshot was closed without one.
 *
 * On a main loop, or in a Vala `async` method, receive with
 * [method@Ws.Oneshot.receive_async]:
 *
 * ```vala
 * var item = yield shot.receive_async (promise.get_cancellable ());
 * ```
 *
 * One receiver at a time: a poll or a receive replaces the waiter that
 * was registered before it.
 */

G_DEFINE_BOXED_TYPE (WsOneshot, ws_oneshot, ws_oneshot_ref, ws_oneshot_unref)

/**
 * ws_oneshot_new:
 * @item_destroy: (nullable): frees an item nobody received
 *
 * Creates a oneshot: a channel for exactly one item, from one sender to
 * one receiver.
 *
 * Returns: (transfer full): a new oneshot
 */
WsOneshot *
ws_oneshot_new (GDestroyNotify item_destroy)
{
  WsOneshot *self = g_new0 (WsOneshot, 1);

  g_atomic_ref_count_init (&self->ref_count);
  self->item_destroy = item_destroy;
  ws_lock_init (&self->lock);
  return self;
}

/**
 * ws_oneshot_ref:
 * @self: a #WsOneshot
 *
 * Takes a reference on @self.
 *
 * Returns: (transfer full): @self
 */
WsOneshot *
ws_oneshot_ref (WsOneshot *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  g_atomic_ref_count_inc (&self->ref_count);
  return self;
}

/**
 * ws_oneshot_unref:
 * @self: (transfer full): a #WsOneshot
 *
 * Releases a reference.
 */
void
ws_oneshot_unref (WsOneshot *self)
{
  g_return_if_fail (self != NULL);

  if (!g_atomic_ref_count_dec (&self->ref_count))
    return;

  if (self->has_item && self->item_destroy != NULL)
    self->item_destroy (self->item);
  g_clear_pointer (&self->waker, ws_waker_unref);
  ws_lock_clear (&self->lock);
  g_free (self);
}

/**
 * ws_oneshot_send:
 * @self: a #WsOneshot
 * @item: (transfer full): the item
 *
 * Sends @item and wakes the receiver. A second send, or a send after
 * close, is refused: @item is then freed with the item destroy notify.
 *
 * Returns: %TRUE if @item was sent
 */
gboolean
ws_oneshot_send (WsOneshot *self,
                 gpointer   item)
{
  WsWaker *waker = NULL;
  gboolean sent = FALSE;

  g_return_val_if_fail (self != NULL, FALSE);

  ws_lock_lock (&self->lock);
  if (!self->closed)
    {
      self->item = item;
      self->has_item = TRUE;
      self->closed = TRUE;
      waker = g_steal_pointer (&self->waker);
      sent = TRUE;
    }
  ws_lock_unlock (&self->lock);

  if (!sent && self->item_destroy != NULL)
    self->item_destroy (item);
  ws_waker_take_and_wake (waker);
  return sent;
}

/**
 * ws_oneshot_poll:
 * @self: a #WsOneshot
 * @context: the context of the receiving task
 * @item: (out) (transfer full) (nullable): the item
 * @error: return location for a #GError
 *
 * Waits for the item. Consumes one unit of the cooperative budget.
 *
 * Returns: %WS_POLL_READY with the item, or with %WS_ERROR_CLOSED if it was
 *   closed without one (or the item was already received)
 */
WsPoll
ws_oneshot_poll (WsOneshot  *self,
                 WsContext  *context,
                 gpointer   *item,
                 GError    **error)
{
  WsWaker *old = NULL;
  WsPoll ret = WS_POLL_READY;
  gboolean closed_empty = FALSE;

  g_return_val_if_fail (self != NULL, WS_POLL_READY);
  g_return_val_if_fail (context != NULL && context->task != NULL, WS_POLL_READY);
  g_return_val_if_fail (item != NULL, WS_POLL_READY);

  *item = NULL;
  if (!ws_context_poll_proceed (context))
    return WS_POLL_PENDING;

  ws_lock_lock (&self->lock);
  if (self->has_item)
    {
      *item = self->item;
      self->item = NULL;
      self->has_item = FALSE;
    }
  else if (self->closed)
    closed_empty = TRUE;
  else
    {
      old = ws_waker_slot_replace (&self->waker, context);
      ret = WS_POLL_PENDING;
    }
  ws_lock_unlock (&self->lock);

  if (old != NULL)
    ws_waker_unref (old);
  if (closed_empty)
    g_set_error_literal (error, WS_ERROR, WS_ERROR_CLOSED,
                         "The oneshot was closed without a value");
  return ret;
}

/**
 * ws_oneshot_close:
 * @self: a #WsOneshot
 *
 * Closes the oneshot without a value: the receiver gets %WS_ERROR_CLOSED.
 * Does nothing after a send.
 */
void
ws_oneshot_close (WsOneshot *self)
{
  WsWaker *waker;

  g_return_if_fail (self != NULL);

  ws_lock_lock (&self->lock);
  self->closed = TRUE;
  waker = g_steal_pointer (&self->waker);
  ws_lock_unlock (&self->lock);

  ws_waker_take_and_wake (waker);
}

/**
 * ws_oneshot_receive_async:
 * @self: a #WsOneshot
 * @cancellable: (nullable): stops the wait (the item stays in @self)
 * @callback: (scope async) (closure user_data): called once the item has
 *   come, the oneshot was closed, or @cancellable was cancelled
 * @user_data: data for @callback
 *
 * Waits for the item without blocking. @callback runs exactly once, on the
 * thread-default main context of the caller, never from inside this call;
 * call [method@Ws.Oneshot.receive_finish] from it. In a task spawned with
 * [method@Ws.Runtime.spawn_promise] that context is the worker's, so a
 * Vala coroutine resumes there.
 */
void
ws_oneshot_receive_async (WsOneshot           *self,
                          GCancellable        *cancellable,
                          GAsyncReadyCallback  callback,
                          gpointer             user_data)
{
  WsAsyncWait *wait;
  WsWaker *waker;
  WsWaker *old = NULL;
  gboolean ready;

  g_return_if_fail (self != NULL);
  g_return_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable));

  wait = ws_async_wait_new (NULL, ws_oneshot_receive_async, cancellable, callback, user_data);
  waker = ws_async_wait_get_waker (wait);

  ws_lock_lock (&self->lock);
  ready = self->has_item || self->closed;
  if (!ready)
    {
      /* The slot's reference, dropped by whoever takes it out. */
      waker->vtable->ref (waker);
      old = self->waker;
      self->waker = waker;
    }
  ws_lock_unlock (&self->lock);

  if (old != NULL)
    ws_waker_unref (old);
  /* Queued for the caller's context: never delivered from here. */
  if (ready)
    ws_async_wait_complete (wait);
  g_object_unref (wait);
}

/**
 * ws_oneshot_receive_finish:
 * @self: a #WsOneshot
 * @result: the result given to the callback
 * @error: return location for a #GError
 *
 * Takes the item that [method@Ws.Oneshot.receive_async] waited for.
 *
 * Returns: (transfer full) (nullable): the item; %NULL with
 *   %WS_ERROR_CLOSED if the oneshot was closed without one (or the item
 *   was already received), with %G_IO_ERROR_CANCELLED if the wait was
 *   cancelled first
 */
gpointer
ws_oneshot_receive_finish (WsOneshot     *self,
                           GAsyncResult  *result,
                           GError       **error)
{
  gpointer item = NULL;
  gboolean closed_empty = FALSE;

  g_return_val_if_fail (self != NULL, NULL);
  g_return_val_if_fail (ws_async_wait_is_valid (result, NULL, ws_oneshot_receive_async), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  /* Before touching @self: a wait dropped by the last unref outlives it. */
  if (ws_async_wait_propagate_error (WS_ASYNC_WAIT (result), "the oneshot's item", error))
    return NULL;

  ws_lock_lock (&self->lock);
  if (self->has_item)
    {
      item = g_steal_pointer (&self->item);
      self->has_item = FALSE;
    }
  else
    {
      /* Woken only by a send or a close: closed now. */
      g_warn_if_fail (self->closed);
      closed_empty = TRUE;
    }
  ws_lock_unlock (&self->lock);

  if (closed_empty)
    g_set_error_literal (error, WS_ERROR, WS_ERROR_CLOSED,
                         "The oneshot was closed without a value");
  return item;
}
