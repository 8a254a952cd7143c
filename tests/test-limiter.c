/* test-limiter.c: WsLimiter, bounded concurrency that tasks await
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The cap (never more holders than permits, counted with atomics, under
 * contention from many tasks on 2 workers and a plain thread), the order
 * of grants (first come, first served), cancellation (a cancelled waiter
 * leaks no permit, also one handed a permit it never saw; a cancelled
 * holder spawned with ws_limiter_spawn gives its permit back), the cap on
 * blocking jobs, waiting on a main loop, and every refusal of the API.
 */

#include "config.h"

#include "ws-test-fixture.h"

/* ---- holders, counted ------------------------------------------------------ */

typedef struct
{
  _Atomic gint holders;         /* now */
  _Atomic gint max_holders;     /* ever */
} Census;

static void
census_enter (Census *c)
{
  gint now = atomic_fetch_add (&c->holders, 1) + 1;
  gint max = atomic_load (&c->max_holders);

  while (now > max && !atomic_compare_exchange_weak (&c->max_holders, &max, now))
    ;
}

static void
census_leave (Census *c)
{
  g_assert_cmpint (atomic_fetch_sub (&c->holders, 1), >, 0);
}

/* ---- a task that takes a permit with acquire_poll ------------------------- */

#define N_ORDER 64

typedef struct
{
  _Atomic guint order[N_ORDER];  /* job indexes, in the order they got permits */
  _Atomic guint n_order;
} Grants;

typedef struct
{
  WsLimiter       *limiter;
  WsLimiterWaiter *waiter;       /* set while waiting */
  gboolean         holding;
  guint            index;
  guint            yields;       /* polls to hold the permit for */
  Census          *census;       /* nullable */
  Grants          *grants;       /* nullable */
  _Atomic gint    *queued;       /* nullable: set once the job waits in the queue */
} Job;

static Job *
job_new (WsLimiter *limiter,
         guint      index)
{
  Job *job = g_new0 (Job, 1);

  job->limiter = ws_limiter_ref (limiter);
  job->index = index;
  return job;
}

static WsPoll
job_poll (WsContext *cx,
          gpointer   data)
{
  Job *job = data;

  if (!job->holding)
    {
      if (ws_limiter_acquire_poll (job->limiter, cx, &job->waiter) == WS_POLL_PENDING)
        {
          if (job->queued != NULL && job->waiter != NULL)
            atomic_store (job->queued, 1);
          return WS_POLL_PENDING;
        }
      g_assert_null (job->waiter);
      job->holding = TRUE;
      if (job->census != NULL)
        census_enter (job->census);
      if (job->grants != NULL)
        atomic_store (&job->grants->order[atomic_fetch_add (&job->grants->n_order, 1)],
                      job->index);
    }

  if (job->yields > 0)
    {
      job->yields--;
      return ws_context_yield (cx);
    }

  if (job->census != NULL)
    census_leave (job->census);
  job->holding = FALSE;
  ws_limiter_release (job->limiter);
  return WS_POLL_READY;
}

/* What every task that waits on a limiter does in its destroy notify. */
static void
job_free (gpointer data)
{
  Job *job = data;

  g_clear_pointer (&job->waiter, ws_limiter_waiter_free);
  if (job->holding)
    {
      if (job->census != NULL)
        census_leave (job->census);
      ws_limiter_release (job->limiter);
    }
  ws_limiter_unref (job->limiter);
  g_free (job);
}

/* ---- the basics ------------------------------------------------------------ */

static void
test_basics (void)
{
  g_autoptr(WsLimiter) limiter = ws_limiter_new (3);
  WsLimiter *ref;

  g_assert_true (G_TYPE_IS_BOXED (WS_TYPE_LIMITER));
  g_assert_cmpuint (ws_limiter_get_max_permits (limiter), ==, 3);
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 3);

  for (guint i = 0; i < 3; i++)
    g_assert_true (ws_limiter_try_acquire (limiter));
  g_assert_false (ws_limiter_try_acquire (limiter));
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 0);

  ws_limiter_release (limiter);
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 1);
  g_assert_true (ws_limiter_try_acquire (limiter));
  for (guint i = 0; i < 3; i++)
    ws_limiter_release (limiter);
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 3);

  ref = g_boxed_copy (WS_TYPE_LIMITER, limiter);
  g_assert_true (ref == limiter);
  g_boxed_free (WS_TYPE_LIMITER, ref);
}

