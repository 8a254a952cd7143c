/* wsrt-bench.c: tokio's rt_multi_threaded workloads on wsrt
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The peers' contract (../shared/peers/README.md), so that this binary
 * runs side by side with tokio, smol, GThreadPool and oneTBB in one
 * `run-all.sh`:
 *
 *   usage: wsrt-bench [WORKLOAD|all] [WORKERS]          (workers: 2)
 *   one line per workload on stdout:
 *     workload=NAME peer=wsrt workers=N tasks=T median_ns_per_task=X runs=K
 *   env: BENCH_ITERS (10), BENCH_WARMUP (3), BENCH_MAX_SECS (20),
 *        BENCH_ITER_TIMEOUT_SECS (5; an iteration slower than this is DNF,
 *        and the background load is told to stop so that it can finish),
 *        WSRT_BENCH_METRICS=1 (the runtime's metrics table on stderr after
 *        each measured line: polls, steals, parks per worker),
 *        WSRT_BENCH_PEER=NAME (measure only the lines of that peer, such
 *        as wsrt or wsrt-fiber: for a profile of one of them).
 *
 * Every measured line gets a fresh runtime. The main thread only spawns
 * and waits; the N workers run the tasks.
 *
 * Where tokio awaits JoinHandles (the spawn_many_remote_* workloads),
 * peer=wsrt is what a user writes there: WsJoinHandles
 * (ws_runtime_spawn_joinable) waited for in order. Two more lines put it
 * in context: peer=wsrt-detached (detached spawns joined by an atomic
 * count and one wake of the main thread) and peer=wsrt-task (WsTask
 * GObjects waited for with ws_task_wait).
 *
 * fork_join (the peers' extra workload): fib(27) by recursive fork-join,
 * both halves spawned with ws_context_spawn and joined by awaiting their
 * WsJoinHandles, below n = 12 the serial recursion; the root spawned from
 * main and waited for there.
 *
 * peer=wsrt-fiber: every workload again, written with fibers
 * (ws-fiber.h) the way a user would: fork_join's fiber spawns both halves
 * with ws_context_spawn_fiber and WS_FIBER_AWAITs their join handles,
 * ping_pong's fibers WS_FIBER_AWAIT oneshots, yield_many's call
 * ws_fiber_yield, the spawn workloads spawn fibers (detached: the join
 * handle freed at once).
 */

#include "config.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wsrt.h"
#include "bench-util.h"

#define NUM_SPAWN        10000
#define NUM_SPAWN_BUSY2  1000
#define YIELD_TASKS      200
#define YIELDS_PER_TASK  1000
#define NUM_PINGS        1000
#define CHAIN_LEN        1000
#define STALL_NS         10000
#define FIB_N            27
#define FIB_CUTOFF       12
#define FIB_EXPECTED     196418

static const char *const workloads[] = {
  "spawn_many_local",
  "spawn_many_remote_idle",
  "spawn_many_remote_busy1",
  "spawn_many_remote_busy2",
  "yield_many",
  "ping_pong",
  "chained_spawn",
  "spawn_many_from_worker",
  "fork_join",
};

typedef struct
{
  guint  workers;
  guint  iters;
  guint  warmup;
  double max_secs;
  double iter_timeout_secs;
} Config;

static Config cfg;

/* WSRT_BENCH_PEER: NULL for every peer line. */
static const char *only_peer;

static gboolean
peer_wanted (const char *peer)
{
  return only_peer == NULL || g_str_equal (only_peer, peer);
}

/* The runtime of the workload being measured; tasks spawn on it. */
static WsRuntime *rt;

static inline guint64
now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (guint64) ts.tv_sec * 1000000000u + (guint64) ts.tv_nsec;
}

/* About 10 us of work that yields the OS thread, as in every peer. */
static void
stall (void)
{
  guint64 start = now_ns ();

  while (now_ns () - start < STALL_NS)
    sched_yield ();
}

static double
env_double (const char *name,
            double      fallback)
{
  const char *v = g_getenv (name);
  char *end = NULL;
  double d;

  if (v == NULL || *v == '\0')
    return fallback;
  d = g_ascii_strtod (v, &end);
  return (end != NULL && *end == '\0') ? d : fallback;
}

