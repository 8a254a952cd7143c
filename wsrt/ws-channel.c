/* ws-channel.c: a bounded multi-producer, multi-consumer async channel
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A ring of `capacity` items under a lock, with two waiter lists
 * (WsWakerList, ws-waker-private.h). A send into a full channel and a
 * receive from an empty one register the waiter's waker and fail to
 * complete (PENDING). A change wakes every waiter of the other side,
 * outside the lock: a woken waiter that finds the slot taken registers
 * again, and a waiter whose task was cancelled cannot sit on a wake that
 * another waiter needed.
 *
 * Items and who owns them:
 *
 *  - A channel of pointers (ws_channel_new) stores the pointer: a send
 *    that succeeds hands it to the channel, a send that fails (full,
 *    closed) leaves it the caller's, a receive hands it to the receiver,
 *    and the last unref frees what is left with item_destroy.
 *  - A channel of values (ws_channel_new_for_type) stores GValues of
 *    exactly item_type inline in its ring, so a send allocates nothing
 *    beyond what copying the value allocates. A send
 *    copies the caller's value (of item_type or a type that a GValue of
 *    item_type can hold) into a GValue of item_type *outside* the lock,
 *    so that no boxed copy or toggle-ref notification runs under it, and
 *    moves it into the ring under the lock; a send that fails drops that
 *    copy, so the caller's value is untouched either way. A receive moves
 *    the slot's GValue out under the lock and hands it over in a GValue
 *    it allocates after the lock (the receive's one allocation; a
 *    caller-allocated GValue would be cheaper in C, but GJS cannot take
 *    one that is left unset when nothing was received). The last unref
 *    unsets what is left. Each item is therefore unset exactly once: by
 *    whoever received it, or by the channel.
 *  - Moving a GValue is a bitwise copy followed by zeroing the source: a
 *    GValue holds its type and two words of data, never a pointer into
 *    itself (GLib relocates GValues the same way in GArray and
 *    GValueArray).
 *  - Which kind a channel is never changes, so the calls check it
 *    without the lock: the pointer calls gain one predictable branch and
 *    no allocation; the ring code is inlined with the kind as a constant
 *    (send_locked), so theirs is the code of a channel of pointers.
 *
 * The asynchronous send and receive (GTask, for main loops, GJS and
 * Vala's yield) are waiters too: a ChannelOp is its own waker and ends
 * through its WsCompletion (ws-completion.c: claimed once, delivered on
 * the caller's context). The channel's own rule: the completion is
 * claimed under the channel's lock only. A wake retries the operation
 * under the lock and claims it only if the try completed it; the cancel
 * claims under the lock too and takes the waker out of the list. So a
 * cancelled send never puts its item in the channel after the
 * cancellation won, an item that went in is reported sent (the GTask does
 * not check its cancellable: an operation that completed is not turned
 * into an error afterwards), and a received item is never dropped. A
 * send's copy that never went in is unset by the cancellation or by the
 * operation's free.
 *
 * An operation is touched by several threads in turn: the caller's, the
 * threads whose changes wake it, the thread that runs its callback and
 * the one that drops the last reference to its GTask and frees it. What
 * orders those touches is inside GLib (the GTask's reference count and
 * its dispatch to the main context), where ThreadSanitizer cannot see
 * (tests/tsan.supp). So each thread hands the operation over explicitly
 * before it lets go of it (op_hand_over, a release) and each thread takes
 * it over before it reads what another wrote (op_take_over, an acquire),
 * on an atomic counter of the operation: this orders nothing that GLib
 * does not order already, and costs an atomic add per hand-over.
 */

#include "config.h"

#include <stdatomic.h>

#include <gio/gio.h>

#include "ws-channel.h"
#include "ws-context.h"
#include "ws-error.h"
#include "ws-core-private.h"
#include "ws-context-private.h"
#include "ws-completion-private.h"

