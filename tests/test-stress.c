/* test-stress.c: stress loops (stress suite)
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *  - shutdown racing 10,000 remote wakes and 10,000 remote spawns;
 *  - a runtime created and shut down 1,000 times;
 *  - blocking-pool churn: 512 rounds of jobs whose threads come and go;
 *  - 1,000,000 tasks with random wakes (from tasks and from a foreign
 *    thread), yields and cancels;
 *  - 1,000,000 sleeps, moved from the main thread while their tasks await
 *    them, all end, none early (ws-test-fixture.h, WsTestSleepers).
 *
 * Each checks that every task ended exactly once (one destroy notify, no
 * poll after the end, never two polls at once) and, through the harness,
 * that no task or waker reference is left. Sanitizer builds are 10 to 50
 * times slower: WS_STRESS_DIVISOR=N (tools/run-tests sets it) divides the
 * iteration counts, and every test prints the counts it ran.
 */

#include "config.h"

#include <gio/gio.h>

#include "ws-test-fixture.h"

#define scaled ws_test_scaled

static void
report (const char *what,
        guint       n,
        guint       full)
{
  if (n == full)
    g_test_message ("%s: %u (full count)", what, n);
  else
    g_test_message ("%s: %u (scaled down from %u by WS_STRESS_DIVISOR=%s)",
                    what, n, full, g_getenv ("WS_STRESS_DIVISOR"));
}

/* ---- shutdown racing remote wakes and spawns --------------------------- */

typedef struct
{
  _Atomic gint polls;
  _Atomic gint in_poll;
  _Atomic gint destroyed;
  _Atomic gint violations;
} Probe;

static void
probe_destroy (gpointer data)
{
  Probe *p = data;

  if (atomic_fetch_add (&p->destroyed, 1) != 0)
    atomic_fetch_add (&((Probe *) data)->violations, 1);
}

static gboolean
probe_enter (Probe *p)
{
  atomic_fetch_add (&p->polls, 1);
  if (atomic_fetch_add (&p->in_poll, 1) != 0 || atomic_load (&p->destroyed) != 0)
    {
      atomic_fetch_add (&p->violations, 1);
      return FALSE;
    }
  return TRUE;
}

static void
probe_leave (Probe *p)
{
  atomic_fetch_sub (&p->in_poll, 1);
}

#define N_SLOTS 64

/* Wakes (and releases) every waker found in @slots. */
static void
sweep (WsWaker *_Atomic *slots,
       guint             n)
{
  for (guint i = 0; i < n; i++)
    {
      WsWaker *w = atomic_exchange (&slots[i], NULL);

      if (w != NULL)
        {
          ws_waker_wake (w);
          ws_waker_unref (w);
        }
    }
}

/* Tasks that pend for ever, each keeping its waker in its own slot; two
 * foreign threads wake random slots, two others spawn more such tasks,
 * and the runtime is shut down at a random point of it all. */
#define RACE_RESIDENT 1000

typedef struct
{
  Probe    probe;
  guint    slot;
} RaceTask;

typedef struct
{
  WsWaker *_Atomic *slots;         /* RACE_RESIDENT + n_ops */
  RaceTask         *tasks;
  _Atomic guint     n_slots_used;
  _Atomic gboolean  shut_down;
  _Atomic guint     wakes;
  _Atomic guint     spawns;
  _Atomic guint     next_task;
  guint             n_ops;
  WsRuntime        *rt;
} Race;

static Race *race;

static void
race_task_destroy (gpointer data)
{
  probe_destroy (&((RaceTask *) data)->probe);
}

static WsPoll
resident_func (WsContext *cx,
               gpointer   data)
{
  RaceTask *t = data;
  WsWaker *old;

  if (!probe_enter (&t->probe))
    return WS_POLL_READY;
  old = atomic_exchange (&race->slots[t->slot], ws_context_get_waker (cx));
  if (old != NULL)
    ws_waker_unref (old);
  probe_leave (&t->probe);
  return WS_POLL_PENDING;
}

