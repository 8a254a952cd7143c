/* ws-async-wait-private.h: batched delivery of async completions
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

#include "ws-join-handle.h"

G_BEGIN_DECLS

typedef struct _WsWaker   WsWaker;
typedef struct _WsRawTask WsRawTask;

/* ---- the delivery source of a context: plain queued items -------------- */

typedef struct _WsDelivery     WsDelivery;
typedef struct _WsDeliveryItem WsDeliveryItem;

typedef struct
{
  /* On the context's thread, from its dispatch: runs the callback. */
  void (*deliver) (WsDeliveryItem *item);
  /* The source went away with @item queued, undelivered: free it. */
  void (*discard) (WsDeliveryItem *item);
} WsDeliveryItemClass;

/* An entry of a delivery queue, embedded in whatever is delivered. While
 * it is queued it must hold a reference on the context it is queued for
 * (ws-async-wait.c says why). */
struct _WsDeliveryItem
{
  const WsDeliveryItemClass *klass;
  WsDeliveryItem            *next;
};

/* The delivery source of @context, made on first use; valid for as long
 * as the caller holds a reference on @context. */
WsDelivery  *ws_delivery_get          (GMainContext        *context);
/* Queues @item for dispatch on the context of @self. Any thread. */
void         ws_delivery_push         (WsDelivery          *self,
                                       WsDeliveryItem      *item);

/* ---- the cancellation of a GTask-backed wait --------------------------- */

/* A GCancellableSource for @cancellable, attached to @task's context and
 * calling @func (cancellable, task) there with a reference on
 * @task; @name names the source. The caller keeps the reference returned
 * and destroys the source when the wait completes first. For the waits
 * that complete a GTask of their own (channels, the limiter). */
GSource     *ws_task_cancel_source_new (GTask                  *task,
                                        GCancellable           *cancellable,
                                        GCancellableSourceFunc  func,
                                        const char             *name);

/* ---- a GAsyncResult for waits with a GCancellable ---------------------- */

#define WS_TYPE_ASYNC_WAIT (ws_async_wait_get_type ())
G_DECLARE_FINAL_TYPE (WsAsyncWait, ws_async_wait, WS, ASYNC_WAIT, GObject)

WsAsyncWait *ws_async_wait_new        (GObject             *source_object,
                                       gpointer             source_tag,
                                       GCancellable        *cancellable,
                                       GAsyncReadyCallback  callback,
                                       gpointer             user_data);
WsWaker     *ws_async_wait_get_waker  (WsAsyncWait         *self);
void         ws_async_wait_complete   (WsAsyncWait         *self);
gboolean     ws_async_wait_is_valid   (GAsyncResult        *result,
                                       gpointer             source_object,
                                       gpointer             source_tag);
gboolean     ws_async_wait_was_cancelled (WsAsyncWait      *self);

/* ---- a join handle handed to a callback on a context ------------------- */

/* The size of the tail (ws_raw_task_new_with_tail) that a task spawned
 * with a callback carries: its join waker, its delivery item, the
 * callback and where to call it (ws-async-wait.c). */
gsize        ws_join_handle_tail_size (void);
/* Calls @callback with the join handle @task (made with that tail; the
 * caller gives up its join reference) on the thread-default context of
 * the calling thread, once the task has ended; never from inside this
 * call. */
void         ws_join_handle_deliver   (WsRawTask           *task,
                                       WsCompletionFunc     callback,
                                       gpointer             user_data);

G_END_DECLS
