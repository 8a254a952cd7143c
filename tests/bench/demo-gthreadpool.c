/* demo-gthreadpool.c: wsrt-demo's workloads on a GThreadPool
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The four workloads of examples/wsrt-demo-workloads.c, with the same
 * arithmetic and the same results, written the way a GThreadPool program
 * has to write them: a job runs to completion, so a join is a counter
 * that the last half decrements, a yield pushes the job back to the end
 * of the pool's queue, and a result for the main loop travels in an idle
 * source. One pool runs every kind of job: each carries its function.
 *
 * bench-demo.c times this against the wsrt version; wsrt-demo runs it
 * once after its own run and prints the ratio.
 */

#include "demo-gthreadpool.h"

typedef struct _PoolJob PoolJob;
typedef struct _PoolRun PoolRun;

struct _PoolJob
{
  void (*run) (PoolJob *job,
               PoolRun *run);
};

struct _PoolRun
{
  DemoWorkloads *demo;
  GThreadPool   *pool;
  gint           chains_left;      /* atomic */
  guint64       *chain_checksums;  /* one per chain, from its last link */
  gint           yielders_left;    /* atomic */
  guint64       *yielder_accs;     /* one per yielder, from its last run */
  guint          remote_spawned;   /* main thread only */
  guint          remote_done;
};

static void
pool_func (gpointer data,
           gpointer user_data)
{
  PoolJob *job = data;

  job->run (job, user_data);
}

static void
push (PoolRun *run,
      PoolJob *job)
{
  g_thread_pool_push (run->pool, job, NULL);
}

static gboolean
job_done_idle (gpointer user_data)
{
  demo_job_done (user_data);
  return G_SOURCE_REMOVE;
}

/* From a pool thread: tells the main loop that a workload has ended. */
static void
job_done (DemoJob *job)
{
  g_idle_add (job_done_idle, job);
}

/* One of @n_parts parts of @job ended: the last one sums every part's
 * result and ends the workload, counted as one more finished task (as
 * the wsrt root task is). */
