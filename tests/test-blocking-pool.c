/* test-blocking-pool.c: ws_runtime_spawn_blocking and the blocking pool
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Blocking jobs run on their own threads, at most max-blocking-threads at
 * once; a spawn starts no thread (the pool's threads start them, one at a
 * time); idle threads leave after the keep-alive, down to the one the
 * pool keeps; shutdown gives up on a stuck job after its timeout and
 * cancels the queued ones; a job that returns PENDING keeps its thread
 * until woken; jobs that compute run on at most one thread per CPU,
 * while jobs that block get the threads they wait for.
 */

#include "config.h"

#include "ws-test-fixture.h"
#include "ws-runtime-private.h"
/* The pool behind the runtime: a test may look past the face's door. */
#include "core/ws-runtime-core-struct-private.h"

/* The jobs that @rt's pool admitted because they had waited at the head
 * of the queue for the admission deadline, not because the meter found
 * a CPU slot free. */
static guint
n_overdue (WsRuntime *rt)
{
  return (guint) ws_blocking_pool_get_n_overdue (ws_runtime_get_core (rt)->blocking);
}

/* Jobs run and return their values. */
static WsPoll
blocking_job (WsContext *cx,
              gpointer   data)
{
  g_usleep (1000);
  return ws_test_return_index (cx, data);
}

static void
test_spawn_blocking (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  WsTask *tasks[16];

  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    tasks[i] = ws_runtime_spawn_blocking (rt, blocking_job, GUINT_TO_POINTER (i), NULL);
  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    {
      g_assert_true (ws_task_wait (tasks[i], NULL, NULL));
      g_assert_cmpuint (g_value_get_uint (ws_task_get_value (tasks[i])), ==, i);
      g_object_unref (tasks[i]);
    }
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Counts one more in @now and raises @max to it. */
static void
count_in (_Atomic gint *now,
          _Atomic gint *max)
{
  gint n = atomic_fetch_add (now, 1) + 1;
  gint m = atomic_load (max);

  while (n > m && !atomic_compare_exchange_weak (max, &m, n))
    ;
}

/* A pool capped at 3 threads runs 12 jobs, never more than 3 at once. */
static _Atomic gint running_now;
static _Atomic gint running_max;

static WsPoll
capped_job (WsContext *cx,
            gpointer   data)
{
  count_in (&running_now, &running_max);
  g_usleep (5000);
  atomic_fetch_sub (&running_now, 1);
  atomic_fetch_add (&ws_test_n_polled, 1);
  return WS_POLL_READY;
}

static void
test_pool_cap (void)
{
  g_autoptr(WsRuntime) rt = ws_test_runtime_new ("n-workers", 1,
                                                 "max-blocking-threads", 3,
                                                 NULL);
  WsTask *jobs[12];
  g_autoptr(WsMetrics) m = NULL;

  atomic_store (&running_now, 0);
  atomic_store (&running_max, 0);
  ws_test_reset_counters ();
  for (guint i = 0; i < G_N_ELEMENTS (jobs); i++)
    jobs[i] = ws_runtime_spawn_blocking (rt, capped_job, NULL, NULL);
  ws_test_wait_all (jobs, G_N_ELEMENTS (jobs));
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, 12);
  g_assert_cmpint (atomic_load (&running_max), <=, 3);
  g_assert_cmpint (atomic_load (&running_max), >=, 2);

  m = ws_runtime_get_metrics (rt);
  g_assert_cmpuint (ws_metrics_get_blocking_threads (m), <=, 3);

  /* The spawn-at-cap race: one job at a time, as the last thread goes
   * idle, 512 times. */
  ws_test_reset_counters ();
  for (guint i = 0; i < 512; i++)
    {
      g_autoptr(WsTask) t = ws_runtime_spawn_blocking (rt, ws_test_count_poll, NULL, NULL);

      g_assert_true (ws_task_wait (t, NULL, NULL));
    }
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, 512);
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
}

