/* wsrt-demo.c: a mixed workload that makes work stealing visible
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * wsrt-demo runs four workloads at once on one WsRuntime: a parallel
 * fork-join, chains of detached tasks, tasks that yield, and tasks spawned
 * from the main thread (the tasks are in wsrt-demo-workloads.c). Then it
 * prints what each worker did (ws_metrics_to_string()): its polls and busy
 * time, the tasks that moved between workers by stealing and by overflow,
 * and the parks of workers that ran out of work.
 *
 * What this file shows:
 *  - creating a runtime with g_initable_new(), so that a failure to start
 *    its threads is a GError, and ws_runtime_shutdown() at the end;
 *  - a main thread that never blocks: it runs a GMainLoop, learns that a
 *    workload has ended through ws_task_wait_async(), and redraws a
 *    progress line from an atomic counter in a timeout source;
 *  - reading the metrics (WsMetrics) once the workers are idle.
 *
 * At the end the same workloads run on a GThreadPool with as many threads
 * as the runtime has workers (tests/bench/demo-gthreadpool.c, which the
 * bench-demo benchmark times too) and one line compares the wall times;
 * --no-gthreadpool skips that. Every result is checked against a serial
 * computation; the exit status is 1 if one is wrong.
 *
 *   wsrt-demo [--workers=N] [--tasks=N] [--workload=all|forkjoin|chains|yields|remote]
 *             [--no-gthreadpool]
 */

#include <locale.h>
#include <string.h>
#include <unistd.h>

#include <wsrt.h>

#include "wsrt-demo-workloads.h"
#include "demo-gthreadpool.h"

#define DEFAULT_TASKS         500000
#define MAX_TASKS             50000000
#define PROGRESS_INTERVAL_MS  100
#define PLAIN_PROGRESS_EVERY  5     /* ticks between lines off a terminal */
#define SETTLE_INTERVAL_MS    2
#define SETTLE_TIMEOUT_MS     250

typedef struct
{
  gint      workers;
  gint      tasks;
  gchar    *workload;
  gboolean  no_gthreadpool;
} Options;

/* The upper bound of WsRuntime:n-workers, from its GParamSpec. */
static guint
max_workers (void)
{
  g_autoptr(GTypeClass) klass = g_type_class_ref (WS_TYPE_RUNTIME);
  GParamSpec *pspec = g_object_class_find_property (G_OBJECT_CLASS (klass), "n-workers");

  return G_PARAM_SPEC_UINT (pspec)->maximum;
}

static gboolean
parse_options (int       *argc,
               char    ***argv,
               Options   *options,
               GError   **error)
{
  const GOptionEntry entries[] = {
    { "workers", 'w', 0, G_OPTION_ARG_INT, &options->workers,
      "Worker threads (default: 0, one per CPU)", "N" },
    { "tasks", 't', 0, G_OPTION_ARG_INT, &options->tasks,
      "Scale: about N tasks per workload (default: 500000)", "N" },
    { "workload", 'l', 0, G_OPTION_ARG_STRING, &options->workload,
      "all, forkjoin, chains, yields or remote (default: all)", "NAME" },
    { "no-gthreadpool", 0, 0, G_OPTION_ARG_NONE, &options->no_gthreadpool,
      "Do not run the same workload on a GThreadPool afterwards", NULL },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr(GOptionContext) context =
    g_option_context_new ("- run a mixed workload on a wsrt runtime");

  g_option_context_set_summary (context,
                                "Runs fork-join, chained, yielding and remotely spawned tasks "
                                "at once,\nthen shows what each worker did: polls, steals, parks.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, argc, argv, error))
    return FALSE;

  if (options->workers < 0 || (guint) options->workers > max_workers ())
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "--workers must be 0 (one per CPU) to %u", max_workers ());
      return FALSE;
    }
  if (options->tasks < 1 || options->tasks > MAX_TASKS)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "--tasks must be 1 to %d", MAX_TASKS);
      return FALSE;
    }
  return TRUE;
}

static void
print_plan (DemoWorkloads *w,
            WsRuntime     *runtime)
{
  g_print ("wsrt-demo: %u workers, %u tasks to run\n",
           ws_runtime_get_n_workers (runtime), w->n_tasks);
  if (w->jobs[DEMO_FORKJOIN].enabled)
    g_print ("  forkjoin  fib(%u), serial below fib(%u): %u tasks\n",
             w->fib_n, DEMO_FIB_CUTOFF, w->fib_tasks);
  if (w->jobs[DEMO_CHAINS].enabled)
    g_print ("  chains    %u chains of %u detached links\n", w->n_chains, w->chain_depth);
  if (w->jobs[DEMO_YIELDS].enabled)
    g_print ("  yields    %u tasks that yield %u times each\n",
             w->n_yielders, DEMO_YIELDS_PER_TASK);
  if (w->jobs[DEMO_REMOTE].enabled)
    g_print ("  remote    %u tasks spawned from the main thread, %u per tick\n",
             w->n_remote, DEMO_REMOTE_BATCH);
  g_print ("\n");
}

