/* bench-memory.c: resident memory per pending task
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * 1,000,000 tasks without user data are spawned from the main thread and
 * each returns WS_POLL_PENDING on its first poll, without registering its
 * waker anywhere: once all have been polled, the runtime holds 1,000,000
 * pending tasks (as a program holds tasks waiting on timers or sockets).
 * The RSS growth divided by the count is the cost of one pending task.
 * Variants: detached spawns, spawns that keep their WsJoinHandle, and
 * spawns that keep their WsTask (a GObject per task).
 *
 * The anchor, in the same program: 1,000,000 pending GTasks (g_task_new,
 * not yet returned), what a GLib program keeps per outstanding operation.
 *
 * Each round runs in a forked child, so that one round's freed memory does
 * not hide the next one's growth; the medians over rounds are printed.
 *
 * fiber-burst: what a burst of deep fibers leaves behind. In a child:
 * the RSS at the start (after a runtime ran one fiber and was let go, so
 * that the code and GLib's one-time state are paged in); a runtime of 2
 * workers;
 * 600 fibers that each touch 192 KiB of their stack and then all wait at
 * once; they end, and the workers go idle; then 600 shallow fibers that
 * wait (they reuse the burst's stacks): their cost is the RSS over the
 * start divided by 600, so what the burst left counts against them;
 * then shutdown and the runtime's last unref, and the RSS against the
 * start. Targets (doc/getting-started-c.md, "The stack"): at most 4.4 KB
 * per shallow waiting fiber, and the RSS back within 10 % of the start.
 *
 *   usage: bench-memory [tasks|fiber-burst|all]
 */

#include "config.h"

#include <stdio.h>
#include <unistd.h>

#include "wsrt.h"
#include "bench-util.h"

#define N_TASKS 1000000
#define ROUNDS  3

static gint polled;

static WsPoll
pending_forever (WsContext *cx,
                 gpointer   data)
{
  /* The waker is not kept: nothing will ever wake this task; shutdown
   * cancels it. */
  g_atomic_int_inc (&polled);
  return WS_POLL_PENDING;
}

typedef enum
{
  MODE_DETACHED,
  MODE_JOIN_HANDLES,
  MODE_TASKS,
  MODE_GTASK,
  N_MODES
} Mode;

static void
gtask_never (GObject      *source,
             GAsyncResult *result,
             gpointer      data)
{
}

/* In a child: returns the RSS growth per pending item, in bytes. */
static double
measure_child (Mode mode)
{
  g_autoptr(WsRuntime) rt = NULL;
  gpointer *keep = NULL;
  long before;
  long after;

  keep = g_new0 (gpointer, N_TASKS);  /* touched before the first reading */
  memset (keep, 0, sizeof (gpointer) * N_TASKS);

  if (mode != MODE_GTASK)
    {
      rt = ws_runtime_new (2);
      /* Start the workers and warm the allocator outside the reading. */
      ws_runtime_spawn_detached (rt, pending_forever, NULL, NULL);
      while (g_atomic_int_get (&polled) < 1)
        g_usleep (100);
      g_atomic_int_set (&polled, 0);
    }

  before = bench_rss_bytes ();
  for (guint i = 0; i < N_TASKS; i++)
    {
      switch (mode)
        {
        case MODE_DETACHED:
          ws_runtime_spawn_detached (rt, pending_forever, NULL, NULL);
          break;
        case MODE_JOIN_HANDLES:
          keep[i] = ws_runtime_spawn_joinable (rt, pending_forever, NULL, NULL);
          break;
        case MODE_TASKS:
          keep[i] = ws_runtime_spawn (rt, pending_forever, NULL, NULL);
          break;
        case MODE_GTASK:
          keep[i] = g_task_new (NULL, NULL, gtask_never, NULL);
          break;
        case N_MODES:
        default:
          g_assert_not_reached ();
        }
    }
  if (mode != MODE_GTASK)
    while (g_atomic_int_get (&polled) < N_TASKS)
      g_usleep (1000);
  after = bench_rss_bytes ();

  /* Shutdown cancels the pending tasks; the child exits right after. */
  if (rt != NULL)
    ws_runtime_shutdown (rt, -1);
  return (double) (after - before) / N_TASKS;
}

static void
measure_into (gint    mode,
              gpointer out)
{
  *(double *) out = measure_child ((Mode) mode);
}

static double
run_round (Mode mode)
{
  double result = -1;

  (void) bench_run_in_child (measure_into, mode, &result, sizeof result);
  return result;
}

/* ---- fiber-burst ---------------------------------------------------------- */

#define BURST_FIBERS  600
#define BURST_DEPTH   (192 * 1024)

typedef struct
{
  gint         *n_waiting;
  gboolean      deep;
} BurstFiber;

/* Touches @bytes of the stack below the caller's frame. */
static G_GNUC_NO_INLINE void
touch_stack (gsize bytes)
{
  volatile guint8 *area = g_alloca (bytes);

  for (gsize i = 0; i < bytes; i += 1024)
    area[i] = (guint8) i;
}

static void
burst_fiber (WsContext *cx,
             gpointer   data)
{
  BurstFiber *b = data;

  if (b->deep)
    touch_stack (BURST_DEPTH);
  g_atomic_int_inc (b->n_waiting);
  /* Waits with no wake arranged (as a fiber waiting on a socket would):
   * the cancel of its task resumes it, with FALSE, and it returns. */
  while (ws_fiber_suspend (cx))
    ;
}

