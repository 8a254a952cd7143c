/* ws-file.c: ready-made awaitables for file operations
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A WsFileOp is a WsAsyncOp with its GIO call and its _finish() built in:
 * the first poll makes the call, with the task's cancellable linked by
 * ws_async_op_start(); the poll that sees the callback calls _finish()
 * and keeps the outcome for the ws_file_op_finish*() functions.
 */

#include "config.h"

#include <stdatomic.h>

#include "ws-file.h"
#include "ws-async-op.h"
#include "ws-context.h"

typedef enum
{
  WS_FILE_OP_LOAD,
  WS_FILE_OP_REPLACE,
  WS_FILE_OP_QUERY_INFO,
} WsFileOpKind;

struct _WsFileOp
{
  _Atomic gint  ref_count;
  WsFileOpKind  kind;
  GFile        *file;
  GBytes       *contents;      /* REPLACE: what to write */
  char         *attributes;    /* QUERY_INFO */
  /* Touched only by the task that polls the operation. */
  WsAsyncOp    *op;
  gboolean      done;
  GBytes       *bytes;         /* LOAD: the result */
  GFileInfo    *info;          /* QUERY_INFO: the result */
  GError       *error;
};

/**
 * WsFileOp:
 *
 * A file operation to await inside a task: a GIO call and its
 * `_finish()` made for you, on top of [struct@Ws.AsyncOp].
 *
 * ```c
 * typedef struct
 * {
 *   WS_ASYNC_STATE;
 *   WsFileOp *op;
 * } Load;
 *
 * static WsPoll
 * load (WsContext *cx, gpointer user_data)
 * {
 *   Load *s = user_data;
 *   g_autoptr(GError) error = NULL;
 *   g_autoptr(GBytes) bytes = NULL;
 *
 *   WS_ASYNC_BEGIN (s);
 *   WS_AWAIT (s, ws_file_op_poll (s->op, cx));  // s->op = ws_file_load_contents (file)
 *   bytes = ws_file_op_finish_bytes (s->op, &error);
 *   if (bytes == NULL)
 *     WS_ASYNC_RETURN_ERROR (s, cx, g_steal_pointer (&error));
 *   ...
 *   WS_ASYNC_END (s);
 * }
 * ```
 *
 * The first [method@Ws.FileOp.poll] starts the call with a cancellable
 * linked to the task's ([method@Ws.Context.get_cancellable]): cancelling
 * the task cancels the call, and so does releasing the operation while
 * the call is in flight. Once the poll returned %WS_POLL_READY, the
 * finish function of its kind gives the outcome. An operation is polled by
 * one task.
 */

G_DEFINE_BOXED_TYPE (WsFileOp, ws_file_op, ws_file_op_ref, ws_file_op_unref)

static WsFileOp *
file_op_new (WsFileOpKind  kind,
             GFile        *file)
{
  WsFileOp *self = g_new0 (WsFileOp, 1);

  atomic_init (&self->ref_count, 1);
  self->kind = kind;
  self->file = g_object_ref (file);
  return self;
}

/**
 * ws_file_load_contents:
 * @file: the file to load
 *
 * Creates an awaitable that loads the whole of @file
 * (g_file_load_bytes_async()) when a task first polls it. Get the
 * contents with [method@Ws.FileOp.finish_bytes].
 *
 * Returns: (transfer full): a new operation, not started
 */
WsFileOp *
ws_file_load_contents (GFile *file)
{
  g_return_val_if_fail (G_IS_FILE (file), NULL);

  return file_op_new (WS_FILE_OP_LOAD, file);
}

/**
 * ws_file_replace_contents:
 * @file: the file to write
 * @contents: what to write to @file
 *
 * Creates an awaitable that replaces the contents of @file with
 * @contents (g_file_replace_contents_bytes_async(), no backup, no etag
 * check) when a task first polls it. Get the outcome with
 * [method@Ws.FileOp.finish].
 *
 * Returns: (transfer full): a new operation, not started
 */
WsFileOp *
ws_file_replace_contents (GFile  *file,
                          GBytes *contents)
{
  WsFileOp *self;

  g_return_val_if_fail (G_IS_FILE (file), NULL);
  g_return_val_if_fail (contents != NULL, NULL);

  self = file_op_new (WS_FILE_OP_REPLACE, file);
  self->contents = g_bytes_ref (contents);
  return self;
}