static void
part_done (PoolRun       *run,
           DemoJob       *job,
           gint          *parts_left,
           const guint64 *part_results,
           guint          n_parts)
{
  if (!g_atomic_int_dec_and_test (parts_left))
    return;
  for (guint i = 0; i < n_parts; i++)
    job->result += part_results[i];
  demo_workloads_task_finished (run->demo);
  job_done (job);
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

static void fib_run (PoolJob *job, PoolRun *run);

static PoolFib *
fib_new (PoolFib *parent,
         guint    slot,
         guint    n)
{
  PoolFib *node = g_new0 (PoolFib, 1);

  node->job.run = fib_run;
  node->parent = parent;
  node->slot = slot;
  node->n = n;
  return node;
}

static void
fib_complete (PoolFib *node,
              guint64  value,
              PoolRun *run)
{
  for (;;)
    {
      PoolFib *parent = node->parent;
      guint slot = node->slot;

      g_free (node);
      demo_workloads_task_finished (run->demo);
      if (parent == NULL)
        {
          run->demo->jobs[DEMO_FORKJOIN].result = value;
          job_done (&run->demo->jobs[DEMO_FORKJOIN]);
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
fib_run (PoolJob *job,
         PoolRun *run)
{
  PoolFib *self = (PoolFib *) job;

  if (self->n < DEMO_FIB_CUTOFF)
    {
      fib_complete (self, demo_fib_serial (self->n), run);
      return;
    }
  g_atomic_int_set (&self->pending, 2);
  push (run, &fib_new (self, 1, self->n - 2)->job);
  push (run, &fib_new (self, 0, self->n - 1)->job);
}

/* Chains: a link pushes the next one. */
typedef struct
{
  PoolJob job;
  guint   chain;
  guint   link;
  guint64 checksum;
} PoolLink;

static void link_run (PoolJob *job, PoolRun *run);

static void
push_link (PoolRun *run,
           guint    chain,
           guint    link,
           guint64  checksum)
{
  /* A new job per link, as the wsrt chains allocate a ChainLink. */
  PoolLink *next = g_new (PoolLink, 1);

  next->job.run = link_run;
  next->chain = chain;
  next->link = link;
  next->checksum = checksum;
  push (run, &next->job);
}

static void
link_run (PoolJob *job,
          PoolRun *run)
{
  PoolLink *self = (PoolLink *) job;
  guint64 checksum = demo_chain_step (self->checksum, self->link);

  demo_workloads_task_finished (run->demo);
  if (self->link < run->demo->chain_depth)
    push_link (run, self->chain, self->link + 1, checksum);
  else
    {
      run->chain_checksums[self->chain] = checksum;
      part_done (run, &run->demo->jobs[DEMO_CHAINS], &run->chains_left,
                 run->chain_checksums, run->demo->n_chains);
    }
  g_free (self);
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
yielder_run (PoolJob *job,
             PoolRun *run)
{
  PoolYielder *self = (PoolYielder *) job;

  self->acc = demo_yielder_step (self->acc, self->polls);
  if (self->polls++ < DEMO_YIELDS_PER_TASK)
    {
      push (run, &self->job);
      return;
    }

  run->yielder_accs[self->index] = self->acc;
  g_free (self);
  demo_workloads_task_finished (run->demo);
  part_done (run, &run->demo->jobs[DEMO_YIELDS], &run->yielders_left,
             run->yielder_accs, run->demo->n_yielders);
}

/* Remote: pushed from the main loop; each result comes back to it in an
 * idle source. */
typedef struct
{
  PoolJob  job;
  PoolRun *run;
  guint    index;
  guint64  result;
} PoolRemote;

static gboolean
remote_done_idle (gpointer user_data)
{
  PoolRemote *self = user_data;
  PoolRun *run = self->run;

  run->demo->jobs[DEMO_REMOTE].result += self->result;
  if (++run->remote_done == run->demo->n_remote)
    demo_job_done (&run->demo->jobs[DEMO_REMOTE]);
  g_free (self);
  return G_SOURCE_REMOVE;
}

static void
remote_run (PoolJob *job,
            PoolRun *run)
{
  PoolRemote *self = (PoolRemote *) job;

  self->result = demo_remote_work (self->index);
  demo_workloads_task_finished (run->demo);
  g_idle_add (remote_done_idle, self);
}

static gboolean
push_remote_batch (gpointer user_data)
{
  PoolRun *run = user_data;
  guint end = MIN (run->remote_spawned + DEMO_REMOTE_BATCH, run->demo->n_remote);

  for (; run->remote_spawned < end; run->remote_spawned++)
    {
      PoolRemote *work = g_new0 (PoolRemote, 1);

      work->job.run = remote_run;
      work->run = run;
      work->index = run->remote_spawned;
      push (run, &work->job);
    }

  return run->remote_spawned < run->demo->n_remote ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

static void
start_jobs (PoolRun *run)
{
  DemoWorkloads *demo = run->demo;

  if (demo->jobs[DEMO_FORKJOIN].enabled)
    push (run, &fib_new (NULL, 0, demo->fib_n)->job);
  if (demo->jobs[DEMO_CHAINS].enabled)
    {
      run->chain_checksums = g_new0 (guint64, demo->n_chains);
      g_atomic_int_set (&run->chains_left, demo->n_chains);
      for (guint i = 0; i < demo->n_chains; i++)
        push_link (run, i, 1, demo_chain_seed (i));
    }
  if (demo->jobs[DEMO_YIELDS].enabled)
    {
      run->yielder_accs = g_new0 (guint64, demo->n_yielders);
      g_atomic_int_set (&run->yielders_left, demo->n_yielders);
      for (guint i = 0; i < demo->n_yielders; i++)
        {
          PoolYielder *y = g_new0 (PoolYielder, 1);

          y->job.run = yielder_run;
          y->index = i;
          y->acc = i;
          push (run, &y->job);
        }
    }
  if (demo->jobs[DEMO_REMOTE].enabled && push_remote_batch (run))
    g_timeout_add (1, push_remote_batch, run);
}

/**
 * demo_gthreadpool_run:
 * @workloads: sized by demo_workloads_init()
 * @n_threads: the pool's threads
 * @error: where a failure to start the pool goes
 *
 * Runs the enabled workloads on a new GThreadPool, running the default
 * main loop until all have ended; the results are in @workloads, to check
 * with demo_workloads_check().
 *
 * Returns: the wall time in seconds, or -1 with @error set
 */
gdouble
demo_gthreadpool_run (DemoWorkloads  *workloads,
                      guint           n_threads,
                      GError        **error)
{
  PoolRun run = { .demo = workloads };
  gdouble seconds;

  run.pool = g_thread_pool_new (pool_func, &run, n_threads, TRUE, error);
  if (run.pool == NULL)
    return -1;

  demo_workloads_reset (workloads);
  start_jobs (&run);
  seconds = demo_workloads_wait (workloads);

  /* Every job has ended: the pool only waits for its threads to return. */
  g_thread_pool_free (run.pool, FALSE, TRUE);
  g_free (run.chain_checksums);
  g_free (run.yielder_accs);
  return seconds;
}
