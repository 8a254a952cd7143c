/* test-local-executor.c: tasks bound to one GMainContext (ws-local-executor)
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Against the module alone: a set of executors with a configuration and a
 * runtime count of the test's own, on contexts the test creates. A
 * spawned task runs only when its context is iterated, on the thread
 * that iterates it, inside the executor's dispatch; a wake from another
 * thread brings it back there; one dispatch polls at most a slice's
 * worth; a poll that iterates the context again polls the other tasks
 * from the nested dispatch, never itself; a shutdown cancels what is
 * left, runs the destroy notifies on the context's owner (itself when it
 * can acquire the context, else it waits for the owner's dispatch), and
 * lets the runtime count go. ws-local-executor.c's opening comment
 * states each of these.
 */

#include "config.h"

#include <stdatomic.h>

#include "../ws-test-util.h"
#include "ws-local-executor-private.h"
#include "ws-waker-private.h"

typedef struct
{
  WsConfig          config;
  WsRuntimeRef      runtime;
  WsLocalExecutors *set;
  GMainContext     *context;
} Fixture;

static void
runtime_last_unref (WsRuntimeRef *self)
{
  /* The fixture holds one reference to the end. */
  g_assert_not_reached ();
}

static void
fixture_init (Fixture *f)
{
  f->config = (WsConfig) { .budget = 128, .local_slice = -1 };
  atomic_init (&f->runtime.count, 1);
  f->runtime.last_unref = runtime_last_unref;
  f->set = ws_local_executors_new (&f->config, &f->runtime);
  f->context = g_main_context_new ();
}

/* Shut down from the owner (this thread can acquire the context): done at
 * once, every executor gone, and with it its runtime reference. */
static void
fixture_clear (Fixture *f)
{
  ws_local_executors_close (f->set);
  g_assert_null (ws_local_executors_lookup (f->set, f->context));
  g_assert_true (ws_local_executors_shutdown (f->set, -1));
  g_assert_cmpint (ws_local_executors_count_alive (f->set), ==, 0);
  while (g_main_context_iteration (f->context, FALSE))
    ;
  g_assert_cmpint (atomic_load (&f->runtime.count), ==, 1);
  ws_local_executors_free (f->set);
  g_main_context_unref (f->context);
}

/* A task of the test: polled @ready_at times to be READY; a poll before
 * that keeps its waker in the slot (under the lock) and is PENDING. */
typedef struct
{
  Fixture      *f;
  guint         ready_at;       /* 0: never READY */
  _Atomic guint polls;
  _Atomic guint destroyed;
  GThread      *polled_on;
  GThread      *destroyed_on;
  WsLock        lock;
  WsWaker      *waker;          /* under lock */
  void        (*during_poll) (WsContext *cx,
                              gpointer   data);
  gpointer      during_poll_data;
} Job;

static void
job_init (Job     *j,
          Fixture *f,
          guint    ready_at)
{
  *j = (Job) { .f = f, .ready_at = ready_at };
  atomic_init (&j->polls, 0);
  atomic_init (&j->destroyed, 0);
  ws_lock_init (&j->lock);
}

static void
job_clear (Job *j)
{
  g_assert_null (j->waker);
  ws_lock_clear (&j->lock);
}

static WsPoll
job_poll (WsContext *cx,
          gpointer   data)
{
  Job *j = data;
  guint polls = atomic_fetch_add (&j->polls, 1) + 1;
  WsWaker *old;

  j->polled_on = g_thread_self ();
  g_assert_true (ws_local_executor_is_current ());
  g_assert_true (ws_thread.host_context == j->f->context);
  if (j->during_poll != NULL)
    j->during_poll (cx, j->during_poll_data);
  if (j->ready_at != 0 && polls >= j->ready_at)
    return WS_POLL_READY;
  ws_lock_lock (&j->lock);
  old = ws_waker_slot_replace (&j->waker, cx);
  ws_lock_unlock (&j->lock);
  if (old != NULL)
    old->vtable->unref (old);
  return WS_POLL_PENDING;
}

static void
job_destroy (gpointer data)
{
  Job *j = data;
  WsWaker *waker;

  j->destroyed_on = g_thread_self ();
  ws_lock_lock (&j->lock);
  waker = g_steal_pointer (&j->waker);
  ws_lock_unlock (&j->lock);
  if (waker != NULL)
    waker->vtable->unref (waker);
  atomic_fetch_add (&j->destroyed, 1);
}

static void
job_spawn (WsLocalExecutor *exec,
           Job             *j)
{
  g_assert_null (ws_local_executor_spawn (exec, job_poll, j, job_destroy, FALSE));
}

/* Spawned tasks wait for the context's iteration; then each is polled
 * once, on this thread, inside the dispatch, and destroyed. The executor
 * holds the runtime while it lives. */
