/* test-runtime.c: spawning, joining, stealing, GMainContext, shutdown
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <gio/gio.h>

#include "ws-test-util.h"
#include "wsrt.h"
#include "ws-raw-task-private.h"
#include "ws-lock-private.h"   /* POSIX locks: visible to TSan, unlike GMutex */

static _Atomic gint n_destroyed;
static _Atomic gint n_polled;

static void
count_destroy (gpointer data)
{
  atomic_fetch_add (&n_destroyed, 1);
}

static void
reset_counters (void)
{
  atomic_store (&n_destroyed, 0);
  atomic_store (&n_polled, 0);
}

static WsPoll
return_index (WsContext *cx,
              gpointer   data)
{
  GValue v = G_VALUE_INIT;

  atomic_fetch_add (&n_polled, 1);
  g_value_init (&v, G_TYPE_UINT);
  g_value_set_uint (&v, GPOINTER_TO_UINT (data));
  ws_context_return_value (cx, &v);
  return WS_POLL_READY;
}

static void
test_spawn_join_many (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  WsTask **tasks = g_new0 (WsTask *, 10000);

  reset_counters ();
  for (guint i = 0; i < 10000; i++)
    tasks[i] = ws_runtime_spawn (rt, return_index, GUINT_TO_POINTER (i), count_destroy);
  for (guint i = 0; i < 10000; i++)
    {
      g_assert_true (ws_task_wait (tasks[i], NULL, NULL));
      g_assert_cmpuint (g_value_get_uint (ws_task_get_value (tasks[i])), ==, i);
      g_object_unref (tasks[i]);
    }
  g_free (tasks);
  g_assert_cmpint (atomic_load (&n_polled), ==, 10000);
  g_assert_cmpint (atomic_load (&n_destroyed), ==, 10000);

  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_clear_object (&rt);
  g_assert_cmpint (ws_raw_task_get_n_live (), ==, 0);
}

/* A task spawns children through ws_handle_get_current() and awaits them. */
typedef struct
{
  WsTask *children[8];
  guint   spawned;
  guint   sum;
} Parent;

static void
parent_free (gpointer data)
{
  Parent *p = data;

  for (guint i = 0; i < G_N_ELEMENTS (p->children); i++)
    g_clear_object (&p->children[i]);
  atomic_fetch_add (&n_destroyed, 1);
  g_free (p);
}

static WsPoll
parent_func (WsContext *cx,
             gpointer   data)
{
  Parent *p = data;
  GValue v = G_VALUE_INIT;

  if (!p->spawned)
    {
      g_autoptr(WsHandle) handle = ws_handle_get_current ();

      g_assert_nonnull (handle);
      for (guint i = 0; i < G_N_ELEMENTS (p->children); i++)
        p->children[i] = ws_handle_spawn (handle, return_index, GUINT_TO_POINTER (i + 1), NULL);
      p->spawned = TRUE;
    }

  for (guint i = 0; i < G_N_ELEMENTS (p->children); i++)
    if (ws_task_poll (p->children[i], cx) == WS_POLL_PENDING)
      return WS_POLL_PENDING;

  p->sum = 0;
  for (guint i = 0; i < G_N_ELEMENTS (p->children); i++)
    p->sum += g_value_get_uint (ws_task_get_value (p->children[i]));

  g_value_init (&v, G_TYPE_UINT);
  g_value_set_uint (&v, p->sum);
  ws_context_return_value (cx, &v);
  return WS_POLL_READY;
}

