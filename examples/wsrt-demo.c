/* wsrt-demo.c: a mixed workload that makes work stealing visible
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * wsrt-demo runs four workloads at once on one WsRuntime and then prints
 * what each worker did (ws_metrics_to_string()):
 *
 *  - forkjoin: a parallel fib(n). A task above the cutoff spawns its two
 *    halves with ws_handle_spawn() and awaits both with ws_task_poll(),
 *    returning WS_POLL_PENDING until they are done; below the cutoff it
 *    computes serially. Results travel as G_TYPE_UINT64 GValues
 *    (ws_context_return_value(), ws_task_get_value()). The right half is
 *    spawned first, so the left half pushes it out of the LIFO slot into
 *    the worker's queue, where an idle worker can steal it ("steals",
 *    "steal-op"); a queue that fills up sends half of itself to the
 *    injection queue, where every worker looks ("overflow").
 *  - chains: tasks that each spawn the next link, detached
 *    (ws_runtime_spawn_detached()), a thousand links deep. A root task keeps its
 *    waker (ws_context_get_waker()) and the last link of the last chain
 *    wakes it. The LIFO slot runs a link right after its parent; its
 *    per-tick cap keeps the chains from starving everything else.
 *  - yields: tasks that give way with ws_context_yield() a number of
 *    times, going to the back of their worker's queue each time, awaited
 *    by a root that polls them in order (and is made to yield itself when
 *    it runs out of cooperative budget: the "yields" column counts these
 *    forced yields).
 *  - remote: tasks spawned from the main thread, in batches from a
 *    GMainLoop timeout. They enter through the injection queue ("remote
 *    schedules") and are awaited with ws_task_wait_async(), which calls
 *    back on the main loop.
 *
 * The table shows how the work spread: polls and busy time per worker, the
 * tasks that moved by stealing and by overflow, the parks of workers that
 * ran dry.
 *
 * The main thread never blocks and never spins: it runs a GMainLoop that
 * redraws a progress line every 100 ms from an atomic counter (a bar on a
 * terminal, a plain line every half second otherwise) and learns that a
 * workload ended through ws_task_wait_async(). Every result is checked
 * against a serial computation at the end; the exit status is 1 if one is
 * wrong or a task failed.
 *
 * Then the same workload runs again on a GThreadPool with as many threads
 * as the runtime has workers, written the way a GThreadPool program has
 * to be (jobs run to completion: a join is a counter that the last half
 * decrements, a yield pushes the job back to the end of the pool's queue,
 * a result for the main loop travels in an idle source), its results are
 * checked the same way, and one line compares the two wall times
 * (--no-gthreadpool skips it).
 *
 *   wsrt-demo [--workers=N] [--tasks=N] [--workload=all|forkjoin|chains|yields|remote]
 *             [--no-gthreadpool]
 */

#include <locale.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <wsrt.h>

#define DEFAULT_TASKS      500000
#define MAX_TASKS          50000000

#define FIB_CUTOFF         20      /* fib(n) below this is computed serially */
#define CHAIN_DEPTH        1000    /* links per chain */
#define CHAIN_WORK         64      /* mix rounds per link */
#define YIELDS_PER_TASK    16      /* each yielder is polled this + 1 times */
#define YIELD_WORK         64      /* mix rounds per poll of a yielder */
#define REMOTE_SHARE       4       /* remote tasks: the scale divided by this */
#define REMOTE_BATCH       256     /* remote spawns per main loop tick */
#define REMOTE_WORK        256     /* mix rounds per remote task */

#define PROGRESS_INTERVAL_MS    100
#define PLAIN_PROGRESS_EVERY    5  /* ticks between plain progress lines */
#define SETTLE_INTERVAL_MS      2
#define SETTLE_TIMEOUT_MS       250

typedef struct _Demo Demo;

/* One workload, seen from the main thread. */
typedef struct
{
  const gchar *name;
  Demo        *demo;
  gboolean     enabled;
  gint64       end_time;
  guint64      result;     /* what the workload computed */
  GError      *error;      /* if it failed */
} Job;

typedef struct
{
  Job      job;
  guint    n;              /* computes fib (n) */
  guint    n_tasks;
} ForkJoin;

typedef struct
{
  Job      job;
  guint    n_chains;
  guint    depth;
  WsWaker *waker;          /* the root's; taken by the last link to end */
  gint     chains_left;    /* atomic */
  guint64 *checksums;      /* one per chain, written by its last link */
} Chains;

typedef struct
{
  Job      job;
  guint    n_tasks;
} Yields;

typedef struct
{
  Job      job;
  guint    n_tasks;
  guint    n_spawned;      /* main thread only, like the rest of Remote */
  guint    n_done;
} Remote;

/* The same workloads on a GThreadPool. */
typedef struct
{
  Job          forkjoin;
  Job          chains;
  Job          yields;
  Job          remote;
  GThreadPool *pool;
  gint         chains_left;     /* atomic */
  guint64     *chain_checksums; /* one per chain, written by its last link */
  gint         yielders_left;   /* atomic */
  guint64     *yielder_accs;    /* one per yielder, written when it ends */
  guint        remote_spawned;  /* main thread only */
  guint        remote_done;
} PoolRun;

struct _Demo
{
  WsRuntime *runtime;
  GMainLoop *loop;
  const gchar *phase;          /* "wsrt" or "GThreadPool", for progress */
  gboolean   quiet;            /* no line per finished workload */
  gboolean   is_tty;
  gint64     start_time;
  guint      ticks;
  guint      settle_ticks;
  guint      jobs_running;
  guint      expected_tasks;
  gint       finished_tasks;   /* atomic: every task that returned READY */

