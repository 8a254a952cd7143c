/* bench-blocking-gap.c: does a burst of blocking spawns stall the main loop?
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One callback on the main loop spawns N blocking jobs while a 1 ms timer
 * runs on the same loop, and each job's completion comes back to that
 * loop, as in a GTK app. The figure that matters is the longest gap
 * between two timer callbacks: how long the UI froze. Printed per round:
 *  - the longest main-loop gap, and how long the spawning callback took;
 *  - the total time, from the first spawn to the last completion;
 *  - the peak number of threads the round added to the process (sampled
 *    from /proc/self/status at every tick and after the spawns).
 * The contenders, each round in a fresh process (fork) so that no pool's
 * idle threads are counted against the next one, in turn:
 *  - wsrt: ws_runtime_spawn_blocking () on a runtime of 2 workers and the
 *    default max-blocking-threads, completions by ws_task_wait_async ();
 *  - GTask: g_task_run_in_thread (), completions by its callback;
 *  - GThreadPool: g_thread_pool_push () to a pool of at most 512 threads,
 *    no completion (the pool alone, as a floor).
 * Workloads:
 *  - spin: 50 us of CPU per job, spinning on the monotonic clock, so a
 *    job preempted in its spin counts the time it waited for a CPU as
 *    work done (a pool with more threads than CPUs gains by it);
 *  - cpu: 50 us of the job thread's own CPU time, which no preemption
 *    shortens;
 *  - hash: the per-file hasher: N files of 4 KiB (made once, in a
 *    temporary directory, before the rounds), each job reads one and
 *    returns its SHA-256 as a string, which the completion frees.
 *
 *   bench-blocking-gap [ROUNDS [N_JOBS [spin|cpu|hash [CONTENDER]]]]   (3, 10000, spin, all)
 *
 * CONTENDER (wsrt, GTask or GThreadPool) runs that one alone, for a
 * profiler.
 *
 * Medians over the rounds are printed at the end.
 */

#include "config.h"

#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include <gio/gio.h>
#include <glib/gstdio.h>

#include "wsrt.h"
#include "bench-util.h"

#define JOB_NS      50000
#define N_WORKERS   2
#define MAX_THREADS 512
#define FILE_SIZE   4096

typedef enum
{
  CONTENDER_WSRT,
  CONTENDER_GTASK,
  CONTENDER_GTHREADPOOL,
  N_CONTENDERS
} Contender;

static const char *contender_names[] = { "wsrt", "GTask", "GThreadPool" };

typedef struct
{
  double gap_ms;
  double spawn_ms;
  double total_ms;
  double peak;
} Round;

static guint n_jobs = 10000;
static gboolean hash_mode;
static gboolean cpu_mode;
static char **paths;

static GMainLoop *loop;
static guint64 last_tick;
static guint64 max_gap;
static guint64 spawn_start;
static guint64 spawn_ns;
static guint64 end_ns;
static guint n_completed;
static _Atomic guint n_done;      /* GThreadPool: no completion */
static gint base_threads;
static gint peak_threads;

static gint
count_threads (void)
{
  g_autofree gchar *status = NULL;
  const char *line;

  if (!g_file_get_contents ("/proc/self/status", &status, NULL, NULL))
    return 0;
  line = strstr (status, "\nThreads:");
  return line != NULL ? atoi (line + strlen ("\nThreads:")) : 0;
}

static void
sample_threads (void)
{
  peak_threads = MAX (peak_threads, count_threads ());
}

/* 50 us of this thread's CPU time. A spin on the wall clock would count
 * the time the job spends preempted, waiting for a CPU, as work done, and
 * so reward a pool that runs more threads than there are CPUs: a job
 * preempted mid-spin ends as soon as it runs again. */
static void
spin_cpu_ns (guint64 ns)
{
  struct timespec ts;
  guint64 start, now;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  start = (guint64) ts.tv_sec * 1000000000u + (guint64) ts.tv_nsec;
  do
    {
      clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
      now = (guint64) ts.tv_sec * 1000000000u + (guint64) ts.tv_nsec;
    }
  while (now - start < ns);
}

/* The job: 50 us of CPU, or one file hashed. */
static gchar *
job_body (guint index)
{
  g_autofree gchar *contents = NULL;
  gsize length;

  if (!hash_mode)
    {
      if (cpu_mode)
        spin_cpu_ns (JOB_NS);
      else
        bench_spin_ns (JOB_NS);
      return NULL;
    }
  if (!g_file_get_contents (paths[index], &contents, &length, NULL))
    g_error ("could not read %s", paths[index]);
  return g_compute_checksum_for_data (G_CHECKSUM_SHA256, (const guchar *) contents, length);
}