/**
 * ws_file_query_info:
 * @file: the file to query
 * @attributes: the attributes to get, as g_file_query_info() takes them
 *   (`"standard::size,time::modified"`)
 *
 * Creates an awaitable that queries @attributes of @file
 * (g_file_query_info_async(), following symbolic links) when a task first
 * polls it. Get the #GFileInfo with [method@Ws.FileOp.finish_info].
 *
 * Returns: (transfer full): a new operation, not started
 */
WsFileOp *
ws_file_query_info (GFile      *file,
                    const char *attributes)
{
  WsFileOp *self;

  g_return_val_if_fail (G_IS_FILE (file), NULL);
  g_return_val_if_fail (attributes != NULL, NULL);

  self = file_op_new (WS_FILE_OP_QUERY_INFO, file);
  self->attributes = g_strdup (attributes);
  return self;
}

/**
 * ws_file_op_ref:
 * @self: a #WsFileOp
 *
 * Takes a reference on @self.
 *
 * Returns: (transfer full): @self
 */
WsFileOp *
ws_file_op_ref (WsFileOp *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  atomic_fetch_add_explicit (&self->ref_count, 1, memory_order_relaxed);
  return self;
}

/**
 * ws_file_op_unref:
 * @self: (transfer full): a #WsFileOp
 *
 * Releases a reference. Releasing the last one while the GIO call is in
 * flight cancels the call.
 */
void
ws_file_op_unref (WsFileOp *self)
{
  g_return_if_fail (self != NULL);

  /* AcqRel: the usual pairing before a free. */
  if (atomic_fetch_sub_explicit (&self->ref_count, 1, memory_order_acq_rel) != 1)
    return;

  g_clear_pointer (&self->op, ws_async_op_unref);
  g_clear_object (&self->file);
  g_clear_pointer (&self->contents, g_bytes_unref);
  g_clear_pointer (&self->attributes, g_free);
  g_clear_pointer (&self->bytes, g_bytes_unref);
  g_clear_object (&self->info);
  g_clear_error (&self->error);
  g_free (self);
}

static void
file_op_start (WsFileOp  *self,
               WsContext *context)
{
  GCancellable *cancellable;

  self->op = ws_async_op_new ();
  cancellable = ws_async_op_get_cancellable (self->op);
  switch (self->kind)
    {
    case WS_FILE_OP_LOAD:
      g_file_load_bytes_async (self->file, cancellable, ws_async_op_callback,
                               ws_async_op_start (self->op, context));
      break;
    case WS_FILE_OP_REPLACE:
      g_file_replace_contents_bytes_async (self->file, self->contents, NULL, FALSE,
                                           G_FILE_CREATE_NONE, cancellable,
                                           ws_async_op_callback,
                                           ws_async_op_start (self->op, context));
      break;
    case WS_FILE_OP_QUERY_INFO:
      g_file_query_info_async (self->file, self->attributes, G_FILE_QUERY_INFO_NONE,
                               G_PRIORITY_DEFAULT, cancellable, ws_async_op_callback,
                               ws_async_op_start (self->op, context));
      break;
    default:
      g_assert_not_reached ();
    }
}

static void
file_op_complete (WsFileOp *self)
{
  GAsyncResult *result = ws_async_op_get_result (self->op);

  switch (self->kind)
    {
    case WS_FILE_OP_LOAD:
      self->bytes = g_file_load_bytes_finish (self->file, result, NULL, &self->error);
      break;
    case WS_FILE_OP_REPLACE:
      g_file_replace_contents_finish (self->file, result, NULL, &self->error);
      break;
    case WS_FILE_OP_QUERY_INFO:
      self->info = g_file_query_info_finish (self->file, result, &self->error);
      break;
    default:
      g_assert_not_reached ();
    }
  /* The result holds the GFile and the task: let them go now. */
  g_clear_pointer (&self->op, ws_async_op_unref);
  self->done = TRUE;
}

/**
 * ws_file_op_poll:
 * @self: a #WsFileOp
 * @context: the context of the task that awaits @self
 *
 * Awaits the operation. The first poll starts the GIO call, linked to the
 * task's cancellable; the poll that sees its callback calls its
 * `_finish()`. Consumes one unit of the cooperative budget while the call
 * is in flight.
 *
 * Returns: %WS_POLL_READY once the outcome is there, to get with the
 *   finish function of the operation's kind
 */
WsPoll
ws_file_op_poll (WsFileOp  *self,
                 WsContext *context)
{
  g_return_val_if_fail (self != NULL, WS_POLL_READY);
  g_return_val_if_fail (context != NULL, WS_POLL_READY);

  if (self->done)
    return WS_POLL_READY;
  if (self->op == NULL)
    file_op_start (self, context);
  if (ws_async_op_poll (self->op, context) == WS_POLL_PENDING)
    return WS_POLL_PENDING;

  file_op_complete (self);
  return WS_POLL_READY;
}