static guint
blocking_threads (WsRuntime *rt,
                  guint     *n_idle)
{
  g_autoptr(WsMetrics) m = ws_runtime_get_metrics (rt);

  if (n_idle != NULL)
    *n_idle = ws_metrics_get_idle_blocking_threads (m);
  return ws_metrics_get_blocking_threads (m);
}

/* Idle threads leave after the keep-alive (50 ms), but for one: the pool
 * keeps a thread while it is open, so that no spawn has to start one. */
static void
test_keep_alive (void)
{
  g_autoptr(WsRuntime) rt = ws_test_runtime_new ("n-workers", 1,
                                                 "blocking-keep-alive", (gint64) 50000,
                                                 NULL);
  WsTask *jobs[4];
  guint idle;

  for (guint i = 0; i < G_N_ELEMENTS (jobs); i++)
    jobs[i] = ws_runtime_spawn_blocking (rt, capped_job, NULL, NULL);
  ws_test_wait_all (jobs, G_N_ELEMENTS (jobs));
  g_assert_cmpuint (blocking_threads (rt, NULL), >, 0);

  ws_test_wait_until (blocking_threads (rt, &idle) == 1 && idle == 1);
  /* The last one stays (past another keep-alive), and still runs jobs. */
  g_usleep (100000);
  g_assert_cmpuint (blocking_threads (rt, &idle), ==, 1);
  g_assert_cmpuint (idle, ==, 1);
  ws_test_reset_counters ();
  {
    g_autoptr(WsTask) t = ws_runtime_spawn_blocking (rt, ws_test_count_poll, NULL, NULL);

    g_assert_true (ws_task_wait (t, NULL, NULL));
  }
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, 1);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* A spawn queues the job and starts no thread: the pool's threads start
 * them, one at a time. The thread-start hook holds every thread started
 * after the runtime's own, so the only thread that can start one is the
 * pool's first; it runs all 1,000 jobs, and starts exactly one thread
 * (the one the hook holds) however many jobs are queued. A spawn that
 * started threads itself would have the hook hold many. */
typedef struct
{
  WsTestGate       gate;
  _Atomic gboolean armed;
  _Atomic gint     n_held;
  _Atomic gint     live;         /* runtime threads between start and stop */
  _Atomic gint     peak;
  WsLock           lock;
  GPtrArray       *stopped;      /* GThread *, the threads that ran the stop hook */
} ThreadWatch;

static void
watch_init (ThreadWatch *w)
{
  memset (w, 0, sizeof *w);
  ws_test_gate_init (&w->gate);
  ws_lock_init (&w->lock);
  w->stopped = g_ptr_array_new ();
}

static void
watch_clear (ThreadWatch *w)
{
  ws_test_gate_clear (&w->gate);
  ws_lock_clear (&w->lock);
  g_ptr_array_unref (w->stopped);
}

static void
watch_start (gpointer data)
{
  ThreadWatch *w = data;

  count_in (&w->live, &w->peak);
  if (atomic_load (&w->armed))
    {
      atomic_fetch_add (&w->n_held, 1);
      ws_test_gate_wait (&w->gate);
    }
}

static void
watch_stop (gpointer data)
{
  ThreadWatch *w = data;

  atomic_fetch_sub (&w->live, 1);
  ws_lock_lock (&w->lock);
  g_ptr_array_add (w->stopped, g_thread_self ());
  ws_lock_unlock (&w->lock);
}

/* A runtime whose thread hooks report to @w. */
static WsRuntime *
watched_runtime_new (ThreadWatch *w,
                     const char  *first_property_name,
                     ...)
{
  g_autoptr(GError) error = NULL;
  GObject *rt;
  va_list args;

  va_start (args, first_property_name);
  rt = g_object_new_valist (WS_TYPE_RUNTIME, first_property_name, args);
  va_end (args);
  ws_runtime_set_on_thread_start (WS_RUNTIME (rt), watch_start, w, NULL);
  ws_runtime_set_on_thread_stop (WS_RUNTIME (rt), watch_stop, w, NULL);
  g_assert_true (g_initable_init (G_INITABLE (rt), NULL, &error));
  g_assert_no_error (error);
  return WS_RUNTIME (rt);
}

