/* ws-join-handle-delivery-private.h: a join handle handed to a callback on a context
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

#include "ws-join-handle.h"

G_BEGIN_DECLS

typedef struct _WsRawTask WsRawTask;

/* The size of the tail (ws_raw_task_new_with_tail) that a task spawned
 * with a callback carries: its join waker, its delivery item, the
 * callback and where to call it (ws-join-handle-delivery.c). */
gsize        ws_join_handle_tail_size (void);
/* Calls @callback with the join handle @task (made with that tail; the
 * caller gives up its join reference) on the thread-default context of
 * the calling thread, once the task has ended; never from inside this
 * call. */
void         ws_join_handle_deliver   (WsRawTask           *task,
                                       WsCompletionFunc     callback,
                                       gpointer             user_data);

G_END_DECLS
