/* ws-channel.c: a bounded multi-producer, multi-consumer async channel
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A ring of `capacity` items under a lock, with two waiter lists
 * (WsWakerList, ws-waker-private.h). A send into a full channel and a
 * receive from an empty one register the task's waker and return
 * PENDING. A change wakes every waiter of the other side, outside the
 * lock: a woken waiter that finds the slot taken registers again, and a
 * waiter whose task was cancelled cannot sit on a wake that another
 * waiter needed.
 */

#include "config.h"

#include <gio/gio.h>

#include "ws-channel.h"
#include "ws-context.h"
#include "ws-error.h"
#include "ws-lock-private.h"
#include "ws-waker-private.h"
#include "ws-context-budget-private.h"
#include "ws-worker-private.h"

struct _WsChannel
{
  gatomicrefcount  ref_count;
  GDestroyNotify   item_destroy;
  WsLock           lock;          /* guards what follows */
  gpointer        *ring;
  guint            capacity;
  guint            head;
  guint            len;
  gboolean         closed;
  WsWakerList      send_waiters;
  WsWakerList      recv_waiters;
};

/**
 * WsChannel:
 *
 * A bounded channel that any number of tasks (or threads) send pointers
 * into and receive them from, in order.
 *
 * In a task, [method@Ws.Channel.poll_send] waits while the channel is full
 * (back-pressure) and [method@Ws.Channel.poll_receive] waits while it is
 * empty. Outside tasks, [method@Ws.Channel.try_send] and
 * [method@Ws.Channel.try_receive] never wait.
 *
 * [method@Ws.Channel.close] (from either side) wakes every waiter: sends
 * then fail with %WS_ERROR_CLOSED, and receives drain what is left before
 * they fail the same way. Items still inside when the last reference goes
 * are freed with the item destroy notify.
 *
 * Each poll consumes one unit of the cooperative budget, so a task that
 * receives from a channel that is always ready still yields now and then.
 */

G_DEFINE_BOXED_TYPE (WsChannel, ws_channel, ws_channel_ref, ws_channel_unref)

/**
 * ws_channel_new:
 * @capacity: how many items fit; at least 1
 * @item_destroy: (nullable): frees items left inside at the end
 *
 * Creates a bounded multi-producer, multi-consumer channel that holds
 * at most @capacity items.
 *
 * Returns: (transfer full): a new channel
 */
WsChannel *
ws_channel_new (guint          capacity,
                GDestroyNotify item_destroy)
{
  WsChannel *self;

  g_return_val_if_fail (capacity > 0, NULL);

  self = g_new0 (WsChannel, 1);
  g_atomic_ref_count_init (&self->ref_count);
  self->item_destroy = item_destroy;
  ws_lock_init (&self->lock);
  self->capacity = capacity;
  self->ring = g_new0 (gpointer, capacity);
  ws_waker_list_init (&self->send_waiters);
  ws_waker_list_init (&self->recv_waiters);
  return self;
}

/**
 * ws_channel_ref:
 * @self: a #WsChannel
 *
 * Takes a reference on @self.
 *
 * Returns: (transfer full): @self
 */
WsChannel *
ws_channel_ref (WsChannel *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  g_atomic_ref_count_inc (&self->ref_count);
  return self;
}

/**
 * ws_channel_unref:
 * @self: (transfer full): a #WsChannel
 *
 * Releases a reference. The last one frees the items left inside.
 */
void
ws_channel_unref (WsChannel *self)
{
  g_return_if_fail (self != NULL);

  if (!g_atomic_ref_count_dec (&self->ref_count))
    return;

  for (guint i = 0; i < self->len; i++)
    if (self->item_destroy != NULL)
      self->item_destroy (self->ring[(self->head + i) % self->capacity]);
  ws_waker_list_clear (&self->send_waiters);
  ws_waker_list_clear (&self->recv_waiters);
  g_free (self->ring);
  ws_lock_clear (&self->lock);
  g_free (self);
}

static void
set_closed_error (GError **error)
{
  g_set_error_literal (error, WS_ERROR, WS_ERROR_CLOSED, "The channel is closed");
}

