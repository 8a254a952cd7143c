/* ws-local-executor-private.h: tasks bound to one GMainContext
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib.h>

#include "ws-config-private.h"
#include "ws-lock-private.h"
#include "ws-raw-task-private.h"
#include "ws-runtime-ref-private.h"
#include "ws-task-registry-private.h"
#include "ws-thread-private.h"

G_BEGIN_DECLS

typedef struct _WsLocalExecutor  WsLocalExecutor;
typedef struct _WsLocalExecutors WsLocalExecutors;

/* One dispatch polls at most this many tasks and runs at most
 * local-slice (WS_LOCAL_SLICE_USEC by default, ws-config-private.h),
 * then returns to the main loop (ws-frame-slice-private.h). */
#define WS_LOCAL_SLICE_MAX_POLLS WS_FRAME_SLICE_MAX_ITEMS

WsLocalExecutors *ws_local_executors_new           (const WsConfig   *config,
                                                    WsRuntimeRef     *runtime);
void              ws_local_executors_free          (WsLocalExecutors *set);
WsLocalExecutor  *ws_local_executors_lookup        (WsLocalExecutors *set,
                                                    GMainContext     *context);
WsRawTask        *ws_local_executors_refuse_spawn  (WsLocalExecutors *set,
                                                    WsTaskHost       *host,
                                                    GMainContext     *context,
                                                    WsTaskFunc        func,
                                                    gpointer          data,
                                                    GDestroyNotify    destroy,
                                                    gboolean          join_interest);
void              ws_local_executors_close         (WsLocalExecutors *set);
gboolean          ws_local_executors_shutdown      (WsLocalExecutors *set,
                                                    gint64            deadline);
gint64            ws_local_executors_count_alive   (WsLocalExecutors *set);
void              ws_local_executors_foreach_task  (WsLocalExecutors *set,
                                                    WsTaskVisitFunc   func,
                                                    gpointer          data);
guint64           ws_local_executors_count_spawned (WsLocalExecutors *set);

void              ws_local_executor_unref            (WsLocalExecutor  *self);
WsRawTask        *ws_local_executor_spawn            (WsLocalExecutor  *self,
                                                      WsTaskFunc        func,
                                                      gpointer          data,
                                                      GDestroyNotify    destroy,
                                                      gboolean          join_interest);
gboolean          ws_local_executor_is_current       (void);
GMainContext     *ws_local_executor_get_host_context (WsTaskHost       *host);

/* The most polls one dispatch made, over the process (for tests). */
extern _Atomic guint ws_local_executor_max_slice_polls;

G_END_DECLS