static void
race_spawn (Race  *r,
            guint  i)
{
  WsTask *task;

  r->tasks[i].slot = i;
  task = ws_runtime_spawn (r->rt, resident_func, &r->tasks[i], race_task_destroy);
  /* A spawn that loses the race with shutdown gets a cancelled task. */
  g_assert_nonnull (task);
  g_object_unref (task);
  atomic_store (&r->n_slots_used, MAX (atomic_load (&r->n_slots_used), i + 1));
}

static gpointer
race_waker_thread (gpointer data)
{
  Race *r = data;

  while (atomic_load (&r->wakes) < r->n_ops)
    {
      guint i = g_random_int_range (0, atomic_load (&r->n_slots_used));
      WsWaker *w = atomic_exchange (&r->slots[i], NULL);
      WsWaker *expected = NULL;

      if (w == NULL)
        {
          g_thread_yield ();
          continue;
        }
      /* Keep pace with the spawns until shutdown. */
      while (!atomic_load (&r->shut_down)
             && atomic_load (&r->wakes) > atomic_load (&r->spawns) + 1)
        g_thread_yield ();
      ws_waker_wake (w);
      atomic_fetch_add (&r->wakes, 1);
      /* Put it back unless the task, polled again, registered a new one:
       * wakes after shutdown then still reach (dead) tasks. */
      if (!atomic_compare_exchange_strong (&r->slots[i], &expected, w))
        ws_waker_unref (w);
    }
  return NULL;
}

static gpointer
race_spawn_thread (gpointer data)
{
  Race *r = data;
  guint i;

  while ((i = atomic_fetch_add (&r->next_task, 1)) < RACE_RESIDENT + r->n_ops)
    {
      /* Keep pace with the wakes until shutdown, so both are in flight. */
      while (!atomic_load (&r->shut_down)
             && atomic_load (&r->spawns) > atomic_load (&r->wakes))
        g_thread_yield ();
      race_spawn (r, i);
      atomic_fetch_add (&r->spawns, 1);
    }
  return NULL;
}

static void
test_shutdown_races_wakes_and_spawns (void)
{
  const guint full = 10000;
  Race *r = g_new0 (Race, 1);
  GThread *threads[4];
  guint shutdown_at;
  guint n_tasks;

  r->n_ops = scaled (full);
  report ("remote spawns and remote wakes racing shutdown", r->n_ops, full);
  n_tasks = RACE_RESIDENT + r->n_ops;
  r->slots = g_new0 (WsWaker *_Atomic, n_tasks);
  r->tasks = g_new0 (RaceTask, n_tasks);
  r->rt = ws_runtime_new (2);
  race = r;

  for (guint i = 0; i < RACE_RESIDENT; i++)
    race_spawn (r, i);
  atomic_store (&r->next_task, RACE_RESIDENT);

  threads[0] = g_thread_new ("spawner-1", race_spawn_thread, r);
  threads[1] = g_thread_new ("spawner-2", race_spawn_thread, r);
  threads[2] = g_thread_new ("waker-1", race_waker_thread, r);
  threads[3] = g_thread_new ("waker-2", race_waker_thread, r);

  /* Shut down somewhere in the middle of it all. */
  shutdown_at = g_random_int_range (r->n_ops / 4, 3 * r->n_ops / 4 + 1);
  while (atomic_load (&r->wakes) < shutdown_at)
    g_thread_yield ();
  g_assert_true (ws_runtime_shutdown (r->rt, -1));
  atomic_store (&r->shut_down, TRUE);
  g_test_message ("shut down after %u remote spawns and %u remote wakes",
                  atomic_load (&r->spawns), atomic_load (&r->wakes));

  for (guint i = 0; i < G_N_ELEMENTS (threads); i++)
    g_thread_join (threads[i]);
  sweep (r->slots, n_tasks);
  g_test_message ("in all: %u remote spawns, %u remote wakes, %u resident tasks",
                  atomic_load (&r->spawns), atomic_load (&r->wakes), RACE_RESIDENT);
  g_assert_cmpuint (atomic_load (&r->spawns), ==, r->n_ops);
  g_assert_cmpuint (atomic_load (&r->wakes), >=, r->n_ops);

  /* Every task ended exactly once, spawned before shutdown or not. */
  for (guint i = 0; i < n_tasks; i++)
    {
      g_assert_cmpint (atomic_load (&r->tasks[i].probe.destroyed), ==, 1);
      g_assert_cmpint (atomic_load (&r->tasks[i].probe.violations), ==, 0);
    }

  g_object_unref (r->rt);
  g_free (r->slots);
  g_free (r->tasks);
  g_free (r);
  race = NULL;
}

