/* ws-async-wait.c: WsAsyncWait, a GAsyncResult for waits with a GCancellable
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A WsAsyncWait is at once the waker the core wakes, the GAsyncResult of
 * the wait and the item its context's delivery source queues
 * (ws-delivery.c): for waits with a GCancellable and for the task-group
 * waits. A wake or the cancellable queues it, exactly once (a CAS on its
 * state); the dispatch disconnects the cancellable's handler (safe there:
 * it is not inside the handler) and runs the callback, once, never from
 * inside the _async () call (doc/architecture.md, "Rules: main
 * contexts").
 */

#include "config.h"

#include <stdatomic.h>

#include "ws-async-wait-private.h"
#include "ws-delivery-private.h"
#include "ws-error.h"
#include "ws-core-private.h"


struct _WsAsyncWait
{
  GObject               parent_instance;
  WsWaker               waker;          /* woken by the core */
  WsDeliveryItem        item;           /* in the delivery queue */
  GObject              *source_object;
  gpointer              source_tag;
  GCancellable         *cancellable;
  gulong                cancelled_id;   /* disconnected on the context */
  GAsyncReadyCallback   callback;
  gpointer              user_data;
  GMainContext         *context;
  WsDelivery           *delivery;       /* the context's; valid while we hold it */
  _Atomic gint          state;          /* PENDING, QUEUED */
  _Atomic guint         n_waker_refs;   /* references held as a waker */
  gint                  outcome;        /* set by the winner, before queueing */
};

enum
{
  WAIT_PENDING,
  WAIT_QUEUED,
};