struct _WsChannel
{
  gatomicrefcount  ref_count;
  GDestroyNotify   item_destroy;
  GType            item_type;     /* G_TYPE_INVALID for pointers; never changes */
  WsLock           lock;          /* guards what follows */
  gpointer        *ring;          /* a channel of pointers, or NULL */
  GValue          *values;        /* a channel of values, or NULL */
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
 * A bounded channel that any number of tasks (or threads, or main loops)
 * send items into and receive them from, in order.
 *
 * A channel carries either C pointers or values of one #GType:
 *
 * - [ctor@Ws.Channel.new] makes a channel of pointers, for C:
 *   [method@Ws.Channel.poll_send], [method@Ws.Channel.poll_receive],
 *   [method@Ws.Channel.try_send] and [method@Ws.Channel.try_receive]. A
 *   send that succeeds hands the pointer to the channel; one that fails
 *   leaves it the caller's.
 * - [ctor@Ws.Channel.new_for_type] makes a channel of values of one type,
 *   which C, Vala and GJS can all use: the `_value` forms of the same
 *   calls take and give #GValues, and [method@Ws.Channel.send_async] and
 *   [method@Ws.Channel.receive_async] wait on a main loop. A send copies
 *   the value, so the caller's value stays the caller's whether the send
 *   succeeded or not; a receive hands the received value to the caller.
 *
 * Calling the pointer API on a channel of values, or the value API on a
 * channel of pointers, is a programmer error (a critical naming the calls
 * to use), and so is sending a value of a type the channel does not carry.
 *
 * In a task, the `poll_send` calls wait while the channel is full
 * (back-pressure) and the `poll_receive` calls wait while it is empty.
 * The `try_` calls never wait, from any thread. On a main loop, the async
 * calls wait without blocking and complete on the caller's thread-default
 * main context.
 *
 * [method@Ws.Channel.close] (from either side) wakes every waiter: sends
 * then fail with %WS_ERROR_CLOSED, and receives drain what is left before
 * they fail the same way. Items still inside when the last reference goes
 * are freed: with the item destroy notify for pointers, with
 * g_value_unset() for values. A pending async send or receive holds a
 * reference on the channel until it completes; close the channel to end
 * them.
 *
 * Each poll consumes one unit of the cooperative budget, so a task that
 * receives from a channel that is always ready still yields now and then.
 *
 * In C, a task that receives strings until the channel is closed:
 *
 * ```c
 * static WsPoll
 * consume (WsContext *cx, gpointer data)
 * {
 *   WsChannel *ch = data;   // ws_channel_new_for_type (16, G_TYPE_STRING)
 *
 *   for (;;)
 *     {
 *       g_autoptr(GError) error = NULL;
 *       GValue *item;
 *
 *       if (ws_channel_poll_receive_value (ch, cx, &item, &error) == WS_POLL_PENDING)
 *         return WS_POLL_PENDING;
 *       if (item == NULL)
 *         return WS_POLL_READY;                 // closed and empty
 *       g_print ("%s\n", g_value_get_string (item));
 *       g_boxed_free (G_TYPE_VALUE, item);
 *     }
 * }
 * ```
 */

G_DEFINE_BOXED_TYPE (WsChannel, ws_channel, ws_channel_ref, ws_channel_unref)

static WsChannel *
channel_new (guint capacity)
{
  WsChannel *self = g_new0 (WsChannel, 1);

  g_atomic_ref_count_init (&self->ref_count);
  ws_lock_init (&self->lock);
  self->capacity = capacity;
  ws_waker_list_init (&self->send_waiters);
  ws_waker_list_init (&self->recv_waiters);
  return self;
}

/**
 * ws_channel_new:
 * @capacity: how many items fit; at least 1
 * @item_destroy: (nullable): frees items left inside at the end
 *
 * Creates a bounded multi-producer, multi-consumer channel of pointers
 * that holds at most @capacity items. For a channel that Vala and GJS can
 * use, with items of a #GType, see [ctor@Ws.Channel.new_for_type].
 *
 * Returns: (transfer full): a new channel
 */
WsChannel *
ws_channel_new (guint          capacity,
                GDestroyNotify item_destroy)
{
  WsChannel *self;

  g_return_val_if_fail (capacity > 0, NULL);

  self = channel_new (capacity);
  self->item_destroy = item_destroy;
  self->ring = g_new0 (gpointer, capacity);
  return self;
}

/**
 * ws_channel_new_for_type:
 * @capacity: how many items fit; at least 1
 * @item_type: the type of the items, a type a #GValue can hold
 *
 * Creates a bounded multi-producer, multi-consumer channel of values of
 * type @item_type, used with the `_value` calls and the async calls.
 *
 * A value sent must be of @item_type or of a type that a #GValue of
 * @item_type can hold (g_value_type_compatible(): a subclass of an object
 * type, an object type implementing an interface type); it is copied
 * into a value of @item_type, which is what receivers get. No other
 * conversion is made: sending a %G_TYPE_INT value into a channel of
 * %G_TYPE_UINT is a programmer error. (In GJS, a JavaScript number
 * becomes a %G_TYPE_INT value when it is an integer that fits, and a
 * %G_TYPE_DOUBLE value otherwise; a string becomes %G_TYPE_STRING, a
 * boolean %G_TYPE_BOOLEAN. For other types pass a `GObject.Value`.)
 *
 * The channel stores its values inline, @capacity #GValues of 24 bytes
 * allocated once: an item costs no allocation of the channel's own, only
 * what copying a value costs (nothing for numbers, a g_strdup() for a
 * string, a reference for an object, the boxed copy for a boxed type).
 *
 * Returns: (transfer full): a new channel
 */
WsChannel *
ws_channel_new_for_type (guint capacity,
                         GType item_type)
{
  WsChannel *self;

  g_return_val_if_fail (capacity > 0, NULL);
  g_return_val_if_fail (G_TYPE_IS_VALUE (item_type), NULL);

  self = channel_new (capacity);
  self->item_type = item_type;
  self->values = g_new0 (GValue, capacity);
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
    {
      guint slot = (self->head + i) % self->capacity;

      if (self->values != NULL)
        g_value_unset (&self->values[slot]);
      else if (self->item_destroy != NULL)
        self->item_destroy (self->ring[slot]);
    }
  ws_waker_list_clear (&self->send_waiters);
  ws_waker_list_clear (&self->recv_waiters);
  g_free (self->ring);
  g_free (self->values);
  ws_lock_clear (&self->lock);
  g_free (self);
}

/**
 * ws_channel_get_item_type:
 * @self: a #WsChannel
 *
 * Gets the type of the values the channel carries.
 *
 * Returns: the item type given to [ctor@Ws.Channel.new_for_type], or
 *   %G_TYPE_INVALID for a channel of pointers
 */
GType
ws_channel_get_item_type (WsChannel *self)
{
  g_return_val_if_fail (self != NULL, G_TYPE_INVALID);

  return self->item_type;
}

/* ---- checks --------------------------------------------------------- */

/* The kind of a channel never changes, so these read it without the lock.
 * Each returns TRUE, after a critical naming @strfunc, when the call must
 * be refused. */
static gboolean
refuse_pointer_call (WsChannel  *self,
                     const char *strfunc)
{
  if G_LIKELY (self->values == NULL)
    return FALSE;

  g_critical ("%s: the channel carries values of type %s (made with "
              "ws_channel_new_for_type()): use the _value calls or the async calls",
              strfunc, g_type_name (self->item_type));
  return TRUE;
}

static gboolean
refuse_value_call (WsChannel  *self,
                   const char *strfunc)
{
  if G_LIKELY (self->values != NULL)
    return FALSE;

  g_critical ("%s: the channel carries pointers (made with ws_channel_new()): "
              "use the pointer calls, or make it with ws_channel_new_for_type()",
              strfunc);
  return TRUE;
}

/* A value to send: set, and of a type a GValue of the item type holds.
 * A refusal logs a critical and, for a value of the wrong type, sets
 * @error (G_IO_ERROR_INVALID_ARGUMENT) naming both types, so that code
 * that prints the error of a FALSE says what was wrong; the callers set
 * their own error for the other refusals. */
static gboolean
refuse_value_in (WsChannel     *self,
                 const GValue  *value,
                 const char    *strfunc,
                 GError       **error)
{
  if (refuse_value_call (self, strfunc))
    return TRUE;
  if G_UNLIKELY (value == NULL || !G_IS_VALUE (value))
    {
      g_return_if_fail_warning (G_LOG_DOMAIN, strfunc, "G_IS_VALUE (value)");
      return TRUE;
    }
  if G_UNLIKELY (!g_value_type_compatible (G_VALUE_TYPE (value), self->item_type))
    {
      g_critical ("%s: a value of type %s cannot be sent on a channel of %s",
                  strfunc, G_VALUE_TYPE_NAME (value), g_type_name (self->item_type));
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "A value of type %s cannot be sent on a channel of %s",
                   G_VALUE_TYPE_NAME (value), g_type_name (self->item_type));
      return TRUE;
    }
  return FALSE;
}

static void
set_closed_error (GError **error)
{
  g_set_error_literal (error, WS_ERROR, WS_ERROR_CLOSED, "The channel is closed");
}

/* ---- the ring ------------------------------------------------------- */

/* Moves @src into @dst, which must be unset, and leaves @src unset (the
 * opening comment says why a GValue may be moved bitwise). */
static inline void
value_move (GValue *dst,
            GValue *src)
{
  *dst = *src;
  *src = (GValue) G_VALUE_INIT;
}

/* Under the lock. Returns 1 if sent, 0 if full, -1 if closed. A channel
 * of values (@typed) takes @value (moved in, left unset); a channel of
 * pointers takes @item. @typed is a constant at every call and the
 * function is inlined, so the pointer calls run the same code as before
 * there were values. */
G_ALWAYS_INLINE static inline gint
send_locked (WsChannel *self,
             gboolean   typed,
             gpointer   item,
             GValue    *value)
{
  guint tail;

  if (self->closed)
    return -1;
  if (self->len == self->capacity)
    return 0;
  tail = (self->head + self->len) % self->capacity;
  if (typed)
    value_move (&self->values[tail], value);
  else
    self->ring[tail] = item;
  self->len++;
  return 1;
}