#define N_SPAWNS 1000

static GThread *_Atomic job_threads[N_SPAWNS];

static WsPoll
note_thread_job (WsContext *cx,
                 gpointer   data)
{
  atomic_store (&job_threads[GPOINTER_TO_UINT (data)], g_thread_self ());
  atomic_fetch_add (&ws_test_n_polled, 1);
  return WS_POLL_READY;
}

static void
test_spawn_starts_no_thread (void)
{
  ThreadWatch w;
  g_autoptr(WsRuntime) rt = NULL;
  WsTask **jobs = g_new0 (WsTask *, N_SPAWNS);
  guint idle;

  watch_init (&w);
  ws_test_reset_counters ();
  rt = watched_runtime_new (&w, "n-workers", 1, "blocking-keep-alive", (gint64) 20000, NULL);

  /* The runtime started no thread; the first spawn starts the pool's
   * first thread, which starts its reserve as it takes the job. The
   * reserve retires after the keep-alive: then one idle thread is left,
   * and no worker ever started (only blocking jobs here). */
  g_assert_cmpint (atomic_load (&w.live), ==, 0);
  {
    g_autoptr(WsTask) first = ws_runtime_spawn_blocking (rt, ws_test_count_poll, NULL, NULL);

    g_assert_true (ws_task_wait (first, NULL, NULL));
  }
  ws_test_wait_until (blocking_threads (rt, &idle) == 1 && idle == 1
                      && atomic_load (&w.live) == 1);
  ws_test_reset_counters ();
  atomic_store (&w.armed, TRUE);

  for (guint i = 0; i < N_SPAWNS; i++)
    jobs[i] = ws_runtime_spawn_blocking (rt, note_thread_job, GUINT_TO_POINTER (i), NULL);
  for (guint i = 0; i < N_SPAWNS; i++)
    g_assert_true (ws_task_wait (jobs[i], NULL, NULL));
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, N_SPAWNS);

  /* One thread was started (by the pool's thread, as it took the first
   * job); the hook holds it, so the first thread ran every job. The new
   * thread reaches the hook in its own time, perhaps after the last
   * job ended. */
  ws_test_wait_until (atomic_load (&w.n_held) >= 1);
  g_assert_cmpint (atomic_load (&w.n_held), ==, 1);
  g_assert_cmpuint (blocking_threads (rt, NULL), ==, 2);
  for (guint i = 0; i < N_SPAWNS; i++)
    {
      g_assert_true (atomic_load (&job_threads[i]) != g_thread_self ());
      g_assert_true (atomic_load (&job_threads[i]) == atomic_load (&job_threads[0]));
      g_object_unref (jobs[i]);
    }
  g_free (jobs);

  atomic_store (&w.armed, FALSE);
  ws_test_gate_open (&w.gate);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_clear_object (&rt);
  g_assert_cmpint (atomic_load (&w.live), ==, 0);
  watch_clear (&w);
}

/* 10,000 jobs from one thread all run, on at most max-blocking-threads
 * threads at any time (counted by the thread hooks: the one worker and
 * the blocking threads; the keep-alive is long, so none leaves and is
 * replaced while the jobs run). */
#define N_BURST 10000
#define BURST_MAX 8

static WsPoll
short_job (WsContext *cx,
           gpointer   data)
{
  g_usleep (20);
  atomic_fetch_add (&ws_test_n_polled, 1);
  return WS_POLL_READY;
}

