/* ws-io-op-stream.c: WsIoOp operations on a GInputStream or a GOutputStream
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One row (WsIoOpVTable) and one constructor per operation, on the
 * adapter of ws-io-op.c (ws-io-op-private.h): read to the end, in chunks
 * that double; write all.
 */

#include "config.h"

#include "ws-io-op-private.h"

/* ---- read all ------------------------------------------------------------ */

/* A read asks for this much first, doubling up to the maximum. */
#define READ_CHUNK_MIN (16 * 1024)
#define READ_CHUNK_MAX (1024 * 1024)

typedef struct
{
  GByteArray *buffer;       /* what was read so far */
  gsize       chunk;        /* the size of the read in flight */
} ReadAll;

static void
read_all_start (WsIoOp       *self,
                GCancellable *cancellable,
                gpointer      data)
{
  ReadAll *r = ws_io_op_get_priv (self);

  if (r->buffer == NULL)
    {
      r->buffer = g_byte_array_new ();
      r->chunk = READ_CHUNK_MIN;
    }
  else
    r->chunk = MIN (r->chunk * 2, READ_CHUNK_MAX);
  /* The buffer is grown only between reads, never under one. */
  g_byte_array_set_size (r->buffer, r->buffer->len + r->chunk);
  ws_io_op_keep_until_callback (cancellable, g_byte_array_ref (r->buffer),
                                (GDestroyNotify) g_byte_array_unref);
  g_input_stream_read_all_async (G_INPUT_STREAM (self->source),
                                 r->buffer->data + r->buffer->len - r->chunk,
                                 r->chunk, G_PRIORITY_DEFAULT, cancellable,
                                 ws_async_op_callback, data);
}

static gboolean
read_all_finish (WsIoOp       *self,
                 GAsyncResult *result)
{
  ReadAll *r = ws_io_op_get_priv (self);
  gsize n_read = 0;

  if (!g_input_stream_read_all_finish (G_INPUT_STREAM (self->source), result, &n_read,
                                       &self->error))
    {
      g_clear_pointer (&r->buffer, g_byte_array_unref);
      return TRUE;
    }
  g_byte_array_set_size (r->buffer, r->buffer->len - r->chunk + n_read);
  /* read_all stops short of the count only at the end. */
  if (n_read == r->chunk)
    return FALSE;
  ws_io_op_set_result (self, g_byte_array_free_to_bytes (g_steal_pointer (&r->buffer)),
                       (GDestroyNotify) g_bytes_unref);
  return TRUE;
}

static void
read_all_clear (WsIoOp *self)
{
  ReadAll *r = ws_io_op_get_priv (self);

  g_clear_pointer (&r->buffer, g_byte_array_unref);
}

static const WsIoOpVTable read_all_vtable = {
  .constructor = "ws_input_stream_read_all",
  .finish = "ws_io_op_finish_bytes",
  .priv_size = sizeof (ReadAll),
  .start = read_all_start,
  .finish_step = read_all_finish,
  .value_type = g_bytes_get_type,
  .clear = read_all_clear,
};

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

  return ws_io_op_new (&read_all_vtable, stream);
}

/* ---- write all ----------------------------------------------------------- */

static void
write_all_start (WsIoOp       *self,
                 GCancellable *cancellable,
                 gpointer      data)
{
  gsize size;
  gconstpointer bytes = g_bytes_get_data (self->input, &size);

  ws_io_op_keep_until_callback (cancellable, g_bytes_ref (self->input),
                                (GDestroyNotify) g_bytes_unref);
  /* write_all wants a buffer unless the count is 0; an empty GBytes may
   * have none. */
  g_output_stream_write_all_async (G_OUTPUT_STREAM (self->source),
                                   bytes != NULL ? bytes : "", size,
                                   G_PRIORITY_DEFAULT, cancellable,
                                   ws_async_op_callback, data);
}

static gboolean
write_all_finish (WsIoOp       *self,
                  GAsyncResult *result)
{
  g_output_stream_write_all_finish (G_OUTPUT_STREAM (self->source), result, NULL,
                                    &self->error);
  return TRUE;
}

static const WsIoOpVTable write_all_vtable = {
  .constructor = "ws_output_stream_write_all",
  .finish = "ws_io_op_finish",
  .start = write_all_start,
  .finish_step = write_all_finish,
};

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

  self = ws_io_op_new (&write_all_vtable, stream);
  self->input = g_bytes_ref (bytes);
  return self;
}
