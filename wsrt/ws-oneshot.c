/* ws-oneshot.c: one item from one sender to one receiving task
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * What must hold: the item is handed over at most once (a send closes the
 * oneshot, and a second send or a send after close is refused and frees
 * its item); the receiver is woken after every change it waits for (a
 * send or a close); an item nobody received, and a waker nobody took, are
 * dropped with the last reference.
 *
 * No lock: one state word and one waker slot (models/oneshot.pml checks
 * this protocol, with a broken variant of each step below).
 *
 *   CLAIMED   a send or a close has begun; the first claim wins, so the
 *             item is written by at most one sender, and later sends are
 *             refused (and later closes do nothing) once the winner's
 *             COMPLETE is there: a loser waits for it, so every call
 *             returns with the outcome it reports in place.
 *   COMPLETE  the outcome is published: with VALUE an item (written
 *             before, released by this RMW), without it a close.
 *   TAKEN     a receiver has taken the item (an RMW: two receivers
 *             polling at once get it once between them).
 *   WAKER     the slot holds a waker the completer must take and wake.
 *   RX_BUSY   a receiver is changing the slot: receivers exclude one
 *             another with it (they spin; each holds it for a few
 *             instructions), senders never take it.
 *
 * Who owns the slot: the receiver that holds RX_BUSY, while WAKER is
 * clear; the completer, if its COMPLETE RMW saw WAKER; nobody else. So:
 *
 *  - A completer sets COMPLETE and, if the word it replaced had WAKER,
 *    takes the waker out and wakes it (outside any lock: wakes run
 *    arbitrary code, ws-waker-private.h).
 *  - A receiver that finds COMPLETE reads the outcome and never touches
 *    the slot.
 *  - A receiver that registers takes RX_BUSY, then, if WAKER is set,
 *    clears it: a word that was COMPLETE by then means the completer saw
 *    WAKER and owns the slot, so the receiver reads the outcome instead;
 *    otherwise the old waker is the receiver's to drop. It stores its own
 *    waker and sets WAKER while clearing RX_BUSY in one RMW; if that RMW
 *    finds COMPLETE, the completer came first and saw no waker, so the
 *    receiver takes its waker back and reads the outcome (without this
 *    re-check the wake is lost: model-oneshot-broken-no-recheck).
 *
 * Orders: the COMPLETE RMW is acq_rel (release: the item written before
 * it; acquire: the slot a receiver stored before its release of WAKER);
 * a receiver's loads of the word and its WAKER RMWs are acquire (the item)
 * and release (the slot it stored); RX_BUSY is taken with acquire and
 * handed on with release, ordering one receiver's slot writes before the
 * next one's. CLAIMED is relaxed: it only picks the sender; what that
 * sender writes is published by its COMPLETE.
 *
 * ws_oneshot_receive_async () registers a WsAsyncWait (ws-async-wait.c) as
 * the waker: a send or close wakes it, which queues its callback on the
 * caller's context; its cancellable queues it too, and whichever comes
 * first is delivered (the others find it queued). The finish function, on
 * the caller's context, takes the item as a poll does, so a cancelled
 * receive leaves the item in the oneshot for a later one. A cancelled
 * wait stays in the waker slot until a send, a close, another receive or
 * the last unref drops it (it holds its main context until then).
 */

#include "config.h"

#include <stdatomic.h>

#include "ws-oneshot.h"
#include "ws-context.h"
#include "ws-error.h"
#include "ws-core-private.h"
#include "ws-context-private.h"
#include "ws-async-wait-private.h"

enum
{
  CLAIMED  = 1 << 0,
  COMPLETE = 1 << 1,
  VALUE    = 1 << 2,
  TAKEN    = 1 << 3,
  WAKER    = 1 << 4,
  RX_BUSY  = 1 << 5,
};

struct _WsOneshot
{
  _Atomic gint     ref_count;
  _Atomic guint    state;
  GDestroyNotify   item_destroy;
  gpointer         item;         /* written by the claiming sender */
  WsWaker         *waker;        /* owned as the top of this file says */
};

G_STATIC_ASSERT (sizeof (WsOneshot) <= WS_TASK_ALLOCATOR_SMALL);

/* The outcome of a complete oneshot (@s has COMPLETE): TRUE with the
 * item for the one receiver that takes it, FALSE for a close and for
 * every receiver after that one. */
