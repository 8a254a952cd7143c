/* ws-task.h: the join handle of a task
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

#define WS_TYPE_TASK (ws_task_get_type ())

WS_AVAILABLE_IN_ALL
G_DECLARE_FINAL_TYPE (WsTask, ws_task, WS, TASK, GObject)

WS_AVAILABLE_IN_ALL
WsPoll        ws_task_poll              (WsTask               *self,
                                         WsContext            *context);
WS_AVAILABLE_IN_ALL
void          ws_task_cancel            (WsTask               *self);
WS_AVAILABLE_IN_ALL
gboolean      ws_task_is_finished       (WsTask               *self);
WS_AVAILABLE_IN_ALL
void          ws_task_set_name          (WsTask               *self,
                                         const char           *name);
WS_AVAILABLE_IN_ALL
const char   *ws_task_get_name          (WsTask               *self);
WS_AVAILABLE_IN_ALL
gboolean      ws_task_wait              (WsTask               *self,
                                         GCancellable         *cancellable,
                                         GError              **error);
WS_AVAILABLE_IN_ALL
void          ws_task_wait_async        (WsTask               *self,
                                         GCancellable         *cancellable,
                                         GAsyncReadyCallback   callback,
                                         gpointer              user_data);
WS_AVAILABLE_IN_ALL
gboolean      ws_task_wait_finish       (WsTask               *self,
                                         GAsyncResult         *result,
                                         GError              **error);
WS_AVAILABLE_IN_ALL
void          ws_task_wait_timeout_async  (WsTask             *self,
                                           gint64              timeout_usec,
                                           GCancellable       *cancellable,
                                           GAsyncReadyCallback callback,
                                           gpointer            user_data);
WS_AVAILABLE_IN_ALL
gboolean      ws_task_wait_timeout_finish (WsTask             *self,
                                           GAsyncResult       *result,
                                           GError            **error);
WS_AVAILABLE_IN_ALL
const GValue *ws_task_get_value         (WsTask               *self);
WS_AVAILABLE_IN_ALL
gpointer      ws_task_propagate_pointer (WsTask               *self,
                                         GError              **error) G_GNUC_WARN_UNUSED_RESULT;

G_END_DECLS
