/* ws-test-fixture.h: the fixtures that test programs share
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The one home of what more than one test program needs, so that no
 * program carries its own copy: a gate that threads wait at, and then
 *
 *  - for the core's unit tests (tests/core/, built with -DWS_TEST_CORE:
 *    GLib only, no GObject): fake tasks for the queues and a fake task
 *    host that records what it is asked to schedule;
 *  - for the programs of the GObject face: runtimes, the small task
 *    functions and destroy notifies that count, and a wait callback.
 *
 * It includes ws-test-util.h (the watchdog, the leak check, waiting for
 * a condition, the main () of a program), which the programs that use
 * only the public API (test-version) include alone.
 */

#pragma once

#include "ws-test-util.h"
#include "ws-lock-private.h"   /* POSIX locks: visible to TSan, unlike GMutex */

/* ---- a gate ------------------------------------------------------------ */

/* Threads wait at the gate until it opens; the test can wait until a
 * number of them are there. */
typedef struct
{
  WsLock   lock;
  WsCond   cond;
  gboolean open;
  guint    waiting;
} WsTestGate;

static inline void
ws_test_gate_init (WsTestGate *g)
{
  ws_lock_init (&g->lock);
  ws_cond_init (&g->cond);
  g->open = FALSE;
  g->waiting = 0;
}

static inline void
ws_test_gate_clear (WsTestGate *g)
{
  ws_lock_clear (&g->lock);
  ws_cond_clear (&g->cond);
}

/* Takes a WsTestGate: a GDestroyNotify-shaped function, for the APIs that
 * run a callback (ws_block_in_place). */
static inline void
ws_test_gate_wait (gpointer data)
{
  WsTestGate *g = data;

  ws_lock_lock (&g->lock);
  g->waiting++;
  ws_cond_broadcast (&g->cond);
  while (!g->open)
    ws_cond_wait (&g->cond, &g->lock);
  g->waiting--;
  ws_cond_broadcast (&g->cond);
  ws_lock_unlock (&g->lock);
}

static inline void
ws_test_gate_wait_for_waiters (WsTestGate *g,
                               guint       n)
{
  ws_lock_lock (&g->lock);
  while (g->waiting < n)
    ws_cond_wait (&g->cond, &g->lock);
  ws_lock_unlock (&g->lock);
}

static inline guint
ws_test_gate_get_waiting (WsTestGate *g)
{
  guint n;

  ws_lock_lock (&g->lock);
  n = g->waiting;
  ws_lock_unlock (&g->lock);
  return n;
}

static inline void
ws_test_gate_open (WsTestGate *g)
{
  ws_lock_lock (&g->lock);
  g->open = TRUE;
  ws_cond_broadcast (&g->cond);
  ws_lock_unlock (&g->lock);
}

#ifdef WS_TEST_CORE

/* ---- the core's unit tests: fake tasks and a fake host ----------------- */

#include "ws-raw-task-private.h"
#include "ws-task-registry-private.h"

/* A task pointer the queues can hold but nobody may dereference: @i + 1,
 * shifted past the alignment bits. */
static inline WsRawTask *
ws_test_fake_task (guint i)
{
  return (WsRawTask *) GSIZE_TO_POINTER (((gsize) i + 1) << 4);
}

static inline guint
ws_test_fake_task_index (WsRawTask *task)
{
  return (guint) ((GPOINTER_TO_SIZE (task) >> 4) - 1);
}

/* A host for tasks made with ws_raw_task_new (): schedule() records the
 * task (and keeps the reference it hands over) instead of queueing it
 * anywhere, and the test runs what was recorded (ws_test_host_run_next);
 * bind and release count their calls and use the host's own registry,
 * as every real host does. Binds on the first PENDING if
 * @bind_on_pending, as the worker pool does. */
typedef struct
{
  WsTaskHost      host;
  WsTaskRegistry  registry;
  WsLock          lock;
  GQueue          scheduled;      /* of WsRawTask, under lock */
  _Atomic guint   n_scheduled;    /* ever */
  _Atomic guint   n_yields;       /* schedules with is_yield */
  _Atomic guint   n_binds;
  _Atomic guint   n_releases;
  _Atomic gint    refs;           /* 1 for the test, 1 per live task */
} WsTestHost;

