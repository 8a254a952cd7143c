/* wsrt-demo-workloads.c: fork-join, chains, yields and remote spawns
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Four ways of using a WsRuntime, each a pattern to copy:
 *
 *  - forkjoin: a parallel fib (n). A task above the cutoff spawns its two
 *    halves with ws_context_spawn() and awaits both join handles with
 *    ws_join_handle_poll(), returning WS_POLL_PENDING until they are done.
 *    Results are plain integers (ws_context_return_uint64(),
 *    ws_join_handle_finish_uint64()): no GObject and no GValue per task.
 *    The right half is spawned first, so that the left half pushes it out
 *    of the worker's LIFO slot into its queue, where idle workers steal.
 *  - chains: tasks that each spawn the next link, detached
 *    (ws_runtime_spawn_detached()). The root keeps its waker
 *    (ws_context_get_waker()) and the last link of the last chain wakes it.
 *  - yields: tasks that give way with ws_context_yield() a number of times,
 *    going to the back of their worker's queue each time, collected in
 *    order by a root task.
 *  - remote: tasks spawned from the main thread, a batch per main loop
 *    tick, each with ws_runtime_spawn_with_callback(), which calls back on
 *    the main loop with the task's join handle: no GObject per task.
 *
 * Every task counts itself in finished_tasks as it ends, for a progress
 * display; every result is checked against a serial computation.
 */

#include <string.h>

#include "wsrt-demo-workloads.h"

#define CHAIN_WORK   64    /* mix rounds per link */
#define YIELD_WORK   64    /* mix rounds per poll of a yielder */
#define REMOTE_SHARE 4     /* remote tasks: the scale divided by this */
#define REMOTE_WORK  256   /* mix rounds per remote task */

static const gchar *const workload_names[DEMO_N_WORKLOADS] = {
  "forkjoin", "chains", "yields", "remote",
};

/* The arithmetic, shared with every implementation */

/* A few nanoseconds of work that the compiler cannot skip (splitmix64). */
static guint64
spin (guint64 x,
      guint   rounds)
{
  for (guint i = 0; i < rounds; i++)
    {
      x += G_GUINT64_CONSTANT (0x9e3779b97f4a7c15);
      x = (x ^ (x >> 30)) * G_GUINT64_CONSTANT (0xbf58476d1ce4e5b9);
      x = (x ^ (x >> 27)) * G_GUINT64_CONSTANT (0x94d049bb133111eb);
      x ^= x >> 31;
    }
  return x;
}

guint64
demo_fib_serial (guint n)
{
  return n < 2 ? n : demo_fib_serial (n - 1) + demo_fib_serial (n - 2);
}

guint64
demo_chain_seed (guint chain)
{
  return spin (chain, 1);
}

guint64
demo_chain_step (guint64 checksum,
                 guint   link)
{
  return spin (checksum ^ link, CHAIN_WORK);
}

guint64
demo_yielder_step (guint64 acc,
                   guint   poll)
{
  return spin (acc + poll, YIELD_WORK);
}

guint64
demo_remote_work (guint index)
{
  return spin (G_GUINT64_CONSTANT (0x5eed) + index, REMOTE_WORK);
}

void
demo_workloads_task_finished (DemoWorkloads *self)
{
  g_atomic_int_inc (&self->finished_tasks);
}

/* Completes the task with @result, counting it as finished. */
static WsPoll
return_uint64 (WsContext     *cx,
               DemoWorkloads *demo,
               guint64        result)
{
  ws_context_return_uint64 (cx, result);
  demo_workloads_task_finished (demo);
  return WS_POLL_READY;
}

/* Completes the task with an error, counting it as finished. */
static WsPoll
return_failure (WsContext     *cx,
                DemoWorkloads *demo,
                const gchar   *what)
{
  ws_context_return_error (cx, g_error_new (G_IO_ERROR, G_IO_ERROR_FAILED,
                                            "%s has no result", what));
  demo_workloads_task_finished (demo);
  return WS_POLL_READY;
}

/* The result of a task that has ended (a WsTask sees an integer result as
 * a G_TYPE_UINT64 value), or FALSE. */
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
  DemoWorkloads *demo;
  guint          n;
  WsJoinHandle  *left;    /* fib (n - 1) */
  WsJoinHandle  *right;   /* fib (n - 2) */
} FibFrame;

static WsPoll fib_poll (WsContext *cx, gpointer user_data);

/* A child's frame lives in the child's task (ws_context_spawn_with_state):
 * this clears what it holds, and wsrt frees it with the task. */