/* ---- the cap under contention --------------------------------------------- */

#define N_JOBS   200
#define N_PERMITS 3

typedef struct
{
  WsLimiter     *limiter;
  Census        *census;
  _Atomic gint   stop;
  guint          taken;
} Grabber;

/* A plain thread that takes permits with try_acquire meanwhile. */
static gpointer
grabber_thread (gpointer data)
{
  Grabber *g = data;

  while (!atomic_load (&g->stop))
    {
      if (ws_limiter_try_acquire (g->limiter))
        {
          census_enter (g->census);
          g->taken++;
          g_usleep (20);
          census_leave (g->census);
          ws_limiter_release (g->limiter);
        }
      g_thread_yield ();
    }
  return NULL;
}

static void
test_cap_under_contention (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsLimiter) limiter = ws_limiter_new (N_PERMITS);
  Census census = { 0, };
  Grabber grabber = { limiter, &census, 0, 0 };
  WsTask *tasks[N_JOBS];
  GThread *thread;

  thread = g_thread_new ("grabber", grabber_thread, &grabber);
  for (guint i = 0; i < N_JOBS; i++)
    {
      Job *job = job_new (limiter, i);

      job->census = &census;
      job->yields = i % 4;
      tasks[i] = ws_runtime_spawn (rt, job_poll, job, job_free);
    }
  ws_test_wait_all (tasks, N_JOBS);
  atomic_store (&grabber.stop, 1);
  g_thread_join (thread);

  g_test_message ("most holders at once: %d; permits taken by the thread: %u",
                  atomic_load (&census.max_holders), grabber.taken);
  g_assert_cmpint (atomic_load (&census.max_holders), <=, N_PERMITS);
  g_assert_cmpint (atomic_load (&census.max_holders), >=, 1);
  g_assert_cmpint (atomic_load (&census.holders), ==, 0);
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, N_PERMITS);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ---- first come, first served ---------------------------------------------- */

#define N_FIFO 16

static void
test_fifo (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsLimiter) limiter = ws_limiter_new (1);
  Grants grants = { { 0, }, 0 };
  _Atomic gint queued[N_FIFO] = { 0, };
  WsTask *tasks[N_FIFO];

  /* Held here: each job queues, and the next is spawned once it has. */
  g_assert_true (ws_limiter_try_acquire (limiter));
  for (guint i = 0; i < N_FIFO; i++)
    {
      Job *job = job_new (limiter, i);

      job->grants = &grants;
      job->queued = &queued[i];
      job->yields = 1;
      tasks[i] = ws_runtime_spawn (rt, job_poll, job, job_free);
      ws_test_wait_until (atomic_load (&queued[i]));
    }

  /* While they wait, nothing is free and try_acquire takes nothing. */
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 0);
  g_assert_false (ws_limiter_try_acquire (limiter));

  ws_limiter_release (limiter);
  ws_test_wait_all (tasks, N_FIFO);

  g_assert_cmpuint (atomic_load (&grants.n_order), ==, N_FIFO);
  for (guint i = 0; i < N_FIFO; i++)
    g_assert_cmpuint (atomic_load (&grants.order[i]), ==, i);
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 1);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ---- cancellation of waiters ----------------------------------------------- */