static inline void
ws_test_host_schedule (WsTaskHost *host,
                       WsRawTask  *task,
                       gboolean    is_yield)
{
  WsTestHost *h = (WsTestHost *) host;

  ws_lock_lock (&h->lock);
  g_queue_push_tail (&h->scheduled, task);
  ws_lock_unlock (&h->lock);
  atomic_fetch_add (&h->n_scheduled, 1);
  if (is_yield)
    atomic_fetch_add (&h->n_yields, 1);
}

static inline void
ws_test_host_ref (WsTaskHost *host)
{
  atomic_fetch_add (&((WsTestHost *) host)->refs, 1);
}

static inline void
ws_test_host_unref (WsTaskHost *host)
{
  /* Freed by ws_test_host_clear (), which checks the count is back to 1. */
  g_assert_cmpint (atomic_fetch_sub (&((WsTestHost *) host)->refs, 1), >, 1);
}

static inline gboolean
ws_test_host_bind (WsTaskHost *host,
                   WsRawTask  *task)
{
  atomic_fetch_add (&((WsTestHost *) host)->n_binds, 1);
  return ws_task_registry_bind_task (host, task);
}

static inline gboolean
ws_test_host_release (WsTaskHost *host,
                      WsRawTask  *task)
{
  atomic_fetch_add (&((WsTestHost *) host)->n_releases, 1);
  return ws_task_registry_release_task (host, task);
}

static const WsTaskHostVTable ws_test_host_vtable = {
  .schedule = ws_test_host_schedule,
  .ref = ws_test_host_ref,
  .unref = ws_test_host_unref,
  .bind = ws_test_host_bind,
  .release = ws_test_host_release,
};

static inline void
ws_test_host_init (WsTestHost *h,
                   gboolean    bind_on_pending)
{
  h->host = (WsTaskHost) { .vtable = &ws_test_host_vtable, .registry = &h->registry,
                           .bind_on_pending = bind_on_pending };
  ws_task_registry_init (&h->registry);
  ws_lock_init (&h->lock);
  g_queue_init (&h->scheduled);
  atomic_init (&h->n_scheduled, 0);
  atomic_init (&h->n_yields, 0);
  atomic_init (&h->n_binds, 0);
  atomic_init (&h->n_releases, 0);
  atomic_init (&h->refs, 1);
}

/* Every task has been freed (it held a host reference until then) and
 * nothing is left scheduled. */
static inline void
ws_test_host_clear (WsTestHost *h)
{
  g_assert_cmpuint (h->scheduled.length, ==, 0);
  g_assert_cmpint (atomic_load (&h->refs), ==, 1);
  ws_task_registry_clear (&h->registry);
  ws_lock_clear (&h->lock);
}

static inline guint
ws_test_host_n_scheduled (WsTestHost *h)
{
  return atomic_load (&h->n_scheduled);
}

/* The oldest scheduled task (its queued reference is now the caller's),
 * or NULL. */
static inline WsRawTask *
ws_test_host_pop (WsTestHost *h)
{
  WsRawTask *task;

  ws_lock_lock (&h->lock);
  task = g_queue_pop_head (&h->scheduled);
  ws_lock_unlock (&h->lock);
  return task;
}

/* Runs @task, whose queued reference the caller holds, as a worker
 * would: one ws_raw_task_run () with a fresh context. */
static inline void
ws_test_task_run (WsRawTask *task)
{
  WsContext cx = { NULL, };

  cx.budget = 128;
  ws_raw_task_run (task, &cx);
}

/* Runs the oldest scheduled task: TRUE if there was one. */
static inline gboolean
ws_test_host_run_next (WsTestHost *h)
{
  WsRawTask *task = ws_test_host_pop (h);

  if (task == NULL)
    return FALSE;
  ws_test_task_run (task);
  return TRUE;
}

/* The reference count in a task's state word. */
static inline guint64
ws_test_task_refs (WsRawTask *task)
{
  return ws_raw_task_get_state (task) >> WS_STATE_REF_SHIFT;
}

