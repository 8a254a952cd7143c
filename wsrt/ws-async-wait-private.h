/* ws-async-wait-private.h: WsAsyncWait, a GAsyncResult for waits with a GCancellable
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

#include "ws-types.h"

G_BEGIN_DECLS

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

G_END_DECLS
