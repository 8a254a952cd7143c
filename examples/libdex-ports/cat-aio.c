/* cat-aio.c: libdex's examples/cat-aio.c (with its cat-util.h) on wsrt
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   cat-aio [-o OUTPUT] [-b BYTES] [-q COUNT] [--count-threads] [FILE]
 *
 * The same program as libdex 1.1's examples/cat-aio.c: a reader fiber
 * reads FILE (or standard input) into buffers and sends them over a
 * bounded channel to a writer fiber, which writes them to OUTPUT (or
 * standard output). Where libdex awaits dex_aio_read () and
 * dex_aio_write (), each read and write here is one call of the fibers'
 * syscall offload (ws_fiber_read, ws_fiber_write: io_uring, or the
 * offload's own threads with WS_IO_URING=0). Both are fibers on the main
 * loop (libdex's dex_scheduler_spawn (NULL, ...)), so the pool of free
 * buffers needs no lock. Unlike libdex's, a short write is finished, a
 * writer that stops closes the channel, and a failure is reported
 * (status 1).
 *
 * --count-threads samples the process's threads every millisecond while
 * it runs and prints, on standard error, the most seen at once: all of
 * them, the offload's ("ws-offload", "ws-uring") and the kernel's io_uring
 * workers ("iou-wrk-*").
 */

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>
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
  g_autoptr(GError) error = NULL;
  g_autoptr(GError) closed = NULL;
  Buffer *buffer;

  /* Read into a buffer from the pool, then send it, suspending while the
   * channel is full. Stop at the end, on a failure, or once the writer
   * closed the channel: the last buffer was not sent. */
  do
    {
      buffer = cat_pop_buffer (cat);
      buffer->length = ws_fiber_read (cx, cat->read_fd, buffer->data, cat->buffer_size, &error);
    }
  while (buffer->length > 0
         && WS_FIBER_AWAIT (cx, ws_channel_poll_send (cat->channel, cx, buffer, &closed))
         && closed == NULL);
  g_ptr_array_add (cat->pool, buffer);
  ws_channel_close (cat->channel);
  if (error != NULL)
    ws_context_return_error (cx, g_steal_pointer (&error));
}

static void
cat_write_fiber (WsContext *cx,
                 gpointer   user_data)
{
  Cat *cat = user_data;
  g_autoptr(GError) error = NULL;
  Buffer *buffer;

  while (WS_FIBER_AWAIT (cx, ws_channel_poll_receive (cat->channel, cx, (gpointer *) &buffer, NULL))
         && buffer != NULL)
    {
      gssize done = 0;

      while (done < buffer->length)
        {
          gssize n = ws_fiber_write (cx, cat->write_fd, (guint8 *) buffer->data + done,
                                     buffer->length - done, &error);

          if (n <= 0)
            break;
          done += n;
        }
      g_ptr_array_add (cat->pool, buffer);
      if (error != NULL)
        break;
    }
  ws_channel_close (cat->channel);
  if (error != NULL)
    ws_context_return_error (cx, g_steal_pointer (&error));
}

/* ---- --count-threads ---------------------------------------------------- */

typedef struct
{
  _Atomic gboolean stop;
  guint            max_all;
  guint            max_offload;
  guint            max_iou;
} ThreadCount;

static gpointer
count_threads (gpointer data)
{
  ThreadCount *tc = data;

  while (!atomic_load (&tc->stop))
    {
      g_autoptr(GDir) dir = g_dir_open ("/proc/self/task", 0, NULL);
      guint all = 0, offload = 0, iou = 0;
      const char *tid;

      while (dir != NULL && (tid = g_dir_read_name (dir)) != NULL)
        {
          g_autofree char *path = g_build_filename ("/proc/self/task", tid, "comm", NULL);
          g_autofree char *comm = NULL;

          all++;
          if (!g_file_get_contents (path, &comm, NULL, NULL))
            continue;
          if (g_str_has_prefix (comm, "ws-offload") || g_str_has_prefix (comm, "ws-uring"))
            offload++;
          else if (g_str_has_prefix (comm, "iou-wrk"))
            iou++;
        }
      tc->max_all = MAX (tc->max_all, all);
      tc->max_offload = MAX (tc->max_offload, offload);
      tc->max_iou = MAX (tc->max_iou, iou);
      g_usleep (1000);
    }
  return NULL;
}

static gboolean
cat_init (Cat       *cat,
          gboolean  *count,
          int       *argc,
          char    ***argv,
          GError   **error)
{
  g_autoptr(GOptionContext) context = g_option_context_new ("- FILE");
  g_autofree char *output = NULL;
  int buffer_size = (1024*256 - 2*sizeof(gpointer)); /* 256k minus malloc overhead */
  int queue_size = 32;
  const GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Cat contents into OUTPUT", "OUTPUT" },
    { "buffer-size", 'b', 0, G_OPTION_ARG_INT, &buffer_size, "Read/Write buffer size", "BYTES" },
    { "queue-size", 'q', 0, G_OPTION_ARG_INT, &queue_size, "Amount of reads that can advance ahead of writes (default 32)", "COUNT" },
    { "count-threads", 0, 0, G_OPTION_ARG_NONE, count, "Print the most threads seen at once", NULL },
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
  ThreadCount tc = { FALSE, 0, 0, 0 };
  GThread *counter = NULL;
  gboolean count = FALSE;
  int ret = EXIT_SUCCESS;

  if (cat_init (&cat, &count, &argc, &argv, &error))
    {
      WsRuntime *runtime = ws_runtime_get_default ();
      g_autoptr(WsTask) reader = NULL;
      g_autoptr(WsTask) writer = NULL;

      if (count)
        counter = g_thread_new ("counter", count_threads, &tc);
      reader = ws_runtime_spawn_local_fiber (runtime, NULL, cat_read_fiber, &cat, NULL);
      writer = ws_runtime_spawn_local_fiber (runtime, NULL, cat_write_fiber, &cat, NULL);
      /* Each wait iterates the main context, which runs both fibers; the
       * first to stop closes the channel, which stops the other. */
      ws_task_wait (reader, NULL, &error);
      ws_task_wait (writer, NULL, error ? NULL : &error);
      if (counter != NULL)
        {
          atomic_store (&tc.stop, TRUE);
          g_thread_join (counter);
          /* Less this counter thread. */
          g_printerr ("threads: %u at most (offload: %u, io_uring workers: %u)\n",
                      tc.max_all - 1, tc.max_offload, tc.max_iou);
        }
    }
  if (error != NULL)
    {
      g_printerr ("cat-aio: %s\n", error->message);
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
