/* ws-oneshot.h: one item from one sender to one receiving task
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

typedef struct _WsOneshot WsOneshot;

#define WS_TYPE_ONESHOT (ws_oneshot_get_type ())

WS_AVAILABLE_IN_ALL
GType      ws_oneshot_get_type       (void);
WS_AVAILABLE_IN_ALL
WsOneshot *ws_oneshot_new            (GDestroyNotify        item_destroy) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsOneshot *ws_oneshot_ref            (WsOneshot            *self);
WS_AVAILABLE_IN_ALL
void       ws_oneshot_unref          (WsOneshot            *self);
WS_AVAILABLE_IN_ALL
gboolean   ws_oneshot_send           (WsOneshot            *self,
                                      gpointer              item);
WS_AVAILABLE_IN_ALL
WsPoll     ws_oneshot_poll           (WsOneshot            *self,
                                      WsContext            *context,
                                      gpointer             *item,
                                      GError              **error);
WS_AVAILABLE_IN_ALL
void       ws_oneshot_close          (WsOneshot            *self);
WS_AVAILABLE_IN_ALL
void       ws_oneshot_receive_async  (WsOneshot            *self,
                                      GCancellable         *cancellable,
                                      GAsyncReadyCallback   callback,
                                      gpointer              user_data);
WS_AVAILABLE_IN_ALL
gpointer   ws_oneshot_receive_finish (WsOneshot            *self,
                                      GAsyncResult         *result,
                                      GError              **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WsOneshot, ws_oneshot_unref)

G_END_DECLS