/* Under the lock. Returns 1 with the oldest item in *@item or, in a
 * channel of values (@typed), moved into @value (unset before); 0 if
 * empty; -1 if closed and empty. Inlined, as send_locked (). */
G_ALWAYS_INLINE static inline gint
receive_locked (WsChannel *self,
                gboolean   typed,
                gpointer  *item,
                GValue    *value)
{
  if (self->len > 0)
    {
      if (typed)
        value_move (value, &self->values[self->head]);
      else
        {
          *item = self->ring[self->head];
          self->ring[self->head] = NULL;
        }
      self->head = (self->head + 1) % self->capacity;
      self->len--;
      return 1;
    }
  return self->closed ? -1 : 0;
}

/* One send or receive: returns 1 on success, 0 when it would wait (and
 * then registers @waker, if any), -1 when closed. Wakes the other side
 * outside the lock. Inlined, as send_locked (). */
G_ALWAYS_INLINE static inline gint
channel_send (WsChannel *self,
              WsWaker   *waker,
              gboolean   typed,
              gpointer   item,
              GValue    *value)
{
  WsWakerList to_wake = WS_WAKER_LIST_INIT;
  gint r;

  ws_lock_lock (&self->lock);
  r = send_locked (self, typed, item, value);
  if (r == 1)
    to_wake = ws_waker_list_take (&self->recv_waiters);
  else if (r == 0 && waker != NULL)
    ws_waker_list_add (&self->send_waiters, waker);
  ws_lock_unlock (&self->lock);

  ws_waker_list_wake_all (&to_wake);
  return r;
}

G_ALWAYS_INLINE static inline gint
channel_receive (WsChannel *self,
                 WsWaker   *waker,
                 gboolean   typed,
                 gpointer  *item,
                 GValue    *value)
{
  WsWakerList to_wake = WS_WAKER_LIST_INIT;
  gint r;

  ws_lock_lock (&self->lock);
  r = receive_locked (self, typed, item, value);
  if (r == 1)
    to_wake = ws_waker_list_take (&self->send_waiters);
  else if (r == 0 && waker != NULL)
    ws_waker_list_add (&self->recv_waiters, waker);
  ws_lock_unlock (&self->lock);

  ws_waker_list_wake_all (&to_wake);
  return r;
}

/* A send of a value: copies @value into a GValue of the item type outside
 * the lock, and drops the copy if the channel did not take it. */
static gint
channel_send_value (WsChannel    *self,
                    WsWaker      *waker,
                    const GValue *value)
{
  GValue copy = G_VALUE_INIT;
  gint r;

  g_value_init (&copy, self->item_type);
  g_value_copy (value, &copy);
  r = channel_send (self, waker, TRUE, NULL, &copy);
  if (r != 1)
    g_value_unset (&copy);
  return r;
}

/* A receive of a value: moves the item out under the lock, and into a
 * new GValue in *@value after it. */
static gint
channel_receive_value (WsChannel  *self,
                       WsWaker    *waker,
                       GValue    **value)
{
  GValue item = G_VALUE_INIT;
  gint r;

  r = channel_receive (self, waker, TRUE, NULL, &item);
  if (r == 1)
    {
      *value = g_new (GValue, 1);
      value_move (*value, &item);
    }
  return r;
}

static inline WsWaker *
context_waker (WsContext *cx)
{
  return cx != NULL ? &cx->task->waker : NULL;
}

/* ---- pointers ------------------------------------------------------- */

/**
 * ws_channel_poll_send:
 * @self: a #WsChannel of pointers
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
 * For a channel made with [ctor@Ws.Channel.new] only; a channel of values
 * takes [method@Ws.Channel.poll_send_value].
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
  ws_context_return_val_if_not_in_poll (context, WS_POLL_READY);
  ws_context_note_await (context, G_STRFUNC);
  if (refuse_pointer_call (self, G_STRFUNC))
    return WS_POLL_READY;

  if (!ws_context_poll_proceed (context))
    return WS_POLL_PENDING;

  r = channel_send (self, context_waker (context), FALSE, item, NULL);
  if (r < 0)
    set_closed_error (error);
  return r == 0 ? WS_POLL_PENDING : WS_POLL_READY;
}

/**
 * ws_channel_poll_receive:
 * @self: a #WsChannel of pointers
 * @context: the context of the receiving task
 * @item: (out) (transfer full) (nullable): the item received
 * @error: return location for a #GError
 *
 * Receives the oldest item, waiting while the channel is empty. Returns
 * %WS_POLL_READY with an item, or with %WS_ERROR_CLOSED once the channel is
 * closed and empty.
 *
 * For a channel made with [ctor@Ws.Channel.new] only; a channel of values
 * takes [method@Ws.Channel.poll_receive_value].
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
  ws_context_return_val_if_not_in_poll (context, WS_POLL_READY);
  g_return_val_if_fail (item != NULL, WS_POLL_READY);
  ws_context_note_await (context, G_STRFUNC);

  *item = NULL;
  if (refuse_pointer_call (self, G_STRFUNC))
    return WS_POLL_READY;
  if (!ws_context_poll_proceed (context))
    return WS_POLL_PENDING;

  r = channel_receive (self, context_waker (context), FALSE, item, NULL);
  if (r < 0)
    set_closed_error (error);
  return r == 0 ? WS_POLL_PENDING : WS_POLL_READY;
}

/**
 * ws_channel_try_send:
 * @self: a #WsChannel of pointers
 * @item: the item
 * @error: return location for a #GError
 *
 * Sends without waiting, from any thread. Fails with %G_IO_ERROR_WOULD_BLOCK
 * when the channel is full and %WS_ERROR_CLOSED when it is closed; the item
 * then stays the caller's.
 *
 * For a channel made with [ctor@Ws.Channel.new] only; a channel of values
 * takes [method@Ws.Channel.try_send_value].
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
  if (refuse_pointer_call (self, G_STRFUNC))
    return FALSE;

  r = channel_send (self, NULL, FALSE, item, NULL);
  if (r < 0)
    set_closed_error (error);
  else if (r == 0)
    g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK, "The channel is full");
  return r == 1;
}

/**
 * ws_channel_try_receive:
 * @self: a #WsChannel of pointers
 * @item: (out) (transfer full) (nullable): the item received
 * @error: return location for a #GError
 *
 * Receives without waiting, from any thread. Fails with
 * %G_IO_ERROR_WOULD_BLOCK when the channel is empty and %WS_ERROR_CLOSED
 * when it is closed and empty.
 *
 * For a channel made with [ctor@Ws.Channel.new] only; a channel of values
 * takes [method@Ws.Channel.try_receive_value].
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

  *item = NULL;
  if (refuse_pointer_call (self, G_STRFUNC))
    return FALSE;

  r = channel_receive (self, NULL, FALSE, item, NULL);
  if (r < 0)
    set_closed_error (error);
  else if (r == 0)
    g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK, "The channel is empty");
  return r == 1;
}

/* ---- values --------------------------------------------------------- */