/* Spawns BURST_FIBERS fibers, deep or not, and returns once all wait. */
static WsJoinHandle **
burst_spawn (WsRuntime  *rt,
             BurstFiber *b,
             gboolean    deep,
             guint       n)
{
  WsJoinHandle **h = g_new0 (WsJoinHandle *, n);
  static gint n_waiting;

  g_atomic_int_set (&n_waiting, 0);
  for (guint i = 0; i < n; i++)
    {
      b[i].n_waiting = &n_waiting;
      b[i].deep = deep;
      h[i] = ws_runtime_spawn_fiber_full (rt, 0, burst_fiber, &b[i], NULL);
    }
  while (g_atomic_int_get (&n_waiting) < (gint) n)
    g_usleep (1000);
  return h;
}

static void
burst_release (WsJoinHandle **h,
               BurstFiber    *b,
               guint          n)
{
  for (guint i = 0; i < n; i++)
    ws_join_handle_cancel (h[i]);
  for (guint i = 0; i < n; i++)
    {
      (void) ws_join_handle_wait (h[i], NULL);
      ws_join_handle_free (h[i]);
    }
  g_free (h);
}

typedef struct
{
  double per_shallow;        /* bytes of RSS over the start, per shallow fiber */
  double end_over_start;     /* RSS after the last unref / RSS at the start */
  double after_burst;        /* RSS over the start once the burst ended, bytes */
} BurstResult;

/* @with_burst: 1 for the deep burst before the shallow fibers, 0 for the
 * shallow fibers alone (the anchor: what one costs in a fresh runtime). */
static void
burst_child (gint     with_burst,
             gpointer out)
{
  BurstResult *r = out;
  BurstFiber *b = g_new0 (BurstFiber, BURST_FIBERS);
  WsRuntime *rt;
  WsJoinHandle **h;
  long start, after_burst, shallow, end;

  /* The start: a process that has run a runtime and a fiber before (the
   * code and GLib's one-time state paged in), with none alive. */
  rt = ws_runtime_new (2);
  h = burst_spawn (rt, b, FALSE, 1);
  burst_release (h, b, 1);
  ws_runtime_shutdown (rt, -1);
  g_object_unref (rt);
  start = bench_rss_bytes ();

  rt = ws_runtime_new (2);

  if (with_burst)
    {
      h = burst_spawn (rt, b, TRUE, BURST_FIBERS);
      burst_release (h, b, BURST_FIBERS);
    }
  /* The workers go idle. */
  g_usleep (200 * 1000);
  after_burst = bench_rss_bytes ();

  h = burst_spawn (rt, b, FALSE, BURST_FIBERS);
  shallow = bench_rss_bytes ();
  burst_release (h, b, BURST_FIBERS);

  ws_runtime_shutdown (rt, -1);
  g_object_unref (rt);
  end = bench_rss_bytes ();
  g_free (b);

  r->per_shallow = (double) (shallow - start) / BURST_FIBERS;
  r->end_over_start = (double) end / start;
  r->after_burst = (double) (after_burst - start);
}

static void
bench_fiber_burst (void)
{
  double per[2][ROUNDS], end[2][ROUNDS], after[ROUNDS];

  /* Interleaved: the burst, then its anchor. */
  for (guint r = 0; r < ROUNDS; r++)
    for (gint with_burst = 1; with_burst >= 0; with_burst--)
      {
        BurstResult res = { -1, -1, -1 };

        (void) bench_run_in_child (burst_child, with_burst, &res, sizeof res);
        per[with_burst][r] = res.per_shallow;
        end[with_burst][r] = res.end_over_start;
        if (with_burst)
          after[r] = res.after_burst;
      }
  printf ("bench=fiber-burst fibers=%d depth=%d rounds=%d\n", BURST_FIBERS, BURST_DEPTH,
          ROUNDS);
  printf ("%-40s median_bytes=%.1f\n", "RSS over start after the burst",
          bench_median (after, ROUNDS));
  printf ("%-40s median_bytes=%.1f\n", "per shallow waiting fiber after it",
          bench_median (per[1], ROUNDS));
  printf ("%-40s median_bytes=%.1f\n", "per shallow waiting fiber, no burst",
          bench_median (per[0], ROUNDS));
  printf ("%-40s median_ratio=%.3f\n", "RSS at the end / start, after the burst",
          bench_median (end[1], ROUNDS));
  printf ("%-40s median_ratio=%.3f\n", "RSS at the end / start, no burst",
          bench_median (end[0], ROUNDS));
}

/* ---- main ------------------------------------------------------------------ */

static void
bench_tasks (void)
{
  static const char *const names[] = {
    "wsrt detached (pending task)",
    "wsrt with WsJoinHandle",
    "wsrt with WsTask",
    "GTask pending (anchor)",
  };
  double v[N_MODES][ROUNDS];

  /* Interleave the rounds. */
  for (guint r = 0; r < ROUNDS; r++)
    for (guint m = 0; m < N_MODES; m++)
      v[m][r] = run_round ((Mode) m);

  printf ("bench=memory pending=%d rounds=%d (RSS growth / pending item)\n", N_TASKS, ROUNDS);
  for (guint m = 0; m < N_MODES; m++)
    printf ("%-30s median_bytes=%.1f\n", names[m], bench_median (v[m], ROUNDS));
}

int
main (int   argc,
      char *argv[])
{
  const char *which = argc > 1 ? argv[1] : "all";
  gboolean all = g_str_equal (which, "all");

  /* Each measurement forks; the parent never starts a thread. */
  if (all || g_str_equal (which, "tasks"))
    bench_tasks ();
  if (all || g_str_equal (which, "fiber-burst"))
    bench_fiber_burst ();
  return 0;
}