static void
test_burst_under_cap (void)
{
  ThreadWatch w;
  g_autoptr(WsRuntime) rt = NULL;
  guint seen = 0;

  watch_init (&w);
  ws_test_reset_counters ();
  rt = watched_runtime_new (&w, "n-workers", 1,
                            "max-blocking-threads", BURST_MAX,
                            "blocking-keep-alive", (gint64) 3600 * G_USEC_PER_SEC,
                            NULL);
  for (guint i = 0; i < N_BURST; i++)
    {
      WsTask *t = ws_runtime_spawn_blocking (rt, short_job, NULL, NULL);

      g_object_unref (t);
    }
  while (atomic_load (&ws_test_n_polled) < N_BURST)
    {
      seen = MAX (seen, blocking_threads (rt, NULL));
      g_usleep (100);
    }
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, N_BURST);
  g_assert_cmpuint (seen, <=, BURST_MAX);
  g_assert_cmpuint (blocking_threads (rt, NULL), <=, BURST_MAX);
  /* The worker and the blocking threads. */
  g_assert_cmpint (atomic_load (&w.peak), <=, 1 + BURST_MAX);
  g_test_message ("peak threads: %d (1 worker)", atomic_load (&w.peak));
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_clear_object (&rt);
  watch_clear (&w);
}

/* After a burst that held 32 threads at once, the idle threads retire:
 * the surplus after an eighth of the keep-alive, the rest after the
 * keep-alive, down to the one the pool keeps. The pool grows by one
 * thread per job taken, no more: 32 jobs held by the gate, 33 threads
 * (the 33rd is the reserve the last taker started). */
#define N_HELD 32

static WsPoll
gate_job (WsContext *cx,
          gpointer   data)
{
  ws_test_gate_wait (data);
  return WS_POLL_READY;
}

static void
test_idle_retire (void)
{
  g_autoptr(WsRuntime) rt = ws_test_runtime_new ("n-workers", 1,
                                                 "max-blocking-threads", 64,
                                                 "blocking-keep-alive", (gint64) 200000,
                                                 NULL);
  WsTestGate gate;
  WsTask *jobs[N_HELD];
  gint64 start;
  guint idle;

  ws_test_gate_init (&gate);
  for (guint i = 0; i < N_HELD; i++)
    jobs[i] = ws_runtime_spawn_blocking (rt, gate_job, &gate, NULL);
  ws_test_gate_wait_for_waiters (&gate, N_HELD);
  g_assert_cmpuint (blocking_threads (rt, NULL), ==, N_HELD + 1);

  ws_test_gate_open (&gate);
  ws_test_wait_all (jobs, N_HELD);
  start = g_get_monotonic_time ();
  ws_test_wait_until (blocking_threads (rt, NULL) <= 4);
  g_test_message ("4 threads left after %" G_GINT64_FORMAT " us (keep-alive 200000)",
                  g_get_monotonic_time () - start);
  ws_test_wait_until (blocking_threads (rt, &idle) == 1 && idle == 1);
  g_test_message ("1 thread left after %" G_GINT64_FORMAT " us",
                  g_get_monotonic_time () - start);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  ws_test_gate_clear (&gate);
}
/* A job stuck in a loop: shutdown gives up after its timeout. */
static _Atomic gboolean release_stuck;

static WsPoll
stuck_job (WsContext *cx,
           gpointer   data)
{
  atomic_fetch_add (&ws_test_n_polled, 1);
  while (!atomic_load (&release_stuck))
    g_usleep (1000);
  return WS_POLL_READY;
}

