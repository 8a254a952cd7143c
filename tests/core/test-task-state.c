/* test-task-state.c: the task state machine, through the raw task API
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Tasks made with ws_raw_task_new () on the fake host of
 * ws-test-fixture.h, whose schedule() only records: every poll, wake,
 * cancel and join-handle step is driven by the test, and the state word
 * (ws-task-state-private.h) is checked after each. The rules of
 * ws-raw-task.c: one poll at a time, a wake during a poll re-queues the
 * task once after the poll, a wake when queued or after the end does
 * nothing, cancel never destroys a future during a poll, the destroy
 * notify runs before the end is published, exactly one side drops the
 * outcome, and every reference comes back.
 */

#include "config.h"

#include "../ws-test-fixture.h"

#define FLAGS_MASK (WS_STATE_REF_ONE - 1)

/* The flags of @task's state word. */
static guint64
flags (WsRawTask *task)
{
  return ws_raw_task_get_state (task) & FLAGS_MASK;
}

/* The task's state word: these flags and this many references. */
static void
assert_word (WsRawTask *task,
             guint64    expected_flags,
             guint64    refs)
{
  guint64 word = ws_raw_task_get_state (task);

  g_assert_cmphex (word & FLAGS_MASK, ==, expected_flags);
  g_assert_cmpuint (word >> WS_STATE_REF_SHIFT, ==, refs);
}

/* PENDING keeping a waker reference on the first poll, then READY with
 * a result. */
static WsPoll
keep_waker_then_ready (WsContext *cx,
                       gpointer   data)
{
  WsTestProbe *p = data;

  if (p->polls > 0)
    return ws_test_probe_ready (cx, p);
  ws_test_probe_polled (cx, p);
  p->waker = &cx->task->waker;
  p->waker->vtable->ref (p->waker);
  return WS_POLL_PENDING;
}

static void
wake_kept_waker (WsTestProbe *p)
{
  p->waker->vtable->wake (p->waker);
}

static void
drop_kept_waker (WsTestProbe *p)
{
  p->waker->vtable->unref (p->waker);
  p->waker = NULL;
}

/* A waker that counts what is done to it: stands in for a join handle's. */
typedef struct
{
  WsWaker waker;
  guint   wakes;
  gint    refs;
} CountingWaker;

static void
counting_wake (WsWaker *w)
{
  ((CountingWaker *) w)->wakes++;
}

static void
counting_ref (WsWaker *w)
{
  ((CountingWaker *) w)->refs++;
}

static void
counting_unref (WsWaker *w)
{
  ((CountingWaker *) w)->refs--;
}

static const WsWakerVTable counting_vtable = { counting_wake, counting_ref, counting_unref };

#define COUNTING_WAKER_INIT { { &counting_vtable }, 0, 0 }

/* ---- polling ----------------------------------------------------------- */

/* A task whose first poll is READY: the destroy notify runs while the
 * task still holds RUNNING, then COMPLETE is published, the host releases
 * it, and the outcome waits for the handle. */
static void
test_ready_completes (WsTestCoreFixture *f)
{
  gint64 live = ws_raw_task_get_n_live ();
  WsRawTask *task = ws_test_probe_task (&f->p, &f->host, ws_test_probe_ready, TRUE);

  assert_word (task, WS_STATE_NOTIFIED | WS_STATE_JOIN_INTEREST, 2);
  g_assert_cmpint (atomic_load (&f->host.refs), ==, 2);      /* the task holds its host */

  ws_test_task_run (task);
  ws_test_probe_assert (&f->p, 1, 1);
  g_assert_cmphex (f->p.state_in_poll & FLAGS_MASK, ==, WS_STATE_RUNNING | WS_STATE_JOIN_INTEREST);
  g_assert_true (f->p.state_at_destroy & WS_STATE_RUNNING);
  g_assert_false (f->p.state_at_destroy & WS_STATE_COMPLETE);
  assert_word (task, WS_STATE_COMPLETE | WS_STATE_JOIN_INTEREST, 1);
  g_assert_true (ws_raw_task_is_complete (task));
  g_assert_cmpuint (atomic_load (&f->host.n_releases), ==, 1);
  g_assert_cmpuint (ws_test_host_n_scheduled (&f->host), ==, 0);
  g_assert_cmpuint (f->p.results_freed, ==, 0);

  g_assert_true (ws_raw_task_try_read_output (task, NULL, &f->out));
  g_assert_cmpint (f->out.kind, ==, WS_RESULT_POINTER);
  g_assert_true (f->out.u.pointer.data == &f->p);
  ws_result_clear (&f->out);
  g_assert_cmpuint (f->p.results_freed, ==, 1);

  ws_raw_task_drop_join_handle (task);
  ws_test_assert_n_live (live);
}

/* PENDING, then woken: queued once however often it is woken, polled
 * again, and a wake after the end does nothing. */
static void
test_pending_then_wake (WsTestCoreFixture *f)
{
  WsRawTask *task = ws_test_probe_task (&f->p, &f->host, keep_waker_then_ready, FALSE);

  ws_test_task_run (task);
  ws_test_probe_assert (&f->p, 1, 0);
  /* Idle: the poller's reference is gone, the waker's is left. */
  assert_word (task, 0, 1);
  g_assert_cmpuint (ws_test_host_n_scheduled (&f->host), ==, 0);

  wake_kept_waker (&f->p);
  assert_word (task, WS_STATE_NOTIFIED, 2);
  g_assert_cmpuint (ws_test_host_n_scheduled (&f->host), ==, 1);
  for (guint i = 0; i < 3; i++)
    wake_kept_waker (&f->p);
  assert_word (task, WS_STATE_NOTIFIED, 2);
  g_assert_cmpuint (ws_test_host_n_scheduled (&f->host), ==, 1);

  g_assert_true (ws_test_host_run_next (&f->host));
  ws_test_probe_assert (&f->p, 2, 1);
  /* No handle: the completer dropped the outcome. */
  g_assert_cmpuint (f->p.results_freed, ==, 1);
  assert_word (task, WS_STATE_COMPLETE, 1);

  wake_kept_waker (&f->p);
  g_assert_cmpuint (ws_test_host_n_scheduled (&f->host), ==, 1);
  assert_word (task, WS_STATE_COMPLETE, 1);
  g_assert_false (ws_test_host_run_next (&f->host));
  g_assert_cmpuint (f->p.polls, ==, 2);

  drop_kept_waker (&f->p);
}

