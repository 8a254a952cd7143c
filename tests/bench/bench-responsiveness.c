/* bench-responsiveness.c: does a main loop keep its frames under load?
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A 16 ms timer (a frame clock) runs on the main loop while 100,000 small
 * jobs (5 us of CPU each, 0.5 s in all) run on the same loop; the number
 * that matters is the largest gap between two timer callbacks:
 *  - wsrt: 100,000 local tasks (ws_runtime_spawn_local_detached), polled
 *    by the runtime's GSource in bounded slices;
 *  - the anchor, in the same program: the same jobs queued with
 *    g_idle_add.
 * Rounds alternate; medians of the largest gap and of the total time are
 * printed.
 */

#include "config.h"

#include <stdio.h>

#include "wsrt.h"
#include "bench-util.h"

#define N_JOBS    100000
#define JOB_NS    5000
#define PERIOD_MS 16
#define ROUNDS    3

static GMainLoop *loop;
static guint left;
static guint64 last_tick;
static guint64 max_gap;

static gboolean
on_tick (gpointer data)
{
  guint64 now = bench_now_ns ();

  max_gap = MAX (max_gap, now - last_tick);
  last_tick = now;
  return G_SOURCE_CONTINUE;
}

static void
job_done (void)
{
  bench_spin_ns (JOB_NS);
  if (--left == 0)
    g_main_loop_quit (loop);
}

static WsPoll
local_job (WsContext *cx,
           gpointer   data)
{
  job_done ();
  return WS_POLL_READY;
}

static gboolean
idle_job (gpointer data)
{
  job_done ();
  return G_SOURCE_REMOVE;
}

/* Returns the total ms; *gap_ms gets the largest timer gap. */
static double
run_round (WsRuntime *rt,
           gboolean   use_wsrt,
           double    *gap_ms)
{
  guint64 start = bench_now_ns ();
  guint timer;
  guint64 end;

  left = N_JOBS;
  max_gap = 0;
  last_tick = start;
  timer = g_timeout_add (PERIOD_MS, on_tick, NULL);
  for (guint i = 0; i < N_JOBS; i++)
    {
      if (use_wsrt)
        ws_runtime_spawn_local_detached (rt, NULL, local_job, NULL, NULL);
      else
        g_idle_add (idle_job, NULL);
    }
  g_main_loop_run (loop);
  end = bench_now_ns ();
  /* The gap from the last tick to the end counts too. */
  max_gap = MAX (max_gap, end - last_tick);
  g_source_remove (timer);

  *gap_ms = max_gap / 1e6;
  return (end - start) / 1e6;
}

int
main (int   argc,
      char *argv[])
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  double ws_gap[ROUNDS], ws_total[ROUNDS], idle_gap[ROUNDS], idle_total[ROUNDS];

  loop = g_main_loop_new (NULL, FALSE);

  for (guint r = 0; r < ROUNDS; r++)
    {
      ws_total[r] = run_round (rt, TRUE, &ws_gap[r]);
      idle_total[r] = run_round (rt, FALSE, &idle_gap[r]);
    }

  printf ("bench=responsiveness jobs=%d job_us=%d timer_ms=%d rounds=%d\n",
          N_JOBS, JOB_NS / 1000, PERIOD_MS, ROUNDS);
  printf ("wsrt local tasks            median_max_gap_ms=%.2f median_total_ms=%.0f\n",
          bench_median (ws_gap, ROUNDS), bench_median (ws_total, ROUNDS));
  printf ("g_idle_add (anchor)         median_max_gap_ms=%.2f median_total_ms=%.0f\n",
          bench_median (idle_gap, ROUNDS), bench_median (idle_total, ROUNDS));

  ws_runtime_shutdown (rt, -1);
  g_main_loop_unref (loop);
  return 0;
}