static void
fib_frame_clear (gpointer data)
{
  FibFrame *frame = data;

  g_clear_pointer (&frame->left, ws_join_handle_free);
  g_clear_pointer (&frame->right, ws_join_handle_free);
}

/* The root's frame, spawned from the main thread with a WsTask. */
static void
fib_frame_free (gpointer data)
{
  fib_frame_clear (data);
  g_free (data);
}

static WsJoinHandle *
fib_spawn (WsContext     *cx,
           DemoWorkloads *demo,
           guint          n)
{
  FibFrame child = { demo, n, NULL, NULL };

  return ws_context_spawn_with_state (cx, fib_poll, &child, sizeof child, fib_frame_clear);
}

static WsPoll
fib_poll (WsContext *cx,
          gpointer   user_data)
{
  FibFrame *frame = user_data;
  gboolean left_ready, right_ready;
  guint64 left, right;

  if (frame->n < DEMO_FIB_CUTOFF)
    return return_uint64 (cx, frame->demo, demo_fib_serial (frame->n));

  if (frame->left == NULL)
    {
      /* First poll: fork, on the runtime this task runs on. */
      frame->right = fib_spawn (cx, frame->demo, frame->n - 2);
      frame->left = fib_spawn (cx, frame->demo, frame->n - 1);
    }

  /* Join. Poll both, so that both know to wake us when they end. */
  left_ready = ws_join_handle_poll (frame->left, cx) == WS_POLL_READY;
  right_ready = ws_join_handle_poll (frame->right, cx) == WS_POLL_READY;
  if (!left_ready || !right_ready)
    return WS_POLL_PENDING;

  /* Finishing takes the result and frees the handle. */
  if (!ws_join_handle_finish_uint64 (g_steal_pointer (&frame->left), &left, NULL)
      || !ws_join_handle_finish_uint64 (g_steal_pointer (&frame->right), &right, NULL))
    return return_failure (cx, frame->demo, "a half of fib");
  return return_uint64 (cx, frame->demo, left + right);
}

/* Chains: detached links and a waker */

typedef struct
{
  DemoWorkloads *demo;
  WsRuntime     *runtime;      /* not owned: it outlives its tasks */
  WsWaker       *waker;        /* the root's, taken by the last link */
  gint           chains_left;  /* atomic */
  gint           done;         /* atomic: the last link is done with us */
  guint64       *checksums;    /* one per chain, from its last link */
} Chains;

typedef struct
{
  Chains  *chains;
  guint    chain;
  guint    link;        /* 1 to chain_depth */
  guint64  checksum;    /* carried down the chain */
} ChainLink;

static void
chains_free (gpointer data)
{
  Chains *chains = data;

  g_clear_pointer (&chains->waker, ws_waker_unref);
  g_free (chains->checksums);
  g_free (chains);
}

static WsPoll chain_link_poll (WsContext *cx, gpointer user_data);

static void
spawn_link (Chains  *chains,
            guint    chain,
            guint    link,
            guint64  checksum)
{
  ChainLink next = { chains, chain, link, checksum };

  /* Detached: nobody awaits a link, it reports through @chains. The link
   * is kept in its task. */
  ws_runtime_spawn_detached_with_state (chains->runtime, chain_link_poll, &next, sizeof next,
                                        NULL);
}

static WsPoll
chain_link_poll (WsContext *cx,
                 gpointer   user_data)
{
  ChainLink *self = user_data;
  Chains *chains = self->chains;
  guint64 checksum = demo_chain_step (self->checksum, self->link);
  g_autoptr(WsWaker) waker = NULL;

  demo_workloads_task_finished (chains->demo);
  if (self->link < chains->demo->chain_depth)
    {
      spawn_link (chains, self->chain, self->link + 1, checksum);
      return WS_POLL_READY;
    }

  chains->checksums[self->chain] = checksum;
  if (!g_atomic_int_dec_and_test (&chains->chains_left))
    return WS_POLL_READY;

  /* The last link of the last chain: take the root's waker, then tell the
   * root it may end (and free @chains), then wake it. */
  waker = g_steal_pointer (&chains->waker);
  g_atomic_int_set (&chains->done, TRUE);
  ws_waker_wake (waker);
  return WS_POLL_READY;
}

