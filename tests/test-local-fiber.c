/* test-local-fiber.c: fibers on a main loop (ws_runtime_spawn_local_fiber)
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The contract: a local fiber runs and resumes only on the thread that
 * iterates its context (each resume compares g_thread_self ()), and the
 * loop runs between its resumes (a source of the same context makes the
 * progress the fiber waits for); it awaits worker tasks and fibers and is
 * awaited by them; cancellation and shutdown unwind it on its thread
 * (where its destroy notify and cancellable handlers run), a shutdown on
 * that thread doing it itself; ws_task_wait () on a thread that does not
 * iterate the context runs it; it runs a thread job
 * (ws_fiber_run_in_thread) while the loop goes on.
 */

#include "config.h"

#include "ws-test-fixture.h"

/* Read through a call the compiler cannot see into: the thread now, not
 * a value cached from before a suspend. */
static G_GNUC_NO_INLINE GThread *
current_thread (void)
{
  return g_thread_self ();
}

/* A loop of our own, pushed as the thread-default context, so that a
 * spawn with a NULL context lands on it. */
typedef struct
{
  GMainContext *context;
  GMainLoop    *loop;
} Loop;

static void
loop_init (Loop *l)
{
  l->context = g_main_context_new ();
  l->loop = g_main_loop_new (l->context, FALSE);
  g_main_context_push_thread_default (l->context);
}

static void
loop_clear (Loop *l)
{
  g_main_context_pop_thread_default (l->context);
  g_main_loop_unref (l->loop);
  g_main_context_unref (l->context);
}

static void
run_until_finished (Loop   *l,
                    WsTask *task)
{
  ws_test_iterate_until (l->context, ws_task_is_finished (task));
}

/* The integer a finished task returned. */
static guint64
task_uint64 (WsTask *task)
{
  const GValue *v;

  g_assert_true (ws_task_is_finished (task));
  v = ws_task_get_value (task);
  g_assert_nonnull (v);
  return g_value_get_uint64 (v);
}

/* Whether a finished task ended as cancelled. */
static gboolean
task_was_cancelled (WsTask *task)
{
  g_autoptr(GError) error = NULL;

  g_assert_true (ws_task_is_finished (task));
  g_assert_null (ws_task_propagate_pointer (task, &error));
  return g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
}

static guint
add_idle (GMainContext *context,
          GSourceFunc   func,
          gpointer      data)
{
  GSource *s = g_idle_source_new ();
  guint id;

  g_source_set_callback (s, func, data, NULL);
  id = g_source_attach (s, context);
  g_source_unref (s);
  return id;
}

/* ---- the thread, and the loop between resumes ---------------------------- */

typedef struct
{
  GThread      *main_thread;
  WsOneshot    *shot;
  _Atomic gint  idles;               /* dispatches of the idle source */
  gint          wrong_thread;        /* resumes seen off the main thread */
  gint          resumes;
  gint          idles_before_shot;
} Identity;

static void
check_thread (Identity *id)
{
  id->resumes++;
  if (current_thread () != id->main_thread)
    id->wrong_thread++;
}

static gboolean
idle_counts_and_sends (gpointer data)
{
  Identity *id = data;

  /* The third dispatch sends the oneshot the fiber waits for: the fiber
   * can only have gone on if the loop ran while it waited. */
  if (atomic_fetch_add (&id->idles, 1) + 1 == 3)
    g_assert_true (ws_oneshot_send (id->shot, GUINT_TO_POINTER (7)));
  return G_SOURCE_CONTINUE;
}

static void
identity_fiber (WsContext *cx,
                gpointer   user_data)
{
  Identity *id = user_data;
  g_autoptr(GError) error = NULL;
  gpointer item = NULL;

  check_thread (id);

  /* A oneshot that only a source of this loop sends. */
  g_assert_true (WS_FIBER_AWAIT (cx, ws_oneshot_poll (id->shot, cx, &item, &error)));
  g_assert_no_error (error);
  g_assert_cmpuint (GPOINTER_TO_UINT (item), ==, 7);
  check_thread (id);
  id->idles_before_shot = atomic_load (&id->idles);

  /* Sleeps until the idle source ran between two of our resumes. */
  for (gint seen = atomic_load (&id->idles); atomic_load (&id->idles) == seen;)
    {
      g_autoptr(WsSleep) nap = ws_sleep_new (1000);

      g_assert_true (WS_FIBER_AWAIT (cx, ws_sleep_poll (nap, cx)));
      check_thread (id);
    }

  for (guint i = 0; i < 10; i++)
    {
      g_assert_true (ws_fiber_yield (cx));
      check_thread (id);
    }
  ws_context_return_uint64 (cx, 42);
}