static void
test_nested_spawns (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  WsTask *tasks[100];

  reset_counters ();
  /* Off the runtime there is no current handle. */
  g_assert_null (ws_handle_get_current ());

  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    tasks[i] = ws_runtime_spawn (rt, parent_func, g_new0 (Parent, 1), parent_free);
  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    {
      g_assert_true (ws_task_wait (tasks[i], NULL, NULL));
      g_assert_cmpuint (g_value_get_uint (ws_task_get_value (tasks[i])), ==, 36);
      g_object_unref (tasks[i]);
    }
  g_assert_cmpint (atomic_load (&n_destroyed), ==, G_N_ELEMENTS (tasks));
  g_assert_cmpint (atomic_load (&n_polled), ==, 8 * G_N_ELEMENTS (tasks));
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* A 1,000-deep chain: each link spawns the next, detached. */
typedef struct
{
  guint         depth;
  WsLock        lock;
  WsCond         cond;
  gboolean      done;
  _Atomic guint links;
} Chain;

static WsPoll chain_link (WsContext *cx, gpointer data);

static WsPoll
chain_link (WsContext *cx,
            gpointer   data)
{
  Chain *c = data;
  guint n = atomic_fetch_add (&c->links, 1) + 1;

  if (n < c->depth)
    {
      g_autoptr(WsHandle) handle = ws_handle_get_current ();
      g_autoptr(WsTask) next = ws_handle_spawn (handle, chain_link, c, NULL);
    }
  else
    {
      ws_lock_lock (&c->lock);
      c->done = TRUE;
      ws_cond_signal (&c->cond);
      ws_lock_unlock (&c->lock);
    }
  return WS_POLL_READY;
}

static void
test_chain (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  Chain c = { .depth = 1000 };

  ws_lock_init (&c.lock);
  ws_cond_init (&c.cond);
  ws_runtime_spawn_detached (rt, chain_link, &c, NULL);
  ws_lock_lock (&c.lock);
  while (!c.done)
    ws_cond_wait (&c.cond, &c.lock);
  ws_lock_unlock (&c.lock);
  g_assert_cmpuint (atomic_load (&c.links), ==, 1000);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  ws_lock_clear (&c.lock);
  ws_cond_clear (&c.cond);
}

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
  for (guint i = 0; i < 4; i++)
    {
      g_assert_true (ws_task_wait (tasks[i], NULL, NULL));
      g_assert_cmpuint (ys[i].polls, ==, 1001);
      g_object_unref (tasks[i]);
    }
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* A worker blocks on a plain condition variable until its child has run:
 * the child must be stolen and run by the other worker. */
typedef struct
{
  WsLock   lock;
  WsCond    cond;
  gboolean child_done;
  GThread *parent_thread;
  GThread *child_thread;
} Blocker;

static WsPoll
blocker_child (WsContext *cx,
               gpointer   data)
{
  Blocker *b = data;

  ws_lock_lock (&b->lock);
  b->child_thread = g_thread_self ();
  b->child_done = TRUE;
  ws_cond_signal (&b->cond);
  ws_lock_unlock (&b->lock);
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

  ws_lock_lock (&b->lock);
  while (!b->child_done)
    ws_cond_wait (&b->cond, &b->lock);
  ws_lock_unlock (&b->lock);
  return WS_POLL_READY;
}

static void
test_blocked_worker_child_stolen (void)
{
  g_autoptr(GError) error = NULL;
  /* With the LIFO slot on, the child would sit in the slot, which is not
   * stealable; this is what block_in_place is for. */
  g_autoptr(WsRuntime) rt = g_initable_new (WS_TYPE_RUNTIME, NULL, &error,
                                            "n-workers", 2,
                                            "disable-lifo-slot", TRUE,
                                            NULL);
  Blocker b = { 0, };
  g_autoptr(WsTask) task = NULL;
  g_autoptr(WsMetrics) metrics = NULL;
  guint64 steals = 0;

  g_assert_no_error (error);
  ws_lock_init (&b.lock);
  ws_cond_init (&b.cond);

  task = ws_runtime_spawn (rt, blocker_parent, &b, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_true (b.child_done);
  g_assert_true (b.child_thread != b.parent_thread);

  metrics = ws_runtime_get_metrics (rt);
  for (guint i = 0; i < ws_metrics_get_n_workers (metrics); i++)
    steals += ws_metrics_get_worker_steal_count (metrics, i);
  g_assert_cmpuint (steals, ==, 1);

  g_assert_true (ws_runtime_shutdown (rt, -1));
  ws_lock_clear (&b.lock);
  ws_cond_clear (&b.cond);
}

static WsPoll
pending_forever (WsContext *cx,
                 gpointer   data)
{
  atomic_fetch_add (&n_polled, 1);
  return WS_POLL_PENDING;
}

static void
test_shutdown_with_pending_tasks (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsMetrics) before = NULL;
  g_autoptr(WsMetrics) after = NULL;

  reset_counters ();
  for (guint i = 0; i < 10000; i++)
    ws_runtime_spawn_detached (rt, pending_forever, NULL, count_destroy);
  /* Let some be polled; others are still queued when shutdown comes. */
  while (atomic_load (&n_polled) < 100)
    g_usleep (100);

  before = ws_runtime_get_metrics (rt);
  g_assert_cmpuint (ws_metrics_get_alive_tasks (before), >, 0);

  g_assert_true (ws_runtime_shutdown (rt, 5 * G_USEC_PER_SEC));
  g_assert_cmpint (atomic_load (&n_destroyed), ==, 10000);

  after = ws_runtime_get_metrics (rt);
  g_assert_cmpuint (ws_metrics_get_alive_tasks (after), ==, 0);

  /* Shutting down again is harmless. */
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_assert_cmpint (atomic_load (&n_destroyed), ==, 10000);
  g_clear_object (&rt);
  g_assert_cmpint (ws_raw_task_get_n_live (), ==, 0);
}

static void
test_spawn_after_shutdown (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(WsTask) task = NULL;
  g_autoptr(GError) error = NULL;

  reset_counters ();
  g_assert_true (ws_runtime_shutdown (rt, -1));

  task = ws_runtime_spawn (rt, return_index, NULL, count_destroy);
  g_assert_nonnull (task);
  /* Already cancelled, and its data already freed. */
  g_assert_true (ws_task_is_finished (task));
  g_assert_cmpint (atomic_load (&n_destroyed), ==, 1);
  g_assert_false (ws_task_wait (task, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpint (atomic_load (&n_polled), ==, 0);

  ws_runtime_spawn_detached (rt, return_index, NULL, count_destroy);
  g_assert_cmpint (atomic_load (&n_destroyed), ==, 2);

  g_clear_object (&task);
  task = ws_runtime_spawn_blocking (rt, return_index, NULL, count_destroy);
  g_assert_true (ws_task_is_finished (task));
  g_assert_cmpint (atomic_load (&n_destroyed), ==, 3);
  g_assert_cmpint (atomic_load (&n_polled), ==, 0);
}

/* The last reference to a runtime released on one of its own workers. */
typedef struct
{
  WsRuntime *rt;
  WsLock     lock;
  WsCond      cond;
  gboolean   returned;
} SelfRelease;

static WsPoll
release_runtime_func (WsContext *cx,
                      gpointer   data)
{
  SelfRelease *s = data;

  g_object_unref (s->rt);       /* the last reference: disposes, shuts down */
  ws_lock_lock (&s->lock);
  s->returned = TRUE;
  ws_cond_signal (&s->cond);
  ws_lock_unlock (&s->lock);
  return WS_POLL_READY;
}

static void
test_release_runtime_from_worker (void)
{
  SelfRelease s = { 0, };

  ws_lock_init (&s.lock);
  ws_cond_init (&s.cond);
  s.rt = ws_runtime_new (2);
  ws_runtime_spawn_detached (s.rt, release_runtime_func, &s, NULL);

  ws_lock_lock (&s.lock);
  while (!s.returned)
    ws_cond_wait (&s.cond, &s.lock);
  ws_lock_unlock (&s.lock);

  /* The worker threads wind down by themselves. */
  while (ws_raw_task_get_n_live () != 0)
    g_usleep (1000);
  ws_lock_clear (&s.lock);
  ws_cond_clear (&s.cond);
}

/* g_file_load_contents_async started in a task completes on that worker's
 * context and wakes the task. */
typedef struct
{
  GFile        *file;
  GThread      *poll_thread;
  GMainContext *poll_context;
  GThread      *callback_thread;
  GMainContext *callback_context;
  WsWaker      *waker;
  gchar        *contents;
  gsize         length;
  GError       *error;
  _Atomic gboolean loaded;
  guint         polls;
} LoadData;

static void
load_cb (GObject      *object,
         GAsyncResult *result,
         gpointer      data)
{
  LoadData *d = data;

  d->callback_thread = g_thread_self ();
  d->callback_context = g_main_context_get_thread_default ();
  g_file_load_contents_finish (G_FILE (object), result, &d->contents, &d->length, NULL, &d->error);
  atomic_store (&d->loaded, TRUE);
  ws_waker_wake (d->waker);
  g_clear_pointer (&d->waker, ws_waker_unref);
}

static WsPoll
load_func (WsContext *cx,
           gpointer   data)
{
  LoadData *d = data;

  d->polls++;
  if (d->polls == 1)
    {
      d->poll_thread = g_thread_self ();
      d->poll_context = g_main_context_get_thread_default ();
      d->waker = ws_context_get_waker (cx);
      g_file_load_contents_async (d->file, NULL, load_cb, d);
      return WS_POLL_PENDING;
    }

  if (!atomic_load (&d->loaded))
    return WS_POLL_PENDING;
  return WS_POLL_READY;
}

static void
test_gio_in_task (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autofree gchar *path = g_test_build_filename (G_TEST_DIST, "test-runtime.c", NULL);
  LoadData d = { 0, };
  g_autoptr(WsTask) task = NULL;

  d.file = g_file_new_for_path (path);
  task = ws_runtime_spawn (rt, load_func, &d, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));

  g_assert_no_error (d.error);
  g_assert_nonnull (d.contents);
  g_assert_nonnull (strstr (d.contents, "g_file_load_contents_async started in a task"));
  /* Each worker has its own context, the thread default while it works. */
  g_assert_nonnull (d.poll_context);
  g_assert_true (d.poll_context != g_main_context_default ());
  g_assert_true (d.callback_context == d.poll_context);
  g_assert_true (d.callback_thread == d.poll_thread);
  g_assert_cmpuint (d.polls, ==, 2);

  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_free (d.contents);
  g_object_unref (d.file);
}

/* Local tasks run on their context's thread; wait_async calls back there
 * exactly once, never from inside the call. */
typedef struct
{
  GThread *owner;
  guint    polls;
  gboolean wrong_thread;
  GThread *destroy_thread;
} LocalData;

static void
local_destroy (gpointer data)
{
  ((LocalData *) data)->destroy_thread = g_thread_self ();
}

static WsPoll
local_func (WsContext *cx,
            gpointer   data)
{
  LocalData *l = data;

  if (g_thread_self () != l->owner)
    l->wrong_thread = TRUE;
  if (l->polls++ < 3)
    return ws_context_yield (cx);
  return WS_POLL_READY;
}

typedef struct
{
  guint    calls;
  gboolean ok;
  GError  *error;
} WaitResult;

static void
wait_cb (GObject      *object,
         GAsyncResult *result,
         gpointer      data)
{
  WaitResult *r = data;

  r->calls++;
  r->ok = ws_task_wait_finish (WS_TASK (object), result, &r->error);
}

static void
test_local_tasks (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(GMainContext) ctx = g_main_context_new ();
  LocalData l = { 0, };
  g_autoptr(WsTask) task = NULL;
  WaitResult r = { 0, };

  g_main_context_push_thread_default (ctx);
  l.owner = g_thread_self ();
  task = ws_runtime_spawn_local (rt, NULL, local_func, &l, local_destroy);
  ws_task_wait_async (task, NULL, wait_cb, &r);
  g_assert_cmpuint (r.calls, ==, 0);        /* never from inside the call */

  ws_test_iterate_until (ctx, r.calls > 0);
  g_assert_cmpuint (r.calls, ==, 1);
  g_assert_true (r.ok);
  g_assert_no_error (r.error);
  g_assert_cmpuint (l.polls, ==, 4);
  g_assert_false (l.wrong_thread);
  g_assert_true (l.destroy_thread == l.owner);

  /* Waiting on a finished task: still exactly once, still not inside. */
  ws_task_wait_async (task, NULL, wait_cb, &r);
  g_assert_cmpuint (r.calls, ==, 1);
  ws_test_iterate_until (ctx, r.calls > 1);
  while (g_main_context_iteration (ctx, FALSE))
    ;
  g_assert_cmpuint (r.calls, ==, 2);

  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_main_context_pop_thread_default (ctx);
}

static WsPoll
local_pending (WsContext *cx,
               gpointer   data)
{
  LocalData *l = data;

  if (g_thread_self () != l->owner)
    l->wrong_thread = TRUE;
  l->polls++;
  return WS_POLL_PENDING;
}

/* A cancelled wait calls back once with CANCELLED; shutdown then ends the
 * local task on the owner thread. */
static void
test_local_cancelled_wait_and_shutdown (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(GMainContext) ctx = g_main_context_new ();
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  LocalData l = { 0, };
  g_autoptr(WsTask) task = NULL;
  WaitResult r = { 0, };

  g_main_context_push_thread_default (ctx);
  l.owner = g_thread_self ();
  task = ws_runtime_spawn_local (rt, ctx, local_pending, &l, local_destroy);
  ws_task_wait_async (task, cancellable, wait_cb, &r);
  ws_test_iterate_until (ctx, l.polls > 0);
  g_cancellable_cancel (cancellable);
  g_assert_cmpuint (r.calls, ==, 0);
  ws_test_iterate_until (ctx, r.calls > 0);
  g_assert_false (r.ok);
  g_assert_error (r.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&r.error);
  g_assert_false (ws_task_is_finished (task));

  /* This thread owns ctx, so shutdown runs the cancellation right here. */
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_assert_true (ws_task_is_finished (task));
  g_assert_true (l.destroy_thread == l.owner);
  g_assert_false (l.wrong_thread);
  while (g_main_context_iteration (ctx, FALSE))
    ;
  g_assert_cmpuint (r.calls, ==, 1);

  g_main_context_pop_thread_default (ctx);
}

static WsPoll
blocking_job (WsContext *cx,
              gpointer   data)
{
  g_usleep (1000);
  return return_index (cx, data);
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

static void
test_invalid_config (void)
{
  g_autoptr(GError) error = NULL;
  WsRuntime *rt = g_initable_new (WS_TYPE_RUNTIME, NULL, &error,
                                  "thread-name-prefix", "much-too-long-prefix",
                                  NULL);

  g_assert_null (rt);
  g_assert_error (error, WS_ERROR, WS_ERROR_INVALID_CONFIG);
  g_assert_nonnull (strstr (error->message, "thread-name-prefix"));
}

static void
test_refused_spawn_frees (void)
{
  reset_counters ();
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*WS_IS_RUNTIME*");
  g_assert_null (ws_runtime_spawn (NULL, return_index, NULL, count_destroy));
  g_test_assert_expected_messages ();
  g_assert_cmpint (atomic_load (&n_destroyed), ==, 1);
}

static void
test_default_runtime (void)
{
  WsRuntime *rt = ws_runtime_get_default ();
  g_autoptr(WsTask) task = NULL;

  g_assert_true (rt == ws_runtime_get_default ());
  g_assert_cmpuint (ws_runtime_get_n_workers (rt), ==, g_get_num_processors ());
  task = ws_runtime_spawn (rt, return_index, GUINT_TO_POINTER (7), NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_cmpuint (g_value_get_uint (ws_task_get_value (task)), ==, 7);
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
  while (atomic_load (&busy_links) < 10)
    g_usleep (100);

  reset_counters ();
  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    tasks[i] = ws_runtime_spawn (rt, return_index, GUINT_TO_POINTER (i), NULL);
  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    {
      g_assert_true (ws_task_wait (tasks[i], NULL, NULL));
      g_object_unref (tasks[i]);
    }
  g_assert_cmpint (atomic_load (&n_polled), ==, G_N_ELEMENTS (tasks));

  atomic_store (&busy_stop, TRUE);
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
  g_autoptr(WsTask) task = ws_runtime_spawn (rt, busy_until_timer, &t, NULL);
  g_autoptr(WsMetrics) metrics = NULL;

  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_true (atomic_load (&t.fired));
  g_assert_true (t.fired_on == t.worker);
  g_assert_cmpuint (t.yields, >, 0);

  metrics = ws_runtime_get_metrics (rt);
  g_assert_cmpuint (ws_metrics_get_worker_poll_count (metrics, 0), ==, t.yields + 1);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Metrics agree with a known scenario. */
static void
test_metrics (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsMetrics) m = NULL;
  g_autofree char *table = NULL;
  guint64 polls = 0;
  WsTask *tasks[100];

  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    tasks[i] = ws_runtime_spawn (rt, return_index, GUINT_TO_POINTER (i), NULL);
  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    {
      g_assert_true (ws_task_wait (tasks[i], NULL, NULL));
      g_object_unref (tasks[i]);
    }

  m = ws_runtime_get_metrics (rt);
  g_assert_cmpuint (ws_metrics_get_n_workers (m), ==, 2);
  for (guint i = 0; i < 2; i++)
    polls += ws_metrics_get_worker_poll_count (m, i);
  g_assert_cmpuint (polls, ==, G_N_ELEMENTS (tasks));
  g_assert_cmpuint (ws_metrics_get_spawned_tasks (m), ==, G_N_ELEMENTS (tasks));
  g_assert_cmpuint (ws_metrics_get_remote_schedule_count (m), ==, G_N_ELEMENTS (tasks));
  g_assert_cmpuint (ws_metrics_get_alive_tasks (m), ==, 0);

  table = ws_metrics_to_string (m);
  g_assert_nonnull (strstr (table, "polls"));
  g_assert_nonnull (strstr (table, "steals"));
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

int
main (int   argc,
      char *argv[])
{
  ws_test_init (&argc, &argv);

  ws_test_add_func ("/runtime/spawn-join-many", test_spawn_join_many);
  ws_test_add_func ("/runtime/nested-spawns", test_nested_spawns);
  ws_test_add_func ("/runtime/chain", test_chain);
  ws_test_add_func ("/runtime/yield-loop", test_yield_loop);
  ws_test_add_func ("/runtime/blocked-worker-child-stolen", test_blocked_worker_child_stolen);
  ws_test_add_func ("/runtime/shutdown-with-pending-tasks", test_shutdown_with_pending_tasks);
  ws_test_add_func ("/runtime/spawn-after-shutdown", test_spawn_after_shutdown);
  ws_test_add_func ("/runtime/release-from-worker", test_release_runtime_from_worker);
  ws_test_add_func ("/runtime/gio-in-task", test_gio_in_task);
  ws_test_add_func ("/runtime/local-tasks", test_local_tasks);
  ws_test_add_func ("/runtime/local-cancelled-wait-and-shutdown", test_local_cancelled_wait_and_shutdown);
  ws_test_add_func ("/runtime/spawn-blocking", test_spawn_blocking);
  ws_test_add_func ("/runtime/invalid-config", test_invalid_config);
  ws_test_add_func ("/runtime/refused-spawn-frees", test_refused_spawn_frees);
  ws_test_add_func ("/runtime/default", test_default_runtime);
  ws_test_add_func ("/runtime/respawning-chains-do-not-starve", test_respawning_chains_do_not_starve);
  ws_test_add_func ("/runtime/timer-fires-under-load", test_timer_fires_under_load);
  ws_test_add_func ("/runtime/metrics", test_metrics);

  return g_test_run ();
}
