/* ws-delivery-private.h: the delivery source of a context, for async completions
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * ws-delivery.c keeps the protocol: items queued under the source's lock,
 * delivered in batches by the context's dispatch, each holding its
 * context until then.
 */

#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

typedef struct _WsDelivery     WsDelivery;
typedef struct _WsDeliveryItem WsDeliveryItem;

typedef struct
{
  /* On the context's thread, from its dispatch: runs the callback. */
  void (*deliver) (WsDeliveryItem *item);
  /* The source went away with @item queued, undelivered: free it. */
  void (*discard) (WsDeliveryItem *item);
} WsDeliveryItemVTable;

/* An entry of a delivery queue, embedded in whatever is delivered. While
 * it is queued it must hold a reference on the context it is queued for
 * (ws-delivery.c says why). */
struct _WsDeliveryItem
{
  const WsDeliveryItemVTable *vtable;
  WsDeliveryItem             *next;
};

/* The delivery source of @context, made on first use; valid for as long
 * as the caller holds a reference on @context. */
WsDelivery  *ws_delivery_get          (GMainContext        *context);
/* Queues @item for dispatch on the context of @self. Any thread. */
void         ws_delivery_push         (WsDelivery          *self,
                                       WsDeliveryItem      *item);

G_END_DECLS
