/* test-scheduling.c: how workers pick what to run
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Through the public API: a yield lets other tasks run, a yield and a
 * wake from another thread in one poll queue the task once, a blocked
 * worker's queue is stolen (at any moment of the other worker's park),
 * tasks that respawn themselves for ever do not
 * starve remote spawns (nor hold them back for long), a worker that never
 * runs out of work still
 * dispatches its GMainContext, and the cooperative budget makes a greedy
 * task give up its worker.
 */

#include "config.h"

#include "ws-test-fixture.h"

/* A yield loop: 1,000 yields are 1,001 polls, and other tasks run between. */
typedef struct
{
  guint polls;
} Yielder;

static WsPoll
yielder_func (WsContext *cx,
              gpointer   data)
{
  Yielder *y = data;

  if (y->polls++ < 1000)
    return ws_context_yield (cx);
  return WS_POLL_READY;
}

static void
test_yield_loop (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  Yielder ys[4] = { 0, };
  WsTask *tasks[4];

  for (guint i = 0; i < 4; i++)
    tasks[i] = ws_runtime_spawn (rt, yielder_func, &ys[i], NULL);
  ws_test_wait_all (tasks, 4);
  for (guint i = 0; i < 4; i++)
    g_assert_cmpuint (ys[i].polls, ==, 1001);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* A yield whose task is woken by another thread during the same poll:
 * the task is queued once for both (one poll at a time, a poll after each
 * yield), whether the wake comes before or after the yield, and a
 * cancel of a task that yields for ever ends it once. */
#define RACERS 8
#define RACER_POLLS 2000

typedef struct
{
  _Atomic gint      in_poll;
  _Atomic guint     polls;
  _Atomic guint     destroyed;
  _Atomic gboolean  double_poll;
  guint             limit;      /* polls before READY; 0: until cancelled */
} Racer;

typedef struct
{
  Racer              racers[RACERS];
  WsWaker *_Atomic   slots[RACERS];
  _Atomic gboolean   stop;
} YieldRace;

static YieldRace *yield_race;

static WsPoll
racer_func (WsContext *cx,
            gpointer   data)
{
  Racer *r = data;
  guint n;
  WsWaker *old;

  if (atomic_fetch_add (&r->in_poll, 1) != 0)
    atomic_store (&r->double_poll, TRUE);
  n = atomic_fetch_add (&r->polls, 1) + 1;
  /* Every other poll, a waker for the other thread to wake while this
   * poll may still be running. */
  if (n % 2 == 0)
    {
      old = atomic_exchange (&yield_race->slots[r - yield_race->racers],
                             ws_context_get_waker (cx));
      if (old != NULL)
        ws_waker_unref (old);
    }
  g_thread_yield ();
  atomic_fetch_sub (&r->in_poll, 1);
  if (r->limit != 0 && n >= r->limit)
    return WS_POLL_READY;
  return ws_context_yield (cx);
}

static void
racer_destroy (gpointer data)
{
  atomic_fetch_add (&((Racer *) data)->destroyed, 1);
}

static gpointer
racer_waker_thread (gpointer data)
{
  YieldRace *y = data;

  while (!atomic_load (&y->stop))
    for (guint i = 0; i < RACERS; i++)
      {
        WsWaker *w = atomic_exchange (&y->slots[i], NULL);

        if (w != NULL)
          {
            ws_waker_wake (w);
            ws_waker_unref (w);
          }
      }
  return NULL;
}

static void
test_yield_races_wake (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  YieldRace *y = g_new0 (YieldRace, 1);
  WsTask *tasks[RACERS];
  GThread *waker;

  yield_race = y;
  waker = g_thread_new ("racer-waker", racer_waker_thread, y);
  for (guint i = 0; i < RACERS; i++)
    {
      /* The last one yields until it is cancelled. */
      y->racers[i].limit = i < RACERS - 1 ? RACER_POLLS : 0;
      tasks[i] = ws_runtime_spawn (rt, racer_func, &y->racers[i], racer_destroy);
    }
  while (atomic_load (&y->racers[RACERS - 1].polls) < 100)
    g_thread_yield ();
  ws_task_cancel (tasks[RACERS - 1]);
  ws_test_wait_all (tasks, RACERS - 1);
  g_assert_false (ws_task_wait (tasks[RACERS - 1], NULL, NULL));
  g_object_unref (tasks[RACERS - 1]);
  atomic_store (&y->stop, TRUE);
  g_thread_join (waker);

  for (guint i = 0; i < RACERS; i++)
    {
      g_assert_false (atomic_load (&y->racers[i].double_poll));
      g_assert_cmpuint (atomic_load (&y->racers[i].destroyed), ==, 1);
      if (i < RACERS - 1)
        g_assert_cmpuint (atomic_load (&y->racers[i].polls), ==, RACER_POLLS);
      else
        g_assert_cmpuint (atomic_load (&y->racers[i].polls), >=, 100);
      g_clear_pointer (&y->slots[i], ws_waker_unref);
    }
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_free (y);
}

/* A worker blocks on a plain condition variable until its child has run:
 * the child must be stolen and run by the other worker. */
typedef struct
{
  WsTestGate  child_done;
  GThread    *parent_thread;
  GThread    *child_thread;
} Blocker;

static WsPoll
blocker_child (WsContext *cx,
               gpointer   data)
{
  Blocker *b = data;

  b->child_thread = g_thread_self ();
  ws_test_gate_open (&b->child_done);
  return WS_POLL_READY;
}

static WsPoll
blocker_parent (WsContext *cx,
                gpointer   data)
{
  Blocker *b = data;
  g_autoptr(WsHandle) handle = ws_handle_get_current ();
  g_autoptr(WsTask) child = NULL;

  b->parent_thread = g_thread_self ();
  child = ws_handle_spawn (handle, blocker_child, b, NULL);
  ws_test_gate_wait (&b->child_done);
  return WS_POLL_READY;
}

static void
test_blocked_worker_child_stolen (void)
{
  /* With the LIFO slot on, the child would sit in the slot, which is not
   * stealable; this is what block_in_place is for. */
  g_autoptr(WsRuntime) rt = ws_test_runtime_new ("n-workers", 2,
                                                 "disable-lifo-slot", TRUE,
                                                 NULL);
  Blocker b = { 0, };
  g_autoptr(WsTask) task = NULL;
  g_autoptr(WsMetrics) metrics = NULL;
  guint64 steals = 0;

  ws_test_gate_init (&b.child_done);

  task = ws_runtime_spawn (rt, blocker_parent, &b, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_true (b.child_done.open);
  g_assert_true (b.child_thread != b.parent_thread);

  metrics = ws_runtime_get_metrics (rt);
  for (guint i = 0; i < ws_metrics_get_n_workers (metrics); i++)
    steals += ws_metrics_get_worker_steal_count (metrics, i);
  g_assert_cmpuint (steals, ==, 1);

  g_assert_true (ws_runtime_shutdown (rt, -1));
  ws_test_gate_clear (&b.child_done);
}

/* The same, round after round, at every moment of the other worker's
 * search and park, and with the LIFO slot on: the parent spawns two
 * children, the second pushes the first from the slot into the stealable
 * queue, and the parent blocks until the first has run. A round whose
 * child nobody takes hangs (the watchdog fails the test): the push's
 * notify may see the other worker still unparked, and then that worker's
 * look before it sleeps must find the child, whether or not it was the
 * last searcher (ws-sleepers.c, "Searchers"). In the chaos build, a
 * parker that looks only at the injection queue hangs here. */
#define BLOCKED_ROUNDS 400

/* What a round's blocking task waits for: a flag that another task sets. */
typedef struct
{
  _Atomic gboolean ran;
  guint            delay_us;
} BlockedRound;

static WsPoll
mark_ran (WsContext *cx,
          gpointer   data)
{
  BlockedRound *r = data;

  atomic_store (&r->ran, TRUE);
  return WS_POLL_READY;
}

/* Blocks its worker: busy-waits, not awaits. */
static WsPoll
wait_until_ran (WsContext *cx,
                gpointer   data)
{
  BlockedRound *r = data;

  while (!atomic_load (&r->ran))
    g_thread_yield ();
  return WS_POLL_READY;
}

static WsPoll
nothing_poll (WsContext *cx,
              gpointer   data)
{
  return WS_POLL_READY;
}

static WsPoll
blocking_parent_of_two (WsContext *cx,
                        gpointer   data)
{
  BlockedRound *r = data;
  gint64 until = g_get_monotonic_time () + r->delay_us;

  /* Let the other worker get to any point of its search or park. */
  while (g_get_monotonic_time () < until)
    ;
  ws_join_handle_free (ws_context_spawn (cx, mark_ran, r, NULL));
  ws_join_handle_free (ws_context_spawn (cx, nothing_poll, NULL, NULL));
  return wait_until_ran (cx, r);
}

/* Between rounds: sometimes the other worker has parked for long before
 * the next round; sometimes it is still on its way there. */
static void
pause_between_rounds (guint round)
{
  if (round % 4 == 0)
    g_usleep (g_test_rand_int_range (0, 3000));
}

static void
test_blocked_worker_child_stolen_rounds (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);

  for (guint i = 0; i < BLOCKED_ROUNDS; i++)
    {
      BlockedRound r = { FALSE, (guint) g_test_rand_int_range (0, 300) };
      WsJoinHandle *h = ws_runtime_spawn_joinable (rt, blocking_parent_of_two, &r, NULL);

      g_assert_true (ws_join_handle_wait (h, NULL));
      g_assert_true (ws_join_handle_finish_uint64 (h, NULL, NULL));
      g_assert_true (atomic_load (&r.ran));
      pause_between_rounds (i);
    }
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Two remote spawns, the first blocking its worker until the second has
 * run: a worker may take both from the injection queue in one batch, run
 * the first and keep the second in its run queue, so the other worker
 * must learn of it from that batch (take_injected notifies for it), not
 * from the spawns' notifies, which may have found it awake. A round whose
 * second task nobody takes hangs (the watchdog fails the test). */
static void
test_blocked_worker_batch_stolen_rounds (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);

  for (guint i = 0; i < BLOCKED_ROUNDS; i++)
    {
      BlockedRound r = { FALSE, 0 };
      WsJoinHandle *first = ws_runtime_spawn_joinable (rt, wait_until_ran, &r, NULL);
      WsJoinHandle *second = ws_runtime_spawn_joinable (rt, mark_ran, &r, NULL);

      g_assert_true (ws_join_handle_wait (second, NULL));
      g_assert_true (ws_join_handle_finish_uint64 (second, NULL, NULL));
      g_assert_true (ws_join_handle_wait (first, NULL));
      g_assert_true (ws_join_handle_finish_uint64 (first, NULL, NULL));
      pause_between_rounds (i);
    }
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Chains that respawn themselves from a worker for ever must not starve
 * remote spawns: the LIFO slot is capped per tick and the injection queue
 * is read every global-queue-interval ticks. (tokio 1.24 never finishes
 * this workload, spawn_many_remote_busy2.) */
static _Atomic gboolean busy_stop;
static _Atomic guint busy_links;

static WsPoll
busy_link (WsContext *cx,
           gpointer   data)
{
  gint64 end = g_get_monotonic_time () + 10;

  atomic_fetch_add (&busy_links, 1);
  while (g_get_monotonic_time () < end)
    ;
  if (!atomic_load (&busy_stop))
    {
      g_autoptr(WsHandle) handle = ws_handle_get_current ();
      g_autoptr(WsTask) next = ws_handle_spawn (handle, busy_link, NULL, NULL);
    }
  return WS_POLL_READY;
}

static void
test_respawning_chains_do_not_starve (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  WsTask *tasks[1000];

  atomic_store (&busy_stop, FALSE);
  atomic_store (&busy_links, 0);
  for (guint i = 0; i < 2; i++)
    ws_runtime_spawn_detached (rt, busy_link, NULL, NULL);
  ws_test_wait_until (atomic_load (&busy_links) >= 10);

  ws_test_reset_counters ();
  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    tasks[i] = ws_runtime_spawn (rt, ws_test_return_index, GUINT_TO_POINTER (i), NULL);
  ws_test_wait_all (tasks, G_N_ELEMENTS (tasks));
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, G_N_ELEMENTS (tasks));

  atomic_store (&busy_stop, TRUE);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* A task spawned from outside while a chain of tasks respawns itself on
 * the only worker runs after at most two ticks of the chain: when the
 * LIFO cap ends a tick of the chain (a link and three LIFO links), the
 * next link queues behind the remote tasks waiting. (At the fairness tick
 * alone it would wait up to global-queue-interval ticks of four links
 * each.) Counted in links, not time. */
static _Atomic gboolean chain_stop;
static _Atomic guint chain_links;

static WsPoll
chain_link (WsContext *cx,
            gpointer   data)
{
  atomic_fetch_add (&chain_links, 1);
  if (!atomic_load (&chain_stop))
    ws_join_handle_free (ws_context_spawn (cx, chain_link, NULL, NULL));
  return WS_POLL_READY;
}

static WsPoll
note_links (WsContext *cx,
            gpointer   data)
{
  ws_context_return_uint64 (cx, atomic_load (&chain_links));
  return WS_POLL_READY;
}

static void
test_remote_spawn_not_held_back_by_chain (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);

  atomic_store (&chain_stop, FALSE);
  atomic_store (&chain_links, 0);
  ws_runtime_spawn_detached (rt, chain_link, NULL, NULL);
  ws_test_wait_until (atomic_load (&chain_links) >= 100);

  for (guint i = 0; i < 20; i++)
    {
      WsJoinHandle *h = ws_runtime_spawn_joinable (rt, note_links, NULL, NULL);
      /* The spawn has returned: the task is in the injection queue. */
      guint64 pushed_at = atomic_load (&chain_links);
      guint64 ran_at = 0;

      g_assert_true (ws_join_handle_wait (h, NULL));
      g_assert_true (ws_join_handle_finish_uint64 (h, &ran_at, NULL));
      /* The rest of the tick that saw the push, and one more tick if
       * the push came after that tick's cap (the task may also have run
       * before this thread read the count). */
      g_assert_cmpuint (ran_at, <=, pushed_at + 8);
    }

  atomic_store (&chain_stop, TRUE);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* A timeout attached to a worker's context fires while that worker never
 * runs out of work: maintenance dispatches the context every
 * event-interval ticks. */
typedef struct
{
  _Atomic gboolean fired;
  GThread         *worker;
  GThread         *fired_on;
  WsWaker         *waker;
  guint            yields;
} TimerLoad;

static gboolean
timer_cb (gpointer data)
{
  TimerLoad *t = data;

  t->fired_on = g_thread_self ();
  atomic_store (&t->fired, TRUE);
  return G_SOURCE_REMOVE;
}

static WsPoll
busy_until_timer (WsContext *cx,
                  gpointer   data)
{
  TimerLoad *t = data;

  if (t->worker == NULL)
    {
      GSource *source = g_timeout_source_new (10);

      t->worker = g_thread_self ();
      g_source_set_callback (source, timer_cb, t, NULL);
      g_source_attach (source, g_main_context_get_thread_default ());
      g_source_unref (source);
    }
  if (!atomic_load (&t->fired))
    {
      t->yields++;
      return ws_context_yield (cx);   /* the worker always has work */
    }
  return WS_POLL_READY;
}

static void
test_timer_fires_under_load (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  TimerLoad t = { 0, };
  g_autoptr(WsTask) task = NULL;
  g_autoptr(WsMetrics) metrics = NULL;

  task = ws_runtime_spawn (rt, busy_until_timer, &t, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_true (atomic_load (&t.fired));
  g_assert_true (t.fired_on == t.worker);
  g_assert_cmpuint (t.yields, >, 0);

  metrics = ws_runtime_get_metrics (rt);
  g_assert_cmpuint (ws_metrics_get_worker_poll_count (metrics, 0), ==, t.yields + 1);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* The cooperative budget: a task that always finds its channel ready
 * gives up the worker after 128 operations. */
typedef struct
{
  WsChannel *ch;
  guint      received_in_first_poll;
  guint      polls;
  guint      total;
} Greedy;

static WsPoll
greedy_func (WsContext *cx,
             gpointer   data)
{
  Greedy *g = data;

  g->polls++;
  while (g->total < 1000)
    {
      gpointer item;

      if (ws_channel_poll_receive (g->ch, cx, &item, NULL) == WS_POLL_PENDING)
        return WS_POLL_PENDING;
      g->total++;
      if (g->polls == 1)
        g->received_in_first_poll++;
    }
  return WS_POLL_READY;
}

static void
test_budget_forces_yield (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  Greedy g = { ws_channel_new (1000, NULL) };
  g_autoptr(WsTask) task = NULL;
  g_autoptr(WsMetrics) m = NULL;

  for (guint i = 0; i < 1000; i++)
    g_assert_true (ws_channel_try_send (g.ch, GUINT_TO_POINTER (i + 1), NULL));
  task = ws_runtime_spawn (rt, greedy_func, &g, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));

  /* Always ready, yet the first poll gave up before the 1,000th item. */
  g_assert_cmpuint (g.total, ==, 1000);
  g_assert_cmpuint (g.received_in_first_poll, <, 1000);
  g_assert_cmpuint (g.received_in_first_poll, ==, 128);
  g_assert_cmpuint (g.polls, >, 1);
  m = ws_runtime_get_metrics (rt);
  g_assert_cmpuint (ws_metrics_get_worker_forced_yield_count (m, 0), >=, g.polls - 1);

  g_assert_true (ws_runtime_shutdown (rt, -1));
  ws_channel_unref (g.ch);
}

WS_TEST_MAIN ({ "/scheduling/yield-loop", test_yield_loop },
              { "/scheduling/yield-races-wake", test_yield_races_wake },
              { "/scheduling/blocked-worker-child-stolen", test_blocked_worker_child_stolen },
              { "/scheduling/blocked-worker-child-stolen/rounds",
                test_blocked_worker_child_stolen_rounds },
              { "/scheduling/blocked-worker-batch-stolen/rounds",
                test_blocked_worker_batch_stolen_rounds },
              { "/scheduling/respawning-chains-do-not-starve", test_respawning_chains_do_not_starve },
              { "/scheduling/remote-spawn-not-held-back-by-chain",
                test_remote_spawn_not_held_back_by_chain },
              { "/scheduling/timer-fires-under-load", test_timer_fires_under_load },
              { "/scheduling/budget-forces-yield", test_budget_forces_yield })
