/* gtk-hasher-fiber.c: hash every file under a directory, the work
 * written as one fiber
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   gtk-hasher-fiber [--headless] [--quit] [--cancel-after-ms=MS] [--timeout=SECONDS] DIR
 *
 * gtk-hasher.c's app, with its main-loop callbacks folded into one fiber
 * that reads top to bottom: walk (a blocking job), then hash (one
 * blocking job per CPU, each taking the next file from a shared index,
 * in a WsTaskGroup), then return the entries. The main loop awaits the
 * fiber with ws_task_wait_async () and Cancel is ws_task_cancel () on it:
 * the fiber's await returns FALSE, it cancels the jobs it started and
 * returns. The jobs check their cancellable between files and chunks, and
 * the runtime's shutdown (in cleanup) waits for the last of them.
 */

#include <stdatomic.h>

#include <wsrt.h>

#include "hasher-common.h"

typedef struct
{
  Hasher      *hasher;
  WsRuntime   *runtime;
  char        *dir;
  WsTask      *fiber;
  GPtrArray   *entries;   /* written by the walk, read by the jobs and main */
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

/* The fiber: the whole scan. */
static void
scan_fiber (WsContext *cx,
            gpointer   user_data)
{
  Scan *scan = user_data;
  g_autoptr(WsTask) walk = ws_runtime_spawn_blocking (scan->runtime, walk_job, scan, NULL);
  g_autoptr(WsTaskGroup) jobs = ws_task_group_new ();
  g_autoptr(GError) error = NULL;
  guint n_jobs;

  if (!WS_FIBER_AWAIT (cx, ws_task_poll (walk, cx)))
    {
      ws_task_cancel (walk);
      return;
    }
  scan->entries = ws_task_propagate_pointer (walk, &error);
  if (scan->entries == NULL)
    {
      ws_context_return_error (cx, g_steal_pointer (&error));
      return;
    }
  hasher_set_n_files (scan->hasher, scan->entries->len);

  /* One job per CPU: on cached files the work is hashing. */
  n_jobs = CLAMP (scan->entries->len, 1, g_get_num_processors ());
  for (guint j = 0; j < n_jobs; j++)
    {
      g_autoptr(WsTask) job = ws_runtime_spawn_blocking (scan->runtime, hash_job, scan, NULL);

      ws_task_group_add (jobs, job);
    }
  if (!WS_FIBER_AWAIT (cx, ws_task_group_poll_all (jobs, cx)))
    {
      ws_task_group_cancel_all (jobs);
      return;
    }
  /* A job fails only when cancelled; the jobs return no pointer. */
  for (guint j = 0; j < n_jobs && error == NULL; j++)
    {
      gpointer none = ws_task_propagate_pointer (ws_task_group_get_task (jobs, j), &error);

      g_warn_if_fail (none == NULL);
    }
  if (error != NULL)
    ws_context_return_error (cx, g_steal_pointer (&error));
}

/* Main loop: the fiber has ended. */
static void
scan_done_cb (GObject      *object,
              GAsyncResult *result,
              gpointer      user_data)
{
  Scan *scan = user_data;
  g_autoptr(GError) error = NULL;

  if (ws_task_wait_finish (WS_TASK (object), result, &error))
    hasher_finish (scan->hasher, scan->entries, NULL);
  else
    hasher_finish (scan->hasher, NULL, error);
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

  scan->fiber = ws_runtime_spawn_fiber (scan->runtime, scan_fiber, scan, NULL);
  ws_task_wait_async (scan->fiber, NULL, scan_done_cb, scan);
}

/* The Cancel button: the fiber's await returns FALSE. */
static void
scan_cancel (Hasher *hasher)
{
  Scan *scan = hasher_get_data (hasher);

  ws_task_cancel (scan->fiber);
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
  g_clear_object (&scan->fiber);
  g_clear_pointer (&scan->entries, g_ptr_array_unref);
  g_free (scan->dir);
  g_free (scan);
  return ok;
}

static const HasherBackend backend = {
  "wsrt-fiber", scan_start, scan_cancel, scan_cleanup,
};

int
main (int   argc,
      char *argv[])
{
  return hasher_main (argc, argv, &backend);
}
