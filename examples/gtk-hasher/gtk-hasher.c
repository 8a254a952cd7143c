/* gtk-hasher.c: hash every file under a directory on a wsrt runtime
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   gtk-hasher [--headless] [--quit] [--cancel-after-ms=MS] [--timeout=SECONDS] DIR
 *
 * A GTK 4 window with a progress bar and a Cancel button hashes (SHA-256)
 * every regular file under DIR and shows one digest over all of them
 * (hasher-common.c has the window, the walk and the hashing of one file;
 * gtk-hasher-gtask.c is the same app on GTask). How the work runs, which
 * is all this file is about:
 *
 *  - the walk is one blocking job (ws_runtime_spawn_blocking());
 *  - the files are hashed by as many blocking jobs as there are CPUs, each
 *    taking the next file from a shared atomic index until none is left.
 *    A few thousand small, cached files cost less to read than any round
 *    trip per file (a task, a GIO async call, a completion on the main
 *    loop, a limiter permit), so no file gets one: the jobs start once,
 *    and a job that meets large files simply takes fewer of them;
 *  - the jobs are in a WsTaskGroup: the main loop awaits them all with
 *    ws_task_group_wait_all_async(), Cancel is ws_task_group_cancel_all(),
 *    which cancels each job's ws_context_get_cancellable(): a job checks it
 *    between files and, through hasher_hash_file(), between the chunks of
 *    a large file;
 *  - the progress bar reads a counter ~30 times a second: the main loop
 *    gets nothing per file.
 *
 * doc/blocking.md, "Many small files", has the measurements of this and
 * the other ways.
 */

#include <stdatomic.h>

#include <wsrt.h>

#include "hasher-common.h"

typedef struct
{
  Hasher      *hasher;
  WsRuntime   *runtime;
  char        *dir;
  WsTask      *walk;      /* while the walk runs */
  WsTaskGroup *jobs;      /* once it is over */
  gboolean     cancelled; /* Cancel was pressed */

  /* The files. Written by the walk job, then read by the hash jobs, each
   * filling in the entries it takes, then by the main loop: each hand-over
   * is a task's end or spawn, which orders it. The Scan outlives the jobs:
   * it is freed only after the group's wait reported that all have ended. */
  GPtrArray   *entries;
  atomic_uint  next;      /* the index of the next file to take */
} Scan;

/* A blocking job: every regular file under scan->dir, sorted. */
static WsPoll
walk_job (WsContext *cx,
          gpointer   user_data)
{
  Scan *scan = user_data;
  GError *error = NULL;
  GPtrArray *entries = hasher_walk (scan->dir, ws_context_get_cancellable (cx), &error);

  if (entries == NULL)
    ws_context_return_error (cx, error);
  else
    ws_context_return_pointer (cx, entries, (GDestroyNotify) g_ptr_array_unref);
  return WS_POLL_READY;
}

/* A blocking job, one of n_jobs: hash files until none is left. */
static WsPoll
hash_job (WsContext *cx,
          gpointer   user_data)
{
  Scan *scan = user_data;
  GCancellable *cancellable = ws_context_get_cancellable (cx);
  guint i;

  /* Relaxed: the index only hands each file to one job; the entries
   * themselves were published by the spawn. */
  while ((i = atomic_fetch_add_explicit (&scan->next, 1, memory_order_relaxed))
         < scan->entries->len)
    {
      g_autoptr(GError) error = NULL;

      /* An unreadable file keeps no digest and the scan goes on; a
       * cancelled one ends the job. */
      if (!hasher_hash_file (scan->entries->pdata[i], cancellable, &error)
          && g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        {
          ws_context_return_error (cx, g_steal_pointer (&error));
          return WS_POLL_READY;
        }
      hasher_file_done (scan->hasher);
    }
  return WS_POLL_READY;
}

/* Main loop: every hash job has ended. */
static void
jobs_done_cb (GObject      *object,
              GAsyncResult *result,
              gpointer      user_data)
{
  Scan *scan = user_data;
  g_autoptr(GError) error = NULL;

  if (ws_task_group_wait_all_finish (WS_TASK_GROUP (object), result, &error))
    hasher_finish (scan->hasher, scan->entries, NULL);
  else
    hasher_finish (scan->hasher, NULL, error);
}

/* Main loop: the walk has ended; start the hash jobs. */
static void
walk_done_cb (GObject      *object,
              GAsyncResult *result,
              gpointer      user_data)
{
  Scan *scan = user_data;
  g_autoptr(WsTask) walk = g_steal_pointer (&scan->walk);
  g_autoptr(GError) error = NULL;
  guint n_jobs;

  if (!ws_task_wait_finish (walk, result, &error))
    {
      hasher_finish (scan->hasher, NULL, error);
      return;
    }
  scan->entries = ws_task_propagate_pointer (walk, NULL);
  hasher_set_n_files (scan->hasher, scan->entries->len);
  if (scan->cancelled)
    {
      /* Cancel came after the walk had ended, before this callback. */
      g_set_error_literal (&error, G_IO_ERROR, G_IO_ERROR_CANCELLED, "Operation was cancelled");
      hasher_finish (scan->hasher, NULL, error);
      return;
    }

  /* One job per CPU: on cached files the work is hashing, and more
   * threads than CPUs would only take turns. */
  n_jobs = CLAMP (scan->entries->len, 1, g_get_num_processors ());
  scan->jobs = ws_task_group_new ();
  for (guint j = 0; j < n_jobs; j++)
    {
      g_autoptr(WsTask) job = ws_runtime_spawn_blocking (scan->runtime, hash_job, scan, NULL);

      ws_task_group_add (scan->jobs, job);
    }
  ws_task_group_wait_all_async (scan->jobs, NULL, jobs_done_cb, scan);
}

static void
scan_start (Hasher     *hasher,
            const char *dir)
{
  Scan *scan = g_new0 (Scan, 1);

  scan->hasher = hasher;
  scan->dir = g_strdup (dir);
  scan->runtime = ws_runtime_new (0);
  hasher_set_data (hasher, scan);

  scan->walk = ws_runtime_spawn_blocking (scan->runtime, walk_job, scan, NULL);
  ws_task_wait_async (scan->walk, NULL, walk_done_cb, scan);
}

/* The Cancel button: the running jobs see their cancellable. */
static void
scan_cancel (Hasher *hasher)
{
  Scan *scan = hasher_get_data (hasher);

  scan->cancelled = TRUE;
  if (scan->walk != NULL)
    ws_task_cancel (scan->walk);
  if (scan->jobs != NULL)
    ws_task_group_cancel_all (scan->jobs);
}

static gboolean
scan_cleanup (Hasher *hasher)
{
  Scan *scan = hasher_get_data (hasher);
  gboolean ok;

  if (scan == NULL)
    return TRUE;
  ok = ws_runtime_shutdown (scan->runtime, -1);
  g_object_unref (scan->runtime);
  g_clear_object (&scan->jobs);
  g_clear_pointer (&scan->entries, g_ptr_array_unref);
  g_free (scan->dir);
  g_free (scan);
  return ok;
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
