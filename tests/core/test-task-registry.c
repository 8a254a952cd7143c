/* test-task-registry.c: the set of live tasks of one host, the spawn gate
 * and the counts (ws-task-registry)
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Tasks are real tasks (ws_raw_task_new) on the fake host of
 * ws-test-fixture.h, whose registry is the one under test.
 */

#include "config.h"

#include "../ws-test-fixture.h"

/* The registry counts @alive tasks alive, @spawned accepted in all. */
static void
assert_counts (WsTaskRegistry *registry,
               gint64          alive,
               guint64         spawned)
{
  g_assert_cmpint (ws_task_registry_count (registry), ==, alive);
  g_assert_cmpuint (ws_task_registry_spawned (registry), ==, spawned);
}

static void
test_bind_and_remove (WsTestCoreFixture *f)
{
  gint64 live = ws_raw_task_get_n_live ();
  WsRawTask *task = ws_test_probe_task (&f->p, &f->host, ws_test_probe_ready, FALSE);

  g_assert_cmpuint (ws_test_task_refs (task), ==, 1);
  assert_counts (&f->host.registry, 0, 0);

  /* Binding links the task, takes a reference and counts it. */
  g_assert_true (ws_task_registry_bind (&f->host.registry, task));
  g_assert_true (task->bound && task->registry_linked);
  g_assert_cmpuint (ws_test_task_refs (task), ==, 2);
  assert_counts (&f->host.registry, 1, 1);

  /* Removed once: the set's reference is the caller's. */
  g_assert_true (ws_task_registry_remove (&f->host.registry, task));
  g_assert_false (task->registry_linked);
  g_assert_false (ws_task_registry_remove (&f->host.registry, task));
  ws_raw_task_unref (task);
  g_assert_cmpuint (ws_test_task_refs (task), ==, 1);

  /* Still counted alive until it completes. */
  g_assert_cmpint (ws_task_registry_count (&f->host.registry), ==, 1);
  ws_test_task_run (task);
  ws_test_probe_assert (&f->p, 1, 1);
  assert_counts (&f->host.registry, 0, 1);
  ws_test_assert_n_live (live);
}

/* A bound task that completes leaves the set by itself. */
static void
test_complete_leaves_set (WsTestCoreFixture *f)
{
  WsTestProbe probes[40] = { { NULL, }, };

  for (guint i = 0; i < G_N_ELEMENTS (probes); i++)
    {
      ws_test_probe_task (&probes[i], &f->host, ws_test_probe_ready, FALSE);
      g_assert_true (ws_task_registry_bind (&f->host.registry, probes[i].task));
    }
  g_assert_cmpint (ws_task_registry_count (&f->host.registry), ==, G_N_ELEMENTS (probes));
  /* Out of order: the middle, then the ends. */
  for (guint i = 0; i < G_N_ELEMENTS (probes); i++)
    ws_test_task_run (probes[(i * 7) % G_N_ELEMENTS (probes)].task);
  for (guint i = 0; i < G_N_ELEMENTS (probes); i++)
    ws_test_probe_assert (&probes[i], 1, 1);
  g_assert_cmpint (ws_task_registry_count (&f->host.registry), ==, 0);

  /* The set is empty: shutdown finds nothing. */
  ws_task_registry_close (&f->host.registry);
  ws_task_registry_shutdown_all (&f->host.registry, FALSE);
  ws_test_probe_assert (&probes[0], 1, 1);
}

static void
test_close_refuses_bind (WsTestCoreFixture *f)
{
  WsRawTask *task;

  g_assert_false (ws_task_registry_is_closed (&f->host.registry));
  ws_task_registry_close (&f->host.registry);
  g_assert_true (ws_task_registry_is_closed (&f->host.registry));

  task = ws_test_probe_task (&f->p, &f->host, ws_test_probe_ready, FALSE);
  g_assert_false (ws_task_registry_bind (&f->host.registry, task));
  /* Nothing taken, nothing counted. */
  g_assert_false (task->bound || task->counted);
  g_assert_cmpuint (ws_test_task_refs (task), ==, 1);
  assert_counts (&f->host.registry, 0, 0);

  ws_test_task_run (task);
  g_assert_cmpuint (f->p.destroyed, ==, 1);
}

/* Idle bound tasks are destroyed by shutdown_all itself; a task polled at
 * that moment is marked and destroyed by its poller after the poll. */
static void
shutdown_all_now (gpointer data)
{
  WsTestHost *h = data;

  ws_task_registry_close (&h->registry);
  ws_task_registry_shutdown_all (&h->registry, FALSE);
}