/**
 * ws_channel_poll_send_value:
 * @self: a #WsChannel of values
 * @context: the context of the sending task
 * @value: the item: a value of the channel's item type (or of a type a
 *   value of it can hold)
 * @error: return location for a #GError
 *
 * Sends a copy of @value, waiting while the channel is full. The caller's
 * @value is never taken: unset it when done with it, whatever the outcome.
 *
 * When this returns %WS_POLL_READY without an error the copy is in the
 * channel. When it returns %WS_POLL_PENDING nothing was sent: poll again
 * (with the same value, or another) when woken. When the channel is closed
 * it returns %WS_POLL_READY with %WS_ERROR_CLOSED.
 *
 * The copy is made before the channel is looked at, so a poll that finds
 * the channel full makes a copy and drops it (for a string, a g_strdup()
 * and a g_free()). A value of the wrong type is a programmer error: a
 * critical naming both types, and %WS_POLL_READY with nothing sent and
 * %G_IO_ERROR_INVALID_ARGUMENT naming them too.
 *
 * Returns: %WS_POLL_READY when done (check @error), %WS_POLL_PENDING
 */
WsPoll
ws_channel_poll_send_value (WsChannel     *self,
                            WsContext     *context,
                            const GValue  *value,
                            GError       **error)
{
  gint r;

  g_return_val_if_fail (self != NULL, WS_POLL_READY);
  ws_context_return_val_if_not_in_poll (context, WS_POLL_READY);
  ws_context_note_await (context, G_STRFUNC);
  if (refuse_value_in (self, value, G_STRFUNC, error))
    return WS_POLL_READY;

  if (!ws_context_poll_proceed (context))
    return WS_POLL_PENDING;

  r = channel_send_value (self, context_waker (context), value);
  if (r < 0)
    set_closed_error (error);
  return r == 0 ? WS_POLL_PENDING : WS_POLL_READY;
}

/**
 * ws_channel_poll_receive_value:
 * @self: a #WsChannel of values
 * @context: the context of the receiving task
 * @value: (out) (transfer full) (nullable): where to store the item
 *   received, a newly allocated #GValue of the channel's item type; %NULL
 *   unless an item was received
 * @error: return location for a #GError
 *
 * Receives the oldest item, waiting while the channel is empty. Returns
 * %WS_POLL_READY with the item in `*value`, or with %WS_ERROR_CLOSED once
 * the channel is closed and empty.
 *
 * The item is moved out of the channel, not copied; the #GValue holding
 * it is the one allocation (24 bytes) of a receive, made after the item
 * was taken, outside the lock. Free it with
 * `g_boxed_free (G_TYPE_VALUE, value)`, which unsets and frees it.
 *
 * Returns: %WS_POLL_READY when done (check @error), %WS_POLL_PENDING
 */
WsPoll
ws_channel_poll_receive_value (WsChannel  *self,
                               WsContext  *context,
                               GValue    **value,
                               GError    **error)
{
  gint r;

  g_return_val_if_fail (self != NULL, WS_POLL_READY);
  ws_context_return_val_if_not_in_poll (context, WS_POLL_READY);
  g_return_val_if_fail (value != NULL, WS_POLL_READY);
  ws_context_note_await (context, G_STRFUNC);

  *value = NULL;
  if (refuse_value_call (self, G_STRFUNC))
    return WS_POLL_READY;
  if (!ws_context_poll_proceed (context))
    return WS_POLL_PENDING;

  r = channel_receive_value (self, context_waker (context), value);
  if (r < 0)
    set_closed_error (error);
  return r == 0 ? WS_POLL_PENDING : WS_POLL_READY;
}

/**
 * ws_channel_try_send_value:
 * @self: a #WsChannel of values
 * @value: the item: a value of the channel's item type (or of a type a
 *   value of it can hold)
 * @error: return location for a #GError
 *
 * Sends a copy of @value without waiting, from any thread. Fails with
 * %G_IO_ERROR_WOULD_BLOCK when the channel is full and %WS_ERROR_CLOSED
 * when it is closed. The caller's @value is never taken.
 *
 * A value of the wrong type is a programmer error: a critical naming both
 * types, and %FALSE with %G_IO_ERROR_INVALID_ARGUMENT, whose message
 * names them too.
 *
 * Returns: %TRUE if the channel took a copy of @value
 */
gboolean
ws_channel_try_send_value (WsChannel     *self,
                           const GValue  *value,
                           GError       **error)
{
  gint r;

  g_return_val_if_fail (self != NULL, FALSE);
  if (refuse_value_in (self, value, G_STRFUNC, error))
    return FALSE;

  r = channel_send_value (self, NULL, value);
  if (r < 0)
    set_closed_error (error);
  else if (r == 0)
    g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK, "The channel is full");
  return r == 1;
}

/**
 * ws_channel_try_receive_value:
 * @self: a #WsChannel of values
 * @error: return location for a #GError
 *
 * Receives without waiting, from any thread. Fails with
 * %G_IO_ERROR_WOULD_BLOCK when the channel is empty and %WS_ERROR_CLOSED
 * when it is closed and empty.
 *
 * Returns: (transfer full): the item, a newly allocated #GValue of the
 *   channel's item type (free it with `g_boxed_free (G_TYPE_VALUE,
 *   value)`), or %NULL with an error
 */
GValue *
ws_channel_try_receive_value (WsChannel  *self,
                              GError    **error)
{
  GValue *value = NULL;
  gint r;

  g_return_val_if_fail (self != NULL, NULL);
  if (refuse_value_call (self, G_STRFUNC))
    return NULL;

  r = channel_receive_value (self, NULL, &value);
  if (r < 0)
    set_closed_error (error);
  else if (r == 0)
    g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK, "The channel is empty");
  return value;
}

/* ---- on a main loop ------------------------------------------------- */

/* An async send or receive: the data of its GTask, and its own waker. */
typedef struct
{
  WsWaker    waker;           /* first: the operation is its own waker */
  WsCompletion completion;    /* claimed under the channel's lock */
  WsChannel *channel;         /* a reference */
  GTask     *task;            /* not a reference: we are its data */
  gboolean   is_send;
  GValue     value;           /* send: the copy until the channel takes it;
                               * receive: the item until finish takes it */
  _Atomic guint handovers;    /* op_hand_over / op_take_over */
} ChannelOp;

/* Before a thread lets go of @op (drops its reference to the GTask,
 * returns the GTask, returns from a call that touched it). Release, and a
 * read-modify-write so that the counter's release sequence carries every
 * thread's hand-over: pairs with op_take_over ()'s acquire. */
static inline void
op_hand_over (ChannelOp *op)
{
  atomic_fetch_add_explicit (&op->handovers, 1, memory_order_release);
}

