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

/* The link from a GCancellable to an async wait that completes a GTask of
 * its own (channels, the limiter, sleeps): a "cancelled" handler, not a
 * GCancellableSource (a GSource per wait, and GLib 2.74 leaks one whose
 * last reference goes while another thread is inside
 * g_cancellable_cancel ()). The handler runs on the cancelling thread;
 * the wait decides its outcome once (its own lock or exchange) and
 * returns its GTask, which calls back on the GTask's context. Whoever
 * completes the wait disconnects the link, the handler included:
 * disconnect takes the id once, so it is safe from any thread, from
 * inside the handler, and twice. Connect before anything else can
 * complete the wait. ws-async-wait.c has the argument. */
typedef struct
{
  GCancellable    *cancellable;   /* the wait's; not a reference */
  _Atomic gulong   id;            /* 0 once disconnected */
} WsCancelLink;

/* Runs once or twice per cancel (the wait decides once): on the
 * cancelling thread, or in connect if @cancellable was cancelled
 * already. */
typedef void (*WsCancelledFunc) (GCancellable *cancellable,
                                 gpointer      data);

void         ws_cancel_link_connect    (WsCancelLink        *link,
                                        GCancellable        *cancellable,
                                        WsCancelledFunc      func,
                                        gpointer             data,
                                        GClosureNotify       data_notify);
void         ws_cancel_link_disconnect (WsCancelLink        *link);

/* For waits whose handler data is their GTask: a new reference on @task
 * and the notify that drops it. */
gpointer     ws_cancel_link_task_ref   (GTask               *task);
void         ws_cancel_link_task_unref (gpointer             data,
                                        GClosure            *closure);

/* ---- a GAsyncResult for waits with a GCancellable ---------------------- */

#define WS_TYPE_ASYNC_WAIT (ws_async_wait_get_type ())
G_DECLARE_FINAL_TYPE (WsAsyncWait, ws_async_wait, WS, ASYNC_WAIT, GObject)

WsAsyncWait *ws_async_wait_new             (GObject             *source_object,
                                            gpointer             source_tag,
                                            GCancellable        *cancellable,
                                            GAsyncReadyCallback  callback,
                                            gpointer             user_data);
WsWaker     *ws_async_wait_get_waker       (WsAsyncWait         *self);
void         ws_async_wait_complete        (WsAsyncWait         *self);
gboolean     ws_async_wait_is_valid        (GAsyncResult        *result,
                                            gpointer             source_object,
                                            gpointer             source_tag);
/* TRUE, with @error set, if the wait was cancelled or dropped unanswered
 * (named with @what, as in "the task"); FALSE if it was woken. Reads
 * only the wait, so a finish function may call it before it touches the
 * awaitable. */
gboolean     ws_async_wait_propagate_error (WsAsyncWait         *self,
                                            const char          *what,
                                            GError             **error);

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
