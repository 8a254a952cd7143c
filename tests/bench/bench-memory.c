/* bench-memory.c: resident memory per pending task
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * 1,000,000 tasks without user data are spawned from the main thread and
 * each returns WS_POLL_PENDING on its first poll, without registering its
 * waker anywhere: once all have been polled, the runtime holds 1,000,000
 * pending tasks (as a program holds tasks waiting on timers or sockets).
 * The RSS growth divided by the count is the cost of one pending task.
 * Variants: detached spawns, spawns that keep their WsJoinHandle, and
 * spawns that keep their WsTask (a GObject per task).
 *
 * The anchor, in the same program: 1,000,000 pending GTasks (g_task_new,
 * not yet returned), what a GLib program keeps per outstanding operation.
 *
 * Each round runs in a forked child, so that one round's freed memory does
 * not hide the next one's growth; the medians over rounds are printed.
 */

#include "config.h"

#include <stdio.h>
#include <unistd.h>

#include "wsrt.h"
#include "bench-util.h"

#define N_TASKS 1000000
#define ROUNDS  3

static gint polled;

static WsPoll
pending_forever (WsContext *cx,
                 gpointer   data)
{
  /* The waker is not kept: nothing will ever wake this task; shutdown
   * cancels it. */
  g_atomic_int_inc (&polled);
  return WS_POLL_PENDING;
}

typedef enum
{
  MODE_DETACHED,
  MODE_JOIN_HANDLES,
  MODE_TASKS,
  MODE_GTASK,
  N_MODES
} Mode;

static void
gtask_never (GObject      *source,
             GAsyncResult *result,
             gpointer      data)
{
}

/* In a child: returns the RSS growth per pending item, in bytes. */
static double
measure_child (Mode mode)
{
  g_autoptr(WsRuntime) rt = NULL;
  gpointer *keep = NULL;
  long before;
  long after;

  keep = g_new0 (gpointer, N_TASKS);  /* touched before the first reading */
  memset (keep, 0, sizeof (gpointer) * N_TASKS);

  if (mode != MODE_GTASK)
    {
      rt = ws_runtime_new (2);
      /* Start the workers and warm the allocator outside the reading. */
      ws_runtime_spawn_detached (rt, pending_forever, NULL, NULL);
      while (g_atomic_int_get (&polled) < 1)
        g_usleep (100);
      g_atomic_int_set (&polled, 0);
    }

  before = bench_rss_bytes ();
  for (guint i = 0; i < N_TASKS; i++)
    {
      switch (mode)
        {
        case MODE_DETACHED:
          ws_runtime_spawn_detached (rt, pending_forever, NULL, NULL);
          break;
        case MODE_JOIN_HANDLES:
          keep[i] = ws_runtime_spawn_joinable (rt, pending_forever, NULL, NULL);
          break;
        case MODE_TASKS:
          keep[i] = ws_runtime_spawn (rt, pending_forever, NULL, NULL);
          break;
        case MODE_GTASK:
          keep[i] = g_task_new (NULL, NULL, gtask_never, NULL);
          break;
        case N_MODES:
        default:
          g_assert_not_reached ();
        }
    }
  if (mode != MODE_GTASK)
    while (g_atomic_int_get (&polled) < N_TASKS)
      g_usleep (1000);
  after = bench_rss_bytes ();

  /* Shutdown cancels the pending tasks; the child exits right after. */
  if (rt != NULL)
    ws_runtime_shutdown (rt, -1);
  return (double) (after - before) / N_TASKS;
}

static void
measure_into (gint    mode,
              gpointer out)
{
  *(double *) out = measure_child ((Mode) mode);
}

static double
run_round (Mode mode)
{
  double result = -1;

  (void) bench_run_in_child (measure_into, mode, &result, sizeof result);
  return result;
}

int
main (int   argc,
      char *argv[])
{
  static const char *const names[] = {
    "wsrt detached (pending task)",
    "wsrt with WsJoinHandle",
    "wsrt with WsTask",
    "GTask pending (anchor)",
  };
  double v[N_MODES][ROUNDS];

  /* Interleave the rounds; the parent never starts a thread, so fork is
   * safe. */
  for (guint r = 0; r < ROUNDS; r++)
    for (guint m = 0; m < N_MODES; m++)
      v[m][r] = run_round ((Mode) m);

  printf ("bench=memory pending=%d rounds=%d (RSS growth / pending item)\n", N_TASKS, ROUNDS);
  for (guint m = 0; m < N_MODES; m++)
    printf ("%-30s median_bytes=%.1f\n", names[m], bench_median (v[m], ROUNDS));
  return 0;
}