/* ---- "done" signal to the main thread ---------------------------------- */

/* A count of tasks still to finish; the one that brings it to zero raises
 * the flag the main thread waits for. */
static gint left;
static BenchDone done;

static void
done_raise (void)
{
  bench_done_raise (&done);
}

static void
done_wait (void)
{
  bench_done_wait (&done);
}

static inline void
count_down (void)
{
  if (g_atomic_int_dec_and_test (&left))
    done_raise ();
}

/* ---- background load (busy1, busy2) ------------------------------------ */

static gint keep_going;
static gint bg_live;
static GMutex bg_mutex;
static GCond bg_cond;

static void
bg_finished (void)
{
  if (g_atomic_int_dec_and_test (&bg_live))
    {
      g_mutex_lock (&bg_mutex);
      g_cond_signal (&bg_cond);
      g_mutex_unlock (&bg_mutex);
    }
}

/* busy1: loop { yield; stall } while keep_going. */
static WsPoll
bg_yield_poll (WsContext *cx,
               gpointer   data)
{
  gboolean *started = data;

  if (*started)
    stall ();
  *started = TRUE;
  if (g_atomic_int_get (&keep_going))
    return ws_context_yield (cx);
  bg_finished ();
  return WS_POLL_READY;
}

/* busy2: each link stalls, then spawns the next link from the worker. */
static WsPoll
bg_chain_poll (WsContext *cx,
               gpointer   data)
{
  if (g_atomic_int_get (&keep_going))
    {
      stall ();
      ws_runtime_spawn_detached (rt, bg_chain_poll, NULL, NULL);
    }
  else
    bg_finished ();
  return WS_POLL_READY;
}

static WsPoll
bg_chain_root_poll (WsContext *cx,
                    gpointer   data)
{
  ws_runtime_spawn_detached (rt, bg_chain_poll, NULL, NULL);
  return WS_POLL_READY;
}

static void
start_background (guint      n,
                  WsTaskFunc func)
{
  g_atomic_int_set (&keep_going, 1);
  g_atomic_int_set (&bg_live, n);
  for (guint i = 0; i < n; i++)
    {
      if (func == bg_yield_poll)
        ws_runtime_spawn_detached (rt, func, g_new0 (gboolean, 1), g_free);
      else
        ws_runtime_spawn_detached (rt, func, NULL, NULL);
    }
}

static void
stop_background (void)
{
  g_atomic_int_set (&keep_going, 0);
  g_mutex_lock (&bg_mutex);
  while (g_atomic_int_get (&bg_live) != 0)
    g_cond_wait (&bg_cond, &bg_mutex);
  g_mutex_unlock (&bg_mutex);
}

/* ---- measurement loop -------------------------------------------------- */

typedef void (*Body) (void);

/* The watchdog: an iteration running longer than the timeout makes the
 * result DNF and stops the background load so that it can finish. */
static gint64 iter_started = -1;   /* ns, -1 when no iteration runs */
static gint watchdog_fired;
static gint watchdog_stop;

static gpointer
watchdog_main (gpointer data)
{
  guint64 limit = (guint64) (cfg.iter_timeout_secs * 1e9);

  while (!g_atomic_int_get (&watchdog_stop))
    {
      gint64 started;

      g_usleep (20000);
      started = __atomic_load_n (&iter_started, __ATOMIC_ACQUIRE);
      if (started >= 0 && now_ns () - (guint64) started > limit)
        {
          g_atomic_int_set (&watchdog_fired, 1);
          g_atomic_int_set (&keep_going, 0);
          break;
        }
    }
  return NULL;
}

/* Returns the iteration's ns, or 0 if the watchdog fired during it. */
static guint64
run_once (Body body)
{
  guint64 t0 = now_ns ();
  guint64 ns;

  __atomic_store_n (&iter_started, (gint64) t0, __ATOMIC_RELEASE);
  body ();
  ns = now_ns () - t0;
  __atomic_store_n (&iter_started, (gint64) -1, __ATOMIC_RELEASE);
  if (g_atomic_int_get (&watchdog_fired))
    return 0;
  return MAX (ns, 1);
}