/* Before a thread reads what another thread wrote to @op outside the
 * channel's lock (finish, the cancel source, the free). Acquire: pairs
 * with op_hand_over ()'s release. */
static inline void
op_take_over (ChannelOp *op)
{
  (void) atomic_load_explicit (&op->handovers, memory_order_acquire);
}

static void op_try (ChannelOp *op);

/* By reference: the caller keeps its reference on the GTask. Runs on the
 * thread that changed the channel (a worker, a thread calling try_*, the
 * main loop), outside the channel's lock. */
static void
op_waker_wake (WsWaker *waker)
{
  op_try ((ChannelOp *) waker);
}

static void
op_waker_ref (WsWaker *waker)
{
  g_object_ref (((ChannelOp *) waker)->task);
}

static void
op_waker_unref (WsWaker *waker)
{
  ChannelOp *op = (ChannelOp *) waker;
  GTask *task = op->task;

  /* This reference may be the last: the free may run now, here or on the
   * thread that holds the other one. */
  op_hand_over (op);
  g_object_unref (task);
}

static const WsWakerVTable op_waker_vtable = {
  op_waker_wake,
  op_waker_ref,
  op_waker_unref,
};

/* The GTask is finalized; the cancel link, which held it, is gone too.
 * A send's copy that never went in, or a received item that finish never
 * took, is unset here: once. */
static void
op_free (gpointer data)
{
  ChannelOp *op = data;

  op_take_over (op);
  if (G_IS_VALUE (&op->value))
    g_value_unset (&op->value);
  ws_channel_unref (op->channel);
  g_free (op);
}

/* Tries the operation once: completes it, or lists its waker again. Does
 * nothing once the operation is no longer WAITING. */
static void
op_try (ChannelOp *op)
{
  WsChannel *self = op->channel;
  WsWakerList to_wake = WS_WAKER_LIST_INIT;
  gint r = 0;
  gboolean done = FALSE;

  ws_lock_lock (&self->lock);
  /* Claimed only under this lock (the cancel's claim too), so the answer
   * holds until the unlock. */
  if (!ws_completion_is_claimed (&op->completion))
    {
      if (op->is_send)
        {
          r = send_locked (self, TRUE, NULL, &op->value);
          if (r == 1)
            to_wake = ws_waker_list_take (&self->recv_waiters);
          else if (r == 0)
            ws_waker_list_add (&self->send_waiters, &op->waker);
        }
      else
        {
          r = receive_locked (self, TRUE, NULL, &op->value);
          if (r == 1)
            to_wake = ws_waker_list_take (&self->send_waiters);
          else if (r == 0)
            ws_waker_list_add (&self->recv_waiters, &op->waker);
        }
      if (r != 0)
        done = ws_completion_claim (&op->completion);
    }
  ws_lock_unlock (&self->lock);

  ws_waker_list_wake_all (&to_wake);
  if (!done)
    return;

  /* Ours alone now: claimed under the lock, here. The callback will read
   * the value on its thread. */
  op_hand_over (op);
  ws_completion_return (&op->completion,
                        r == 1 ? NULL : g_error_new_literal (WS_ERROR, WS_ERROR_CLOSED,
                                                             "The channel is closed"));
}

/* The completion's cancel handler, on the cancelling thread (or in
 * op_start for a cancellable cancelled already). */
static void
on_cancelled (WsCompletion *completion)
{
  ChannelOp *op = (ChannelOp *) ((guint8 *) completion - G_STRUCT_OFFSET (ChannelOp, completion));
  WsChannel *self = op->channel;
  gboolean cancelled = FALSE;
  gboolean unlisted = FALSE;

  op_take_over (op);
  ws_lock_lock (&self->lock);
  /* The channel's rule: the claim under the lock, so a send that lost it
   * never puts its item in, and one that won is reported sent. */
  if (ws_completion_claim (completion))
    {
      cancelled = TRUE;
      /* Not listed if a wake took it out and is about to try it (it will
       * find CANCELLED). */
      unlisted = ws_waker_list_remove (op->is_send ? &self->send_waiters : &self->recv_waiters,
                                           &op->waker);
    }
  ws_lock_unlock (&self->lock);

  if (!cancelled)
    {
      op_hand_over (op);
      return;
    }

  /* CANCELLED: nobody touches the value any more. A send's copy goes now,
   * not with the GTask. */
  if (G_IS_VALUE (&op->value))
    g_value_unset (&op->value);
  op_hand_over (op);
  ws_completion_return (completion,
                        g_error_new_literal (G_IO_ERROR, G_IO_ERROR_CANCELLED,
                                             op->is_send ? "The send was cancelled"
                                             : "The receive was cancelled"));
  /* After the return, which holds the GTask until it is delivered. */
  if (unlisted)
    op_waker_unref (&op->waker);
}

/* A refused async call still calls back, once, from the caller's context
 * (after the critical that names the mistake): an await in Vala or GJS
 * fails instead of hanging. The GTask has no operation as its data; the
 * finish functions check for that first. */
static void
report_refused (GAsyncReadyCallback  callback,
                gpointer             user_data,
                gpointer             source_tag,
                const char          *message)
{
  g_task_report_new_error (NULL, callback, user_data, source_tag,
                           G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "%s", message);
}

/* Starts an async operation; for a send, @value is already checked. */
static void
op_start (WsChannel           *self,
          const GValue        *value,
          GCancellable        *cancellable,
          GAsyncReadyCallback  callback,
          gpointer             user_data,
          gpointer             source_tag)
{
  g_autoptr(GTask) task = NULL;
  ChannelOp *op;

  task = g_task_new (NULL, cancellable, callback, user_data);
  g_task_set_source_tag (task, source_tag);
  /* An operation that completed stays completed: a cancellation that comes
   * later changes nothing (the item was sent, or is the receiver's). */
  g_task_set_check_cancellable (task, FALSE);
  op = g_new0 (ChannelOp, 1);
  op->waker.vtable = &op_waker_vtable;
  op->channel = ws_channel_ref (self);
  op->task = task;
  op->is_send = value != NULL;
  atomic_init (&op->handovers, 0);
  g_task_set_task_data (task, op, op_free);
  ws_completion_init (&op->completion, task);

  if (value != NULL)
    {
      /* Copied here, on the caller's thread: the caller's value is not
       * needed after this call. */
      g_value_init (&op->value, self->item_type);
      g_value_copy (value, &op->value);
    }

  /* Connected before the first try (C5 in ws-completion.c); a cancellable
   * cancelled already claims here, and the try then does nothing. */
  ws_completion_connect (&op->completion, cancellable, on_cancelled);

  /* Delivered from the caller's context, never from inside this call. */
  op_try (op);
  op_hand_over (op);
}

