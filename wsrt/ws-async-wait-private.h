/* ws-async-wait-private.h: WsAsyncWait, an async wait that a waker ends
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

#include "ws-types.h"

G_BEGIN_DECLS

/* The data of a GTask, which is the wait's GAsyncResult: a waker for the
 * core and a WsCompletion (ws-completion-private.h). For the waits of a
 * task with a GCancellable, a group's waits and a oneshot's receive. */
typedef struct _WsAsyncWait WsAsyncWait;

/* A new wait, holding the caller's reference; @what names what is
 * awaited in its errors ("the task"). */
WsAsyncWait *ws_async_wait_new             (gpointer             source_object,
                                            gpointer             source_tag,
                                            const char          *what,
                                            GCancellable        *cancellable,
                                            GAsyncReadyCallback  callback,
                                            gpointer             user_data);
WsWaker     *ws_async_wait_get_waker       (WsAsyncWait         *self);
/* The awaited thing is done: deliver (unless the wait ended first). */
void         ws_async_wait_complete        (WsAsyncWait         *self);
/* Drops the caller's reference. */
void         ws_async_wait_unref           (WsAsyncWait         *self);
gboolean     ws_async_wait_is_valid        (GAsyncResult        *result,
                                            gpointer             source_object,
                                            gpointer             source_tag);
/* TRUE, with @error set, if the wait was cancelled or dropped unanswered;
 * FALSE if it was woken. Reads only the result, so a finish function may
 * call it before it touches the awaitable. */
gboolean     ws_async_wait_propagate_error (GAsyncResult        *result,
                                            GError             **error);

G_END_DECLS