static int
cmp_u64 (const void *a,
         const void *b)
{
  guint64 x = *(const guint64 *) a, y = *(const guint64 *) b;

  return x < y ? -1 : x > y;
}

/* Warm-up, then the measured iterations; returns the median ns per task
 * and the number of runs (0: DNF). */
static double
measure (glong  tasks,
         Body   body,
         guint *runs)
{
  g_autofree guint64 *ns = g_new0 (guint64, cfg.iters);
  GThread *watchdog;
  guint iters = cfg.iters;
  guint k = 0;
  gboolean ok = TRUE;
  double median;

  __atomic_store_n (&iter_started, (gint64) -1, __ATOMIC_RELEASE);
  g_atomic_int_set (&watchdog_fired, 0);
  g_atomic_int_set (&watchdog_stop, 0);
  watchdog = g_thread_new ("bench-watchdog", watchdog_main, NULL);

  for (guint i = 0; i < cfg.warmup; i++)
    {
      guint64 t = run_once (body);
      double secs = t * 1e-9;

      if (t == 0)
        {
          ok = FALSE;
          break;
        }
      if (secs * (cfg.warmup + cfg.iters) > cfg.max_secs)
        {
          /* Slow: fewer runs, to stay within BENCH_MAX_SECS. */
          iters = CLAMP ((guint) (cfg.max_secs / secs), 1, cfg.iters);
          break;
        }
    }
  for (guint i = 0; ok && i < iters; i++)
    {
      guint64 t = run_once (body);

      if (t == 0)
        {
          k = 0;
          break;
        }
      ns[k++] = t;
    }

  g_atomic_int_set (&watchdog_stop, 1);
  g_thread_join (watchdog);

  *runs = k;
  if (k == 0)
    return -1;
  qsort (ns, k, sizeof *ns, cmp_u64);
  median = (k % 2) ? (double) ns[k / 2] : ((double) ns[k / 2 - 1] + (double) ns[k / 2]) / 2.0;
  return median / (double) tasks;
}

static void
print_line (const char *name,
            const char *peer,
            glong       tasks,
            double      median,
            guint       runs)
{
  if (runs == 0)
    {
      fprintf (stderr, "# %s %s: an iteration exceeded %.0fs; background load was "
               "stopped to let it finish -> DNF\n", peer, name, cfg.iter_timeout_secs);
      printf ("workload=%s peer=%s workers=%u tasks=%ld median_ns_per_task=DNF runs=0\n",
              name, peer, cfg.workers, tasks);
    }
  else
    printf ("workload=%s peer=%s workers=%u tasks=%ld median_ns_per_task=%.1f runs=%u\n",
            name, peer, cfg.workers, tasks, median, runs);
  fflush (stdout);
}

/* ---- spawn_many_local / spawn_many_from_worker ------------------------- */

static WsPoll
count_down_poll (WsContext *cx,
                 gpointer   data)
{
  count_down ();
  return WS_POLL_READY;
}

static void
spawn_count_down_tasks (guint n)
{
  for (guint i = 0; i < n; i++)
    ws_runtime_spawn_detached (rt, count_down_poll, NULL, NULL);
}

/* From main: the spawns go to the injection queue, as in tokio, whose
 * block_on thread is not a worker. */
static void
body_spawn_many_local (void)
{
  g_atomic_int_set (&left, NUM_SPAWN);
  spawn_count_down_tasks (NUM_SPAWN);
  done_wait ();
}

static WsPoll
spawner_poll (WsContext *cx,
              gpointer   data)
{
  spawn_count_down_tasks (NUM_SPAWN);
  return WS_POLL_READY;
}

/* From a worker: LIFO slot, local queue, overflow, stealing. */
static void
body_spawn_many_from_worker (void)
{
  g_atomic_int_set (&left, NUM_SPAWN);
  ws_runtime_spawn_detached (rt, spawner_poll, NULL, NULL);
  done_wait ();
}

/* ---- spawn_many_remote_* ----------------------------------------------- */

static WsPoll
empty_poll (WsContext *cx,
            gpointer   data)
{
  return WS_POLL_READY;
}

static WsJoinHandle *handles[NUM_SPAWN];
static WsTask *task_objects[NUM_SPAWN];

