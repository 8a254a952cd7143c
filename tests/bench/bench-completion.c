/* bench-completion.c: completions delivered to a main loop
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * 100,000 empty jobs run off the main thread, each delivering its
 * completion to a callback on the main loop; the time from the first
 * submission to the last callback, per completion:
 *  - wsrt: ws_runtime_spawn + ws_task_wait_async (+ wait_finish and unref
 *    in the callback), 2 workers;
 *  - the anchor, in the same program: g_task_new + g_task_run_in_thread,
 *    the callback calls g_task_propagate_boolean.
 * Rounds alternate; medians are printed.
 */

#include "config.h"

#include <stdio.h>

#include "wsrt.h"
#include "bench-util.h"

#define N_JOBS 100000
#define ROUNDS 5

static GMainLoop *loop;
static guint delivered;

static WsPoll
empty_poll (WsContext *cx,
            gpointer   data)
{
  return WS_POLL_READY;
}

static void
on_task_done (GObject      *source,
              GAsyncResult *result,
              gpointer      data)
{
  WsTask *task = WS_TASK (source);

  if (!ws_task_wait_finish (task, result, NULL))
    g_error ("a task failed");
  g_object_unref (task);
  if (++delivered == N_JOBS)
    g_main_loop_quit (loop);
}

static double
run_wsrt (WsRuntime *rt)
{
  guint64 start = bench_now_ns ();

  delivered = 0;
  for (guint i = 0; i < N_JOBS; i++)
    {
      WsTask *task = ws_runtime_spawn (rt, empty_poll, NULL, NULL);

      /* The callback takes over our reference. */
      ws_task_wait_async (task, NULL, on_task_done, NULL);
    }
  g_main_loop_run (loop);
  return (double) (bench_now_ns () - start) / N_JOBS;
}

static void
gtask_thread (GTask        *task,
              gpointer      source,
              gpointer      data,
              GCancellable *cancellable)
{
  g_task_return_boolean (task, TRUE);
}

static void
on_gtask_done (GObject      *source,
               GAsyncResult *result,
               gpointer      data)
{
  if (!g_task_propagate_boolean (G_TASK (result), NULL))
    g_error ("a GTask failed");
  if (++delivered == N_JOBS)
    g_main_loop_quit (loop);
}

static double
run_gtask (void)
{
  guint64 start = bench_now_ns ();

  delivered = 0;
  for (guint i = 0; i < N_JOBS; i++)
    {
      GTask *task = g_task_new (NULL, NULL, on_gtask_done, NULL);

      g_task_run_in_thread (task, gtask_thread);
      g_object_unref (task);
    }
  g_main_loop_run (loop);
  return (double) (bench_now_ns () - start) / N_JOBS;
}

int
main (int   argc,
      char *argv[])
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  double ws[ROUNDS], gt[ROUNDS];
  double ws_med, gt_med;

  loop = g_main_loop_new (NULL, FALSE);

  /* Warm-up of both: threads started, allocator primed. */
  run_wsrt (rt);
  run_gtask ();

  for (guint r = 0; r < ROUNDS; r++)
    {
      ws[r] = run_wsrt (rt);
      gt[r] = run_gtask ();
    }
  ws_med = bench_median (ws, ROUNDS);
  gt_med = bench_median (gt, ROUNDS);

  printf ("bench=completion jobs=%d rounds=%d (first submit -> last callback on the main loop)\n",
          N_JOBS, ROUNDS);
  printf ("wsrt spawn + wait_async          median_ns_per_completion=%.0f\n", ws_med);
  printf ("g_task_run_in_thread (anchor)    median_ns_per_completion=%.0f\n", gt_med);
  printf ("ratio wsrt/GTask                 %.3f\n", ws_med / gt_med);

  ws_runtime_shutdown (rt, -1);
  g_main_loop_unref (loop);
  return 0;
}