  ForkJoin   forkjoin;
  Chains     chains;
  Yields     yields;
  Remote     remote;
  PoolRun    pool;
};

/* A few nanoseconds of arithmetic that the compiler cannot skip
 * (splitmix64). */
static inline guint64
mix (guint64 x)
{
  x += G_GUINT64_CONSTANT (0x9e3779b97f4a7c15);
  x = (x ^ (x >> 30)) * G_GUINT64_CONSTANT (0xbf58476d1ce4e5b9);
  x = (x ^ (x >> 27)) * G_GUINT64_CONSTANT (0x94d049bb133111eb);
  return x ^ (x >> 31);
}

static guint64
spin (guint64 x,
      guint   rounds)
{
  for (guint i = 0; i < rounds; i++)
    x = mix (x);
  return x;
}

static void
task_finished (Demo *demo)
{
  g_atomic_int_inc (&demo->finished_tasks);
}

/* Counts the task as finished and completes it with @result. */
static WsPoll
return_uint64 (WsContext *cx,
               Demo      *demo,
               guint64    result)
{
  GValue value = G_VALUE_INIT;

  g_value_init (&value, G_TYPE_UINT64);
  g_value_set_uint64 (&value, result);
  ws_context_return_value (cx, &value);
  g_value_unset (&value);

  task_finished (demo);
  return WS_POLL_READY;
}

/* The G_TYPE_UINT64 result of a task that has ended, or FALSE. */
static gboolean
get_uint64 (WsTask  *task,
            guint64 *result)
{
  const GValue *value = ws_task_get_value (task);

  if (value == NULL || !G_VALUE_HOLDS_UINT64 (value))
    return FALSE;
  *result = g_value_get_uint64 (value);
  return TRUE;
}

/* Fork-join: fib (n) */

typedef struct
{
  Demo   *demo;
  guint   n;
  WsTask *left;    /* fib (n - 1) */
  WsTask *right;   /* fib (n - 2) */
} FibFrame;

static guint64
fib_serial (guint n)
{
  return n < 2 ? n : fib_serial (n - 1) + fib_serial (n - 2);
}

static guint64
fib_iterative (guint n)
{
  guint64 a = 0, b = 1;

  for (guint i = 0; i < n; i++)
    {
      guint64 next = a + b;

      a = b;
      b = next;
    }
  return a;
}

/* How many tasks fib_poll() runs for fib (n). */
static guint
fib_count_tasks (guint n)
{
  guint64 below = 1, here = 1;   /* tasks for fib (i - 2) and fib (i - 1) */

  if (n < FIB_CUTOFF)
    return 1;
  for (guint i = FIB_CUTOFF; i <= n; i++)
    {
      guint64 next = 1 + here + below;

      below = here;
      here = MIN (next, G_MAXUINT);
    }
  return here;
}

static FibFrame *
fib_frame_new (Demo  *demo,
               guint  n)
{
  FibFrame *frame = g_new0 (FibFrame, 1);

  frame->demo = demo;
  frame->n = n;
  return frame;
}

static void
fib_frame_free (gpointer data)
{
  FibFrame *frame = data;

  g_clear_object (&frame->left);
  g_clear_object (&frame->right);
  g_free (frame);
}

static WsPoll
fib_poll (WsContext *cx,
          gpointer   user_data)
{
  FibFrame *frame = user_data;
  gboolean left_ready, right_ready;
  guint64 left, right;

  if (frame->n < FIB_CUTOFF)
    return return_uint64 (cx, frame->demo, fib_serial (frame->n));

  if (frame->left == NULL)
    {
      /* First poll: fork. The right half goes first so that the left
       * half pushes it out of the LIFO slot to where thieves can take it. */
      g_autoptr(WsHandle) handle = ws_handle_get_current ();

      frame->right = ws_handle_spawn (handle, fib_poll,
                                      fib_frame_new (frame->demo, frame->n - 2),
                                      fib_frame_free);
      frame->left = ws_handle_spawn (handle, fib_poll,
                                     fib_frame_new (frame->demo, frame->n - 1),
                                     fib_frame_free);
    }

  /* Join. Poll both, so that both know to wake us. */
  left_ready = ws_task_poll (frame->left, cx) == WS_POLL_READY;
  right_ready = ws_task_poll (frame->right, cx) == WS_POLL_READY;
  if (!left_ready || !right_ready)
    return WS_POLL_PENDING;

  if (!get_uint64 (frame->left, &left) || !get_uint64 (frame->right, &right))
    {
      ws_context_return_error (cx, g_error_new (G_IO_ERROR, G_IO_ERROR_FAILED,
                                                "fib (%u): a half has no result",
                                                frame->n));
      task_finished (frame->demo);
      return WS_POLL_READY;
    }

  return return_uint64 (cx, frame->demo, left + right);
}

/* Chains */

typedef struct
{
  Chains  *chains;
  guint    chain;
  guint    link;       /* 1 to chains->depth */
  guint64  checksum;   /* carried down the chain */
} ChainLink;

static guint64
chain_seed (guint chain)
{
  return mix (chain);
}

static guint64
chain_step (guint64 checksum,
            guint   link)
{
  return spin (checksum ^ link, CHAIN_WORK);
}