/* Join handles: spawn n empty tasks, then wait for each in order. */
static void
spawn_and_join_handles (guint n)
{
  for (guint i = 0; i < n; i++)
    handles[i] = ws_runtime_spawn_joinable (rt, empty_poll, NULL, NULL);
  for (guint i = 0; i < n; i++)
    {
      ws_join_handle_wait (handles[i], NULL);
      ws_join_handle_finish_uint64 (handles[i], NULL, NULL);
    }
}

/* The same with a WsTask GObject per task. */
static void
spawn_and_join_tasks (guint n)
{
  for (guint i = 0; i < n; i++)
    task_objects[i] = ws_runtime_spawn (rt, empty_poll, NULL, NULL);
  for (guint i = 0; i < n; i++)
    {
      ws_task_wait (task_objects[i], NULL, NULL);
      g_object_unref (task_objects[i]);
    }
}

/* Detached: the join is a count and one wake of the main thread. */
static void
spawn_and_join_detached (guint n)
{
  g_atomic_int_set (&left, n);
  spawn_count_down_tasks (n);
  done_wait ();
}

static void body_remote_10k_handles (void) { spawn_and_join_handles (NUM_SPAWN); }
static void body_remote_1k_handles (void) { spawn_and_join_handles (NUM_SPAWN_BUSY2); }
static void body_remote_10k_tasks (void) { spawn_and_join_tasks (NUM_SPAWN); }
static void body_remote_1k_tasks (void) { spawn_and_join_tasks (NUM_SPAWN_BUSY2); }
static void body_remote_10k_detached (void) { spawn_and_join_detached (NUM_SPAWN); }
static void body_remote_1k_detached (void) { spawn_and_join_detached (NUM_SPAWN_BUSY2); }

/* ---- yield_many -------------------------------------------------------- */

static WsPoll
yield_poll (WsContext *cx,
            gpointer   data)
{
  guint *yields_left = data;

  if (*yields_left > 0)
    {
      (*yields_left)--;
      return ws_context_yield (cx);
    }
  count_down ();
  return WS_POLL_READY;
}

static void
body_yield_many (void)
{
  g_atomic_int_set (&left, YIELD_TASKS);
  for (guint i = 0; i < YIELD_TASKS; i++)
    {
      guint yields_left = YIELDS_PER_TASK;

      ws_runtime_spawn_detached_with_state (rt, yield_poll, &yields_left, sizeof yields_left,
                                            NULL);
    }
  done_wait ();
}

/* ---- ping_pong --------------------------------------------------------- */

/* A ping's state and its pong's, each kept in its task
 * (ws_runtime_spawn_detached_with_state): two oneshots, one each way,
 * and whether the ping has spawned its pong. */
typedef struct
{
  gboolean   started;
  WsOneshot *ping;
  WsOneshot *pong;
} Pair;

static void
pair_clear (gpointer data)
{
  Pair *p = data;

  g_clear_pointer (&p->ping, ws_oneshot_unref);
  g_clear_pointer (&p->pong, ws_oneshot_unref);
}

