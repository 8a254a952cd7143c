/* wsrt-demo-workloads.h: the four workloads of wsrt-demo
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Written once, run by two programs: examples/wsrt-demo.c runs them on a
 * WsRuntime and shows what each worker did; tests/bench/bench-demo.c
 * times them against the same workloads written for a GThreadPool
 * (tests/bench/demo-gthreadpool.c), the comparison wsrt-demo ends with.
 *
 * A run starts the enabled workloads from the main thread and returns at
 * once; demo_workloads_wait() then runs the default main loop until every
 * one has ended.
 */

#pragma once

#include <wsrt.h>

G_BEGIN_DECLS

#define DEMO_FIB_CUTOFF       20    /* fib (n) below this is computed serially */
#define DEMO_CHAIN_DEPTH      1000  /* links per chain, at most */
#define DEMO_YIELDS_PER_TASK  16    /* a yielder is polled this + 1 times */
#define DEMO_REMOTE_BATCH     256   /* remote spawns per main loop tick */

typedef enum
{
  DEMO_FORKJOIN,
  DEMO_CHAINS,
  DEMO_YIELDS,
  DEMO_REMOTE,
  DEMO_N_WORKLOADS
} DemoWorkload;

typedef struct _DemoWorkloads DemoWorkloads;

/* One workload, seen from the main thread. */
typedef struct
{
  DemoWorkloads *owner;
  const gchar   *name;
  gboolean       enabled;
  guint64        result;      /* what it computed */
  GError        *error;       /* or why it failed */
  gint64         end_time;    /* g_get_monotonic_time() when it ended */
} DemoJob;

struct _DemoWorkloads
{
  /* The sizes, from the scale given to demo_workloads_init(). */
  guint      fib_n;           /* forkjoin computes fib (fib_n) */
  guint      fib_tasks;       /* in this many tasks */
  guint      n_chains;
  guint      chain_depth;
  guint      n_yielders;
  guint      n_remote;
  guint      n_tasks;         /* every enabled workload's tasks */

  DemoJob    jobs[DEMO_N_WORKLOADS];
  GMainLoop *loop;            /* quits when the last job ends */
  gint64     start_time;
  guint      jobs_running;
  gint       finished_tasks;  /* atomic: tasks that have ended */
  gboolean   have_expected;
  guint64    expected[DEMO_N_WORKLOADS];  /* the serial results */
};

gboolean demo_workloads_init   (DemoWorkloads  *self,
                                const gchar    *workload,
                                guint           scale,
                                GError        **error);
void     demo_workloads_clear  (DemoWorkloads  *self);
void     demo_workloads_start  (DemoWorkloads  *self,
                                WsRuntime      *runtime);
gdouble  demo_workloads_wait   (DemoWorkloads  *self);
gboolean demo_workloads_check  (DemoWorkloads  *self,
                                gboolean        verbose);

/* For another implementation of the same workloads. */
void     demo_workloads_reset         (DemoWorkloads *self);
void     demo_workloads_task_finished (DemoWorkloads *self);
void     demo_job_done                (DemoJob       *job);

guint64  demo_fib_serial    (guint    n);
guint64  demo_chain_seed    (guint    chain);
guint64  demo_chain_step    (guint64  checksum,
                             guint    link);
guint64  demo_yielder_step  (guint64  acc,
                             guint    poll);
guint64  demo_remote_work   (guint    index);

G_END_DECLS