/* ---- runtime create and shutdown ------------------------------------ */

static WsPoll
ready_func (WsContext *cx,
            gpointer   data)
{
  Probe *p = data;

  if (probe_enter (p))
    probe_leave (p);
  return WS_POLL_READY;
}

static void
test_runtime_churn (void)
{
  const guint full = 1000;
  guint n = scaled (full);
  Probe *probes = g_new0 (Probe, 2 * n);

  report ("runtime create and shutdown", n, full);
  for (guint i = 0; i < n; i++)
    {
      WsRuntime *rt = ws_runtime_new (1 + i % 2);

      switch (i % 4)
        {
        case 0:
          /* Never started. */
          g_assert_true (ws_runtime_shutdown (rt, -1));
          break;
        case 1:
          /* A detached task and one with a handle, shut down at once. */
          ws_runtime_spawn_detached (rt, ready_func, &probes[2 * i], probe_destroy);
          g_object_unref (ws_runtime_spawn (rt, ready_func, &probes[2 * i + 1], probe_destroy));
          g_assert_true (ws_runtime_shutdown (rt, -1));
          break;
        case 2:
          {
            /* Waited for, then disposed without an explicit shutdown. */
            g_autoptr(WsTask) t = ws_runtime_spawn (rt, ready_func, &probes[2 * i], probe_destroy);

            g_assert_true (ws_task_wait (t, NULL, NULL));
          }
          break;
        default:
          /* Shut down twice; the second is a no-op. */
          ws_runtime_spawn_detached (rt, ready_func, &probes[2 * i], probe_destroy);
          g_assert_true (ws_runtime_shutdown (rt, -1));
          g_assert_true (ws_runtime_shutdown (rt, -1));
          break;
        }
      g_object_unref (rt);
    }

  for (guint i = 0; i < 2 * n; i++)
    {
      guint kind = (i / 2) % 4;
      /* Case 0 spawns nothing, case 1 two tasks, cases 2 and 3 one. */
      gboolean used = kind == 1 || (kind != 0 && i % 2 == 0);

      g_assert_cmpint (atomic_load (&probes[i].violations), ==, 0);
      g_assert_cmpint (atomic_load (&probes[i].destroyed), ==, used ? 1 : 0);
    }
  g_free (probes);
}

/* ---- blocking-pool churn ----------------------------------------------- */

static WsPoll
blocking_func (WsContext *cx,
               gpointer   data)
{
  Probe *p = data;

  if (probe_enter (p))
    {
      g_usleep (g_random_int_range (0, 200));
      probe_leave (p);
    }
  return WS_POLL_READY;
}

static void
test_blocking_churn (void)
{
  const guint full = 512;
  guint n = scaled (full);
  g_autoptr(GError) error = NULL;
  /* Threads idle for 1 ms exit, so rounds keep starting new ones. */
  g_autoptr(WsRuntime) rt = g_initable_new (WS_TYPE_RUNTIME, NULL, &error,
                                            "n-workers", 1,
                                            "max-blocking-threads", 8,
                                            "blocking-keep-alive", (gint64) 1000,
                                            NULL);
  Probe *probes = g_new0 (Probe, n * 4);
  guint64 n_jobs = 0;

  g_assert_no_error (error);
  report ("blocking-pool churn rounds", n, full);
  for (guint i = 0; i < n; i++)
    {
      WsTask *tasks[4];
      guint k = 1 + i % 4;

      for (guint j = 0; j < k; j++)
        tasks[j] = ws_runtime_spawn_blocking (rt, blocking_func, &probes[4 * i + j], probe_destroy);
      for (guint j = 0; j < k; j++)
        {
          g_assert_true (ws_task_wait (tasks[j], NULL, NULL));
          g_object_unref (tasks[j]);
        }
      n_jobs += k;
      /* Now and then let the idle threads expire. */
      if (i % 8 == 7)
        g_usleep (2000);
    }
  g_test_message ("blocking jobs: %" G_GUINT64_FORMAT, n_jobs);

  for (guint i = 0; i < n; i++)
    for (guint j = 0; j < 4; j++)
      {
        g_assert_cmpint (atomic_load (&probes[4 * i + j].violations), ==, 0);
        g_assert_cmpint (atomic_load (&probes[4 * i + j].destroyed), ==, j < 1 + i % 4 ? 1 : 0);
      }
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_free (probes);
}