/**
 * ws_channel_send_async:
 * @self: a #WsChannel of values
 * @value: the item: a value of the channel's item type (or of a type a
 *   value of it can hold); copied, so the caller may unset it at once
 * @cancellable: (nullable): stops the wait
 * @callback: (scope async): called once the item is in the channel, the
 *   channel is closed, or the wait was cancelled
 * @user_data: data for @callback
 *
 * Sends a copy of @value, waiting without blocking while the channel is
 * full, among the tasks that wait to send. @callback runs once, on the
 * thread-default main context of the caller, never from inside this call;
 * finish with [method@Ws.Channel.send_finish].
 *
 * A cancellation that wins the race takes the item back: it was never in
 * the channel, and the copy is freed. A cancellation that comes after the
 * channel took the item changes nothing: the send completes with %TRUE.
 *
 * A value of the wrong type is a programmer error: a critical naming both
 * types; @callback is still called, once, and the finish fails with
 * %G_IO_ERROR_INVALID_ARGUMENT, whose message names them too.
 */
void
ws_channel_send_async (WsChannel           *self,
                       const GValue        *value,
                       GCancellable        *cancellable,
                       GAsyncReadyCallback  callback,
                       gpointer             user_data)
{
  GError *refused = NULL;

  g_return_if_fail (self != NULL);
  g_return_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable));
  if (refuse_value_in (self, value, G_STRFUNC, &refused))
    {
      if (refused != NULL)
        g_task_report_error (NULL, callback, user_data, ws_channel_send_async,
                             g_steal_pointer (&refused));
      else
        report_refused (callback, user_data, ws_channel_send_async,
                        "The value cannot be sent on this channel: it is not set, or the "
                        "channel carries pointers");
      return;
    }

  op_start (self, value, cancellable, callback, user_data, ws_channel_send_async);
}

/**
 * ws_channel_send_finish:
 * @self: a #WsChannel
 * @result: the result given to the callback
 * @error: return location for a #GError
 *
 * Finishes [method@Ws.Channel.send_async].
 *
 * Returns: %TRUE if the channel took the item; %FALSE with
 *   %WS_ERROR_CLOSED if the channel was closed first, or with
 *   %G_IO_ERROR_CANCELLED if the wait was cancelled first, and then the
 *   item was not sent; with %G_IO_ERROR_INVALID_ARGUMENT if the send was
 *   refused (a critical said why)
 */
gboolean
ws_channel_send_finish (WsChannel     *self,
                        GAsyncResult  *result,
                        GError       **error)
{
  ChannelOp *op;
  gboolean sent;

  g_return_val_if_fail (self != NULL, FALSE);
  g_return_val_if_fail (g_task_is_valid (result, NULL), FALSE);
  g_return_val_if_fail (g_async_result_is_tagged (result, ws_channel_send_async), FALSE);

  op = g_task_get_task_data (G_TASK (result));
  if (op == NULL)
    return g_task_propagate_boolean (G_TASK (result), error);   /* refused */
  g_return_val_if_fail (op->channel == self, FALSE);

  sent = g_task_propagate_boolean (G_TASK (result), error);
  op_hand_over (op);
  return sent;
}

/**
 * ws_channel_receive_async:
 * @self: a #WsChannel of values
 * @cancellable: (nullable): stops the wait
 * @callback: (scope async): called once an item was received, the channel
 *   is closed and empty, or the wait was cancelled
 * @user_data: data for @callback
 *
 * Receives the oldest item, waiting without blocking while the channel is
 * empty, among the tasks that wait to receive. @callback runs once, on the
 * thread-default main context of the caller, never from inside this call;
 * finish with [method@Ws.Channel.receive_finish].
 *
 * A cancellation that wins the race leaves the channel as it was. One
 * that comes after an item was received changes nothing: finish gives the
 * item (an item is never dropped). When the channel is closed while this
 * waits, the wait ends with %WS_ERROR_CLOSED.
 */
void
ws_channel_receive_async (WsChannel           *self,
                          GCancellable        *cancellable,
                          GAsyncReadyCallback  callback,
                          gpointer             user_data)
{
  g_return_if_fail (self != NULL);
  g_return_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable));
  if (refuse_value_call (self, G_STRFUNC))
    {
      report_refused (callback, user_data, ws_channel_receive_async,
                      "The channel carries pointers: receive with "
                      "ws_channel_try_receive() or ws_channel_poll_receive()");
      return;
    }

  op_start (self, NULL, cancellable, callback, user_data, ws_channel_receive_async);
}

/**
 * ws_channel_receive_finish:
 * @self: a #WsChannel
 * @result: the result given to the callback
 * @error: return location for a #GError
 *
 * Finishes [method@Ws.Channel.receive_async]. The item is handed over
 * once: free it with `g_boxed_free (G_TYPE_VALUE, value)` (which unsets
 * and frees it). Not calling this frees the item with the result.
 *
 * Returns: (transfer full): the item, a newly allocated #GValue of the
 *   channel's item type; %NULL with %WS_ERROR_CLOSED if the channel is
 *   closed and empty, or with %G_IO_ERROR_CANCELLED if the wait was
 *   cancelled
 */
GValue *
ws_channel_receive_finish (WsChannel     *self,
                           GAsyncResult  *result,
                           GError       **error)
{
  ChannelOp *op;
  GValue *value = NULL;

  g_return_val_if_fail (self != NULL, NULL);
  g_return_val_if_fail (g_task_is_valid (result, NULL), NULL);
  g_return_val_if_fail (g_async_result_is_tagged (result, ws_channel_receive_async), NULL);

  op = g_task_get_task_data (G_TASK (result));
  if (op == NULL)
    {
      /* Refused: the GTask carries the error. */
      (void) g_task_propagate_boolean (G_TASK (result), error);
      return NULL;
    }
  g_return_val_if_fail (op->channel == self, NULL);

  /* The item was moved in by the thread that completed the operation. */
  op_take_over (op);
  if (g_task_propagate_boolean (G_TASK (result), error))
    {
      /* Not set: taken by an earlier finish of the same result. */
      if (G_IS_VALUE (&op->value))
        {
          value = g_new (GValue, 1);
          value_move (value, &op->value);
        }
      else
        g_critical ("%s: the item was already taken by an earlier call", G_STRFUNC);
    }
  op_hand_over (op);
  return value;
}

/* ---- the state ------------------------------------------------------ */

/**
 * ws_channel_close:
 * @self: a #WsChannel
 *
 * Closes the channel and wakes every waiter: tasks, and async sends and
 * receives, which then complete with %WS_ERROR_CLOSED (a receive first
 * drains what is left). Items inside can still be received. Closing twice
 * does nothing.
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

/* ---- blocking, for plain threads ------------------------------------ */

/* A thread that blocks in ws_channel_send () or ws_channel_receive ()
 * waits as a task does: its ThreadWaiter is a waker, listed among the
 * side's waiters under the channel's lock when a try finds the channel
 * full (or empty), and woken with the others by the next change. The
 * thread resets `woken` before each try, and the try lists the waiter in
 * the same critical section of the channel's lock that found nothing to
 * do, so a change made after that try wakes the waiter, and one made
 * before it is seen by the try: no wake is lost, and the thread never
 * polls. A cancel sets `cancelled` under the waiter's own lock and
 * signals it the same way.
 *
 * The waiter is on the heap with a reference count, not on the blocked
 * thread's stack: a change may take it out of the list and wake it after
 * the thread has stopped waiting (cancelled, or done on its next try),
 * and the list's reference keeps it alive until that wake is over. On
 * its way out the thread takes it out of the list if it is still there. */