static void
test_main_thread (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  Identity id = { g_thread_self (), ws_oneshot_new (NULL), };
  g_autoptr(WsTask) t = NULL;
  Loop l;
  guint idle;

  loop_init (&l);
  t = ws_runtime_spawn_local_fiber (rt, NULL, identity_fiber, &id, NULL);
  idle = add_idle (l.context, idle_counts_and_sends, &id);
  run_until_finished (&l, t);
  g_source_destroy (g_main_context_find_source_by_id (l.context, idle));

  g_assert_cmpuint (task_uint64 (t), ==, 42);
  g_assert_cmpint (id.idles_before_shot, >=, 3);
  g_assert_cmpint (id.resumes, >=, 13);
  g_assert_cmpint (id.wrong_thread, ==, 0);

  ws_oneshot_unref (id.shot);
  loop_clear (&l);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ---- awaiting worker tasks and being awaited ---------------------------- */

static WsPoll
worker_returns_its_thread (WsContext *cx,
                           gpointer   user_data)
{
  ws_context_return_pointer (cx, g_thread_self (), NULL);
  return WS_POLL_READY;
}

static void
worker_fiber_sums (WsContext *cx,
                   gpointer   user_data)
{
  g_assert_true (ws_fiber_yield (cx));
  ws_context_return_uint64 (cx, 5 + GPOINTER_TO_UINT (user_data));
}

typedef struct
{
  WsRuntime   *rt;
  GThread     *main_thread;
  WsOneshot   *shot;
  gint         wrong_thread;
  GThread     *worker_thread;
  guint64      fiber_sum;
  _Atomic gint waiting;
} Awaits;

static void
local_awaits_workers (WsContext *cx,
                      gpointer   user_data)
{
  Awaits *a = user_data;
  g_autoptr(WsTask) task = ws_runtime_spawn (a->rt, worker_returns_its_thread, NULL, NULL);
  g_autoptr(WsJoinHandle) fiber = ws_runtime_spawn_fiber_full (a->rt, 0, worker_fiber_sums,
                                                                GUINT_TO_POINTER (10), NULL);
  g_autoptr(GError) error = NULL;
  gpointer item = NULL;

  g_assert_true (WS_FIBER_AWAIT (cx, ws_task_poll (task, cx)));
  if (current_thread () != a->main_thread)
    a->wrong_thread++;
  a->worker_thread = ws_task_propagate_pointer (task, &error);
  g_assert_no_error (error);

  g_assert_true (WS_FIBER_AWAIT (cx, ws_join_handle_poll (fiber, cx)));
  if (current_thread () != a->main_thread)
    a->wrong_thread++;
  g_assert_true (ws_join_handle_finish_uint64 (g_steal_pointer (&fiber), &a->fiber_sum,
                                               &error));

  /* Then it is awaited: it ends when the main loop sends. */
  atomic_store (&a->waiting, 1);
  g_assert_true (WS_FIBER_AWAIT (cx, ws_oneshot_poll (a->shot, cx, &item, &error)));
  if (current_thread () != a->main_thread)
    a->wrong_thread++;
  ws_context_return_uint64 (cx, GPOINTER_TO_UINT (item));
}

static _Atomic gint n_awaiting;

/* A worker fiber that awaits the local fiber's task. */
static void
worker_awaits_local (WsContext *cx,
                     gpointer   user_data)
{
  WsTask *local = user_data;

  atomic_fetch_add (&n_awaiting, 1);
  g_assert_true (WS_FIBER_AWAIT (cx, ws_task_poll (local, cx)));
  ws_context_return_uint64 (cx, task_uint64 (local) + 1);
}

/* A worker poll function that awaits another local fiber's task. */
static WsPoll
poll_awaits_local (WsContext *cx,
                   gpointer   user_data)
{
  WsTask *local = user_data;

  if (ws_task_poll (local, cx) == WS_POLL_PENDING)
    {
      atomic_fetch_add (&n_awaiting, 1);
      return WS_POLL_PENDING;
    }
  ws_context_return_uint64 (cx, task_uint64 (local) + 1000);
  return WS_POLL_READY;
}

static void
local_waits_for_shot (WsContext *cx,
                      gpointer   user_data)
{
  Awaits *a = user_data;
  gpointer item = NULL;

  g_assert_true (WS_FIBER_AWAIT (cx, ws_oneshot_poll (a->shot, cx, &item, NULL)));
  if (current_thread () != a->main_thread)
    a->wrong_thread++;
  ws_context_return_uint64 (cx, GPOINTER_TO_UINT (item));
}

static void
test_awaits (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  Awaits a = { rt, g_thread_self (), ws_oneshot_new (NULL), };
  Awaits b = { rt, g_thread_self (), ws_oneshot_new (NULL), };
  g_autoptr(WsTask) local_a = NULL;
  g_autoptr(WsTask) local_b = NULL;
  g_autoptr(WsTask) by_fiber = NULL;
  g_autoptr(WsTask) by_poll = NULL;
  g_autoptr(GError) error = NULL;
  Loop l;

  atomic_store (&n_awaiting, 0);
  loop_init (&l);
  /* A local fiber awaits a worker task and a worker fiber. */
  local_a = ws_runtime_spawn_local_fiber (rt, NULL, local_awaits_workers, &a, NULL);
  ws_test_iterate_until (l.context, atomic_load (&a.waiting) == 1);
  g_assert_cmpuint (a.fiber_sum, ==, 15);
  g_assert_nonnull (a.worker_thread);
  g_assert_true (a.worker_thread != a.main_thread);

  /* A worker fiber and a worker poll function await local fibers, which
   * end when this loop sends them their oneshots. */
  local_b = ws_runtime_spawn_local_fiber (rt, NULL, local_waits_for_shot, &b, NULL);
  by_fiber = ws_runtime_spawn_fiber (rt, worker_awaits_local, g_object_ref (local_a),
                                     g_object_unref);
  by_poll = ws_runtime_spawn (rt, poll_awaits_local, g_object_ref (local_b), g_object_unref);
  ws_test_wait_until (atomic_load (&n_awaiting) >= 2);
  g_assert_true (ws_oneshot_send (a.shot, GUINT_TO_POINTER (30)));
  g_assert_true (ws_oneshot_send (b.shot, GUINT_TO_POINTER (40)));
  run_until_finished (&l, local_a);
  run_until_finished (&l, local_b);

  g_assert_true (ws_task_wait (by_fiber, NULL, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (task_uint64 (by_fiber), ==, 31);
  g_assert_true (ws_task_wait (by_poll, NULL, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (task_uint64 (by_poll), ==, 1040);
  g_assert_cmpint (a.wrong_thread, ==, 0);
  g_assert_cmpint (b.wrong_thread, ==, 0);

  ws_oneshot_unref (a.shot);
  ws_oneshot_unref (b.shot);
  loop_clear (&l);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ---- cancellation and shutdown unwind it on its thread ------------------ */

typedef struct
{
  GThread      *main_thread;
  WsOneshot    *shot;
  _Atomic gint  waiting;
  gint          await_false;         /* the await returned FALSE ... */
  GThread      *unwound_on;          /* ... on this thread */
  GThread      *handler_on;          /* the cancellable's handler ran here */
  GThread      *destroyed_on;        /* the destroy notify ran here */
  gint          returned;
} Unwind;

static void
on_cancelled (GCancellable *cancellable,
              gpointer      data)
{
  Unwind *u = data;

  u->handler_on = current_thread ();
}

static void
unwind_destroy (gpointer data)
{
  Unwind *u = data;

  /* After the function's return, which is why it may read these. */
  g_assert_cmpint (u->returned, ==, 1);
  u->destroyed_on = current_thread ();
}

static void
waits_until_cancelled (WsContext *cx,
                       gpointer   user_data)
{
  Unwind *u = user_data;
  gpointer item = NULL;

  g_cancellable_connect (ws_context_get_cancellable (cx), G_CALLBACK (on_cancelled), u, NULL);
  atomic_store (&u->waiting, 1);
  if (!WS_FIBER_AWAIT (cx, ws_oneshot_poll (u->shot, cx, &item, NULL)))
    {
      u->await_false++;
      u->unwound_on = current_thread ();
    }
  u->returned++;
}

static gpointer
cancel_from_thread (gpointer data)
{
  ws_task_cancel (data);
  return NULL;
}

static void
test_cancel (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  Unwind u = { g_thread_self (), ws_oneshot_new (NULL), };
  g_autoptr(WsTask) t = NULL;
  g_autoptr(GError) error = NULL;
  Loop l;

  loop_init (&l);
  t = ws_runtime_spawn_local_fiber (rt, NULL, waits_until_cancelled, &u, unwind_destroy);
  ws_test_iterate_until (l.context, atomic_load (&u.waiting) == 1);

  /* Cancelled from another thread: the unwinding waits for this loop. */
  g_thread_join (g_thread_new ("canceller", cancel_from_thread, t));
  g_assert_cmpint (u.returned, ==, 0);
  g_assert_null (u.destroyed_on);
  run_until_finished (&l, t);

  g_assert_true (task_was_cancelled (t));
  g_assert_cmpint (u.await_false, ==, 1);
  g_assert_cmpint (u.returned, ==, 1);
  g_assert_true (u.unwound_on == u.main_thread);
  g_assert_true (u.handler_on == u.main_thread);
  g_assert_true (u.destroyed_on == u.main_thread);

  ws_oneshot_unref (u.shot);
  loop_clear (&l);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* A shutdown called on the loop's thread (outside a dispatch) runs the
 * unwinding itself: when it returns, the fibers have returned on this
 * thread and their destroy notifies ran here. */
static void
test_shutdown_on_owner (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  Unwind u[3] = {
    { g_thread_self (), ws_oneshot_new (NULL), },
    { g_thread_self (), ws_oneshot_new (NULL), },
    { g_thread_self (), ws_oneshot_new (NULL), },
  };
  WsTask *t[3] = { NULL, };
  Loop l;

  loop_init (&l);
  for (guint i = 0; i < 3; i++)
    t[i] = ws_runtime_spawn_local_fiber (rt, NULL, waits_until_cancelled, &u[i],
                                         unwind_destroy);
  ws_test_iterate_until (l.context, atomic_load (&u[0].waiting) == 1
                                    && atomic_load (&u[1].waiting) == 1
                                    && atomic_load (&u[2].waiting) == 1);

  g_assert_true (ws_runtime_shutdown (rt, -1));
  for (guint i = 0; i < 3; i++)
    {
      g_assert_cmpint (u[i].await_false, ==, 1);
      g_assert_cmpint (u[i].returned, ==, 1);
      g_assert_true (u[i].unwound_on == u[i].main_thread);
      g_assert_true (u[i].handler_on == u[i].main_thread);
      g_assert_true (u[i].destroyed_on == u[i].main_thread);
      g_assert_true (task_was_cancelled (t[i]));
      ws_oneshot_unref (u[i].shot);
      g_clear_object (&t[i]);
    }
  loop_clear (&l);
}

/* A shutdown called by a local fiber itself: it cannot wait for the
 * thread it runs on (FALSE); the other local fibers of its loop are
 * unwound on this thread, and so is the caller at its next await. */
typedef struct
{
  WsRuntime    *rt;
  gint          shutdown_result;
  gint          await_false;
  GThread      *unwound_on;
} ShutsDown;

static void
shuts_down (WsContext *cx,
            gpointer   user_data)
{
  ShutsDown *sd = user_data;

  sd->shutdown_result = ws_runtime_shutdown (sd->rt, -1);
  if (!ws_fiber_yield (cx))
    sd->await_false = 1;
  sd->unwound_on = current_thread ();
}

static void
test_shutdown_from_fiber (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  Unwind u = { g_thread_self (), ws_oneshot_new (NULL), };
  ShutsDown sd = { rt, -1, };
  g_autoptr(WsTask) waiter = NULL;
  g_autoptr(WsTask) caller = NULL;
  Loop l;

  loop_init (&l);
  waiter = ws_runtime_spawn_local_fiber (rt, NULL, waits_until_cancelled, &u, unwind_destroy);
  ws_test_iterate_until (l.context, atomic_load (&u.waiting) == 1);
  caller = ws_runtime_spawn_local_fiber (rt, NULL, shuts_down, &sd, NULL);
  run_until_finished (&l, caller);
  run_until_finished (&l, waiter);

  g_assert_cmpint (sd.shutdown_result, ==, FALSE);
  g_assert_cmpint (sd.await_false, ==, 1);
  g_assert_true (sd.unwound_on == u.main_thread);
  g_assert_true (task_was_cancelled (caller));
  g_assert_cmpint (u.await_false, ==, 1);
  g_assert_true (u.unwound_on == u.main_thread);
  g_assert_true (u.destroyed_on == u.main_thread);
  g_assert_true (task_was_cancelled (waiter));

  /* Now from the loop's thread, outside a dispatch: it waits, and
   * everything has ended. */
  g_assert_true (ws_runtime_shutdown (rt, -1));
  ws_oneshot_unref (u.shot);
  loop_clear (&l);
}

/* ---- a context nobody iterates ------------------------------------------ */

typedef struct
{
  GThread *main_thread;
  gint     wrong_thread;
} Plain;

static void
sleeps_and_yields (WsContext *cx,
                   gpointer   user_data)
{
  Plain *p = user_data;
  g_autoptr(WsSleep) nap = ws_sleep_new (1000);

  if (current_thread () != p->main_thread)
    p->wrong_thread++;
  g_assert_true (WS_FIBER_AWAIT (cx, ws_sleep_poll (nap, cx)));
  if (current_thread () != p->main_thread)
    p->wrong_thread++;
  g_assert_true (ws_fiber_yield (cx));
  if (current_thread () != p->main_thread)
    p->wrong_thread++;
  ws_context_return_uint64 (cx, 42);
}

/* As for a local task: ws_task_wait () on a thread that does not own the
 * context takes it and iterates it until the fiber has ended. */
static void
test_wait_runs_it (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(GMainContext) context = g_main_context_new ();
  Plain p = { g_thread_self (), };
  g_autoptr(WsTask) t = NULL;
  g_autoptr(GError) error = NULL;

  t = ws_runtime_spawn_local_fiber (rt, context, sleeps_and_yields, &p, NULL);
  g_assert_true (ws_task_wait (t, NULL, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (task_uint64 (t), ==, 42);
  g_assert_cmpint (p.wrong_thread, ==, 0);

  /* On the thread that owns the context it is refused, as for a local
   * task: it would wait for ever. */
  g_clear_object (&t);
  g_main_context_push_thread_default (context);
  t = ws_runtime_spawn_local_fiber (rt, NULL, sleeps_and_yields, &p, NULL);
  g_assert_false (ws_task_wait (t, NULL, &error));
  g_assert_error (error, WS_ERROR, WS_ERROR_WOULD_BLOCK);
  ws_test_iterate_until (context, ws_task_is_finished (t));
  g_assert_cmpuint (task_uint64 (t), ==, 42);
  g_main_context_pop_thread_default (context);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ---- a thread job from the main loop ------------------------------------ */

typedef struct
{
  GThread    *main_thread;
  WsTestGate  gate;
  GThread    *func_thread;
  gint        wrong_thread;
  gint        idles_while_waiting;
  _Atomic gint idles;
} Job;

static gpointer
job_waits_for_the_loop (GCancellable  *cancellable,
                        gpointer       user_data,
                        GError       **error)
{
  Job *j = user_data;

  j->func_thread = g_thread_self ();
  ws_test_gate_wait (&j->gate);
  return g_strdup ("hashed");
}

static gboolean
idle_opens_gate (gpointer data)
{
  Job *j = data;

  /* The job waits at the gate until this loop has run: the fiber can
   * only be resumed after the loop ran while it waited. */
  if (ws_test_gate_get_waiting (&j->gate) == 1)
    {
      atomic_fetch_add (&j->idles, 1);
      ws_test_gate_open (&j->gate);
      return G_SOURCE_REMOVE;
    }
  return G_SOURCE_CONTINUE;
}

static void
runs_a_thread_job (WsContext *cx,
                   gpointer   user_data)
{
  Job *j = user_data;
  g_autoptr(GError) error = NULL;
  g_autofree char *s = NULL;

  s = ws_fiber_run_in_thread (cx, job_waits_for_the_loop, j, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (s, ==, "hashed");
  if (current_thread () != j->main_thread)
    j->wrong_thread++;
  j->idles_while_waiting = atomic_load (&j->idles);
}

static void
test_run_in_thread (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  Job j = { g_thread_self (), };
  g_autoptr(WsTask) t = NULL;
  Loop l;

  ws_test_gate_init (&j.gate);
  loop_init (&l);
  t = ws_runtime_spawn_local_fiber (rt, NULL, runs_a_thread_job, &j, NULL);
  add_idle (l.context, idle_opens_gate, &j);
  run_until_finished (&l, t);
  g_assert_false (task_was_cancelled (t));
  g_assert_cmpint (j.idles_while_waiting, ==, 1);
  g_assert_cmpint (j.wrong_thread, ==, 0);
  g_assert_nonnull (j.func_thread);
  g_assert_true (j.func_thread != j.main_thread);

  loop_clear (&l);
  ws_test_gate_clear (&j.gate);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Cancelled from another thread while its thread job runs: the job sees
 * its cancellable cancelled (by the owner's dispatch of the
 * cancellation), the fiber's frame stays until the job returned, and the
 * fiber unwinds on the loop's thread. */
typedef struct
{
  GThread       *main_thread;
  gint           fiber_started;
  _Atomic gint   job_started;
  gint           saw_write;
  gint           got_cancelled;
  GThread       *unwound_on;
  GThread       *destroyed_on;
} JobCancel;

typedef struct
{
  JobCancel *jc;
  gint      *on_stack;
} JobCancelArgs;

static gpointer
job_until_cancelled (GCancellable  *cancellable,
                     gpointer       user_data,
                     GError       **error)
{
  JobCancelArgs *args = user_data;            /* on the fiber's stack */

  atomic_store (&args->jc->job_started, 1);
  /* A hang here (the cancellable never cancelled) is the watchdog's. */
  while (!g_cancellable_is_cancelled (cancellable))
    g_usleep (100);
  *args->on_stack = 77;
  g_cancellable_set_error_if_cancelled (cancellable, error);
  return NULL;
}

static void
job_cancel_fiber (WsContext *cx,
                  gpointer   user_data)
{
  JobCancel *jc = user_data;
  g_autoptr(GError) error = NULL;
  gint on_stack = 0;
  JobCancelArgs args = { jc, &on_stack };

  jc->fiber_started = 1;
  g_assert_null (ws_fiber_run_in_thread (cx, job_until_cancelled, &args, &error));
  jc->saw_write = on_stack == 77;
  jc->got_cancelled = g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  jc->unwound_on = current_thread ();
}

static void
job_cancel_destroy (gpointer data)
{
  JobCancel *jc = data;

  jc->destroyed_on = current_thread ();
}

static void
test_run_in_thread_cancel (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  JobCancel jc = { g_thread_self (), };
  g_autoptr(WsTask) t = NULL;
  Loop l;

  loop_init (&l);
  t = ws_runtime_spawn_local_fiber (rt, NULL, job_cancel_fiber, &jc, job_cancel_destroy);
  ws_test_iterate_until (l.context, jc.fiber_started == 1);
  /* Set on the job's thread, which does not wake this loop. */
  ws_test_wait_until (atomic_load (&jc.job_started) == 1);
  g_thread_join (g_thread_new ("canceller", cancel_from_thread, t));
  run_until_finished (&l, t);

  g_assert_true (task_was_cancelled (t));
  g_assert_cmpint (jc.saw_write, ==, 1);
  g_assert_cmpint (jc.got_cancelled, ==, 1);
  g_assert_true (jc.unwound_on == jc.main_thread);
  g_assert_true (jc.destroyed_on == jc.main_thread);

  loop_clear (&l);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

WS_TEST_MAIN (
  { "/local-fiber/main-thread", test_main_thread },
  { "/local-fiber/awaits", test_awaits },
  { "/local-fiber/cancel", test_cancel },
  { "/local-fiber/shutdown-on-owner", test_shutdown_on_owner },
  { "/local-fiber/shutdown-from-fiber", test_shutdown_from_fiber },
  { "/local-fiber/wait-runs-it", test_wait_runs_it },
  { "/local-fiber/run-in-thread", test_run_in_thread },
  { "/local-fiber/run-in-thread-cancel", test_run_in_thread_cancel },
)
