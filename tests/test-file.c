/* test-file.c: WsFileOp and ws_runtime_load_file, files as awaitables
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A task awaits a file operation with one WS_AWAIT: loading, replacing
 * and querying a temporary file; a missing file fails with NOT_FOUND;
 * the call is linked to the task's cancellable.
 */

#include "config.h"

#include <glib/gstdio.h>

#include "ws-test-fixture.h"

/* A temporary directory, removed with what the test wrote in it. */
typedef struct
{
  char  *dir;
  GFile *file;
} TempFile;

static void
temp_file_init (TempFile   *t,
                const char *contents)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *path = NULL;

  t->dir = g_dir_make_tmp ("test-file-XXXXXX", &error);
  g_assert_no_error (error);
  path = g_build_filename (t->dir, "data", NULL);
  if (contents != NULL)
    {
      g_file_set_contents (path, contents, -1, &error);
      g_assert_no_error (error);
    }
  t->file = g_file_new_for_path (path);
}

static void
temp_file_clear (TempFile *t)
{
  g_autofree char *path = g_file_get_path (t->file);

  g_remove (path);
  g_rmdir (t->dir);
  g_clear_object (&t->file);
  g_clear_pointer (&t->dir, g_free);
}

/* Load, replace then load back, query: one await each. */
typedef struct
{
  WS_ASYNC_STATE;
  GFile     *file;
  WsFileOp  *op;
  GBytes    *loaded;
  GBytes    *reloaded;
  GFileInfo *info;
  gboolean   cancel_first;
  guint      polls;
} FileState;

static void
file_state_clear (FileState *s)
{
  g_clear_pointer (&s->op, ws_file_op_unref);
  g_clear_pointer (&s->loaded, g_bytes_unref);
  g_clear_pointer (&s->reloaded, g_bytes_unref);
  g_clear_object (&s->info);
}

static WsPoll
load_func (WsContext *cx,
           gpointer   data)
{
  FileState *s = data;
  g_autoptr(GError) error = NULL;

  s->polls++;
  WS_ASYNC_BEGIN (s);

  s->op = ws_file_load_contents (s->file);
  if (s->cancel_first)
    g_cancellable_cancel (ws_context_get_cancellable (cx));
  WS_AWAIT (s, ws_file_op_poll (s->op, cx));
  s->loaded = ws_file_op_finish_bytes (s->op, &error);
  if (s->loaded == NULL)
    WS_ASYNC_RETURN_ERROR (s, cx, g_steal_pointer (&error));

  WS_ASYNC_END (s);
}

static void
test_load (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsTask) task = NULL;
  g_autoptr(GError) error = NULL;
  FileState s = { 0 };
  TempFile t;

  temp_file_init (&t, "hello, file");
  s.file = t.file;
  task = ws_runtime_spawn (rt, load_func, &s, NULL);
  g_assert_true (ws_task_wait (task, NULL, &error));
  g_assert_no_error (error);
  g_assert_cmpmem (g_bytes_get_data (s.loaded, NULL), g_bytes_get_size (s.loaded),
                   "hello, file", 11);

  file_state_clear (&s);
  temp_file_clear (&t);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static WsPoll
replace_func (WsContext *cx,
              gpointer   data)
{
  FileState *s = data;
  g_autoptr(GError) error = NULL;

  WS_ASYNC_BEGIN (s);

  {
    g_autoptr(GBytes) text = g_bytes_new_static ("replaced", 8);

    s->op = ws_file_replace_contents (s->file, text);
  }
  WS_AWAIT (s, ws_file_op_poll (s->op, cx));
  if (!ws_file_op_finish (s->op, &error))
    WS_ASYNC_RETURN_ERROR (s, cx, g_steal_pointer (&error));
  g_clear_pointer (&s->op, ws_file_op_unref);

  s->op = ws_file_load_contents (s->file);
  WS_AWAIT (s, ws_file_op_poll (s->op, cx));
  s->reloaded = ws_file_op_finish_bytes (s->op, &error);
  if (s->reloaded == NULL)
    WS_ASYNC_RETURN_ERROR (s, cx, g_steal_pointer (&error));
  g_clear_pointer (&s->op, ws_file_op_unref);

  s->op = ws_file_query_info (s->file, G_FILE_ATTRIBUTE_STANDARD_SIZE);
  WS_AWAIT (s, ws_file_op_poll (s->op, cx));
  s->info = ws_file_op_finish_info (s->op, &error);
  if (s->info == NULL)
    WS_ASYNC_RETURN_ERROR (s, cx, g_steal_pointer (&error));

  WS_ASYNC_END (s);
}

static void
test_replace_and_query (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsTask) task = NULL;
  g_autoptr(GError) error = NULL;
  FileState s = { 0 };
  TempFile t;

  temp_file_init (&t, "the old contents, longer");
  s.file = t.file;
  task = ws_runtime_spawn (rt, replace_func, &s, NULL);
  g_assert_true (ws_task_wait (task, NULL, &error));
  g_assert_no_error (error);
  g_assert_cmpmem (g_bytes_get_data (s.reloaded, NULL), g_bytes_get_size (s.reloaded),
                   "replaced", 8);
  g_assert_cmpint (g_file_info_get_size (s.info), ==, 8);

  file_state_clear (&s);
  temp_file_clear (&t);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static void
