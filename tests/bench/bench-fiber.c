/* bench-fiber.c: what a fiber costs: a switch, a suspension, its memory
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Three measurements, each with its anchor in the same program:
 *
 *  switch    a suspend plus a resume alone, on one thread, with no task
 *            around it: the hand-written switch wsrt uses
 *            (ws-fiber-switch.c) against glibc's swapcontext (), the
 *            ucontext fallback, doing the same two switches, and, when
 *            built with Boost.Context (libboost-context-dev), against its
 *            fcontext (jump_fcontext, its C entry points);
 *  suspend   N tasks spawned from main that suspend once (a yield) and
 *            complete, as fibers (ws_fiber_yield) and as poll functions
 *            (ws_context_yield, then READY): the cost per task;
 *  memory    N fibers that have suspended and wait, at the default stack
 *            size: the RSS growth per fiber, against N pending poll tasks
 *            (WsJoinHandle kept) and N pending GTasks. Each round in a
 *            forked child, as bench-memory.c does.
 *
 *   usage: bench-fiber [switch|suspend|memory|all]
 */

#include "config.h"

#include <stdio.h>
#include <ucontext.h>
#include <unistd.h>

#include "wsrt.h"
#include "ws-fiber-stack-private.h"
#include "ws-fiber-switch-private.h"
#include "bench-util.h"

#define SWITCHES   2000000
#define N_SUSPEND  100000
#define N_PENDING  10000
#define ROUNDS     5

/* ---- switch -------------------------------------------------------------- */

static WsFiberCtx bench_ctx;

static void
ping_entry (gpointer arg)
{
  for (;;)
    ws_fiber_ctx_suspend (&bench_ctx);
}

static double
measure_wsrt_switch (void)
{
  WsFiberStack *stack = ws_fiber_stack_get (NULL, 64 * 1024, NULL);
  guint64 t0, t1;

  ws_fiber_ctx_init (&bench_ctx, stack, ping_entry, NULL);
  ws_fiber_ctx_resume (&bench_ctx);
  t0 = bench_now_ns ();
  for (guint i = 0; i < SWITCHES; i++)
    ws_fiber_ctx_resume (&bench_ctx);
  t1 = bench_now_ns ();
  /* The fiber is left suspended for good: a benchmark's stack. */
  return (double) (t1 - t0) / SWITCHES;
}

static ucontext_t uc_main;
static ucontext_t uc_fiber;

static void
uc_entry (void)
{
  for (;;)
    swapcontext (&uc_fiber, &uc_main);
}

static double
measure_ucontext_switch (void)
{
  WsFiberStack *stack = ws_fiber_stack_get (NULL, 64 * 1024, NULL);
  guint64 t0, t1;

  getcontext (&uc_fiber);
  uc_fiber.uc_stack.ss_sp = ws_fiber_stack_bottom (stack);
  uc_fiber.uc_stack.ss_size = (guint8 *) ws_fiber_stack_top (stack)
                              - (guint8 *) ws_fiber_stack_bottom (stack);
  uc_fiber.uc_link = NULL;
  makecontext (&uc_fiber, uc_entry, 0);
  swapcontext (&uc_main, &uc_fiber);
  t0 = bench_now_ns ();
  for (guint i = 0; i < SWITCHES; i++)
    swapcontext (&uc_main, &uc_fiber);
  t1 = bench_now_ns ();
  return (double) (t1 - t0) / SWITCHES;
}

#ifdef WS_BENCH_BOOST_FCONTEXT
/* Boost.Context's switch, declared as libboost_context exports it. */
typedef void *fcontext_t;
typedef struct
{
  fcontext_t  fctx;
  void       *data;
} transfer_t;

transfer_t jump_fcontext (fcontext_t const  to,
                          void             *vp);
fcontext_t make_fcontext (void   *sp,
                          size_t  size,
                          void  (*fn) (transfer_t));

static void
fc_entry (transfer_t t)
{
  for (;;)
    t = jump_fcontext (t.fctx, NULL);
}

static double
measure_fcontext_switch (void)
{
  WsFiberStack *stack = ws_fiber_stack_get (NULL, 64 * 1024, NULL);
  gsize size = (guint8 *) ws_fiber_stack_top (stack) - (guint8 *) ws_fiber_stack_bottom (stack);
  fcontext_t fc = make_fcontext (ws_fiber_stack_top (stack), size, fc_entry);
  transfer_t t = jump_fcontext (fc, NULL);
  guint64 t0, t1;

  t0 = bench_now_ns ();
  for (guint i = 0; i < SWITCHES; i++)
    t = jump_fcontext (t.fctx, NULL);
  t1 = bench_now_ns ();
  return (double) (t1 - t0) / SWITCHES;
}
#endif

static void
bench_switch (void)
{
  double a[ROUNDS], b[ROUNDS];
#ifdef WS_BENCH_BOOST_FCONTEXT
  double c[ROUNDS];
#endif

  for (guint r = 0; r < ROUNDS; r++)
    {
      a[r] = measure_wsrt_switch ();
      b[r] = measure_ucontext_switch ();
#ifdef WS_BENCH_BOOST_FCONTEXT
      c[r] = measure_fcontext_switch ();
#endif
    }
  printf ("bench=fiber-switch switches=%d rounds=%d (one suspend + one resume)\n",
          SWITCHES, ROUNDS);
  printf ("%-34s median_ns=%.1f\n", ws_fiber_switch_get_kind (), bench_median (a, ROUNDS));
  printf ("%-34s median_ns=%.1f\n", "ucontext (swapcontext x2)", bench_median (b, ROUNDS));
#ifdef WS_BENCH_BOOST_FCONTEXT
  printf ("%-34s median_ns=%.1f\n", "Boost.Context fcontext (jump x2)", bench_median (c, ROUNDS));
#endif
}