typedef struct
{
  WsWaker          waker;          /* first: the waiter is a waker */
  gatomicrefcount  ref_count;      /* the thread's, and the list's while listed */
  WsLock           lock;           /* guards what follows */
  WsCond           cond;
  gboolean         woken;
  gboolean         cancelled;
} ThreadWaiter;

static void
thread_waiter_wake (WsWaker *waker)
{
  ThreadWaiter *w = (ThreadWaiter *) waker;

  ws_lock_lock (&w->lock);
  w->woken = TRUE;
  ws_cond_signal (&w->cond);
  ws_lock_unlock (&w->lock);
}

static void
thread_waiter_ref (WsWaker *waker)
{
  g_atomic_ref_count_inc (&((ThreadWaiter *) waker)->ref_count);
}

static void
thread_waiter_unref (WsWaker *waker)
{
  ThreadWaiter *w = (ThreadWaiter *) waker;

  /* A full barrier: whoever frees the waiter sees what the other holder
   * did with it (the wake's writes under its lock are also ordered by
   * that lock). */
  if (!g_atomic_ref_count_dec (&w->ref_count))
    return;
  ws_cond_clear (&w->cond);
  ws_lock_clear (&w->lock);
  g_free (w);
}

static const WsWakerVTable thread_waiter_vtable = {
  thread_waiter_wake,
  thread_waiter_ref,
  thread_waiter_unref,
};

/* The cancellable's handler, on the cancelling thread (or at once, in
 * g_cancellable_connect (), for a cancellable cancelled already). The
 * blocked thread disconnects it before it drops its reference, and
 * g_cancellable_disconnect () waits for a handler that is running. */
static void
on_thread_waiter_cancelled (GCancellable *cancellable,
                            gpointer      data)
{
  ThreadWaiter *w = data;

  ws_lock_lock (&w->lock);
  w->cancelled = TRUE;
  ws_cond_signal (&w->cond);
  ws_lock_unlock (&w->lock);
}

/* What a blocking send or receive ended with: 1 done, -1 closed (empty,
 * for a receive), -2 cancelled first. */
#define BLOCKING_CANCELLED (-2)

/* One blocking send (@is_send) or receive: tries, and while the channel
 * is full (empty) waits for a change and tries again. The arguments are
 * those of channel_send () and channel_receive (); a send of a value
 * moves @value into the ring only when it returns 1. */
static gint
channel_block (WsChannel    *self,
               gboolean      is_send,
               gboolean      typed,
               gpointer      item,
               gpointer     *out_item,
               GValue       *value,
               GCancellable *cancellable)
{
  WsWakerList *list = is_send ? &self->send_waiters : &self->recv_waiters;
  ThreadWaiter *w;
  gulong handler = 0;
  gboolean unlisted;
  gint r;

  if (g_cancellable_is_cancelled (cancellable))
    return BLOCKING_CANCELLED;

  /* A channel with room (an item) needs no waiter. */
  r = is_send ? channel_send (self, NULL, typed, item, value)
              : channel_receive (self, NULL, typed, out_item, value);
  if (r != 0)
    return r;

  w = g_new0 (ThreadWaiter, 1);
  w->waker.vtable = &thread_waiter_vtable;
  g_atomic_ref_count_init (&w->ref_count);
  ws_lock_init (&w->lock);
  ws_cond_init (&w->cond);
  if (cancellable != NULL)
    handler = g_cancellable_connect (cancellable, G_CALLBACK (on_thread_waiter_cancelled), w, NULL);

  for (;;)
    {
      gboolean cancelled;

      ws_lock_lock (&w->lock);
      w->woken = FALSE;
      cancelled = w->cancelled;
      ws_lock_unlock (&w->lock);
      if (cancelled)
        {
          r = BLOCKING_CANCELLED;
          break;
        }

      r = is_send ? channel_send (self, &w->waker, typed, item, value)
                  : channel_receive (self, &w->waker, typed, out_item, value);
      if (r != 0)
        break;

      ws_lock_lock (&w->lock);
      while (!w->woken && !w->cancelled)
        ws_cond_wait (&w->cond, &w->lock);
      ws_lock_unlock (&w->lock);
    }

  /* Still listed only if it stopped waiting without a wake (cancelled);
   * a wake that took it out already drops the list's reference itself. */
  ws_lock_lock (&self->lock);
  unlisted = ws_waker_list_remove (list, &w->waker);
  ws_lock_unlock (&self->lock);
  if (unlisted)
    thread_waiter_unref (&w->waker);
  if (handler != 0)
    g_cancellable_disconnect (cancellable, handler);
  thread_waiter_unref (&w->waker);
  return r;
}

/* Refuses a blocking call on a worker, as ws_task_wait () does, with the
 * calls to use there. */
static gboolean
refuse_on_worker (const char  *strfunc,
                  const char  *instead,
                  GError     **error)
{
  if (!ws_core_on_worker ())
    return FALSE;
  g_set_error (error, WS_ERROR, WS_ERROR_WOULD_BLOCK,
               "%s() would block a runtime worker thread and every task queued "
               "behind it; in a task use %s(), or move the blocking call into "
               "ws_runtime_spawn_blocking() or ws_block_in_place()",
               strfunc, instead);
  return TRUE;
}

/* The error of a call refused after a critical: code that reads
 * error->message does not crash. */
static void
set_refused_error (GError **error)
{
  g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                       "The call was refused: see the critical message before it");
}

/* The error of a blocking call that did not complete. */
static void
set_blocking_error (gint         r,
                    gboolean     is_send,
                    GError     **error)
{
  if (r == BLOCKING_CANCELLED)
    g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_CANCELLED,
                         is_send ? "The send was cancelled" : "The receive was cancelled");
  else
    set_closed_error (error);
}

/**
 * ws_channel_send:
 * @self: a #WsChannel of pointers
 * @item: (nullable): the item
 * @cancellable: (nullable): stops the wait
 * @error: return location for a #GError
 *
 * Sends @item, blocking the calling thread while the channel is full:
 * for plain threads and blocking jobs ([method@Ws.Runtime.spawn_blocking],
 * `ws_block_in_place()`), for instance to hand results to a task or a
 * main loop as they come. The thread sleeps until a receive makes room;
 * it does not poll.
 *
 * When this returns %TRUE the channel has taken @item. When it returns
 * %FALSE the item was not sent and is still the caller's, as with every
 * send of the channel that fails: with %WS_ERROR_CLOSED when the channel
 * is closed, or closed while this waits; with %G_IO_ERROR_CANCELLED when
 * @cancellable was cancelled first (a cancel that comes after the channel
 * took the item changes nothing).
 *
 * It must not be called on a runtime worker thread, where it would stall
 * every task queued behind the caller: there it fails at once with
 * %WS_ERROR_WOULD_BLOCK, as [method@Ws.Task.wait] does. A task sends with
 * [method@Ws.Channel.poll_send].
 *
 * For a channel made with [ctor@Ws.Channel.new] only; a channel of values
 * takes [method@Ws.Channel.send_value] (the other is a programmer error:
 * a critical, and %FALSE with %G_IO_ERROR_INVALID_ARGUMENT).
 *
 * Returns: %TRUE if the channel took @item
 */
