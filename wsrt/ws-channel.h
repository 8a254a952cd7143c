/* ws-channel.h: a bounded multi-producer, multi-consumer async channel
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

typedef struct _WsChannel WsChannel;

#define WS_TYPE_CHANNEL (ws_channel_get_type ())

WS_AVAILABLE_IN_ALL
GType      ws_channel_get_type      (void);
WS_AVAILABLE_IN_ALL
WsChannel *ws_channel_new           (guint            capacity,
                                     GDestroyNotify   item_destroy) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsChannel *ws_channel_ref           (WsChannel       *self);
WS_AVAILABLE_IN_ALL
void       ws_channel_unref         (WsChannel       *self);
WS_AVAILABLE_IN_ALL
WsPoll     ws_channel_poll_send     (WsChannel       *self,
                                     WsContext       *context,
                                     gpointer         item,
                                     GError         **error);
WS_AVAILABLE_IN_ALL
WsPoll     ws_channel_poll_receive  (WsChannel       *self,
                                     WsContext       *context,
                                     gpointer        *item,
                                     GError         **error);
WS_AVAILABLE_IN_ALL
gboolean   ws_channel_try_send      (WsChannel       *self,
                                     gpointer         item,
                                     GError         **error);
WS_AVAILABLE_IN_ALL
gboolean   ws_channel_try_receive   (WsChannel       *self,
                                     gpointer        *item,
                                     GError         **error);
WS_AVAILABLE_IN_ALL
void       ws_channel_close         (WsChannel       *self);
WS_AVAILABLE_IN_ALL
gboolean   ws_channel_is_closed     (WsChannel       *self);
WS_AVAILABLE_IN_ALL
guint      ws_channel_get_length    (WsChannel       *self);
WS_AVAILABLE_IN_ALL
guint      ws_channel_get_capacity  (WsChannel       *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WsChannel, ws_channel_unref)

G_END_DECLS
