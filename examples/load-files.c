/* load-files.c: load files on the workers, show them on the main loop
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * What a GTK application does to read files without blocking a frame,
 * with a plain GMainLoop standing in for the GTK one (the code is the same
 * inside a GtkApplication). Each file is loaded by a task on the runtime's
 * workers with a GIO call awaited through WsAsyncOp; the main loop gets
 * each result through ws_task_wait_async(), in its own thread, and a
 * timeout keeps ticking all along to show that the loop never blocks.
 *
 *   load-files FILE...
 */

#include <stdio.h>

#include <wsrt.h>

typedef struct
{
  WS_ASYNC_STATE;
  GFile     *file;
  WsAsyncOp *op;
} Load;

static void
load_free (gpointer data)
{
  Load *s = data;

  g_clear_pointer (&s->op, ws_async_op_unref);
  g_object_unref (s->file);
  g_free (s);
}

/* Runs on a worker: start the GIO call, await it, count the lines. */
static WsPoll
load_func (WsContext *cx,
           gpointer   user_data)
{
  Load *s = user_data;
  g_autoptr(GError) error = NULL;
  g_autofree char *contents = NULL;
  gsize length = 0;
  guint lines = 0;
  GValue v = G_VALUE_INIT;

  WS_ASYNC_BEGIN (s);

  s->op = ws_async_op_new ();
  g_file_load_contents_async (s->file, ws_async_op_get_cancellable (s->op),
                              ws_async_op_callback, ws_async_op_start (s->op, cx));
  WS_AWAIT (s, ws_async_op_poll (s->op, cx));

  if (!g_file_load_contents_finish (s->file, ws_async_op_get_result (s->op),
                                    &contents, &length, NULL, &error))
    WS_ASYNC_RETURN_ERROR (s, cx, g_steal_pointer (&error));

  for (gsize i = 0; i < length; i++)
    lines += contents[i] == '\n';
  g_value_init (&v, G_TYPE_UINT);
  g_value_set_uint (&v, lines);
  ws_context_return_value (cx, &v);

  WS_ASYNC_END (s);
}

typedef struct
{
  GMainLoop *loop;
  guint      pending;
  guint      ticks;
  gboolean   failed;
} App;

/* Runs on the main loop, once per file. */
static void
loaded_cb (GObject      *object,
           GAsyncResult *result,
           gpointer      user_data)
{
  App *app = user_data;
  WsTask *task = WS_TASK (object);
  g_autoptr(GError) error = NULL;
  const char *name = g_object_get_data (object, "name");

  if (ws_task_wait_finish (task, result, &error))
    printf ("%s: %u lines\n", name, g_value_get_uint (ws_task_get_value (task)));
  else
    {
      printf ("%s: %s\n", name, error->message);
      app->failed = TRUE;
    }

  if (--app->pending == 0)
    g_main_loop_quit (app->loop);
}

static gboolean
tick (gpointer user_data)
{
  ((App *) user_data)->ticks++;
  return G_SOURCE_CONTINUE;
}

int
main (int   argc,
      char *argv[])
{
  WsRuntime *rt = ws_runtime_get_default ();
  App app = { g_main_loop_new (NULL, FALSE), 0, 0, FALSE };
  guint tick_id;

  if (argc < 2)
    {
      fprintf (stderr, "usage: %s FILE...\n", argv[0]);
      return 2;
    }

  for (int i = 1; i < argc; i++)
    {
      Load *s = g_new0 (Load, 1);
      g_autoptr(WsTask) task = NULL;

      s->file = g_file_new_for_commandline_arg (argv[i]);
      task = ws_runtime_spawn (rt, load_func, s, load_free);
      g_object_set_data_full (G_OBJECT (task), "name", g_strdup (argv[i]), g_free);
      ws_task_wait_async (task, NULL, loaded_cb, &app);
      app.pending++;
    }

  tick_id = g_timeout_add (1, tick, &app);
  g_main_loop_run (app.loop);
  g_source_remove (tick_id);
  printf ("the main loop ticked %u times meanwhile\n", app.ticks);

  g_main_loop_unref (app.loop);
  return app.failed ? 1 : 0;
}
