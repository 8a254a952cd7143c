/* bench-blocking.c: what the ways out of a worker cost
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Medians over rounds, in one process, side by side:
 *  - spawn + wait of an empty task on the workers (the anchor);
 *  - spawn_blocking + wait of an empty job (warm blocking thread);
 *  - ws_block_in_place of an empty function inside a task (core hand-off
 *    to a new thread), measured from inside the task;
 *  - a plain g_thread_new + join (what a hand-off costs at least).
 */

#include "config.h"

#include <stdio.h>

#include "wsrt.h"

#define ROUNDS 9
#define N      2000

static int
cmp_double (const void *a,
            const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

static double
median (double *v,
        guint   n)
{
  qsort (v, n, sizeof *v, cmp_double);
  return v[n / 2];
}

static WsPoll
empty_task (WsContext *cx,
            gpointer   data)
{
  return WS_POLL_READY;
}

static void
nothing (gpointer data)
{
}

static WsPoll
in_place_task (WsContext *cx,
               gpointer   data)
{
  gint64 start = g_get_monotonic_time ();

  ws_block_in_place (nothing, NULL, NULL);
  *(gint64 *) data = g_get_monotonic_time () - start;
  return WS_POLL_READY;
}

static gpointer
thread_noop (gpointer data)
{
  return NULL;
}

int
main (int   argc,
      char *argv[])
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  double spawn[ROUNDS], blocking[ROUNDS], in_place[ROUNDS], thread[ROUNDS];

  for (guint r = 0; r < ROUNDS; r++)
    {
      gint64 start;
      gint64 total = 0;

      start = g_get_monotonic_time ();
      for (guint i = 0; i < N; i++)
        {
          g_autoptr(WsTask) t = ws_runtime_spawn (rt, empty_task, NULL, NULL);
          ws_task_wait (t, NULL, NULL);
        }
      spawn[r] = (g_get_monotonic_time () - start) * 1000.0 / N;

      start = g_get_monotonic_time ();
      for (guint i = 0; i < N; i++)
        {
          g_autoptr(WsTask) t = ws_runtime_spawn_blocking (rt, empty_task, NULL, NULL);
          ws_task_wait (t, NULL, NULL);
        }
      blocking[r] = (g_get_monotonic_time () - start) * 1000.0 / N;

      for (guint i = 0; i < N / 10; i++)
        {
          gint64 took = 0;
          g_autoptr(WsTask) t = ws_runtime_spawn (rt, in_place_task, &took, NULL);

          ws_task_wait (t, NULL, NULL);
          total += took;
        }
      in_place[r] = total * 1000.0 / (N / 10);

      start = g_get_monotonic_time ();
      for (guint i = 0; i < N / 10; i++)
        g_thread_join (g_thread_new ("bench", thread_noop, NULL));
      thread[r] = (g_get_monotonic_time () - start) * 1000.0 / (N / 10);
    }

  printf ("bench=blocking rounds=%d\n", ROUNDS);
  printf ("spawn+wait (workers)        median_ns=%.0f\n", median (spawn, ROUNDS));
  printf ("spawn_blocking+wait (warm)  median_ns=%.0f\n", median (blocking, ROUNDS));
  printf ("ws_block_in_place (empty)   median_ns=%.0f\n", median (in_place, ROUNDS));
  printf ("g_thread_new+join (anchor)  median_ns=%.0f\n", median (thread, ROUNDS));

  ws_runtime_shutdown (rt, -1);
  return 0;
}