static WsPoll
chain_link_poll (WsContext *cx,
                 gpointer   user_data)
{
  ChainLink *self = user_data;
  Chains *chains = self->chains;
  Demo *demo = chains->job.demo;
  guint64 checksum = chain_step (self->checksum, self->link);

  if (self->link < chains->depth)
    {
      ChainLink *next = g_new (ChainLink, 1);

      next->chains = chains;
      next->chain = self->chain;
      next->link = self->link + 1;
      next->checksum = checksum;
      ws_runtime_spawn_detached (demo->runtime, chain_link_poll, next, g_free);
      task_finished (demo);
      return WS_POLL_READY;
    }

  chains->checksums[self->chain] = checksum;
  task_finished (demo);

  if (g_atomic_int_dec_and_test (&chains->chains_left))
    {
      /* Only the last link gets here, so it owns the root's waker now. */
      g_autoptr(WsWaker) waker = g_steal_pointer (&chains->waker);

      ws_waker_wake (waker);
    }
  return WS_POLL_READY;
}

static WsPoll
chains_root_poll (WsContext *cx,
                  gpointer   user_data)
{
  Chains *chains = user_data;
  guint64 sum = 0;

  if (chains->checksums == NULL)
    {
      /* First poll: keep our waker, then start every chain. */
      chains->checksums = g_new0 (guint64, chains->n_chains);
      chains->waker = ws_context_get_waker (cx);
      g_atomic_int_set (&chains->chains_left, chains->n_chains);

      for (guint i = 0; i < chains->n_chains; i++)
        {
          ChainLink *head = g_new (ChainLink, 1);

          head->chains = chains;
          head->chain = i;
          head->link = 1;
          head->checksum = chain_seed (i);
          ws_runtime_spawn_detached (chains->job.demo->runtime, chain_link_poll,
                                     head, g_free);
        }
    }

  /* Woken (or first polled) while chains still run: wait on. */
  if (g_atomic_int_get (&chains->chains_left) > 0)
    return WS_POLL_PENDING;

  for (guint i = 0; i < chains->n_chains; i++)
    sum += chains->checksums[i];
  return return_uint64 (cx, chains->job.demo, sum);
}

static guint64
chains_expected (Chains *chains)
{
  guint64 sum = 0;

  for (guint i = 0; i < chains->n_chains; i++)
    {
      guint64 checksum = chain_seed (i);

      for (guint link = 1; link <= chains->depth; link++)
        checksum = chain_step (checksum, link);
      sum += checksum;
    }
  return sum;
}

/* Yields */

typedef struct
{
  Demo    *demo;
  guint    polls;
  guint64  acc;
} Yielder;

typedef struct
{
  Yields  *yields;
  WsTask **tasks;
  guint    next;       /* the first yielder not yet collected */
  guint64  sum;
} YieldsRoot;

static guint64
yielder_step (guint64 acc,
              guint   poll)
{
  return spin (acc + poll, YIELD_WORK);
}

static WsPoll
yielder_poll (WsContext *cx,
              gpointer   user_data)
{
  Yielder *self = user_data;

  self->acc = yielder_step (self->acc, self->polls);
  if (self->polls++ < YIELDS_PER_TASK)
    return ws_context_yield (cx);

  return return_uint64 (cx, self->demo, self->acc);
}

static void
yields_root_free (gpointer data)
{
  YieldsRoot *root = data;

  if (root->tasks != NULL)
    {
      for (guint i = 0; i < root->yields->n_tasks; i++)
        g_clear_object (&root->tasks[i]);
      g_free (root->tasks);
    }
  g_free (root);
}

static WsPoll
yields_root_poll (WsContext *cx,
                  gpointer   user_data)
{
  YieldsRoot *root = user_data;
  Yields *yields = root->yields;
  Demo *demo = yields->job.demo;

  if (root->tasks == NULL)
    {
      root->tasks = g_new0 (WsTask *, yields->n_tasks);
      for (guint i = 0; i < yields->n_tasks; i++)
        {
          Yielder *y = g_new0 (Yielder, 1);

          y->demo = demo;
          y->acc = i;
          /* On a worker, ws_runtime_spawn() is a local spawn too. */
          root->tasks[i] = ws_runtime_spawn (demo->runtime, yielder_poll, y, g_free);
        }
    }

  /* Collect in order; the first one still running wakes us when it ends. */
  while (root->next < yields->n_tasks)
    {
      WsTask *task = root->tasks[root->next];
      guint64 acc;

      if (ws_task_poll (task, cx) == WS_POLL_PENDING)
        return WS_POLL_PENDING;
      if (!get_uint64 (task, &acc))
        {
          ws_context_return_error (cx, g_error_new (G_IO_ERROR, G_IO_ERROR_FAILED,
                                                    "yielder %u has no result",
                                                    root->next));
          task_finished (demo);
          return WS_POLL_READY;
        }
      root->sum += acc;
      g_clear_object (&root->tasks[root->next]);
      root->next++;
    }

  return return_uint64 (cx, demo, root->sum);
}

static guint64
yields_expected (Yields *yields)
{
  guint64 sum = 0;

  for (guint i = 0; i < yields->n_tasks; i++)
    {
      guint64 acc = i;

      for (guint poll = 0; poll <= YIELDS_PER_TASK; poll++)
        acc = yielder_step (acc, poll);
      sum += acc;
    }
  return sum;
}

/* Remote spawns from the main thread */

typedef struct
{
  Demo  *demo;
  guint  index;
} RemoteWork;

static guint64
remote_work (guint index)
{
  return spin (G_GUINT64_CONSTANT (0x5eed) + index, REMOTE_WORK);
}

static WsPoll
remote_poll (WsContext *cx,
             gpointer   user_data)
{
  RemoteWork *work = user_data;

  return return_uint64 (cx, work->demo, remote_work (work->index));
}

static guint64
remote_expected (Remote *remote)
{
  guint64 sum = 0;

  for (guint i = 0; i < remote->n_tasks; i++)
    sum += remote_work (i);
  return sum;
}