static gboolean
take_item (WsOneshot *self,
           guint      s,
           gpointer  *item)
{
  /* Acquire: the item, which the sender wrote before its COMPLETE. */
  if ((s & VALUE) != 0
      && (atomic_fetch_or_explicit (&self->state, TAKEN, memory_order_acquire) & TAKEN) == 0)
    {
      *item = self->item;
      return TRUE;
    }
  return FALSE;
}

/* RX_BUSY: receivers change the slot one at a time. */
static void
rx_lock (WsOneshot *self)
{
  guint spins = 0;

  /* Acquire: the slot as the receiver before us left it (its release). */
  while ((atomic_fetch_or_explicit (&self->state, RX_BUSY, memory_order_acquire) & RX_BUSY) != 0)
    {
      /* Held for a few instructions; yield in case its holder was
       * preempted on a busy machine. */
      while ((atomic_load_explicit (&self->state, memory_order_relaxed) & RX_BUSY) != 0)
        if (++spins % 64 == 0)
          g_thread_yield ();
    }
}

static void
rx_unlock (WsOneshot *self)
{
  atomic_fetch_and_explicit (&self->state, ~(guint) RX_BUSY, memory_order_release);
}

/* Registers @waker (a reference the caller gives) to be woken by the
 * completion. Returns 0 once it is registered; otherwise the oneshot is
 * complete, the return value is its state word, and @waker is still the
 * caller's. *@old is a waker replaced, for the caller to drop. */
static guint
register_waker (WsOneshot  *self,
                WsWaker    *waker,
                WsWaker   **old)
{
  guint s;

  *old = NULL;
  rx_lock (self);
  WS_CHAOS_POINT ();
  s = atomic_load_explicit (&self->state, memory_order_acquire);
  if ((s & COMPLETE) != 0)
    {
      rx_unlock (self);
      return s;
    }
  if ((s & WAKER) != 0)
    {
      WS_CHAOS_POINT ();
      /* Acq_rel: acquire, the item if the word is complete; release,
       * nothing (the slot is not written yet). */
      s = atomic_fetch_and_explicit (&self->state, ~(guint) WAKER, memory_order_acq_rel);
      if ((s & COMPLETE) != 0)
        {
          /* The completer saw WAKER: the slot is its own. */
          rx_unlock (self);
          return s;
        }
      *old = self->waker;
    }
  self->waker = waker;
  WS_CHAOS_POINT ();
  /* Sets WAKER and clears RX_BUSY in one RMW (we hold RX_BUSY and WAKER
   * is clear, so subtracting the difference does both). Release: the
   * slot, for the completer that sees WAKER and the next receiver;
   * acquire: the item, if a send came first. */
  s = atomic_fetch_sub_explicit (&self->state, RX_BUSY - WAKER, memory_order_acq_rel);
  if ((s & COMPLETE) != 0)
    {
      /* The completer came first and saw no waker, so nobody wakes this
       * one: take it back. No other thread touches the slot now (a
       * receiver sees COMPLETE; nothing completes twice). */
      self->waker = NULL;
      return s;
    }
  return 0;
}

/* Publishes the outcome (@value: VALUE for a send, 0 for a close) and
 * wakes the registered waker. The caller's claim won. */
static void
complete (WsOneshot *self,
          guint      value)
{
  guint prev;

  WS_CHAOS_POINT ();
  /* Acq_rel: release, the item written before; acquire, the slot the
   * receiver stored before it set WAKER. */
  prev = atomic_fetch_or_explicit (&self->state, COMPLETE | value, memory_order_acq_rel);
  if ((prev & WAKER) != 0)
    {
      WsWaker *waker = self->waker;

      self->waker = NULL;
      ws_waker_take_and_wake (waker);
    }
}

/* Relaxed: the claim picks one sender (or closer) among those racing;
 * what the winner writes is published by its COMPLETE. A loser waits for
 * that COMPLETE, a few instructions after the winner's claim, so that a
 * refused send or a close returns with the oneshot complete: a poll after
 * it is READY, as it was when a lock made each call one step. */