/* Progress, redrawn from a timeout source while the main loop runs */

typedef struct
{
  DemoWorkloads *workloads;
  const gchar   *phase;      /* "wsrt" or "GThreadPool" */
  gboolean       is_tty;     /* a bar redrawn in place, or plain lines */
  guint          ticks;
  guint          source_id;
} Progress;

static void
print_progress (Progress *progress,
                gboolean  final)
{
  DemoWorkloads *w = progress->workloads;
  guint finished = g_atomic_int_get (&w->finished_tasks);
  gdouble fraction = CLAMP ((gdouble) finished / w->n_tasks, 0.0, 1.0);
  gdouble elapsed = (g_get_monotonic_time () - w->start_time) / (gdouble) G_USEC_PER_SEC;

  if (progress->is_tty)
    {
      char bar[31];
      guint filled = (guint) (fraction * 30 + 0.5);

      memset (bar, '#', filled);
      memset (bar + filled, '.', 30 - filled);
      bar[30] = '\0';
      /* \r and "erase line": the bar is redrawn where it was. */
      g_print ("\r\033[K%-11s %6.1f s  [%s] %9u / %u tasks%s", progress->phase,
               elapsed, bar, finished, w->n_tasks, final ? "\n" : "");
    }
  else
    {
      g_print ("%-11s %6.1f s  %9u / %u tasks (%3.0f%%)\n", progress->phase,
               elapsed, finished, w->n_tasks, fraction * 100);
    }
}

static gboolean
on_progress_tick (gpointer user_data)
{
  Progress *progress = user_data;

  if (progress->is_tty || ++progress->ticks % PLAIN_PROGRESS_EVERY == 0)
    print_progress (progress, FALSE);
  return G_SOURCE_CONTINUE;
}

/* Call before running the main loop for a run of @w. */
static void
progress_start (Progress      *progress,
                DemoWorkloads *w,
                const gchar   *phase)
{
  progress->workloads = w;
  progress->phase = phase;
  progress->is_tty = isatty (STDOUT_FILENO);
  progress->ticks = 0;
  progress->source_id = g_timeout_add (PROGRESS_INTERVAL_MS, on_progress_tick, progress);
}

static void
progress_stop (Progress *progress)
{
  g_source_remove (progress->source_id);
  print_progress (progress, TRUE);
}

/* The metrics, once the workers are idle */

typedef struct
{
  WsRuntime *runtime;
  GMainLoop *loop;
  gint64     deadline;
} Settle;

/* Whether every worker is asleep. A worker adds its busy time to the
 * metrics when it parks, so a snapshot taken while one still runs shows
 * less than it did. */
static gboolean
all_workers_parked (WsRuntime *runtime)
{
  g_autoptr(WsMetrics) metrics = ws_runtime_get_metrics (runtime);

  for (guint i = 0; i < ws_metrics_get_n_workers (metrics); i++)
    if (ws_metrics_get_worker_park_count (metrics, i) <=
        ws_metrics_get_worker_unpark_count (metrics, i))
      return FALSE;
  return TRUE;
}

static gboolean
on_settle_tick (gpointer user_data)
{
  Settle *settle = user_data;

  if (!all_workers_parked (settle->runtime) && g_get_monotonic_time () < settle->deadline)
    return G_SOURCE_CONTINUE;
  g_main_loop_quit (settle->loop);
  return G_SOURCE_REMOVE;
}

/* Runs the main loop until every worker has parked (a few ms) or 250 ms
 * have gone by, then takes the snapshot. */
static WsMetrics *
get_metrics_when_idle (WsRuntime *runtime)
{
  Settle settle = { runtime, g_main_loop_new (NULL, FALSE),
                    g_get_monotonic_time () + SETTLE_TIMEOUT_MS * 1000 };

  g_timeout_add (SETTLE_INTERVAL_MS, on_settle_tick, &settle);
  g_main_loop_run (settle.loop);
  g_main_loop_unref (settle.loop);
  return ws_runtime_get_metrics (runtime);
}

