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
 *
 * Then the longest dispatch: 200,000 spawn_with_callback tasks run to
 * their end before the main loop is iterated (their completions all wait
 * in the context's delivery source), and the loop is iterated one
 * iteration at a time until every callback has run; printed are the
 * medians over rounds of the longest iteration, in wall time and in the
 * main thread's CPU time (which other processes' load does not inflate:
 * on a busy machine the wall time mostly shows preemption), of the number
 * of iterations and of the time to deliver them all, per completion. A
 * main loop draws between iterations only, so the longest one is the
 * frame the completions can cost.
 */

#include "config.h"

#include <stdatomic.h>
#include <stdio.h>

#include "wsrt.h"
#include "bench-util.h"

#define N_JOBS 100000
#define ROUNDS 5
#define N_BACKLOG 200000

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

static _Atomic guint backlog_polled;

static WsPoll
counted_poll (WsContext *cx,
              gpointer   data)
{
  atomic_fetch_add_explicit (&backlog_polled, 1, memory_order_relaxed);
  return WS_POLL_READY;
}

static void
on_backlog_done (WsJoinHandle *handle,
                 gpointer      data)
{
  if (!ws_join_handle_finish_uint64 (handle, NULL, NULL))
    g_error ("a task failed");
  delivered++;
}

typedef struct
{
  double longest_ms;
  double longest_cpu_ms;
  double iterations;
  double ns_per_completion;
  double cpu_ns_per_completion;
} Backlog;

static guint64
thread_cpu_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return (guint64) ts.tv_sec * 1000000000u + (guint64) ts.tv_nsec;
}

/* N_BACKLOG completions queued before the loop runs; the loop iterated
 * until all are delivered. */
static Backlog
run_backlog (WsRuntime *rt)
{
  Backlog b = { 0, 0, 0, 0, 0 };
  guint64 start, cpu_start, longest = 0, longest_cpu = 0;
  guint iterations = 0;

  delivered = 0;
  atomic_store (&backlog_polled, 0);
  for (guint i = 0; i < N_BACKLOG; i++)
    ws_runtime_spawn_with_callback (rt, counted_poll, NULL, NULL, on_backlog_done, NULL);
  while (atomic_load (&backlog_polled) < N_BACKLOG)
    g_usleep (1000);
  /* The last completions are pushed just after their polls return. */
  g_usleep (50000);

  start = bench_now_ns ();
  cpu_start = thread_cpu_ns ();
  while (delivered < N_BACKLOG)
    {
      guint64 t = bench_now_ns ();
      guint64 c = thread_cpu_ns ();

      g_main_context_iteration (NULL, TRUE);
      longest_cpu = MAX (longest_cpu, thread_cpu_ns () - c);
      t = bench_now_ns () - t;
      longest = MAX (longest, t);
      iterations++;
    }
  b.ns_per_completion = (double) (bench_now_ns () - start) / N_BACKLOG;
  b.cpu_ns_per_completion = (double) (thread_cpu_ns () - cpu_start) / N_BACKLOG;
  b.longest_ms = longest / 1e6;
  b.longest_cpu_ms = longest_cpu / 1e6;
  b.iterations = iterations;
  return b;
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

  {
    double longest[ROUNDS], longest_cpu[ROUNDS], iterations[ROUNDS], per[ROUNDS], cpu[ROUNDS];

    run_backlog (rt);
    for (guint r = 0; r < ROUNDS; r++)
      {
        Backlog b = run_backlog (rt);

        longest[r] = b.longest_ms;
        longest_cpu[r] = b.longest_cpu_ms;
        iterations[r] = b.iterations;
        per[r] = b.ns_per_completion;
        cpu[r] = b.cpu_ns_per_completion;
      }
    printf ("bench=completion-backlog completions=%d rounds=%d (all queued, then delivered)\n",
            N_BACKLOG, ROUNDS);
    printf ("longest_iteration_ms=%.3f longest_iteration_cpu_ms=%.3f iterations=%.0f\n",
            bench_median (longest, ROUNDS), bench_median (longest_cpu, ROUNDS),
            bench_median (iterations, ROUNDS));
    printf ("median_ns_per_completion=%.0f median_cpu_ns_per_completion=%.0f\n",
            bench_median (per, ROUNDS), bench_median (cpu, ROUNDS));
  }

  ws_runtime_shutdown (rt, -1);
  g_main_loop_unref (loop);
  return 0;
}