static gboolean
claim (WsOneshot *self)
{
  guint spins = 0;

  if ((atomic_fetch_or_explicit (&self->state, CLAIMED, memory_order_relaxed) & CLAIMED) == 0)
    return TRUE;
  /* Acquire: nothing to read, but a poll after this call must see the
   * COMPLETE this thread saw. */
  while ((atomic_load_explicit (&self->state, memory_order_acquire) & COMPLETE) == 0)
    if (++spins % 64 == 0)
      g_thread_yield ();
  return FALSE;
}

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
  /* From the task allocator's small blocks: a oneshot is made on one
   * worker and often freed on another, which costs malloc a lock in the
   * first thread's arena (ws-task-allocator.c). */
  WsOneshot *self = ws_task_allocator_alloc0_small (sizeof (WsOneshot));

  atomic_init (&self->ref_count, 1);
  atomic_init (&self->state, 0);
  self->item_destroy = item_destroy;
  self->item = NULL;
  self->waker = NULL;
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

  /* Relaxed: a new reference is taken through one already held, which
   * keeps the oneshot alive; nothing is published by it. Inline, not
   * GLib's g_atomic_ref_count_inc (), a call into GLib at each of the
   * three references a oneshot's two ends take and drop. */
  atomic_fetch_add_explicit (&self->ref_count, 1, memory_order_relaxed);
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
  guint s;

  g_return_if_fail (self != NULL);

  /* Acq_rel: release, this thread's use of @self before the last
   * unref's free; acquire, for the last, every other thread's use. */
  if (atomic_fetch_sub_explicit (&self->ref_count, 1, memory_order_acq_rel) != 1)
    return;

  s = atomic_load_explicit (&self->state, memory_order_relaxed);
  if ((s & VALUE) != 0 && (s & TAKEN) == 0 && self->item_destroy != NULL)
    self->item_destroy (self->item);
  g_clear_pointer (&self->waker, ws_waker_unref);
  ws_task_allocator_free_small (self);
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
  g_return_val_if_fail (self != NULL, FALSE);

  if (!claim (self))
    {
      if (self->item_destroy != NULL)
        self->item_destroy (item);
      return FALSE;
    }
  self->item = item;
  complete (self, VALUE);
  return TRUE;
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
  guint s;

  g_return_val_if_fail (self != NULL, WS_POLL_READY);
  ws_context_return_val_if_not_in_poll (context, WS_POLL_READY);
  g_return_val_if_fail (item != NULL, WS_POLL_READY);
  ws_context_note_await (context, G_STRFUNC);

  *item = NULL;
  if (!ws_context_poll_proceed (context))
    return WS_POLL_PENDING;

  /* Acquire: the item, if complete. */
  s = atomic_load_explicit (&self->state, memory_order_acquire);
  if ((s & COMPLETE) == 0)
    {
      WsWaker *waker = ws_context_get_waker (context);
      WsWaker *old;

      s = register_waker (self, waker, &old);
      if (old != NULL)
        ws_waker_unref (old);
      if (s == 0)
        return WS_POLL_PENDING;
      ws_waker_unref (waker);
    }

  if (!take_item (self, s, item))
    g_set_error_literal (error, WS_ERROR, WS_ERROR_CLOSED,
                         "The oneshot was closed without a value");
  return WS_POLL_READY;
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
  g_return_if_fail (self != NULL);

  if (claim (self))
    complete (self, 0);
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
  WsWaker *old;
  guint s;

  g_return_if_fail (self != NULL);
  g_return_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable));

  wait = ws_async_wait_new (NULL, ws_oneshot_receive_async, "the oneshot's item", cancellable,
                           callback, user_data);
  waker = ws_async_wait_get_waker (wait);

  /* The slot's reference, dropped by whoever takes it out. */
  waker->vtable->ref (waker);
  s = register_waker (self, waker, &old);
  if (old != NULL)
    ws_waker_unref (old);
  if (s != 0)
    {
      /* Complete already: queued for the caller's context, never
       * delivered from here; queued before the slot's reference goes,
       * whose drop would otherwise end the wait unanswered. */
      ws_async_wait_complete (wait);
      waker->vtable->unref (waker);
    }
  ws_async_wait_unref (wait);
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
  guint s;

  g_return_val_if_fail (self != NULL, NULL);
  g_return_val_if_fail (ws_async_wait_is_valid (result, NULL, ws_oneshot_receive_async), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  /* Before touching @self: a wait dropped by the last unref outlives it. */
  if (ws_async_wait_propagate_error (result, error))
    return NULL;

  /* Woken only by a send or a close: complete now. Acquire: the item. */
  s = atomic_load_explicit (&self->state, memory_order_acquire);
  g_warn_if_fail ((s & COMPLETE) != 0);
  if (!take_item (self, s, &item))
    g_set_error_literal (error, WS_ERROR, WS_ERROR_CLOSED,
                         "The oneshot was closed without a value");
  return item;
}