/* Wakes itself during the poll: three times during the first (PENDING),
 * once with a yield during the second; READY on the third. */
static WsPoll
wake_self_during_poll (WsContext *cx,
                       gpointer   data)
{
  WsTestProbe *p = data;
  guint n = p->polls;

  if (n == 0)
    for (guint i = 0; i < 3; i++)
      ws_raw_task_wake_by_ref (cx->task);
  else if (n == 1)
    {
      cx->yielded = TRUE;
      ws_raw_task_wake_by_ref (cx->task);
    }
  ws_test_probe_polled (cx, p);
  return n < 2 ? WS_POLL_PENDING : WS_POLL_READY;
}

static void
test_wake_while_running (WsTestCoreFixture *f)
{
  WsRawTask *task = ws_test_probe_task (&f->p, &f->host, wake_self_during_poll, FALSE);

  ws_test_task_run (task);
  /* During the poll the wakes only set NOTIFIED: nothing was queued and
   * no reference taken. */
  g_assert_cmphex (f->p.state_in_poll & FLAGS_MASK, ==, WS_STATE_RUNNING | WS_STATE_NOTIFIED);
  g_assert_cmpuint (f->p.state_in_poll >> WS_STATE_REF_SHIFT, ==, 1);
  g_assert_cmpuint (f->p.scheduled_in_poll, ==, 0);
  /* After it, the poller re-queued it, once, with its own reference. */
  g_assert_cmpuint (ws_test_host_n_scheduled (&f->host), ==, 1);
  g_assert_cmpuint (atomic_load (&f->host.n_yields), ==, 0);
  assert_word (task, WS_STATE_NOTIFIED, 1);

  g_assert_true (ws_test_host_run_next (&f->host));
  g_assert_cmpuint (ws_test_host_n_scheduled (&f->host), ==, 2);
  g_assert_cmpuint (atomic_load (&f->host.n_yields), ==, 1);

  g_assert_true (ws_test_host_run_next (&f->host));
  ws_test_probe_assert (&f->p, 3, 1);
  g_assert_false (ws_test_host_run_next (&f->host));
}

/* ---- cancel --------------------------------------------------------- */

/* An idle task: cancel marks it and queues it, so that its own executor
 * destroys the future; it is not polled again. */
static void
test_cancel_idle (WsTestCoreFixture *f)
{
  WsRawTask *task = ws_test_probe_task (&f->p, &f->host, ws_test_probe_pending, TRUE);

  ws_test_task_run (task);
  assert_word (task, WS_STATE_JOIN_INTEREST, 1);

  ws_raw_task_cancel (task);
  assert_word (task, WS_STATE_JOIN_INTEREST | WS_STATE_CANCELLED | WS_STATE_NOTIFIED, 2);
  g_assert_cmpuint (ws_test_host_n_scheduled (&f->host), ==, 1);
  g_assert_cmpuint (f->p.destroyed, ==, 0);
  g_assert_false (ws_raw_task_try_read_output (task, NULL, &f->out));

  /* A second cancel, or a wake, changes nothing. */
  ws_raw_task_cancel (task);
  ws_raw_task_wake_by_ref (task);
  g_assert_cmpuint (ws_test_host_n_scheduled (&f->host), ==, 1);
  assert_word (task, WS_STATE_JOIN_INTEREST | WS_STATE_CANCELLED | WS_STATE_NOTIFIED, 2);

  g_assert_true (ws_test_host_run_next (&f->host));
  ws_test_probe_assert (&f->p, 1, 1);
  g_assert_true (f->p.state_at_destroy & WS_STATE_RUNNING);
  g_assert_true (ws_raw_task_is_complete (task));
  g_assert_true (ws_raw_task_try_read_output (task, NULL, &f->out));
  g_assert_cmpint (f->out.kind, ==, WS_RESULT_CANCELLED);
  ws_raw_task_drop_join_handle (task);
}

/* Cancelled while queued before its first poll: no second queueing, and
 * the instance that runs destroys it unpolled. */
static void
test_cancel_before_first_poll (WsTestCoreFixture *f)
{
  WsRawTask *task = ws_test_probe_task (&f->p, &f->host, ws_test_probe_pending, FALSE);

  ws_raw_task_cancel (task);
  assert_word (task, WS_STATE_NOTIFIED | WS_STATE_CANCELLED, 1);
  g_assert_cmpuint (ws_test_host_n_scheduled (&f->host), ==, 0);

  ws_test_task_run (task);
  ws_test_probe_assert (&f->p, 0, 1);
}

/* Cancels itself during the poll, then PENDING: never destroyed under
 * its poller. */
static WsPoll
cancel_self (WsContext *cx,
             gpointer   data)
{
  WsTestProbe *p = data;

  ws_raw_task_cancel (cx->task);
  ws_test_probe_polled (cx, p);
  g_assert_cmpuint (p->destroyed, ==, 0);
  return WS_POLL_PENDING;
}

static WsPoll
cancel_self_then_ready (WsContext *cx,
                        gpointer   data)
{
  ws_raw_task_cancel (cx->task);
  return ws_test_probe_ready (cx, data);
}

