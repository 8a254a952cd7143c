/* ws-handle.h: a reference to a runtime that tasks can carry
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
#include "ws-task.h"

G_BEGIN_DECLS

#define WS_TYPE_HANDLE (ws_handle_get_type ())

WS_AVAILABLE_IN_ALL
G_DECLARE_FINAL_TYPE (WsHandle, ws_handle, WS, HANDLE, GObject)

WS_AVAILABLE_IN_ALL
WsHandle *ws_handle_get_current (void) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsTask   *ws_handle_spawn       (WsHandle       *self,
                                 WsTaskFunc      func,
                                 gpointer        user_data,
                                 GDestroyNotify  destroy) G_GNUC_WARN_UNUSED_RESULT;

G_END_DECLS
