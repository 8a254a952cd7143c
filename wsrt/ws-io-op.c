/* ws-io-op.c: ready-made awaitables for GIO operations
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A WsIoOp is one or more WsAsyncOp steps with their GIO calls and their
 * _finish() built in. The constructor only keeps the arguments (checked
 * against every precondition of the GIO call, so that the call, made
 * later on a worker, never refuses and never leaves the task waiting for
 * a callback that will not come). The first poll makes the first call, on
 * the polling thread's thread-default context (doc/architecture.md,
 * "Rules: main contexts"), with a fresh WsAsyncOp whose cancellable
 * ws_async_op_start() links to the task's; the poll that sees a step's
 * callback calls its _finish() and either starts the next step (the
 * batches of an enumeration, the chunks of a read) or stores the outcome
 * and sets `done`.
 *
 * Ownership and ordering: the arguments are written by the constructor
 * and only read afterwards. The poll state (`op`, `step`, the partial and
 * final results, `error`) belongs to the one task that polls the
 * operation: a task's polls are ordered by its RUNNING bit, so they need
 * no lock. Another thread reads the outcome only after the polling task
 * ended: the task's end (the completer's release of COMPLETE, read with
 * acquire by the waiter, or the delivery queue's lock for an async wait)
 * comes after the poll that stored the outcome, so it publishes it.
 * `done` is atomic as well (release after the outcome, acquire in the
 * finish functions), so a finish that a program calls too early, from
 * another thread, reads a clean "not ready" instead of racing the poll.
 */

#include "config.h"

#include <stdatomic.h>

#include "ws-io-op.h"
#include "ws-async-op.h"
#include "ws-context.h"

typedef enum
{
  WS_IO_OP_LOAD,
  WS_IO_OP_REPLACE,
  WS_IO_OP_QUERY_INFO,
  WS_IO_OP_ENUMERATE,
  WS_IO_OP_READ_ALL,
  WS_IO_OP_WRITE_ALL,
  WS_IO_OP_COMMUNICATE,
  WS_IO_OP_DBUS_CALL,
  WS_IO_OP_N_KINDS
} WsIoOpKind;

/* Per kind: the constructor and the finish function that takes its result
 * (what a refused finish names). */
static const struct
{
  const char *constructor;
  const char *finish;
} kind_names[WS_IO_OP_N_KINDS] = {
  [WS_IO_OP_LOAD] = { "ws_file_load_contents", "ws_io_op_finish_bytes" },
  [WS_IO_OP_REPLACE] = { "ws_file_replace_contents", "ws_io_op_finish" },
  [WS_IO_OP_QUERY_INFO] = { "ws_file_query_info", "ws_io_op_finish_info" },
  [WS_IO_OP_ENUMERATE] = { "ws_file_enumerate_children", "ws_io_op_finish_infos" },
  [WS_IO_OP_READ_ALL] = { "ws_input_stream_read_all", "ws_io_op_finish_bytes" },
  [WS_IO_OP_WRITE_ALL] = { "ws_output_stream_write_all", "ws_io_op_finish" },
  [WS_IO_OP_COMMUNICATE] = { "ws_subprocess_communicate", "ws_io_op_finish_communicate" },
  [WS_IO_OP_DBUS_CALL] = { "ws_dbus_connection_call", "ws_io_op_finish_variant" },
};

/* An enumeration asks for this many GFileInfo per call. */
#define ENUMERATE_BATCH 64

/* A read asks for this much first, doubling up to the maximum. */
#define READ_CHUNK_MIN (16 * 1024)
#define READ_CHUNK_MAX (1024 * 1024)

/* The steps of an enumeration. */
enum
{
  STEP_ENUMERATE,
  STEP_NEXT_FILES,
  STEP_CLOSE,
};

struct _WsIoOp
{
  _Atomic gint        ref_count;
  WsIoOpKind          kind;

  /* The arguments, written by the constructor. */
  GObject            *source;        /* the GFile, stream, GSubprocess or GDBusConnection */
  GBytes             *input;         /* REPLACE, WRITE_ALL, COMMUNICATE (stdin) */
  char               *attributes;    /* QUERY_INFO, ENUMERATE */
  char               *bus_name;      /* DBUS_CALL */
  char               *object_path;
  char               *interface_name;
  char               *method_name;
  GVariant           *parameters;
  GVariantType       *reply_type;
  GDBusCallFlags      call_flags;
  int                 timeout_msec;

  /* The poll state: the polling task's alone (see the top). */
  WsAsyncOp          *op;            /* the step in flight */
  guint               step;
  GFileEnumerator    *enumerator;    /* ENUMERATE */
  GByteArray         *buffer;        /* READ_ALL: what was read so far */
  gsize               chunk;         /* READ_ALL: the size of the read in flight */

  /* The outcome, set before `done`. */
  GBytes             *bytes;         /* LOAD, READ_ALL */
  GFileInfo          *info;          /* QUERY_INFO */
  GPtrArray          *infos;         /* ENUMERATE */
  GVariant           *variant;       /* DBUS_CALL */
  GBytes             *stdout_bytes;  /* COMMUNICATE */
  GBytes             *stderr_bytes;
  GError             *error;
  _Atomic gboolean    done;
};