static void
test_cancel_while_running (WsTestCoreFixture *f)
{
  /* PENDING after the cancel: the poller ends it, as cancelled. */
  ws_test_task_run (ws_test_probe_task (&f->p, &f->host, cancel_self, TRUE));
  g_assert_cmphex (f->p.state_in_poll & FLAGS_MASK, ==,
                   WS_STATE_RUNNING | WS_STATE_CANCELLED | WS_STATE_NOTIFIED | WS_STATE_JOIN_INTEREST);
  g_assert_cmpuint (f->p.scheduled_in_poll, ==, 0);
  g_assert_cmpuint (ws_test_host_n_scheduled (&f->host), ==, 0);
  ws_test_probe_assert (&f->p, 1, 1);
  g_assert_true (ws_raw_task_try_read_output (f->p.task, NULL, &f->out));
  g_assert_cmpint (f->out.kind, ==, WS_RESULT_CANCELLED);
  ws_raw_task_drop_join_handle (f->p.task);

  /* READY after the cancel: the task's own outcome stands. */
  ws_test_task_run (ws_test_probe_task (&f->q, &f->host, cancel_self_then_ready, TRUE));
  g_assert_cmpuint (f->q.destroyed, ==, 1);
  g_assert_true (ws_raw_task_try_read_output (f->q.task, NULL, &f->out));
  g_assert_cmpint (f->out.kind, ==, WS_RESULT_POINTER);
  ws_result_clear (&f->out);
  g_assert_cmpuint (f->q.results_freed, ==, 1);
  ws_raw_task_drop_join_handle (f->q.task);
  /* A cancel during a poll queues nothing. */
  g_assert_cmpuint (ws_test_host_n_scheduled (&f->host), ==, 0);
}

/* ---- the join side -------------------------------------------------- */

/* The handle registers its waker (a second one replaces the first), and
 * completion wakes the registered one, once, and releases it. */
static void
test_join_waker (WsTestCoreFixture *f)
{
  CountingWaker a = COUNTING_WAKER_INIT;
  CountingWaker b = COUNTING_WAKER_INIT;
  WsRawTask *task = ws_test_probe_task (&f->p, &f->host, keep_waker_then_ready, TRUE);

  ws_test_task_run (task);
  g_assert_false (ws_raw_task_try_read_output (task, &a.waker, &f->out));
  g_assert_true (flags (task) & WS_STATE_JOIN_WAKER);
  g_assert_cmpint (a.refs, ==, 1);
  g_assert_false (ws_raw_task_try_read_output (task, &b.waker, &f->out));
  g_assert_cmpint (a.refs, ==, 0);
  g_assert_cmpint (b.refs, ==, 1);
  /* Just looking keeps the registered waker. */
  g_assert_false (ws_raw_task_try_read_output (task, NULL, &f->out));
  g_assert_cmpint (b.refs, ==, 1);
  g_assert_cmpint (f->out.kind, ==, WS_RESULT_NONE);

  wake_kept_waker (&f->p);
  g_assert_true (ws_test_host_run_next (&f->host));
  g_assert_cmpuint (b.wakes, ==, 1);
  g_assert_cmpint (b.refs, ==, 0);
  g_assert_cmpuint (a.wakes, ==, 0);

  /* Complete: read at once, nothing registered. */
  g_assert_true (ws_raw_task_try_read_output (task, &a.waker, &f->out));
  g_assert_cmpint (a.refs, ==, 0);
  g_assert_cmpint (f->out.kind, ==, WS_RESULT_POINTER);
  ws_result_clear (&f->out);
  g_assert_cmpuint (f->p.results_freed, ==, 1);

  drop_kept_waker (&f->p);
  ws_raw_task_drop_join_handle (task);
}

/* Exactly one side drops the outcome: the completer if the handle went
 * first (and the handle's waker is released, never woken), the handle if
 * the task completed first. */
static void
test_drop_join_handle (WsTestCoreFixture *f)
{
  CountingWaker a = COUNTING_WAKER_INIT;
  WsRawTask *task = ws_test_probe_task (&f->p, &f->host, keep_waker_then_ready, TRUE);
  guint64 refs;

  ws_test_task_run (task);
  g_assert_false (ws_raw_task_try_read_output (task, &a.waker, &f->out));
  refs = ws_test_task_refs (task);
  ws_raw_task_drop_join_handle (task);
  assert_word (task, 0, refs - 1);
  g_assert_cmpint (a.refs, ==, 0);
  wake_kept_waker (&f->p);
  g_assert_true (ws_test_host_run_next (&f->host));
  g_assert_cmpuint (f->p.results_freed, ==, 1);
  g_assert_cmpuint (a.wakes, ==, 0);
  drop_kept_waker (&f->p);

  ws_test_task_run (ws_test_probe_task (&f->q, &f->host, ws_test_probe_ready, TRUE));
  g_assert_cmpuint (f->q.results_freed, ==, 0);
  ws_raw_task_drop_join_handle (f->q.task);
  g_assert_cmpuint (f->q.results_freed, ==, 1);
}

/* ---- references ------------------------------------------------------- */

static void
test_refs (WsTestCoreFixture *f)
{
  gint64 live = ws_raw_task_get_n_live ();
  gint64 wakers = ws_waker_get_n_live ();
  WsRawTask *task = ws_test_probe_task (&f->p, &f->host, ws_test_probe_ready, FALSE);

  ws_test_assert_n_live (live + 1);

  for (guint i = 0; i < 3; i++)
    ws_raw_task_ref (task);
  assert_word (task, WS_STATE_NOTIFIED, 4);
  ws_raw_task_unref_n (task, 3);
  assert_word (task, WS_STATE_NOTIFIED, 1);
  ws_raw_task_ref (task);
  ws_raw_task_unref (task);
  assert_word (task, WS_STATE_NOTIFIED, 1);
  g_assert_cmpuint (f->p.destroyed, ==, 0);

  /* A waker reference is a task reference, and counted as a waker. */
  task->waker.vtable->ref (&task->waker);
  assert_word (task, WS_STATE_NOTIFIED, 2);
  if (ws_test_have_leak_counters ())
    g_assert_cmpint (ws_waker_get_n_live (), ==, wakers + 1);
  task->waker.vtable->unref (&task->waker);
  assert_word (task, WS_STATE_NOTIFIED, 1);
  if (ws_test_have_leak_counters ())
    g_assert_cmpint (ws_waker_get_n_live (), ==, wakers);

  /* The last reference frees the task, and the host reference with it. */
  ws_test_task_run (task);
  ws_test_assert_n_live (live);
  g_assert_cmpint (atomic_load (&f->host.refs), ==, 1);
}