static void
test_cancel_waiting (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GMainContext) ctx = g_main_context_new ();
  g_autoptr(WsLimiter) limiter = ws_limiter_new (1);
  g_autoptr(GError) error = NULL;
  Grants grants = { { 0, }, 0 };
  _Atomic gint queued[3] = { 0, };
  g_autoptr(WsTask) a = NULL;
  g_autoptr(WsTask) b = NULL;
  g_autoptr(WsTask) c = NULL;
  Job *job;

  g_assert_true (ws_limiter_try_acquire (limiter));

  /* A: a local task, polled only when this test iterates @ctx. */
  job = job_new (limiter, 0);
  job->grants = &grants;
  job->queued = &queued[0];
  a = ws_runtime_spawn_local (rt, ctx, job_poll, job, job_free);
  ws_test_iterate_until (ctx, atomic_load (&queued[0]));

  /* B and C on the workers, queued behind A in that order. */
  job = job_new (limiter, 1);
  job->grants = &grants;
  job->queued = &queued[1];
  b = ws_runtime_spawn (rt, job_poll, job, job_free);
  ws_test_wait_until (atomic_load (&queued[1]));
  job = job_new (limiter, 2);
  job->grants = &grants;
  job->queued = &queued[2];
  c = ws_runtime_spawn (rt, job_poll, job, job_free);
  ws_test_wait_until (atomic_load (&queued[2]));

  /* C, cancelled while it waits, leaves the queue. */
  ws_task_cancel (c);
  g_assert_false (ws_task_wait (c, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&error);

  /* The permit goes to A, the oldest waiter, which is woken but not
   * polled (its context is not iterated); then A is cancelled. */
  ws_limiter_release (limiter);
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 0);
  ws_task_cancel (a);
  ws_test_iterate_until (ctx, ws_task_is_finished (a));
  g_assert_false (ws_task_wait (a, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);

  /* A's permit was not lost: B got it, and gave it back. */
  g_assert_true (ws_task_wait (b, NULL, NULL));
  g_assert_cmpuint (atomic_load (&grants.n_order), ==, 1);
  g_assert_cmpuint (atomic_load (&grants.order[0]), ==, 1);
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 1);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* A waiting task that is dropped at shutdown frees its waiter too. */
static void
test_shutdown_while_waiting (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsLimiter) limiter = ws_limiter_new (1);
  _Atomic gint queued[4] = { 0, };
  WsTask *tasks[4];

  g_assert_true (ws_limiter_try_acquire (limiter));
  for (guint i = 0; i < 4; i++)
    {
      Job *job = job_new (limiter, i);

      job->queued = &queued[i];
      tasks[i] = ws_runtime_spawn (rt, job_poll, job, job_free);
      ws_test_wait_until (atomic_load (&queued[i]));
    }
  g_assert_true (ws_runtime_shutdown (rt, -1));
  for (guint i = 0; i < 4; i++)
    {
      g_assert_false (ws_task_wait (tasks[i], NULL, NULL));
      g_object_unref (tasks[i]);
    }
  ws_limiter_release (limiter);
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 1);
}

/* ---- ws_limiter_spawn ------------------------------------------------------ */

typedef struct
{
  Census  *census;
  guint    yields;
  gboolean entered;
} Body;

static WsPoll
census_body (WsContext *cx,
             gpointer   data)
{
  Body *b = data;

  if (!b->entered)
    {
      census_enter (b->census);
      b->entered = TRUE;
    }
  if (b->yields > 0)
    {
      b->yields--;
      return ws_context_yield (cx);
    }
  census_leave (b->census);
  return ws_test_return_int (cx, 7);
}

static void
test_spawn_cap (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsLimiter) limiter = ws_limiter_new (2);
  Census census = { 0, };
  WsTask *tasks[N_JOBS];

  for (guint i = 0; i < N_JOBS; i++)
    {
      Body *b = g_new0 (Body, 1);

      b->census = &census;
      b->yields = i % 5;
      tasks[i] = ws_limiter_spawn (limiter, rt, census_body, b, g_free);
    }
  for (guint i = 0; i < N_JOBS; i++)
    {
      g_assert_true (ws_task_wait (tasks[i], NULL, NULL));
      g_assert_cmpint (g_value_get_int (ws_task_get_value (tasks[i])), ==, 7);
      g_object_unref (tasks[i]);
    }
  g_test_message ("most holders at once: %d", atomic_load (&census.max_holders));
  g_assert_cmpint (atomic_load (&census.max_holders), <=, 2);
  g_assert_cmpint (atomic_load (&census.max_holders), >=, 1);
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 2);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Holds its permit until cancelled. */
static WsPoll
hold_forever (WsContext *cx,
              gpointer   data)
{
  atomic_store ((_Atomic gint *) data, 1);
  return WS_POLL_PENDING;
}

