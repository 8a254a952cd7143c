/* bench-blocking-gap.c: does a burst of blocking spawns stall the main loop?
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One callback on the main loop spawns 10,000 blocking jobs (50 us of CPU
 * each) while a 1 ms timer runs on the same loop; the figure that matters
 * is the longest gap between two timer callbacks (the user report: 5,855
 * spawns from the GTK main thread froze it for 571 ms, because each spawn
 * that found no idle thread created one there). Printed per round:
 *  - the longest main-loop gap, and how long the spawning callback took;
 *  - the total time, from the first spawn to the end of the last job;
 *  - the peak number of blocking threads alive at once and the number
 *    started (wsrt: counted by the thread hooks, less the workers;
 *    GThreadPool: g_thread_pool_get_num_threads () sampled every tick).
 * Rounds alternate wsrt (a fresh runtime each round, 2 workers, the
 * default max-blocking-threads of 512) with the anchor: the same jobs
 * pushed with g_thread_pool_push () to a shared GThreadPool of at most
 * 512 threads. Medians are printed at the end.
 *
 *   bench-blocking-gap [ROUNDS]   (default 3)
 */

#include "config.h"

#include <stdatomic.h>
#include <stdio.h>

#include "wsrt.h"
#include "bench-util.h"

#define N_JOBS      10000
#define JOB_NS      50000
#define N_WORKERS   2
#define MAX_THREADS 512

typedef struct
{
  double gap_ms;
  double spawn_ms;
  double total_ms;
  double peak;
  double started;
} Round;

static GMainLoop *loop;
static guint64 last_tick;
static guint64 max_gap;
static guint64 spawn_start;
static guint64 spawn_ns;
static _Atomic guint n_done;
static _Atomic guint64 end_ns;

/* Runtime threads, from the hooks. */
static _Atomic gint live;
static _Atomic gint peak;
static _Atomic gint started;

/* GThreadPool's, sampled. */
static GThreadPool *gpool;
static guint gpool_peak;

static void
on_thread_start (gpointer data)
{
  gint now = atomic_fetch_add (&live, 1) + 1;
  gint p = atomic_load (&peak);

  atomic_fetch_add (&started, 1);
  while (now > p && !atomic_compare_exchange_weak (&peak, &p, now))
    ;
}

static void
on_thread_stop (gpointer data)
{
  atomic_fetch_sub (&live, 1);
}

static void
job_body (void)
{
  bench_spin_ns (JOB_NS);
  if (atomic_fetch_add (&n_done, 1) + 1 == N_JOBS)
    atomic_store (&end_ns, bench_now_ns ());
}

static WsPoll
blocking_job (WsContext *cx,
              gpointer   data)
{
  job_body ();
  return WS_POLL_READY;
}

static void
pool_job (gpointer data,
          gpointer user_data)
{
  job_body ();
}

static gboolean
on_tick (gpointer data)
{
  guint64 now = bench_now_ns ();

  max_gap = MAX (max_gap, now - last_tick);
  last_tick = now;
  if (gpool != NULL)
    gpool_peak = MAX (gpool_peak, g_thread_pool_get_num_threads (gpool));
  if (atomic_load (&n_done) == N_JOBS)
    g_main_loop_quit (loop);
  return G_SOURCE_CONTINUE;
}

static gboolean
spawn_all (gpointer data)
{
  WsRuntime *rt = data;

  spawn_start = bench_now_ns ();
  for (guint i = 0; i < N_JOBS; i++)
    {
      if (rt != NULL)
        g_object_unref (ws_runtime_spawn_blocking (rt, blocking_job, NULL, NULL));
      else
        g_thread_pool_push (gpool, GUINT_TO_POINTER (1), NULL);
    }
  spawn_ns = bench_now_ns () - spawn_start;
  if (gpool != NULL)
    gpool_peak = MAX (gpool_peak, g_thread_pool_get_num_threads (gpool));
  return G_SOURCE_REMOVE;
}

