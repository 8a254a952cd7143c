/* bench-timers.c: the cost of many concurrent sleeps
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   usage: bench-timers [--rounds R] [--force-anchor] [--anchor-cap N]
 *                       [--async-cap N] [--max-secs S] [N ...]
 *   N: concurrent sleeps, default 10000 100000 1000000;
 *   rounds: default 3 below 1,000,000 and 1 from there (env
 *   BENCH_TIMERS_ROUNDS); max-secs: a round still running after S seconds
 *   is reported as dnf=1 and the later rounds of that measurement at that
 *   N are skipped (default 60, so that the default run fits meson's
 *   300 s even where one 1M round would not; env BENCH_TIMERS_MAX_SECS,
 *   0 = no limit).
 *
 * Measures WsSleep through its public API only, whatever implements it.
 * For each N, with a runtime of 2 workers (ws_runtime_new (2)):
 *
 * 1. Cost per sleep. The main thread spawns N detached tasks; each creates
 *    a WsSleep on its first poll with a duration drawn uniformly from
 *    20-60 ms (a fixed-seed LCG: the same durations in every round and for
 *    the anchor), and completes when ws_sleep_poll() returns ready. An
 *    atomic count of the tasks left; the last one reads the clock and
 *    signals the main thread (GMutex/GCond). Cost per sleep = (wall time
 *    from just before the first spawn to the last completion - the
 *    longest duration) / N: spawning, polling, arming, firing and waking,
 *    per sleep. Lateness = the monotonic time at which the task saw the
 *    sleep ready - its deadline (ws_sleep_get_deadline()), recorded per
 *    task in a preallocated array: p50, p99 and max in microseconds, and
 *    the count of sleeps that ended early (must be 0).
 *
 * 2. Heap per pending sleep beyond the task. N tasks that each arm a
 *    WsSleep with a 60 s deadline and stay pending on it, against N tasks
 *    that return WS_POLL_PENDING on their first poll without keeping their
 *    waker (as bench-memory.c): the difference of heap in use
 *    (mallinfo2 (): uordblks + hblkhd, all arenas) once all N have been
 *    polled, divided by N. Both runs warm up the same way first (one task
 *    pending on an armed 60 s sleep), so the runtime's and the timers'
 *    fixed structures are not counted; the array that holds the sleep
 *    pointers is allocated before the first reading in both. The RSS
 *    difference (/proc/self/statm) is printed next to it.
 *
 * 2b. The tasks alone ("wsrt-due"): the same N tasks, each with a sleep
 *    that is due at its first poll (duration 0), so no timer is armed:
 *    spawning, polling and completing N tasks. The difference to 1. is
 *    what the timers and keeping N tasks pending add.
 *
 * 3. The anchor, in the same program: N GLib timeouts
 *    (g_timeout_source_new () with the same durations, rounded up to whole
 *    ms) attached to a private GMainContext iterated on the main thread;
 *    cost per timeout computed the same way, lateness against each
 *    source's ready time. GLib walks every source on each iteration, so
 *    the anchor is skipped above --anchor-cap (100,000) unless
 *    --force-anchor is given.
 *
 * 4. The async forms, as Vala and GJS code uses them, up to --async-cap
 *    (default 1,000,000: all three N; a round of either cost row takes
 *    under 10 s at 1M, and a slower one ends dnf at --max-secs like the
 *    others; a lower cap skips these rows, and says so):
 *
 *    a. "wsrt-async-main": the main thread starts N ws_sleep_for_async ()
 *       with the same durations, no cancellable, and iterates the global
 *       default context until all N callbacks ran there (no runtime).
 *    b. "wsrt-promise": N tasks spawned with ws_runtime_spawn_promise ()
 *       (the WsTask dropped at once: detached); each start function takes
 *       its own ws_promise_ref () and starts a ws_sleep_for_async () with
 *       the promise's cancellable; the callback, on the worker's context,
 *       completes the promise with ws_promise_return_value () and counts
 *       as in 1.
 *    Cost per sleep and lateness as in 1; the deadline is the clock read
 *    just before the call plus the duration (the call reads it again), so
 *    the lateness is at most the call's own duration too high.
 *    c. "wsrt-async-main-heap": heap growth per pending 60 s
 *       ws_sleep_for_async () on the main thread, whole (no task to
 *       subtract), after one such wait as warm-up.
 *    d. "wsrt-promise-heap": as 2, N promise tasks each pending on a 60 s
 *       ws_sleep_for_async () with its promise's cancellable, against N
 *       promise tasks that keep their promise and start nothing.
 *
 * Every measurement runs in its own forked child (the parent never starts
 * a thread), so that no round inherits another's heap. Rounds interleave
 * the measurements. Progress goes to stderr every 5 s. One key=value line
 * per measurement, a summary per N with the medians, and a last line with
 * the cost at the largest N over the cost at the smallest. Targets: at
 * most 1.5 for that ratio, at most 500 ns per sleep at 1,000,000 and at
 * most 64 bytes per pending sleep (for the polled sleeps of 1 and 2; the
 * async rows have no target yet).
 */