static void
test_spawn_cancel (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsLimiter) limiter = ws_limiter_new (1);
  g_autoptr(GError) error = NULL;
  _Atomic gint started = 0;
  g_autoptr(WsTask) holder = NULL;
  g_autoptr(WsTask) waiting = NULL;
  g_autoptr(WsTask) next = NULL;

  ws_test_reset_counters ();
  holder = ws_limiter_spawn (limiter, rt, hold_forever, &started, ws_test_count_destroy);
  ws_test_wait_until (atomic_load (&started));
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 0);

  /* Cancelled while it waits: its function never runs. */
  waiting = ws_limiter_spawn (limiter, rt, ws_test_count_poll, NULL, ws_test_count_destroy);
  next = ws_limiter_spawn (limiter, rt, ws_test_count_poll, NULL, ws_test_count_destroy);
  g_assert_false (ws_test_wait_until_for (atomic_load (&ws_test_n_polled) > 0, 20000));
  ws_task_cancel (waiting);
  g_assert_false (ws_task_wait (waiting, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&error);
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 1);
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, 0);

  /* Cancelled while it holds the permit: the permit goes to the next. */
  ws_task_cancel (holder);
  g_assert_false (ws_task_wait (holder, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_true (ws_task_wait (next, NULL, NULL));
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, 1);
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 3);
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 1);
  g_assert_true (ws_runtime_shutdown (rt, -1));

  /* After shutdown: a cancelled task, its data freed, no permit taken. */
  g_clear_object (&next);
  next = ws_limiter_spawn (limiter, rt, ws_test_count_poll, NULL, ws_test_count_destroy);
  g_assert_true (ws_task_is_finished (next));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 4);
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 1);
}

/* ---- ws_limiter_spawn_blocking --------------------------------------------- */

#define N_BLOCKING 16

typedef struct
{
  Census *census;
  guint   index;
} BlockingJob;

static WsPoll
blocking_body (WsContext *cx,
               gpointer   data)
{
  BlockingJob *job = data;

  census_enter (job->census);
  g_usleep (2000);
  census_leave (job->census);
  ws_context_return_uint64 (cx, job->index);
  return WS_POLL_READY;
}

static WsPoll
pointer_body (WsContext *cx,
              gpointer   data)
{
  ws_context_return_pointer (cx, g_strdup ("from the pool"), g_free);
  return WS_POLL_READY;
}

static void
test_spawn_blocking_cap (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsLimiter) limiter = ws_limiter_new (2);
  g_autoptr(GError) error = NULL;
  g_autoptr(WsTask) failing = NULL;
  g_autoptr(WsTask) pointer = NULL;
  g_autofree char *str = NULL;
  Census census = { 0, };
  WsTask *tasks[N_BLOCKING];

  for (guint i = 0; i < N_BLOCKING; i++)
    {
      BlockingJob *job = g_new0 (BlockingJob, 1);

      job->census = &census;
      job->index = i;
      tasks[i] = ws_limiter_spawn_blocking (limiter, rt, blocking_body, job, g_free);
    }
  for (guint i = 0; i < N_BLOCKING; i++)
    {
      /* The job's outcome is the task's. */
      g_assert_true (ws_task_wait (tasks[i], NULL, NULL));
      g_assert_cmpuint (g_value_get_uint64 (ws_task_get_value (tasks[i])), ==, i);
      g_object_unref (tasks[i]);
    }
  g_test_message ("most blocking jobs at once: %d", atomic_load (&census.max_holders));
  g_assert_cmpint (atomic_load (&census.max_holders), <=, 2);
  g_assert_cmpint (atomic_load (&census.max_holders), >=, 1);
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 2);

  failing = ws_limiter_spawn_blocking (limiter, rt, ws_test_return_not_found, NULL, NULL);
  g_assert_false (ws_task_wait (failing, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
  pointer = ws_limiter_spawn_blocking (limiter, rt, pointer_body, NULL, NULL);
  g_assert_true (ws_task_wait (pointer, NULL, NULL));
  str = ws_task_propagate_pointer (pointer, NULL);
  g_assert_cmpstr (str, ==, "from the pool");
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 2);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

typedef struct
{
  Census     *census;
  WsTestGate *gate;
} GateJob;

static WsPoll
gate_body (WsContext *cx,
           gpointer   data)
{
  GateJob *job = data;

  census_enter (job->census);
  ws_test_gate_wait (job->gate);
  census_leave (job->census);
  return WS_POLL_READY;
}

static void
test_spawn_blocking_cancel (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsLimiter) limiter = ws_limiter_new (1);
  g_autoptr(GError) error = NULL;
  g_autoptr(WsTask) running = NULL;
  g_autoptr(WsTask) waiting = NULL;
  g_autoptr(WsTask) next = NULL;
  Census census = { 0, };
  WsTestGate gate;
  GateJob job;

  ws_test_reset_counters ();
  ws_test_gate_init (&gate);
  job = (GateJob) { &census, &gate };
  running = ws_limiter_spawn_blocking (limiter, rt, gate_body, &job, NULL);
  ws_test_gate_wait_for_waiters (&gate, 1);

  /* Cancelled while it waits in the limiter: never runs. */
  waiting = ws_limiter_spawn_blocking (limiter, rt, ws_test_count_poll, NULL,
                                       ws_test_count_destroy);
  g_assert_false (ws_test_wait_until_for (ws_task_is_finished (waiting), 20000));
  ws_task_cancel (waiting);
  g_assert_false (ws_task_wait (waiting, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&error);
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 1);

  /* Cancelled while its job runs: the task ends, but the job cannot be
   * stopped, and keeps its permit until it returns. */
  ws_task_cancel (running);
  g_assert_false (ws_task_wait (running, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  next = ws_limiter_spawn_blocking (limiter, rt, ws_test_count_poll, NULL, ws_test_count_destroy);
  g_assert_false (ws_test_wait_until_for (atomic_load (&ws_test_n_polled) > 0, 20000));
  g_assert_cmpint (atomic_load (&census.holders), ==, 1);
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 0);

  ws_test_gate_open (&gate);
  g_assert_true (ws_task_wait (next, NULL, NULL));
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, 1);
  g_assert_cmpint (atomic_load (&census.max_holders), ==, 1);
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 1);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  ws_test_gate_clear (&gate);
}