/* One round: @rt NULL runs the GThreadPool anchor. */
static Round
run_round (WsRuntime *rt)
{
  guint tick;
  Round r;

  loop = g_main_loop_new (NULL, FALSE);
  max_gap = 0;
  atomic_store (&n_done, 0);
  atomic_store (&end_ns, 0);
  last_tick = bench_now_ns ();
  tick = g_timeout_add (1, on_tick, NULL);
  /* A few ticks first, so the gap is measured from a running timer. */
  g_timeout_add (20, spawn_all, rt);
  g_main_loop_run (loop);
  g_source_remove (tick);
  g_main_loop_unref (loop);

  r.gap_ms = max_gap / 1e6;
  r.spawn_ms = spawn_ns / 1e6;
  r.total_ms = (atomic_load (&end_ns) - spawn_start) / 1e6;
  return r;
}

static Round
round_wsrt (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(WsRuntime) rt = g_object_new (WS_TYPE_RUNTIME, "n-workers", N_WORKERS, NULL);
  Round r;

  ws_runtime_set_on_thread_start (rt, on_thread_start, NULL, NULL);
  ws_runtime_set_on_thread_stop (rt, on_thread_stop, NULL, NULL);
  atomic_store (&live, 0);
  atomic_store (&peak, 0);
  atomic_store (&started, 0);
  if (!g_initable_init (G_INITABLE (rt), NULL, &error))
    g_error ("%s", error->message);

  r = run_round (rt);
  /* The hooks count the workers too. */
  r.peak = atomic_load (&peak) - N_WORKERS;
  r.started = atomic_load (&started) - N_WORKERS;
  ws_runtime_shutdown (rt, -1);
  return r;
}

static Round
round_gthreadpool (void)
{
  Round r;

  gpool = g_thread_pool_new (pool_job, NULL, MAX_THREADS, FALSE, NULL);
  gpool_peak = 0;
  r = run_round (NULL);
  r.peak = gpool_peak;
  r.started = -1;
  g_thread_pool_free (gpool, FALSE, TRUE);
  gpool = NULL;
  return r;
}

static void
print_round (const char *name,
             const Round *r)
{
  printf ("%-12s longest gap %8.1f ms   spawn callback %8.1f ms   total %8.1f ms   "
          "peak threads %4.0f",
          name, r->gap_ms, r->spawn_ms, r->total_ms, r->peak);
  if (r->started >= 0)
    printf ("   started %4.0f", r->started);
  printf ("\n");
  fflush (stdout);
}

static void
print_medians (const char *name,
               Round      *rounds,
               guint       n)
{
  g_autofree double *v = g_new (double, n);
  Round m;

  for (guint i = 0; i < n; i++)
    v[i] = rounds[i].gap_ms;
  m.gap_ms = bench_median (v, n);
  for (guint i = 0; i < n; i++)
    v[i] = rounds[i].spawn_ms;
  m.spawn_ms = bench_median (v, n);
  for (guint i = 0; i < n; i++)
    v[i] = rounds[i].total_ms;
  m.total_ms = bench_median (v, n);
  for (guint i = 0; i < n; i++)
    v[i] = rounds[i].peak;
  m.peak = bench_median (v, n);
  for (guint i = 0; i < n; i++)
    v[i] = rounds[i].started;
  m.started = bench_median (v, n);
  print_round (name, &m);
}

int
main (int   argc,
      char *argv[])
{
  guint n_rounds = argc > 1 ? (guint) g_ascii_strtoull (argv[1], NULL, 10) : 3;
  g_autofree Round *wsrt = NULL;
  g_autofree Round *anchor = NULL;

  n_rounds = MAX (n_rounds, 1);
  wsrt = g_new (Round, n_rounds);
  anchor = g_new (Round, n_rounds);
  printf ("%u blocking jobs of %u us spawned from one main-loop callback, "
          "1 ms timer on the same loop; %u rounds, alternating\n",
          N_JOBS, JOB_NS / 1000, n_rounds);
  for (guint i = 0; i < n_rounds; i++)
    {
      wsrt[i] = round_wsrt ();
      print_round ("wsrt", &wsrt[i]);
      anchor[i] = round_gthreadpool ();
      print_round ("GThreadPool", &anchor[i]);
    }
  printf ("medians:\n");
  print_medians ("wsrt", wsrt, n_rounds);
  print_medians ("GThreadPool", anchor, n_rounds);
  return 0;
}