/* ---- a million tasks with random wakes and cancels ----------------- */

#define BATCH 10000

typedef struct
{
  Probe   probe;
  guint8  pends;       /* PENDING polls before READY */
  guint8  yields;
} Job;

typedef struct
{
  WsWaker *_Atomic slots[N_SLOTS];
  Job             *jobs;
  _Atomic guint    ended;
  _Atomic gboolean stop;
  _Atomic guint    foreign_wakes;
  _Atomic guint    cancels;
  WsTask *_Atomic *handles;     /* some jobs have one */
  guint            n;
  WsRuntime       *rt;
  _Atomic guint    children;
  _Atomic guint    children_ended;
} Million;

static Million *million;

static void
job_destroy (gpointer data)
{
  Job *j = data;

  probe_destroy (&j->probe);
  atomic_fetch_add (&million->ended, 1);
}

static void
child_destroy (gpointer data)
{
  atomic_fetch_add (&million->children_ended, 1);
}

static WsPoll
child_func (WsContext *cx,
            gpointer   data)
{
  return WS_POLL_READY;
}

static WsPoll
job_func (WsContext *cx,
          gpointer   data)
{
  Job *j = data;
  Million *m = million;
  WsWaker *old;
  guint32 r = g_random_int ();

  if (!probe_enter (&j->probe))
    return WS_POLL_READY;
  probe_leave (&j->probe);

  /* Spawn children from the worker now and then: they go to its LIFO
   * slot and local queue, so a 4-slot queue overflows and gets stolen
   * from. */
  if ((r >> 24) % 4 == 0)
    for (guint i = 0; i < 3; i++)
      {
        atomic_fetch_add (&m->children, 1);
        ws_runtime_spawn_detached (m->rt, child_func, NULL, child_destroy);
      }

  /* Wake somebody else now and then. */
  if (r % 4 == 0)
    {
      WsWaker *w = atomic_exchange (&m->slots[(r >> 8) % N_SLOTS], NULL);

      if (w != NULL)
        {
          ws_waker_wake (w);
          ws_waker_unref (w);
        }
    }

  if (j->yields > 0)
    {
      j->yields--;
      return ws_context_yield (cx);
    }
  if (j->pends == 0)
    return WS_POLL_READY;
  j->pends--;

  old = atomic_exchange (&m->slots[(r >> 16) % N_SLOTS], ws_context_get_waker (cx));
  if (old != NULL)
    {
      ws_waker_wake (old);
      ws_waker_unref (old);
    }
  return WS_POLL_PENDING;
}

static gpointer
million_foreign_thread (gpointer data)
{
  Million *m = data;

  while (!atomic_load (&m->stop))
    {
      guint32 r = g_random_int ();
      WsWaker *w = atomic_exchange (&m->slots[r % N_SLOTS], NULL);

      if (w != NULL)
        {
          ws_waker_wake (w);
          ws_waker_unref (w);
          atomic_fetch_add (&m->foreign_wakes, 1);
        }

      /* Cancel a random job that has a handle. */
      if (m->handles != NULL && (r >> 8) % 4 == 0)
        {
          WsTask *t = atomic_exchange (&m->handles[(r >> 10) % BATCH], NULL);

          if (t != NULL)
            {
              ws_task_cancel (t);
              g_object_unref (t);
              atomic_fetch_add (&m->cancels, 1);
            }
        }
      else
        g_thread_yield ();
    }
  return NULL;
}

