/* ws-async-op.h: await any GIO _async/_finish pair from a task
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

G_BEGIN_DECLS

typedef struct _WsAsyncOp WsAsyncOp;

#define WS_TYPE_ASYNC_OP (ws_async_op_get_type ())

WS_AVAILABLE_IN_ALL
GType         ws_async_op_get_type        (void);
WS_AVAILABLE_IN_ALL
WsAsyncOp    *ws_async_op_new             (void) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsAsyncOp    *ws_async_op_ref             (WsAsyncOp    *self);
WS_AVAILABLE_IN_ALL
void          ws_async_op_unref           (WsAsyncOp    *self);
WS_AVAILABLE_IN_ALL
GCancellable *ws_async_op_get_cancellable (WsAsyncOp    *self);
WS_AVAILABLE_IN_ALL
gpointer      ws_async_op_start           (WsAsyncOp    *self,
                                           WsContext    *context) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
void          ws_async_op_callback        (GObject      *source_object,
                                           GAsyncResult *result,
                                           gpointer      user_data);
WS_AVAILABLE_IN_ALL
WsPoll        ws_async_op_poll            (WsAsyncOp    *self,
                                           WsContext    *context);
WS_AVAILABLE_IN_ALL
GAsyncResult *ws_async_op_get_result      (WsAsyncOp    *self);
WS_AVAILABLE_IN_ALL
void          ws_async_op_cancel          (WsAsyncOp    *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WsAsyncOp, ws_async_op_unref)

G_END_DECLS
