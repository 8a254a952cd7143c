/* test-fiber-join.c: ws_fiber_await_all and ws_fiber_await_any
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * All: every task, or the first failure (the rest cancelled). Any: the
 * first success (the rest cancelled), or every failure. A fiber cancelled
 * while it waits cancels what it waits for. Outside a fiber: a critical.
 */

#include "config.h"

#include "ws-test-fixture.h"

static WsPoll
return_index (WsContext *cx,
              gpointer   data)
{
  return ws_test_return_int (cx, GPOINTER_TO_INT (data));
}

static WsPoll
fail_now (WsContext *cx,
          gpointer   data)
{
  ws_context_return_error (cx, g_error_new (G_IO_ERROR, G_IO_ERROR_FAILED, "task %d failed",
                                            GPOINTER_TO_INT (data)));
  return WS_POLL_READY;
}

typedef struct
{
  WsTask   *tasks[3];
  guint     n;
  gboolean  any;
  gint      ret;
  GError   *error;
  _Atomic gint waiting;
} Join;

static void
join_fiber (WsContext *cx,
            gpointer   user_data)
{
  Join *j = user_data;

  atomic_store (&j->waiting, 1);
  if (j->any)
    j->ret = ws_fiber_await_any (cx, j->tasks, j->n, &j->error);
  else
    j->ret = ws_fiber_await_all (cx, j->tasks, j->n, &j->error);
}

static void
join_clear (Join *j)
{
  for (guint i = 0; i < j->n; i++)
    g_clear_object (&j->tasks[i]);
  g_clear_error (&j->error);
}

static void
run_join (WsRuntime *rt,
          Join      *j)
{
  g_autoptr(WsTask) fiber = ws_runtime_spawn_fiber (rt, join_fiber, j, NULL);

  g_assert_true (ws_task_wait (fiber, NULL, NULL));
}

