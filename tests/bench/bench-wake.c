/* bench-wake.c: wake latency of a parked pool
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * With every worker parked, the main thread (not a worker) spawns one
 * task; the latency is the time from just before the spawn to the start of
 * its first poll. Between samples the program sleeps 2 ms, so the workers
 * have searched, found nothing and parked again (checked with the parks
 * metric).
 *
 * The anchor, in the same program: g_thread_pool_push to an exclusive
 * GThreadPool whose threads are idle, until the pool function starts.
 *
 * Prints p50 and p99 over all samples, and the median of each round's p50.
 */

#include "config.h"

#include <stdio.h>

#include "wsrt.h"
#include "bench-util.h"

#define ROUNDS   5
#define SAMPLES  200
#define GAP_USEC 2000

static guint64 sent_at;
static gint64 latency = -1;
static GMutex mutex;
static GCond cond;

static void
record (void)
{
  guint64 now = bench_now_ns ();

  g_mutex_lock (&mutex);
  latency = (gint64) (now - sent_at);
  g_cond_signal (&cond);
  g_mutex_unlock (&mutex);
}

static double
wait_latency (void)
{
  double ns;

  g_mutex_lock (&mutex);
  while (latency < 0)
    g_cond_wait (&cond, &mutex);
  ns = (double) latency;
  latency = -1;
  g_mutex_unlock (&mutex);
  return ns;
}

static WsPoll
first_poll (WsContext *cx,
            gpointer   data)
{
  record ();
  return WS_POLL_READY;
}

static void
pool_func (gpointer data,
           gpointer user_data)
{
  record ();
}

/* TRUE if every worker is parked now: it parked once more than it was
 * woken. */
static gboolean
all_parked (WsRuntime *rt)
{
  g_autoptr(WsMetrics) m = ws_runtime_get_metrics (rt);

  for (guint i = 0; i < ws_metrics_get_n_workers (m); i++)
    if (ws_metrics_get_worker_park_count (m, i) <= ws_metrics_get_worker_unpark_count (m, i))
      return FALSE;
  return TRUE;
}

int
main (int   argc,
      char *argv[])
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  GThreadPool *pool = g_thread_pool_new (pool_func, NULL, 2, TRUE, NULL);
  double ws_all[ROUNDS * SAMPLES], gtp_all[ROUNDS * SAMPLES];
  double ws_p50[ROUNDS], gtp_p50[ROUNDS];
  guint not_parked = 0;

  /* Start the workers. */
  ws_runtime_spawn_detached (rt, first_poll, NULL, NULL);
  wait_latency ();

  for (guint r = 0; r < ROUNDS; r++)
    {
      double ws[SAMPLES], gtp[SAMPLES];

      for (guint i = 0; i < SAMPLES; i++)
        {
          g_usleep (GAP_USEC);
          if (!all_parked (rt))
            not_parked++;
          g_mutex_lock (&mutex);
          sent_at = bench_now_ns ();
          g_mutex_unlock (&mutex);
          ws_runtime_spawn_detached (rt, first_poll, NULL, NULL);
          ws[i] = ws_all[r * SAMPLES + i] = wait_latency ();

          g_usleep (GAP_USEC);
          g_mutex_lock (&mutex);
          sent_at = bench_now_ns ();
          g_mutex_unlock (&mutex);
          g_thread_pool_push (pool, GINT_TO_POINTER (1), NULL);
          gtp[i] = gtp_all[r * SAMPLES + i] = wait_latency ();
        }
      ws_p50[r] = bench_quantile (ws, SAMPLES, 0.5);
      gtp_p50[r] = bench_quantile (gtp, SAMPLES, 0.5);
    }
  printf ("bench=wake rounds=%d samples=%d gap_us=%d not_all_parked=%u "
          "(spawn from main -> first poll, workers parked)\n",
          ROUNDS, ROUNDS * SAMPLES, GAP_USEC, not_parked);
  printf ("wsrt spawn_detached          p50_ns=%.0f p99_ns=%.0f median_round_p50_ns=%.0f\n",
          bench_quantile (ws_all, ROUNDS * SAMPLES, 0.5),
          bench_quantile (ws_all, ROUNDS * SAMPLES, 0.99),
          bench_median (ws_p50, ROUNDS));
  printf ("GThreadPool push (anchor)    p50_ns=%.0f p99_ns=%.0f median_round_p50_ns=%.0f\n",
          bench_quantile (gtp_all, ROUNDS * SAMPLES, 0.5),
          bench_quantile (gtp_all, ROUNDS * SAMPLES, 0.99),
          bench_median (gtp_p50, ROUNDS));

  g_thread_pool_free (pool, FALSE, TRUE);
  ws_runtime_shutdown (rt, -1);
  return 0;
}
