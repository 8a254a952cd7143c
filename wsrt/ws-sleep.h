/* ws-sleep.h: timers for tasks
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

typedef struct _WsSleep WsSleep;

#define WS_TYPE_SLEEP (ws_sleep_get_type ())

WS_AVAILABLE_IN_ALL
GType    ws_sleep_get_type     (void);
WS_AVAILABLE_IN_ALL
WsSleep *ws_sleep_new          (gint64                duration_usec) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsSleep *ws_sleep_new_deadline (gint64                deadline_usec) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsSleep *ws_sleep_ref          (WsSleep              *self);
WS_AVAILABLE_IN_ALL
void     ws_sleep_unref        (WsSleep              *self);
WS_AVAILABLE_IN_ALL
gint64   ws_sleep_get_deadline (WsSleep              *self);
WS_AVAILABLE_IN_ALL
void     ws_sleep_reset        (WsSleep              *self,
                                gint64                deadline_usec);
WS_AVAILABLE_IN_ALL
WsPoll   ws_sleep_poll         (WsSleep              *self,
                                WsContext            *context);
WS_AVAILABLE_IN_ALL
WsPoll   ws_sleep_race         (WsSleep              *self,
                                WsContext            *context,
                                WsPoll                poll,
                                gboolean             *timed_out);
WS_AVAILABLE_IN_ALL
void     ws_sleep_wait_async   (WsSleep              *self,
                                GCancellable         *cancellable,
                                GAsyncReadyCallback   callback,
                                gpointer              user_data);
WS_AVAILABLE_IN_ALL
gboolean ws_sleep_wait_finish  (WsSleep              *self,
                                GAsyncResult         *result,
                                GError              **error);
WS_AVAILABLE_IN_ALL
void     ws_sleep_for_async    (gint64                duration_usec,
                                GCancellable         *cancellable,
                                GAsyncReadyCallback   callback,
                                gpointer              user_data);
WS_AVAILABLE_IN_ALL
gboolean ws_sleep_for_finish   (GAsyncResult         *result,
                                GError              **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WsSleep, ws_sleep_unref)

G_END_DECLS
