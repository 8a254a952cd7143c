/* ws-fiber-io.h: one blocking syscall awaited from a fiber, run off its thread
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
#include "ws-context.h"

G_BEGIN_DECLS

WS_AVAILABLE_IN_ALL
gssize   ws_fiber_read   (WsContext   *cx,
                          int          fd,
                          void        *buf,
                          gsize        count,
                          GError     **error);
WS_AVAILABLE_IN_ALL
gssize   ws_fiber_pread  (WsContext   *cx,
                          int          fd,
                          void        *buf,
                          gsize        count,
                          goffset      offset,
                          GError     **error);
WS_AVAILABLE_IN_ALL
gssize   ws_fiber_write  (WsContext   *cx,
                          int          fd,
                          const void  *buf,
                          gsize        count,
                          GError     **error);
WS_AVAILABLE_IN_ALL
gssize   ws_fiber_pwrite (WsContext   *cx,
                          int          fd,
                          const void  *buf,
                          gsize        count,
                          goffset      offset,
                          GError     **error);
WS_AVAILABLE_IN_ALL
gboolean ws_fiber_fsync  (WsContext   *cx,
                          int          fd,
                          GError     **error);
WS_AVAILABLE_IN_ALL
int      ws_fiber_openat (WsContext   *cx,
                          int          dirfd,
                          const char  *path,
                          int          flags,
                          int          mode,
                          GError     **error);
WS_AVAILABLE_IN_ALL
gboolean ws_fiber_close  (WsContext   *cx,
                          int          fd,
                          GError     **error);

G_END_DECLS