static void
test_shutdown_timeout_with_stuck_job (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(WsTask) job = NULL;
  gint64 start;
  gint64 took;

  atomic_store (&release_stuck, FALSE);
  ws_test_reset_counters ();
  job = ws_runtime_spawn_blocking (rt, stuck_job, NULL, NULL);
  ws_test_wait_until (atomic_load (&ws_test_n_polled) > 0);

  start = g_get_monotonic_time ();
  g_assert_false (ws_runtime_shutdown (rt, 100 * 1000));
  took = g_get_monotonic_time () - start;
  /* It returned: a shutdown that waited for the job would hang until the
   * watchdog fired. */
  g_test_message ("shutdown with a stuck job returned FALSE after %" G_GINT64_FORMAT " us", took);

  atomic_store (&release_stuck, TRUE);
  g_assert_true (ws_task_wait (job, NULL, NULL));
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Queued blocking jobs are cancelled at shutdown, their data freed. */
static void
test_shutdown_cancels_queued_jobs (void)
{
  g_autoptr(WsRuntime) rt = ws_test_runtime_new ("n-workers", 1,
                                                 "max-blocking-threads", 1,
                                                 NULL);
  WsTask *jobs[10];

  atomic_store (&release_stuck, FALSE);
  ws_test_reset_counters ();
  for (guint i = 0; i < G_N_ELEMENTS (jobs); i++)
    jobs[i] = ws_runtime_spawn_blocking (rt, stuck_job, NULL, ws_test_count_destroy);
  ws_test_wait_until (atomic_load (&ws_test_n_polled) > 0);

  /* One runs (stuck), nine wait: those are cancelled at once. */
  g_assert_false (ws_runtime_shutdown (rt, 10 * 1000));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 9);
  atomic_store (&release_stuck, TRUE);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 10);
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, 1);
  for (guint i = 0; i < G_N_ELEMENTS (jobs); i++)
    g_object_unref (jobs[i]);
}

/* A blocking job that returns PENDING sleeps on its thread until woken,
 * and is polled there again. */
typedef struct
{
  GThread *threads[2];
  guint    polls;
  WsWaker *_Atomic waker;
} PendingJob;

static WsPoll
pending_job (WsContext *cx,
             gpointer   data)
{
  PendingJob *p = data;

  p->threads[MIN (p->polls, 1)] = g_thread_self ();
  if (p->polls++ == 0)
    {
      atomic_store (&p->waker, ws_context_get_waker (cx));
      return WS_POLL_PENDING;
    }
  return WS_POLL_READY;
}