static void
test_spawn_blocking_shutdown (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsLimiter) limiter = ws_limiter_new (1);
  g_autoptr(WsTask) late = NULL;
  WsTask *tasks[3];

  ws_test_reset_counters ();
  g_assert_true (ws_limiter_try_acquire (limiter));
  for (guint i = 0; i < 3; i++)
    tasks[i] = ws_limiter_spawn_blocking (limiter, rt, ws_test_count_poll, NULL,
                                          ws_test_count_destroy);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 3);
  for (guint i = 0; i < 3; i++)
    {
      g_assert_false (ws_task_wait (tasks[i], NULL, NULL));
      g_object_unref (tasks[i]);
    }
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, 0);

  late = ws_limiter_spawn_blocking (limiter, rt, ws_test_count_poll, NULL, ws_test_count_destroy);
  g_assert_true (ws_task_is_finished (late));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 4);
  ws_limiter_release (limiter);
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 1);
}

/* ---- waiting on a main loop ------------------------------------------------ */

typedef struct
{
  WsLimiter *limiter;
  guint      calls;
  gboolean   finish;           /* FALSE: drop the result unfinished */
  gboolean   ok;
  GError    *error;
} Acquired;

static void
acquired_cb (GObject      *source,
             GAsyncResult *result,
             gpointer      data)
{
  Acquired *a = data;

  g_assert_null (source);
  a->calls++;
  if (a->finish)
    a->ok = ws_limiter_acquire_finish (a->limiter, result, &a->error);
}

