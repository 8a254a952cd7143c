/* bench-demo.c: wsrt-demo's workloads on wsrt and on a GThreadPool
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   usage: bench-demo [WORKLOAD|all] [WORKERS] [SCALE]   (all, 2, 200000)
 *
 * The four workloads of examples/wsrt-demo-workloads.c (fork-join, chains
 * of detached tasks, yielding tasks, remote spawns from the main loop),
 * run at once, about SCALE tasks each; the wall time from the first spawn
 * to the last result on the main loop:
 *  - wsrt: WORKERS workers, the tasks of wsrt-demo-workloads.c;
 *  - the anchor, in the same program: a GThreadPool of WORKERS threads
 *    running the same workloads written for it (demo-gthreadpool.c).
 * Rounds alternate after a warm-up of each; every result is checked;
 * medians are printed. wsrt-demo prints one such round at its end.
 */

#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "wsrt.h"
#include "bench-util.h"
#include "demo-gthreadpool.h"

#define DEFAULT_SCALE 200000
#define ROUNDS        5

static double
run_wsrt (DemoWorkloads *w,
          WsRuntime     *rt)
{
  double seconds;

  demo_workloads_start (w, rt);
  seconds = demo_workloads_wait (w);
  if (!demo_workloads_check (w, FALSE))
    exit (1);
  return seconds * 1e3;
}

static double
run_gthreadpool (DemoWorkloads *w,
                 guint          n_threads)
{
  g_autoptr(GError) error = NULL;
  double seconds = demo_gthreadpool_run (w, n_threads, &error);

  if (seconds < 0)
    g_error ("cannot start a GThreadPool: %s", error->message);
  if (!demo_workloads_check (w, FALSE))
    exit (1);
  return seconds * 1e3;
}

int
main (int   argc,
      char *argv[])
{
  const char *workload = argc > 1 ? argv[1] : "all";
  guint workers = argc > 2 ? (guint) atoi (argv[2]) : 2;
  guint scale = argc > 3 ? (guint) atoi (argv[3]) : DEFAULT_SCALE;
  g_autoptr(GError) error = NULL;
  g_autoptr(WsRuntime) rt = NULL;
  DemoWorkloads w;
  double ws[ROUNDS], gt[ROUNDS];
  double ws_med, gt_med;

  if (workers < 1 || scale < 1 || !demo_workloads_init (&w, workload, scale, &error))
    {
      fprintf (stderr, "usage: bench-demo [all|forkjoin|chains|yields|remote] [WORKERS] [SCALE]"
               "%s%s\n", error != NULL ? ": " : "", error != NULL ? error->message : "");
      return 2;
    }
  rt = ws_runtime_new (workers);

  /* Warm-up of both: threads started, allocator primed. */
  run_wsrt (&w, rt);
  run_gthreadpool (&w, workers);

  for (guint r = 0; r < ROUNDS; r++)
    {
      ws[r] = run_wsrt (&w, rt);
      gt[r] = run_gthreadpool (&w, workers);
    }
  ws_med = bench_median (ws, ROUNDS);
  gt_med = bench_median (gt, ROUNDS);

  printf ("bench=demo workload=%s workers=%u scale=%u tasks=%u rounds=%d "
          "(wsrt-demo's workloads: first spawn -> last result on the main loop)\n",
          workload, workers, scale, w.n_tasks, ROUNDS);
  printf ("wsrt                             median_ms=%.1f\n", ws_med);
  printf ("GThreadPool (anchor)             median_ms=%.1f\n", gt_med);
  printf ("ratio wsrt/GThreadPool           %.3f\n", ws_med / gt_med);

  ws_runtime_shutdown (rt, -1);
  demo_workloads_clear (&w);
  return 0;
}