/* Returns 1 if sent, 0 if full, -1 if closed. */
static gint
send_locked (WsChannel *self,
             gpointer   item)
{
  if (self->closed)
    return -1;
  if (self->len == self->capacity)
    return 0;
  self->ring[(self->head + self->len) % self->capacity] = item;
  self->len++;
  return 1;
}

static gint
receive_locked (WsChannel *self,
                gpointer  *item)
{
  if (self->len > 0)
    {
      *item = self->ring[self->head];
      self->ring[self->head] = NULL;
      self->head = (self->head + 1) % self->capacity;
      self->len--;
      return 1;
    }
  return self->closed ? -1 : 0;
}

/* One send or receive: returns 1 on success, 0 when it would wait (and
 * then registers @cx's waker, if any), -1 when closed. Wakes the other
 * side outside the lock. */
static gint
channel_send (WsChannel *self,
              WsContext *cx,
              gpointer   item)
{
  WsWakerList to_wake = WS_WAKER_LIST_INIT;
  gint r;

  ws_lock_lock (&self->lock);
  r = send_locked (self, item);
  if (r == 1)
    to_wake = ws_waker_list_take (&self->recv_waiters);
  else if (r == 0 && cx != NULL)
    ws_waker_list_add (&self->send_waiters, &cx->task->waker);
  ws_lock_unlock (&self->lock);

  ws_waker_list_wake_all (&to_wake);
  return r;
}

static gint
channel_receive (WsChannel *self,
                 WsContext *cx,
                 gpointer  *item)
{
  WsWakerList to_wake = WS_WAKER_LIST_INIT;
  gint r;

  *item = NULL;
  ws_lock_lock (&self->lock);
  r = receive_locked (self, item);
  if (r == 1)
    to_wake = ws_waker_list_take (&self->send_waiters);
  else if (r == 0 && cx != NULL)
    ws_waker_list_add (&self->recv_waiters, &cx->task->waker);
  ws_lock_unlock (&self->lock);

  ws_waker_list_wake_all (&to_wake);
  return r;
}

/**
 * ws_channel_poll_send:
 * @self: a #WsChannel
 * @context: the context of the sending task
 * @item: the item
 * @error: return location for a #GError
 *
 * Sends @item, waiting while the channel is full. When this returns
 * %WS_POLL_READY without an error the channel has taken @item. When it
 * returns %WS_POLL_PENDING the item was not taken: poll again with the same
 * item when woken. When the channel is closed it returns %WS_POLL_READY with
 * %WS_ERROR_CLOSED and the item is still the caller's.
 *
 * Returns: %WS_POLL_READY when done (check @error), %WS_POLL_PENDING
 */
WsPoll
ws_channel_poll_send (WsChannel  *self,
                      WsContext  *context,
                      gpointer    item,
                      GError    **error)
{
  gint r;

  g_return_val_if_fail (self != NULL, WS_POLL_READY);
  g_return_val_if_fail (context != NULL && context->task != NULL, WS_POLL_READY);

  if (!ws_context_poll_proceed (context))
    return WS_POLL_PENDING;

  r = channel_send (self, context, item);
  if (r < 0)
    set_closed_error (error);
  return r == 0 ? WS_POLL_PENDING : WS_POLL_READY;
}

/**
 * ws_channel_poll_receive:
 * @self: a #WsChannel
 * @context: the context of the receiving task
 * @item: (out) (transfer full) (nullable): the item received
 * @error: return location for a #GError
 *
 * Receives the oldest item, waiting while the channel is empty. Returns
 * %WS_POLL_READY with an item, or with %WS_ERROR_CLOSED once the channel is
 * closed and empty.
 *
 * Returns: %WS_POLL_READY when done (check @error), %WS_POLL_PENDING
 */