/* The main loop side */

static void job_done (Job *job);

static void
on_remote_done (GObject      *source,
                GAsyncResult *result,
                gpointer      user_data)
{
  Remote *remote = user_data;
  WsTask *task = WS_TASK (source);
  g_autoptr(GError) error = NULL;
  guint64 value;

  if (!ws_task_wait_finish (task, result, &error))
    {
      if (remote->job.error == NULL)
        remote->job.error = g_steal_pointer (&error);
    }
  else if (!get_uint64 (task, &value))
    {
      if (remote->job.error == NULL)
        remote->job.error = g_error_new_literal (G_IO_ERROR, G_IO_ERROR_FAILED,
                                                 "a remote task has no result");
    }
  else
    remote->job.result += value;

  if (++remote->n_done == remote->n_tasks)
    job_done (&remote->job);
}

static gboolean
spawn_remote_batch (gpointer user_data)
{
  Remote *remote = user_data;
  Demo *demo = remote->job.demo;
  guint end = MIN (remote->n_spawned + REMOTE_BATCH, remote->n_tasks);

  for (; remote->n_spawned < end; remote->n_spawned++)
    {
      RemoteWork *work = g_new (RemoteWork, 1);
      g_autoptr(WsTask) task = NULL;

      work->demo = demo;
      work->index = remote->n_spawned;
      task = ws_runtime_spawn (demo->runtime, remote_poll, work, g_free);
      /* The wait holds a reference to the task until it calls back. */
      ws_task_wait_async (task, NULL, on_remote_done, remote);
    }

  return remote->n_spawned < remote->n_tasks ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

static gdouble
seconds_since (Demo   *demo,
               gint64  time)
{
  return (time - demo->start_time) / (gdouble) G_USEC_PER_SEC;
}

/* Erases the progress line on a terminal, so that other output can go
 * where it was. */
static void
clear_progress (Demo *demo)
{
  if (demo->is_tty)
    g_print ("\r\033[K");
}

static void
print_progress (Demo     *demo,
                gboolean  final)
{
  guint finished = g_atomic_int_get (&demo->finished_tasks);
  gdouble fraction = demo->expected_tasks > 0 ? (gdouble) finished / demo->expected_tasks : 1.0;
  gdouble elapsed = seconds_since (demo, g_get_monotonic_time ());

  fraction = CLAMP (fraction, 0.0, 1.0);

  if (demo->is_tty)
    {
      char bar[31];
      guint filled = (guint) (fraction * 30 + 0.5);

      memset (bar, '#', filled);
      memset (bar + filled, '.', 30 - filled);
      bar[30] = '\0';
      g_print ("\r\033[K%-11s %6.1f s  [%s] %9u / %u tasks%s", demo->phase,
               elapsed, bar, finished, demo->expected_tasks, final ? "\n" : "");
    }
  else
    {
      g_print ("%-11s %6.1f s  %9u / %u tasks (%3.0f%%)\n", demo->phase,
               elapsed, finished, demo->expected_tasks, fraction * 100);
    }
}

static gboolean
on_progress_tick (gpointer user_data)
{
  Demo *demo = user_data;

  demo->ticks++;
  if (demo->is_tty || demo->ticks % PLAIN_PROGRESS_EVERY == 0)
    print_progress (demo, FALSE);
  return G_SOURCE_CONTINUE;
}

static void
job_done (Job *job)
{
  Demo *demo = job->demo;

  job->end_time = g_get_monotonic_time ();

  if (!demo->quiet)
    {
      clear_progress (demo);
      if (job->error != NULL)
        g_print ("  %-9s failed after %.2f s: %s\n",
                 job->name, seconds_since (demo, job->end_time), job->error->message);
      else
        g_print ("  %-9s done in %.2f s\n", job->name, seconds_since (demo, job->end_time));
    }
  if (--demo->jobs_running == 0)
    g_main_loop_quit (demo->loop);
  else if (demo->is_tty && !demo->quiet)
    print_progress (demo, FALSE);
}

static void
on_root_done (GObject      *source,
              GAsyncResult *result,
              gpointer      user_data)
{
  Job *job = user_data;
  WsTask *task = WS_TASK (source);

  if (ws_task_wait_finish (task, result, &job->error) &&
      !get_uint64 (task, &job->result))
    job->error = g_error_new (G_IO_ERROR, G_IO_ERROR_FAILED,
                              "the %s root task has no result", job->name);
  job_done (job);
}

/* Spawns a root task from the main thread and waits for it on the loop. */
static void
start_root (Job            *job,
            WsTaskFunc      func,
            gpointer        user_data,
            GDestroyNotify  destroy)
{
  g_autoptr(WsTask) root = ws_runtime_spawn (job->demo->runtime, func, user_data, destroy);

  job->demo->jobs_running++;
  ws_task_wait_async (root, NULL, on_root_done, job);
}

/* The same workload on a GThreadPool */

/* A job for the pool: one function pointer, so that one GThreadPool runs
 * every kind of job. */
typedef struct _PoolJob PoolJob;
struct _PoolJob
{
  void (*run) (PoolJob *job,
               Demo    *demo);
};

static void
pool_func (gpointer data,
           gpointer user_data)
{
  PoolJob *job = data;

  job->run (job, user_data);
}

static void
pool_push (Demo    *demo,
           PoolJob *job)
{
  g_thread_pool_push (demo->pool.pool, job, NULL);
}

static gboolean
pool_job_done_idle (gpointer user_data)
{
  job_done (user_data);
  return G_SOURCE_REMOVE;
}

/* From a pool thread: tells the main loop that a workload has ended. */
static void
pool_job_done (Job *job)
{
  g_idle_add (pool_job_done_idle, job);
}

/* One of @n_parts parts of @job ended: the last one sums every part's
 * result and ends the workload, counted as one more finished task (as
 * the wsrt root task is). */
static void
pool_part_done (Demo          *demo,
                Job           *job,
                gint          *parts_left,
                const guint64 *part_results,
                guint          n_parts)
{
  if (!g_atomic_int_dec_and_test (parts_left))
    return;
  for (guint i = 0; i < n_parts; i++)
    job->result += part_results[i];
  task_finished (demo);
  pool_job_done (job);
}

/* Fork-join without awaiting: a node that forks ends its run at once; the
 * second of its halves to end completes it (and so on up the tree). */
typedef struct _PoolFib PoolFib;
struct _PoolFib
{
  PoolJob  job;
  PoolFib *parent;
  guint    slot;        /* which half of the parent this is */
  guint    n;
  gint     pending;     /* atomic: halves still running */
  guint64  halves[2];
};

static void pool_fib_run (PoolJob *job, Demo *demo);

static PoolFib *
pool_fib_new (PoolFib *parent,
              guint    slot,
              guint    n)
{
  PoolFib *node = g_new0 (PoolFib, 1);

  node->job.run = pool_fib_run;
  node->parent = parent;
  node->slot = slot;
  node->n = n;
  return node;
}

static void
pool_fib_complete (PoolFib *node,
                   guint64  value,
                   Demo    *demo)
{
  for (;;)
    {
      PoolFib *parent = node->parent;
      guint slot = node->slot;

      g_free (node);
      task_finished (demo);
      if (parent == NULL)
        {
          demo->pool.forkjoin.result = value;
          pool_job_done (&demo->pool.forkjoin);
          return;
        }

      /* The decrement is a full barrier: the half that reaches zero sees
       * the other half's value. */
      parent->halves[slot] = value;
      if (!g_atomic_int_dec_and_test (&parent->pending))
        return;
      node = parent;
      value = parent->halves[0] + parent->halves[1];
    }
}

static void
pool_fib_run (PoolJob *job,
              Demo    *demo)
{
  PoolFib *self = (PoolFib *) job;

  if (self->n < FIB_CUTOFF)
    {
      pool_fib_complete (self, fib_serial (self->n), demo);
      return;
    }
  g_atomic_int_set (&self->pending, 2);
  pool_push (demo, &pool_fib_new (self, 1, self->n - 2)->job);
  pool_push (demo, &pool_fib_new (self, 0, self->n - 1)->job);
}

/* Chains: a link pushes the next one. */
typedef struct
{
  PoolJob job;
  guint   chain;
  guint   link;
  guint64 checksum;
} PoolLink;

static void
pool_link_run (PoolJob *job,
               Demo    *demo)
{
  PoolLink *self = (PoolLink *) job;
  PoolRun *pool = &demo->pool;
  guint64 checksum = chain_step (self->checksum, self->link);

  task_finished (demo);
  if (self->link < demo->chains.depth)
    {
      /* A new job per link, as the wsrt chains allocate a ChainLink. */
      PoolLink *next = g_new (PoolLink, 1);

      next->job.run = pool_link_run;
      next->chain = self->chain;
      next->link = self->link + 1;
      next->checksum = checksum;
      g_free (self);
      pool_push (demo, &next->job);
      return;
    }

  pool->chain_checksums[self->chain] = checksum;
  g_free (self);
  pool_part_done (demo, &pool->chains, &pool->chains_left,
                  pool->chain_checksums, demo->chains.n_chains);
}

/* Yields: a yield is a push to the back of the pool's queue. */
typedef struct
{
  PoolJob job;
  guint   index;
  guint   polls;
  guint64 acc;
} PoolYielder;

static void
pool_yielder_run (PoolJob *job,
                  Demo    *demo)
{
  PoolYielder *self = (PoolYielder *) job;
  PoolRun *pool = &demo->pool;

  self->acc = yielder_step (self->acc, self->polls);
  if (self->polls++ < YIELDS_PER_TASK)
    {
      pool_push (demo, &self->job);
      return;
    }

  pool->yielder_accs[self->index] = self->acc;
  g_free (self);
  task_finished (demo);
  pool_part_done (demo, &pool->yields, &pool->yielders_left,
                  pool->yielder_accs, demo->yields.n_tasks);
}

/* Remote: pushed from the main loop; each result comes back to it in an
 * idle source. */
typedef struct
{
  PoolJob  job;
  guint    index;
  guint64  result;
  Demo    *demo;
} PoolRemote;

static gboolean
pool_remote_done_idle (gpointer user_data)
{
  PoolRemote *self = user_data;
  PoolRun *pool = &self->demo->pool;

  pool->remote.result += self->result;
  if (++pool->remote_done == self->demo->remote.n_tasks)
    job_done (&pool->remote);
  g_free (self);
  return G_SOURCE_REMOVE;
}

static void
pool_remote_run (PoolJob *job,
                 Demo    *demo)
{
  PoolRemote *self = (PoolRemote *) job;

  self->result = remote_work (self->index);
  task_finished (demo);
  g_idle_add (pool_remote_done_idle, self);
}

static gboolean
pool_spawn_remote_batch (gpointer user_data)
{
  Demo *demo = user_data;
  PoolRun *pool = &demo->pool;
  guint end = MIN (pool->remote_spawned + REMOTE_BATCH, demo->remote.n_tasks);

  for (; pool->remote_spawned < end; pool->remote_spawned++)
    {
      PoolRemote *work = g_new0 (PoolRemote, 1);

      work->job.run = pool_remote_run;
      work->index = pool->remote_spawned;
      work->demo = demo;
      pool_push (demo, &work->job);
    }

  return pool->remote_spawned < demo->remote.n_tasks ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

/* Runs the enabled workloads on a GThreadPool of @n_threads; returns the
 * wall time in seconds, or a negative number if the pool cannot start. */
static gdouble
run_on_gthreadpool (Demo  *demo,
                    guint  n_threads)
{
  PoolRun *pool = &demo->pool;
  g_autoptr(GError) error = NULL;
  guint progress_id;
  gint64 end_time;

  pool->forkjoin.name = "forkjoin";
  pool->chains.name = "chains";
  pool->yields.name = "yields";
  pool->remote.name = "remote";
  pool->forkjoin.demo = pool->chains.demo = pool->yields.demo = pool->remote.demo = demo;

  pool->pool = g_thread_pool_new (pool_func, demo, n_threads, TRUE, &error);
  if (pool->pool == NULL)
    {
      g_printerr ("wsrt-demo: cannot start a GThreadPool: %s\n", error->message);
      return -1;
    }

  demo->phase = "GThreadPool";
  demo->quiet = TRUE;
  demo->jobs_running = 0;
  g_atomic_int_set (&demo->finished_tasks, 0);
  demo->ticks = 0;
  demo->start_time = g_get_monotonic_time ();

  if (demo->forkjoin.job.enabled)
    {
      demo->jobs_running++;
      pool_push (demo, &pool_fib_new (NULL, 0, demo->forkjoin.n)->job);
    }
  if (demo->chains.job.enabled)
    {
      demo->jobs_running++;
      pool->chain_checksums = g_new0 (guint64, demo->chains.n_chains);
      g_atomic_int_set (&pool->chains_left, demo->chains.n_chains);
      for (guint i = 0; i < demo->chains.n_chains; i++)
        {
          PoolLink *head = g_new0 (PoolLink, 1);

          head->job.run = pool_link_run;
          head->chain = i;
          head->link = 1;
          head->checksum = chain_seed (i);
          pool_push (demo, &head->job);
        }
    }
  if (demo->yields.job.enabled)
    {
      demo->jobs_running++;
      pool->yielder_accs = g_new0 (guint64, demo->yields.n_tasks);
      g_atomic_int_set (&pool->yielders_left, demo->yields.n_tasks);
      for (guint i = 0; i < demo->yields.n_tasks; i++)
        {
          PoolYielder *y = g_new0 (PoolYielder, 1);

          y->job.run = pool_yielder_run;
          y->index = i;
          y->acc = i;
          pool_push (demo, &y->job);
        }
    }
  if (demo->remote.job.enabled)
    {
      demo->jobs_running++;
      if (pool_spawn_remote_batch (demo) == G_SOURCE_CONTINUE)
        g_timeout_add (1, pool_spawn_remote_batch, demo);
    }

  progress_id = g_timeout_add (PROGRESS_INTERVAL_MS, on_progress_tick, demo);
  print_progress (demo, FALSE);
  g_main_loop_run (demo->loop);
  end_time = g_get_monotonic_time ();
  g_source_remove (progress_id);
  print_progress (demo, TRUE);

  /* Every job has ended: the pool is idle. */
  g_thread_pool_free (pool->pool, FALSE, TRUE);
  pool->pool = NULL;
  return seconds_since (demo, end_time);
}

/* Whether every worker has gone to sleep. A worker adds its busy time to
 * the metrics when it parks, so a snapshot taken while one still runs (or
 * searches for work) shows less than it did. */
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
  Demo *demo = user_data;

  if (all_workers_parked (demo->runtime) ||
      ++demo->settle_ticks * SETTLE_INTERVAL_MS >= SETTLE_TIMEOUT_MS)
    {
      g_main_loop_quit (demo->loop);
      return G_SOURCE_REMOVE;
    }
  return G_SOURCE_CONTINUE;
}

/* How the work spread over the workers, from the metrics. */
static void
print_balance (WsMetrics *metrics)
{
  guint n_workers = ws_metrics_get_n_workers (metrics);
  guint64 polls = 0, steals = 0, steal_ops = 0, overflows = 0;
  g_autoptr(GString) shares = g_string_new (NULL);

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

  g_print ("moved between workers: %" G_GUINT64_FORMAT " tasks stolen (steal "
           "operations: %" G_GUINT64_FORMAT "), %" G_GUINT64_FORMAT
           " queue overflows into the injection queue\n",
           steals, steal_ops, overflows);
  g_print ("share of polls per worker: %s\n", shares->str);
}

/* Checks one workload; prints a line and returns FALSE if it went wrong. */
static gboolean
check_job (Job     *job,
           guint64  expected)
{
  if (job->error != NULL)
    {
      g_printerr ("wsrt-demo: %s failed: %s\n", job->name, job->error->message);
      return FALSE;
    }
  if (job->result != expected)
    {
      g_printerr ("wsrt-demo: %s computed %" G_GUINT64_FORMAT
                  ", expected %" G_GUINT64_FORMAT "\n",
                  job->name, job->result, expected);
      return FALSE;
    }

  g_print ("  %-9s %" G_GUINT64_FORMAT " ok\n", job->name, job->result);
  return TRUE;
}

static gboolean
parse_workload (const gchar  *name,
                Demo         *demo,
                GError      **error)
{
  gboolean all = name == NULL || g_str_equal (name, "all");

  demo->forkjoin.job.enabled = all || g_str_equal (name, "forkjoin");
  demo->chains.job.enabled = all || g_str_equal (name, "chains");
  demo->yields.job.enabled = all || g_str_equal (name, "yields");
  demo->remote.job.enabled = all || g_str_equal (name, "remote");

  if (!demo->forkjoin.job.enabled && !demo->chains.job.enabled &&
      !demo->yields.job.enabled && !demo->remote.job.enabled)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "Unknown workload “%s”: use all, forkjoin, chains, yields or remote",
                   name);
      return FALSE;
    }
  return TRUE;
}