static void
test_acquire_async (void)
{
  WsTestOnContext f;
  WsLimiter *limiter = ws_limiter_new (1);
  g_autoptr(GCancellable) cancel_b = g_cancellable_new ();
  g_autoptr(GCancellable) cancel_d = g_cancellable_new ();
  g_autoptr(GCancellable) cancelled = g_cancellable_new ();
  Acquired a = { limiter, 0, TRUE, }, b = a, c = a, d = a, e = a, g = a, h = a;

  ws_test_on_context_init (&f, 1);

  /* A free permit: TRUE, though never from inside the call. */
  ws_limiter_acquire_async (limiter, NULL, acquired_cb, &h);
  g_assert_cmpuint (h.calls, ==, 0);
  ws_test_iterate_until (f.ctx, h.calls == 1);
  g_assert_true (h.ok);

  /* Held: a, b, c wait in order; b is cancelled meanwhile. */
  ws_limiter_acquire_async (limiter, NULL, acquired_cb, &a);
  ws_limiter_acquire_async (limiter, cancel_b, acquired_cb, &b);
  ws_limiter_acquire_async (limiter, NULL, acquired_cb, &c);
  for (guint i = 0; i < 5; i++)
    g_main_context_iteration (f.ctx, FALSE);
  g_assert_cmpuint (a.calls + b.calls + c.calls, ==, 0);
  g_cancellable_cancel (cancel_b);
  ws_test_iterate_until (f.ctx, b.calls == 1);
  g_assert_false (b.ok);
  g_assert_error (b.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);

  ws_limiter_release (limiter);
  ws_test_iterate_until (f.ctx, a.calls == 1);
  g_assert_true (a.ok);
  g_assert_cmpuint (c.calls, ==, 0);
  ws_limiter_release (limiter);
  ws_test_iterate_until (f.ctx, c.calls == 1);
  g_assert_true (c.ok);
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 0);

  /* Granted, then cancelled before the callback: CANCELLED, and the
   * permit is passed on, not lost. */
  ws_limiter_acquire_async (limiter, cancel_d, acquired_cb, &d);
  ws_limiter_release (limiter);
  g_cancellable_cancel (cancel_d);
  ws_test_iterate_until (f.ctx, d.calls == 1);
  g_assert_false (d.ok);
  g_assert_error (d.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 1);

  /* Granted, and the result dropped without finish: passed on too. */
  g_assert_true (ws_limiter_try_acquire (limiter));
  e.finish = FALSE;
  ws_limiter_acquire_async (limiter, NULL, acquired_cb, &e);
  ws_limiter_release (limiter);
  ws_test_iterate_until (f.ctx, e.calls == 1);
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 1);

  /* An already cancelled cancellable. */
  g_cancellable_cancel (cancelled);
  ws_limiter_acquire_async (limiter, cancelled, acquired_cb, &g);
  ws_test_iterate_until (f.ctx, g.calls == 1);
  g_assert_error (g.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 1);

  g_clear_error (&b.error);
  g_clear_error (&d.error);
  g_clear_error (&g.error);
  ws_limiter_unref (limiter);
  ws_test_on_context_clear (&f);
}

/* Tasks and main-loop waiters share one queue. */
static void
test_acquire_async_with_tasks (void)
{
  WsTestOnContext f;
  g_autoptr(WsLimiter) limiter = ws_limiter_new (1);
  Grants grants = { { 0, }, 0 };
  _Atomic gint queued = 0;
  Acquired a = { limiter, 0, TRUE, };
  g_autoptr(WsTask) task = NULL;
  Job *job;

  ws_test_on_context_init (&f, 2);
  g_assert_true (ws_limiter_try_acquire (limiter));
  job = job_new (limiter, 0);
  job->grants = &grants;
  job->queued = &queued;
  task = ws_runtime_spawn (f.rt, job_poll, job, job_free);
  ws_test_wait_until (atomic_load (&queued));
  ws_limiter_acquire_async (limiter, NULL, acquired_cb, &a);

  /* The task came first; it gives the permit back when done, and then
   * the main loop gets it. */
  ws_limiter_release (limiter);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_cmpuint (atomic_load (&grants.n_order), ==, 1);
  ws_test_iterate_until (f.ctx, a.calls == 1);
  g_assert_true (a.ok);
  ws_limiter_release (limiter);
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 1);
  ws_test_on_context_clear (&f);
}

/* ---- refusals -------------------------------------------------------------- */

static WsPoll
refusals_in_poll (WsContext *cx,
                  gpointer   data)
{
  WsLimiter *limiter = data;
  g_autoptr(WsLimiter) other = ws_limiter_new (1);
  WsLimiterWaiter *waiter = NULL;

  WS_TEST_REFUSED (ws_limiter_acquire_poll,
           g_assert_cmpint (ws_limiter_acquire_poll (limiter, cx, NULL), ==, WS_POLL_READY));

  /* A waiter of another limiter. */
  g_assert_true (ws_limiter_try_acquire (other));
  g_assert_cmpint (ws_limiter_acquire_poll (other, cx, &waiter), ==, WS_POLL_PENDING);
  g_assert_nonnull (waiter);
  WS_TEST_REFUSED (ws_limiter_acquire_poll,
           g_assert_cmpint (ws_limiter_acquire_poll (limiter, cx, &waiter), ==, WS_POLL_READY));
  ws_limiter_waiter_free (waiter);
  ws_limiter_release (other);
  g_assert_cmpuint (ws_limiter_get_available (other), ==, 1);
  return WS_POLL_READY;
}