static void
test_run_on_owner (void)
{
  Fixture f;
  WsLocalExecutor *exec;
  Job j[3];

  fixture_init (&f);
  exec = ws_local_executors_lookup (f.set, f.context);
  g_assert_true (ws_local_executors_lookup (f.set, f.context) == exec);
  ws_local_executor_unref (exec);
  g_assert_cmpint (atomic_load (&f.runtime.count), ==, 2);
  g_assert_true (ws_local_executor_get_host_context ((WsTaskHost *) exec) == f.context);

  for (guint i = 0; i < G_N_ELEMENTS (j); i++)
    {
      job_init (&j[i], &f, 1);
      job_spawn (exec, &j[i]);
    }
  g_assert_cmpint (ws_local_executors_count_alive (f.set), ==, 3);
  for (guint i = 0; i < G_N_ELEMENTS (j); i++)
    g_assert_cmpuint (atomic_load (&j[i].polls), ==, 0);
  g_assert_false (ws_local_executor_is_current ());

  ws_test_iterate_until (f.context, atomic_load (&j[2].destroyed) == 1);
  for (guint i = 0; i < G_N_ELEMENTS (j); i++)
    {
      g_assert_cmpuint (atomic_load (&j[i].polls), ==, 1);
      g_assert_cmpuint (atomic_load (&j[i].destroyed), ==, 1);
      g_assert_true (j[i].polled_on == g_thread_self ());
      job_clear (&j[i]);
    }
  g_assert_false (ws_local_executor_is_current ());
  g_assert_null (ws_thread.host_context);
  g_assert_cmpint (ws_local_executors_count_alive (f.set), ==, 0);
  g_assert_cmpuint (ws_local_executors_count_spawned (f.set), ==, 3);

  ws_local_executor_unref (exec);
  fixture_clear (&f);
}

/* A task woken from another thread is polled again on the owner. */
static gpointer
wake_thread (gpointer data)
{
  Job *j = data;
  WsWaker *waker = NULL;

  while (waker == NULL)
    {
      ws_lock_lock (&j->lock);
      waker = g_steal_pointer (&j->waker);
      ws_lock_unlock (&j->lock);
      if (waker == NULL)
        g_thread_yield ();
    }
  ws_waker_take_and_wake (waker);
  return NULL;
}

static void
test_wake_from_other_thread (void)
{
  Fixture f;
  WsLocalExecutor *exec;
  GThread *t;
  Job j;

  fixture_init (&f);
  exec = ws_local_executors_lookup (f.set, f.context);
  job_init (&j, &f, 2);
  t = g_thread_new ("waker", wake_thread, &j);
  job_spawn (exec, &j);
  ws_test_iterate_until (f.context, atomic_load (&j.destroyed) == 1);
  g_thread_join (t);
  g_assert_cmpuint (atomic_load (&j.polls), ==, 2);
  g_assert_true (j.polled_on == g_thread_self ());
  g_assert_true (j.destroyed_on == g_thread_self ());
  job_clear (&j);

  ws_local_executor_unref (exec);
  fixture_clear (&f);
}

/* With no time limit on a slice, one dispatch polls exactly
 * WS_LOCAL_SLICE_MAX_POLLS of the tasks queued, and the next iterations
 * the rest. */
#define N_SLICE (2 * WS_LOCAL_SLICE_MAX_POLLS + 1)

static void
test_slice_bound (void)
{
  Fixture f;
  WsLocalExecutor *exec;
  g_autofree Job *j = g_new (Job, N_SLICE);
  guint expect[] = { WS_LOCAL_SLICE_MAX_POLLS, 2 * WS_LOCAL_SLICE_MAX_POLLS, N_SLICE };

  fixture_init (&f);
  exec = ws_local_executors_lookup (f.set, f.context);
  for (guint i = 0; i < N_SLICE; i++)
    {
      job_init (&j[i], &f, 1);
      job_spawn (exec, &j[i]);
    }
  for (guint round = 0; round < G_N_ELEMENTS (expect); round++)
    {
      guint polled = 0;

      g_assert_true (g_main_context_iteration (f.context, FALSE));
      for (guint i = 0; i < N_SLICE; i++)
        polled += atomic_load (&j[i].polls);
      g_assert_cmpuint (polled, ==, expect[round]);
    }
  g_assert_cmpuint (atomic_load (&ws_local_executor_max_slice_polls), ==,
                    WS_LOCAL_SLICE_MAX_POLLS);
  for (guint i = 0; i < N_SLICE; i++)
    job_clear (&j[i]);

  ws_local_executor_unref (exec);
  fixture_clear (&f);
}

/* A poll that iterates the executor's context (a nested main loop): the
 * nested dispatch polls the tasks queued behind it, and never the task
 * whose poll is running, though it woke itself; that one is polled
 * again after its poll has returned. */
typedef struct
{
  Job *self;
  Job *others;
  guint n_others;
  guint others_polled_inside;
  guint self_polls_inside;
} Nest;

static void
iterate_nested (WsContext *cx,
                gpointer   data)
{
  Nest *n = data;

  if (atomic_load (&n->self->polls) > 1)
    return;
  ws_raw_task_wake_by_ref (cx->task);
  while (g_main_context_iteration (n->self->f->context, FALSE))
    ;
  for (guint i = 0; i < n->n_others; i++)
    n->others_polled_inside += atomic_load (&n->others[i].polls);
  n->self_polls_inside = atomic_load (&n->self->polls);
}