static void
test_million_tasks (void)
{
  const guint full = 1000000;
  guint total = scaled (full);
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  Million *m = g_new0 (Million, 1);
  GThread *foreign;
  guint64 polls = 0;
  guint done = 0;

  report ("tasks with random wakes and cancels", total, full);
  million = m;
  m->rt = rt;
  m->jobs = g_new0 (Job, BATCH);
  m->handles = g_new0 (WsTask *_Atomic, BATCH);
  foreign = g_thread_new ("foreign", million_foreign_thread, m);

  while (done < total)
    {
      guint n = MIN (BATCH, total - done);

      memset (m->jobs, 0, sizeof (Job) * BATCH);
      atomic_store (&m->ended, 0);
      m->n = n;
      for (guint i = 0; i < n; i++)
        {
          guint32 r = g_random_int ();

          m->jobs[i].pends = r % 4;
          m->jobs[i].yields = (r >> 2) % 8 == 0;
          if ((r >> 5) % 8 == 0)
            atomic_store (&m->handles[i], ws_runtime_spawn (rt, job_func, &m->jobs[i], job_destroy));
          else
            ws_runtime_spawn_detached (rt, job_func, &m->jobs[i], job_destroy);
        }

      /* Pending tasks whose waker nobody took are swept awake here. */
      while (atomic_load (&m->ended) < n
             || atomic_load (&m->children_ended) < atomic_load (&m->children))
        {
          sweep (m->slots, N_SLOTS);
          g_usleep (100);
        }
      for (guint i = 0; i < n; i++)
        {
          WsTask *t = atomic_exchange (&m->handles[i], NULL);

          g_assert_cmpint (atomic_load (&m->jobs[i].probe.destroyed), ==, 1);
          g_assert_cmpint (atomic_load (&m->jobs[i].probe.violations), ==, 0);
          polls += atomic_load (&m->jobs[i].probe.polls);
          if (t != NULL)
            {
              /* The destroy notify runs before the end is published, so
               * the handle may still be a moment behind: wait for it. */
              g_autoptr(GError) error = NULL;

              if (!ws_task_wait (t, NULL, &error))
                g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
              g_assert_true (ws_task_is_finished (t));
              g_object_unref (t);
            }
        }
      done += n;
    }

  atomic_store (&m->stop, TRUE);
  g_thread_join (foreign);
  sweep (m->slots, N_SLOTS);
  g_test_message ("%u tasks (and %u children), %" G_GUINT64_FORMAT " polls, %u foreign wakes, %u cancels",
                  done, atomic_load (&m->children), polls,
                  atomic_load (&m->foreign_wakes), atomic_load (&m->cancels));
  g_assert_cmpuint (atomic_load (&m->children_ended), ==, atomic_load (&m->children));
  {
    g_autoptr(WsMetrics) metrics = ws_runtime_get_metrics (rt);
    guint64 steals = 0, overflows = 0;

    for (guint i = 0; i < ws_metrics_get_n_workers (metrics); i++)
      {
        steals += ws_metrics_get_worker_steal_count (metrics, i);
        overflows += ws_metrics_get_worker_overflow_count (metrics, i);
      }
    /* The small-queue build makes both frequent. */
    g_test_message ("steals %" G_GUINT64_FORMAT ", local-queue overflows %" G_GUINT64_FORMAT,
                    steals, overflows);
  }
  g_assert_true (ws_runtime_shutdown (rt, -1));

  g_free (m->handles);
  g_free (m->jobs);
  g_free (m);
  million = NULL;
}

static void
test_million_sleeps (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  guint n = scaled (1000000);
  WsTestSleepers *m = ws_test_sleepers_new (n);

  report ("sleeps", n, 1000000);
  ws_test_sleepers_run (m, rt, 2 * G_USEC_PER_SEC);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  ws_test_sleepers_free (m);
}

int
main (int   argc,
      char *argv[])
{
  ws_test_init (&argc, &argv);

  ws_test_add_func ("/stress/shutdown-races-wakes-and-spawns", test_shutdown_races_wakes_and_spawns);
  ws_test_add_func ("/stress/runtime-create-shutdown", test_runtime_churn);
  ws_test_add_func ("/stress/blocking-pool-churn", test_blocking_churn);
  ws_test_add_func ("/stress/million-tasks", test_million_tasks);
  ws_test_add_func ("/stress/million-sleeps", test_million_sleeps);

  return g_test_run ();
}