/* ---- suspend once ---------------------------------------------------------- */

static gint left;
static BenchDone done;

static void
count_down (void)
{
  if (g_atomic_int_dec_and_test (&left))
    bench_done_raise (&done);
}

static void
done_wait (void)
{
  bench_done_wait (&done);
}

static void
yield_once_fiber (WsContext *cx,
                  gpointer   data)
{
  ws_fiber_yield (cx);
  count_down ();
}

static WsPoll
yield_once_poll (WsContext *cx,
                 gpointer   data)
{
  gboolean *yielded = data;

  if (!*yielded)
    {
      *yielded = TRUE;
      return ws_context_yield (cx);
    }
  count_down ();
  return WS_POLL_READY;
}

static double
measure_suspend (WsRuntime *rt,
                 gboolean   fibers)
{
  guint64 t0, t1;

  g_atomic_int_set (&left, N_SUSPEND);
  t0 = bench_now_ns ();
  for (guint i = 0; i < N_SUSPEND; i++)
    {
      if (fibers)
        ws_join_handle_free (ws_runtime_spawn_fiber_full (rt, 0, yield_once_fiber, NULL, NULL));
      else
        ws_runtime_spawn_detached (rt, yield_once_poll, g_new0 (gboolean, 1), g_free);
    }
  done_wait ();
  t1 = bench_now_ns ();
  return (double) (t1 - t0) / N_SUSPEND;
}

static void
bench_suspend (void)
{
  WsRuntime *rt = ws_runtime_new (2);
  double f[ROUNDS], p[ROUNDS];

  /* Warm up both: the stack caches, the task allocator. */
  measure_suspend (rt, TRUE);
  measure_suspend (rt, FALSE);
  for (guint r = 0; r < ROUNDS; r++)
    {
      f[r] = measure_suspend (rt, TRUE);
      p[r] = measure_suspend (rt, FALSE);
    }
  ws_runtime_shutdown (rt, -1);
  g_object_unref (rt);
  printf ("bench=fiber-suspend-once tasks=%d workers=2 rounds=%d (spawn from main, "
          "suspend once, complete)\n", N_SUSPEND, ROUNDS);
  printf ("%-34s median_ns_per_task=%.1f\n", "fiber (ws_fiber_yield)", bench_median (f, ROUNDS));
  printf ("%-34s median_ns_per_task=%.1f\n", "poll task (ws_context_yield)",
          bench_median (p, ROUNDS));
}

/* ---- memory ---------------------------------------------------------------- */

typedef enum
{
  MODE_FIBER,
  MODE_TASK,
  MODE_GTASK,
  N_MODES
} Mode;

static gint polled;

/* Suspends without arranging a wake: it waits until shutdown resumes it
 * with FALSE. */
static void
waiting_fiber (WsContext *cx,
               gpointer   data)
{
  g_atomic_int_inc (&polled);
  ws_fiber_suspend (cx);
}

static WsPoll
pending_forever (WsContext *cx,
                 gpointer   data)
{
  g_atomic_int_inc (&polled);
  return WS_POLL_PENDING;
}

static void
gtask_never (GObject      *source,
             GAsyncResult *result,
             gpointer      data)
{
}

static double
measure_child (Mode mode)
{
  WsRuntime *rt = NULL;
  gpointer *keep = g_new0 (gpointer, N_PENDING);
  long before, after;

  memset (keep, 0, sizeof (gpointer) * N_PENDING);
  if (mode != MODE_GTASK)
    {
      rt = ws_runtime_new (2);
      ws_join_handle_free (ws_runtime_spawn_joinable (rt, pending_forever, NULL, NULL));
      while (g_atomic_int_get (&polled) < 1)
        g_usleep (100);
      g_atomic_int_set (&polled, 0);
    }

  before = bench_rss_bytes ();
  for (guint i = 0; i < N_PENDING; i++)
    {
      switch (mode)
        {
        case MODE_FIBER:
          keep[i] = ws_runtime_spawn_fiber_full (rt, 0, waiting_fiber, NULL, NULL);
          break;
        case MODE_TASK:
          keep[i] = ws_runtime_spawn_joinable (rt, pending_forever, NULL, NULL);
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
    while (g_atomic_int_get (&polled) < N_PENDING)
      g_usleep (1000);
  after = bench_rss_bytes ();
  /* The child exits without cleaning up. */
  return (double) (after - before) / N_PENDING;
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

static void
bench_memory (void)
{
  static const char *const names[] = {
    "fiber, default stack (suspended)",
    "poll task + WsJoinHandle",
    "GTask pending (anchor)",
  };
  double v[N_MODES][3];

  for (guint r = 0; r < 3; r++)
    for (guint m = 0; m < N_MODES; m++)
      v[m][r] = run_round ((Mode) m);
  printf ("bench=fiber-memory pending=%d rounds=3 stack=%d (RSS growth / pending item)\n",
          N_PENDING, WS_FIBER_STACK_DEFAULT_SIZE);
  for (guint m = 0; m < N_MODES; m++)
    printf ("%-34s median_bytes=%.1f\n", names[m], bench_median (v[m], 3));
}

int
main (int   argc,
      char *argv[])
{
  const char *which = argc > 1 ? argv[1] : "all";
  gboolean all = g_str_equal (which, "all");

  /* memory first: it forks, and the parent has no thread yet. */
  if (all || g_str_equal (which, "memory"))
    bench_memory ();
  if (all || g_str_equal (which, "switch"))
    bench_switch ();
  if (all || g_str_equal (which, "suspend"))
    bench_suspend ();
  return 0;
}