#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
# include <malloc.h>
# define HAVE_MALLINFO2 1
#endif

#include "wsrt.h"
#include "bench-util.h"

#define N_WORKERS        2
#define MIN_SLEEP_US     20000
#define MAX_SLEEP_US     60000
#define FAR_SLEEP_US     (60 * G_USEC_PER_SEC)
#define LCG_SEED         0x2545f4914f6cdd1dULL
#define PROGRESS_SECS    5
#define DEFAULT_ANCHOR_CAP 100000
#define DEFAULT_ASYNC_CAP 1000000
#define DEFAULT_MAX_SECS 60    /* three such rounds at 1M fit meson's 300 s */

typedef enum
{
  MEASURE_WSRT,
  MEASURE_WSRT_DUE,
  MEASURE_GLIB,
  MEASURE_HEAP_SLEEP,
  MEASURE_HEAP_PLAIN,
  MEASURE_ASYNC_MAIN,
  MEASURE_PROMISE,
  MEASURE_HEAP_ASYNC_MAIN,
  MEASURE_HEAP_PROMISE_WAIT,
  MEASURE_HEAP_PROMISE_PLAIN,
  N_MEASURES
} Measure;

static const char *const measure_names[] = {
  "wsrt", "wsrt-due", "glib-timeout", "wsrt-heap-sleep", "wsrt-heap-plain",
  "wsrt-async-main", "wsrt-promise", "wsrt-async-main-heap-wait",
  "wsrt-promise-heap-wait", "wsrt-promise-heap-plain",
};

/* What a child sends back through its pipe. */
typedef struct
{
  gboolean ok;               /* FALSE: did not finish (or crashed) */
  guint    done;             /* tasks finished (or polled) */
  double   elapsed_s;
  double   wall_ms;          /* first spawn to last completion */
  double   longest_ms;
  double   ns_per;           /* (wall - longest) / n */
  double   late_p50_us;
  double   late_p99_us;
  double   late_max_us;
  guint    early;
  double   heap_bytes;       /* heap growth over the pending tasks */
  double   rss_bytes;        /* RSS growth over the pending tasks */
} Result;

/* One timer's state, preallocated for all N. */
typedef struct
{
  WsSleep   *sleep;
  WsPromise *promise;        /* the async rows' own reference */
  gint64     deadline;       /* monotonic us */
  gint64     late;           /* fire time - deadline, us */
  guint32    duration_us;
} Slot;

static double max_secs;
static Slot *slots;
static guint n_slots;

/* Completion of the cost runs. */
static gint left;
static guint64 end_ns;
static GMutex done_mutex;
static GCond done_cond;
static gboolean done_flag;

/* Tasks polled in the heap runs. */
static gint polled;

/* The same durations for every round and both implementations. */
static void
fill_durations (guint n)
{
  guint64 x = LCG_SEED;

  for (guint i = 0; i < n; i++)
    {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      slots[i].duration_us = MIN_SLEEP_US
                             + (guint32) ((x >> 33) % (MAX_SLEEP_US - MIN_SLEEP_US + 1));
    }
}

static double
heap_bytes (void)
{
#ifdef HAVE_MALLINFO2
  struct mallinfo2 mi = mallinfo2 ();

  return (double) mi.uordblks + (double) mi.hblkhd;
#else
  return (double) bench_rss_bytes ();
#endif
}

static void
progress (Measure  m,
          guint    n,
          guint    round,
          guint    done,
          guint64  start)
{
  fprintf (stderr, "bench-timers: progress impl=%s n=%u round=%u done=%u elapsed_s=%.0f\n",
           measure_names[m], n, round, done, (bench_now_ns () - start) / 1e9);
}

static gboolean
over_time (guint64 start)
{
  return max_secs > 0 && (bench_now_ns () - start) / 1e9 > max_secs;
}

/* Lateness statistics over slots[0..n). */
static void
lateness (Result *res,
          guint   n)
{
  double *v = g_new (double, n);

  res->early = 0;
  for (guint i = 0; i < n; i++)
    {
      v[i] = (double) slots[i].late;
      if (slots[i].late < 0)
        res->early++;
    }
  res->late_p50_us = bench_quantile (v, n, 0.50);
  res->late_p99_us = bench_quantile (v, n, 0.99);
  res->late_max_us = v[n - 1];
  g_free (v);
}

/* ---- 1. cost per sleep --------------------------------------------------- */

/* One sleep ended, on a worker: the last one reads the clock and wakes the
 * main thread. */
static void
count_done (void)
{
  if (g_atomic_int_dec_and_test (&left))
    {
      g_mutex_lock (&done_mutex);
      end_ns = bench_now_ns ();
      done_flag = TRUE;
      g_cond_signal (&done_cond);
      g_mutex_unlock (&done_mutex);
    }
}

