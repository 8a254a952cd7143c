/* ws-io-op.h: ready-made awaitables for GIO operations
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

typedef struct _WsIoOp WsIoOp;

#define WS_TYPE_IO_OP (ws_io_op_get_type ())

WS_AVAILABLE_IN_ALL
GType      ws_io_op_get_type           (void);

WS_AVAILABLE_IN_ALL
WsIoOp    *ws_file_load_contents       (GFile               *file) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsIoOp    *ws_file_replace_contents    (GFile               *file,
                                        GBytes              *contents) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsIoOp    *ws_file_query_info          (GFile               *file,
                                        const char          *attributes) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsIoOp    *ws_file_query_info_full     (GFile               *file,
                                        const char          *attributes,
                                        GFileQueryInfoFlags  flags) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsIoOp    *ws_file_enumerate_children  (GFile               *file,
                                        const char          *attributes) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsIoOp    *ws_input_stream_read_all    (GInputStream        *stream) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsIoOp    *ws_output_stream_write_all  (GOutputStream       *stream,
                                        GBytes              *bytes) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsIoOp    *ws_subprocess_communicate   (GSubprocess         *subprocess,
                                        GBytes              *stdin_buf) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsIoOp    *ws_subprocess_wait_check    (GSubprocess         *subprocess) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsIoOp    *ws_dbus_connection_call     (GDBusConnection     *connection,
                                        const char          *bus_name,
                                        const char          *object_path,
                                        const char          *interface_name,
                                        const char          *method_name,
                                        GVariant            *parameters,
                                        const GVariantType  *reply_type,
                                        GDBusCallFlags       flags,
                                        int                  timeout_msec)
                                        G_GNUC_WARN_UNUSED_RESULT;

WS_AVAILABLE_IN_ALL
WsIoOp    *ws_io_op_ref                (WsIoOp              *self);
WS_AVAILABLE_IN_ALL
void       ws_io_op_unref              (WsIoOp              *self);
WS_AVAILABLE_IN_ALL
WsPoll     ws_io_op_poll               (WsIoOp              *self,
                                        WsContext           *context);
WS_AVAILABLE_IN_ALL
gboolean   ws_io_op_finish             (WsIoOp              *self,
                                        GError             **error);
WS_AVAILABLE_IN_ALL
GBytes    *ws_io_op_finish_bytes       (WsIoOp              *self,
                                        GError             **error) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
GFileInfo *ws_io_op_finish_info        (WsIoOp              *self,
                                        GError             **error) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
GPtrArray *ws_io_op_finish_infos       (WsIoOp              *self,
                                        GError             **error) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
GVariant  *ws_io_op_finish_variant     (WsIoOp              *self,
                                        GError             **error) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
gboolean   ws_io_op_finish_communicate (WsIoOp              *self,
                                        GBytes             **stdout_buf,
                                        GBytes             **stderr_buf,
                                        GError             **error);

WS_AVAILABLE_IN_ALL
WsTask    *ws_runtime_spawn_io         (WsRuntime           *runtime,
                                        WsIoOp              *op) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsTask    *ws_runtime_load_file        (WsRuntime           *runtime,
                                        GFile               *file) G_GNUC_WARN_UNUSED_RESULT;

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WsIoOp, ws_io_op_unref)

G_END_DECLS