static void
completed (gchar *result)
{
  g_free (result);
  if (++n_completed == n_jobs)
    {
      end_ns = bench_now_ns ();
      g_main_loop_quit (loop);
    }
}

static WsPoll
wsrt_job (WsContext *cx,
          gpointer   data)
{
  ws_context_return_pointer (cx, job_body (GPOINTER_TO_UINT (data)), g_free);
  return WS_POLL_READY;
}

static void
wsrt_done (GObject      *source,
           GAsyncResult *result,
           gpointer      data)
{
  WsTask *task = WS_TASK (source);

  if (!ws_task_wait_finish (task, result, NULL))
    g_error ("a job failed");
  completed (ws_task_propagate_pointer (task, NULL));
}

static void
gtask_job (GTask        *task,
           gpointer      source,
           gpointer      data,
           GCancellable *cancellable)
{
  g_task_return_pointer (task, job_body (GPOINTER_TO_UINT (data)), g_free);
}

static void
gtask_done (GObject      *source,
            GAsyncResult *result,
            gpointer      data)
{
  completed (g_task_propagate_pointer (G_TASK (result), NULL));
}

static void
pool_job (gpointer data,
          gpointer user_data)
{
  g_free (job_body (GPOINTER_TO_UINT (data) - 1));
  if (atomic_fetch_add (&n_done, 1) + 1 == n_jobs)
    end_ns = bench_now_ns ();
}

static GThreadPool *gpool;
static WsRuntime *rt;

static gboolean
on_tick (gpointer data)
{
  guint64 now = bench_now_ns ();

  max_gap = MAX (max_gap, now - last_tick);
  last_tick = now;
  sample_threads ();
  if (gpool != NULL && atomic_load (&n_done) == n_jobs)
    g_main_loop_quit (loop);
  return G_SOURCE_CONTINUE;
}

static gboolean
spawn_all (gpointer data)
{
  Contender who = GPOINTER_TO_UINT (data);

  spawn_start = bench_now_ns ();
  for (guint i = 0; i < n_jobs; i++)
    {
      switch (who)
        {
        case CONTENDER_WSRT:
          {
            g_autoptr(WsTask) task = ws_runtime_spawn_blocking (rt, wsrt_job,
                                                                GUINT_TO_POINTER (i), NULL);

            ws_task_wait_async (task, NULL, wsrt_done, NULL);
          }
          break;
        case CONTENDER_GTASK:
          {
            g_autoptr(GTask) task = g_task_new (NULL, NULL, gtask_done, NULL);

            g_task_set_task_data (task, GUINT_TO_POINTER (i), NULL);
            g_task_run_in_thread (task, gtask_job);
          }
          break;
        case CONTENDER_GTHREADPOOL:
        case N_CONTENDERS:
          g_thread_pool_push (gpool, GUINT_TO_POINTER (i + 1), NULL);
          break;
        }
    }
  spawn_ns = bench_now_ns () - spawn_start;
  sample_threads ();
  return G_SOURCE_REMOVE;
}

/* One round, in a child process. */
static Round
run_round (Contender who)
{
  guint tick;
  Round r;

  base_threads = count_threads ();
  peak_threads = base_threads;
  if (who == CONTENDER_WSRT)
    rt = ws_runtime_new (N_WORKERS);
  else if (who == CONTENDER_GTHREADPOOL)
    gpool = g_thread_pool_new (pool_job, NULL, MAX_THREADS, FALSE, NULL);

  loop = g_main_loop_new (NULL, FALSE);
  last_tick = bench_now_ns ();
  tick = g_timeout_add (1, on_tick, NULL);
  /* A few ticks first, so the gap is measured from a running timer. */
  g_timeout_add (20, spawn_all, GUINT_TO_POINTER (who));
  g_main_loop_run (loop);
  g_source_remove (tick);
  g_main_loop_unref (loop);

  r.gap_ms = max_gap / 1e6;
  r.spawn_ms = spawn_ns / 1e6;
  r.total_ms = (end_ns - spawn_start) / 1e6;
  r.peak = peak_threads - base_threads;
  return r;
}

static void
round_into (gint     who,
            gpointer out)
{
  *(Round *) out = run_round ((Contender) who);
}

