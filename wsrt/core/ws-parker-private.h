/* ws-parker-private.h: a worker sleeps by iterating its GMainContext
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <stdatomic.h>

#include <glib.h>

G_BEGIN_DECLS

typedef struct
{
  _Atomic gint  state;
  GMainContext *context;
} WsParker;

void     ws_parker_init       (WsParker     *self,
                               GMainContext *context);
void     ws_parker_park       (WsParker     *self);
gboolean ws_parker_park_until (WsParker     *self,
                               gint64        deadline);
void     ws_parker_unpark     (WsParker     *self);

G_END_DECLS