static WsPoll
pong_poll (WsContext *cx,
           gpointer   data)
{
  Pair *p = data;
  gpointer item;

  if (ws_oneshot_poll (p->ping, cx, &item, NULL) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  ws_oneshot_send (p->pong, GINT_TO_POINTER (1));
  return WS_POLL_READY;
}

static WsPoll
ping_poll (WsContext *cx,
           gpointer   data)
{
  Pair *p = data;
  gpointer item;

  if (!p->started)
    {
      Pair pong;

      p->started = TRUE;
      p->ping = ws_oneshot_new (NULL);
      p->pong = ws_oneshot_new (NULL);
      pong = (Pair) { TRUE, ws_oneshot_ref (p->ping), ws_oneshot_ref (p->pong) };
      ws_runtime_spawn_detached_with_state (rt, pong_poll, &pong, sizeof pong, pair_clear);
      ws_oneshot_send (p->ping, GINT_TO_POINTER (1));
    }
  if (ws_oneshot_poll (p->pong, cx, &item, NULL) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  count_down ();
  return WS_POLL_READY;
}

static WsPoll
ping_root_poll (WsContext *cx,
                gpointer   data)
{
  static const Pair unstarted = { FALSE, NULL, NULL };

  for (guint i = 0; i < NUM_PINGS; i++)
    ws_runtime_spawn_detached_with_state (rt, ping_poll, &unstarted, sizeof unstarted,
                                          pair_clear);
  return WS_POLL_READY;
}

static void
body_ping_pong (void)
{
  g_atomic_int_set (&left, NUM_PINGS);
  ws_runtime_spawn_detached (rt, ping_root_poll, NULL, NULL);
  done_wait ();
}

/* ---- chained_spawn ----------------------------------------------------- */

static WsPoll
chain_poll (WsContext *cx,
            gpointer   data)
{
  guint remaining = GPOINTER_TO_UINT (data);

  if (remaining == 0)
    done_raise ();
  else
    ws_runtime_spawn_detached (rt, chain_poll, GUINT_TO_POINTER (remaining - 1), NULL);
  return WS_POLL_READY;
}

static void
body_chained_spawn (void)
{
  ws_runtime_spawn_detached (rt, chain_poll, GUINT_TO_POINTER (CHAIN_LEN), NULL);
  done_wait ();
}

/* ---- fork_join --------------------------------------------------------- */

/* Out of line, as the peers' leaf is, so that every peer does the same
 * leaf work. */
__attribute__ ((noinline)) static guint64
fib_serial (guint n)
{
  return n < 2 ? n : fib_serial (n - 1) + fib_serial (n - 2);
}

/* T(n) = 1 for n < cutoff, else 1 + T(n - 1) + T(n - 2). */
static glong
fib_tasks (guint n)
{
  return n < FIB_CUTOFF ? 1 : 1 + fib_tasks (n - 1) + fib_tasks (n - 2);
}

typedef struct
{
  guint         n;
  WsJoinHandle *left;
  WsJoinHandle *right;
} Fib;

static WsPoll fib_poll (WsContext *cx, gpointer data);

/* The child's Fib is kept in its task (ws_context_spawn_with_state). */
static WsJoinHandle *
fib_spawn (WsContext *cx,
           guint      n)
{
  Fib f = { n, NULL, NULL };

  return ws_context_spawn_with_state (cx, fib_poll, &f, sizeof f, NULL);
}

static WsPoll
fib_poll (WsContext *cx,
          gpointer   data)
{
  Fib *f = data;
  guint64 a, b;

  if (f->n < FIB_CUTOFF)
    {
      ws_context_return_uint64 (cx, fib_serial (f->n));
      return WS_POLL_READY;
    }
  if (f->left == NULL)
    {
      f->left = fib_spawn (cx, f->n - 1);
      f->right = fib_spawn (cx, f->n - 2);
    }
  if (ws_join_handle_poll (f->left, cx) == WS_POLL_PENDING
      || ws_join_handle_poll (f->right, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  ws_join_handle_finish_uint64 (f->left, &a, NULL);
  ws_join_handle_finish_uint64 (f->right, &b, NULL);
  ws_context_return_uint64 (cx, a + b);
  return WS_POLL_READY;
}

static void
body_fork_join (void)
{
  Fib *root = g_new (Fib, 1);
  WsJoinHandle *h;
  guint64 value = 0;

  root->n = FIB_N;
  root->left = root->right = NULL;
  h = ws_runtime_spawn_joinable (rt, fib_poll, root, g_free);
  ws_join_handle_wait (h, NULL);
  ws_join_handle_finish_uint64 (h, &value, NULL);
  if (value != FIB_EXPECTED)
    {
      fprintf (stderr, "# wsrt: fork_join computed fib(%d) = %" G_GUINT64_FORMAT
               ", expected %d; aborting\n", FIB_N, value, FIB_EXPECTED);
      abort ();
    }
}

/* ---- the same with fibers (peer=wsrt-fiber) ---------------------------- */

static void
spawn_fiber_detached (WsFiberFunc func,
                      gpointer    data)
{
  ws_join_handle_free (ws_runtime_spawn_fiber_full (rt, 0, func, data, NULL));
}

static void
count_down_fiber (WsContext *cx,
                  gpointer   data)
{
  count_down ();
}

static void
fiber_body_spawn_many_local (void)
{
  g_atomic_int_set (&left, NUM_SPAWN);
  for (guint i = 0; i < NUM_SPAWN; i++)
    spawn_fiber_detached (count_down_fiber, NULL);
  done_wait ();
}

static void
spawner_fiber (WsContext *cx,
               gpointer   data)
{
  for (guint i = 0; i < NUM_SPAWN; i++)
    ws_join_handle_free (ws_context_spawn_fiber (cx, count_down_fiber, NULL, NULL));
}

static void
fiber_body_spawn_many_from_worker (void)
{
  g_atomic_int_set (&left, NUM_SPAWN);
  spawn_fiber_detached (spawner_fiber, NULL);
  done_wait ();
}

static void
empty_fiber (WsContext *cx,
             gpointer   data)
{
}

static void
fiber_spawn_and_join (guint n)
{
  for (guint i = 0; i < n; i++)
    handles[i] = ws_runtime_spawn_fiber_full (rt, 0, empty_fiber, NULL, NULL);
  for (guint i = 0; i < n; i++)
    {
      ws_join_handle_wait (handles[i], NULL);
      ws_join_handle_finish_uint64 (handles[i], NULL, NULL);
    }
}

static void fiber_body_remote_10k (void) { fiber_spawn_and_join (NUM_SPAWN); }
static void fiber_body_remote_1k (void) { fiber_spawn_and_join (NUM_SPAWN_BUSY2); }

static void
yield_fiber (WsContext *cx,
             gpointer   data)
{
  for (guint i = 0; i < YIELDS_PER_TASK; i++)
    ws_fiber_yield (cx);
  count_down ();
}

static void
fiber_body_yield_many (void)
{
  g_atomic_int_set (&left, YIELD_TASKS);
  for (guint i = 0; i < YIELD_TASKS; i++)
    spawn_fiber_detached (yield_fiber, NULL);
  done_wait ();
}

/* What a ping fiber and its pong share, freed by the last of the two. */
typedef struct
{
  gint       ref_count;
  WsOneshot *ping;
  WsOneshot *pong;
} FiberPair;

static void
fiber_pair_unref (gpointer data)
{
  FiberPair *p = data;

  if (g_atomic_int_dec_and_test (&p->ref_count))
    {
      g_clear_pointer (&p->ping, ws_oneshot_unref);
      g_clear_pointer (&p->pong, ws_oneshot_unref);
      g_free (p);
    }
}

static void
pong_fiber (WsContext *cx,
            gpointer   data)
{
  FiberPair *p = data;
  gpointer item;

  if (WS_FIBER_AWAIT (cx, ws_oneshot_poll (p->ping, cx, &item, NULL)))
    ws_oneshot_send (p->pong, GINT_TO_POINTER (1));
}

static void
ping_fiber (WsContext *cx,
            gpointer   data)
{
  FiberPair *p = data;
  gpointer item;

  p->ping = ws_oneshot_new (NULL);
  p->pong = ws_oneshot_new (NULL);
  g_atomic_int_inc (&p->ref_count);
  ws_join_handle_free (ws_context_spawn_fiber (cx, pong_fiber, p, fiber_pair_unref));
  ws_oneshot_send (p->ping, GINT_TO_POINTER (1));
  if (WS_FIBER_AWAIT (cx, ws_oneshot_poll (p->pong, cx, &item, NULL)))
    count_down ();
}

static void
ping_root_fiber (WsContext *cx,
                 gpointer   data)
{
  for (guint i = 0; i < NUM_PINGS; i++)
    {
      FiberPair *p = g_new0 (FiberPair, 1);

      p->ref_count = 1;
      ws_join_handle_free (ws_context_spawn_fiber (cx, ping_fiber, p, fiber_pair_unref));
    }
}

static void
fiber_body_ping_pong (void)
{
  g_atomic_int_set (&left, NUM_PINGS);
  spawn_fiber_detached (ping_root_fiber, NULL);
  done_wait ();
}

static void
chain_fiber (WsContext *cx,
             gpointer   data)
{
  guint remaining = GPOINTER_TO_UINT (data);

  if (remaining == 0)
    done_raise ();
  else
    ws_join_handle_free (ws_context_spawn_fiber (cx, chain_fiber,
                                                 GUINT_TO_POINTER (remaining - 1), NULL));
}

static void
fiber_body_chained_spawn (void)
{
  spawn_fiber_detached (chain_fiber, GUINT_TO_POINTER (CHAIN_LEN));
  done_wait ();
}

static void
fib_fiber (WsContext *cx,
           gpointer   data)
{
  guint n = GPOINTER_TO_UINT (data);
  WsJoinHandle *lo, *hi;
  guint64 a = 0, b = 0;

  if (n < FIB_CUTOFF)
    {
      ws_context_return_uint64 (cx, fib_serial (n));
      return;
    }
  lo = ws_context_spawn_fiber (cx, fib_fiber, GUINT_TO_POINTER (n - 1), NULL);
  hi = ws_context_spawn_fiber (cx, fib_fiber, GUINT_TO_POINTER (n - 2), NULL);
  WS_FIBER_AWAIT (cx, ws_join_handle_poll (lo, cx));
  WS_FIBER_AWAIT (cx, ws_join_handle_poll (hi, cx));
  ws_join_handle_finish_uint64 (lo, &a, NULL);
  ws_join_handle_finish_uint64 (hi, &b, NULL);
  ws_context_return_uint64 (cx, a + b);
}

static void
fiber_body_fork_join (void)
{
  WsJoinHandle *h = ws_runtime_spawn_fiber_full (rt, 0, fib_fiber, GUINT_TO_POINTER (FIB_N),
                                                 NULL);
  guint64 value = 0;

  ws_join_handle_wait (h, NULL);
  ws_join_handle_finish_uint64 (h, &value, NULL);
  if (value != FIB_EXPECTED)
    {
      fprintf (stderr, "# wsrt-fiber: fork_join computed fib(%d) = %" G_GUINT64_FORMAT
               ", expected %d; aborting\n", FIB_N, value, FIB_EXPECTED);
      abort ();
    }
}

/* ---- driver ------------------------------------------------------------ */

typedef enum
{
  BG_NONE,
  BG_YIELD,   /* busy1: 2 x workers yield loops */
  BG_CHAIN,   /* busy2: workers respawning chains */
} Background;

/* One measured line: a fresh runtime, the background load, the loop. */
static double
run_variant (glong       tasks,
             Background  bg,
             Body        body,
             guint      *runs)
{
  double median;

  rt = ws_runtime_new (cfg.workers);
  if (bg == BG_YIELD)
    start_background (2 * cfg.workers, bg_yield_poll);
  else if (bg == BG_CHAIN)
    start_background (cfg.workers, bg_chain_root_poll);
  median = measure (tasks, body, runs);
  if (bg != BG_NONE)
    stop_background ();
  if (g_getenv ("WSRT_BENCH_METRICS") != NULL)
    {
      g_autoptr(WsMetrics) m = ws_runtime_get_metrics (rt);
      g_autofree char *table = ws_metrics_to_string (m);

      fprintf (stderr, "%s\n", table);
    }
  ws_runtime_shutdown (rt, -1);
  g_clear_object (&rt);
  return median;
}

static void
run_simple (const char *name,
            glong       tasks,
            Body        body)
{
  guint runs;
  double median;

  if (!peer_wanted ("wsrt"))
    return;
  median = run_variant (tasks, BG_NONE, body, &runs);
  print_line (name, "wsrt", tasks, median, runs);
}

/* The workload written with fibers. */
static void
run_fiber (const char *name,
           glong       tasks,
           Background  bg,
           Body        body)
{
  guint runs;
  double median;

  if (!peer_wanted ("wsrt-fiber"))
    return;
  median = run_variant (tasks, bg, body, &runs);
  print_line (name, "wsrt-fiber", tasks, median, runs);
}

/* Join handles ("wsrt": what tokio's workload does), detached spawns
 * with a count, and WsTask GObjects. */
static void
run_joined (const char *name,
            glong       n,
            Background  bg,
            Body        with_handles,
            Body        detached,
            Body        with_tasks)
{
  guint runs;
  double med;

  if (peer_wanted ("wsrt"))
    {
      med = run_variant (n, bg, with_handles, &runs);
      print_line (name, "wsrt", n, med, runs);
    }
  if (peer_wanted ("wsrt-detached"))
    {
      med = run_variant (n, bg, detached, &runs);
      print_line (name, "wsrt-detached", n, med, runs);
    }
  if (peer_wanted ("wsrt-task"))
    {
      med = run_variant (n, bg, with_tasks, &runs);
      print_line (name, "wsrt-task", n, med, runs);
    }
}

static gboolean
run_one (const char *w)
{
  if (g_str_equal (w, "spawn_many_local"))
    {
      run_simple (w, NUM_SPAWN, body_spawn_many_local);
      run_fiber (w, NUM_SPAWN, BG_NONE, fiber_body_spawn_many_local);
    }
  else if (g_str_equal (w, "spawn_many_remote_idle"))
    {
      run_joined (w, NUM_SPAWN, BG_NONE, body_remote_10k_handles, body_remote_10k_detached,
                  body_remote_10k_tasks);
      run_fiber (w, NUM_SPAWN, BG_NONE, fiber_body_remote_10k);
    }
  else if (g_str_equal (w, "spawn_many_remote_busy1"))
    {
      run_joined (w, NUM_SPAWN, BG_YIELD, body_remote_10k_handles, body_remote_10k_detached,
                  body_remote_10k_tasks);
      run_fiber (w, NUM_SPAWN, BG_YIELD, fiber_body_remote_10k);
    }
  else if (g_str_equal (w, "spawn_many_remote_busy2"))
    {
      run_joined (w, NUM_SPAWN_BUSY2, BG_CHAIN, body_remote_1k_handles,
                  body_remote_1k_detached, body_remote_1k_tasks);
      run_fiber (w, NUM_SPAWN_BUSY2, BG_CHAIN, fiber_body_remote_1k);
    }
  else if (g_str_equal (w, "yield_many"))
    {
      run_simple (w, (glong) YIELD_TASKS * YIELDS_PER_TASK, body_yield_many);
      run_fiber (w, (glong) YIELD_TASKS * YIELDS_PER_TASK, BG_NONE, fiber_body_yield_many);
    }
  else if (g_str_equal (w, "ping_pong"))
    {
      run_simple (w, NUM_PINGS, body_ping_pong);
      run_fiber (w, NUM_PINGS, BG_NONE, fiber_body_ping_pong);
    }
  else if (g_str_equal (w, "chained_spawn"))
    {
      run_simple (w, CHAIN_LEN, body_chained_spawn);
      run_fiber (w, CHAIN_LEN, BG_NONE, fiber_body_chained_spawn);
    }
  else if (g_str_equal (w, "spawn_many_from_worker"))
    {
      run_simple (w, NUM_SPAWN, body_spawn_many_from_worker);
      run_fiber (w, NUM_SPAWN, BG_NONE, fiber_body_spawn_many_from_worker);
    }
  else if (g_str_equal (w, "fork_join"))
    {
      run_simple (w, fib_tasks (FIB_N), body_fork_join);
      run_fiber (w, fib_tasks (FIB_N), BG_NONE, fiber_body_fork_join);
    }
  else
    return FALSE;
  return TRUE;
}

int
main (int   argc,
      char *argv[])
{
  const char *which = argc > 1 ? argv[1] : "all";
  gint workers = argc > 2 ? atoi (argv[2]) : 2;

  cfg.workers = workers > 0 ? (guint) workers : 2;
  cfg.iters = MAX ((gint) env_double ("BENCH_ITERS", 10), 1);
  cfg.warmup = MAX ((gint) env_double ("BENCH_WARMUP", 3), 0);
  cfg.max_secs = env_double ("BENCH_MAX_SECS", 20);
  cfg.iter_timeout_secs = env_double ("BENCH_ITER_TIMEOUT_SECS", 5);
  only_peer = g_getenv ("WSRT_BENCH_PEER");

  if (g_str_equal (which, "all"))
    {
      for (guint i = 0; i < G_N_ELEMENTS (workloads); i++)
        run_one (workloads[i]);
      return 0;
    }
  if (!run_one (which))
    {
      fprintf (stderr, "unknown workload '%s'; one of: all", which);
      for (guint i = 0; i < G_N_ELEMENTS (workloads); i++)
        fprintf (stderr, " %s", workloads[i]);
      fprintf (stderr, "\n");
      return 2;
    }
  return 0;
}