/* What happened to a task of a core test; the task's data. */
typedef struct
{
  WsRawTask  *task;
  WsTestHost *host;
  guint       polls;
  guint       destroyed;
  guint64     state_at_destroy;    /* the word when the destroy notify ran */
  guint64     state_in_poll;       /* the word at the end of the last poll */
  guint       scheduled_in_poll;   /* schedules the host had seen by then */
  guint       results_freed;
  WsWaker    *waker;               /* a waker a poll kept, if any */
  /* Called inside each poll of ws_test_probe_pending, if set. */
  void      (*during_poll) (gpointer data);
  gpointer    during_poll_data;
} WsTestProbe;

static inline void
ws_test_probe_destroy (gpointer data)
{
  WsTestProbe *p = data;

  p->destroyed++;
  p->state_at_destroy = ws_raw_task_get_state (p->task);
}

/* A new task on @h that runs @func with @p as its data. */
static inline WsRawTask *
ws_test_probe_task (WsTestProbe *p,
                    WsTestHost  *h,
                    WsTaskFunc   func,
                    gboolean     join_interest)
{
  p->host = h;
  p->task = ws_raw_task_new (&h->host, func, p, ws_test_probe_destroy, join_interest);
  return p->task;
}

/* Polled @polls times, its destroy notify run @destroyed times. */
static inline void
ws_test_probe_assert (WsTestProbe *p,
                      guint        polls,
                      guint        destroyed)
{
  g_assert_cmpuint (p->polls, ==, polls);
  g_assert_cmpuint (p->destroyed, ==, destroyed);
}

/* For a poll function: counts the poll and notes the word and the host
 * as they are inside it. */
static inline WsTestProbe *
ws_test_probe_polled (WsContext *cx,
                      gpointer   data)
{
  WsTestProbe *p = data;

  p->polls++;
  g_assert_true (cx->task == p->task);
  p->state_in_poll = ws_raw_task_get_state (p->task);
  p->scheduled_in_poll = ws_test_host_n_scheduled (p->host);
  return p;
}

static inline void
ws_test_probe_free_result (gpointer data)
{
  ((WsTestProbe *) data)->results_freed++;
}

/* READY with a pointer result: the probe, "freed" by counting. */
static inline WsPoll
ws_test_probe_ready (WsContext *cx,
                     gpointer   data)
{
  WsTestProbe *p = ws_test_probe_polled (cx, data);

  cx->result.kind = WS_RESULT_POINTER;
  cx->result.u.pointer.data = p;
  cx->result.u.pointer.destroy = ws_test_probe_free_result;
  return WS_POLL_READY;
}

/* PENDING, after the probe's during_poll. */
static inline WsPoll
ws_test_probe_pending (WsContext *cx,
                       gpointer   data)
{
  WsTestProbe *p = ws_test_probe_polled (cx, data);

  if (p->during_poll != NULL)
    p->during_poll (p->during_poll_data);
  return WS_POLL_PENDING;
}

/* The fixture of a core test: a fresh host (binding at spawn; a test may
 * set host.host.bind_on_pending before its first task), three probes and
 * an outcome to read into. The host must end empty. */
typedef struct
{
  WsTestHost  host;
  WsTestProbe p;
  WsTestProbe q;
  WsTestProbe r;
  WsResult    out;
} WsTestCoreFixture;

typedef struct
{
  const char *path;
  void      (*func) (WsTestCoreFixture *f);
} WsTestCoreDef;

static inline void
ws_test_core_run_case (gconstpointer data)
{
  const WsTestCoreDef *def = data;
  WsTestCoreFixture f = { 0, };

  ws_test_host_init (&f.host, FALSE);
  def->func (&f);
  ws_result_clear (&f.out);
  ws_test_host_clear (&f.host);
}

/* The main () of a program of core tests that take a WsTestCoreFixture:
 * WS_TEST_CORE_MAIN ({ "/subject/case", test_case }, ...). Each case runs
 * under the watchdog, as ws_test_add_func () cases do. */
#define WS_TEST_CORE_MAIN(...) \
  int \
  main (int   argc, \
        char *argv[]) \
  { \
    static const WsTestCoreDef ws_test_defs[] = { __VA_ARGS__ }; \
    ws_test_init (&argc, &argv); \
    for (gsize i = 0; i < G_N_ELEMENTS (ws_test_defs); i++) \
      ws_test_add_data_func (ws_test_defs[i].path, &ws_test_defs[i], ws_test_core_run_case); \
    return g_test_run (); \
  }

