/* ws-local-executor-private.h: thread-bound tasks polled on a GMainContext
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "ws-scheduler-private.h"

G_BEGIN_DECLS

/* One dispatch polls at most this many tasks and runs at most this long,
 * then returns to the main loop (DESIGN 3). */
#define WS_LOCAL_SLICE_USEC      1000
#define WS_LOCAL_SLICE_MAX_POLLS 256

WsLocalExecutor *ws_local_executor_lookup      (WsScheduler  *sched,
                                                GMainContext *context);
void             ws_local_executor_unref       (WsLocalExecutor *self);
WsRawTask       *ws_local_executor_spawn       (WsLocalExecutor *self,
                                                WsTaskFunc       func,
                                                gpointer         data,
                                                GDestroyNotify   destroy,
                                                gboolean         join_interest);
WsRawTask       *ws_local_executor_refuse_spawn (WsScheduler   *sched,
                                                 GMainContext  *context,
                                                 WsTaskFunc     func,
                                                 gpointer       data,
                                                 GDestroyNotify destroy,
                                                 gboolean       join_interest);
void             ws_local_executors_close      (WsScheduler  *sched);
gboolean         ws_local_executors_shutdown   (WsScheduler  *sched,
                                                gint64        deadline);
gint64           ws_local_executors_count_alive (WsScheduler *sched);
gboolean         ws_local_executor_is_current  (void);

/* The most polls one dispatch made, over the process (for tests). */
extern _Atomic guint ws_local_executor_max_slice_polls;

G_END_DECLS
