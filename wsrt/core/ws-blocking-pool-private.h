/* ws-blocking-pool-private.h: threads for blocking work
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib.h>

#include "ws-config-private.h"
#include "ws-lock-private.h"
#include "ws-parker-private.h"
#include "ws-raw-task-private.h"
#include "ws-runtime-ref-private.h"
#include "ws-task-registry-private.h"
#include "ws-thread-private.h"

G_BEGIN_DECLS

typedef struct _WsBlockingPool WsBlockingPool;

WsBlockingPool *ws_blocking_pool_new          (const WsConfig *config,
                                               WsRuntimeRef   *runtime);
void            ws_blocking_pool_free         (WsBlockingPool *self);
WsRawTask      *ws_blocking_pool_spawn        (WsBlockingPool *self,
                                               WsTaskFunc      func,
                                               gpointer        data,
                                               GDestroyNotify  destroy,
                                               gboolean        join_interest);
WsTaskRegistry *ws_blocking_pool_get_registry (WsBlockingPool *self);
void            ws_blocking_pool_close        (WsBlockingPool *self);
gboolean        ws_blocking_pool_shutdown     (WsBlockingPool *self,
                                               gint64          deadline);
gboolean        ws_blocking_pool_try_adopt    (WsBlockingPool *self);
void            ws_blocking_pool_run_adopted  (WsBlockingPool *self);
void            ws_blocking_pool_get_counts   (WsBlockingPool *self,
                                               guint          *n_threads,
                                               guint          *n_idle,
                                               guint          *queue_depth);
guint64         ws_blocking_pool_get_n_overdue (WsBlockingPool *self);

G_END_DECLS