static void
test_pending_job_keeps_its_thread (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  PendingJob p = { 0, };
  WsWaker *waker;
  g_autoptr(WsTask) job = NULL;

  job = ws_runtime_spawn_blocking (rt, pending_job, &p, NULL);
  ws_test_wait_until ((waker = atomic_load (&p.waker)) != NULL);
  /* Other jobs meanwhile use other threads. */
  ws_test_reset_counters ();
  {
    g_autoptr(WsTask) other = ws_runtime_spawn_blocking (rt, ws_test_count_poll, NULL, NULL);

    g_assert_true (ws_task_wait (other, NULL, NULL));
  }
  ws_test_wake_and_unref (waker);
  g_assert_true (ws_task_wait (job, NULL, NULL));
  g_assert_cmpuint (p.polls, ==, 2);
  g_assert_true (p.threads[0] == p.threads[1]);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* A long blocking job sees its task's cancellation through the task's
 * GCancellable, from ws_task_cancel and from shutdown, and stops. */
typedef struct
{
  _Atomic gboolean running;
  _Atomic gboolean saw_cancel;
} LongJob;

static WsPoll
long_job (WsContext *cx,
          gpointer   data)
{
  LongJob *job = data;
  GCancellable *cancellable = ws_context_get_cancellable (cx);
  GError *error = NULL;

  g_assert_true (G_IS_CANCELLABLE (cancellable));
  g_assert_true (cancellable == ws_context_get_cancellable (cx));
  atomic_store (&job->running, TRUE);
  /* "Hashing a large file": until cancelled (the watchdog ends a hang). */
  while (!g_cancellable_is_cancelled (cancellable))
    g_usleep (100);
  atomic_store (&job->saw_cancel, TRUE);
  /* Stop with the cancellation as the task's error. */
  g_assert_true (g_cancellable_set_error_if_cancelled (cancellable, &error));
  ws_context_return_error (cx, error);
  return WS_POLL_READY;
}

static void
test_job_sees_task_cancel (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  LongJob job = { FALSE, };
  g_autoptr(WsTask) task = ws_runtime_spawn_blocking (rt, long_job, &job, NULL);
  g_autoptr(GError) error = NULL;

  ws_test_wait_until (atomic_load (&job.running));
  ws_task_cancel (task);
  /* The job stopped and returned the cancellation as its error. */
  g_assert_false (ws_task_wait (task, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_true (atomic_load (&job.saw_cancel));
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static void
test_job_sees_shutdown (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  LongJob job = { FALSE, };
  g_autoptr(WsTask) task = ws_runtime_spawn_blocking (rt, long_job, &job, NULL);

  ws_test_wait_until (atomic_load (&job.running));
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_assert_true (atomic_load (&job.saw_cancel));
  g_assert_true (ws_task_is_finished (task));
}

/* Jobs that compute run on one thread per CPU at most, however many are
 * queued: more would only take CPU time from the thread that spawned
 * them (a GTK main loop). Each job spins until its own thread has used
 * 2 ms of CPU, so it is runnable throughout, on a loaded machine too.
 * Under valgrind, threads wait for valgrind's one lock in turn (they are
 * not runnable, so the pool rightly gives them company): there the
 * bound is max-blocking-threads. */
static _Atomic gint busy_now;
static _Atomic gint busy_max;

static WsPoll
busy_job (WsContext *cx,
          gpointer   data)
{
  struct timespec start;
  struct timespec ts;

  count_in (&busy_now, &busy_max);
  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &start);
  do
    clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  while ((ts.tv_sec - start.tv_sec) * G_GINT64_CONSTANT (1000000000)
         + (ts.tv_nsec - start.tv_nsec) < 2000000);
  atomic_fetch_sub (&busy_now, 1);
  atomic_fetch_add (&ws_test_n_polled, 1);
  return WS_POLL_READY;
}

static void
test_busy_jobs_one_thread_per_cpu (void)
{
  guint n_cpus = g_get_num_processors ();
  guint n_jobs = 8 * n_cpus;
  gboolean valgrind = g_getenv ("WS_TEST_VALGRIND") != NULL;
  g_autoptr(WsRuntime) rt = ws_test_runtime_new ("n-workers", 1,
                                                 "max-blocking-threads", 64,
                                                 NULL);
  g_autofree WsTask **jobs = g_new (WsTask *, n_jobs);
  g_autoptr(WsMetrics) m = NULL;
  guint overdue;

  atomic_store (&busy_now, 0);
  atomic_store (&busy_max, 0);
  ws_test_reset_counters ();
  for (guint i = 0; i < n_jobs; i++)
    jobs[i] = ws_runtime_spawn_blocking (rt, busy_job, NULL, NULL);
  ws_test_wait_all (jobs, n_jobs);
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, n_jobs);
  overdue = n_overdue (rt);
  g_test_message ("%u CPUs: at most %d jobs at once, %u admitted by the deadline",
                  n_cpus, atomic_load (&busy_max), overdue);
  /* Each job admitted by the deadline (a loaded machine can hold the
   * queue's head for longer) may run beside the cpu_slots others. */
  g_assert_cmpint (atomic_load (&busy_max), <=, valgrind ? 64 : (gint) (n_cpus + overdue));

  /* The threads: one per CPU that ran jobs, the standby, and at most
   * one idle thread (the standby took a job just before a thread came
   * back from its job: the one that came back stands by, the one the
   * standby started waits idle, and no thread starts while one is idle),
   * and one more per job admitted by the deadline, which started the
   * next standby. */
  m = ws_runtime_get_metrics (rt);
  g_assert_cmpuint (ws_metrics_get_blocking_threads (m), <=,
                    valgrind ? 64 : n_cpus + 2 + overdue);
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
}

/* Jobs that block get company: 4 per CPU, and 2 more, each of which
 * waits until all of them have started (a job that waits for another,
 * as pipeline stages do), on a pool capped above their number. If the
 * pool counted them as busy, all would wait for ever (the watchdog). */
typedef struct
{
  WsLock  lock;
  WsCond  cond;
  guint   n_started;
  guint   n_expected;
} Rendezvous;

static WsPoll
rendezvous_job (WsContext *cx,
                gpointer   data)
{
  Rendezvous *r = data;

  ws_lock_lock (&r->lock);
  if (++r->n_started == r->n_expected)
    ws_cond_broadcast (&r->cond);
  while (r->n_started < r->n_expected)
    ws_cond_wait (&r->cond, &r->lock);
  ws_lock_unlock (&r->lock);
  atomic_fetch_add (&ws_test_n_polled, 1);
  return WS_POLL_READY;
}

static void
test_blocked_jobs_get_company (void)
{
  guint n_jobs = 4 * g_get_num_processors () + 2;
  g_autoptr(WsRuntime) rt = ws_test_runtime_new ("n-workers", 1,
                                                 "max-blocking-threads", n_jobs + 1,
                                                 NULL);
  g_autofree WsTask **jobs = g_new (WsTask *, n_jobs);
  Rendezvous r = { .n_expected = n_jobs };

  ws_lock_init (&r.lock);
  ws_cond_init (&r.cond);
  ws_test_reset_counters ();
  for (guint i = 0; i < n_jobs; i++)
    jobs[i] = ws_runtime_spawn_blocking (rt, rendezvous_job, &r, NULL);
  ws_test_wait_all (jobs, n_jobs);
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, n_jobs);
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
  ws_lock_clear (&r.lock);
  ws_cond_clear (&r.cond);
}

/* The standby's hand-off: idle threads from an earlier burst, then one
 * job per CPU that computes for a while and then waits for the last job,
 * one more that waits for it, and the last. The spawns of the last two
 * find a standby and wake nobody; when the computing jobs block, the
 * standby takes the next-to-last job, and must wake an idle thread for
 * the last one (the keep-alive is an hour, so nothing else would). */
typedef struct
{
  WsLock   lock;
  WsCond   cond;
  gboolean last_ran;
} LastJob;

static WsPoll
compute_then_wait_last (WsContext *cx,
                        gpointer   data)
{
  LastJob *l = data;
  struct timespec start;
  struct timespec ts;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &start);
  do
    clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  while ((ts.tv_sec - start.tv_sec) * G_GINT64_CONSTANT (1000000000)
         + (ts.tv_nsec - start.tv_nsec) < 5000000);
  ws_lock_lock (&l->lock);
  while (!l->last_ran)
    ws_cond_wait (&l->cond, &l->lock);
  ws_lock_unlock (&l->lock);
  return WS_POLL_READY;
}