static void
returned_cb (GObject      *source,
             GAsyncResult *result,
             gpointer      data)
{
  *(GAsyncResult **) data = g_object_ref (result);
}

static void
test_refusals (void)
{
  WsTestOnContext f;
  g_autoptr(WsLimiter) limiter = ws_limiter_new (1);
  g_autoptr(WsLimiter) other = ws_limiter_new (1);
  g_autoptr(WsTask) task = NULL;
  g_autoptr(GObject) not_cancellable = g_object_new (G_TYPE_OBJECT, NULL);
  g_autoptr(GTask) foreign = NULL;
  GAsyncResult *foreign_result = NULL;
  GAsyncResult *result = NULL;
  WsLimiterWaiter *waiter = NULL;

  ws_test_on_context_init (&f, 1);
  ws_test_reset_counters ();
  ws_test_n_refusals = 0;

  WS_TEST_REFUSED (ws_limiter_new, g_assert_null (ws_limiter_new (0)));
  WS_TEST_REFUSED (ws_limiter_ref, g_assert_null (ws_limiter_ref (NULL)));
  WS_TEST_REFUSED (ws_limiter_unref, ws_limiter_unref (NULL));
  WS_TEST_REFUSED (ws_limiter_acquire_poll,
           g_assert_cmpint (ws_limiter_acquire_poll (NULL, NULL, &waiter), ==, WS_POLL_READY));
  WS_TEST_REFUSED (ws_limiter_acquire_poll,
           g_assert_cmpint (ws_limiter_acquire_poll (limiter, NULL, &waiter), ==, WS_POLL_READY));
  g_assert_null (waiter);
  WS_TEST_REFUSED (ws_limiter_try_acquire, g_assert_false (ws_limiter_try_acquire (NULL)));
  WS_TEST_REFUSED (ws_limiter_release, ws_limiter_release (NULL));
  /* A release with every permit free. */
  WS_TEST_REFUSED (ws_limiter_release, ws_limiter_release (limiter));
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 1);
  WS_TEST_REFUSED (ws_limiter_get_available, g_assert_cmpuint (ws_limiter_get_available (NULL), ==, 0));
  WS_TEST_REFUSED (ws_limiter_get_max_permits,
           g_assert_cmpuint (ws_limiter_get_max_permits (NULL), ==, 0));
  WS_TEST_REFUSED (ws_limiter_waiter_free, ws_limiter_waiter_free (NULL));

  /* In a poll, on this thread, so the expected messages are ours. */
  task = ws_runtime_spawn_local (f.rt, f.ctx, refusals_in_poll, limiter, NULL);
  ws_test_iterate_until (f.ctx, ws_task_is_finished (task));

  WS_TEST_REFUSED (ws_limiter_acquire_async, ws_limiter_acquire_async (NULL, NULL, NULL, NULL));
  WS_TEST_REFUSED (ws_limiter_acquire_async,
           ws_limiter_acquire_async (limiter, (GCancellable *) not_cancellable, NULL, NULL));

  /* finish: with NULL, with a result of something else, with the result of
   * another limiter, and twice. */
  foreign = g_task_new (NULL, NULL, returned_cb, &foreign_result);
  g_task_return_boolean (foreign, TRUE);
  ws_test_iterate_until (f.ctx, foreign_result != NULL);
  ws_limiter_acquire_async (other, NULL, returned_cb, &result);
  ws_test_iterate_until (f.ctx, result != NULL);
  WS_TEST_REFUSED (ws_limiter_acquire_finish,
           g_assert_false (ws_limiter_acquire_finish (NULL, result, NULL)));
  WS_TEST_REFUSED (ws_limiter_acquire_finish,
           g_assert_false (ws_limiter_acquire_finish (limiter, foreign_result, NULL)));
  WS_TEST_REFUSED (ws_limiter_acquire_finish,
           g_assert_false (ws_limiter_acquire_finish (limiter, result, NULL)));
  g_assert_true (ws_limiter_acquire_finish (other, result, NULL));
  WS_TEST_REFUSED (ws_limiter_acquire_finish,
           g_assert_false (ws_limiter_acquire_finish (other, result, NULL)));
  ws_limiter_release (other);
  g_clear_object (&result);
  g_clear_object (&foreign_result);
  g_assert_cmpuint (ws_limiter_get_available (other), ==, 1);

  /* Refused spawns free their data. */
  WS_TEST_REFUSED (ws_limiter_spawn,
           g_assert_null (ws_limiter_spawn (NULL, f.rt, ws_test_ready, NULL, ws_test_count_destroy)));
  WS_TEST_REFUSED (ws_limiter_spawn,
           g_assert_null (ws_limiter_spawn (limiter, NULL, ws_test_ready, NULL,
                                            ws_test_count_destroy)));
  WS_TEST_REFUSED (ws_limiter_spawn,
           g_assert_null (ws_limiter_spawn (limiter, f.rt, NULL, NULL, ws_test_count_destroy)));
  WS_TEST_REFUSED (ws_limiter_spawn_blocking,
           g_assert_null (ws_limiter_spawn_blocking (NULL, f.rt, ws_test_ready, NULL,
                                                     ws_test_count_destroy)));
  WS_TEST_REFUSED (ws_limiter_spawn_blocking,
           g_assert_null (ws_limiter_spawn_blocking (limiter, NULL, ws_test_ready, NULL,
                                                     ws_test_count_destroy)));
  WS_TEST_REFUSED (ws_limiter_spawn_blocking,
           g_assert_null (ws_limiter_spawn_blocking (limiter, f.rt, NULL, NULL,
                                                     ws_test_count_destroy)));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 6);
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 1);

  g_test_message ("limiter: %u refusals checked", ws_test_n_refusals);
  ws_test_on_context_clear (&f);
}

