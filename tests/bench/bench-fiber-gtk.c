/* bench-fiber-gtk.c: what the main-loop forms cost: a local fiber's resume, a GIO await
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Two measurements, each with its anchor in the same program, rounds
 * interleaved:
 *
 *  resume  a wake on a main loop to the code running again: a local fiber
 *          that yields N times (ws_fiber_yield) against a local poll task
 *          that yields N times (ws_context_yield, PENDING), both polled by
 *          the loop's executor on this thread: ns per resume;
 *  gio     N GIO calls awaited one after the other by a worker fiber,
 *          with WS_GIO and ws_fiber_await_gio against the same calls with
 *          a WsAsyncOp and WS_FIBER_AWAIT: ns per call. The call is a
 *          GTask returned at once (its callback comes from an idle of the
 *          worker's context), so what is measured is the await around it.
 *
 *   usage: bench-fiber-gtk [resume|gio|all]
 */

#include "config.h"

#include <stdio.h>

#include "wsrt.h"
#include "bench-util.h"

#define N_RESUMES 200000
#define N_CALLS   50000
#define ROUNDS    7

/* ---- resume ------------------------------------------------------------- */

static void
yield_fiber (WsContext *cx,
             gpointer   user_data)
{
  for (guint i = 0; i < N_RESUMES; i++)
    if (!ws_fiber_yield (cx))
      return;
}

typedef struct
{
  guint n;
} YieldState;

static WsPoll
yield_poll (WsContext *cx,
            gpointer   user_data)
{
  YieldState *s = user_data;

  if (s->n++ == N_RESUMES)
    return WS_POLL_READY;
  ws_context_yield (cx);
  return WS_POLL_PENDING;
}

static double
measure_resume (WsRuntime    *rt,
                GMainContext *ctx,
                gboolean      fiber)
{
  g_autoptr(WsTask) task = NULL;
  YieldState s = { 0 };
  guint64 t0, t1;

  t0 = bench_now_ns ();
  task = fiber ? ws_runtime_spawn_local_fiber (rt, ctx, yield_fiber, NULL, NULL)
               : ws_runtime_spawn_local (rt, ctx, yield_poll, &s, NULL);
  while (!ws_task_is_finished (task))
    g_main_context_iteration (ctx, TRUE);
  t1 = bench_now_ns ();
  return (double) (t1 - t0) / N_RESUMES;
}

static void
bench_resume (void)
{
  WsRuntime *rt = ws_runtime_new (1);
  GMainContext *ctx = g_main_context_new ();
  double f[ROUNDS], p[ROUNDS], d[ROUNDS];

  g_main_context_push_thread_default (ctx);
  measure_resume (rt, ctx, TRUE);
  measure_resume (rt, ctx, FALSE);
  for (guint r = 0; r < ROUNDS; r++)
    {
      f[r] = measure_resume (rt, ctx, TRUE);
      p[r] = measure_resume (rt, ctx, FALSE);
      d[r] = f[r] - p[r];
    }
  g_main_context_pop_thread_default (ctx);
  g_main_context_unref (ctx);
  ws_runtime_shutdown (rt, -1);
  g_object_unref (rt);
  printf ("bench=local-resume resumes=%d rounds=%d (a yield on a main loop, this thread)\n",
          N_RESUMES, ROUNDS);
  printf ("%-34s median_ns_per_resume=%.1f\n", "local fiber (ws_fiber_yield)",
          bench_median (f, ROUNDS));
  printf ("%-34s median_ns_per_resume=%.1f\n", "local poll task (ws_context_yield)",
          bench_median (p, ROUNDS));
  printf ("%-34s median_ns=%.1f (target: <= 50)\n", "fiber - poll task, per round",
          bench_median (d, ROUNDS));
}

/* ---- gio ---------------------------------------------------------------- */

/* A GIO-style call that succeeds at once: its callback comes from an idle
 * of the caller's context. */
static void
ready_async (GCancellable        *cancellable,
             GAsyncReadyCallback  callback,
             gpointer             user_data)
{
  g_autoptr(GTask) task = g_task_new (NULL, cancellable, callback, user_data);

  g_task_return_boolean (task, TRUE);
}

static void
gio_fiber (WsContext *cx,
           gpointer   user_data)
{
  for (guint i = 0; i < N_CALLS; i++)
    {
      ready_async (WS_GIO (cx));
      if (!g_task_propagate_boolean (G_TASK (ws_fiber_await_gio (cx)), NULL))
        return;
    }
}

static void
async_op_fiber (WsContext *cx,
                gpointer   user_data)
{
  for (guint i = 0; i < N_CALLS; i++)
    {
      g_autoptr(WsAsyncOp) op = ws_async_op_new ();

      ready_async (ws_async_op_get_cancellable (op), ws_async_op_callback,
                   ws_async_op_start (op, cx));
      if (!WS_FIBER_AWAIT (cx, ws_async_op_poll (op, cx))
          || !g_task_propagate_boolean (G_TASK (ws_async_op_get_result (op)), NULL))
        return;
    }
}

static double
measure_gio (WsRuntime *rt,
             gboolean   gio)
{
  g_autoptr(WsTask) task = NULL;
  guint64 t0, t1;

  t0 = bench_now_ns ();
  task = ws_runtime_spawn_fiber (rt, gio ? gio_fiber : async_op_fiber, NULL, NULL);
  ws_task_wait (task, NULL, NULL);
  t1 = bench_now_ns ();
  return (double) (t1 - t0) / N_CALLS;
}

static void
bench_gio (void)
{
  WsRuntime *rt = ws_runtime_new (1);
  double g[ROUNDS], a[ROUNDS];

  measure_gio (rt, TRUE);
  measure_gio (rt, FALSE);
  for (guint r = 0; r < ROUNDS; r++)
    {
      g[r] = measure_gio (rt, TRUE);
      a[r] = measure_gio (rt, FALSE);
    }
  ws_runtime_shutdown (rt, -1);
  g_object_unref (rt);
  printf ("bench=gio-await calls=%d workers=1 rounds=%d (a worker fiber awaits a GTask "
          "returned at once)\n", N_CALLS, ROUNDS);
  printf ("%-34s median_ns_per_call=%.1f\n", "WS_GIO + ws_fiber_await_gio",
          bench_median (g, ROUNDS));
  printf ("%-34s median_ns_per_call=%.1f\n", "WsAsyncOp + WS_FIBER_AWAIT",
          bench_median (a, ROUNDS));
}

int
main (int   argc,
      char *argv[])
{
  const char *what = argc > 1 ? argv[1] : "all";

  if (g_str_equal (what, "resume") || g_str_equal (what, "all"))
    bench_resume ();
  if (g_str_equal (what, "gio") || g_str_equal (what, "all"))
    bench_gio ();
  return 0;
}
