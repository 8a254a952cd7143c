/* ws-limiter.h: bounded concurrency, a counting semaphore that tasks await
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
#include "ws-runtime.h"

G_BEGIN_DECLS

typedef struct _WsLimiter       WsLimiter;
typedef struct _WsLimiterWaiter WsLimiterWaiter;

#define WS_TYPE_LIMITER (ws_limiter_get_type ())

WS_AVAILABLE_IN_ALL
GType      ws_limiter_get_type        (void);
WS_AVAILABLE_IN_ALL
WsLimiter *ws_limiter_new             (guint                 max_permits) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsLimiter *ws_limiter_ref             (WsLimiter            *self);
WS_AVAILABLE_IN_ALL
void       ws_limiter_unref           (WsLimiter            *self);
WS_AVAILABLE_IN_ALL
WsPoll     ws_limiter_acquire_poll    (WsLimiter            *self,
                                       WsContext            *context,
                                       WsLimiterWaiter     **waiter);
WS_AVAILABLE_IN_ALL
gboolean   ws_limiter_try_acquire     (WsLimiter            *self);
WS_AVAILABLE_IN_ALL
void       ws_limiter_release         (WsLimiter            *self);
WS_AVAILABLE_IN_ALL
guint      ws_limiter_get_available   (WsLimiter            *self);
WS_AVAILABLE_IN_ALL
guint      ws_limiter_get_max_permits (WsLimiter            *self);
WS_AVAILABLE_IN_ALL
void       ws_limiter_acquire_async   (WsLimiter            *self,
                                       GCancellable         *cancellable,
                                       GAsyncReadyCallback   callback,
                                       gpointer              user_data);
WS_AVAILABLE_IN_ALL
gboolean   ws_limiter_acquire_finish  (WsLimiter            *self,
                                       GAsyncResult         *result,
                                       GError              **error);
WS_AVAILABLE_IN_ALL
WsTask    *ws_limiter_spawn           (WsLimiter            *self,
                                       WsRuntime            *runtime,
                                       WsTaskFunc            func,
                                       gpointer              user_data,
                                       GDestroyNotify        destroy) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsTask    *ws_limiter_spawn_blocking  (WsLimiter            *self,
                                       WsRuntime            *runtime,
                                       WsTaskFunc            func,
                                       gpointer              user_data,
                                       GDestroyNotify        destroy) G_GNUC_WARN_UNUSED_RESULT;

WS_AVAILABLE_IN_ALL
void       ws_limiter_waiter_free     (WsLimiterWaiter      *waiter);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WsLimiter, ws_limiter_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (WsLimiterWaiter, ws_limiter_waiter_free)

G_END_DECLS
