/* ws-metrics.h: a snapshot of what a runtime does
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

G_BEGIN_DECLS

#define WS_TYPE_METRICS (ws_metrics_get_type ())

WS_AVAILABLE_IN_ALL
GType      ws_metrics_get_type                        (void);
WS_AVAILABLE_IN_ALL
WsMetrics *ws_metrics_ref                             (WsMetrics *self);
WS_AVAILABLE_IN_ALL
void       ws_metrics_unref                           (WsMetrics *self);
WS_AVAILABLE_IN_ALL
guint      ws_metrics_get_n_workers                   (WsMetrics *self);
WS_AVAILABLE_IN_ALL
guint      ws_metrics_get_alive_tasks                 (WsMetrics *self);
WS_AVAILABLE_IN_ALL
guint64    ws_metrics_get_spawned_tasks               (WsMetrics *self);
WS_AVAILABLE_IN_ALL
guint64    ws_metrics_get_remote_schedule_count       (WsMetrics *self);
WS_AVAILABLE_IN_ALL
guint      ws_metrics_get_injection_queue_depth       (WsMetrics *self);
WS_AVAILABLE_IN_ALL
guint      ws_metrics_get_blocking_threads            (WsMetrics *self);
WS_AVAILABLE_IN_ALL
guint      ws_metrics_get_idle_blocking_threads       (WsMetrics *self);
WS_AVAILABLE_IN_ALL
guint      ws_metrics_get_blocking_queue_depth        (WsMetrics *self);
WS_AVAILABLE_IN_ALL
guint64    ws_metrics_get_worker_poll_count           (WsMetrics *self,
                                                       guint      worker);
WS_AVAILABLE_IN_ALL
guint64    ws_metrics_get_worker_steal_count          (WsMetrics *self,
                                                       guint      worker);
WS_AVAILABLE_IN_ALL
guint64    ws_metrics_get_worker_steal_operations     (WsMetrics *self,
                                                       guint      worker);
WS_AVAILABLE_IN_ALL
guint64    ws_metrics_get_worker_park_count           (WsMetrics *self,
                                                       guint      worker);
WS_AVAILABLE_IN_ALL
guint64    ws_metrics_get_worker_unpark_count         (WsMetrics *self,
                                                       guint      worker);
WS_AVAILABLE_IN_ALL
guint64    ws_metrics_get_worker_noop_count           (WsMetrics *self,
                                                       guint      worker);
WS_AVAILABLE_IN_ALL
guint64    ws_metrics_get_worker_local_schedule_count (WsMetrics *self,
                                                       guint      worker);
WS_AVAILABLE_IN_ALL
guint64    ws_metrics_get_worker_overflow_count       (WsMetrics *self,
                                                       guint      worker);
WS_AVAILABLE_IN_ALL
guint64    ws_metrics_get_worker_forced_yield_count   (WsMetrics *self,
                                                       guint      worker);
WS_AVAILABLE_IN_ALL
guint64    ws_metrics_get_worker_busy_time            (WsMetrics *self,
                                                       guint      worker);
WS_AVAILABLE_IN_ALL
guint      ws_metrics_get_worker_local_queue_depth    (WsMetrics *self,
                                                       guint      worker);
WS_AVAILABLE_IN_ALL
char      *ws_metrics_to_string                       (WsMetrics *self) G_GNUC_WARN_UNUSED_RESULT;

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WsMetrics, ws_metrics_unref)

G_END_DECLS