static WsPoll
chains_root_poll (WsContext *cx,
                  gpointer   user_data)
{
  Chains *chains = user_data;
  DemoWorkloads *demo = chains->demo;
  guint64 sum = 0;

  if (chains->checksums == NULL)
    {
      /* First poll: keep our waker, then start every chain. */
      chains->checksums = g_new0 (guint64, demo->n_chains);
      chains->waker = ws_context_get_waker (cx);
      g_atomic_int_set (&chains->chains_left, demo->n_chains);
      for (guint i = 0; i < demo->n_chains; i++)
        spawn_link (chains, i, 1, demo_chain_seed (i));
    }

  if (!g_atomic_int_get (&chains->done))
    return WS_POLL_PENDING;

  for (guint i = 0; i < demo->n_chains; i++)
    sum += chains->checksums[i];
  return return_uint64 (cx, demo, sum);
}

/* Yields */

typedef struct
{
  DemoWorkloads *demo;
  guint          polls;
  guint64        acc;
} Yielder;

typedef struct
{
  DemoWorkloads *demo;
  WsRuntime     *runtime;
  WsTask       **tasks;
  guint          next;      /* the first yielder not yet collected */
  guint64        sum;
} YieldsRoot;

static WsPoll
yielder_poll (WsContext *cx,
              gpointer   user_data)
{
  Yielder *self = user_data;

  self->acc = demo_yielder_step (self->acc, self->polls);
  if (self->polls++ < DEMO_YIELDS_PER_TASK)
    return ws_context_yield (cx);   /* to the back of the queue */

  return return_uint64 (cx, self->demo, self->acc);
}

static void
yields_root_free (gpointer data)
{
  YieldsRoot *root = data;

  for (guint i = 0; root->tasks != NULL && i < root->demo->n_yielders; i++)
    g_clear_object (&root->tasks[i]);
  g_free (root->tasks);
  g_free (root);
}

static WsPoll
yields_root_poll (WsContext *cx,
                  gpointer   user_data)
{
  YieldsRoot *root = user_data;
  DemoWorkloads *demo = root->demo;

  if (root->tasks == NULL)
    {
      root->tasks = g_new0 (WsTask *, demo->n_yielders);
      for (guint i = 0; i < demo->n_yielders; i++)
        {
          Yielder *y = g_new0 (Yielder, 1);

          y->demo = demo;
          y->acc = i;
          /* From a worker, ws_runtime_spawn() is a local spawn too. */
          root->tasks[i] = ws_runtime_spawn (root->runtime, yielder_poll, y, g_free);
        }
    }

  /* Collect in order; the first one still running wakes us when it ends. */
  for (; root->next < demo->n_yielders; root->next++)
    {
      WsTask *task = root->tasks[root->next];
      guint64 acc;

      if (ws_task_poll (task, cx) == WS_POLL_PENDING)
        return WS_POLL_PENDING;
      if (!get_uint64 (task, &acc))
        return return_failure (cx, demo, "a yielder");
      root->sum += acc;
      g_clear_object (&root->tasks[root->next]);
    }

  return return_uint64 (cx, demo, root->sum);
}

/* Remote spawns from the main thread */

typedef struct
{
  DemoWorkloads *demo;
  WsRuntime     *runtime;
  guint          n_spawned;   /* main thread only, like all of Remote */
  guint          n_done;
} Remote;

typedef struct
{
  DemoWorkloads *demo;
  guint          index;
} RemoteWork;

static WsPoll
remote_poll (WsContext *cx,
             gpointer   user_data)
{
  RemoteWork *work = user_data;

  return return_uint64 (cx, work->demo, demo_remote_work (work->index));
}

/* On the main loop: one remote task has ended. The callback owns @handle;
 * taking its result frees it. */
static void
on_remote_done (WsJoinHandle *handle,
                gpointer      user_data)
{
  Remote *remote = user_data;
  DemoJob *job = &remote->demo->jobs[DEMO_REMOTE];
  g_autoptr(GError) error = NULL;
  guint64 value;

  if (!ws_join_handle_finish_uint64 (handle, &value, &error))
    g_prefix_error (&error, "a remote task: ");
  else
    job->result += value;

  if (error != NULL && job->error == NULL)
    job->error = g_steal_pointer (&error);
  if (++remote->n_done == remote->demo->n_remote)
    {
      g_free (remote);
      demo_job_done (job);
    }
}