WsPoll
ws_channel_poll_receive (WsChannel  *self,
                         WsContext  *context,
                         gpointer   *item,
                         GError    **error)
{
  gint r;

  g_return_val_if_fail (self != NULL, WS_POLL_READY);
  g_return_val_if_fail (context != NULL && context->task != NULL, WS_POLL_READY);
  g_return_val_if_fail (item != NULL, WS_POLL_READY);

  *item = NULL;
  if (!ws_context_poll_proceed (context))
    return WS_POLL_PENDING;

  r = channel_receive (self, context, item);
  if (r < 0)
    set_closed_error (error);
  return r == 0 ? WS_POLL_PENDING : WS_POLL_READY;
}

/**
 * ws_channel_try_send:
 * @self: a #WsChannel
 * @item: the item
 * @error: return location for a #GError
 *
 * Sends without waiting, from any thread. Fails with %G_IO_ERROR_WOULD_BLOCK
 * when the channel is full and %WS_ERROR_CLOSED when it is closed; the item
 * then stays the caller's.
 *
 * Returns: %TRUE if the channel took @item
 */
gboolean
ws_channel_try_send (WsChannel  *self,
                     gpointer    item,
                     GError    **error)
{
  gint r;

  g_return_val_if_fail (self != NULL, FALSE);

  r = channel_send (self, NULL, item);
  if (r < 0)
    set_closed_error (error);
  else if (r == 0)
    g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK, "The channel is full");
  return r == 1;
}

/**
 * ws_channel_try_receive:
 * @self: a #WsChannel
 * @item: (out) (transfer full) (nullable): the item received
 * @error: return location for a #GError
 *
 * Receives without waiting, from any thread. Fails with
 * %G_IO_ERROR_WOULD_BLOCK when the channel is empty and %WS_ERROR_CLOSED
 * when it is closed and empty.
 *
 * Returns: %TRUE if an item was received
 */
gboolean
ws_channel_try_receive (WsChannel  *self,
                        gpointer   *item,
                        GError    **error)
{
  gint r;

  g_return_val_if_fail (self != NULL, FALSE);
  g_return_val_if_fail (item != NULL, FALSE);

  r = channel_receive (self, NULL, item);
  if (r < 0)
    set_closed_error (error);
  else if (r == 0)
    g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK, "The channel is empty");
  return r == 1;
}

/**
 * ws_channel_close:
 * @self: a #WsChannel
 *
 * Closes the channel and wakes every waiter. Items inside can still be
 * received. Closing twice does nothing.
 */
void
ws_channel_close (WsChannel *self)
{
  WsWakerList senders;
  WsWakerList receivers;

  g_return_if_fail (self != NULL);

  ws_lock_lock (&self->lock);
  self->closed = TRUE;
  senders = ws_waker_list_take (&self->send_waiters);
  receivers = ws_waker_list_take (&self->recv_waiters);
  ws_lock_unlock (&self->lock);

  ws_waker_list_wake_all (&senders);
  ws_waker_list_wake_all (&receivers);
}

/**
 * ws_channel_is_closed:
 * @self: a #WsChannel
 *
 * Tells whether [method@Ws.Channel.close] was called.
 *
 * Returns: whether the channel was closed
 */
gboolean
ws_channel_is_closed (WsChannel *self)
{
  gboolean closed;

  g_return_val_if_fail (self != NULL, TRUE);

  ws_lock_lock (&self->lock);
  closed = self->closed;
  ws_lock_unlock (&self->lock);
  return closed;
}

/**
 * ws_channel_get_length:
 * @self: a #WsChannel
 *
 * Counts the items queued in the channel now. Other threads may change
 * it at once.
 *
 * Returns: the number of items inside now
 */
guint
ws_channel_get_length (WsChannel *self)
{
  guint len;

  g_return_val_if_fail (self != NULL, 0);

  ws_lock_lock (&self->lock);
  len = self->len;
  ws_lock_unlock (&self->lock);
  return len;
}

/**
 * ws_channel_get_capacity:
 * @self: a #WsChannel
 *
 * Gets the most items the channel holds before a send has to wait.
 *
 * Returns: how many items fit
 */
guint
ws_channel_get_capacity (WsChannel *self)
{
  g_return_val_if_fail (self != NULL, 0);

  return self->capacity;
}