/* ---- refusal and shutdown --------------------------------------------- */

static void
test_refuse (WsTestCoreFixture *f)
{
  gint64 live = ws_raw_task_get_n_live ();

  /* With a handle: destroyed here, ended as cancelled for the handle. */
  ws_raw_task_refuse (ws_test_probe_task (&f->p, &f->host, ws_test_probe_pending, TRUE));
  ws_test_probe_assert (&f->p, 0, 1);
  assert_word (f->p.task, WS_STATE_COMPLETE | WS_STATE_CANCELLED | WS_STATE_JOIN_INTEREST, 1);
  g_assert_true (ws_raw_task_try_read_output (f->p.task, NULL, &f->out));
  g_assert_cmpint (f->out.kind, ==, WS_RESULT_CANCELLED);
  ws_raw_task_drop_join_handle (f->p.task);

  /* Without one: destroyed and freed here. */
  ws_raw_task_refuse (ws_test_probe_task (&f->q, &f->host, ws_test_probe_pending, FALSE));
  g_assert_cmpuint (f->q.destroyed, ==, 1);
  ws_test_assert_n_live (live);
  /* Never accepted: the host never counted its end. */
  g_assert_cmpuint (atomic_load (&f->host.n_releases), ==, 0);
  g_assert_cmpuint (ws_test_host_n_scheduled (&f->host), ==, 0);
}

static WsPoll
shutdown_self (WsContext *cx,
               gpointer   data)
{
  WsTestProbe *p = ws_test_probe_polled (cx, data);

  /* Running: only marked; the poller ends it. */
  g_assert_false (ws_raw_task_shutdown (cx->task));
  g_assert_cmpuint (p->destroyed, ==, 0);
  return WS_POLL_PENDING;
}

static void
test_shutdown (WsTestCoreFixture *f)
{
  WsRawTask *idle = ws_test_probe_task (&f->p, &f->host, ws_test_probe_pending, TRUE);

  /* Idle: shutdown takes RUNNING and ends it here, dropping the
   * reference its caller held (the task registry's, here taken by hand). */
  ws_test_task_run (idle);
  ws_raw_task_ref (idle);
  g_assert_true (ws_raw_task_shutdown (idle));
  assert_word (idle, WS_STATE_COMPLETE | WS_STATE_CANCELLED | WS_STATE_JOIN_INTEREST, 1);
  g_assert_cmpuint (f->p.destroyed, ==, 1);
  g_assert_true (f->p.state_at_destroy & WS_STATE_RUNNING);
  g_assert_true (ws_raw_task_try_read_output (idle, NULL, &f->out));
  g_assert_cmpint (f->out.kind, ==, WS_RESULT_CANCELLED);
  /* Ended: a second shutdown finds nothing to do. */
  g_assert_false (ws_raw_task_shutdown (idle));
  ws_raw_task_drop_join_handle (idle);

  ws_test_task_run (ws_test_probe_task (&f->q, &f->host, shutdown_self, FALSE));
  ws_test_probe_assert (&f->q, 1, 1);

  /* Queued and never polled: the drain of a queue ends it unpolled. */
  ws_raw_task_drop_queued (ws_test_probe_task (&f->r, &f->host, ws_test_probe_pending, FALSE));
  ws_test_probe_assert (&f->r, 0, 1);
  g_assert_cmpuint (ws_test_host_n_scheduled (&f->host), ==, 0);
}

/* ---- binding on the first PENDING --------------------------------------- */

/* Counts @task accepted through the spawn gate, as a worker pool's spawn
 * does. */
static void
accept_counted (WsTestHost *h,
                WsRawTask  *task)
{
  g_assert_true (ws_task_registry_enter_spawn (&h->registry));
  ws_raw_task_mark_counted (task);
  ws_task_registry_leave_spawn (&h->registry);
}

/* A host that binds late (the worker pool's): a task that ends in its
 * first poll is never bound; one that returns PENDING is bound then, and
 * shutdown reaches it through the set; once the set is closed the first
 * PENDING ends the task instead. */
static void
test_bind_on_pending (WsTestCoreFixture *f)
{
  WsTestHost *h = &f->host;

  h->host.bind_on_pending = TRUE;
  accept_counted (h, ws_test_probe_task (&f->p, h, ws_test_probe_ready, FALSE));
  ws_test_task_run (f->p.task);
  g_assert_cmpuint (atomic_load (&h->n_binds), ==, 0);
  g_assert_cmpint (ws_task_registry_count (&h->registry), ==, 0);

  accept_counted (h, ws_test_probe_task (&f->q, h, ws_test_probe_pending, FALSE));
  g_assert_cmpint (ws_task_registry_count (&h->registry), ==, 1);
  ws_test_task_run (f->q.task);
  g_assert_cmpuint (atomic_load (&h->n_binds), ==, 1);
  g_assert_true (f->q.task->bound);
  /* Idle, held by the set alone. */
  assert_word (f->q.task, 0, 1);

  ws_task_registry_close (&h->registry);
  ws_task_registry_shutdown_all (&h->registry, FALSE);
  g_assert_cmpuint (f->q.destroyed, ==, 1);
  g_assert_cmpint (ws_task_registry_count (&h->registry), ==, 0);

  /* Closed: binding is refused, and the poller cancels the task. */
  ws_raw_task_mark_counted (ws_test_probe_task (&f->r, h, ws_test_probe_pending, FALSE));
  ws_task_registry_count_accepted (&h->registry);
  ws_test_task_run (f->r.task);
  g_assert_cmpuint (atomic_load (&h->n_binds), ==, 2);
  ws_test_probe_assert (&f->r, 1, 1);
  g_assert_cmpint (ws_task_registry_count (&h->registry), ==, 0);
}