test_missing_file (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsTask) task = NULL;
  g_autoptr(GError) error = NULL;
  FileState s = { 0 };
  TempFile t;

  temp_file_init (&t, NULL);
  s.file = t.file;
  task = ws_runtime_spawn (rt, load_func, &s, NULL);
  g_assert_false (ws_task_wait (task, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
  g_assert_null (s.loaded);

  file_state_clear (&s);
  temp_file_clear (&t);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* The call gets the task's cancellable: cancelled before the first poll
 * of the operation, the load fails with CANCELLED, and the task, which
 * nobody cancelled, is polled again to see it. */
static void
test_task_cancellable (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsTask) task = NULL;
  g_autoptr(GError) error = NULL;
  FileState s = { 0 };
  TempFile t;

  temp_file_init (&t, "never read");
  s.file = t.file;
  s.cancel_first = TRUE;
  task = ws_runtime_spawn (rt, load_func, &s, NULL);
  g_assert_false (ws_task_wait (task, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_null (s.loaded);
  g_assert_cmpuint (s.polls, >=, 2);

  file_state_clear (&s);
  temp_file_clear (&t);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* For bindings: a task whose value is a GBytes. */
static void
test_runtime_load_file (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsTask) task = NULL;
  g_autoptr(WsTask) missing = NULL;
  g_autoptr(GError) error = NULL;
  const GValue *value;
  GBytes *bytes;
  TempFile t;
  TempFile none;

  temp_file_init (&t, "bytes for JS");
  task = ws_runtime_load_file (rt, t.file);
  g_assert_true (ws_task_wait (task, NULL, &error));
  g_assert_no_error (error);
  value = ws_task_get_value (task);
  g_assert_nonnull (value);
  g_assert_true (G_VALUE_HOLDS (value, G_TYPE_BYTES));
  bytes = g_value_get_boxed (value);
  g_assert_cmpmem (g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes), "bytes for JS", 12);

  temp_file_init (&none, NULL);
  missing = ws_runtime_load_file (rt, none.file);
  g_assert_false (ws_task_wait (missing, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);

  temp_file_clear (&none);
  temp_file_clear (&t);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static void
test_bad_input (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(GFile) file = g_file_new_for_path ("/nonexistent");
  g_autoptr(GBytes) bytes = g_bytes_new_static ("x", 1);
  g_autoptr(WsFileOp) load = ws_file_load_contents (file);
  g_autoptr(WsFileOp) query = ws_file_query_info (file, "standard::size");
  GError *error = NULL;

  ws_test_n_refusals = 0;
  WS_TEST_REFUSED (ws_file_load_contents, g_assert_null (ws_file_load_contents (NULL)));
  WS_TEST_REFUSED (ws_file_replace_contents, g_assert_null (ws_file_replace_contents (NULL, bytes)));
  WS_TEST_REFUSED (ws_file_replace_contents, g_assert_null (ws_file_replace_contents (file, NULL)));
  WS_TEST_REFUSED (ws_file_query_info, g_assert_null (ws_file_query_info (NULL, "standard::size")));
  WS_TEST_REFUSED (ws_file_query_info, g_assert_null (ws_file_query_info (file, NULL)));
  WS_TEST_REFUSED (ws_file_op_ref, g_assert_null (ws_file_op_ref (NULL)));
  WS_TEST_REFUSED (ws_file_op_unref, ws_file_op_unref (NULL));
  WS_TEST_REFUSED (ws_file_op_poll, g_assert_cmpint (ws_file_op_poll (NULL, NULL), ==, WS_POLL_READY));
  WS_TEST_REFUSED (ws_file_op_poll, g_assert_cmpint (ws_file_op_poll (load, NULL), ==, WS_POLL_READY));
  /* Not ready yet, or finished as another kind. */
  WS_TEST_REFUSED (ws_file_op_finish, g_assert_false (ws_file_op_finish (NULL, &error)));
  WS_TEST_REFUSED (ws_file_op_finish, g_assert_false (ws_file_op_finish (load, &error)));
  WS_TEST_REFUSED (ws_file_op_finish_bytes, g_assert_null (ws_file_op_finish_bytes (load, &error)));
  WS_TEST_REFUSED (ws_file_op_finish_bytes, g_assert_null (ws_file_op_finish_bytes (query, &error)));
  WS_TEST_REFUSED (ws_file_op_finish_info, g_assert_null (ws_file_op_finish_info (query, &error)));
  WS_TEST_REFUSED (ws_file_op_finish_info, g_assert_null (ws_file_op_finish_info (load, &error)));
  g_assert_no_error (error);
  WS_TEST_REFUSED (ws_runtime_load_file, g_assert_null (ws_runtime_load_file (NULL, file)));
  WS_TEST_REFUSED (ws_runtime_load_file, g_assert_null (ws_runtime_load_file (rt, NULL)));
  g_test_message ("files: %u refusals checked", ws_test_n_refusals);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

WS_TEST_MAIN ({ "/file/load", test_load },
              { "/file/replace-and-query", test_replace_and_query },
              { "/file/missing", test_missing_file },
              { "/file/task-cancellable", test_task_cancellable },
              { "/file/runtime-load-file", test_runtime_load_file },
              { "/file/bad-input", test_bad_input })