/* The table, then how the work spread over the workers. */
static void
print_metrics (WsRuntime *runtime)
{
  g_autoptr(WsMetrics) metrics = get_metrics_when_idle (runtime);
  g_autofree gchar *table = ws_metrics_to_string (metrics);
  g_autoptr(GString) shares = g_string_new (NULL);
  guint n_workers = ws_metrics_get_n_workers (metrics);
  guint64 polls = 0, steals = 0, steal_ops = 0, overflows = 0;

  for (guint i = 0; i < n_workers; i++)
    {
      polls += ws_metrics_get_worker_poll_count (metrics, i);
      steals += ws_metrics_get_worker_steal_count (metrics, i);
      steal_ops += ws_metrics_get_worker_steal_operations (metrics, i);
      overflows += ws_metrics_get_worker_overflow_count (metrics, i);
    }
  for (guint i = 0; i < n_workers && polls > 0; i++)
    g_string_append_printf (shares, "%s%u: %.0f%%", i > 0 ? ", " : "", i,
                            100.0 * ws_metrics_get_worker_poll_count (metrics, i) / polls);

  g_print ("\n%s", table);
  g_print ("moved between workers: %" G_GUINT64_FORMAT " tasks stolen (steal "
           "operations: %" G_GUINT64_FORMAT "), %" G_GUINT64_FORMAT
           " queue overflows into the injection queue\n", steals, steal_ops, overflows);
  g_print ("share of polls per worker: %s\n", shares->str);
}

/* The runs */

static gdouble
run_on_wsrt (DemoWorkloads *w,
             WsRuntime     *runtime)
{
  Progress progress;
  gdouble seconds;

  demo_workloads_start (w, runtime);
  progress_start (&progress, w, "wsrt");
  seconds = demo_workloads_wait (w);
  progress_stop (&progress);
  return seconds;
}

/* The same workloads on a GThreadPool of @n_threads, checked the same
 * way, and the ratio of the wall times. */
static gboolean
compare_with_gthreadpool (DemoWorkloads *w,
                          guint          n_threads,
                          gdouble        wsrt_time)
{
  g_autoptr(GError) error = NULL;
  Progress progress;
  gdouble pool_time;
  gboolean ok;

  g_print ("\nthe same workloads on a GThreadPool of %u threads:\n", n_threads);
  progress_start (&progress, w, "GThreadPool");
  pool_time = demo_gthreadpool_run (w, n_threads, &error);
  progress_stop (&progress);
  if (pool_time < 0)
    {
      g_printerr ("wsrt-demo: cannot start a GThreadPool: %s\n", error->message);
      return FALSE;
    }

  ok = demo_workloads_check (w, TRUE);
  g_print ("wsrt %.3f s, GThreadPool %.3f s (%u threads): wsrt took %.2f× "
           "the GThreadPool time%s\n", wsrt_time, pool_time, n_threads,
           wsrt_time / pool_time, ok ? "" : " (GThreadPool results WRONG)");
  return ok;
}

int
main (int   argc,
      char *argv[])
{
  Options options = { .tasks = DEFAULT_TASKS };
  g_autoptr(GError) error = NULL;
  g_autoptr(WsRuntime) runtime = NULL;
  DemoWorkloads workloads;
  gdouble wsrt_time;
  gboolean ok;

  setlocale (LC_ALL, "");
  if (!parse_options (&argc, &argv, &options, &error) ||
      !demo_workloads_init (&workloads, options.workload, options.tasks, &error))
    {
      g_printerr ("wsrt-demo: %s\n", error->message);
      g_free (options.workload);
      return 2;
    }
  g_clear_pointer (&options.workload, g_free);

  /* As a GInitable, the runtime reports a failure to start its threads.
   * n-workers 0 is one worker per CPU. */
  runtime = g_initable_new (WS_TYPE_RUNTIME, NULL, &error,
                            "n-workers", (guint) options.workers,
                            "thread-name-prefix", "demo",
                            NULL);
  if (runtime == NULL)
    {
      g_printerr ("wsrt-demo: cannot start the runtime: %s\n", error->message);
      demo_workloads_clear (&workloads);
      return 1;
    }

  print_plan (&workloads, runtime);
  wsrt_time = run_on_wsrt (&workloads, runtime);
  ok = demo_workloads_check (&workloads, TRUE);
  print_metrics (runtime);
  g_print ("wall time: %.3f s\n", wsrt_time);

  if (!options.no_gthreadpool)
    ok &= compare_with_gthreadpool (&workloads, ws_runtime_get_n_workers (runtime), wsrt_time);

  /* -1: wait as long as it takes for every task and thread to end. */
  if (!ws_runtime_shutdown (runtime, -1))
    {
      g_printerr ("wsrt-demo: the runtime did not shut down cleanly\n");
      ok = FALSE;
    }
  demo_workloads_clear (&workloads);

  if (!ok)
    {
      g_printerr ("wsrt-demo: FAILED\n");
      return 1;
    }
  g_print ("all results correct\n");
  return 0;
}