static gboolean
take_error (WsFileOp  *self,
            GError   **error)
{
  if (self->error == NULL)
    return FALSE;
  g_propagate_error (error, g_error_copy (self->error));
  return TRUE;
}

/**
 * ws_file_op_finish:
 * @self: a #WsFileOp that is ready
 * @error: return location for the error of the operation
 *
 * Gets the outcome of an operation once [method@Ws.FileOp.poll] returned
 * %WS_POLL_READY: whether it succeeded. The only finish function of
 * [func@Ws.file_replace_contents]; the others may use it too, to learn
 * the error alone.
 *
 * Returns: %TRUE if the operation succeeded
 */
gboolean
ws_file_op_finish (WsFileOp  *self,
                   GError   **error)
{
  g_return_val_if_fail (self != NULL, FALSE);
  g_return_val_if_fail (self->done, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  return !take_error (self, error);
}

/**
 * ws_file_op_finish_bytes:
 * @self: a #WsFileOp made by [func@Ws.file_load_contents], ready
 * @error: return location for the error of the operation
 *
 * Gets the contents the operation loaded once [method@Ws.FileOp.poll]
 * returned %WS_POLL_READY.
 *
 * Returns: (transfer full) (nullable): the contents of the file, or %NULL
 *   with @error set
 */
GBytes *
ws_file_op_finish_bytes (WsFileOp  *self,
                         GError   **error)
{
  g_return_val_if_fail (self != NULL, NULL);
  g_return_val_if_fail (self->kind == WS_FILE_OP_LOAD, NULL);
  g_return_val_if_fail (self->done, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (take_error (self, error))
    return NULL;
  return g_bytes_ref (self->bytes);
}

/**
 * ws_file_op_finish_info:
 * @self: a #WsFileOp made by [func@Ws.file_query_info], ready
 * @error: return location for the error of the operation
 *
 * Gets the information the operation queried once
 * [method@Ws.FileOp.poll] returned %WS_POLL_READY.
 *
 * Returns: (transfer full) (nullable): the information, or %NULL with
 *   @error set
 */
GFileInfo *
ws_file_op_finish_info (WsFileOp  *self,
                        GError   **error)
{
  g_return_val_if_fail (self != NULL, NULL);
  g_return_val_if_fail (self->kind == WS_FILE_OP_QUERY_INFO, NULL);
  g_return_val_if_fail (self->done, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (take_error (self, error))
    return NULL;
  return g_object_ref (self->info);
}

/* ws_runtime_load_file's task: the state is the operation. */
static WsPoll
load_file_func (WsContext *cx,
                gpointer   user_data)
{
  WsFileOp *op = user_data;
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) bytes = NULL;
  g_auto(GValue) value = G_VALUE_INIT;

  if (ws_file_op_poll (op, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;

  bytes = ws_file_op_finish_bytes (op, &error);
  if (bytes == NULL)
    {
      ws_context_return_error (cx, g_steal_pointer (&error));
      return WS_POLL_READY;
    }
  g_value_init (&value, G_TYPE_BYTES);
  g_value_take_boxed (&value, g_steal_pointer (&bytes));
  ws_context_return_value (cx, &value);
  return WS_POLL_READY;
}

/**
 * ws_runtime_load_file:
 * @runtime: a #WsRuntime
 * @file: the file to load
 *
 * Spawns a task on the workers of @runtime that loads the whole of @file;
 * its value ([method@Ws.Task.get_value]) is a #GBytes with the contents,
 * its error the one of the load (`G_IO_ERROR_NOT_FOUND` for a missing
 * file). Cancelling the task cancels the load.
 *
 * No callback runs on a worker, so JavaScript may call it and await the
 * task:
 *
 * ```js
 * const task = rt.load_file(Gio.File.new_for_path('data.json'));
 * const bytes = await Wsrt.result(task);
 * ```
 *
 * Returns: (transfer full): the task that loads @file
 */
WsTask *
ws_runtime_load_file (WsRuntime *runtime,
                      GFile     *file)
{
  g_return_val_if_fail (WS_IS_RUNTIME (runtime), NULL);
  g_return_val_if_fail (G_IS_FILE (file), NULL);

  return ws_runtime_spawn (runtime, load_file_func, ws_file_load_contents (file),
                           (GDestroyNotify) ws_file_op_unref);
}