static WsPoll
last_job (WsContext *cx,
          gpointer   data)
{
  LastJob *l = data;

  ws_lock_lock (&l->lock);
  l->last_ran = TRUE;
  ws_cond_broadcast (&l->cond);
  ws_lock_unlock (&l->lock);
  return WS_POLL_READY;
}

static void
test_standby_hands_off (void)
{
  guint n_cpus = g_get_num_processors ();
  guint n_warm = 2 * n_cpus + 2;
  g_autoptr(WsRuntime) rt = ws_test_runtime_new ("n-workers", 1,
                                                 "blocking-keep-alive", (gint64) G_TIME_SPAN_HOUR,
                                                 NULL);
  g_autofree WsTask **jobs = g_new (WsTask *, MAX (n_warm, n_cpus + 2));
  Rendezvous r = { .n_expected = n_warm };
  LastJob l = { .last_ran = FALSE };

  /* The earlier burst: jobs that wait for each other grow the pool;
   * their threads are idle afterwards. */
  ws_lock_init (&r.lock);
  ws_cond_init (&r.cond);
  for (guint i = 0; i < n_warm; i++)
    jobs[i] = ws_runtime_spawn_blocking (rt, rendezvous_job, &r, NULL);
  ws_test_wait_all (jobs, n_warm);
  ws_lock_clear (&r.lock);
  ws_cond_clear (&r.cond);

  ws_lock_init (&l.lock);
  ws_cond_init (&l.cond);
  for (guint i = 0; i <= n_cpus; i++)
    jobs[i] = ws_runtime_spawn_blocking (rt, compute_then_wait_last, &l, NULL);
  jobs[n_cpus + 1] = ws_runtime_spawn_blocking (rt, last_job, &l, NULL);
  ws_test_wait_all (jobs, n_cpus + 2);
  g_assert_true (l.last_ran);
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
  ws_lock_clear (&l.lock);
  ws_cond_clear (&l.cond);
}

