/* ws-blocking-pool-private.h: threads for blocking work
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "ws-scheduler-private.h"

G_BEGIN_DECLS

WsBlockingPool *ws_blocking_pool_new        (WsScheduler    *sched);
void            ws_blocking_pool_free       (WsBlockingPool *self);
WsTaskRegistry   *ws_blocking_pool_get_registry  (WsBlockingPool *self);
void            ws_blocking_pool_close      (WsBlockingPool *self);
gboolean        ws_blocking_pool_shutdown   (WsBlockingPool *self,
                                             gint64          deadline);
gboolean        ws_blocking_pool_try_adopt  (WsBlockingPool *self);
void            ws_blocking_pool_run_adopted (WsBlockingPool *self);
void            ws_blocking_pool_drop_adopted_context (void);
void            ws_blocking_pool_set_adopted_context  (GMainContext   *context);
void            ws_blocking_pool_get_counts (WsBlockingPool *self,
                                             guint          *n_threads,
                                             guint          *n_idle,
                                             guint          *queue_depth);

G_END_DECLS
