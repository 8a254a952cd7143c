/* gtk-hasher-gtask.c: gtk-hasher written with GTask, for comparison
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   gtk-hasher-gtask [--headless] [--quit] [--cancel-after-ms=MS] DIR
 *
 * The same application as gtk-hasher (hasher-common.c: the window, the
 * walk, the hashing of one file, the report), with its work run the way
 * GIO's own API suggests: the walk in one g_task_run_in_thread(), then one
 * g_task_run_in_thread() per file, which GIO runs on its thread pool and
 * whose callback comes back to the main loop and shows the file
 * (hasher_show_file()). All tasks share one GCancellable, which the Cancel
 * button cancels: a running file stops within a chunk, queued ones return
 * at once.
 */

#include <gio/gio.h>

#include "hasher-common.h"

typedef struct
{
  Hasher       *hasher;
  GCancellable *cancellable;
  GPtrArray    *entries;
  guint         n_pending;    /* file tasks whose callback has not run */
  gboolean      cancelled;
} Scan;

static void
walk_thread (GTask        *task,
             gpointer      source_object,
             gpointer      task_data,
             GCancellable *cancellable)
{
  GError *error = NULL;
  GPtrArray *entries = hasher_walk (task_data, cancellable, &error);

  if (entries == NULL)
    g_task_return_error (task, error);
  else
    g_task_return_pointer (task, entries, (GDestroyNotify) g_ptr_array_unref);
}

static void
hash_thread (GTask        *task,
             gpointer      source_object,
             gpointer      task_data,
             GCancellable *cancellable)
{
  GError *error = NULL;

  /* An unreadable file is no error for the scan: it keeps no digest. */
  if (!hasher_hash_file (task_data, cancellable, &error)
      && g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      g_task_return_error (task, error);
      return;
    }
  g_clear_error (&error);
  g_task_return_pointer (task, task_data, NULL);
}

/* Main loop, once per file. */
static void
hashed_cb (GObject      *source_object,
           GAsyncResult *result,
           gpointer      user_data)
{
  Scan *scan = user_data;
  HasherEntry *entry = g_task_propagate_pointer (G_TASK (result), NULL);

  if (entry == NULL)
    scan->cancelled = TRUE;
  else
    hasher_show_file (scan->hasher, entry);

  if (--scan->n_pending > 0)
    return;
  if (scan->cancelled)
    {
      g_autoptr(GError) error = g_error_new_literal (G_IO_ERROR, G_IO_ERROR_CANCELLED,
                                                     "Operation was cancelled");

      hasher_finish (scan->hasher, NULL, error);
    }
  else
    hasher_finish (scan->hasher, scan->entries, NULL);
}

static void
walked_cb (GObject      *source_object,
           GAsyncResult *result,
           gpointer      user_data)
{
  Scan *scan = user_data;
  g_autoptr(GError) error = NULL;

  scan->entries = g_task_propagate_pointer (G_TASK (result), &error);
  if (scan->entries == NULL)
    {
      hasher_finish (scan->hasher, NULL, error);
      return;
    }
  hasher_set_n_files (scan->hasher, scan->entries->len);
  if (scan->entries->len == 0)
    {
      hasher_finish (scan->hasher, scan->entries, NULL);
      return;
    }

  scan->n_pending = scan->entries->len;
  for (guint i = 0; i < scan->entries->len; i++)
    {
      g_autoptr(GTask) task = g_task_new (NULL, scan->cancellable, hashed_cb, scan);

      g_task_set_task_data (task, scan->entries->pdata[i], NULL);
      g_task_run_in_thread (task, hash_thread);
    }
}

static void
scan_start (Hasher     *hasher,
            const char *dir)
{
  Scan *scan = g_new0 (Scan, 1);
  g_autoptr(GTask) task = NULL;

  scan->hasher = hasher;
  scan->cancellable = g_cancellable_new ();
  hasher_set_data (hasher, scan);

  task = g_task_new (NULL, scan->cancellable, walked_cb, scan);
  g_task_set_task_data (task, g_strdup (dir), g_free);
  g_task_run_in_thread (task, walk_thread);
}

static void
scan_cancel (Hasher *hasher)
{
  Scan *scan = hasher_get_data (hasher);

  g_cancellable_cancel (scan->cancellable);
}

static gboolean
scan_cleanup (Hasher *hasher)
{
  Scan *scan = hasher_get_data (hasher);

  if (scan == NULL)
    return TRUE;
  g_clear_pointer (&scan->entries, g_ptr_array_unref);
  g_object_unref (scan->cancellable);
  g_free (scan);
  return TRUE;
}

static const HasherBackend backend = {
  "GTask", scan_start, scan_cancel, scan_cleanup,
};

int
main (int   argc,
      char *argv[])
{
  return hasher_main (argc, argv, &backend);
}