static void
test_nested_loop (void)
{
  Fixture f;
  WsLocalExecutor *exec;
  Job outer, others[2];
  Nest n = { &outer, others, G_N_ELEMENTS (others), 0, 0 };

  fixture_init (&f);
  exec = ws_local_executors_lookup (f.set, f.context);
  job_init (&outer, &f, 2);
  outer.during_poll = iterate_nested;
  outer.during_poll_data = &n;
  job_spawn (exec, &outer);
  for (guint i = 0; i < G_N_ELEMENTS (others); i++)
    {
      job_init (&others[i], &f, 1);
      job_spawn (exec, &others[i]);
    }
  ws_test_iterate_until (f.context, atomic_load (&outer.destroyed) == 1);
  g_assert_cmpuint (n.others_polled_inside, ==, G_N_ELEMENTS (others));
  g_assert_cmpuint (n.self_polls_inside, ==, 1);
  g_assert_cmpuint (atomic_load (&outer.polls), ==, 2);
  job_clear (&outer);
  for (guint i = 0; i < G_N_ELEMENTS (others); i++)
    {
      g_assert_cmpuint (atomic_load (&others[i].destroyed), ==, 1);
      job_clear (&others[i]);
    }

  ws_local_executor_unref (exec);
  fixture_clear (&f);
}

/* After the close, a lookup finds nothing and a spawn on an executor
 * still held is refused: its destroy notify runs at once here (this
 * thread can acquire the context), never polled. The shutdown cancels
 * the task left waiting, on this thread, and the executor lets go of the
 * runtime. */
static void
test_shutdown_on_owner (void)
{
  Fixture f;
  WsLocalExecutor *exec;
  Job waiting, refused;

  fixture_init (&f);
  exec = ws_local_executors_lookup (f.set, f.context);
  job_init (&waiting, &f, 0);
  job_spawn (exec, &waiting);
  ws_test_iterate_until (f.context, atomic_load (&waiting.polls) == 1);

  ws_local_executors_close (f.set);
  g_assert_null (ws_local_executors_lookup (f.set, f.context));
  job_init (&refused, &f, 1);
  job_spawn (exec, &refused);
  g_assert_cmpuint (atomic_load (&refused.destroyed), ==, 1);
  g_assert_cmpuint (atomic_load (&refused.polls), ==, 0);
  ws_local_executor_unref (exec);

  g_assert_true (ws_local_executors_shutdown (f.set, -1));
  g_assert_cmpuint (atomic_load (&waiting.destroyed), ==, 1);
  g_assert_cmpuint (atomic_load (&waiting.polls), ==, 1);
  g_assert_true (waiting.destroyed_on == g_thread_self ());
  g_assert_cmpint (atomic_load (&f.runtime.count), ==, 1);
  job_clear (&waiting);
  job_clear (&refused);
  fixture_clear (&f);
}

/* The context's owner is another thread, which holds it: the shutdown
 * cannot run the cancellation itself and waits for the owner's dispatch,
 * which destroys the task there. */
typedef struct
{
  Fixture      *f;
  _Atomic gint  owning;
  _Atomic gint  stop;
} Owner;

static gpointer
owner_thread (gpointer data)
{
  Owner *o = data;

  g_assert_true (g_main_context_acquire (o->f->context));
  atomic_store (&o->owning, 1);
  while (!atomic_load (&o->stop))
    g_main_context_iteration (o->f->context, TRUE);
  g_main_context_release (o->f->context);
  return NULL;
}

static void
test_shutdown_waits_for_owner (void)
{
  Fixture f;
  Owner o = { &f, };
  WsLocalExecutor *exec;
  GThread *t;
  Job waiting;

  fixture_init (&f);
  atomic_init (&o.owning, 0);
  atomic_init (&o.stop, 0);
  exec = ws_local_executors_lookup (f.set, f.context);
  job_init (&waiting, &f, 0);
  t = g_thread_new ("owner", owner_thread, &o);
  ws_test_wait_until (atomic_load (&o.owning));
  job_spawn (exec, &waiting);
  ws_local_executor_unref (exec);
  ws_test_wait_until (atomic_load (&waiting.polls) == 1);

  ws_local_executors_close (f.set);
  g_assert_true (ws_local_executors_shutdown (f.set, -1));
  g_assert_cmpuint (atomic_load (&waiting.destroyed), ==, 1);
  g_assert_true (waiting.destroyed_on == t);
  g_assert_true (waiting.polled_on == t);

  atomic_store (&o.stop, 1);
  g_main_context_wakeup (f.context);
  g_thread_join (t);
  job_clear (&waiting);
  fixture_clear (&f);
}

WS_TEST_MAIN ({ "/local-executor/run-on-owner", test_run_on_owner },
              { "/local-executor/wake-from-other-thread", test_wake_from_other_thread },
              { "/local-executor/slice-bound", test_slice_bound },
              { "/local-executor/nested-loop", test_nested_loop },
              { "/local-executor/shutdown-on-owner", test_shutdown_on_owner },
              { "/local-executor/shutdown-waits-for-owner", test_shutdown_waits_for_owner })