#else /* !WS_TEST_CORE */

/* ---- the GObject face: runtimes, task functions, counters -------------- */

#include <gio/gio.h>

#include "wsrt.h"

/* Bumped by the task functions and the destroy notify below; a test that
 * reads them resets them first. */
static _Atomic gint ws_test_n_polled;
static _Atomic gint ws_test_n_destroyed;

static inline void
ws_test_reset_counters (void)
{
  atomic_store (&ws_test_n_polled, 0);
  atomic_store (&ws_test_n_destroyed, 0);
}

static inline void
ws_test_count_destroy (gpointer data)
{
  atomic_fetch_add (&ws_test_n_destroyed, 1);
}

/* READY at once, and nothing else. */
static inline WsPoll
ws_test_ready (WsContext *cx,
               gpointer   data)
{
  return WS_POLL_READY;
}

/* Counts its poll, then READY. */
static inline WsPoll
ws_test_count_poll (WsContext *cx,
                    gpointer   data)
{
  atomic_fetch_add (&ws_test_n_polled, 1);
  return WS_POLL_READY;
}

/* Counts its polls and is PENDING for ever, dropping its waker: only a
 * cancel or shutdown ends it. */
static inline WsPoll
ws_test_pending_forever (WsContext *cx,
                         gpointer   data)
{
  atomic_fetch_add (&ws_test_n_polled, 1);
  return WS_POLL_PENDING;
}

/* Returns @value as the task's G_TYPE_INT value. */
static inline WsPoll
ws_test_return_int (WsContext *cx,
                    gint       value)
{
  GValue v = G_VALUE_INIT;

  g_value_init (&v, G_TYPE_INT);
  g_value_set_int (&v, value);
  ws_context_return_value (cx, &v);
  return WS_POLL_READY;
}

/* Counts its poll and returns GPOINTER_TO_UINT (@data) as a G_TYPE_UINT
 * value. */
static inline WsPoll
ws_test_return_index (WsContext *cx,
                      gpointer   data)
{
  GValue v = G_VALUE_INIT;

  atomic_fetch_add (&ws_test_n_polled, 1);
  g_value_init (&v, G_TYPE_UINT);
  g_value_set_uint (&v, GPOINTER_TO_UINT (data));
  ws_context_return_value (cx, &v);
  return WS_POLL_READY;
}

/* Returns GPOINTER_TO_UINT (@data) as a plain integer
 * (ws_context_return_uint64). */
static inline WsPoll
ws_test_return_uint64 (WsContext *cx,
                       gpointer   data)
{
  ws_context_return_uint64 (cx, GPOINTER_TO_UINT (data));
  return WS_POLL_READY;
}

/* Waits for the task of @h (off the workers), which must end with a plain
 * integer, and takes it; @h is freed. */
static inline guint64
ws_test_join_uint64 (WsJoinHandle *h)
{
  guint64 v = 0;

  g_assert_true (ws_join_handle_wait (h, NULL));
  g_assert_true (ws_join_handle_finish_uint64 (h, &v, NULL));
  return v;
}

/* One link of a chain of tasks: a link of depth n > 0 spawns the link
 * of depth n - 1, awaits it and returns its value + 1, so the chain's
 * first link returns its depth. Spawn it with g_free as destroy. */
typedef struct
{
  guint         depth;
  WsJoinHandle *next;
} WsTestChainLink;