/* A GSourceFunc: spawns the next batch, until all are spawned. */
static gboolean
spawn_remote_batch (gpointer user_data)
{
  Remote *remote = user_data;
  guint end = MIN (remote->n_spawned + DEMO_REMOTE_BATCH, remote->demo->n_remote);

  for (; remote->n_spawned < end; remote->n_spawned++)
    {
      RemoteWork *work = g_new (RemoteWork, 1);

      work->demo = remote->demo;
      work->index = remote->n_spawned;
      /* The callback runs on this thread's default main context, the
       * loop this function runs on; a refused spawn (the runtime shut
       * down) still calls it, with an error. */
      ws_runtime_spawn_with_callback (remote->runtime, remote_poll, work, g_free,
                                      on_remote_done, remote);
    }

  return remote->n_spawned < remote->demo->n_remote ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

/* Starting a run and waiting for it */

/* On the main loop: a root task has ended. */
static void
on_root_done (GObject      *source,
              GAsyncResult *result,
              gpointer      user_data)
{
  DemoJob *job = user_data;
  WsTask *task = WS_TASK (source);

  if (ws_task_wait_finish (task, result, &job->error) &&
      !get_uint64 (task, &job->result))
    job->error = g_error_new (G_IO_ERROR, G_IO_ERROR_FAILED,
                              "the %s root task has no result", job->name);
  demo_job_done (job);
}

/* Spawns a root task from the main thread and awaits it on the loop. */
static void
start_root (DemoJob        *job,
            WsRuntime      *runtime,
            WsTaskFunc      func,
            gpointer        user_data,
            GDestroyNotify  destroy)
{
  g_autoptr(WsTask) root = ws_runtime_spawn (runtime, func, user_data, destroy);

  ws_task_wait_async (root, NULL, on_root_done, job);
}

void
demo_workloads_start (DemoWorkloads *self,
                      WsRuntime     *runtime)
{
  demo_workloads_reset (self);

  /* We are not on a worker: the roots are remote spawns. What they spawn
   * is spawned on the workers. */
  if (self->jobs[DEMO_FORKJOIN].enabled)
    {
      FibFrame *root = g_new0 (FibFrame, 1);

      root->demo = self;
      root->n = self->fib_n;
      start_root (&self->jobs[DEMO_FORKJOIN], runtime, fib_poll, root, fib_frame_free);
    }
  if (self->jobs[DEMO_CHAINS].enabled)
    {
      Chains *chains = g_new0 (Chains, 1);

      chains->demo = self;
      chains->runtime = runtime;
      start_root (&self->jobs[DEMO_CHAINS], runtime, chains_root_poll, chains, chains_free);
    }
  if (self->jobs[DEMO_YIELDS].enabled)
    {
      YieldsRoot *root = g_new0 (YieldsRoot, 1);

      root->demo = self;
      root->runtime = runtime;
      start_root (&self->jobs[DEMO_YIELDS], runtime, yields_root_poll, root, yields_root_free);
    }
  if (self->jobs[DEMO_REMOTE].enabled)
    {
      Remote *remote = g_new0 (Remote, 1);

      remote->demo = self;
      remote->runtime = runtime;
      /* One batch now, the others from the main loop, one per ms. */
      if (spawn_remote_batch (remote))
        g_timeout_add (1, spawn_remote_batch, remote);
    }
}

/* Clears the results and counts the enabled jobs as running. */
void
demo_workloads_reset (DemoWorkloads *self)
{
  self->jobs_running = 0;
  for (guint i = 0; i < DEMO_N_WORKLOADS; i++)
    {
      self->jobs[i].result = 0;
      self->jobs[i].end_time = 0;
      g_clear_error (&self->jobs[i].error);
      self->jobs_running += self->jobs[i].enabled;
    }
  g_atomic_int_set (&self->finished_tasks, 0);
  self->start_time = g_get_monotonic_time ();
}

/* On the main thread: @job has ended. */
void
demo_job_done (DemoJob *job)
{
  job->end_time = g_get_monotonic_time ();
  if (--job->owner->jobs_running == 0)
    g_main_loop_quit (job->owner->loop);
}

/* Runs the main loop until every job has ended; returns the seconds since
 * the start. */
gdouble
demo_workloads_wait (DemoWorkloads *self)
{
  if (self->jobs_running > 0)
    g_main_loop_run (self->loop);
  return (g_get_monotonic_time () - self->start_time) / (gdouble) G_USEC_PER_SEC;
}

/* Sizes and checks */

/* How many tasks fib_poll() runs for fib (n). */
static guint
fib_count_tasks (guint n)
{
  guint64 below = 1, here = 1;   /* tasks for fib (i - 2) and fib (i - 1) */

  for (guint i = DEMO_FIB_CUTOFF; i <= n; i++)
    {
      guint64 next = 1 + here + below;

      below = here;
      here = MIN (next, G_MAXUINT);
    }
  return here;
}

/* Enables @workload ("all" or NULL for every one) and sizes each from
 * @scale, about that many tasks per workload. */
gboolean
demo_workloads_init (DemoWorkloads  *self,
                     const gchar    *workload,
                     guint           scale,
                     GError        **error)
{
  gboolean all = workload == NULL || g_str_equal (workload, "all");
  guint n_enabled = 0;

  memset (self, 0, sizeof *self);
  for (guint i = 0; i < DEMO_N_WORKLOADS; i++)
    {
      self->jobs[i].owner = self;
      self->jobs[i].name = workload_names[i];
      self->jobs[i].enabled = all || g_str_equal (workload, workload_names[i]);
      n_enabled += self->jobs[i].enabled;
    }
  if (n_enabled == 0)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "Unknown workload “%s”: use all, forkjoin, chains, yields or remote",
                   workload);
      return FALSE;
    }

  /* The smallest fib (n) that takes at least @scale / 2 tasks. */
  for (self->fib_n = DEMO_FIB_CUTOFF; fib_count_tasks (self->fib_n) < scale / 2; self->fib_n++)
    ;
  self->fib_tasks = fib_count_tasks (self->fib_n);
  self->chain_depth = MIN (DEMO_CHAIN_DEPTH, scale);
  self->n_chains = MAX (1, scale / self->chain_depth);
  self->n_yielders = MAX (1, scale / (DEMO_YIELDS_PER_TASK + 1));
  self->n_remote = MAX (1, scale / REMOTE_SHARE);

  /* The roots of chains and yields count as tasks too. */
  self->n_tasks = (self->jobs[DEMO_FORKJOIN].enabled ? self->fib_tasks : 0) +
                  (self->jobs[DEMO_CHAINS].enabled ? self->n_chains * self->chain_depth + 1 : 0) +
                  (self->jobs[DEMO_YIELDS].enabled ? self->n_yielders + 1 : 0) +
                  (self->jobs[DEMO_REMOTE].enabled ? self->n_remote : 0);
  self->loop = g_main_loop_new (NULL, FALSE);
  return TRUE;
}

