/* ws-promise.h: a task whose result comes from a callback, for Vala async
 *   methods and GIO-style code
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#if !defined(WSRT_INSIDE) && !defined(WSRT_COMPILATION)
# error "Only <wsrt.h> can be included directly."
#endif

#include <gio/gio.h>

#include "ws-types.h"
#include "ws-task.h"
#include "ws-runtime.h"

G_BEGIN_DECLS

typedef struct _WsPromise WsPromise;

#define WS_TYPE_PROMISE (ws_promise_get_type ())

/**
 * WsPromiseFunc:
 * @promise: the promise that ends the task; take a reference to keep it
 * @user_data: the data given to [method@Ws.Runtime.spawn_promise]
 *
 * Starts the work of a task spawned with [method@Ws.Runtime.spawn_promise],
 * on a worker thread, with the worker's #GMainContext as the
 * thread-default one. It returns at once; whatever it starts ends the task
 * later with [method@Ws.Promise.return_value] or
 * [method@Ws.Promise.return_error].
 */
typedef void (*WsPromiseFunc) (WsPromise *promise,
                               gpointer   user_data);

WS_AVAILABLE_IN_ALL
GType         ws_promise_get_type         (void);
WS_AVAILABLE_IN_ALL
WsPromise    *ws_promise_ref              (WsPromise      *self);
WS_AVAILABLE_IN_ALL
void          ws_promise_unref            (WsPromise      *self);
WS_AVAILABLE_IN_ALL
GCancellable *ws_promise_get_cancellable  (WsPromise      *self);
WS_AVAILABLE_IN_ALL
gboolean      ws_promise_is_completed     (WsPromise      *self);
WS_AVAILABLE_IN_ALL
void          ws_promise_return_value     (WsPromise      *self,
                                           const GValue   *value);
WS_AVAILABLE_IN_ALL
void          ws_promise_return_pointer   (WsPromise      *self,
                                           gpointer        result,
                                           GDestroyNotify  result_destroy);
WS_AVAILABLE_IN_ALL
void          ws_promise_return_error     (WsPromise      *self,
                                           GError         *error);

WS_AVAILABLE_IN_ALL
WsTask       *ws_runtime_spawn_promise    (WsRuntime      *self,
                                           WsPromiseFunc   start,
                                           gpointer        user_data,
                                           GDestroyNotify  destroy) G_GNUC_WARN_UNUSED_RESULT;

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WsPromise, ws_promise_unref)

G_END_DECLS