/**
 * WsIoOp:
 *
 * A GIO operation to await inside a task: the `_async()` call and its
 * `_finish()` made for you, on top of [struct@Ws.AsyncOp]. One type for
 * every operation; the constructor says which (files, streams,
 * subprocesses, D-Bus), the finish function of the kind takes the result:
 *
 * | constructor | finish |
 * | --- | --- |
 * | [func@Ws.file_load_contents] | [method@Ws.IoOp.finish_bytes] |
 * | [func@Ws.file_replace_contents] | [method@Ws.IoOp.finish] |
 * | [func@Ws.file_query_info] | [method@Ws.IoOp.finish_info] |
 * | [func@Ws.file_enumerate_children] | [method@Ws.IoOp.finish_infos] |
 * | [func@Ws.input_stream_read_all] | [method@Ws.IoOp.finish_bytes] |
 * | [func@Ws.output_stream_write_all] | [method@Ws.IoOp.finish] |
 * | [func@Ws.subprocess_communicate] | [method@Ws.IoOp.finish_communicate] |
 * | [func@Ws.dbus_connection_call] | [method@Ws.IoOp.finish_variant] |
 *
 * ```c
 * typedef struct
 * {
 *   WS_ASYNC_STATE;
 *   WsIoOp *op;
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
 *   WS_AWAIT (s, ws_io_op_poll (s->op, cx));  // s->op = ws_file_load_contents (file)
 *   bytes = ws_io_op_finish_bytes (s->op, &error);
 *   if (bytes == NULL)
 *     WS_ASYNC_RETURN_ERROR (s, cx, g_steal_pointer (&error));
 *   ...
 *   WS_ASYNC_END (s);
 * }
 * ```
 *
 * The first [method@Ws.IoOp.poll] makes the GIO call on the polling
 * thread, which completes it on that thread's context, with a cancellable
 * linked to the task's ([method@Ws.Context.get_cancellable]): cancelling
 * the task cancels the call, and so does releasing the operation while
 * the call is in flight. Once the poll returned %WS_POLL_READY, the
 * finish function of its kind gives the outcome, as often as asked; a
 * finish function of another kind is refused with a critical that names
 * the right one. An operation is polled by one task at a time. JavaScript,
 * which cannot run on the workers, awaits one with
 * [method@Ws.Runtime.spawn_io].
 */

G_DEFINE_BOXED_TYPE (WsIoOp, ws_io_op, ws_io_op_ref, ws_io_op_unref)

static WsIoOp *
io_op_new (WsIoOpKind  kind,
           gpointer    source)
{
  WsIoOp *self = g_new0 (WsIoOp, 1);

  atomic_init (&self->ref_count, 1);
  atomic_init (&self->done, FALSE);
  self->kind = kind;
  self->source = g_object_ref (source);
  return self;
}

/**
 * ws_file_load_contents:
 * @file: the file to load
 *
 * Creates an awaitable that loads the whole of @file
 * (g_file_load_bytes_async()) when a task first polls it. Get the
 * contents with [method@Ws.IoOp.finish_bytes].
 *
 * Returns: (transfer full): a new operation, not started
 */
WsIoOp *
ws_file_load_contents (GFile *file)
{
  g_return_val_if_fail (G_IS_FILE (file), NULL);

  return io_op_new (WS_IO_OP_LOAD, file);
}

/**
 * ws_file_replace_contents:
 * @file: the file to write
 * @contents: what to write to @file
 *
 * Creates an awaitable that replaces the contents of @file with
 * @contents (g_file_replace_contents_bytes_async(), no backup, no etag
 * check) when a task first polls it. Get the outcome with
 * [method@Ws.IoOp.finish].
 *
 * Returns: (transfer full): a new operation, not started
 */