/* Sizes every workload from the scale given with --tasks. */
static void
size_workloads (Demo  *demo,
                guint  scale)
{
  demo->forkjoin.job.name = "forkjoin";
  demo->chains.job.name = "chains";
  demo->yields.job.name = "yields";
  demo->remote.job.name = "remote";
  demo->forkjoin.job.demo = demo->chains.job.demo = demo;
  demo->yields.job.demo = demo->remote.job.demo = demo;

  /* The smallest fib (n) that takes at least @scale / 2 tasks (the count
   * grows by a factor of 1.6 from one n to the next). */
  demo->forkjoin.n = FIB_CUTOFF;
  while (fib_count_tasks (demo->forkjoin.n) < scale / 2)
    demo->forkjoin.n++;
  demo->forkjoin.n_tasks = fib_count_tasks (demo->forkjoin.n);

  demo->chains.depth = MIN (CHAIN_DEPTH, scale);
  demo->chains.n_chains = MAX (1, scale / demo->chains.depth);

  demo->yields.n_tasks = MAX (1, scale / (YIELDS_PER_TASK + 1));

  demo->remote.n_tasks = MAX (1, scale / REMOTE_SHARE);

  demo->expected_tasks = 0;
  if (demo->forkjoin.job.enabled)
    demo->expected_tasks += demo->forkjoin.n_tasks;
  if (demo->chains.job.enabled)
    demo->expected_tasks += demo->chains.n_chains * demo->chains.depth + 1;
  if (demo->yields.job.enabled)
    demo->expected_tasks += demo->yields.n_tasks + 1;
  if (demo->remote.job.enabled)
    demo->expected_tasks += demo->remote.n_tasks;
}

