/* cat.c: libdex's examples/cat.c (with its cat-util.h) on wsrt
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   cat [-o OUTPUT] [-b BYTES] [-q COUNT] [FILE]
 *
 * The same program as libdex 1.1's examples/cat.c: a reader fiber reads
 * FILE (or standard input) into buffers and sends them over a bounded
 * channel to a writer fiber, which writes them to OUTPUT (or standard
 * output); the channel's capacity is how far reads may run ahead of
 * writes. Both are fibers on the main loop (libdex's
 * dex_scheduler_spawn (NULL, ...)), so the pool of free buffers needs no
 * lock, and each GIO call is awaited with WS_GIO and ws_fiber_await_gio.
 * Unlike libdex's, a short write is finished (write_all), a writer that
 * stops closes the channel, so the reader stops too, and a failed read or
 * write is reported (status 1).
 */

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <gio/gunixinputstream.h>
#include <gio/gunixoutputstream.h>
#include <wsrt.h>

typedef struct
{
  gsize      buffer_size;
  int        read_fd;
  int        write_fd;
  GPtrArray *pool;     /* free buffers: only the two fibers, on this thread, touch it */
  WsChannel *channel;  /* full buffers, from the reader to the writer */
} Cat;

typedef struct
{
  gpointer data;
  gssize   length;
} Buffer;

static void
buffer_free (Buffer *buffer)
{
  g_aligned_free (buffer->data);
  g_free (buffer);
}

static Buffer *
cat_pop_buffer (Cat *cat)
{
  Buffer *buffer;

  if (cat->pool->len > 0)
    return g_ptr_array_steal_index_fast (cat->pool, cat->pool->len - 1);
  buffer = g_new0 (Buffer, 1);
  buffer->data = g_aligned_alloc (1, cat->buffer_size, 4096);
  return buffer;
}

static void
cat_read_fiber (WsContext *cx,
                gpointer   user_data)
{
  Cat *cat = user_data;
  g_autoptr(GInputStream) stream = g_unix_input_stream_new (cat->read_fd, FALSE);
  g_autoptr(GError) error = NULL;
  g_autoptr(GError) closed = NULL;
  Buffer *buffer;

  /* Read into a buffer from the pool, then send it, suspending while the
   * channel is full, which throttles reads that get too far ahead of
   * writes. Stop at the end, on a failure, or once the writer closed the
   * channel: the last buffer was not sent. */
  do
    {
      buffer = cat_pop_buffer (cat);
      g_input_stream_read_async (stream, buffer->data, cat->buffer_size,
                                 G_PRIORITY_DEFAULT, WS_GIO (cx));
      buffer->length = g_input_stream_read_finish (stream, ws_fiber_await_gio (cx), &error);
    }
  while (buffer->length > 0
         && WS_FIBER_AWAIT (cx, ws_channel_poll_send (cat->channel, cx, buffer, &closed))
         && closed == NULL);
  g_ptr_array_add (cat->pool, buffer);
  ws_channel_close (cat->channel);

  g_input_stream_close_async (stream, G_PRIORITY_DEFAULT, WS_GIO (cx));
  g_input_stream_close_finish (stream, ws_fiber_await_gio (cx), NULL);
  if (error != NULL)
    ws_context_return_error (cx, g_steal_pointer (&error));
}