gboolean
ws_channel_send (WsChannel     *self,
                 gpointer       item,
                 GCancellable  *cancellable,
                 GError       **error)
{
  gint r;

  g_return_val_if_fail (self != NULL, FALSE);
  g_return_val_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  if (refuse_pointer_call (self, G_STRFUNC))
    {
      set_refused_error (error);
      return FALSE;
    }
  if (refuse_on_worker (G_STRFUNC, "ws_channel_poll_send", error))
    return FALSE;

  r = channel_block (self, TRUE, FALSE, item, NULL, NULL, cancellable);
  if (r != 1)
    set_blocking_error (r, TRUE, error);
  return r == 1;
}

/**
 * ws_channel_receive:
 * @self: a #WsChannel of pointers
 * @cancellable: (nullable): stops the wait
 * @error: return location for a #GError
 *
 * Receives the oldest item, blocking the calling thread while the channel
 * is empty: for plain threads and blocking jobs. The thread sleeps until
 * a send or a close; it does not poll.
 *
 * Returns %NULL with %WS_ERROR_CLOSED once the channel is closed and
 * empty (items sent before the close are received first), and with
 * %G_IO_ERROR_CANCELLED when @cancellable was cancelled first; the
 * channel is then as it was. A %NULL item, if one was sent, is returned
 * as %NULL with no error: pass @error to tell it from the end.
 *
 * It must not be called on a runtime worker thread: there it fails at
 * once with %WS_ERROR_WOULD_BLOCK, as [method@Ws.Task.wait] does. A task
 * receives with [method@Ws.Channel.poll_receive].
 *
 * For a channel made with [ctor@Ws.Channel.new] only; a channel of values
 * takes [method@Ws.Channel.receive_value] (the other is a programmer
 * error: a critical, and %NULL with %G_IO_ERROR_INVALID_ARGUMENT).
 *
 * Returns: (transfer full) (nullable): the item, or %NULL with an error
 */
gpointer
ws_channel_receive (WsChannel     *self,
                    GCancellable  *cancellable,
                    GError       **error)
{
  gpointer item = NULL;
  gint r;

  g_return_val_if_fail (self != NULL, NULL);
  g_return_val_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);
  if (refuse_pointer_call (self, G_STRFUNC))
    {
      set_refused_error (error);
      return NULL;
    }
  if (refuse_on_worker (G_STRFUNC, "ws_channel_poll_receive", error))
    return NULL;

  r = channel_block (self, FALSE, FALSE, NULL, &item, NULL, cancellable);
  if (r != 1)
    set_blocking_error (r, FALSE, error);
  return item;
}

/**
 * ws_channel_send_value:
 * @self: a #WsChannel of values
 * @value: the item: a value of the channel's item type (or of a type a
 *   value of it can hold); copied, so the caller's @value is never taken
 * @cancellable: (nullable): stops the wait
 * @error: return location for a #GError
 *
 * Sends a copy of @value, blocking the calling thread while the channel
 * is full: the blocking form of [method@Ws.Channel.send_async], for plain
 * threads and blocking jobs. The copy is made once, before the wait.
 *
 * Fails with %WS_ERROR_CLOSED when the channel is closed, or closed while
 * this waits, and with %G_IO_ERROR_CANCELLED when @cancellable was
 * cancelled first; nothing was sent then. On a runtime worker thread it
 * fails at once with %WS_ERROR_WOULD_BLOCK, as [method@Ws.Task.wait]
 * does. A value of the wrong type is a programmer error: a critical
 * naming both types, and %FALSE with %G_IO_ERROR_INVALID_ARGUMENT, whose
 * message names them too.
 *
 * Returns: %TRUE if the channel took a copy of @value
 */
gboolean
ws_channel_send_value (WsChannel     *self,
                       const GValue  *value,
                       GCancellable  *cancellable,
                       GError       **error)
{
  GValue copy = G_VALUE_INIT;
  gint r;

  g_return_val_if_fail (self != NULL, FALSE);
  g_return_val_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  if (refuse_value_in (self, value, G_STRFUNC, error))
    {
      if (error != NULL && *error == NULL)
        set_refused_error (error);
      return FALSE;
    }
  if (refuse_on_worker (G_STRFUNC, "ws_channel_poll_send_value", error))
    return FALSE;

  /* Copied outside the lock, as every send of a value is; moved into the
   * ring only by the try that succeeds. */
  g_value_init (&copy, self->item_type);
  g_value_copy (value, &copy);
  r = channel_block (self, TRUE, TRUE, NULL, NULL, &copy, cancellable);
  if (r != 1)
    {
      g_value_unset (&copy);
      set_blocking_error (r, TRUE, error);
    }
  return r == 1;
}

/**
 * ws_channel_receive_value:
 * @self: a #WsChannel of values
 * @cancellable: (nullable): stops the wait
 * @error: return location for a #GError
 *
 * Receives the oldest item, blocking the calling thread while the channel
 * is empty: the blocking form of [method@Ws.Channel.receive_async], for
 * plain threads and blocking jobs.
 *
 * Fails with %WS_ERROR_CLOSED once the channel is closed and empty, and
 * with %G_IO_ERROR_CANCELLED when @cancellable was cancelled first (the
 * channel is then as it was). On a runtime worker thread it fails at once
 * with %WS_ERROR_WOULD_BLOCK, as [method@Ws.Task.wait] does.
 *
 * Returns: (transfer full) (nullable): the item, a newly allocated
 *   #GValue of the channel's item type (free it with
 *   `g_boxed_free (G_TYPE_VALUE, value)`), or %NULL with an error
 */
GValue *
ws_channel_receive_value (WsChannel     *self,
                          GCancellable  *cancellable,
                          GError       **error)
{
  GValue item = G_VALUE_INIT;
  GValue *value;
  gint r;

  g_return_val_if_fail (self != NULL, NULL);
  g_return_val_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);
  if (refuse_value_call (self, G_STRFUNC))
    {
      set_refused_error (error);
      return NULL;
    }
  if (refuse_on_worker (G_STRFUNC, "ws_channel_poll_receive_value", error))
    return NULL;

  r = channel_block (self, FALSE, TRUE, NULL, NULL, &item, cancellable);
  if (r != 1)
    {
      set_blocking_error (r, FALSE, error);
      return NULL;
    }
  value = g_new (GValue, 1);
  value_move (value, &item);
  return value;
}
