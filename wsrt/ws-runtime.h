/* ws-runtime.h: a work-stealing task runtime
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
#include "ws-handle.h"
#include "ws-task.h"

G_BEGIN_DECLS

#define WS_TYPE_RUNTIME (ws_runtime_get_type ())

WS_AVAILABLE_IN_ALL
G_DECLARE_FINAL_TYPE (WsRuntime, ws_runtime, WS, RUNTIME, GObject)

WS_AVAILABLE_IN_ALL
WsRuntime *ws_runtime_new            (guint           n_workers) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsRuntime *ws_runtime_get_default    (void);
WS_AVAILABLE_IN_ALL
WsTask    *ws_runtime_spawn          (WsRuntime      *self,
                                      WsTaskFunc      func,
                                      gpointer        user_data,
                                      GDestroyNotify  destroy) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
void       ws_runtime_spawn_detached (WsRuntime      *self,
                                      WsTaskFunc      func,
                                      gpointer        user_data,
                                      GDestroyNotify  destroy);
WS_AVAILABLE_IN_ALL
void       ws_runtime_spawn_detached_with_state (WsRuntime      *self,
                                                 WsTaskFunc      func,
                                                 gconstpointer   state,
                                                 gsize           state_size,
                                                 GDestroyNotify  clear_func);
WS_AVAILABLE_IN_ALL
WsTask    *ws_runtime_spawn_blocking (WsRuntime      *self,
                                      WsTaskFunc      func,
                                      gpointer        user_data,
                                      GDestroyNotify  destroy) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsTask    *ws_runtime_spawn_local    (WsRuntime      *self,
                                      GMainContext   *context,
                                      WsTaskFunc      func,
                                      gpointer        user_data,
                                      GDestroyNotify  destroy) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
void       ws_runtime_spawn_local_detached (WsRuntime    *self,
                                            GMainContext *context,
                                            WsTaskFunc    func,
                                            gpointer      user_data,
                                            GDestroyNotify destroy);
WS_AVAILABLE_IN_ALL
gboolean   ws_runtime_shutdown       (WsRuntime      *self,
                                      gint64          timeout_usec);
WS_AVAILABLE_IN_ALL
WsHandle  *ws_runtime_get_handle     (WsRuntime      *self) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
guint      ws_runtime_get_n_workers  (WsRuntime      *self);
WS_AVAILABLE_IN_ALL
WsMetrics *ws_runtime_get_metrics    (WsRuntime      *self) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
char      *ws_runtime_dump_tasks     (WsRuntime      *self) G_GNUC_WARN_UNUSED_RESULT;

WS_AVAILABLE_IN_ALL
void       ws_runtime_set_on_thread_start (WsRuntime      *self,
                                           WsHookFunc      func,
                                           gpointer        user_data,
                                           GDestroyNotify  destroy);
WS_AVAILABLE_IN_ALL
void       ws_runtime_set_on_thread_stop  (WsRuntime      *self,
                                           WsHookFunc      func,
                                           gpointer        user_data,
                                           GDestroyNotify  destroy);
WS_AVAILABLE_IN_ALL
void       ws_runtime_set_before_park     (WsRuntime      *self,
                                           WsHookFunc      func,
                                           gpointer        user_data,
                                           GDestroyNotify  destroy);
WS_AVAILABLE_IN_ALL
void       ws_runtime_set_after_unpark    (WsRuntime      *self,
                                           WsHookFunc      func,
                                           gpointer        user_data,
                                           GDestroyNotify  destroy);

WS_AVAILABLE_IN_ALL
gboolean   ws_block_in_place         (WsBlockingFunc  func,
                                      gpointer        user_data,
                                      GError        **error);

G_END_DECLS
