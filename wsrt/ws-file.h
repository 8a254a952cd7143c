/* ws-file.h: ready-made awaitables for file operations
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
#include "ws-runtime.h"
#include "ws-task.h"

G_BEGIN_DECLS

typedef struct _WsFileOp WsFileOp;

#define WS_TYPE_FILE_OP (ws_file_op_get_type ())

WS_AVAILABLE_IN_ALL
GType      ws_file_op_get_type       (void);
WS_AVAILABLE_IN_ALL
WsFileOp  *ws_file_load_contents     (GFile       *file) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsFileOp  *ws_file_replace_contents  (GFile       *file,
                                      GBytes      *contents) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsFileOp  *ws_file_query_info        (GFile       *file,
                                      const char  *attributes) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsFileOp  *ws_file_op_ref            (WsFileOp    *self);
WS_AVAILABLE_IN_ALL
void       ws_file_op_unref          (WsFileOp    *self);
WS_AVAILABLE_IN_ALL
WsPoll     ws_file_op_poll           (WsFileOp    *self,
                                      WsContext   *context);
WS_AVAILABLE_IN_ALL
gboolean   ws_file_op_finish         (WsFileOp    *self,
                                      GError     **error);
WS_AVAILABLE_IN_ALL
GBytes    *ws_file_op_finish_bytes   (WsFileOp    *self,
                                      GError     **error) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
GFileInfo *ws_file_op_finish_info    (WsFileOp    *self,
                                      GError     **error) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsTask    *ws_runtime_load_file      (WsRuntime   *runtime,
                                      GFile       *file) G_GNUC_WARN_UNUSED_RESULT;

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WsFileOp, ws_file_op_unref)

G_END_DECLS
