/* cp.c: libdex's examples/cp.c on wsrt
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   cp [-r] [-v] SOURCE DEST
 *
 * The same program as libdex 1.1's examples/cp.c, written as the docs
 * write it: the top copy is a fiber on the main loop (libdex's
 * dex_scheduler_spawn (NULL, ...)), each entry of a directory a fiber on
 * the workers (libdex's thread pool scheduler), every GIO call awaited
 * with WS_GIO and ws_fiber_await_gio, a directory's entries with
 * ws_fiber_await_all. A failure ends the program with its message and
 * status 1, where libdex's aborts with g_error ().
 */

#include <wsrt.h>

static WsRuntime *runtime;
static gboolean verbose;

typedef struct
{
  GFile *from;
  GFile *to;
  gboolean recursive;
} Copy;

static void copy (WsContext *cx, gpointer user_data);

static Copy *
copy_new (GFile    *from,
          GFile    *to,
          gboolean  recursive)
{
  Copy *cp = g_new0 (Copy, 1);

  cp->from = from; /* take ownership */
  cp->to = to; /* take ownership */
  cp->recursive = recursive;
  return cp;
}

static void
copy_free (Copy *cp)
{
  g_clear_object (&cp->from);
  g_clear_object (&cp->to);
  g_free (cp);
}

static gboolean
copy_regular (WsContext  *cx,
              Copy       *cp,
              GError    **error)
{
  g_autoptr(GFileInputStream) input = NULL;
  g_autoptr(GFileOutputStream) output = NULL;

  if (verbose)
    g_printerr ("%s => %s\n", g_file_peek_path (cp->from), g_file_peek_path (cp->to));

  g_file_read_async (cp->from, G_PRIORITY_DEFAULT, WS_GIO (cx));
  if (!(input = g_file_read_finish (cp->from, ws_fiber_await_gio (cx), error)))
    return FALSE;

  g_file_replace_async (cp->to, NULL, FALSE, G_FILE_CREATE_REPLACE_DESTINATION,
                        G_PRIORITY_DEFAULT, WS_GIO (cx));
  if (!(output = g_file_replace_finish (cp->to, ws_fiber_await_gio (cx), error)))
    return FALSE;

  g_output_stream_splice_async (G_OUTPUT_STREAM (output), G_INPUT_STREAM (input),
                                G_OUTPUT_STREAM_SPLICE_CLOSE_SOURCE |
                                G_OUTPUT_STREAM_SPLICE_CLOSE_TARGET,
                                G_PRIORITY_DEFAULT, WS_GIO (cx));
  return g_output_stream_splice_finish (G_OUTPUT_STREAM (output),
                                        ws_fiber_await_gio (cx), error) >= 0;
}

static gboolean
copy_directory (WsContext  *cx,
                Copy       *cp,
                GError    **error)
{
  g_autoptr(GFileEnumerator) enumerator = NULL;
  g_autoptr(GPtrArray) tasks = g_ptr_array_new_with_free_func (g_object_unref);

  g_file_enumerate_children_async (cp->from, G_FILE_ATTRIBUTE_STANDARD_NAME,
                                   G_FILE_QUERY_INFO_NOFOLLOW_SYMLINKS,
                                   G_PRIORITY_DEFAULT, WS_GIO (cx));
  if (!(enumerator = g_file_enumerate_children_finish (cp->from, ws_fiber_await_gio (cx), error)))
    return FALSE;

  if (verbose)
    g_printerr ("%s/ => %s/\n", g_file_peek_path (cp->from), g_file_peek_path (cp->to));

  g_file_make_directory_async (cp->to, G_PRIORITY_DEFAULT, WS_GIO (cx));
  if (!g_file_make_directory_finish (cp->to, ws_fiber_await_gio (cx), error))
    return FALSE;

  for (;;)
    {
      g_autolist(GFileInfo) files = NULL;

      g_file_enumerator_next_files_async (enumerator, 100, G_PRIORITY_DEFAULT, WS_GIO (cx));
      files = g_file_enumerator_next_files_finish (enumerator, ws_fiber_await_gio (cx), error);
      if (files == NULL)
        break;

      for (const GList *iter = files; iter; iter = iter->next)
        {
          GFileInfo *info = iter->data;

          g_ptr_array_add (tasks,
                           ws_runtime_spawn_fiber (runtime, copy,
                                                   copy_new (g_file_enumerator_get_child (enumerator, info),
                                                             g_file_get_child (cp->to, g_file_info_get_name (info)),
                                                             cp->recursive),
                                                   (GDestroyNotify) copy_free));
        }
    }

  return *error == NULL
         && ws_fiber_await_all (cx, (WsTask **) tasks->pdata, tasks->len, error);
}