/* ---- wakes from another thread ----------------------------------------- */

/* A thread wakes the task while it is being polled, 1,000 times in step:
 * each poll announces it has read the event count and waits (at most a
 * second) until the thread has added an event and woken it; the wake
 * must re-queue the task, whose next poll sees the event. A wake during a
 * poll that is lost leaves the task idle for good. The count passes under
 * a lock, as an awaitable's state does. */
#define N_EVENTS 1000

typedef struct
{
  WsTestProbe   *p;
  WsLock         lock;
  guint          events;        /* under lock */
  _Atomic guint  running_round; /* the poll that read events == n - 1 runs */
  _Atomic guint  woken;         /* the thread's last wake was for round n */
} Racing;

static WsPoll
racing_func (WsContext *cx,
             gpointer   data)
{
  Racing *r = data;
  guint seen;
  guint queued;

  ws_lock_lock (&r->lock);
  seen = r->events;
  ws_lock_unlock (&r->lock);
  ws_test_probe_polled (cx, r->p);
  if (seen == N_EVENTS)
    return WS_POLL_READY;

  atomic_store (&r->running_round, seen + 1);
  ws_test_wait_until (atomic_load (&r->woken) > seen);
  /* The wake only marked the running task: nothing is queued yet. */
  ws_lock_lock (&r->p->host->lock);
  queued = r->p->host->scheduled.length;
  ws_lock_unlock (&r->p->host->lock);
  g_assert_cmpuint (queued, ==, 0);
  return WS_POLL_PENDING;
}

static gpointer
waking_thread (gpointer data)
{
  Racing *r = data;

  for (guint round = 1; round <= N_EVENTS; round++)
    {
      ws_test_wait_until (atomic_load (&r->running_round) == round);
      ws_lock_lock (&r->lock);
      r->events = round;
      ws_lock_unlock (&r->lock);
      r->p->task->waker.vtable->wake (&r->p->task->waker);
      atomic_store (&r->woken, round);
    }
  return NULL;
}

static void
racing_destroy (gpointer data)
{
  ((Racing *) data)->p->destroyed++;
}

/* Runs everything queued; TRUE once @task has ended. */
static gboolean
run_queued_until_complete (WsTestHost *h,
                           WsRawTask  *task)
{
  while (ws_test_host_run_next (h))
    ;
  return ws_raw_task_is_complete (task);
}

static void
test_wakes_from_another_thread (WsTestCoreFixture *f)
{
  Racing r = { &f->p, };
  GThread *thread;

  ws_lock_init (&r.lock);
  /* The task's data is the Racing, which points to the probe; a join
   * interest keeps the task readable after it ends. */
  f->p.host = &f->host;
  f->p.task = ws_raw_task_new (&f->host.host, racing_func, &r, racing_destroy, TRUE);
  thread = g_thread_new ("waker", waking_thread, &r);
  ws_test_task_run (f->p.task);

  /* A lost wake leaves the task pending: a hang, which the watchdog
   * reports. */
  ws_test_wait_until (run_queued_until_complete (&f->host, f->p.task));
  g_thread_join (thread);
  g_test_message ("%u events, %u polls", atomic_load (&r.woken), f->p.polls);
  g_assert_cmpuint (atomic_load (&r.woken), ==, N_EVENTS);
  g_assert_cmpuint (f->p.destroyed, ==, 1);
  /* One poll per event and the last; each wake queued the task once. */
  g_assert_cmpuint (f->p.polls, ==, N_EVENTS + 1);
  g_assert_cmpuint (ws_test_host_n_scheduled (&f->host), ==, N_EVENTS);
  ws_raw_task_drop_join_handle (f->p.task);
  ws_lock_clear (&r.lock);
}

/* ---- the transitions themselves --------------------------------------- */

/* Each transition of ws-task-state-private.h is a pure function of the
 * word: the action it returns and the word it writes, for the words that
 * decide its cases. */
typedef struct
{
  const char      *what;
  WsTaskStateStep (*step) (guint64 cur);
  guint64          cur;
  guint            action;
  gboolean         store;
  guint64          next;
} StepCase;

#define R(n) ((guint64) (n) << WS_STATE_REF_SHIFT)

