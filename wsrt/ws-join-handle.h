/* ws-join-handle.h: a join handle that costs no more than the task
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#if !defined(WSRT_INSIDE) && !defined(WSRT_COMPILATION)
# error "Only <wsrt.h> can be included directly."
#endif

#include <glib-object.h>

#include "ws-types.h"
#include "ws-task.h"
#include "ws-runtime.h"

G_BEGIN_DECLS

typedef struct _WsJoinHandle WsJoinHandle;

/**
 * WsCompletionFunc:
 * @handle: (transfer full): the join handle of the task, which has ended
 * @user_data: the data given with the callback
 *
 * Called on a main context when a task spawned with
 * [method@Ws.Runtime.spawn_with_callback] has ended. @handle is the
 * callback's: take the outcome with [method@Ws.JoinHandle.finish] or
 * [method@Ws.JoinHandle.finish_uint64] (which free it), or let go of it
 * with [method@Ws.JoinHandle.free].
 */
typedef void (*WsCompletionFunc) (WsJoinHandle *handle,
                                  gpointer      user_data);

WS_AVAILABLE_IN_ALL
WsJoinHandle *ws_context_spawn             (WsContext      *context,
                                            WsTaskFunc      func,
                                            gpointer        user_data,
                                            GDestroyNotify  destroy) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsJoinHandle *ws_context_spawn_with_state  (WsContext      *context,
                                            WsTaskFunc      func,
                                            gconstpointer   state,
                                            gsize           state_size,
                                            GDestroyNotify  clear_func) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsJoinHandle *ws_runtime_spawn_joinable    (WsRuntime      *self,
                                            WsTaskFunc      func,
                                            gpointer        user_data,
                                            GDestroyNotify  destroy) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
gboolean      ws_runtime_spawn_with_callback (WsRuntime        *self,
                                              WsTaskFunc        func,
                                              gpointer          user_data,
                                              GDestroyNotify    destroy,
                                              WsCompletionFunc  callback,
                                              gpointer          callback_data);
WS_AVAILABLE_IN_ALL
WsPoll        ws_join_handle_poll          (WsJoinHandle   *self,
                                            WsContext      *context);
WS_AVAILABLE_IN_ALL
gboolean      ws_join_handle_is_finished   (WsJoinHandle   *self);
WS_AVAILABLE_IN_ALL
void          ws_join_handle_set_name      (WsJoinHandle   *self,
                                            const char     *name);
WS_AVAILABLE_IN_ALL
const char   *ws_join_handle_get_name      (WsJoinHandle   *self);
WS_AVAILABLE_IN_ALL
gboolean      ws_join_handle_wait          (WsJoinHandle   *self,
                                            GError        **error);
WS_AVAILABLE_IN_ALL
void          ws_join_handle_cancel        (WsJoinHandle   *self);
WS_AVAILABLE_IN_ALL
gpointer      ws_join_handle_finish        (WsJoinHandle   *self,
                                            GError        **error) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
gboolean      ws_join_handle_finish_uint64 (WsJoinHandle   *self,
                                            guint64        *value,
                                            GError        **error);
WS_AVAILABLE_IN_ALL
WsTask       *ws_join_handle_into_task     (WsJoinHandle   *self) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
void          ws_join_handle_free          (WsJoinHandle   *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WsJoinHandle, ws_join_handle_free)

G_END_DECLS