static WsPoll
sleeper (WsContext *cx,
         gpointer   data)
{
  Slot *slot = data;
  gint64 now;

  if (slot->sleep == NULL)
    {
      slot->sleep = ws_sleep_new (slot->duration_us);
      slot->deadline = ws_sleep_get_deadline (slot->sleep);
    }
  if (ws_sleep_poll (slot->sleep, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;

  now = g_get_monotonic_time ();
  slot->late = now - slot->deadline;
  g_clear_pointer (&slot->sleep, ws_sleep_unref);
  count_done ();
  return WS_POLL_READY;
}

/* The promise row (4b): the callback of the sleep, on the worker that
 * started it, completes the promise as a Vala or GJS coroutine would. */
static void
promise_slept (GObject      *source,
               GAsyncResult *result,
               gpointer      data)
{
  Slot *slot = data;
  g_autoptr(GError) error = NULL;
  GValue value = G_VALUE_INIT;
  gint64 now = g_get_monotonic_time ();

  if (!ws_sleep_for_finish (result, &error))
    {
      /* Nothing cancels in this run: not counted, the round ends dnf. */
      g_critical ("a promise's sleep failed: %s", error->message);
      ws_promise_return_error (slot->promise, g_steal_pointer (&error));
      g_clear_pointer (&slot->promise, ws_promise_unref);
      return;
    }

  g_value_init (&value, G_TYPE_BOOLEAN);
  g_value_set_boolean (&value, TRUE);
  ws_promise_return_value (slot->promise, &value);
  g_value_unset (&value);
  g_clear_pointer (&slot->promise, ws_promise_unref);
  slot->late = now - slot->deadline;
  count_done ();
}

/* Runs on a worker at the task's first poll. The promise handed in is
 * the start function's only: it takes its own reference, which the
 * callback drops after completing it. The deadline is read just before
 * the call, which reads the clock again: the lateness is at most the
 * call's own duration too high, and an early end is found only if it is
 * earlier than that. */
static void
promise_start (WsPromise *promise,
               gpointer   data)
{
  Slot *slot = data;

  slot->promise = ws_promise_ref (promise);
  slot->deadline = g_get_monotonic_time () + slot->duration_us;
  ws_sleep_for_async (slot->duration_us, ws_promise_get_cancellable (promise),
                      promise_slept, slot);
}

static WsPoll
warm_sleeper (WsContext *cx,
              gpointer   data)
{
  WsSleep **sleep = data;

  if (*sleep == NULL)
    *sleep = ws_sleep_new (1000);
  if (ws_sleep_poll (*sleep, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  g_clear_pointer (sleep, ws_sleep_unref);
  g_atomic_int_set (&polled, 1);
  return WS_POLL_READY;
}

static void
measure_wsrt (Result  *res,
              Measure  m,
              guint    n,
              guint    round)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (N_WORKERS);
  WsSleep *warm = NULL;
  guint32 longest = 0;
  guint64 start;
  gint64 start_us;
  gboolean finished;

  /* Start the workers and the timer machinery outside the reading. */
  ws_runtime_spawn_detached (rt, warm_sleeper, &warm, NULL);
  while (g_atomic_int_get (&polled) == 0)
    g_usleep (100);

  for (guint i = 0; i < n; i++)
    longest = MAX (longest, slots[i].duration_us);
  g_atomic_int_set (&left, (gint) n);

  start = bench_now_ns ();
  start_us = g_get_monotonic_time ();
  if (m == MEASURE_PROMISE)
    {
      /* The handle is dropped at once: the task runs on, detached. */
      for (guint i = 0; i < n; i++)
        g_object_unref (ws_runtime_spawn_promise (rt, promise_start, &slots[i], NULL));
    }
  else
    {
      for (guint i = 0; i < n; i++)
        ws_runtime_spawn_detached (rt, sleeper, &slots[i], NULL);
    }

  g_mutex_lock (&done_mutex);
  while (!done_flag && !over_time (start))
    {
      gint64 until = g_get_monotonic_time () + PROGRESS_SECS * G_USEC_PER_SEC;

      if (max_secs > 0)
        until = MIN (until, start_us + (gint64) (max_secs * G_USEC_PER_SEC));
      if (!g_cond_wait_until (&done_cond, &done_mutex, until) && !over_time (start))
        progress (m, n, round, n - (guint) g_atomic_int_get (&left), start);
    }
  finished = done_flag;
  g_mutex_unlock (&done_mutex);

  res->done = n - (guint) g_atomic_int_get (&left);
  res->elapsed_s = (bench_now_ns () - start) / 1e9;
  if (!finished)
    {
      /* No shutdown: the child exits at once, the pending tasks with it. */
      (void) g_steal_pointer (&rt);
      return;
    }

  res->ok = TRUE;
  res->wall_ms = (end_ns - start) / 1e6;
  res->longest_ms = longest / 1e3;
  res->ns_per = ((double) (end_ns - start) - longest * 1e3) / n;
  lateness (res, n);
  ws_runtime_shutdown (rt, -1);
}

/* ---- 2. heap per pending sleep ------------------------------------------ */

static WsPoll
pending_plain (WsContext *cx,
               gpointer   data)
{
  Slot *slot = data;

  /* The waker is not kept: nothing will ever wake this task. A re-poll
   * (none is expected) is not counted twice. */
  if (slot->deadline == 0)
    {
      slot->deadline = 1;
      g_atomic_int_inc (&polled);
    }
  return WS_POLL_PENDING;
}

static WsPoll
pending_sleep (WsContext *cx,
               gpointer   data)
{
  Slot *slot = data;

  if (slot->sleep == NULL)
    {
      slot->sleep = ws_sleep_new (FAR_SLEEP_US);
      g_atomic_int_inc (&polled);
    }
  /* Arms the timer with this task's waker; it stays pending for 60 s. */
  if (ws_sleep_poll (slot->sleep, cx) == WS_POLL_READY)
    g_error ("a 60 s sleep was ready at once");
  return WS_POLL_PENDING;
}

/* A 60 s wait that must not end within the run. */
static void
far_slept (GObject      *source,
           GAsyncResult *result,
           gpointer      data)
{
  g_error ("a 60 s async sleep ended during the run");
}

/* 4d: a promise task pending on a 60 s async sleep with the promise's
 * cancellable, against one that keeps its promise and starts nothing. */
static void
promise_pending_wait (WsPromise *promise,
                      gpointer   data)
{
  Slot *slot = data;

  slot->promise = ws_promise_ref (promise);
  ws_sleep_for_async (FAR_SLEEP_US, ws_promise_get_cancellable (promise), far_slept, slot);
  g_atomic_int_inc (&polled);
}

static void
promise_pending_plain (WsPromise *promise,
                       gpointer   data)
{
  Slot *slot = data;

  slot->promise = ws_promise_ref (promise);
  g_atomic_int_inc (&polled);
}

static void
measure_heap (Result  *res,
              Measure  m,
              guint    n,
              guint    round)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (N_WORKERS);
  gboolean promise = m == MEASURE_HEAP_PROMISE_WAIT || m == MEASURE_HEAP_PROMISE_PLAIN;
  WsTaskFunc func = m == MEASURE_HEAP_SLEEP ? pending_sleep : pending_plain;
  WsPromiseFunc start_func = m == MEASURE_HEAP_PROMISE_WAIT ? promise_pending_wait
                                                            : promise_pending_plain;
  Slot warm = { NULL, };
  double heap_before, heap_after;
  long rss_before, rss_after;
  guint64 start, last;

  /* The same warm-up in both runs of a pair: the workers started and one
   * task pending on an armed sleep (a promise's on an async sleep). */
  if (promise)
    g_object_unref (ws_runtime_spawn_promise (rt, promise_pending_wait, &warm, NULL));
  else
    ws_runtime_spawn_detached (rt, pending_sleep, &warm, NULL);
  while (g_atomic_int_get (&polled) < 1)
    g_usleep (100);
  g_atomic_int_set (&polled, 0);

  heap_before = heap_bytes ();
  rss_before = bench_rss_bytes ();
  start = last = bench_now_ns ();
  if (promise)
    {
      for (guint i = 0; i < n; i++)
        g_object_unref (ws_runtime_spawn_promise (rt, start_func, &slots[i], NULL));
    }
  else
    {
      for (guint i = 0; i < n; i++)
        ws_runtime_spawn_detached (rt, func, &slots[i], NULL);
    }
  while ((guint) g_atomic_int_get (&polled) < n && !over_time (start))
    {
      g_usleep (1000);
      if (bench_now_ns () - last > PROGRESS_SECS * G_GUINT64_CONSTANT (1000000000))
        {
          last = bench_now_ns ();
          progress (m, n, round, (guint) g_atomic_int_get (&polled), start);
        }
    }
  heap_after = heap_bytes ();
  rss_after = bench_rss_bytes ();

  res->done = (guint) g_atomic_int_get (&polled);
  res->elapsed_s = (bench_now_ns () - start) / 1e9;
  res->ok = res->done == n;
  res->heap_bytes = (heap_after - heap_before) / n;
  res->rss_bytes = (double) (rss_after - rss_before) / n;
  /* No shutdown: the child exits at once, N pending tasks with it. */
  (void) g_steal_pointer (&rt);
}

/* 4c: N async sleeps of 60 s started on the main thread, no task and no
 * runtime: the heap they add, whole (the baseline is nothing). The
 * warm-up starts the context's timer driver with one such wait. */
static void
measure_heap_async_main (Result *res,
                         guint   n)
{
  double heap_before, heap_after;
  long rss_before, rss_after;
  guint64 start;

  ws_sleep_for_async (FAR_SLEEP_US, NULL, far_slept, NULL);

  heap_before = heap_bytes ();
  rss_before = bench_rss_bytes ();
  start = bench_now_ns ();
  /* Each is armed from inside the call: no iteration is needed. */
  for (guint i = 0; i < n; i++)
    ws_sleep_for_async (FAR_SLEEP_US, NULL, far_slept, &slots[i]);
  heap_after = heap_bytes ();
  rss_after = bench_rss_bytes ();

  res->done = n;
  res->elapsed_s = (bench_now_ns () - start) / 1e9;
  res->ok = TRUE;
  res->heap_bytes = (heap_after - heap_before) / n;
  res->rss_bytes = (double) (rss_after - rss_before) / n;
  /* The child exits without iterating: the waits go with it. */
}

/* ---- 3. the anchor: GLib timeouts on one GMainContext -------------------- */

/* What is left to fire on the main thread (the anchor, 4a). */
static guint main_left;

static gboolean
on_timeout (gpointer data)
{
  Slot *slot = data;

  slot->late = g_get_monotonic_time () - slot->deadline;
  if (--main_left == 0)
    end_ns = bench_now_ns ();
  return G_SOURCE_REMOVE;
}

/* Iterates @ctx until the callbacks have brought main_left to 0, or the
 * time is up, printing progress; fills in how many ended and when.
 * Returns whether all did. */
static gboolean
iterate_until_done (GMainContext *ctx,
                    Result       *res,
                    Measure       m,
                    guint         n,
                    guint         round,
                    guint64       start)
{
  guint64 last = bench_now_ns ();

  while (main_left > 0 && !over_time (start))
    {
      g_main_context_iteration (ctx, TRUE);
      if (bench_now_ns () - last > PROGRESS_SECS * G_GUINT64_CONSTANT (1000000000))
        {
          last = bench_now_ns ();
          progress (m, n, round, n - main_left, start);
        }
    }

  res->done = n - main_left;
  res->elapsed_s = (bench_now_ns () - start) / 1e9;
  return main_left == 0;
}

static void
measure_glib (Result *res,
              guint   n,
              guint   round)
{
  GMainContext *ctx = g_main_context_new ();
  guint longest = 0;
  guint64 start;

  main_left = n;
  start = bench_now_ns ();
  for (guint i = 0; i < n; i++)
    {
      guint ms = (slots[i].duration_us + 999) / 1000;
      GSource *source = g_timeout_source_new (ms);

      longest = MAX (longest, ms);
      slots[i].deadline = g_source_get_ready_time (source);
      g_source_set_callback (source, on_timeout, &slots[i], NULL);
      g_source_attach (source, ctx);
      g_source_unref (source);
    }
  if (!iterate_until_done (ctx, res, MEASURE_GLIB, n, round, start))
    return;

  res->ok = TRUE;
  res->wall_ms = (end_ns - start) / 1e6;
  res->longest_ms = longest;
  res->ns_per = ((double) (end_ns - start) - longest * 1e6) / n;
  lateness (res, n);
  g_main_context_unref (ctx);
}

/* ---- 4a. async sleeps on the main context -------------------------------- */

static void
async_main_slept (GObject      *source,
                  GAsyncResult *result,
                  gpointer      data)
{
  Slot *slot = data;
  g_autoptr(GError) error = NULL;
  gint64 now = g_get_monotonic_time ();

  if (!ws_sleep_for_finish (result, &error))
    g_error ("an async sleep failed: %s", error->message);
  if (slot != NULL)                  /* NULL: the warm-up's */
    slot->late = now - slot->deadline;
  if (--main_left == 0)
    end_ns = bench_now_ns ();
}

static void
measure_async_main (Result *res,
                    guint   n,
                    guint   round)
{
  guint32 longest = 0;
  guint64 start;

  /* Starts the main context's timer driver outside the reading. */
  main_left = 1;
  ws_sleep_for_async (1000, NULL, async_main_slept, NULL);
  while (main_left > 0)
    g_main_context_iteration (NULL, TRUE);

  for (guint i = 0; i < n; i++)
    longest = MAX (longest, slots[i].duration_us);
  main_left = n;
  start = bench_now_ns ();
  /* The deadline is read just before the call, which reads the clock
   * again: the lateness is at most the call's own duration too high. */
  for (guint i = 0; i < n; i++)
    {
      slots[i].deadline = g_get_monotonic_time () + slots[i].duration_us;
      ws_sleep_for_async (slots[i].duration_us, NULL, async_main_slept, &slots[i]);
    }
  if (!iterate_until_done (NULL, res, MEASURE_ASYNC_MAIN, n, round, start))
    return;

  res->ok = TRUE;
  res->wall_ms = (end_ns - start) / 1e6;
  res->longest_ms = longest / 1e3;
  res->ns_per = ((double) (end_ns - start) - longest * 1e3) / n;
  lateness (res, n);
}

/* ---- rounds in forked children ------------------------------------------- */

static Result
run_child (Measure m,
           guint   n,
           guint   round)
{
  Result res = { FALSE, };
  int fds[2];
  pid_t pid;
  int status;

  fflush (stdout);
  fflush (stderr);
  if (pipe (fds) != 0)
    g_error ("pipe failed");
  pid = fork ();
  if (pid < 0)
    g_error ("fork failed");
  if (pid == 0)
    {
      Result r = { FALSE, };

      close (fds[0]);
      n_slots = n;
      slots = g_new0 (Slot, n);  /* touched before any reading */
      memset (slots, 0, sizeof (Slot) * n);
      fill_durations (n);
      switch (m)
        {
        case MEASURE_WSRT_DUE:
          for (guint i = 0; i < n; i++)
            slots[i].duration_us = 0;
          measure_wsrt (&r, m, n, round);
          break;
        case MEASURE_WSRT:
        case MEASURE_PROMISE:
          measure_wsrt (&r, m, n, round);
          break;
        case MEASURE_ASYNC_MAIN:
          measure_async_main (&r, n, round);
          break;
        case MEASURE_HEAP_ASYNC_MAIN:
          measure_heap_async_main (&r, n);
          break;
        case MEASURE_GLIB:
          measure_glib (&r, n, round);
          break;
        case MEASURE_HEAP_SLEEP:
        case MEASURE_HEAP_PLAIN:
        case MEASURE_HEAP_PROMISE_WAIT:
        case MEASURE_HEAP_PROMISE_PLAIN:
          measure_heap (&r, m, n, round);
          break;
        case N_MEASURES:
        default:
          g_assert_not_reached ();
        }
      if (write (fds[1], &r, sizeof r) != sizeof r)
        _exit (1);
      _exit (0);
    }
  close (fds[1]);
  if (read (fds[0], &res, sizeof res) != sizeof res)
    res.ok = FALSE;
  close (fds[0]);
  waitpid (pid, &status, 0);
  return res;
}

/* "10k", "100k", "1M" for the ratio's key; else the number. */
static char *
short_n (guint n)
{
  if (n >= 1000000 && n % 1000000 == 0)
    return g_strdup_printf ("%uM", n / 1000000);
  if (n >= 1000 && n % 1000 == 0)
    return g_strdup_printf ("%uk", n / 1000);
  return g_strdup_printf ("%u", n);
}

static void
print_cost (Measure       m,
            guint         n,
            guint         round,
            const Result *r)
{
  const char *unit = m == MEASURE_WSRT_DUE ? "ns_per_task"
                     : m == MEASURE_GLIB ? "ns_per_timeout" : "ns_per_sleep";

  if (!r->ok)
    {
      printf ("bench=timers impl=%s n=%u round=%u dnf=1 done=%u elapsed_s=%.1f\n",
              measure_names[m], n, round, r->done, r->elapsed_s);
      return;
    }
  printf ("bench=timers impl=%s n=%u round=%u %s=%.1f wall_ms=%.1f longest_ms=%.3f "
          "late_p50_us=%.0f late_p99_us=%.0f late_max_us=%.0f early=%u\n",
          measure_names[m], n, round, unit, r->ns_per, r->wall_ms, r->longest_ms,
          r->late_p50_us, r->late_p99_us, r->late_max_us, r->early);
}

/* One async cost row over the rounds of an N. */
typedef struct
{
  double  *cost;
  double  *p99;
  guint    n_ok;
  guint    early;
  double   late_max;
  gboolean dnf;
} Series;

static void
series_run (Series  *series,
            Measure  m,
            guint    n,
            guint    round)
{
  Result res;

  if (series->dnf)
    return;
  res = run_child (m, n, round);
  print_cost (m, n, round, &res);
  if (res.ok)
    {
      series->cost[series->n_ok] = res.ns_per;
      series->p99[series->n_ok++] = res.late_p99_us;
      series->early += res.early;
      series->late_max = MAX (series->late_max, res.late_max_us);
    }
  series->dnf = !res.ok;
}

static void
series_print (const Series *series,
              const char   *prefix,
              gboolean      run)
{
  if (!run)
    printf (" %s_median_ns_per_sleep=skipped", prefix);
  else if (series->n_ok == 0)
    printf (" %s_median_ns_per_sleep=dnf", prefix);
  else
    printf (" %s_median_ns_per_sleep=%.1f %s_median_late_p99_us=%.0f %s_late_max_us=%.0f"
            " %s_early=%u",
            prefix, bench_median (series->cost, series->n_ok),
            prefix, bench_median (series->p99, series->n_ok),
            prefix, series->late_max, prefix, series->early);
}

static guint
env_uint (const char *name,
          guint       fallback)
{
  const char *v = g_getenv (name);

  return (v != NULL && *v != '\0') ? (guint) g_ascii_strtoull (v, NULL, 10) : fallback;
}

/* One heap row: the heap per pending item of the run @with_m, less that
 * of the run @without_m (N_MEASURES: nothing to subtract), printed and
 * appended to @bytes. Returns FALSE, printing a dnf line, if a run did
 * not finish. */
static gboolean
heap_row (const char *impl,
          Measure     with_m,
          Measure     without_m,
          guint       n,
          guint       round,
          double     *bytes,
          guint      *n_bytes)
{
  Result with = run_child (with_m, n, round);
  Result without = { .ok = TRUE, };

  if (without_m != N_MEASURES)
    without = run_child (without_m, n, round);
  if (!with.ok || !without.ok)
    {
      printf ("bench=timers impl=%s n=%u round=%u dnf=1 polled_with_sleep=%u "
              "polled_without=%u\n", impl, n, round, with.done, without.done);
      return FALSE;
    }

  bytes[(*n_bytes)++] = with.heap_bytes - without.heap_bytes;
  printf ("bench=timers impl=%s n=%u round=%u bytes_per_pending_sleep=%.1f ",
          impl, n, round, with.heap_bytes - without.heap_bytes);
  if (without_m != N_MEASURES)
    printf ("heap_per_task_with_sleep=%.1f heap_per_task_without=%.1f ",
            with.heap_bytes, without.heap_bytes);
  printf ("rss_bytes_per_pending_sleep=%.1f\n", with.rss_bytes - without.rss_bytes);
  return TRUE;
}

int
main (int   argc,
      char *argv[])
{
  static const guint default_ns[] = { 10000, 100000, 1000000 };
  gint rounds_opt = (gint) env_uint ("BENCH_TIMERS_ROUNDS", 0);
  gint anchor_cap = DEFAULT_ANCHOR_CAP;
  gint async_cap = DEFAULT_ASYNC_CAP;
  gboolean force_anchor = FALSE;
  double max_secs_opt = env_uint ("BENCH_TIMERS_MAX_SECS", DEFAULT_MAX_SECS);
  GOptionEntry entries[] = {
    { "rounds", 'r', 0, G_OPTION_ARG_INT, &rounds_opt,
      "Rounds per N (default 3, 1 from 1000000 on)", "R" },
    { "force-anchor", 0, 0, G_OPTION_ARG_NONE, &force_anchor,
      "Run the GLib anchor at every N", NULL },
    { "anchor-cap", 0, 0, G_OPTION_ARG_INT, &anchor_cap,
      "Largest N for the GLib anchor (default 100000)", "N" },
    { "async-cap", 0, 0, G_OPTION_ARG_INT, &async_cap,
      "Largest N for the async rows (default " G_STRINGIFY (DEFAULT_ASYNC_CAP) ")", "N" },
    { "max-secs", 0, 0, G_OPTION_ARG_DOUBLE, &max_secs_opt,
      "A round still running after S seconds is dnf (default 60, 0: no limit)", "S" },
    { NULL, 0, 0, G_OPTION_ARG_NONE, NULL, NULL, NULL }
  };
  g_autoptr(GOptionContext) octx = g_option_context_new ("[N ...]");
  g_autoptr(GError) error = NULL;
  g_autoptr(GArray) ns = g_array_new (FALSE, FALSE, sizeof (guint));
  double small_cost = -1, big_cost = -1;
  guint small_n = 0, big_n = 0;

  g_option_context_add_main_entries (octx, entries, NULL);
  if (!g_option_context_parse (octx, &argc, &argv, &error))
    {
      fprintf (stderr, "bench-timers: %s\n", error->message);
      return 2;
    }
  max_secs = max_secs_opt;
  for (int i = 1; i < argc; i++)
    {
      guint n = (guint) g_ascii_strtoull (argv[i], NULL, 10);

      if (n == 0)
        {
          fprintf (stderr, "bench-timers: not a count: %s\n", argv[i]);
          return 2;
        }
      g_array_append_val (ns, n);
    }
  if (ns->len == 0)
    g_array_append_vals (ns, default_ns, G_N_ELEMENTS (default_ns));

  printf ("bench=timers workers=%d sleep_ms=%d-%d far_sleep_s=%d anchor_cap=%d%s async_cap=%d "
          "max_secs=%g\n",
          N_WORKERS, MIN_SLEEP_US / 1000, MAX_SLEEP_US / 1000,
          (int) (FAR_SLEEP_US / G_USEC_PER_SEC), anchor_cap,
          force_anchor ? " (forced)" : "", async_cap, max_secs);

  for (guint k = 0; k < ns->len; k++)
    {
      guint n = g_array_index (ns, guint, k);
      guint rounds = rounds_opt > 0 ? (guint) rounds_opt : (n >= 1000000 ? 1 : 3);
      gboolean anchor = force_anchor || n <= (guint) anchor_cap;
      gboolean dnf[N_MEASURES] = { FALSE, };
      g_autofree double *ws_cost = g_new0 (double, rounds);
      g_autofree double *ws_p99 = g_new0 (double, rounds);
      g_autofree double *gl_cost = g_new0 (double, rounds);
      g_autofree double *due_cost = g_new0 (double, rounds);
      g_autofree double *bytes = g_new0 (double, rounds);
      guint n_ws = 0, n_gl = 0, n_due = 0, n_bytes = 0, early = 0;
      double late_max = 0;
      gboolean async = n <= (guint) async_cap;
      g_autofree double *am_cost = g_new0 (double, rounds);
      g_autofree double *am_p99 = g_new0 (double, rounds);
      g_autofree double *pr_cost = g_new0 (double, rounds);
      g_autofree double *pr_p99 = g_new0 (double, rounds);
      g_autofree double *am_bytes = g_new0 (double, rounds);
      g_autofree double *pr_bytes = g_new0 (double, rounds);
      Series am = { am_cost, am_p99, 0, 0, 0, FALSE };
      Series pr = { pr_cost, pr_p99, 0, 0, 0, FALSE };
      guint n_am_bytes = 0, n_pr_bytes = 0;

      if (!anchor)
        printf ("bench=timers impl=glib-timeout n=%u skipped (N > cap %d; "
                "--force-anchor runs it)\n", n, anchor_cap);
      for (guint i = 0; !async && i < 2; i++)
        printf ("bench=timers impl=%s n=%u skipped (N > async cap %d; --async-cap %u runs it)\n",
                measure_names[i == 0 ? MEASURE_ASYNC_MAIN : MEASURE_PROMISE], n, async_cap, n);

      for (guint r = 1; r <= rounds; r++)
        {
          Result res;

          if (!dnf[MEASURE_WSRT])
            {
              res = run_child (MEASURE_WSRT, n, r);
              print_cost (MEASURE_WSRT, n, r, &res);
              if (res.ok)
                {
                  ws_cost[n_ws] = res.ns_per;
                  ws_p99[n_ws++] = res.late_p99_us;
                  early += res.early;
                  late_max = MAX (late_max, res.late_max_us);
                }
              dnf[MEASURE_WSRT] = !res.ok;
            }

          if (!dnf[MEASURE_WSRT_DUE])
            {
              res = run_child (MEASURE_WSRT_DUE, n, r);
              print_cost (MEASURE_WSRT_DUE, n, r, &res);
              if (res.ok)
                due_cost[n_due++] = res.ns_per;
              dnf[MEASURE_WSRT_DUE] = !res.ok;
            }

          if (anchor && !dnf[MEASURE_GLIB])
            {
              res = run_child (MEASURE_GLIB, n, r);
              print_cost (MEASURE_GLIB, n, r, &res);
              if (res.ok)
                gl_cost[n_gl++] = res.ns_per;
              dnf[MEASURE_GLIB] = !res.ok;
            }

          if (!dnf[MEASURE_HEAP_SLEEP])
            dnf[MEASURE_HEAP_SLEEP] = !heap_row ("wsrt-heap", MEASURE_HEAP_SLEEP,
                                                 MEASURE_HEAP_PLAIN, n, r, bytes, &n_bytes);

          if (!async)
            continue;
          series_run (&am, MEASURE_ASYNC_MAIN, n, r);
          series_run (&pr, MEASURE_PROMISE, n, r);

          if (!dnf[MEASURE_HEAP_ASYNC_MAIN])
            dnf[MEASURE_HEAP_ASYNC_MAIN] = !heap_row ("wsrt-async-main-heap",
                                                      MEASURE_HEAP_ASYNC_MAIN, N_MEASURES,
                                                      n, r, am_bytes, &n_am_bytes);
          if (!dnf[MEASURE_HEAP_PROMISE_WAIT])
            dnf[MEASURE_HEAP_PROMISE_WAIT] = !heap_row ("wsrt-promise-heap",
                                                        MEASURE_HEAP_PROMISE_WAIT,
                                                        MEASURE_HEAP_PROMISE_PLAIN,
                                                        n, r, pr_bytes, &n_pr_bytes);
        }

      printf ("bench=timers summary n=%u rounds=%u", n, rounds);
      if (n_ws > 0)
        printf (" median_ns_per_sleep=%.1f median_late_p99_us=%.0f late_max_us=%.0f early=%u",
                bench_median (ws_cost, n_ws), bench_median (ws_p99, n_ws), late_max, early);
      else
        printf (" median_ns_per_sleep=dnf");
      if (n_due > 0)
        printf (" due_median_ns_per_task=%.1f", bench_median (due_cost, n_due));
      if (n_gl > 0)
        printf (" glib_median_ns_per_timeout=%.1f", bench_median (gl_cost, n_gl));
      else
        printf (" glib_median_ns_per_timeout=%s", anchor ? "dnf" : "skipped");
      if (n_ws > 0 && n_gl > 0)
        printf (" wsrt_over_glib=%.2f",
                bench_median (ws_cost, n_ws) / bench_median (gl_cost, n_gl));
      if (n_bytes > 0)
        printf (" bytes_per_pending_sleep=%.1f", bench_median (bytes, n_bytes));
      else
        printf (" bytes_per_pending_sleep=dnf");
      series_print (&am, "async_main", async);
      if (n_am_bytes > 0)
        printf (" async_main_bytes_per_pending_sleep=%.1f", bench_median (am_bytes, n_am_bytes));
      series_print (&pr, "promise", async);
      if (n_pr_bytes > 0)
        printf (" promise_bytes_per_pending_sleep=%.1f", bench_median (pr_bytes, n_pr_bytes));
      printf ("\n");

      /* The ratio compares the smallest and the largest N that finished. */
      if (n_ws > 0 && (small_n == 0 || n < small_n))
        {
          small_n = n;
          small_cost = bench_median (ws_cost, n_ws);
        }
      if (n_ws > 0 && n > big_n)
        {
          big_n = n;
          big_cost = bench_median (ws_cost, n_ws);
        }
    }

  if (small_n != 0 && big_n != small_n)
    {
      g_autofree char *big = short_n (big_n);
      g_autofree char *small = short_n (small_n);

      printf ("bench=timers summary ratio_%s_over_%s=%.2f ns_per_sleep_at_%s=%.1f "
              "(targets: ratio_1M_over_10k <= 1.5, <= 500 ns per sleep at 1M, "
              "<= 64 bytes per pending sleep)\n",
              big, small, big_cost / small_cost, big, big_cost);
    }
  return 0;
}