static void
cat_write_fiber (WsContext *cx,
                 gpointer   user_data)
{
  Cat *cat = user_data;
  g_autoptr(GOutputStream) stream = g_unix_output_stream_new (cat->write_fd, FALSE);
  g_autoptr(GError) error = NULL;
  Buffer *buffer;

  /* Suspend while waiting for a buffer, until the channel is closed and
   * empty; a failed write closes it, which stops the reader. */
  while (WS_FIBER_AWAIT (cx, ws_channel_poll_receive (cat->channel, cx, (gpointer *) &buffer, NULL))
         && buffer != NULL)
    {
      gboolean ok;

      g_output_stream_write_all_async (stream, buffer->data, buffer->length,
                                       G_PRIORITY_DEFAULT, WS_GIO (cx));
      ok = g_output_stream_write_all_finish (stream, ws_fiber_await_gio (cx), NULL, &error);
      g_ptr_array_add (cat->pool, buffer);
      if (!ok)
        break;
    }
  ws_channel_close (cat->channel);

  g_output_stream_close_async (stream, G_PRIORITY_DEFAULT, WS_GIO (cx));
  g_output_stream_close_finish (stream, ws_fiber_await_gio (cx), error ? NULL : &error);
  if (error != NULL)
    ws_context_return_error (cx, g_steal_pointer (&error));
}

static gboolean
cat_init (Cat     *cat,
          int     *argc,
          char  ***argv,
          GError **error)
{
  g_autoptr(GOptionContext) context = g_option_context_new ("- FILE");
  g_autofree char *output = NULL;
  int buffer_size = (1024*256 - 2*sizeof(gpointer)); /* 256k minus malloc overhead */
  int queue_size = 32;
  const GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Cat contents into OUTPUT", "OUTPUT" },
    { "buffer-size", 'b', 0, G_OPTION_ARG_INT, &buffer_size, "Read/Write buffer size", "BYTES" },
    { "queue-size", 'q', 0, G_OPTION_ARG_INT, &queue_size, "Amount of reads that can advance ahead of writes (default 32)", "COUNT" },
    { 0 }
  };

  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, argc, argv, error))
    return FALSE;
  cat->buffer_size = buffer_size;
  cat->channel = ws_channel_new (queue_size, (GDestroyNotify) buffer_free);

  if (output != NULL)
    g_unlink (output);
  if (-1 == (cat->write_fd = output ? open (output, O_WRONLY|O_CREAT, 0644) : STDOUT_FILENO))
    {
      int errsv = errno;
      g_set_error_literal (error, G_IO_ERROR, g_io_error_from_errno (errsv), g_strerror (errsv));
      return FALSE;
    }
  if (*argc > 2)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVAL, "Only a single file is supported");
      return FALSE;
    }
  if (-1 == (cat->read_fd = *argc == 2 ? open ((*argv)[1], O_RDONLY) : STDIN_FILENO))
    {
      int errsv = errno;
      g_set_error_literal (error, G_IO_ERROR, g_io_error_from_errno (errsv), g_strerror (errsv));
      return FALSE;
    }
  return TRUE;
}

int
main (int   argc,
      char *argv[])
{
  GError *error = NULL;
  Cat cat = { 0, -1, -1, g_ptr_array_new_with_free_func ((GDestroyNotify) buffer_free), NULL };
  int ret = EXIT_SUCCESS;

  if (cat_init (&cat, &argc, &argv, &error))
    {
      WsRuntime *runtime = ws_runtime_get_default ();
      g_autoptr(WsTask) reader = ws_runtime_spawn_local_fiber (runtime, NULL, cat_read_fiber, &cat, NULL);
      g_autoptr(WsTask) writer = ws_runtime_spawn_local_fiber (runtime, NULL, cat_write_fiber, &cat, NULL);

      /* Each wait iterates the main context, which runs both fibers; the
       * first to stop closes the channel, which stops the other. */
      ws_task_wait (reader, NULL, &error);
      ws_task_wait (writer, NULL, error ? NULL : &error);
    }
  if (error != NULL)
    {
      g_printerr ("cat: %s\n", error->message);
      g_clear_error (&error);
      ret = EXIT_FAILURE;
    }

  if (cat.write_fd >= 0)
    close (cat.write_fd);
  if (cat.read_fd >= 0)
    close (cat.read_fd);
  g_clear_pointer (&cat.channel, ws_channel_unref);
  g_ptr_array_unref (cat.pool);

  return ret;
}
