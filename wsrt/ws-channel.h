/* ws-channel.h: a bounded multi-producer, multi-consumer async channel
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

typedef struct _WsChannel WsChannel;

#define WS_TYPE_CHANNEL (ws_channel_get_type ())

WS_AVAILABLE_IN_ALL
GType      ws_channel_get_type           (void);
WS_AVAILABLE_IN_ALL
WsChannel *ws_channel_new                (guint                 capacity,
                                          GDestroyNotify        item_destroy)
                                          G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsChannel *ws_channel_new_for_type       (guint                 capacity,
                                          GType                 item_type)
                                          G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsChannel *ws_channel_ref                (WsChannel            *self);
WS_AVAILABLE_IN_ALL
void       ws_channel_unref              (WsChannel            *self);
WS_AVAILABLE_IN_ALL
GType      ws_channel_get_item_type      (WsChannel            *self);
WS_AVAILABLE_IN_ALL
WsPoll     ws_channel_poll_send          (WsChannel            *self,
                                          WsContext            *context,
                                          gpointer              item,
                                          GError              **error);
WS_AVAILABLE_IN_ALL
WsPoll     ws_channel_poll_receive       (WsChannel            *self,
                                          WsContext            *context,
                                          gpointer             *item,
                                          GError              **error);
WS_AVAILABLE_IN_ALL
gboolean   ws_channel_try_send           (WsChannel            *self,
                                          gpointer              item,
                                          GError              **error);
WS_AVAILABLE_IN_ALL
gboolean   ws_channel_try_receive        (WsChannel            *self,
                                          gpointer             *item,
                                          GError              **error);
WS_AVAILABLE_IN_ALL
WsPoll     ws_channel_poll_send_value    (WsChannel            *self,
                                          WsContext            *context,
                                          const GValue         *value,
                                          GError              **error);
WS_AVAILABLE_IN_ALL
WsPoll     ws_channel_poll_receive_value (WsChannel            *self,
                                          WsContext            *context,
                                          GValue              **value,
                                          GError              **error);
WS_AVAILABLE_IN_ALL
gboolean   ws_channel_try_send_value     (WsChannel            *self,
                                          const GValue         *value,
                                          GError              **error);
WS_AVAILABLE_IN_ALL
GValue    *ws_channel_try_receive_value  (WsChannel            *self,
                                          GError              **error);
WS_AVAILABLE_IN_ALL
void       ws_channel_send_async         (WsChannel            *self,
                                          const GValue         *value,
                                          GCancellable         *cancellable,
                                          GAsyncReadyCallback   callback,
                                          gpointer              user_data);
WS_AVAILABLE_IN_ALL
gboolean   ws_channel_send_finish        (WsChannel            *self,
                                          GAsyncResult         *result,
                                          GError              **error);
WS_AVAILABLE_IN_ALL
void       ws_channel_receive_async      (WsChannel            *self,
                                          GCancellable         *cancellable,
                                          GAsyncReadyCallback   callback,
                                          gpointer              user_data);
WS_AVAILABLE_IN_ALL
GValue    *ws_channel_receive_finish     (WsChannel            *self,
                                          GAsyncResult         *result,
                                          GError              **error);
WS_AVAILABLE_IN_ALL
gboolean   ws_channel_send               (WsChannel            *self,
                                          gpointer              item,
                                          GCancellable         *cancellable,
                                          GError              **error);
WS_AVAILABLE_IN_ALL
gpointer   ws_channel_receive            (WsChannel            *self,
                                          GCancellable         *cancellable,
                                          GError              **error);
WS_AVAILABLE_IN_ALL
gboolean   ws_channel_send_value         (WsChannel            *self,
                                          const GValue         *value,
                                          GCancellable         *cancellable,
                                          GError              **error);
WS_AVAILABLE_IN_ALL
GValue    *ws_channel_receive_value      (WsChannel            *self,
                                          GCancellable         *cancellable,
                                          GError              **error);
WS_AVAILABLE_IN_ALL
void       ws_channel_close              (WsChannel            *self);
WS_AVAILABLE_IN_ALL
gboolean   ws_channel_is_closed          (WsChannel            *self);
WS_AVAILABLE_IN_ALL
guint      ws_channel_get_length         (WsChannel            *self);
WS_AVAILABLE_IN_ALL
guint      ws_channel_get_capacity       (WsChannel            *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WsChannel, ws_channel_unref)

G_END_DECLS