static void
test_shutdown_all_cancels (WsTestCoreFixture *f)
{
  WsTestProbe *idle[2] = { &f->p, &f->q };

  for (guint i = 0; i < G_N_ELEMENTS (idle); i++)
    {
      WsRawTask *task = ws_test_probe_task (idle[i], &f->host, ws_test_probe_pending, FALSE);

      g_assert_true (ws_task_registry_bind (&f->host.registry, task));
      ws_test_task_run (task);
      /* PENDING, nobody holds a waker: only the set keeps it. */
      g_assert_cmpuint (ws_test_task_refs (task), ==, 1);
      g_assert_cmpuint (idle[i]->destroyed, ==, 0);
    }

  f->r.during_poll = shutdown_all_now;
  f->r.during_poll_data = &f->host;
  ws_test_probe_task (&f->r, &f->host, ws_test_probe_pending, FALSE);
  g_assert_true (ws_task_registry_bind (&f->host.registry, f->r.task));
  g_assert_cmpint (ws_task_registry_count (&f->host.registry), ==, 3);

  /* Its poll shuts the set down: the idle tasks end there, the polled
   * one when its poll returns, and none is polled again. */
  ws_test_task_run (f->r.task);
  for (guint i = 0; i < G_N_ELEMENTS (idle); i++)
    ws_test_probe_assert (idle[i], 1, 1);
  ws_test_probe_assert (&f->r, 1, 1);
  g_assert_false (f->r.state_at_destroy & WS_STATE_COMPLETE);
  g_assert_cmpint (ws_task_registry_count (&f->host.registry), ==, 0);
  g_assert_cmpuint (ws_test_host_n_scheduled (&f->host), ==, 0);

  /* Shutting down again finds nothing. */
  ws_task_registry_shutdown_all (&f->host.registry, FALSE);
}

/* The spawn gate, on one thread: a spawn that enters before the close is
 * accepted and counted when it leaves; one that enters after is refused
 * and not counted. */
static void
test_spawn_gate (WsTestCoreFixture *f)
{
  WsTaskRegistry *registry = &f->host.registry;

  g_assert_true (ws_task_registry_enter_spawn (registry));
  /* In the gate: not counted yet. */
  assert_counts (registry, 0, 0);
  ws_task_registry_leave_spawn (registry);
  assert_counts (registry, 1, 1);

  /* Accepted without the gate (a worker's own spawn). */
  ws_task_registry_count_accepted (registry);
  assert_counts (registry, 2, 2);
  ws_task_registry_count_completed (registry);
  ws_task_registry_count_completed (registry);
  assert_counts (registry, 0, 2);

  ws_task_registry_close (registry);
  g_assert_false (ws_task_registry_enter_spawn (registry));
  g_assert_false (ws_task_registry_enter_spawn (registry));
  /* Refusals took their entries back: nobody is in the gate. */
  g_assert_true (ws_task_registry_wait_spawns (registry, g_get_monotonic_time ()));
  g_assert_true (ws_task_registry_wait_spawns (registry, -1));
  assert_counts (registry, 0, 2);
}

/* A spawner in the gate when the set closes: wait_spawns waits for it
 * (and gives up at its deadline), and returns once it leaves. */
typedef struct
{
  WsTaskRegistry  *registry;
  WsTestGate       entered;
  WsTestGate       go;
  gboolean         accepted;
  _Atomic gboolean left;
} Spawner;

static gpointer
spawner_thread (gpointer data)
{
  Spawner *s = data;

  s->accepted = ws_task_registry_enter_spawn (s->registry);
  ws_test_gate_open (&s->entered);
  ws_test_gate_wait (&s->go);
  atomic_store (&s->left, TRUE);
  ws_task_registry_leave_spawn (s->registry);
  return NULL;
}

static void
test_wait_spawns (WsTestCoreFixture *f)
{
  Spawner s = { &f->host.registry, };
  GThread *thread;
  gint64 start;

  ws_test_gate_init (&s.entered);
  ws_test_gate_init (&s.go);
  thread = g_thread_new ("spawner", spawner_thread, &s);
  ws_test_gate_wait (&s.entered);
  g_assert_true (s.accepted);

  ws_task_registry_close (s.registry);
  start = g_get_monotonic_time ();
  g_assert_false (ws_task_registry_wait_spawns (s.registry, start + 50 * G_TIME_SPAN_MILLISECOND));
  g_assert_cmpint (g_get_monotonic_time () - start, >=, 50 * G_TIME_SPAN_MILLISECOND);

  ws_test_gate_open (&s.go);
  g_assert_true (ws_task_registry_wait_spawns (s.registry, -1));
  /* It returned only once the spawner was out. */
  g_assert_true (atomic_load (&s.left));
  g_thread_join (thread);

  /* The count of that task ends with it (here, by hand). */
  assert_counts (s.registry, 1, 1);
  ws_task_registry_count_completed (s.registry);
  assert_counts (s.registry, 0, 1);
  ws_test_gate_clear (&s.entered);
  ws_test_gate_clear (&s.go);
}