/* An async wait for a permit cancelled from another thread ends once,
 * cancelled, and leaves nothing behind; the permit stays where it was. */
static void
on_cross_cancel_acquired (GObject      *source,
                          GAsyncResult *result,
                          gpointer      data)
{
  WsTestCrossCancel *c = data;

  g_assert_false (ws_limiter_acquire_finish (c->awaitable, result, &c->error));
  ws_test_cross_cancel_done (c);
}

static void
start_acquire (WsTestCrossCancel *c,
               GCancellable      *cancellable)
{
  ws_limiter_acquire_async (c->awaitable, cancellable, on_cross_cancel_acquired, c);
}

static void
test_acquire_async_cancel_from_thread (void)
{
  g_autoptr(GMainContext) context = g_main_context_new ();
  WsLimiter *limiter = ws_limiter_new (1);

  g_assert_true (ws_limiter_try_acquire (limiter));
  g_main_context_push_thread_default (context);
  ws_test_cancel_waits_from_thread (limiter, start_acquire, 200);
  /* Nothing was granted: the permit is still the test's. */
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 0);
  g_main_context_pop_thread_default (context);
  ws_limiter_release (limiter);
  g_assert_cmpuint (ws_limiter_get_available (limiter), ==, 1);
  ws_limiter_unref (limiter);
}

WS_TEST_MAIN ({ "/limiter/basics", test_basics },
              { "/limiter/cap-under-contention", test_cap_under_contention },
              { "/limiter/fifo", test_fifo },
              { "/limiter/cancel-waiting", test_cancel_waiting },
              { "/limiter/shutdown-while-waiting", test_shutdown_while_waiting },
              { "/limiter/spawn-cap", test_spawn_cap },
              { "/limiter/spawn-cancel", test_spawn_cancel },
              { "/limiter/spawn-blocking-cap", test_spawn_blocking_cap },
              { "/limiter/spawn-blocking-cancel", test_spawn_blocking_cancel },
              { "/limiter/spawn-blocking-shutdown", test_spawn_blocking_shutdown },
              { "/limiter/acquire-async", test_acquire_async },
              { "/limiter/acquire-async-with-tasks", test_acquire_async_with_tasks },
              { "/limiter/acquire-async-cancel-from-thread",
                test_acquire_async_cancel_from_thread },
              { "/limiter/refusals", test_refusals })
