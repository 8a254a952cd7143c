/* gtk-hasher.c: hash every file under a directory, with fibers on the main loop
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   gtk-hasher [--headless] [--quit] [--cancel-after-ms=MS] [--timeout=SECONDS] DIR
 *
 * A GTK 4 window with a progress bar, a list of the files hashed so far
 * and a Cancel button hashes (SHA-256) every regular file under DIR and
 * shows one digest over all of them (hasher-common.c has the window, the
 * walk and the hashing of one file; gtk-hasher-gtask.c is the same app on
 * GTask). How the work runs, which is all this file is about:
 *
 *  - the scan is a local fiber (ws_runtime_spawn_local_fiber()): it runs
 *    on the main thread and reads top to bottom, and the main loop runs
 *    (the window draws, Cancel is clicked) whenever it waits;
 *  - the blocking work is a thread job awaited in one call,
 *    ws_fiber_run_in_thread(), whose function has g_task_run_in_thread()'s
 *    shape: the walk, then one job per file;
 *  - the files are hashed by FILES_IN_FLIGHT_PER_CPU local fibers per CPU,
 *    each taking the next file from a shared index until none is left.
 *    A file's round trip (its job handed to a pool thread, its result
 *    back to the main loop) costs more than hashing a small cached file,
 *    so with one file per CPU in flight the pool's threads would wait for
 *    the round trips about half of the time; with more, the round trips
 *    overlap, while the pool still hashes on one thread per CPU. The
 *    index is a plain integer: every fiber here runs on the main thread.
 *    Each shows its file as soon as it is hashed (hasher_show_file(), on
 *    the main thread);
 *  - the scan awaits them with ws_fiber_await_all(). Cancel is
 *    ws_task_cancel() on the scan: its await cancels the fibers it awaits
 *    and waits for their ends, and each thread job sees its cancellable
 *    between the chunks of a file. The scan then reports the cancellation.
 *
 * doc/blocking.md, "Many small files", has the measurements of this and
 * the other ways.
 */

#include <wsrt.h>

#include "hasher-common.h"

#define FILES_IN_FLIGHT_PER_CPU 16

typedef struct
{
  Hasher    *hasher;
  char      *dir;
  WsTask    *scan;      /* the scan's fiber */
  GPtrArray *entries;   /* the files, once the walk is over */
  guint      next;      /* the index of the next file to hash */
} Scan;

/* Thread jobs, on the blocking pool. */
static gpointer
walk (GCancellable  *cancellable,
      gpointer       dir,
      GError       **error)
{
  return hasher_walk (dir, cancellable, error);
}

static gpointer
hash_one (GCancellable  *cancellable,
          gpointer       entry,
          GError       **error)
{
  g_autoptr(GError) local_error = NULL;

  /* An unreadable file is no error for the scan: it keeps no digest. */
  if (!hasher_hash_file (entry, cancellable, &local_error)
      && g_error_matches (local_error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      g_propagate_error (error, g_steal_pointer (&local_error));
      return NULL;
    }
  return entry;
}

/* A local fiber: hash the next file until none is left. */
static void
hash_files (WsContext *cx,
            gpointer   user_data)
{
  Scan *scan = user_data;

  while (scan->next < scan->entries->len)
    {
      HasherEntry *entry = scan->entries->pdata[scan->next++];

      if (ws_fiber_run_in_thread (cx, hash_one, entry, NULL) == NULL)
        return;                                         /* cancelled */
      hasher_show_file (scan->hasher, entry);
    }
}

/* The scan, a local fiber. */
static void
scan_files (WsContext *cx,
            gpointer   user_data)
{
  Scan *scan = user_data;
  g_autoptr(GPtrArray) jobs = g_ptr_array_new_with_free_func (g_object_unref);
  g_autoptr(GError) error = NULL;

  scan->entries = ws_fiber_run_in_thread (cx, walk, scan->dir, &error);
  if (scan->entries != NULL)
    {
      hasher_set_n_files (scan->hasher, scan->entries->len);
      for (guint j = 0; j < FILES_IN_FLIGHT_PER_CPU * g_get_num_processors (); j++)
        g_ptr_array_add (jobs, ws_runtime_spawn_local_fiber (ws_runtime_get_default (), NULL,
                                                             hash_files, scan, NULL));
      ws_fiber_await_all (cx, (WsTask **) jobs->pdata, jobs->len, &error);
    }
  hasher_finish (scan->hasher, error == NULL ? scan->entries : NULL, error);
}

static void
scan_start (Hasher     *hasher,
            const char *dir)
{
  Scan *scan = g_new0 (Scan, 1);

  scan->hasher = hasher;
  scan->dir = g_strdup (dir);
  hasher_set_data (hasher, scan);
  scan->scan = ws_runtime_spawn_local_fiber (ws_runtime_get_default (), NULL,
                                             scan_files, scan, NULL);
}

/* The Cancel button. */
static void
scan_cancel (Hasher *hasher)
{
  Scan *scan = hasher_get_data (hasher);

  ws_task_cancel (scan->scan);
}

static gboolean
scan_cleanup (Hasher *hasher)
{
  Scan *scan = hasher_get_data (hasher);

  if (scan == NULL)
    return TRUE;
  g_object_unref (scan->scan);
  g_clear_pointer (&scan->entries, g_ptr_array_unref);
  g_free (scan->dir);
  g_free (scan);
  return TRUE;
}

static const HasherBackend backend = {
  "wsrt", scan_start, scan_cancel, scan_cleanup,
};

int
main (int   argc,
      char *argv[])
{
  return hasher_main (argc, argv, &backend);
}