static void
print_plan (Demo *demo)
{
  g_print ("wsrt-demo: %u workers, %u tasks to run\n",
           ws_runtime_get_n_workers (demo->runtime), demo->expected_tasks);
  if (demo->forkjoin.job.enabled)
    g_print ("  %-9s fib(%u), serial below fib(%u): %u tasks\n",
             "forkjoin", demo->forkjoin.n, FIB_CUTOFF, demo->forkjoin.n_tasks);
  if (demo->chains.job.enabled)
    g_print ("  %-9s %u chains of %u detached links\n",
             "chains", demo->chains.n_chains, demo->chains.depth);
  if (demo->yields.job.enabled)
    g_print ("  %-9s %u tasks that yield %u times each\n",
             "yields", demo->yields.n_tasks, YIELDS_PER_TASK);
  if (demo->remote.job.enabled)
    g_print ("  %-9s %u tasks spawned from the main thread, %u per tick\n",
             "remote", demo->remote.n_tasks, REMOTE_BATCH);
  g_print ("\n");
}

static guint
max_workers (void)
{
  g_autoptr(GTypeClass) klass = g_type_class_ref (WS_TYPE_RUNTIME);
  GParamSpec *pspec = g_object_class_find_property (G_OBJECT_CLASS (klass), "n-workers");

  return G_PARAM_SPEC_UINT (pspec)->maximum;
}