WsIoOp *
ws_file_replace_contents (GFile  *file,
                          GBytes *contents)
{
  WsIoOp *self;

  g_return_val_if_fail (G_IS_FILE (file), NULL);
  g_return_val_if_fail (contents != NULL, NULL);

  self = io_op_new (WS_IO_OP_REPLACE, file);
  self->input = g_bytes_ref (contents);
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
 * polls it. Get the #GFileInfo with [method@Ws.IoOp.finish_info].
 *
 * Returns: (transfer full): a new operation, not started
 */
WsIoOp *
ws_file_query_info (GFile      *file,
                    const char *attributes)
{
  WsIoOp *self;

  g_return_val_if_fail (G_IS_FILE (file), NULL);
  g_return_val_if_fail (attributes != NULL, NULL);

  self = io_op_new (WS_IO_OP_QUERY_INFO, file);
  self->attributes = g_strdup (attributes);
  return self;
}

/**
 * ws_file_enumerate_children:
 * @file: the directory to list
 * @attributes: the attributes to get for each child, as
 *   g_file_enumerate_children() takes them (`"standard::name,standard::type"`)
 *
 * Creates an awaitable that lists every child of @file with @attributes
 * when a task first polls it: g_file_enumerate_children_async(), then
 * g_file_enumerator_next_files_async() in batches until the end, then
 * g_file_enumerator_close_async(); symbolic links are followed. Get the
 * children with [method@Ws.IoOp.finish_infos]. A directory that does not
 * exist fails with `G_IO_ERROR_NOT_FOUND`, a file that is no directory
 * with `G_IO_ERROR_NOT_DIRECTORY`.
 *
 * Returns: (transfer full): a new operation, not started
 */
WsIoOp *
ws_file_enumerate_children (GFile      *file,
                            const char *attributes)
{
  WsIoOp *self;

  g_return_val_if_fail (G_IS_FILE (file), NULL);
  g_return_val_if_fail (attributes != NULL, NULL);

  self = io_op_new (WS_IO_OP_ENUMERATE, file);
  self->attributes = g_strdup (attributes);
  return self;
}

/**
 * ws_input_stream_read_all:
 * @stream: the stream to read
 *
 * Creates an awaitable that reads @stream to its end
 * (g_input_stream_read_all_async() into a growing buffer) when a task
 * first polls it. Get what was read with [method@Ws.IoOp.finish_bytes].
 * The stream is not closed. Nothing else may use @stream until the
 * operation is ready (GIO fails the read with `G_IO_ERROR_PENDING` if
 * another operation is pending on it).
 *
 * Returns: (transfer full): a new operation, not started
 */
WsIoOp *
ws_input_stream_read_all (GInputStream *stream)
{
  g_return_val_if_fail (G_IS_INPUT_STREAM (stream), NULL);

  return io_op_new (WS_IO_OP_READ_ALL, stream);
}

/**
 * ws_output_stream_write_all:
 * @stream: the stream to write to
 * @bytes: what to write
 *
 * Creates an awaitable that writes the whole of @bytes to @stream
 * (g_output_stream_write_all_async()) when a task first polls it. Get the
 * outcome with [method@Ws.IoOp.finish]. The stream is neither flushed nor
 * closed. Nothing else may use @stream until the operation is ready.
 *
 * Returns: (transfer full): a new operation, not started
 */
WsIoOp *
ws_output_stream_write_all (GOutputStream *stream,
                            GBytes        *bytes)
{
  WsIoOp *self;

  g_return_val_if_fail (G_IS_OUTPUT_STREAM (stream), NULL);
  g_return_val_if_fail (bytes != NULL, NULL);

  self = io_op_new (WS_IO_OP_WRITE_ALL, stream);
  self->input = g_bytes_ref (bytes);
  return self;
}

/**
 * ws_subprocess_communicate:
 * @subprocess: a started subprocess
 * @stdin_buf: (nullable): what to write to its standard input, which
 *   @subprocess must then have as a pipe (`G_SUBPROCESS_FLAGS_STDIN_PIPE`)
 *
 * Creates an awaitable that feeds @stdin_buf to @subprocess, collects
 * its standard output and error (those it has as pipes) and waits for it
 * to exit (g_subprocess_communicate_async()) when a task first polls it.
 * With a standard input pipe and no @stdin_buf, the pipe is closed at
 * once. Get the output and the exit check with
 * [method@Ws.IoOp.finish_communicate].
 *
 * Cancelling the task stops the communication, not the process: call
 * g_subprocess_force_exit() for that.
 *
 * Returns: (transfer full): a new operation, not started
 */
WsIoOp *
ws_subprocess_communicate (GSubprocess *subprocess,
                           GBytes      *stdin_buf)
{
  WsIoOp *self;

  g_return_val_if_fail (G_IS_SUBPROCESS (subprocess), NULL);
  g_return_val_if_fail (stdin_buf == NULL || g_subprocess_get_stdin_pipe (subprocess) != NULL,
                        NULL);

  self = io_op_new (WS_IO_OP_COMMUNICATE, subprocess);
  /* GIO asserts that a process with a stdin pipe gets a buffer. */
  if (stdin_buf != NULL)
    self->input = g_bytes_ref (stdin_buf);
  else if (g_subprocess_get_stdin_pipe (subprocess) != NULL)
    self->input = g_bytes_new_static ("", 0);
  return self;
}

/**
 * ws_dbus_connection_call:
 * @connection: a #GDBusConnection
 * @bus_name: (nullable): the unique or well-known name of the peer, or
 *   %NULL on a peer-to-peer connection
 * @object_path: the path of the remote object
 * @interface_name: the D-Bus interface of the method
 * @method_name: the method to call
 * @parameters: (nullable): a tuple with the arguments, or %NULL for none;
 *   a floating reference is consumed
 * @reply_type: (nullable): the type the reply must have (a tuple type),
 *   or %NULL to take any
 * @flags: flags for the call
 * @timeout_msec: the timeout in milliseconds, -1 for the default one,
 *   %G_MAXINT for none
 *
 * Creates an awaitable that calls @method_name (g_dbus_connection_call())
 * when a task first polls it. Get the reply with
 * [method@Ws.IoOp.finish_variant]. An error returned by the peer arrives
 * as a #GError that g_dbus_error_get_remote_error() reads; a reply of
 * another type than @reply_type fails with `G_IO_ERROR_INVALID_ARGUMENT`.
 *
 * Returns: (transfer full): a new operation, not started
 */
WsIoOp *
ws_dbus_connection_call (GDBusConnection    *connection,
                         const char         *bus_name,
                         const char         *object_path,
                         const char         *interface_name,
                         const char         *method_name,
                         GVariant           *parameters,
                         const GVariantType *reply_type,
                         GDBusCallFlags      flags,
                         int                 timeout_msec)
{
  g_autoptr(GVariant) sunk = parameters != NULL ? g_variant_ref_sink (parameters) : NULL;
  WsIoOp *self;

  /* The preconditions of g_dbus_connection_call(), checked here where
   * the caller sees them. A refused call still releases @parameters. */
  g_return_val_if_fail (G_IS_DBUS_CONNECTION (connection), NULL);
  g_return_val_if_fail (bus_name == NULL || g_dbus_is_name (bus_name), NULL);
  g_return_val_if_fail (object_path != NULL && g_variant_is_object_path (object_path), NULL);
  g_return_val_if_fail (interface_name != NULL && g_dbus_is_interface_name (interface_name), NULL);
  g_return_val_if_fail (method_name != NULL && g_dbus_is_member_name (method_name), NULL);
  g_return_val_if_fail (timeout_msec >= 0 || timeout_msec == -1, NULL);
  g_return_val_if_fail (sunk == NULL || g_variant_is_of_type (sunk, G_VARIANT_TYPE_TUPLE), NULL);

  self = io_op_new (WS_IO_OP_DBUS_CALL, connection);
  self->bus_name = g_strdup (bus_name);
  self->object_path = g_strdup (object_path);
  self->interface_name = g_strdup (interface_name);
  self->method_name = g_strdup (method_name);
  self->parameters = g_steal_pointer (&sunk);
  self->reply_type = reply_type != NULL ? g_variant_type_copy (reply_type) : NULL;
  self->call_flags = flags;
  self->timeout_msec = timeout_msec;
  return self;
}

/**
 * ws_io_op_ref:
 * @self: a #WsIoOp
 *
 * Takes a reference on @self.
 *
 * Returns: (transfer full): @self
 */
WsIoOp *
ws_io_op_ref (WsIoOp *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  atomic_fetch_add_explicit (&self->ref_count, 1, memory_order_relaxed);
  return self;
}

/**
 * ws_io_op_unref:
 * @self: (transfer full): a #WsIoOp
 *
 * Releases a reference. Releasing the last one while a GIO call is in
 * flight cancels the call.
 */
void
ws_io_op_unref (WsIoOp *self)
{
  g_return_if_fail (self != NULL);

  /* AcqRel: the usual pairing before a free; it also orders the polling
   * task's writes before the free on whichever thread drops last. */
  if (atomic_fetch_sub_explicit (&self->ref_count, 1, memory_order_acq_rel) != 1)
    return;

  g_clear_pointer (&self->op, ws_async_op_unref);
  g_clear_object (&self->enumerator);
  g_clear_pointer (&self->buffer, g_byte_array_unref);
  g_clear_object (&self->source);
  g_clear_pointer (&self->input, g_bytes_unref);
  g_clear_pointer (&self->attributes, g_free);
  g_clear_pointer (&self->bus_name, g_free);
  g_clear_pointer (&self->object_path, g_free);
  g_clear_pointer (&self->interface_name, g_free);
  g_clear_pointer (&self->method_name, g_free);
  g_clear_pointer (&self->parameters, g_variant_unref);
  g_clear_pointer (&self->reply_type, g_variant_type_free);
  g_clear_pointer (&self->bytes, g_bytes_unref);
  g_clear_object (&self->info);
  g_clear_pointer (&self->infos, g_ptr_array_unref);
  g_clear_pointer (&self->variant, g_variant_unref);
  g_clear_pointer (&self->stdout_bytes, g_bytes_unref);
  g_clear_pointer (&self->stderr_bytes, g_bytes_unref);
  g_clear_error (&self->error);
  g_free (self);
}

/* GIO's read_all and write_all take a bare buffer, which a stream that
 * cannot poll reads or writes on a thread of GIO's until the callback,
 * also after a cancel and after the last unref of the operation. The
 * step's cancellable lives that long (its WsAsyncOp owns it and is held
 * by the callback data until the callback returned): it keeps @data. */
static void
keep_until_callback (GCancellable   *cancellable,
                     gpointer        data,
                     GDestroyNotify  destroy)
{
  g_object_set_data_full (G_OBJECT (cancellable), "ws-io-op-buffer", data, destroy);
}

/* Makes the GIO call of the current step with a new WsAsyncOp. */
static void
io_op_start_step (WsIoOp    *self,
                  WsContext *context)
{
  GCancellable *cancellable;
  gpointer data;

  self->op = ws_async_op_new ();
  cancellable = ws_async_op_get_cancellable (self->op);
  data = ws_async_op_start (self->op, context);
  switch (self->kind)
    {
    case WS_IO_OP_LOAD:
      g_file_load_bytes_async (G_FILE (self->source), cancellable, ws_async_op_callback, data);
      break;
    case WS_IO_OP_REPLACE:
      g_file_replace_contents_bytes_async (G_FILE (self->source), self->input, NULL, FALSE,
                                           G_FILE_CREATE_NONE, cancellable,
                                           ws_async_op_callback, data);
      break;
    case WS_IO_OP_QUERY_INFO:
      g_file_query_info_async (G_FILE (self->source), self->attributes, G_FILE_QUERY_INFO_NONE,
                               G_PRIORITY_DEFAULT, cancellable, ws_async_op_callback, data);
      break;
    case WS_IO_OP_ENUMERATE:
      if (self->step == STEP_ENUMERATE)
        g_file_enumerate_children_async (G_FILE (self->source), self->attributes,
                                         G_FILE_QUERY_INFO_NONE, G_PRIORITY_DEFAULT,
                                         cancellable, ws_async_op_callback, data);
      else if (self->step == STEP_NEXT_FILES)
        g_file_enumerator_next_files_async (self->enumerator, ENUMERATE_BATCH,
                                            G_PRIORITY_DEFAULT, cancellable,
                                            ws_async_op_callback, data);
      else
        g_file_enumerator_close_async (self->enumerator, G_PRIORITY_DEFAULT, cancellable,
                                       ws_async_op_callback, data);
      break;
    case WS_IO_OP_READ_ALL:
      if (self->buffer == NULL)
        {
          self->buffer = g_byte_array_new ();
          self->chunk = READ_CHUNK_MIN;
        }
      else
        self->chunk = MIN (self->chunk * 2, READ_CHUNK_MAX);
      /* The buffer is grown only between reads, never under one. */
      g_byte_array_set_size (self->buffer, self->buffer->len + self->chunk);
      keep_until_callback (cancellable, g_byte_array_ref (self->buffer),
                           (GDestroyNotify) g_byte_array_unref);
      g_input_stream_read_all_async (G_INPUT_STREAM (self->source),
                                     self->buffer->data + self->buffer->len - self->chunk,
                                     self->chunk, G_PRIORITY_DEFAULT, cancellable,
                                     ws_async_op_callback, data);
      break;
    case WS_IO_OP_WRITE_ALL:
      {
        gsize size;
        gconstpointer bytes = g_bytes_get_data (self->input, &size);

        keep_until_callback (cancellable, g_bytes_ref (self->input),
                             (GDestroyNotify) g_bytes_unref);
        /* write_all wants a buffer unless the count is 0; an empty
         * GBytes may have none. */
        g_output_stream_write_all_async (G_OUTPUT_STREAM (self->source),
                                         bytes != NULL ? bytes : "", size,
                                         G_PRIORITY_DEFAULT, cancellable,
                                         ws_async_op_callback, data);
      }
      break;
    case WS_IO_OP_COMMUNICATE:
      g_subprocess_communicate_async (G_SUBPROCESS (self->source), self->input, cancellable,
                                      ws_async_op_callback, data);
      break;
    case WS_IO_OP_DBUS_CALL:
      g_dbus_connection_call (G_DBUS_CONNECTION (self->source), self->bus_name,
                              self->object_path, self->interface_name, self->method_name,
                              self->parameters, self->reply_type, self->call_flags,
                              self->timeout_msec, cancellable, ws_async_op_callback, data);
      break;
    case WS_IO_OP_N_KINDS:
    default:
      g_assert_not_reached ();
    }
}

/* Takes the result of the step whose callback came: calls its _finish(),
 * keeps the outcome or moves to the next step. Returns whether the
 * operation is over. */
static gboolean
io_op_finish_step (WsIoOp *self)
{
  g_autoptr(WsAsyncOp) op = g_steal_pointer (&self->op);
  GAsyncResult *result = ws_async_op_get_result (op);

  switch (self->kind)
    {
    case WS_IO_OP_LOAD:
      self->bytes = g_file_load_bytes_finish (G_FILE (self->source), result, NULL, &self->error);
      return TRUE;
    case WS_IO_OP_REPLACE:
      g_file_replace_contents_finish (G_FILE (self->source), result, NULL, &self->error);
      return TRUE;
    case WS_IO_OP_QUERY_INFO:
      self->info = g_file_query_info_finish (G_FILE (self->source), result, &self->error);
      return TRUE;
    case WS_IO_OP_ENUMERATE:
      if (self->step == STEP_ENUMERATE)
        {
          self->enumerator = g_file_enumerate_children_finish (G_FILE (self->source), result,
                                                               &self->error);
          if (self->enumerator == NULL)
            return TRUE;
          self->infos = g_ptr_array_new_with_free_func (g_object_unref);
          self->step = STEP_NEXT_FILES;
          return FALSE;
        }
      if (self->step == STEP_NEXT_FILES)
        {
          GList *batch = g_file_enumerator_next_files_finish (self->enumerator, result,
                                                              &self->error);

          if (self->error != NULL)
            {
              /* Dropping the enumerator closes it (synchronously: a
               * closedir() for local files). */
              g_clear_object (&self->enumerator);
              g_clear_pointer (&self->infos, g_ptr_array_unref);
              return TRUE;
            }
          if (batch == NULL)
            self->step = STEP_CLOSE;
          for (GList *l = batch; l != NULL; l = l->next)
            g_ptr_array_add (self->infos, l->data);
          g_list_free (batch);
          return FALSE;
        }
      g_file_enumerator_close_finish (self->enumerator, result, &self->error);
      g_clear_object (&self->enumerator);
      if (self->error != NULL)
        g_clear_pointer (&self->infos, g_ptr_array_unref);
      return TRUE;
    case WS_IO_OP_READ_ALL:
      {
        gsize n_read = 0;

        if (!g_input_stream_read_all_finish (G_INPUT_STREAM (self->source), result, &n_read,
                                             &self->error))
          {
            g_clear_pointer (&self->buffer, g_byte_array_unref);
            return TRUE;
          }
        g_byte_array_set_size (self->buffer, self->buffer->len - self->chunk + n_read);
        /* read_all stops short of the count only at the end. */
        if (n_read == self->chunk)
          return FALSE;
        self->bytes = g_byte_array_free_to_bytes (g_steal_pointer (&self->buffer));
        return TRUE;
      }
    case WS_IO_OP_WRITE_ALL:
      g_output_stream_write_all_finish (G_OUTPUT_STREAM (self->source), result, NULL,
                                        &self->error);
      return TRUE;
    case WS_IO_OP_COMMUNICATE:
      {
        GSubprocess *subprocess = G_SUBPROCESS (self->source);

        if (g_subprocess_communicate_finish (subprocess, result, &self->stdout_bytes,
                                             &self->stderr_bytes, &self->error))
          {
            /* The communication waited for the exit: the status is there.
             * A failure keeps the output, for a program to show. */
            g_spawn_check_wait_status (g_subprocess_get_status (subprocess), &self->error);
          }
        return TRUE;
      }
    case WS_IO_OP_DBUS_CALL:
      self->variant = g_dbus_connection_call_finish (G_DBUS_CONNECTION (self->source), result,
                                                     &self->error);
      return TRUE;
    case WS_IO_OP_N_KINDS:
    default:
      g_assert_not_reached ();
    }
}

/**
 * ws_io_op_poll:
 * @self: a #WsIoOp
 * @context: the context of the task that awaits @self
 *
 * Awaits the operation. The first poll makes the GIO call, linked to the
 * task's cancellable; the poll that sees its callback calls its
 * `_finish()` (and makes the next call of an operation of several, an
 * enumeration or a read). Consumes one unit of the cooperative budget
 * per call awaited.
 *
 * Returns: %WS_POLL_READY once the outcome is there, to get with the
 *   finish function of the operation's kind
 */
WsPoll
ws_io_op_poll (WsIoOp    *self,
               WsContext *context)
{
  g_return_val_if_fail (self != NULL, WS_POLL_READY);
  g_return_val_if_fail (context != NULL, WS_POLL_READY);

  /* Relaxed: `done` is written by this same task's earlier poll. */
  if (atomic_load_explicit (&self->done, memory_order_relaxed))
    return WS_POLL_READY;

  for (;;)
    {
      if (self->op == NULL)
        io_op_start_step (self, context);
      if (ws_async_op_poll (self->op, context) == WS_POLL_PENDING)
        return WS_POLL_PENDING;
      if (io_op_finish_step (self))
        break;
    }

  /* Release: publishes the outcome to a finish function that reads
   * `done` with acquire (see the top of the file). */
  atomic_store_explicit (&self->done, TRUE, memory_order_release);
  return WS_POLL_READY;
}

/* Refuses, with a critical naming the right finish function, a finish
 * function of another kind than @self's. @kinds is a bit per kind. */
static gboolean
check_kind (WsIoOp     *self,
            guint       kinds,
            const char *function)
{
  g_autofree char *expression = NULL;

  if ((kinds & (1u << self->kind)) != 0)
    return TRUE;
  expression = g_strdup_printf ("an operation made by %s() is finished with %s()",
                                kind_names[self->kind].constructor,
                                kind_names[self->kind].finish);
  g_return_if_fail_warning (G_LOG_DOMAIN, function, expression);
  return FALSE;
}

/* Acquire: pairs with the release in ws_io_op_poll(), so the outcome is
 * seen whole on any thread (see the top of the file). */
static gboolean
is_ready (WsIoOp *self)
{
  return atomic_load_explicit (&self->done, memory_order_acquire);
}

static gboolean
take_error (WsIoOp  *self,
            GError **error)
{
  if (self->error == NULL)
    return FALSE;
  g_propagate_error (error, g_error_copy (self->error));
  return TRUE;
}

#define KIND(k) (1u << (k))

/**
 * ws_io_op_finish:
 * @self: a #WsIoOp that is ready
 * @error: return location for the error of the operation
 *
 * Gets the outcome of an operation once [method@Ws.IoOp.poll] returned
 * %WS_POLL_READY: whether it succeeded. The only finish function of
 * [func@Ws.file_replace_contents] and [func@Ws.output_stream_write_all];
 * the others may use it too, to learn the error alone (for
 * [func@Ws.subprocess_communicate], the exit check's included).
 *
 * Returns: %TRUE if the operation succeeded
 */
gboolean
ws_io_op_finish (WsIoOp  *self,
                 GError **error)
{
  g_return_val_if_fail (self != NULL, FALSE);
  g_return_val_if_fail (is_ready (self), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  return !take_error (self, error);
}

/**
 * ws_io_op_finish_bytes:
 * @self: a #WsIoOp made by [func@Ws.file_load_contents] or
 *   [func@Ws.input_stream_read_all], ready
 * @error: return location for the error of the operation
 *
 * Gets the bytes the operation loaded or read once
 * [method@Ws.IoOp.poll] returned %WS_POLL_READY.
 *
 * Returns: (transfer full) (nullable): the contents, or %NULL with @error
 *   set
 */
GBytes *
ws_io_op_finish_bytes (WsIoOp  *self,
                       GError **error)
{
  g_return_val_if_fail (self != NULL, NULL);
  if (!check_kind (self, KIND (WS_IO_OP_LOAD) | KIND (WS_IO_OP_READ_ALL), G_STRFUNC))
    return NULL;
  g_return_val_if_fail (is_ready (self), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (take_error (self, error))
    return NULL;
  return g_bytes_ref (self->bytes);
}

/**
 * ws_io_op_finish_info:
 * @self: a #WsIoOp made by [func@Ws.file_query_info], ready
 * @error: return location for the error of the operation
 *
 * Gets the information the operation queried once
 * [method@Ws.IoOp.poll] returned %WS_POLL_READY.
 *
 * Returns: (transfer full) (nullable): the information, or %NULL with
 *   @error set
 */
GFileInfo *
ws_io_op_finish_info (WsIoOp  *self,
                      GError **error)
{
  g_return_val_if_fail (self != NULL, NULL);
  if (!check_kind (self, KIND (WS_IO_OP_QUERY_INFO), G_STRFUNC))
    return NULL;
  g_return_val_if_fail (is_ready (self), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (take_error (self, error))
    return NULL;
  return g_object_ref (self->info);
}

static gpointer
copy_object (gconstpointer object,
             gpointer      data)
{
  return g_object_ref ((gpointer) object);
}

/**
 * ws_io_op_finish_infos:
 * @self: a #WsIoOp made by [func@Ws.file_enumerate_children], ready
 * @error: return location for the error of the operation
 *
 * Gets the children the operation listed once [method@Ws.IoOp.poll]
 * returned %WS_POLL_READY, in the order the enumerator gave them (no
 * particular order: sort them if it matters).
 *
 * The array is new and holds a reference on each #GFileInfo, which it
 * releases when freed (its free function is g_object_unref()):
 * `g_autoptr(GPtrArray)` releases the whole.
 *
 * Returns: (transfer container) (element-type Gio.FileInfo) (nullable):
 *   the information of each child, or %NULL with @error set
 */
GPtrArray *
ws_io_op_finish_infos (WsIoOp  *self,
                       GError **error)
{
  g_return_val_if_fail (self != NULL, NULL);
  if (!check_kind (self, KIND (WS_IO_OP_ENUMERATE), G_STRFUNC))
    return NULL;
  g_return_val_if_fail (is_ready (self), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (take_error (self, error))
    return NULL;
  /* (transfer container) with the references in the array: a binding
   * takes its own reference on each element, then frees the container,
   * which drops ours; C code frees both with one unref. */
  return g_ptr_array_copy (self->infos, copy_object, NULL);
}

/**
 * ws_io_op_finish_variant:
 * @self: a #WsIoOp made by [func@Ws.dbus_connection_call], ready
 * @error: return location for the error of the operation
 *
 * Gets the reply of the call once [method@Ws.IoOp.poll] returned
 * %WS_POLL_READY.
 *
 * Returns: (transfer full) (nullable): the reply, a tuple with the
 *   method's return values, or %NULL with @error set
 */
GVariant *
ws_io_op_finish_variant (WsIoOp  *self,
                         GError **error)
{
  g_return_val_if_fail (self != NULL, NULL);
  if (!check_kind (self, KIND (WS_IO_OP_DBUS_CALL), G_STRFUNC))
    return NULL;
  g_return_val_if_fail (is_ready (self), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (take_error (self, error))
    return NULL;
  return g_variant_ref (self->variant);
}

/**
 * ws_io_op_finish_communicate:
 * @self: a #WsIoOp made by [func@Ws.subprocess_communicate], ready
 * @stdout_buf: (out) (optional) (nullable) (transfer full): return
 *   location for the standard output of the process, %NULL if it was no
 *   pipe
 * @stderr_buf: (out) (optional) (nullable) (transfer full): return
 *   location for its standard error, %NULL if it was no pipe
 * @error: return location for the error of the operation
 *
 * Gets the output of the process once [method@Ws.IoOp.poll] returned
 * %WS_POLL_READY, and checks how it exited, as g_subprocess_wait_check()
 * does: a process that exited with a status other than 0 fails with
 * `G_SPAWN_EXIT_ERROR` and the status as the code, one killed by a
 * signal with `G_SPAWN_ERROR_FAILED`. The output is given in those cases
 * too (an error message on the standard error is worth showing); it is
 * %NULL only if the communication itself failed (`G_IO_ERROR_CANCELLED`
 * when the task was cancelled).
 *
 * Returns: %TRUE if the process exited with status 0
 */
gboolean
ws_io_op_finish_communicate (WsIoOp  *self,
                             GBytes **stdout_buf,
                             GBytes **stderr_buf,
                             GError **error)
{
  if (stdout_buf != NULL)
    *stdout_buf = NULL;
  if (stderr_buf != NULL)
    *stderr_buf = NULL;
  g_return_val_if_fail (self != NULL, FALSE);
  if (!check_kind (self, KIND (WS_IO_OP_COMMUNICATE), G_STRFUNC))
    return FALSE;
  g_return_val_if_fail (is_ready (self), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (stdout_buf != NULL && self->stdout_bytes != NULL)
    *stdout_buf = g_bytes_ref (self->stdout_bytes);
  if (stderr_buf != NULL && self->stderr_bytes != NULL)
    *stderr_buf = g_bytes_ref (self->stderr_bytes);
  return !take_error (self, error);
}

/* ws_runtime_spawn_io's task: the state is the operation. It fails with
 * the operation's error; otherwise its value is the operation's result
 * when that is one object. */
static WsPoll
spawn_io_func (WsContext *cx,
               gpointer   user_data)
{
  WsIoOp *self = user_data;
  g_auto(GValue) value = G_VALUE_INIT;

  if (ws_io_op_poll (self, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;

  if (self->error != NULL)
    {
      ws_context_return_error (cx, g_error_copy (self->error));
      return WS_POLL_READY;
    }
  switch (self->kind)
    {
    case WS_IO_OP_LOAD:
    case WS_IO_OP_READ_ALL:
      g_value_init (&value, G_TYPE_BYTES);
      g_value_set_boxed (&value, self->bytes);
      break;
    case WS_IO_OP_QUERY_INFO:
      g_value_init (&value, G_TYPE_FILE_INFO);
      g_value_set_object (&value, self->info);
      break;
    case WS_IO_OP_DBUS_CALL:
      g_value_init (&value, G_TYPE_VARIANT);
      g_value_set_variant (&value, self->variant);
      break;
    case WS_IO_OP_REPLACE:
    case WS_IO_OP_ENUMERATE:
    case WS_IO_OP_WRITE_ALL:
    case WS_IO_OP_COMMUNICATE:
    case WS_IO_OP_N_KINDS:
    default:
      return WS_POLL_READY;
    }
  ws_context_return_value (cx, &value);
  return WS_POLL_READY;
}

/**
 * ws_runtime_spawn_io:
 * @runtime: a #WsRuntime
 * @op: an operation no task polls
 *
 * Spawns a task on the workers of @runtime that awaits @op: the GIO call
 * is made, and completes, on a worker. The task fails with the error of
 * the operation (the one [method@Ws.IoOp.finish] gives); otherwise its
 * value ([method@Ws.Task.get_value]) is the result when that is one
 * object (the #GBytes of a load or a read, the #GFileInfo of a query, the
 * #GVariant reply of a D-Bus call) and there is none for the others.
 * Cancelling the task cancels the GIO call.
 *
 * Once the task has ended, the finish function of @op's kind gives the
 * result on any thread: the task's end publishes what its polls stored.
 *
 * No callback runs on a worker, so JavaScript may use it:
 *
 * ```js
 * const op = Ws.file_enumerate_children(dir, 'standard::name');
 * await rt.spawn_io(op).wait_async(null);
 * const names = op.finish_infos().map(info => info.get_name());
 * ```
 *
 * Returns: (transfer full): the task that awaits @op
 */
WsTask *
ws_runtime_spawn_io (WsRuntime *runtime,
                     WsIoOp    *op)
{
  g_return_val_if_fail (WS_IS_RUNTIME (runtime), NULL);
  g_return_val_if_fail (op != NULL, NULL);

  /* The task holds its own reference, released by its destroy notify
   * before its end is published ("Rules: tasks"). */
  return ws_runtime_spawn (runtime, spawn_io_func, ws_io_op_ref (op),
                           (GDestroyNotify) ws_io_op_unref);
}

/**
 * ws_runtime_load_file:
 * @runtime: a #WsRuntime
 * @file: the file to load
 *
 * Spawns a task on the workers of @runtime that loads the whole of @file:
 * [method@Ws.Runtime.spawn_io] of [func@Ws.file_load_contents]. Its value
 * ([method@Ws.Task.get_value]) is a #GBytes with the contents, its error
 * the one of the load (`G_IO_ERROR_NOT_FOUND` for a missing file).
 * Cancelling the task cancels the load.
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
  g_autoptr(WsIoOp) op = NULL;

  g_return_val_if_fail (WS_IS_RUNTIME (runtime), NULL);
  g_return_val_if_fail (G_IS_FILE (file), NULL);

  op = ws_file_load_contents (file);
  return ws_runtime_spawn_io (runtime, op);
}