void
demo_workloads_clear (DemoWorkloads *self)
{
  for (guint i = 0; i < DEMO_N_WORKLOADS; i++)
    g_clear_error (&self->jobs[i].error);
  g_clear_pointer (&self->loop, g_main_loop_unref);
}

/* Every result, computed serially. */
static void
compute_expected (DemoWorkloads *self)
{
  guint64 a = 0, b = 1;

  for (guint i = 0; i < self->fib_n; i++)
    {
      guint64 next = a + b;

      a = b;
      b = next;
    }
  self->expected[DEMO_FORKJOIN] = a;

  for (guint i = 0; i < self->n_chains; i++)
    {
      guint64 checksum = demo_chain_seed (i);

      for (guint link = 1; link <= self->chain_depth; link++)
        checksum = demo_chain_step (checksum, link);
      self->expected[DEMO_CHAINS] += checksum;
    }

  for (guint i = 0; i < self->n_yielders; i++)
    {
      guint64 acc = i;

      for (guint poll = 0; poll <= DEMO_YIELDS_PER_TASK; poll++)
        acc = demo_yielder_step (acc, poll);
      self->expected[DEMO_YIELDS] += acc;
    }

  for (guint i = 0; i < self->n_remote; i++)
    self->expected[DEMO_REMOTE] += demo_remote_work (i);
  self->have_expected = TRUE;
}

/* Checks each enabled job's result (printing it if @verbose); FALSE, with
 * a message on stderr, if one is wrong or failed. */
gboolean
demo_workloads_check (DemoWorkloads *self,
                      gboolean       verbose)
{
  gboolean ok = TRUE;

  if (!self->have_expected)
    compute_expected (self);

  for (guint i = 0; i < DEMO_N_WORKLOADS; i++)
    {
      DemoJob *job = &self->jobs[i];

      if (!job->enabled)
        continue;
      if (job->error != NULL)
        g_printerr ("%s: %s failed: %s\n", g_get_prgname (), job->name, job->error->message);
      else if (job->result != self->expected[i])
        g_printerr ("%s: %s computed %" G_GUINT64_FORMAT ", expected %" G_GUINT64_FORMAT "\n",
                    g_get_prgname (), job->name, job->result, self->expected[i]);
      else if (verbose)
        g_print ("  %-9s %20" G_GUINT64_FORMAT " ok, done in %.2f s\n", job->name, job->result,
                 (job->end_time - self->start_time) / (gdouble) G_USEC_PER_SEC);
      ok &= job->error == NULL && job->result == self->expected[i];
    }
  return ok;
}