int
main (int   argc,
      char *argv[])
{
  gint opt_workers = 0;
  gboolean opt_no_gthreadpool = FALSE;
  gint opt_tasks = DEFAULT_TASKS;
  g_autofree gchar *opt_workload = NULL;
  const GOptionEntry entries[] = {
    { "workers", 'w', 0, G_OPTION_ARG_INT, &opt_workers,
      "Worker threads (default: 0, one per CPU)", "N" },
    { "tasks", 't', 0, G_OPTION_ARG_INT, &opt_tasks,
      "Scale: about N tasks per workload (default: 500000)", "N" },
    { "workload", 'l', 0, G_OPTION_ARG_STRING, &opt_workload,
      "all, forkjoin, chains, yields or remote (default: all)", "NAME" },
    { "no-gthreadpool", 0, 0, G_OPTION_ARG_NONE, &opt_no_gthreadpool,
      "Do not run the same workload on a GThreadPool afterwards", NULL },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr(GOptionContext) option_context = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(WsRuntime) runtime = NULL;
  g_autoptr(GMainLoop) loop = NULL;
  g_autoptr(WsMetrics) metrics = NULL;
  g_autofree gchar *table = NULL;
  Demo demo = { 0, };
  gint64 end_time;
  guint progress_id;
  gboolean ok = TRUE;

  setlocale (LC_ALL, "");

  option_context = g_option_context_new ("- run a mixed workload on a wsrt runtime");
  g_option_context_set_summary (option_context,
                                "Runs fork-join, chained, yielding and remotely spawned tasks "
                                "at once,\nthen shows what each worker did: polls, steals, parks.");
  g_option_context_add_main_entries (option_context, entries, NULL);
  if (!g_option_context_parse (option_context, &argc, &argv, &error))
    {
      g_printerr ("wsrt-demo: %s\n", error->message);
      return 2;
    }
  if (opt_workers < 0 || (guint) opt_workers > max_workers ())
    {
      g_printerr ("wsrt-demo: --workers must be 0 (one per CPU) to %u\n", max_workers ());
      return 2;
    }
  if (opt_tasks < 1 || opt_tasks > MAX_TASKS)
    {
      g_printerr ("wsrt-demo: --tasks must be 1 to %d\n", MAX_TASKS);
      return 2;
    }
  if (!parse_workload (opt_workload, &demo, &error))
    {
      g_printerr ("wsrt-demo: %s\n", error->message);
      return 2;
    }

  runtime = g_initable_new (WS_TYPE_RUNTIME, NULL, &error,
                            "n-workers", (guint) opt_workers,
                            "thread-name-prefix", "demo",
                            NULL);
  if (runtime == NULL)
    {
      g_printerr ("wsrt-demo: cannot start the runtime: %s\n", error->message);
      return 1;
    }

  loop = g_main_loop_new (NULL, FALSE);
  demo.runtime = runtime;
  demo.loop = loop;
  demo.phase = "wsrt";
  demo.is_tty = isatty (STDOUT_FILENO);
  size_workloads (&demo, opt_tasks);
  print_plan (&demo);

  demo.start_time = g_get_monotonic_time ();

  /* Every root is a remote spawn (we are not on a worker); what they spawn
   * is spawned on the workers. */
  if (demo.forkjoin.job.enabled)
    start_root (&demo.forkjoin.job, fib_poll,
                fib_frame_new (&demo, demo.forkjoin.n), fib_frame_free);
  if (demo.chains.job.enabled)
    start_root (&demo.chains.job, chains_root_poll, &demo.chains, NULL);
  if (demo.yields.job.enabled)
    {
      YieldsRoot *root = g_new0 (YieldsRoot, 1);

      root->yields = &demo.yields;
      start_root (&demo.yields.job, yields_root_poll, root, yields_root_free);
    }
  if (demo.remote.job.enabled)
    {
      /* One batch now, the others from the main loop, one per ms. */
      demo.jobs_running++;
      if (spawn_remote_batch (&demo.remote) == G_SOURCE_CONTINUE)
        g_timeout_add (1, spawn_remote_batch, &demo.remote);
    }

  progress_id = g_timeout_add (PROGRESS_INTERVAL_MS, on_progress_tick, &demo);
  print_progress (&demo, FALSE);
  g_main_loop_run (loop);
  end_time = g_get_monotonic_time ();
  g_source_remove (progress_id);
  print_progress (&demo, TRUE);

  /* Let the workers go idle (a few ms) before the snapshot, so that their
   * busy time is complete. */
  if (!all_workers_parked (runtime))
    {
      g_timeout_add (SETTLE_INTERVAL_MS, on_settle_tick, &demo);
      g_main_loop_run (loop);
    }

  metrics = ws_runtime_get_metrics (runtime);
  table = ws_metrics_to_string (metrics);
  g_print ("\n%s", table);
  print_balance (metrics);
  g_print ("wall time: %.3f s\n\n", seconds_since (&demo, end_time));

  /* Check every result against a serial computation. */
  if (demo.forkjoin.job.enabled)
    ok &= check_job (&demo.forkjoin.job, fib_iterative (demo.forkjoin.n));
  if (demo.chains.job.enabled)
    ok &= check_job (&demo.chains.job, chains_expected (&demo.chains));
  if (demo.yields.job.enabled)
    ok &= check_job (&demo.yields.job, yields_expected (&demo.yields));
  if (demo.remote.job.enabled)
    ok &= check_job (&demo.remote.job, remote_expected (&demo.remote));

  /* The same workload on a GThreadPool, as many threads as workers. */
  if (!opt_no_gthreadpool)
    {
      guint n_threads = ws_runtime_get_n_workers (runtime);
      gdouble wsrt_time = seconds_since (&demo, end_time);
      gdouble pool_time;

      g_print ("\nthe same workload on a GThreadPool of %u threads:\n", n_threads);
      pool_time = run_on_gthreadpool (&demo, n_threads);
      if (pool_time < 0)
        ok = FALSE;
      else
        {
          gboolean pool_ok = TRUE;

          if (demo.forkjoin.job.enabled)
            pool_ok &= check_job (&demo.pool.forkjoin, demo.forkjoin.job.result);
          if (demo.chains.job.enabled)
            pool_ok &= check_job (&demo.pool.chains, demo.chains.job.result);
          if (demo.yields.job.enabled)
            pool_ok &= check_job (&demo.pool.yields, demo.yields.job.result);
          if (demo.remote.job.enabled)
            pool_ok &= check_job (&demo.pool.remote, demo.remote.job.result);
          ok &= pool_ok;
          g_print ("wsrt %.3f s, GThreadPool %.3f s (%u threads): wsrt took %.2f× "
                   "the GThreadPool time%s\n",
                   wsrt_time, pool_time, n_threads, wsrt_time / pool_time,
                   pool_ok ? "" : " (GThreadPool results WRONG)");
        }
      g_free (demo.pool.chain_checksums);
      g_free (demo.pool.yielder_accs);
    }

  if (!ws_runtime_shutdown (runtime, -1))
    {
      g_printerr ("wsrt-demo: the runtime did not shut down cleanly\n");
      ok = FALSE;
    }

  g_clear_pointer (&demo.chains.waker, ws_waker_unref);
  g_free (demo.chains.checksums);
  g_clear_error (&demo.forkjoin.job.error);
  g_clear_error (&demo.chains.job.error);
  g_clear_error (&demo.yields.job.error);
  g_clear_error (&demo.remote.job.error);

  if (!ok)
    {
      g_printerr ("wsrt-demo: FAILED\n");
      return 1;
    }
  g_print ("all results correct\n");
  return 0;
}
