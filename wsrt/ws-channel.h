/* ws-channel.h: a bounded multi-producer, multi-consumer async channel
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#if !defined(WSRT_INSIDE) && !defined(WSRT_COMPILATION)
# error "Only <wsrt.h> can be included directly."
#endif

#include "ws-types.h"

G_BEGIN_DECLS

typedef struct _WsChannel WsChannel;

#define WS_TYPE_CHANNEL (ws_channel_get_type ())

WS_AVAILABLE_IN_ALL
GType      ws_channel_get_type      (void) G_GNUC_CONST;
WS_AVAILABLE_IN_ALL
WsChannel *ws_channel_new           (guint            capacity,
                                     GDestroyNotify   item_destroy);
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

typedef struct _WsOneshot WsOneshot;

#define WS_TYPE_ONESHOT (ws_oneshot_get_type ())

WS_AVAILABLE_IN_ALL
GType      ws_oneshot_get_type      (void) G_GNUC_CONST;
WS_AVAILABLE_IN_ALL
WsOneshot *ws_oneshot_new           (GDestroyNotify   item_destroy);
WS_AVAILABLE_IN_ALL
WsOneshot *ws_oneshot_ref           (WsOneshot       *self);
WS_AVAILABLE_IN_ALL
void       ws_oneshot_unref         (WsOneshot       *self);
WS_AVAILABLE_IN_ALL
gboolean   ws_oneshot_send          (WsOneshot       *self,
                                     gpointer         item);
WS_AVAILABLE_IN_ALL
WsPoll     ws_oneshot_poll          (WsOneshot       *self,
                                     WsContext       *context,
                                     gpointer        *item,
                                     GError         **error);
WS_AVAILABLE_IN_ALL
void       ws_oneshot_close         (WsOneshot       *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WsOneshot, ws_oneshot_unref)

G_END_DECLS