/* A job that waits while runnable holds a CPU slot as a busy one: one
 * per CPU, each spinning on a flag that only a later job sets, and that
 * job. The meter says busy for ever; the pool still takes the last job
 * within its admission deadline (doc/blocking.md), so all of them end.
 * With the meter's word as the only rule the last job would stay queued
 * for ever (the watchdog). */
static _Atomic gboolean spin_flag;

static WsPoll
spin_on_flag (WsContext *cx,
              gpointer   data)
{
  while (!atomic_load_explicit (&spin_flag, memory_order_acquire))
    ;
  atomic_fetch_add (&ws_test_n_polled, 1);
  return WS_POLL_READY;
}

static WsPoll
set_spin_flag (WsContext *cx,
               gpointer   data)
{
  atomic_store_explicit (&spin_flag, TRUE, memory_order_release);
  atomic_fetch_add (&ws_test_n_polled, 1);
  return WS_POLL_READY;
}

static void
test_spinning_jobs_do_not_strand (void)
{
  guint n_cpus = g_get_num_processors ();
  g_autoptr(WsRuntime) rt = ws_test_runtime_new ("n-workers", 1, NULL);
  g_autofree WsTask **jobs = g_new (WsTask *, n_cpus + 1);

  atomic_store (&spin_flag, FALSE);
  ws_test_reset_counters ();
  for (guint i = 0; i < n_cpus; i++)
    jobs[i] = ws_runtime_spawn_blocking (rt, spin_on_flag, NULL, NULL);
  jobs[n_cpus] = ws_runtime_spawn_blocking (rt, set_spin_flag, NULL, NULL);
  ws_test_wait_all (jobs, n_cpus + 1);
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, n_cpus + 1);
  /* The meter never found a spinning job blocked: the deadline took the
   * last job. */
  g_assert_cmpuint (n_overdue (rt), >=, 1);
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
}

WS_TEST_MAIN ({ "/blocking-pool/spawn-blocking", test_spawn_blocking },
              { "/blocking-pool/busy-jobs-one-thread-per-cpu", test_busy_jobs_one_thread_per_cpu },
              { "/blocking-pool/blocked-jobs-get-company", test_blocked_jobs_get_company },
              { "/blocking-pool/standby-hands-off", test_standby_hands_off },
              { "/blocking-pool/spinning-jobs-do-not-strand", test_spinning_jobs_do_not_strand },
              { "/blocking-pool/job-sees-task-cancel", test_job_sees_task_cancel },
              { "/blocking-pool/job-sees-shutdown", test_job_sees_shutdown },
              { "/blocking-pool/cap", test_pool_cap },
              { "/blocking-pool/keep-alive", test_keep_alive },
              { "/blocking-pool/spawn-starts-no-thread", test_spawn_starts_no_thread },
              { "/blocking-pool/burst-under-cap", test_burst_under_cap },
              { "/blocking-pool/idle-retire", test_idle_retire },
              { "/blocking-pool/shutdown-timeout-with-stuck-job", test_shutdown_timeout_with_stuck_job },
              { "/blocking-pool/shutdown-cancels-queued-jobs", test_shutdown_cancels_queued_jobs },
              { "/blocking-pool/pending-job-keeps-its-thread", test_pending_job_keeps_its_thread })