/* More spawning threads than counter slots (two threads per slot), each
 * spawning through the gate and completing, while the set closes: every
 * spawn is either refused or counted, and the counts come back to 0. */
#define N_THREADS (2 * WS_TASK_REGISTRY_SHARDS + 3)
#define N_SPAWNS  2000

typedef struct
{
  WsTaskRegistry *registry;
  guint           accepted;
  guint           refused;
} Churn;

static gpointer
churn_thread (gpointer data)
{
  Churn *c = data;

  for (guint i = 0; i < N_SPAWNS; i++)
    {
      if (!ws_task_registry_enter_spawn (c->registry))
        {
          c->refused++;
          continue;
        }
      ws_task_registry_leave_spawn (c->registry);
      ws_task_registry_count_completed (c->registry);
      c->accepted++;
    }
  return NULL;
}

static void
test_counts_many_threads (WsTestCoreFixture *f)
{
  WsTaskRegistry *registry = &f->host.registry;
  Churn churn[N_THREADS];
  GThread *threads[N_THREADS];
  guint accepted = 0;
  guint refused = 0;

  for (guint i = 0; i < N_THREADS; i++)
    {
      churn[i] = (Churn) { registry, 0, 0 };
      threads[i] = g_thread_new ("churn", churn_thread, &churn[i]);
    }
  ws_test_wait_until (ws_task_registry_spawned (registry) >= N_SPAWNS);
  ws_task_registry_close (registry);
  g_assert_true (ws_task_registry_wait_spawns (registry, -1));
  for (guint i = 0; i < N_THREADS; i++)
    {
      g_thread_join (threads[i]);
      accepted += churn[i].accepted;
      refused += churn[i].refused;
    }
  g_test_message ("%u spawns accepted, %u refused", accepted, refused);
  g_assert_cmpuint (accepted + refused, ==, N_THREADS * N_SPAWNS);
  assert_counts (registry, 0, accepted);
}

/* Counter slots change owners as threads come and go, and threads
 * beyond the owned slots count on the shared one: waves of threads, more
 * than there are owned slots alive at once, each counting some spawns
 * and completions; no count is lost. */
#define WAVE_THREADS (WS_TASK_REGISTRY_SHARDS + 8)
#define WAVES        4
#define WAVE_COUNTS  2000

typedef struct
{
  WsTaskRegistry *registry;
  _Atomic guint  *arrived;
  guint           accepted;
  guint           completed;
} Wave;

static gpointer
wave_thread (gpointer data)
{
  Wave *w = data;

  for (guint i = 0; i < w->accepted; i++)
    ws_task_registry_count_accepted (w->registry);
  for (guint i = 0; i < w->completed; i++)
    ws_task_registry_count_completed (w->registry);
  /* Stay until the whole wave has counted: every slot is owned at once
   * and the last threads of the wave count on the shared one. */
  atomic_fetch_add (w->arrived, 1);
  while (atomic_load (w->arrived) < WAVE_THREADS)
    g_thread_yield ();
  return NULL;
}

static void
test_counter_slots (WsTestCoreFixture *f)
{
  WsTaskRegistry *registry = &f->host.registry;
  guint64 accepted = 0, completed = 0;

  for (guint wave = 0; wave < WAVES; wave++)
    {
      _Atomic guint arrived = 0;
      Wave waves[WAVE_THREADS];
      GThread *threads[WAVE_THREADS];

      for (guint i = 0; i < WAVE_THREADS; i++)
        {
          waves[i] = (Wave) { registry, &arrived, WAVE_COUNTS + i, WAVE_COUNTS + wave };
          accepted += waves[i].accepted;
          completed += waves[i].completed;
          threads[i] = g_thread_new ("wave", wave_thread, &waves[i]);
        }
      for (guint i = 0; i < WAVE_THREADS; i++)
        g_thread_join (threads[i]);
      /* Joined: every count is ordered before these reads. */
      assert_counts (registry, (gint64) (accepted - completed), accepted);
    }
}

WS_TEST_CORE_MAIN ({ "/task-registry/bind-and-remove", test_bind_and_remove },
                   { "/task-registry/complete-leaves-set", test_complete_leaves_set },
                   { "/task-registry/close-refuses-bind", test_close_refuses_bind },
                   { "/task-registry/shutdown-all-cancels", test_shutdown_all_cancels },
                   { "/task-registry/spawn-gate", test_spawn_gate },
                   { "/task-registry/wait-spawns", test_wait_spawns },
                   { "/task-registry/counts-many-threads", test_counts_many_threads },
                   { "/task-registry/counter-slots", test_counter_slots })
