/* bench-completion.c: completions delivered to a main loop
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * 100,000 empty jobs run off the main thread, each delivering its
 * completion to a callback on the main loop; the time from the first
 * submission to the last callback, per completion:
 *  - the anchor: g_task_new + g_task_run_in_thread, the callback calls
 *    g_task_propagate_boolean;
 *  - wsrt wait_async: ws_runtime_spawn + ws_task_wait_async (+ wait_finish
 *    and unref in the callback), 2 workers;
 *  - wsrt callback spawn: ws_runtime_spawn_with_callback (+
 *    ws_join_handle_finish_uint64 in the callback), 2 workers.
 * All three in one process, rounds alternating; medians are printed, and
 * each wsrt median over the anchor's.
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

static void
on_handle_done (WsJoinHandle *handle,
                gpointer      data)
{
  if (!ws_join_handle_finish_uint64 (handle, NULL, NULL))
    g_error ("a task failed");
  if (++delivered == N_JOBS)
    g_main_loop_quit (loop);
}

static double
run_wsrt_callback (WsRuntime *rt)
{
  guint64 start = bench_now_ns ();

  delivered = 0;
  for (guint i = 0; i < N_JOBS; i++)
    ws_runtime_spawn_with_callback (rt, empty_poll, NULL, NULL, on_handle_done, NULL);
  g_main_loop_run (loop);
  return (double) (bench_now_ns () - start) / N_JOBS;
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
  double ws[ROUNDS], cb[ROUNDS], gt[ROUNDS];
  double ws_med, cb_med, gt_med;

  loop = g_main_loop_new (NULL, FALSE);

  /* Warm-up of all three: threads started, allocator primed. */
  run_wsrt (rt);
  run_wsrt_callback (rt);
  run_gtask ();

  for (guint r = 0; r < ROUNDS; r++)
    {
      gt[r] = run_gtask ();
      ws[r] = run_wsrt (rt);
      cb[r] = run_wsrt_callback (rt);
    }
  gt_med = bench_median (gt, ROUNDS);
  ws_med = bench_median (ws, ROUNDS);
  cb_med = bench_median (cb, ROUNDS);

  printf ("bench=completion jobs=%d rounds=%d (first submit -> last callback on the main loop)\n",
          N_JOBS, ROUNDS);
  printf ("g_task_run_in_thread (anchor)    median_ns_per_completion=%.0f\n", gt_med);
  printf ("wsrt spawn + wait_async          median_ns_per_completion=%.0f\n", ws_med);
  printf ("wsrt spawn_with_callback         median_ns_per_completion=%.0f\n", cb_med);
  printf ("ratio wait_async/GTask           %.3f\n", ws_med / gt_med);
  printf ("ratio spawn_with_callback/GTask  %.3f\n", cb_med / gt_med);

  ws_runtime_shutdown (rt, -1);
  g_main_loop_unref (loop);
  return 0;
}
