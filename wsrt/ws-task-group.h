/* ws-task-group.h: wait for many tasks
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

G_BEGIN_DECLS

#define WS_TYPE_TASK_GROUP (ws_task_group_get_type ())

WS_AVAILABLE_IN_ALL
G_DECLARE_FINAL_TYPE (WsTaskGroup, ws_task_group, WS, TASK_GROUP, GObject)

WS_AVAILABLE_IN_ALL
WsTaskGroup *ws_task_group_new             (void) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
void         ws_task_group_add             (WsTaskGroup          *self,
                                            WsTask               *task);
WS_AVAILABLE_IN_ALL
guint        ws_task_group_get_size        (WsTaskGroup          *self);
WS_AVAILABLE_IN_ALL
guint        ws_task_group_get_n_finished  (WsTaskGroup          *self);
WS_AVAILABLE_IN_ALL
WsTask      *ws_task_group_get_task        (WsTaskGroup          *self,
                                            guint                 index);
WS_AVAILABLE_IN_ALL
void         ws_task_group_cancel_all      (WsTaskGroup          *self);
WS_AVAILABLE_IN_ALL
WsPoll       ws_task_group_poll_all        (WsTaskGroup          *self,
                                            WsContext            *context);
WS_AVAILABLE_IN_ALL
WsPoll       ws_task_group_poll_any        (WsTaskGroup          *self,
                                            WsContext            *context,
                                            WsTask              **first);
WS_AVAILABLE_IN_ALL
void         ws_task_group_wait_all_async  (WsTaskGroup          *self,
                                            GCancellable         *cancellable,
                                            GAsyncReadyCallback   callback,
                                            gpointer              user_data);
WS_AVAILABLE_IN_ALL
gboolean     ws_task_group_wait_all_finish (WsTaskGroup          *self,
                                            GAsyncResult         *result,
                                            GError              **error);
WS_AVAILABLE_IN_ALL
void         ws_task_group_wait_any_async  (WsTaskGroup          *self,
                                            GCancellable         *cancellable,
                                            GAsyncReadyCallback   callback,
                                            gpointer              user_data);
WS_AVAILABLE_IN_ALL
WsTask      *ws_task_group_wait_any_finish (WsTaskGroup          *self,
                                            GAsyncResult         *result,
                                            GError              **error) G_GNUC_WARN_UNUSED_RESULT;

G_END_DECLS