static Round
run_round_in_child (Contender who)
{
  Round r;

  if (!bench_run_in_child (round_into, who, &r, sizeof r))
    g_error ("the %s round failed", contender_names[who]);
  return r;
}

static void
print_round (const char  *name,
             const Round *r)
{
  printf ("%-12s longest gap %8.1f ms   spawn callback %8.1f ms   total %8.1f ms   "
          "peak threads %4.0f\n",
          name, r->gap_ms, r->spawn_ms, r->total_ms, r->peak);
  fflush (stdout);
}

static void
print_medians (const char *name,
               Round      *rounds,
               guint       n)
{
  g_autofree double *v = g_new (double, n);
  Round m;

#define MEDIAN_OF(field) \
  G_STMT_START { \
    for (guint i = 0; i < n; i++) \
      v[i] = rounds[i].field; \
    m.field = bench_median (v, n); \
  } G_STMT_END
  MEDIAN_OF (gap_ms);
  MEDIAN_OF (spawn_ms);
  MEDIAN_OF (total_ms);
  MEDIAN_OF (peak);
#undef MEDIAN_OF
  print_round (name, &m);
}

/* The hasher's files, in a temporary directory removed at the end. */
static gchar *
make_files (void)
{
  g_autoptr(GError) error = NULL;
  gchar *dir = g_dir_make_tmp ("wsrt-bench-XXXXXX", &error);
  g_autoptr(GRand) rand = g_rand_new_with_seed (42);
  guint32 block[FILE_SIZE / 4];

  if (dir == NULL)
    g_error ("%s", error->message);
  paths = g_new0 (char *, n_jobs + 1);
  for (guint i = 0; i < n_jobs; i++)
    {
      for (guint j = 0; j < G_N_ELEMENTS (block); j++)
        block[j] = g_rand_int (rand);
      paths[i] = g_strdup_printf ("%s/f%05u", dir, i);
      if (!g_file_set_contents (paths[i], (const char *) block, sizeof block, &error))
        g_error ("%s", error->message);
    }
  return dir;
}

static void
remove_files (gchar *dir)
{
  for (guint i = 0; i < n_jobs; i++)
    g_unlink (paths[i]);
  g_rmdir (dir);
  g_strfreev (paths);
  g_free (dir);
}

int
main (int   argc,
      char *argv[])
{
  guint n_rounds = argc > 1 ? (guint) g_ascii_strtoull (argv[1], NULL, 10) : 3;
  Round *rounds[N_CONTENDERS];
  gchar *dir = NULL;
  const char *only;

  if (argc > 2)
    n_jobs = MAX ((guint) g_ascii_strtoull (argv[2], NULL, 10), 1);
  hash_mode = argc > 3 && g_str_equal (argv[3], "hash");
  cpu_mode = argc > 3 && g_str_equal (argv[3], "cpu");
  only = argc > 4 ? argv[4] : NULL;
  n_rounds = MAX (n_rounds, 1);
  if (hash_mode)
    dir = make_files ();

  printf ("%u blocking jobs (%s) spawned from one main-loop callback, completions on "
          "that loop, a 1 ms timer on it; %u rounds, each contender in turn, each "
          "round in a fresh process\n",
          n_jobs,
          hash_mode ? "hash a 4 KiB file"
          : cpu_mode ? "50 us of the thread's CPU time" : "50 us of CPU, on the wall clock",
          n_rounds);
  for (guint c = 0; c < N_CONTENDERS; c++)
    rounds[c] = g_new (Round, n_rounds);
  for (guint i = 0; i < n_rounds; i++)
    for (guint c = 0; c < N_CONTENDERS; c++)
      {
        if (only != NULL && g_ascii_strcasecmp (only, contender_names[c]) != 0)
          {
            rounds[c][i] = (Round) { 0, };
            continue;
          }
        rounds[c][i] = run_round_in_child (c);
        print_round (contender_names[c], &rounds[c][i]);
      }
  printf ("medians:\n");
  for (guint c = 0; c < N_CONTENDERS; c++)
    {
      if (only != NULL && g_ascii_strcasecmp (only, contender_names[c]) != 0)
        {
          g_free (rounds[c]);
          continue;
        }
      print_medians (contender_names[c], rounds[c], n_rounds);
      g_free (rounds[c]);
    }

  if (dir != NULL)
    remove_files (dir);
  return 0;
}
