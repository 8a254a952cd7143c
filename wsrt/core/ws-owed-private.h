/* ws-owed-private.h: completions that GIO owes to a context
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _WsOwed WsOwed;

WsOwed   *ws_owed_acquire  (GMainContext *context);
WsOwed   *ws_owed_acquire_more (WsOwed   *owed);
void      ws_owed_release  (WsOwed       *owed);
gboolean  ws_owed_drain    (GMainContext *context,
                            gint64        deadline);

G_END_DECLS