static inline WsPoll
ws_test_chain_link_poll (WsContext *cx,
                         gpointer   data)
{
  WsTestChainLink *l = data;
  guint64 v = 0;

  if (l->depth == 0)
    {
      ws_context_return_uint64 (cx, 0);
      return WS_POLL_READY;
    }
  if (l->next == NULL)
    {
      WsTestChainLink *n = g_new0 (WsTestChainLink, 1);

      n->depth = l->depth - 1;
      l->next = ws_context_spawn (cx, ws_test_chain_link_poll, n, g_free);
    }
  if (ws_join_handle_poll (l->next, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  g_assert_true (ws_join_handle_finish_uint64 (g_steal_pointer (&l->next), &v, NULL));
  ws_context_return_uint64 (cx, v + 1);
  return WS_POLL_READY;
}

/* Ends the task with G_IO_ERROR_NOT_FOUND ("gone"). */
static inline WsPoll
ws_test_return_not_found (WsContext *cx,
                          gpointer   data)
{
  ws_context_return_error (cx, g_error_new_literal (G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "gone"));
  return WS_POLL_READY;
}

/* A started runtime with the properties given as name/value pairs,
 * NULL-terminated (as g_initable_new ()); the construction must succeed. */
static inline WsRuntime *
ws_test_runtime_new (const char *first_property_name,
                     ...)
{
  g_autoptr(GError) error = NULL;
  GObject *rt;
  va_list args;

  va_start (args, first_property_name);
  rt = g_initable_new_valist (WS_TYPE_RUNTIME, first_property_name, args, NULL, &error);
  va_end (args);
  g_assert_no_error (error);
  g_assert_nonnull (rt);
  return WS_RUNTIME (rt);
}

/* Each of @n tasks ends successfully; drops them. */
static inline void
ws_test_wait_all (WsTask **tasks,
                  guint    n)
{
  for (guint i = 0; i < n; i++)
    {
      g_assert_true (ws_task_wait (tasks[i], NULL, NULL));
      g_object_unref (tasks[i]);
    }
}

/* Wakes @waker and drops the reference the caller held on it. */
static inline void
ws_test_wake_and_unref (WsWaker *waker)
{
  ws_waker_wake (waker);
  ws_waker_unref (waker);
}

/* A runtime, and a new GMainContext pushed as this thread's default: for
 * local tasks and for callbacks delivered to the caller's context. */
typedef struct
{
  WsRuntime    *rt;
  GMainContext *ctx;
} WsTestOnContext;

static inline void
ws_test_on_context_init (WsTestOnContext *f,
                         guint            n_workers)
{
  f->rt = ws_runtime_new (n_workers);
  f->ctx = g_main_context_new ();
  g_main_context_push_thread_default (f->ctx);
}

/* Shuts the runtime down (it must succeed), pops the context, drops
 * both. */
static inline void
ws_test_on_context_clear (WsTestOnContext *f)
{
  g_assert_true (ws_runtime_shutdown (f->rt, -1));
  g_main_context_pop_thread_default (f->ctx);
  g_clear_pointer (&f->ctx, g_main_context_unref);
  g_clear_object (&f->rt);
}

/* What a ws_task_wait_async () callback got, and how often it ran. */
typedef struct
{
  guint     calls;
  gboolean  ok;
  GError   *error;
} WsTestWaitResult;

static inline void
ws_test_wait_cb (GObject      *object,
                 GAsyncResult *result,
                 gpointer      data)
{
  WsTestWaitResult *r = data;

  r->calls++;
  g_clear_error (&r->error);
  r->ok = ws_task_wait_finish (WS_TASK (object), result, &r->error);
}

/* Many tasks awaiting sleeps in deadline order (test-sleep, test-stress).
 * N tasks are spawned on @rt, each awaiting a sleep an hour away; once
 * all await, the main thread moves every deadline into a window, in the
 * random order the tasks were spawned, starting about when all resets
 * can have been made. Each task records when it saw its sleep ready and
 * in which order it ended; the main thread records when each reset
 * returned. The window is eight times what spawning the tasks and their
 * first polls took, at least @min_spread and at most 30 s, so that the
 * workers can run the wakes as they come and the whole case stays well
 * inside the sanitizer builds' watchdog (an ASan build spends about 12 s
 * setting up a million).
 *
 * A task is due at its deadline, or when its reset returned if that was
 * later. run () asserts that none ended before its deadline, and that
 * every one ended (a lost wake is a hang the watchdog reports); it
 * reports how late the latest was and the largest order inversion (how
 * much later than a task's own the deadline of one that ended before it
 * was). It asserts no bound on those: any one task's end can be delayed
 * by as long as the system leaves its worker thread stopped (a TSan
 * build on a busy machine: one task 30 ms later than the 410 ms by which
 * the rest of a million were behind), which the test cannot see. The
 * order that is the code's alone is asserted where nothing else can
 * change it: /sleep/in-deadline-order and
 * /sleep/wait-async-many-in-deadline-order, on one context, and the
 * timer wheel's own test. */
#define WS_TEST_SLEEPERS_MAX_SPREAD (30 * G_USEC_PER_SEC)

typedef struct
{
  guint           n;
  WsSleep       **naps;
  gint64         *deadline;
  gint64         *due;               /* MAX (deadline, when its reset returned) */
  gint64         *ended_at;
  guint32        *order;             /* task index by end */
  guint8         *awaiting;          /* written by the task only */
  _Atomic guint   n_awaiting;
  _Atomic guint   n_claimed;         /* places taken in order[] */
  _Atomic guint   n_ended;
  gint64          setup;
  gint64          spread;
  gint64          resets_late;       /* the resets' end less the first deadline */
  gint64          max_late;          /* the most a task ended after it was due */
  gint64          max_inversion;
} WsTestSleepers;

static WsTestSleepers *ws_test_sleepers_current;

static inline WsTestSleepers *
ws_test_sleepers_new (guint n)
{
  WsTestSleepers *m = g_new0 (WsTestSleepers, 1);

  m->n = n;
  m->naps = g_new (WsSleep *, n);
  m->deadline = g_new (gint64, n);
  m->due = g_new (gint64, n);
  m->ended_at = g_new0 (gint64, n);
  m->order = g_new (guint32, n);
  m->awaiting = g_new0 (guint8, n);
  return m;
}

static inline WsPoll
ws_test_sleepers_func (WsContext *cx,
                       gpointer   data)
{
  WsTestSleepers *m = ws_test_sleepers_current;
  guint i = GPOINTER_TO_UINT (data);

  if (ws_sleep_poll (m->naps[i], cx) == WS_POLL_PENDING)
    {
      if (!m->awaiting[i])
        {
          m->awaiting[i] = 1;
          atomic_fetch_add (&m->n_awaiting, 1);
        }
      return WS_POLL_PENDING;
    }
  m->ended_at[i] = g_get_monotonic_time ();
  m->order[atomic_fetch_add (&m->n_claimed, 1)] = i;
  /* After the writes above: the main thread reads them once all ended. */
  atomic_fetch_add (&m->n_ended, 1);
  return WS_POLL_READY;
}

static inline void
ws_test_sleepers_run (WsTestSleepers *m,
                      WsRuntime      *rt,
                      gint64          min_spread)
{
  g_autoptr(GRand) rand = g_rand_new_with_seed (20261124);
  gint64 start, base, first, latest = 0;

  ws_test_sleepers_current = m;
  start = g_get_monotonic_time ();
  for (guint i = 0; i < m->n; i++)
    {
      m->naps[i] = ws_sleep_new (G_TIME_SPAN_HOUR);
      ws_runtime_spawn_detached (rt, ws_test_sleepers_func, GUINT_TO_POINTER (i), NULL);
    }
  ws_test_wait_until (atomic_load (&m->n_awaiting) == m->n);
  m->setup = g_get_monotonic_time () - start;

  /* The resets take less time than the spawns and first polls did, on a
   * machine that gives the test its share. */
  base = g_get_monotonic_time () + m->setup + 100 * G_TIME_SPAN_MILLISECOND;
  m->spread = CLAMP (8 * m->setup, min_spread, WS_TEST_SLEEPERS_MAX_SPREAD);
  /* The deadlines end up to setup + spread from now, a wait this test
   * derived from its own setup time: the watchdog starts after it. */
  ws_test_watchdog_extend (base - g_get_monotonic_time () + m->spread);
  first = base + m->spread;
  for (guint i = 0; i < m->n; i++)
    {
      m->deadline[i] = base + (gint64) g_rand_double_range (rand, 0, (gdouble) m->spread);
      ws_sleep_reset (m->naps[i], m->deadline[i]);
      m->due[i] = MAX (m->deadline[i], g_get_monotonic_time ());
      first = MIN (first, m->deadline[i]);
    }
  m->resets_late = g_get_monotonic_time () - first;
  ws_test_wait_until (atomic_load (&m->n_ended) == m->n);

  for (guint k = 0; k < m->n; k++)
    {
      guint i = m->order[k];

      g_assert_cmpint (m->ended_at[i], >=, m->deadline[i]);
      m->max_late = MAX (m->max_late, m->ended_at[i] - m->due[i]);
      m->max_inversion = MAX (m->max_inversion, latest - m->due[i]);
      latest = MAX (latest, m->due[i]);
    }
  g_test_message ("%u sleeps: set up in %" G_GINT64_FORMAT " ms, deadlines over %"
                  G_GINT64_FORMAT " ms, resets done %" G_GINT64_FORMAT " ms %s the first;"
                  " latest end %" G_GINT64_FORMAT " ms after it was due; largest order"
                  " inversion %" G_GINT64_FORMAT " ms",
                  m->n, m->setup / 1000, m->spread / 1000, ABS (m->resets_late) / 1000,
                  m->resets_late > 0 ? "after" : "before", m->max_late / 1000,
                  m->max_inversion / 1000);
}

/* Call after the runtime has shut down. */
static inline void
ws_test_sleepers_free (WsTestSleepers *m)
{
  for (guint i = 0; i < m->n; i++)
    ws_sleep_unref (m->naps[i]);
  g_free (m->naps);
  g_free (m->deadline);
  g_free (m->due);
  g_free (m->ended_at);
  g_free (m->order);
  g_free (m->awaiting);
  g_free (m);
  ws_test_sleepers_current = NULL;
}

/* ---- an async wait cancelled from another thread ------------------------- */

/* One round's wait: the awaitable, what its callback got, and when. */
typedef struct
{
  gpointer  awaitable;
  GError   *error;
  gint      done;           /* atomic: the callback ran */
  gint      released;       /* atomic: its dispatch has returned */
} WsTestCrossCancel;

/* Starts the async wait of @c->awaitable with @cancellable; its callback
 * stores the finish function's error in @c->error and then calls
 * ws_test_cross_cancel_done (@c). */
typedef void (*WsTestStartWait) (WsTestCrossCancel *c,
                                 GCancellable      *cancellable);

static inline void
ws_test_cross_cancel_done (WsTestCrossCancel *c)
{
  g_atomic_int_set (&c->done, TRUE);
}

/* Connected after the wait's own cancel link: keeps the cancelling thread
 * inside g_cancellable_cancel () until the callback's dispatch has
 * returned and the wait has let go of what it held (at most 2 s): a
 * GCancellableSource disposed at that moment is what GLib 2.74 leaks. */
static inline void
ws_test_cross_cancel_hold (GCancellable *cancellable,
                           gpointer      data)
{
  WsTestCrossCancel *c = data;

  (void) ws_test_wait_until_for (g_atomic_int_get (&c->released), 2 * G_USEC_PER_SEC);
}

static inline gpointer
ws_test_cancel_in_thread (gpointer data)
{
  g_cancellable_cancel (data);
  return NULL;
}

/* @rounds waits on @awaitable, each cancelled from another thread while
 * the caller iterates its thread-default context: each must end once,
 * with G_IO_ERROR_CANCELLED, and leave nothing behind (the leak check and
 * LeakSanitizer see to that); many rounds, so that the cancel meets the
 * wait at every point. */
static inline void
ws_test_cancel_waits_from_thread (gpointer         awaitable,
                                  WsTestStartWait  start,
                                  guint            rounds)
{
  GMainContext *context = g_main_context_get_thread_default ();

  for (guint i = 0; i < rounds; i++)
    {
      g_autoptr(GCancellable) cancellable = g_cancellable_new ();
      WsTestCrossCancel c = { awaitable, NULL, FALSE, FALSE };
      GThread *canceller;

      start (&c, cancellable);
      g_signal_connect (cancellable, "cancelled", G_CALLBACK (ws_test_cross_cancel_hold), &c);
      canceller = g_thread_new ("canceller", ws_test_cancel_in_thread, cancellable);
      ws_test_iterate_until (context, g_atomic_int_get (&c.done));
      while (g_main_context_iteration (context, FALSE))
        ;
      g_atomic_int_set (&c.released, TRUE);
      g_thread_join (canceller);
      g_assert_error (c.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
      g_clear_error (&c.error);
    }
}

#endif /* WS_TEST_CORE */
