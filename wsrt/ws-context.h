/* ws-context.h: the context of one poll, and wakers
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

#define WS_TYPE_CONTEXT (ws_context_get_type ())
#define WS_TYPE_WAKER   (ws_waker_get_type ())

WS_AVAILABLE_IN_ALL
GType    ws_context_get_type       (void);
WS_AVAILABLE_IN_ALL
void     ws_context_return_pointer (WsContext      *self,
                                    gpointer        result,
                                    GDestroyNotify  result_destroy);
WS_AVAILABLE_IN_ALL
void     ws_context_return_value   (WsContext      *self,
                                    const GValue   *value);
WS_AVAILABLE_IN_ALL
void     ws_context_return_uint64  (WsContext      *self,
                                    guint64         value);
WS_AVAILABLE_IN_ALL
void     ws_context_return_error   (WsContext      *self,
                                    GError         *error);
WS_AVAILABLE_IN_ALL
WsPoll   ws_context_yield          (WsContext      *self);
WS_AVAILABLE_IN_ALL
WsWaker *ws_context_get_waker      (WsContext      *self) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
GCancellable *ws_context_get_cancellable (WsContext *self);
WS_AVAILABLE_IN_ALL
void     ws_context_set_task_name  (WsContext      *self,
                                    const char     *name);

WS_AVAILABLE_IN_ALL
GType    ws_waker_get_type         (void);
WS_AVAILABLE_IN_ALL
WsWaker *ws_waker_ref              (WsWaker        *self);
WS_AVAILABLE_IN_ALL
void     ws_waker_unref            (WsWaker        *self);
WS_AVAILABLE_IN_ALL
void     ws_waker_wake             (WsWaker        *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WsWaker, ws_waker_unref)

G_END_DECLS