static void
test_transitions (WsTestCoreFixture *f)
{
  const StepCase cases[] = {
    { "run a queued idle task", ws_task_state_to_running_step,
      WS_STATE_NOTIFIED | R (1), WS_TO_RUNNING_SUCCESS, TRUE, WS_STATE_RUNNING | R (1) },
    { "run a cancelled one", ws_task_state_to_running_step,
      WS_STATE_NOTIFIED | WS_STATE_CANCELLED | R (1), WS_TO_RUNNING_CANCELLED, TRUE,
      WS_STATE_RUNNING | WS_STATE_CANCELLED | R (1) },
    { "run a stale instance", ws_task_state_to_running_step,
      WS_STATE_NOTIFIED | WS_STATE_COMPLETE | R (2), WS_TO_RUNNING_FAILED, TRUE,
      WS_STATE_NOTIFIED | WS_STATE_COMPLETE | R (1) },
    { "run the last stale instance", ws_task_state_to_running_step,
      WS_STATE_NOTIFIED | WS_STATE_RUNNING | R (1), WS_TO_RUNNING_DEALLOC, TRUE,
      WS_STATE_NOTIFIED | WS_STATE_RUNNING },
    { "idle after a poll", ws_task_state_to_idle_step,
      WS_STATE_RUNNING | R (2), WS_TO_IDLE_OK, TRUE, R (1) },
    { "idle, last reference", ws_task_state_to_idle_step,
      WS_STATE_RUNNING | R (1), WS_TO_IDLE_DEALLOC, TRUE, 0 },
    { "idle, woken during the poll", ws_task_state_to_idle_step,
      WS_STATE_RUNNING | WS_STATE_NOTIFIED | R (1), WS_TO_IDLE_NOTIFIED, TRUE,
      WS_STATE_NOTIFIED | R (1) },
    { "idle, cancelled during the poll", ws_task_state_to_idle_step,
      WS_STATE_RUNNING | WS_STATE_CANCELLED | R (1), WS_TO_IDLE_CANCELLED, FALSE, 0 },
    { "idle after a yield, the poller's reference alone", ws_task_state_to_idle_yielded_step,
      WS_STATE_RUNNING | R (1), WS_TO_IDLE_NOTIFIED, TRUE, WS_STATE_NOTIFIED | R (1) },
    { "idle after a yield, woken during the poll too", ws_task_state_to_idle_yielded_step,
      WS_STATE_RUNNING | WS_STATE_NOTIFIED | R (2), WS_TO_IDLE_NOTIFIED, TRUE,
      WS_STATE_NOTIFIED | R (2) },
    { "idle after a yield, cancelled during the poll", ws_task_state_to_idle_yielded_step,
      WS_STATE_RUNNING | WS_STATE_CANCELLED | R (1), WS_TO_IDLE_CANCELLED, FALSE, 0 },
    { "wake an idle task", ws_task_state_to_notified_by_ref_step,
      R (1), WS_TO_NOTIFIED_SUBMIT, TRUE, WS_STATE_NOTIFIED | R (2) },
    { "wake a running task", ws_task_state_to_notified_by_ref_step,
      WS_STATE_RUNNING | R (1), WS_TO_NOTIFIED_DO_NOTHING, TRUE,
      WS_STATE_RUNNING | WS_STATE_NOTIFIED | R (1) },
    { "wake a queued task", ws_task_state_to_notified_by_ref_step,
      WS_STATE_NOTIFIED | R (2), WS_TO_NOTIFIED_DO_NOTHING, FALSE, 0 },
    { "wake a complete task", ws_task_state_to_notified_by_ref_step,
      WS_STATE_COMPLETE | R (1), WS_TO_NOTIFIED_DO_NOTHING, FALSE, 0 },
    { "cancel an idle task", ws_task_state_to_notified_and_cancel_step,
      R (1), WS_TO_NOTIFIED_SUBMIT, TRUE, WS_STATE_NOTIFIED | WS_STATE_CANCELLED | R (2) },
    { "cancel a running task", ws_task_state_to_notified_and_cancel_step,
      WS_STATE_RUNNING | R (1), WS_TO_NOTIFIED_DO_NOTHING, TRUE,
      WS_STATE_RUNNING | WS_STATE_NOTIFIED | WS_STATE_CANCELLED | R (1) },
    { "cancel a cancelled task", ws_task_state_to_notified_and_cancel_step,
      WS_STATE_NOTIFIED | WS_STATE_CANCELLED | R (2), WS_TO_NOTIFIED_DO_NOTHING, FALSE, 0 },
    { "cancel a complete task", ws_task_state_to_notified_and_cancel_step,
      WS_STATE_COMPLETE | R (1), WS_TO_NOTIFIED_DO_NOTHING, FALSE, 0 },
    { "shut down an idle task", ws_task_state_to_shutdown_step,
      R (1), WS_TO_SHUTDOWN_RUNNING, TRUE, WS_STATE_RUNNING | WS_STATE_CANCELLED | R (1) },
    { "shut down a running task", ws_task_state_to_shutdown_step,
      WS_STATE_RUNNING | R (1), WS_TO_SHUTDOWN_MARKED, TRUE,
      WS_STATE_RUNNING | WS_STATE_CANCELLED | R (1) },
    { "walk: shut down an idle task", ws_task_state_to_shutdown_idle_step,
      R (1), WS_TO_SHUTDOWN_RUNNING, TRUE, WS_STATE_RUNNING | WS_STATE_CANCELLED | R (1) },
    { "walk: leave a queued task to its instance", ws_task_state_to_shutdown_idle_step,
      WS_STATE_NOTIFIED | R (1), WS_TO_SHUTDOWN_MARKED, TRUE,
      WS_STATE_NOTIFIED | WS_STATE_CANCELLED | R (1) },
    { "register a join waker", ws_task_state_set_join_waker_step,
      WS_STATE_JOIN_INTEREST | R (2), WS_JOIN_WAKER_OK, TRUE,
      WS_STATE_JOIN_INTEREST | WS_STATE_JOIN_WAKER | R (2) },
    { "register on a complete task", ws_task_state_set_join_waker_step,
      WS_STATE_COMPLETE | WS_STATE_JOIN_INTEREST | R (1), WS_JOIN_WAKER_COMPLETE, FALSE, 0 },
    { "take the join waker back", ws_task_state_unset_join_waker_step,
      WS_STATE_JOIN_INTEREST | WS_STATE_JOIN_WAKER | R (2), WS_JOIN_WAKER_OK, TRUE,
      WS_STATE_JOIN_INTEREST | R (2) },
    { "take it back after the end", ws_task_state_unset_join_waker_step,
      WS_STATE_COMPLETE | WS_STATE_JOIN_INTEREST | WS_STATE_JOIN_WAKER | R (1),
      WS_JOIN_WAKER_COMPLETE, FALSE, 0 },
    { "drop the handle, waker set", ws_task_state_unset_join_interest_step,
      WS_STATE_JOIN_INTEREST | WS_STATE_JOIN_WAKER | R (2), WS_UNSET_JOIN_INTEREST_TOOK_WAKER,
      TRUE, R (2) },
    { "drop the handle", ws_task_state_unset_join_interest_step,
      WS_STATE_JOIN_INTEREST | R (2), WS_UNSET_JOIN_INTEREST_OK, TRUE, R (2) },
    { "drop the handle after the end", ws_task_state_unset_join_interest_step,
      WS_STATE_COMPLETE | WS_STATE_JOIN_INTEREST | R (1), WS_UNSET_JOIN_INTEREST_COMPLETE,
      FALSE, 0 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      const StepCase *c = &cases[i];
      WsTaskStateStep step = c->step (c->cur);

      g_test_message ("%s", c->what);
      g_assert_cmpuint (step.action, ==, c->action);
      g_assert_cmpint (step.store, ==, c->store);
      if (c->store)
        g_assert_cmphex (step.next, ==, c->next);
    }
}

/* The words on which a transition takes a path that writes less because
 * the caller's references are the only ones (ws-task-state-private.h):
 * it takes it there, and only there. */
static void
test_sole_owner_words (WsTestCoreFixture *f)
{
  WsTaskState st;

  /* A detached task before its first poll: RUNNING by a store. */
  atomic_init (&st, WS_STATE_NOTIFIED | R (1));
  g_assert_cmpint (ws_task_state_transition_to_running (&st), ==, WS_TO_RUNNING_SUCCESS);
  g_assert_cmphex (atomic_load (&st), ==, WS_STATE_RUNNING | R (1));
  /* With a handle, or cancelled, the CAS path, with the same result. */
  atomic_init (&st, WS_STATE_NOTIFIED | WS_STATE_JOIN_INTEREST | R (2));
  g_assert_cmpint (ws_task_state_transition_to_running (&st), ==, WS_TO_RUNNING_SUCCESS);
  g_assert_cmphex (atomic_load (&st), ==, WS_STATE_RUNNING | WS_STATE_JOIN_INTEREST | R (2));
  atomic_init (&st, WS_STATE_NOTIFIED | WS_STATE_CANCELLED | R (1));
  g_assert_cmpint (ws_task_state_transition_to_running (&st), ==, WS_TO_RUNNING_CANCELLED);

  /* The completer alone with the task: nothing written, DEALLOC. */
  atomic_init (&st, WS_STATE_RUNNING | R (2));
  g_assert_cmpint (ws_task_state_transition_to_complete_and_unref (&st, 2, FALSE), ==,
                   WS_TO_COMPLETE_DEALLOC);
  g_assert_cmphex (atomic_load (&st), ==, WS_STATE_RUNNING | R (2));
  /* The handle's reference left: COMPLETE and the unref in one write. */
  atomic_init (&st, WS_STATE_RUNNING | WS_STATE_JOIN_INTEREST | R (2));
  g_assert_cmpint (ws_task_state_transition_to_complete_and_unref (&st, 1, FALSE), ==,
                   WS_TO_COMPLETE_HANDLE);
  g_assert_cmphex (atomic_load (&st), ==, WS_STATE_COMPLETE | WS_STATE_JOIN_INTEREST | R (1));
  /* A join waker to wake after COMPLETE, or a waker held elsewhere
   * (with or without a handle): nothing written, two steps. */
  atomic_init (&st, WS_STATE_RUNNING | WS_STATE_JOIN_INTEREST | WS_STATE_JOIN_WAKER | R (2));
  g_assert_cmpint (ws_task_state_transition_to_complete_and_unref (&st, 1, FALSE), ==,
                   WS_TO_COMPLETE_SPLIT);
  g_assert_cmphex (atomic_load (&st), ==,
                   WS_STATE_RUNNING | WS_STATE_JOIN_INTEREST | WS_STATE_JOIN_WAKER | R (2));
  atomic_init (&st, WS_STATE_RUNNING | WS_STATE_JOIN_INTEREST | R (3));
  g_assert_cmpint (ws_task_state_transition_to_complete_and_unref (&st, 1, FALSE), ==,
                   WS_TO_COMPLETE_SPLIT);
  atomic_init (&st, WS_STATE_RUNNING | R (2));
  g_assert_cmpint (ws_task_state_transition_to_complete_and_unref (&st, 1, FALSE), ==,
                   WS_TO_COMPLETE_SPLIT);
  g_assert_cmphex (atomic_load (&st), ==, WS_STATE_RUNNING | R (2));

  /* The handle's reference is the last only with COMPLETE and one
   * reference. */
  atomic_init (&st, WS_STATE_COMPLETE | WS_STATE_JOIN_INTEREST | R (1));
  g_assert_true (ws_task_state_is_last_after_complete (&st));
  atomic_init (&st, WS_STATE_COMPLETE | WS_STATE_JOIN_INTEREST | R (2));
  g_assert_false (ws_task_state_is_last_after_complete (&st));
  atomic_init (&st, WS_STATE_RUNNING | WS_STATE_JOIN_INTEREST | R (1));
  g_assert_false (ws_task_state_is_last_after_complete (&st));
}

/* The same for a child run nested by the owner of its join handle
 * (ws_raw_task_run_awaited): on the words with the queued instance's (or
 * the poller's) and the handle's references alone and nothing else set,
 * where RUNNING and COMPLETE are stores, and on the words around them,
 * where they are the CAS paths, each transition leaves the word and
 * returns the action of the transition without @awaited. */
static void
test_awaited_words (WsTestCoreFixture *f)
{
  const guint64 ji = WS_STATE_JOIN_INTEREST;
  WsTaskState st;

  /* Fresh: queued and the handle. */
  atomic_init (&st, WS_STATE_NOTIFIED | ji | R (2));
  g_assert_cmpint (ws_task_state_transition_to_running_awaited (&st), ==,
                   WS_TO_RUNNING_SUCCESS);
  g_assert_cmphex (atomic_load (&st), ==, WS_STATE_RUNNING | ji | R (2));
  /* A waker or the registry holds a third reference; the handle's join
   * waker is set; cancelled: the CAS path. */
  atomic_init (&st, WS_STATE_NOTIFIED | ji | R (3));
  g_assert_cmpint (ws_task_state_transition_to_running_awaited (&st), ==,
                   WS_TO_RUNNING_SUCCESS);
  g_assert_cmphex (atomic_load (&st), ==, WS_STATE_RUNNING | ji | R (3));
  atomic_init (&st, WS_STATE_NOTIFIED | ji | WS_STATE_JOIN_WAKER | R (2));
  g_assert_cmpint (ws_task_state_transition_to_running_awaited (&st), ==,
                   WS_TO_RUNNING_SUCCESS);
  g_assert_cmphex (atomic_load (&st), ==, WS_STATE_RUNNING | ji | WS_STATE_JOIN_WAKER | R (2));
  atomic_init (&st, WS_STATE_NOTIFIED | ji | WS_STATE_CANCELLED | R (2));
  g_assert_cmpint (ws_task_state_transition_to_running_awaited (&st), ==,
                   WS_TO_RUNNING_CANCELLED);
  /* A stale instance of an ended task still only drops its reference. */
  atomic_init (&st, WS_STATE_NOTIFIED | WS_STATE_COMPLETE | ji | R (2));
  g_assert_cmpint (ws_task_state_transition_to_running_awaited (&st), ==,
                   WS_TO_RUNNING_FAILED);
  g_assert_cmphex (atomic_load (&st), ==, WS_STATE_NOTIFIED | WS_STATE_COMPLETE | ji | R (1));

  /* The poller's and the handle's: COMPLETE and the unref by a store. */
  atomic_init (&st, WS_STATE_RUNNING | ji | R (2));
  g_assert_cmpint (ws_task_state_transition_to_complete_and_unref (&st, 1, TRUE), ==,
                   WS_TO_COMPLETE_HANDLE);
  g_assert_cmphex (atomic_load (&st), ==, WS_STATE_COMPLETE | ji | R (1));
  /* Woken during the poll, a waker held, a join waker, cancelled, or the
   * registry's reference to drop too: not by the store. */
  atomic_init (&st, WS_STATE_RUNNING | WS_STATE_NOTIFIED | ji | R (2));
  g_assert_cmpint (ws_task_state_transition_to_complete_and_unref (&st, 1, TRUE), ==,
                   WS_TO_COMPLETE_HANDLE);
  g_assert_cmphex (atomic_load (&st), ==, WS_STATE_COMPLETE | WS_STATE_NOTIFIED | ji | R (1));
  atomic_init (&st, WS_STATE_RUNNING | ji | R (3));
  g_assert_cmpint (ws_task_state_transition_to_complete_and_unref (&st, 1, TRUE), ==,
                   WS_TO_COMPLETE_SPLIT);
  g_assert_cmphex (atomic_load (&st), ==, WS_STATE_RUNNING | ji | R (3));
  atomic_init (&st, WS_STATE_RUNNING | ji | WS_STATE_JOIN_WAKER | R (2));
  g_assert_cmpint (ws_task_state_transition_to_complete_and_unref (&st, 1, TRUE), ==,
                   WS_TO_COMPLETE_SPLIT);
  atomic_init (&st, WS_STATE_RUNNING | ji | WS_STATE_CANCELLED | R (2));
  g_assert_cmpint (ws_task_state_transition_to_complete_and_unref (&st, 1, TRUE), ==,
                   WS_TO_COMPLETE_HANDLE);
  g_assert_cmphex (atomic_load (&st), ==, WS_STATE_COMPLETE | ji | WS_STATE_CANCELLED | R (1));
  atomic_init (&st, WS_STATE_RUNNING | ji | R (3));
  g_assert_cmpint (ws_task_state_transition_to_complete_and_unref (&st, 2, TRUE), ==,
                   WS_TO_COMPLETE_HANDLE);
  g_assert_cmphex (atomic_load (&st), ==, WS_STATE_COMPLETE | ji | R (1));
  /* No handle: the completer alone, as without @awaited. */
  atomic_init (&st, WS_STATE_RUNNING | R (1));
  g_assert_cmpint (ws_task_state_transition_to_complete_and_unref (&st, 1, TRUE), ==,
                   WS_TO_COMPLETE_DEALLOC);
}

/* A handle dropped after the end while a waker of the task is still held
 * elsewhere: the handle's reference is not the last, so the task stays
 * until the waker goes. */
static void
test_handle_outlived_by_waker (WsTestCoreFixture *f)
{
  gint64 live = ws_raw_task_get_n_live ();
  WsRawTask *task = ws_test_probe_task (&f->p, &f->host, keep_waker_then_ready, TRUE);

  ws_test_task_run (task);
  wake_kept_waker (&f->p);
  g_assert_true (ws_test_host_run_next (&f->host));
  ws_test_probe_assert (&f->p, 2, 1);
  /* The handle's and the kept waker's. */
  assert_word (task, WS_STATE_COMPLETE | WS_STATE_JOIN_INTEREST, 2);

  g_assert_true (ws_raw_task_try_read_output (task, NULL, &f->out));
  ws_result_clear (&f->out);
  ws_raw_task_drop_join_handle (task);
  ws_test_assert_n_live (live + 1);
  /* After the end the handle leaves JOIN_INTEREST as it is. */
  assert_word (task, WS_STATE_COMPLETE | WS_STATE_JOIN_INTEREST, 1);

  drop_kept_waker (&f->p);
  ws_test_assert_n_live (live);
}

WS_TEST_CORE_MAIN ({ "/task-state/ready-completes", test_ready_completes },
                   { "/task-state/pending-then-wake", test_pending_then_wake },
                   { "/task-state/wake-while-running", test_wake_while_running },
                   { "/task-state/cancel-idle", test_cancel_idle },
                   { "/task-state/cancel-before-first-poll", test_cancel_before_first_poll },
                   { "/task-state/cancel-while-running", test_cancel_while_running },
                   { "/task-state/join-waker", test_join_waker },
                   { "/task-state/drop-join-handle", test_drop_join_handle },
                   { "/task-state/refs", test_refs },
                   { "/task-state/refuse", test_refuse },
                   { "/task-state/shutdown", test_shutdown },
                   { "/task-state/bind-on-pending", test_bind_on_pending },
                   { "/task-state/wakes-from-another-thread", test_wakes_from_another_thread },
                   { "/task-state/transitions", test_transitions },
                   { "/task-state/sole-owner-words", test_sole_owner_words },
                   { "/task-state/awaited-words", test_awaited_words },
                   { "/task-state/handle-outlived-by-waker", test_handle_outlived_by_waker })