static void async_result_iface_init (GAsyncResultIface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (WsAsyncWait, ws_async_wait, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (G_TYPE_ASYNC_RESULT, async_result_iface_init))

#define WAIT_FROM_ITEM(i) \
  ((WsAsyncWait *) ((guint8 *) (i) - G_STRUCT_OFFSET (WsAsyncWait, item)))
#define WAIT_FROM_WAKER(w) \
  ((WsAsyncWait *) ((guint8 *) (w) - G_STRUCT_OFFSET (WsAsyncWait, waker)))

static void
wait_deliver (WsDeliveryItem *item)
{
  WsAsyncWait *self = WAIT_FROM_ITEM (item);

  /* Outside the cancelled handler, so disconnecting is safe. */
  if (self->cancelled_id != 0)
    {
      g_cancellable_disconnect (self->cancellable, self->cancelled_id);
      self->cancelled_id = 0;
    }
  if (self->callback != NULL)
    self->callback (self->source_object, G_ASYNC_RESULT (self), self->user_data);
  g_object_unref (self);        /* the queue's reference */
}

static void
wait_discard (WsDeliveryItem *item)
{
  g_object_unref (WAIT_FROM_ITEM (item));
}

static const WsDeliveryItemClass wait_item_class = {
  wait_deliver,
  wait_discard,
};

/* How a wait ended. A wait whose last waker reference is dropped before
 * anything woke it (its slot was given to another waiter, the awaitable
 * was freed) ends DROPPED: it is delivered with an error, never left
 * pending. */
enum
{
  OUTCOME_WOKEN,
  OUTCOME_CANCELLED,
  OUTCOME_DROPPED,
};

/* Queues @self for its callback; exactly once. Any thread. */
static void
queue_delivery (WsAsyncWait *self,
                gint         outcome)
{
  gint expected = WAIT_PENDING;

  /* AcqRel: the winner's write of `outcome` is published to the
   * dispatcher through the queue lock below. */
  if (!atomic_compare_exchange_strong_explicit (&self->state, &expected, WAIT_QUEUED,
                                                memory_order_acq_rel,
                                                memory_order_relaxed))
    return;

  self->outcome = outcome;
  g_object_ref (self);          /* the queue's, with the context we hold */
  ws_delivery_push (self->delivery, &self->item);
}

static void
waker_wake (WsWaker *waker)
{
  queue_delivery (WAIT_FROM_WAKER (waker), OUTCOME_WOKEN);
}

static void
waker_ref (WsWaker *waker)
{
  WsAsyncWait *self = WAIT_FROM_WAKER (waker);

  /* Relaxed: a count; the awaitable orders a ref before its unref (its
   * lock, or the oneshot's release and acquire of its waker slot). */
  atomic_fetch_add_explicit (&self->n_waker_refs, 1, memory_order_relaxed);
  g_object_ref (self);
}

/* The last waker reference going without a wake: nothing can wake the
 * wait any more, so it ends now (DROPPED). A wake that came first queued
 * it already, and the CAS in queue_delivery keeps that outcome. */
static void
waker_unref (WsWaker *waker)
{
  WsAsyncWait *self = WAIT_FROM_WAKER (waker);

  /* AcqRel: the last unref sees every other holder's wake or drop. */
  if (atomic_fetch_sub_explicit (&self->n_waker_refs, 1, memory_order_acq_rel) == 1)
    queue_delivery (self, OUTCOME_DROPPED);
  g_object_unref (self);
}

static const WsWakerVTable wait_waker_vtable = {
  waker_wake,
  waker_ref,
  waker_unref,
};

static void
on_cancelled (GCancellable *cancellable,
              gpointer      data)
{
  queue_delivery (data, OUTCOME_CANCELLED);
}

static GObject *
get_source_object (GAsyncResult *result)
{
  WsAsyncWait *self = WS_ASYNC_WAIT (result);

  return self->source_object ? g_object_ref (self->source_object) : NULL;
}

static gpointer
get_user_data (GAsyncResult *result)
{
  return WS_ASYNC_WAIT (result)->user_data;
}

static gboolean
is_tagged (GAsyncResult *result,
           gpointer      source_tag)
{
  return WS_ASYNC_WAIT (result)->source_tag == source_tag;
}

static void
async_result_iface_init (GAsyncResultIface *iface)
{
  iface->get_source_object = get_source_object;
  iface->get_user_data = get_user_data;
  iface->is_tagged = is_tagged;
}

static void
ws_async_wait_finalize (GObject *object)
{
  WsAsyncWait *self = WS_ASYNC_WAIT (object);

  g_assert (self->cancelled_id == 0);
  g_clear_object (&self->cancellable);
  g_clear_object (&self->source_object);
  g_main_context_unref (self->context);

  G_OBJECT_CLASS (ws_async_wait_parent_class)->finalize (object);
}

static void
ws_async_wait_class_init (WsAsyncWaitClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = ws_async_wait_finalize;
}

static void
ws_async_wait_init (WsAsyncWait *self)
{
  self->waker.vtable = &wait_waker_vtable;
  self->item.klass = &wait_item_class;
  atomic_init (&self->state, WAIT_PENDING);
}

WsAsyncWait *
ws_async_wait_new (GObject             *source_object,
                   gpointer             source_tag,
                   GCancellable        *cancellable,
                   GAsyncReadyCallback  callback,
                   gpointer             user_data)
{
  WsAsyncWait *self = g_object_new (WS_TYPE_ASYNC_WAIT, NULL);

  self->source_object = source_object ? g_object_ref (source_object) : NULL;
  self->source_tag = source_tag;
  self->callback = callback;
  self->user_data = user_data;
  self->context = g_main_context_ref_thread_default ();
  self->delivery = ws_delivery_get (self->context);
  if (cancellable != NULL)
    {
      self->cancellable = g_object_ref (cancellable);
      /* If already cancelled, this queues the delivery right away; it
       * still runs from the context, never from inside the caller. */
      self->cancelled_id = g_cancellable_connect (cancellable, G_CALLBACK (on_cancelled),
                                                  self, NULL);
    }
  return self;
}

WsWaker *
ws_async_wait_get_waker (WsAsyncWait *self)
{
  return &self->waker;
}

/* The awaited thing is done: deliver (unless cancelled first). */
void
ws_async_wait_complete (WsAsyncWait *self)
{
  queue_delivery (self, OUTCOME_WOKEN);
}

gboolean
ws_async_wait_is_valid (GAsyncResult *result,
                        gpointer      source_object,
                        gpointer      source_tag)
{
  return WS_IS_ASYNC_WAIT (result)
         && WS_ASYNC_WAIT (result)->source_object == source_object
         && WS_ASYNC_WAIT (result)->source_tag == source_tag;
}

gboolean
ws_async_wait_propagate_error (WsAsyncWait  *self,
                               const char   *what,
                               GError      **error)
{
  switch (self->outcome)
    {
    case OUTCOME_CANCELLED:
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED, "The wait for %s was cancelled", what);
      return TRUE;
    case OUTCOME_DROPPED:
      g_set_error (error, WS_ERROR, WS_ERROR_FAILED,
                   "The wait for %s ended unanswered: another wait or poll replaced it "
                   "(one waiter at a time), or the last reference to what it waited on "
                   "was released", what);
      return TRUE;
    case OUTCOME_WOKEN:
    default:
      return FALSE;
    }
}
