/* ws-async-wait-private.h: batched delivery of async completions
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define WS_TYPE_ASYNC_WAIT (ws_async_wait_get_type ())
G_DECLARE_FINAL_TYPE (WsAsyncWait, ws_async_wait, WS, ASYNC_WAIT, GObject)

typedef struct _WsWaker WsWaker;

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

G_END_DECLS
