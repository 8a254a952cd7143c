/* ws-join-handle-delivery.c: a join handle handed to a callback on a context
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * ws_runtime_spawn_with_callback () delivers the task's join handle to a
 * callback on the spawner's thread-default context, through the context's
 * delivery source (ws-delivery.c), with no allocation beyond the task:
 * the Completion below is the task's tail. The completer wakes the join
 * waker once, after COMPLETE, and the wake queues the item; a task that
 * ended before the spawn registered the waker is queued by the spawn.
 * Either way the callback runs from the context's dispatch, never from
 * inside the spawn.
 */

#include "config.h"

#include "ws-join-handle-delivery-private.h"
#include "ws-delivery-private.h"
#include "ws-core-private.h"


/* The tail of a task spawned with ws_runtime_spawn_with_callback(), in the
 * task's own allocation (ws_raw_task_new_with_tail): the task's join waker
 * and its delivery item, so the completion costs no allocation. The
 * waker's references are references on the task; the join reference,
 * held from the spawn, keeps the task (and this) alive while queued, and
 * is the callback's once it runs. */
typedef struct
{
  WsWaker           waker;              /* the task's join waker */
  WsDeliveryItem    item;
  WsCompletionFunc  callback;
  gpointer          user_data;
  GMainContext     *context;            /* held until delivered */
  WsDelivery       *delivery;
} Completion;

#define COMPLETION_FROM_ITEM(i) \
  ((Completion *) ((guint8 *) (i) - G_STRUCT_OFFSET (Completion, item)))

gsize
ws_join_handle_tail_size (void)
{
  return sizeof (Completion);
}

static void
completion_deliver (WsDeliveryItem *item)
{
  Completion *self = COMPLETION_FROM_ITEM (item);
  WsCompletionFunc callback = self->callback;
  gpointer user_data = self->user_data;
  GMainContext *context = self->context;

  /* The handle, its outcome ready, is the callback's: it may free the
   * task, and this tail with it. */
  callback ((WsJoinHandle *) ws_raw_task_from_tail (self), user_data);
  g_main_context_unref (context);
}

static void
completion_discard (WsDeliveryItem *item)
{
  Completion *self = COMPLETION_FROM_ITEM (item);
  GMainContext *context = self->context;

  ws_raw_task_drop_join_handle (ws_raw_task_from_tail (self));
  g_main_context_unref (context);
}

static const WsDeliveryItemVTable completion_item_vtable = {
  completion_deliver,
  completion_discard,
};

static void
completion_waker_wake (WsWaker *waker)
{
  Completion *self = (Completion *) waker;

  /* The completer wakes the join waker once, after COMPLETE. */
  ws_delivery_push (self->delivery, &self->item);
}

static void
completion_waker_ref (WsWaker *waker)
{
  ws_raw_task_ref (ws_raw_task_from_tail (waker));
}

static void
completion_waker_unref (WsWaker *waker)
{
  ws_raw_task_unref (ws_raw_task_from_tail (waker));
}

static const WsWakerVTable completion_waker_vtable = {
  completion_waker_wake,
  completion_waker_ref,
  completion_waker_unref,
};

void
ws_join_handle_deliver (WsRawTask        *task,
                        WsCompletionFunc  callback,
                        gpointer          user_data)
{
  Completion *self = ws_raw_task_get_tail (task);

  self->waker.vtable = &completion_waker_vtable;
  self->item.vtable = &completion_item_vtable;
  self->item.next = NULL;
  self->callback = callback;
  self->user_data = user_data;
  self->context = g_main_context_ref_thread_default ();
  self->delivery = ws_delivery_get (self->context);

  /* Registers our waker as the join waker (published by the core's
   * acq_rel CAS, so the completer sees the fields above), or tells that
   * the task has ended already: then we queue it ourselves. Either way
   * the callback runs from the context's dispatch, never from here. */
  if (ws_raw_task_try_read_output (task, &self->waker, NULL))
    ws_delivery_push (self->delivery, &self->item);
}
