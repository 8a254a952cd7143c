/* ws-fiber-join.h: a fiber awaits several tasks: all of them, or the first to succeed
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

G_BEGIN_DECLS

WS_AVAILABLE_IN_ALL
gboolean ws_fiber_await_all (WsContext      *cx,
                             WsTask * const *tasks,
                             guint           n_tasks,
                             GError        **error);
WS_AVAILABLE_IN_ALL
gint     ws_fiber_await_any (WsContext      *cx,
                             WsTask * const *tasks,
                             guint           n_tasks,
                             GError        **error);

G_END_DECLS