static gboolean
copy_fallback (WsContext  *cx,
               Copy       *cp,
               GError    **error)
{
  if (verbose)
    g_print ("%s => %s\n", g_file_peek_path (cp->from), g_file_peek_path (cp->to));

  /* GIO's own copy, which can't handle directories: a symbolic link, a
   * special file. g_file_copy_async () takes a progress callback between
   * its cancellable and its callback, so WS_GIO is written out here. */
  g_file_copy_async (cp->from, cp->to,
                     G_FILE_COPY_NOFOLLOW_SYMLINKS | G_FILE_COPY_ALL_METADATA,
                     G_PRIORITY_DEFAULT, ws_fiber_gio_cancellable (cx), NULL, NULL,
                     ws_fiber_gio_callback, ws_fiber_gio_user_data (cx));
  return g_file_copy_finish (cp->from, ws_fiber_await_gio (cx), error);
}

static void
copy (WsContext *cx,
      gpointer   user_data)
{
  Copy *cp = user_data;
  g_autoptr(GFileInfo) info = NULL;
  GError *error = NULL;

  g_file_query_info_async (cp->from,
                           G_FILE_ATTRIBUTE_STANDARD_SIZE","
                           G_FILE_ATTRIBUTE_STANDARD_TYPE","
                           G_FILE_ATTRIBUTE_STANDARD_IS_SYMLINK","
                           G_FILE_ATTRIBUTE_STANDARD_SYMLINK_TARGET,
                           G_FILE_QUERY_INFO_NOFOLLOW_SYMLINKS,
                           G_PRIORITY_DEFAULT, WS_GIO (cx));
  if (!(info = g_file_query_info_finish (cp->from, ws_fiber_await_gio (cx), &error)))
    ;
  else if (g_file_info_get_file_type (info) == G_FILE_TYPE_REGULAR)
    copy_regular (cx, cp, &error);
  else if (g_file_info_get_file_type (info) != G_FILE_TYPE_DIRECTORY)
    copy_fallback (cx, cp, &error);
  else if (!cp->recursive)
    g_set_error (&error, G_IO_ERROR, G_IO_ERROR_FAILED,
                 "%s is a directory and -r is not set", g_file_peek_path (cp->from));
  else
    copy_directory (cx, cp, &error);

  if (error != NULL)
    ws_context_return_error (cx, error);
}

int
main (int   argc,
      char *argv[])
{
  gboolean recursive = FALSE;
  GOptionEntry entries[] = {
    { "recursive", 'r', 0, G_OPTION_ARG_NONE, &recursive, "Copy directory recursively" },
    { "verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose, "Explain what is being done" },
    { NULL }
  };
  g_autoptr(GOptionContext) context = NULL;
  g_autoptr(WsTask) task = NULL;
  g_autoptr(GError) error = NULL;

  context = g_option_context_new ("[OPTIONS...] SOURCE DEST - copy files");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error))
    g_error ("%s", error->message);

  if (argc != 3)
    {
      g_printerr ("usage: %s SOURCE DEST\n", argv[0]);
      return EXIT_FAILURE;
    }

  /* The top copy runs on this thread: ws_task_wait () iterates the main
   * context for it, as libdex's g_main_loop_run () does. */
  runtime = ws_runtime_get_default ();
  task = ws_runtime_spawn_local_fiber (runtime, NULL, copy,
                                       copy_new (g_file_new_for_commandline_arg (argv[1]),
                                                 g_file_new_for_commandline_arg (argv[2]),
                                                 recursive),
                                       (GDestroyNotify) copy_free);
  if (!ws_task_wait (task, NULL, &error))
    {
      g_printerr ("cp: %s\n", error->message);
      return EXIT_FAILURE;
    }

  return EXIT_SUCCESS;
}
