/* ws-fiber-gio.h: any GIO-style `_async ()` call awaited in one call from a fiber
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

/**
 * WS_GIO:
 * @cx: the running fiber's #WsContext
 *
 * Expands to the last three arguments of any `_async ()` function (its
 * #GCancellable, its #GAsyncReadyCallback and its user data), so that the
 * call is awaited with [func@Ws.fiber_await_gio], whose result goes to the
 * matching `_finish ()`:
 *
 * ```c
 * g_file_load_contents_async (file, WS_GIO (cx));
 * ok = g_file_load_contents_finish (file, ws_fiber_await_gio (cx), &text, &len, NULL, &error);
 * ```
 *
 * It works with every function that ends in those three arguments: GIO,
 * GTK's `GtkFileDialog`, libsoup, `GDBusProxy`, on worker fibers and on
 * local fibers alike. Cancelling the fiber's task cancels the call.
 *
 * One call at a time per fiber: await each before the next %WS_GIO.
 */
#define WS_GIO(cx) \
  ws_fiber_gio_cancellable (cx), ws_fiber_gio_callback, ws_fiber_gio_user_data (cx)

WS_AVAILABLE_IN_ALL
GAsyncResult *ws_fiber_await_gio       (WsContext    *cx);
WS_AVAILABLE_IN_ALL
GCancellable *ws_fiber_gio_cancellable (WsContext    *cx);
WS_AVAILABLE_IN_ALL
gpointer      ws_fiber_gio_user_data   (WsContext    *cx);
WS_AVAILABLE_IN_ALL
void          ws_fiber_gio_callback    (GObject      *source_object,
                                        GAsyncResult *result,
                                        gpointer      user_data);

G_END_DECLS