static void
assert_cancelled (WsTask *task)
{
  g_autoptr(GError) error = NULL;

  g_assert_false (ws_task_wait (task, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
}

static void
test_all (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  Join ok = { .n = 3 }, failed = { .n = 3 };

  /* Every task completes: TRUE, the values stay in the tasks. */
  for (guint i = 0; i < 3; i++)
    ok.tasks[i] = ws_runtime_spawn (rt, return_index, GINT_TO_POINTER (i), NULL);
  run_join (rt, &ok);
  g_assert_no_error (ok.error);
  g_assert_true (ok.ret);
  for (guint i = 0; i < 3; i++)
    g_assert_cmpint (g_value_get_int (ws_task_get_value (ok.tasks[i])), ==, i);

  /* One fails: its error, and the tasks still waiting are cancelled. */
  failed.tasks[0] = ws_runtime_spawn (rt, ws_test_pending_forever, NULL, NULL);
  failed.tasks[1] = ws_runtime_spawn (rt, fail_now, GINT_TO_POINTER (1), NULL);
  failed.tasks[2] = ws_runtime_spawn (rt, ws_test_pending_forever, NULL, NULL);
  run_join (rt, &failed);
  g_assert_false (failed.ret);
  g_assert_error (failed.error, G_IO_ERROR, G_IO_ERROR_FAILED);
  g_assert_cmpstr (failed.error->message, ==, "task 1 failed");
  assert_cancelled (failed.tasks[0]);
  assert_cancelled (failed.tasks[2]);

  join_clear (&ok);
  join_clear (&failed);
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
}

static void
test_any (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  Join won = { .n = 3, .any = TRUE }, lost = { .n = 2, .any = TRUE }, none = { .any = TRUE };

  /* The first success wins; the others are cancelled. */
  won.tasks[0] = ws_runtime_spawn (rt, ws_test_pending_forever, NULL, NULL);
  won.tasks[1] = ws_runtime_spawn (rt, fail_now, GINT_TO_POINTER (1), NULL);
  won.tasks[2] = ws_runtime_spawn (rt, return_index, GINT_TO_POINTER (2), NULL);
  run_join (rt, &won);
  g_assert_no_error (won.error);
  g_assert_cmpint (won.ret, ==, 2);
  g_assert_cmpint (g_value_get_int (ws_task_get_value (won.tasks[2])), ==, 2);
  assert_cancelled (won.tasks[0]);

  /* Every task fails: -1 and an error of theirs. */
  lost.tasks[0] = ws_runtime_spawn (rt, fail_now, GINT_TO_POINTER (0), NULL);
  lost.tasks[1] = ws_runtime_spawn (rt, fail_now, GINT_TO_POINTER (1), NULL);
  run_join (rt, &lost);
  g_assert_cmpint (lost.ret, ==, -1);
  g_assert_error (lost.error, G_IO_ERROR, G_IO_ERROR_FAILED);

  /* No task: nothing can win. */
  run_join (rt, &none);
  g_assert_cmpint (none.ret, ==, -1);
  g_assert_error (none.error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);

  join_clear (&won);
  join_clear (&lost);
  join_clear (&none);
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
}

/* The fiber is cancelled while it waits: what it waits for is cancelled. */
static void
test_cancel_fiber (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsTask) fiber = NULL;
  g_autoptr(GError) error = NULL;
  Join j = { .n = 2 };

  j.tasks[0] = ws_runtime_spawn (rt, ws_test_pending_forever, NULL, NULL);
  j.tasks[1] = ws_runtime_spawn (rt, ws_test_pending_forever, NULL, NULL);
  fiber = ws_runtime_spawn_fiber (rt, join_fiber, &j, NULL);
  ws_test_wait_until (atomic_load (&j.waiting));
  ws_task_cancel (fiber);
  g_assert_false (ws_task_wait (fiber, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_false (j.ret);
  g_assert_error (j.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  assert_cancelled (j.tasks[0]);
  assert_cancelled (j.tasks[1]);
  join_clear (&j);
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
}

/* Structured cancellation: a cancelled fiber's children that it neither
 * awaited nor let go of are cancelled with it; one it let go of before
 * the cancel goes on. */
typedef struct
{
  _Atomic gint  held_destroyed;      /* the two children it holds */
  _Atomic gint  detached_destroyed;
  WsOneshot    *release_detached;
  _Atomic gint  waiting;
} Family;

static void
count_destroyed (gpointer data)
{
  atomic_fetch_add ((_Atomic gint *) data, 1);
}

typedef struct
{
  WsOneshot    *release;
  _Atomic gint *destroyed;
} Detached;

static WsPoll
wait_for_release (WsContext *cx,
                  gpointer   data)
{
  Detached *d = data;
  gpointer item = NULL;

  return ws_oneshot_poll (d->release, cx, &item, NULL);
}

static void
detached_free (gpointer data)
{
  Detached *d = data;

  atomic_fetch_add (d->destroyed, 1);
  g_free (d);
}

static void
parent_fiber (WsContext *cx,
              gpointer   user_data)
{
  Family *fam = user_data;
  g_autoptr(WsJoinHandle) kept = NULL;
  g_autoptr(WsJoinHandle) awaited = NULL;
  Detached *d = g_new (Detached, 1);

  /* Let go of before the cancel: it goes on. */
  d->release = fam->release_detached;
  d->destroyed = &fam->detached_destroyed;
  ws_join_handle_free (ws_context_spawn (cx, wait_for_release, d, detached_free));
  kept = ws_context_spawn (cx, ws_test_pending_forever, &fam->held_destroyed, count_destroyed);
  awaited = ws_context_spawn (cx, ws_test_pending_forever, &fam->held_destroyed,
                              count_destroyed);
  atomic_store (&fam->waiting, 1);
  if (!WS_FIBER_AWAIT (cx, ws_join_handle_poll (awaited, cx)))
    return;                     /* cancelled: kept and awaited go with us */
  g_assert_not_reached ();
}

static void
test_cancel_reaches_children (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsTask) parent = NULL;
  g_autoptr(GError) error = NULL;
  Family fam = { 0, 0, ws_oneshot_new (NULL), 0 };

  parent = ws_runtime_spawn_fiber (rt, parent_fiber, &fam, NULL);
  ws_test_wait_until (atomic_load (&fam.waiting));
  ws_task_cancel (parent);
  g_assert_false (ws_task_wait (parent, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  /* Both children it held are cancelled: their futures are destroyed. */
  ws_test_wait_until (atomic_load (&fam.held_destroyed) == 2);
  /* The one it let go of still waits, and ends when released. */
  g_assert_cmpint (atomic_load (&fam.detached_destroyed), ==, 0);
  g_assert_true (ws_oneshot_send (fam.release_detached, NULL));
  ws_test_wait_until (atomic_load (&fam.detached_destroyed) == 1);
  ws_oneshot_unref (fam.release_detached);
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
}

/* A cancelled fiber awaits its children's cleanup: ws_fiber_await_all
 * returns once they ended, after a cleanup that blocks. */
typedef struct
{
  WsTestGate   *gate;
  _Atomic gint  cleaned;
} Child;

static void
child_fiber (WsContext *cx,
             gpointer   user_data)
{
  Child *c = user_data;
  g_autoptr(WsSleep) nap = ws_sleep_new (G_TIME_SPAN_HOUR);

  if (WS_FIBER_AWAIT (cx, ws_sleep_poll (nap, cx)))
    return;
  /* Cancelled: a cleanup that blocks (the worker's queue goes on). */
  g_assert_true (ws_block_in_place (ws_test_gate_wait, c->gate, NULL));
  atomic_store (&c->cleaned, 1);
}

typedef struct
{
  WsTask       *children[2];
  _Atomic gint  waiting;
  _Atomic gint  returned;
  gint          cleaned_at_return;
} Waiter;

static void
waiter_fiber (WsContext *cx,
              gpointer   user_data)
{
  Waiter *w = user_data;

  atomic_store (&w->waiting, 1);
  g_assert_false (ws_fiber_await_all (cx, w->children, 2, NULL));
  w->cleaned_at_return = atomic_load (&((Child *) g_object_get_data (G_OBJECT (w->children[0]),
                                                                     "child"))->cleaned)
                         + atomic_load (&((Child *) g_object_get_data (G_OBJECT (w->children[1]),
                                                                       "child"))->cleaned);
  atomic_store (&w->returned, 1);
}

static void
test_cancelled_waits_for_cleanup (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsTask) waiter = NULL;
  WsTestGate gate;
  Child c[2] = { { &gate, 0 }, { &gate, 0 } };
  Waiter w = { { NULL, NULL }, 0, 0, -1 };

  ws_test_gate_init (&gate);
  for (guint i = 0; i < 2; i++)
    {
      w.children[i] = ws_runtime_spawn_fiber (rt, child_fiber, &c[i], NULL);
      g_object_set_data (G_OBJECT (w.children[i]), "child", &c[i]);
    }
  waiter = ws_runtime_spawn_fiber (rt, waiter_fiber, &w, NULL);
  ws_test_wait_until (atomic_load (&w.waiting));
  ws_task_cancel (waiter);
  /* Both children are cancelled and sit in their cleanup's thread job. */
  ws_test_gate_wait_for_waiters (&gate, 2);
  g_assert_cmpint (atomic_load (&w.returned), ==, 0);
  ws_test_gate_open (&gate);
  ws_test_wait_until (ws_task_is_finished (waiter));
  g_assert_cmpint (atomic_load (&w.returned), ==, 1);
  /* It returned after both children had cleaned up. */
  g_assert_cmpint (w.cleaned_at_return, ==, 2);
  for (guint i = 0; i < 2; i++)
    g_clear_object (&w.children[i]);
  ws_test_gate_clear (&gate);
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
}

/* A cancelled local fiber awaits its local children's cleanup: they run
 * on the same thread, whose dispatch of the executor is the parent's own,
 * so ws_fiber_await_all must run them there (a GTK app's Cancel button on
 * a scan that awaits one local fiber per CPU). */
typedef struct
{
  guint     n_started;
  guint     n_cleaned;
  GThread  *cleaned_on[2];
} LocalFamily;

static void
local_child (WsContext *cx,
             gpointer   user_data)
{
  LocalFamily *fam = user_data;
  g_autoptr(WsSleep) nap = ws_sleep_new (G_TIME_SPAN_HOUR);

  fam->n_started++;
  if (WS_FIBER_AWAIT (cx, ws_sleep_poll (nap, cx)))
    return;
  fam->cleaned_on[fam->n_cleaned++] = g_thread_self ();
}

typedef struct
{
  WsRuntime   *rt;
  LocalFamily  fam;
  gboolean     waiting;
  gboolean     ret;
  GError      *error;
  guint        cleaned_at_return;
} LocalParent;

static void
local_parent (WsContext *cx,
              gpointer   user_data)
{
  LocalParent *p = user_data;
  WsTask *children[2];

  for (guint i = 0; i < 2; i++)
    children[i] = ws_runtime_spawn_local_fiber (p->rt, NULL, local_child, &p->fam, NULL);
  p->waiting = TRUE;
  p->ret = ws_fiber_await_all (cx, children, 2, &p->error);
  p->cleaned_at_return = p->fam.n_cleaned;
  for (guint i = 0; i < 2; i++)
    {
      g_assert_true (ws_task_is_finished (children[i]));
      g_object_unref (children[i]);
    }
}

static void
test_local_cancelled_waits_for_local_children (void)
{
  WsTestOnContext f;
  g_autoptr(WsTask) parent = NULL;
  LocalParent p = { NULL, };

  ws_test_on_context_init (&f, 1);
  p.rt = f.rt;
  parent = ws_runtime_spawn_local_fiber (f.rt, NULL, local_parent, &p, NULL);
  ws_test_iterate_until (f.ctx, p.waiting && p.fam.n_started == 2);
  ws_task_cancel (parent);
  ws_test_iterate_until (f.ctx, ws_task_is_finished (parent));
  g_assert_false (p.ret);
  g_assert_error (p.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  /* It returned after both children had cleaned up, on this thread. */
  g_assert_cmpuint (p.cleaned_at_return, ==, 2);
  for (guint i = 0; i < 2; i++)
    g_assert_true (p.fam.cleaned_on[i] == g_thread_self ());
  g_clear_error (&p.error);
  ws_test_on_context_clear (&f);
}

static WsPoll
join_in_poll_function (WsContext *cx,
                       gpointer   data)
{
  WsTask **tasks = data;

  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*outside a fiber*");
  g_assert_false (ws_fiber_await_all (cx, tasks, 1, NULL));
  g_test_assert_expected_messages ();
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*outside a fiber*");
  g_assert_cmpint (ws_fiber_await_any (cx, tasks, 1, NULL), ==, -1);
  g_test_assert_expected_messages ();
  return WS_POLL_READY;
}

static void
test_outside_fiber (void)
{
  WsTestOnContext f;
  g_autoptr(WsTask) child = NULL;
  g_autoptr(WsTask) task = NULL;

  ws_test_on_context_init (&f, 1);
  child = ws_runtime_spawn (f.rt, ws_test_ready, NULL, NULL);
  task = ws_runtime_spawn_local (f.rt, NULL, join_in_poll_function, &child, NULL);
  ws_test_iterate_until (f.ctx, ws_task_is_finished (task));
  ws_test_on_context_clear (&f);
}

WS_TEST_MAIN ({ "/fiber-join/all", test_all },
              { "/fiber-join/any", test_any },
              { "/fiber-join/cancel-fiber", test_cancel_fiber },
              { "/fiber-join/cancel-reaches-children", test_cancel_reaches_children },
              { "/fiber-join/cancelled-waits-for-cleanup", test_cancelled_waits_for_cleanup },
              { "/fiber-join/local-cancelled-waits-for-local-children",
                test_local_cancelled_waits_for_local_children },
              { "/fiber-join/outside-fiber", test_outside_fiber })
