/* test-join-handle.c: WsJoinHandle, the join handle without a GObject
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <stddef.h>

#include "ws-test-fixture.h"

/* ---- fork-join: fib by recursive spawns, joined with handles ---------- */

#define FIB_CUTOFF 10

typedef struct
{
  guint         n;
  guint         stage;
  gboolean      in_task;   /* each child's Fib kept in its task (spawn_with_state) */
  WsJoinHandle *left;
  WsJoinHandle *right;
} Fib;

static guint64
fib_serial (guint n)
{
  return n < 2 ? n : fib_serial (n - 1) + fib_serial (n - 2);
}

static WsPoll fib_poll (WsContext *cx, gpointer data);

static WsJoinHandle *
fib_spawn (WsContext *cx,
           guint      n,
           gboolean   in_task)
{
  Fib child = { n, 0, in_task, NULL, NULL };
  WsJoinHandle *h;

  if (!in_task)
    return ws_context_spawn (cx, fib_poll, g_memdup2 (&child, sizeof child), g_free);

  h = ws_context_spawn_with_state (cx, fib_poll, &child, sizeof child, NULL);
  /* The task has its own copy: what the spawner's does next is its own. */
  child.n = G_MAXUINT;
  return h;
}

static WsPoll
fib_poll (WsContext *cx,
          gpointer   data)
{
  Fib *f = data;
  guint64 a, b;

  g_assert_cmpuint (GPOINTER_TO_SIZE (f) % _Alignof (max_align_t), ==, 0);
  if (f->n < FIB_CUTOFF)
    {
      ws_context_return_uint64 (cx, fib_serial (f->n));
      return WS_POLL_READY;
    }
  if (f->stage == 0)
    {
      f->left = fib_spawn (cx, f->n - 1, f->in_task);
      f->right = fib_spawn (cx, f->n - 2, f->in_task);
      f->stage = 1;
    }
  if (ws_join_handle_poll (f->left, cx) == WS_POLL_PENDING
      || ws_join_handle_poll (f->right, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;

  g_assert_true (ws_join_handle_finish_uint64 (g_steal_pointer (&f->left), &a, NULL));
  g_assert_true (ws_join_handle_finish_uint64 (g_steal_pointer (&f->right), &b, NULL));
  ws_context_return_uint64 (cx, a + b);
  return WS_POLL_READY;
}

/* Every level joins both halves through handles; the root is joined from
 * the main thread with ws_join_handle_wait. With @in_task, each child's
 * Fib is a copy in the child's task, read and written across polls. */
static void
run_fork_join (gboolean in_task)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);

  for (guint n = 0; n <= 22; n += 11)
    {
      Fib *root = g_new0 (Fib, 1);
      WsJoinHandle *h;
      guint64 value = G_MAXUINT64;

      root->n = n;
      root->in_task = in_task;
      h = ws_runtime_spawn_joinable (rt, fib_poll, root, g_free);
      g_assert_true (ws_join_handle_wait (h, NULL));
      g_assert_true (ws_join_handle_is_finished (h));
      g_assert_true (ws_join_handle_finish_uint64 (h, &value, NULL));
      g_assert_cmpuint (value, ==, fib_serial (n));
    }
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static void
test_fork_join (void)
{
  run_fork_join (FALSE);
}

/* ---- results ---------------------------------------------------------- */

static void
count_and_free (gpointer data)
{
  ws_test_count_destroy (data);
  g_free (data);
}

static WsPoll
return_pointer (WsContext *cx,
                gpointer   data)
{
  ws_context_return_pointer (cx, g_strdup ("joined"), count_and_free);
  return WS_POLL_READY;
}

static WsPoll
return_uint64 (WsContext *cx,
               gpointer   data)
{
  ws_context_return_uint64 (cx, G_MAXUINT64 - 1);
  return WS_POLL_READY;
}

/* finish hands the pointer over (its destroy notify does not run) or the
 * error; finish_uint64 reads a plain integer. */
static void
test_results (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(GError) error = NULL;
  WsJoinHandle *h;
  gchar *s;
  guint64 v = 0;

  ws_test_reset_counters ();
  h = ws_runtime_spawn_joinable (rt, return_pointer, NULL, NULL);
  g_assert_true (ws_join_handle_wait (h, NULL));
  s = ws_join_handle_finish (h, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (s, ==, "joined");
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 0);
  g_free (s);

  h = ws_runtime_spawn_joinable (rt, ws_test_return_not_found, NULL, NULL);
  g_assert_true (ws_join_handle_wait (h, NULL));
  g_assert_null (ws_join_handle_finish (h, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
  g_clear_error (&error);

  h = ws_runtime_spawn_joinable (rt, return_uint64, NULL, NULL);
  g_assert_true (ws_join_handle_wait (h, NULL));
  g_assert_true (ws_join_handle_finish_uint64 (h, &v, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (v, ==, G_MAXUINT64 - 1);

  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Asking a handle for another kind of result than its task returned is a
 * critical that names the right function, and the result is still freed
 * with the handle. */
static void
test_wrong_result_kind (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  WsJoinHandle *h;
  guint64 v = 7;

  ws_test_reset_counters ();
  h = ws_runtime_spawn_joinable (rt, return_pointer, NULL, NULL);
  g_assert_true (ws_join_handle_wait (h, NULL));
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL,
                         "*ws_join_handle_finish_uint64*pointer*take it with ws_join_handle_finish()*");
  g_assert_false (ws_join_handle_finish_uint64 (h, &v, NULL));
  g_test_assert_expected_messages ();
  g_assert_cmpuint (v, ==, 0);
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 1);

  h = ws_runtime_spawn_joinable (rt, return_uint64, NULL, NULL);
  g_assert_true (ws_join_handle_wait (h, NULL));
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL,
                         "*ws_join_handle_finish:*integer*ws_join_handle_finish_uint64()*");
  g_assert_null (ws_join_handle_finish (h, NULL));
  g_test_assert_expected_messages ();

  h = ws_runtime_spawn_joinable (rt, ws_test_return_index, GUINT_TO_POINTER (5), NULL);
  g_assert_true (ws_join_handle_wait (h, NULL));
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL,
                         "*ws_join_handle_finish:*value*ws_join_handle_into_task()*");
  g_assert_null (ws_join_handle_finish (h, NULL));
  g_test_assert_expected_messages ();

  h = ws_runtime_spawn_joinable (rt, ws_test_return_index, GUINT_TO_POINTER (5), NULL);
  g_assert_true (ws_join_handle_wait (h, NULL));
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL,
                         "*ws_join_handle_finish_uint64*value*ws_task_get_value()*");
  g_assert_false (ws_join_handle_finish_uint64 (h, &v, NULL));
  g_test_assert_expected_messages ();

  /* No result at all is not a wrong kind. */
  h = ws_runtime_spawn_joinable (rt, ws_test_ready, NULL, NULL);
  g_assert_true (ws_join_handle_wait (h, NULL));
  g_assert_true (ws_join_handle_finish_uint64 (h, &v, NULL));
  g_assert_cmpuint (v, ==, 0);

  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ---- cancel, free, into_task ------------------------------------------ */

/* A cancelled task ends with its destroy notify run, and its handle
 * finishes with G_IO_ERROR_CANCELLED. */
static void
test_cancel (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(GError) error = NULL;
  WsJoinHandle *h;

  ws_test_reset_counters ();
  h = ws_runtime_spawn_joinable (rt, ws_test_pending_forever, NULL, ws_test_count_destroy);
  ws_test_wait_until (atomic_load (&ws_test_n_polled) == 1);
  g_assert_false (ws_join_handle_is_finished (h));
  ws_join_handle_cancel (h);
  g_assert_true (ws_join_handle_wait (h, NULL));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 1);
  g_assert_null (ws_join_handle_finish (h, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

typedef struct
{
  WsOneshot *go;
  gpointer   item;
} Gated;

static WsPoll
gated_return_pointer (WsContext *cx,
                      gpointer   data)
{
  Gated *g = data;

  if (ws_oneshot_poll (g->go, cx, &g->item, NULL) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  ws_context_return_pointer (cx, g_strdup ("dropped"), count_and_free);
  return WS_POLL_READY;
}

/* Freeing a handle detaches the task: it goes on, and the result it
 * returns later is freed with its destroy notify. */
static void
test_free_detaches (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  Gated g = { ws_oneshot_new (NULL) };
  WsJoinHandle *h;

  ws_test_reset_counters ();
  h = ws_runtime_spawn_joinable (rt, gated_return_pointer, &g, NULL);
  ws_join_handle_free (h);
  g_assert_true (ws_oneshot_send (g.go, GUINT_TO_POINTER (1)));
  ws_test_wait_until (atomic_load (&ws_test_n_destroyed) == 1);
  ws_oneshot_unref (g.go);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* A handle turned into a WsTask: a plain integer result is a
 * G_TYPE_UINT64 value there, as bindings read it. */
static void
test_into_task (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(WsTask) task = NULL;
  const GValue *value;

  task = ws_join_handle_into_task (ws_runtime_spawn_joinable (rt, return_uint64, NULL, NULL));
  g_assert_true (ws_task_wait (task, NULL, NULL));
  value = ws_task_get_value (task);
  g_assert_nonnull (value);
  g_assert_true (G_VALUE_HOLDS_UINT64 (value));
  g_assert_cmpuint (g_value_get_uint64 (value), ==, G_MAXUINT64 - 1);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ---- misuse ------------------------------------------------------------ */

typedef struct
{
  WsJoinHandle *child;
  GError       *error;
  gboolean      waited;
} WaitOnWorker;

static WsPoll
wait_on_worker (WsContext *cx,
                gpointer   data)
{
  WaitOnWorker *w = data;

  w->waited = ws_join_handle_wait (w->child, &w->error);
  ws_join_handle_free (w->child);
  return WS_POLL_READY;
}

/* A blocking wait on a worker is refused with WS_ERROR_WOULD_BLOCK. */
static void
test_wait_on_worker (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  WaitOnWorker w = { ws_runtime_spawn_joinable (rt, ws_test_pending_forever, NULL, NULL) };
  g_autoptr(WsTask) t = ws_runtime_spawn (rt, wait_on_worker, &w, NULL);

  g_assert_true (ws_task_wait (t, NULL, NULL));
  g_assert_false (w.waited);
  g_assert_error (w.error, WS_ERROR, WS_ERROR_WOULD_BLOCK);
  g_clear_error (&w.error);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* After shutdown a spawn is refused: its destroy notify has run when the
 * call returns, and the handle finishes as cancelled. */
static void
test_refused_after_shutdown (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(GError) error = NULL;
  WsJoinHandle *h;

  g_assert_true (ws_runtime_shutdown (rt, -1));
  ws_test_reset_counters ();
  h = ws_runtime_spawn_joinable (rt, ws_test_count_poll, NULL, ws_test_count_destroy);
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 1);
  g_assert_true (ws_join_handle_is_finished (h));
  g_assert_null (ws_join_handle_finish (h, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, 0);
}

/* A spawn refused for bad input still frees its data. */
static void
test_bad_input (void)
{
  ws_test_reset_counters ();
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*context != NULL*");
  g_assert_null (ws_context_spawn (NULL, ws_test_ready, NULL, ws_test_count_destroy));
  g_test_assert_expected_messages ();
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 1);
}

/* Two tasks awaiting one join handle: the second is reported (a critical
 * naming ws_join_handle_into_task), and the first is woken, not left
 * waiting for ever. */
typedef struct
{
  WsJoinHandle *child;
  gint          polls;       /* atomic */
  gboolean      finishes;    /* takes the outcome once ready */
  gint          done;        /* atomic */
} SharedAwaiter;

static WsPoll
await_shared (WsContext *cx,
              gpointer   data)
{
  SharedAwaiter *a = data;
  gint polls = g_atomic_int_add (&a->polls, 1) + 1;

  if (!a->finishes && polls > 1)
    {
      /* Woken by the second waiter's registration: stop waiting. */
      g_atomic_int_set (&a->done, TRUE);
      return WS_POLL_READY;
    }
  if (ws_join_handle_poll (a->child, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  g_assert_cmpuint (GPOINTER_TO_UINT (ws_join_handle_finish (a->child, NULL)), ==, 0);
  g_atomic_int_set (&a->done, TRUE);
  return WS_POLL_READY;
}

static WsPoll
gate_then_ready (WsContext *cx,
                 gpointer   data)
{
  ws_test_gate_wait (data);
  return WS_POLL_READY;
}

static void
test_two_waiters_reported (void)
{
  /* One worker for the child, held at the gate; one for the waiters. */
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  WsTestGate gate;
  SharedAwaiter first = { NULL, 0, FALSE, FALSE };
  SharedAwaiter second = { NULL, 0, TRUE, FALSE };

  ws_test_gate_init (&gate);
  first.child = second.child = ws_runtime_spawn_joinable (rt, gate_then_ready, &gate, NULL);
  ws_test_gate_wait_for_waiters (&gate, 1);

  ws_runtime_spawn_detached (rt, await_shared, &first, NULL);
  ws_test_wait_until (g_atomic_int_get (&first.polls) == 1);
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL,
                         "ws_join_handle_poll: another task is awaiting*ws_join_handle_into_task*");
  ws_runtime_spawn_detached (rt, await_shared, &second, NULL);
  ws_test_wait_until (g_atomic_int_get (&first.done));
  g_test_assert_expected_messages ();

  ws_test_gate_open (&gate);
  ws_test_wait_until (g_atomic_int_get (&second.done));
  g_assert_true (ws_runtime_shutdown (rt, -1));
  ws_test_gate_clear (&gate);
}

/* A handle used after it ended is reported, not an abort on an internal
 * assertion: finishing twice, freeing or cancelling after the finish, and
 * finishing after freeing. Each time the handle's task memory has not
 * been reused (no spawn on this thread in between). */
static WsPoll
return_seven (WsContext *cx,
              gpointer   data)
{
  ws_context_return_uint64 (cx, 7);
  return WS_POLL_READY;
}

static void
settle (WsRuntime *rt)
{
  WsJoinHandle *h = ws_runtime_spawn_joinable (rt, return_seven, NULL, NULL);

  g_assert_true (ws_join_handle_wait (h, NULL));
  ws_join_handle_free (h);
}

static void
test_used_after_end_reported (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);

  for (guint misuse = 0; misuse < 5; misuse++)
    {
      WsJoinHandle *h = ws_runtime_spawn_joinable (rt, return_seven, NULL, NULL);
      guint64 value = 0;
      g_autoptr(GError) error = NULL;

      g_assert_true (ws_join_handle_wait (h, NULL));
      /* The wait returns once the task's end is published, maybe before
       * the worker has dropped its own reference: a task run after it on
       * the one worker orders that drop before the misuse below reads
       * the task's memory. */
      settle (rt);
      if (misuse < 4)
        {
          g_assert_true (ws_join_handle_finish_uint64 (h, &value, &error));
          g_assert_no_error (error);
          g_assert_cmpuint (value, ==, 7);
        }
      else
        ws_join_handle_free (h);

      g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*join handle already finished*");
      switch (misuse)
        {
        case 0:
          value = 1;
          g_assert_false (ws_join_handle_finish_uint64 (h, &value, &error));
          g_assert_no_error (error);
          g_assert_cmpuint (value, ==, 0);
          break;
        case 1:
          ws_join_handle_free (h);
          break;
        case 2:
          ws_join_handle_cancel (h);
          break;
        case 3:
          g_assert_null (ws_join_handle_into_task (h));
          break;
        default:
          g_assert_null (ws_join_handle_finish (h, &error));
          g_assert_no_error (error);
          break;
        }
      g_test_assert_expected_messages ();
    }
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ---- work-first: an awaited child that has not started runs at once ---- */

typedef struct
{
  guint         polls;
  guint         n_children;          /* spawned in the first poll */
  guint         await_first;         /* which child to await first */
  WsJoinHandle *children[3];
  GThread      *thread;
  guint64       sum;
  gint          done;
} Parent;

static WsPoll
parent_poll (WsContext *cx,
             gpointer   data)
{
  Parent *p = data;

  p->polls++;
  if (p->polls == 1)
    {
      p->thread = g_thread_self ();
      for (guint i = 0; i < p->n_children; i++)
        p->children[i] = ws_context_spawn (cx, ws_test_return_uint64, GUINT_TO_POINTER (i + 1), NULL);
    }
  for (guint k = 0; k < p->n_children; k++)
    {
      guint i = (p->await_first + k) % p->n_children;

      if (p->children[i] != NULL && ws_join_handle_poll (p->children[i], cx) == WS_POLL_PENDING)
        return WS_POLL_PENDING;
      if (p->children[i] != NULL)
        {
          guint64 v = 0;

          g_assert_true (ws_join_handle_finish_uint64 (g_steal_pointer (&p->children[i]), &v,
                                                       NULL));
          p->sum += v;
        }
    }
  g_atomic_int_set (&p->done, 1);
  return WS_POLL_READY;
}

static guint
run_parent (WsRuntime *rt,
            guint      n_children,
            guint      await_first)
{
  Parent p = { 0, };

  p.n_children = n_children;
  p.await_first = await_first;
  ws_runtime_spawn_detached (rt, parent_poll, &p, NULL);
  ws_test_wait_until (g_atomic_int_get (&p.done));
  g_assert_cmpuint (p.sum, ==, n_children * (n_children + 1) / 2);
  return p.polls;
}

/* On one worker, a task that awaits the child it spawned last (in the
 * worker's LIFO slot) or the one before (the newest of the run queue)
 * gets it ready in the same poll: the child ran nested, first. A child
 * further down the queue is not taken out of order: the parent waits for
 * it as before. */
static void
test_await_runs_child_first (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);

  g_assert_cmpuint (run_parent (rt, 1, 0), ==, 1);
  /* Two children: the second is in the LIFO slot, the first at the
   * queue's tail; either order of awaiting needs one poll. */
  g_assert_cmpuint (run_parent (rt, 2, 0), ==, 1);
  g_assert_cmpuint (run_parent (rt, 2, 1), ==, 1);
  /* Three, awaiting the oldest first: it is not the newest queued. */
  g_assert_cmpuint (run_parent (rt, 3, 0), >, 1);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* A chain deeper than the nesting bound: each level spawns one child and
 * awaits it; past the bound the awaiting task waits instead, and every
 * level still gets its child's value. */
#define CHAIN_DEPTH 300

static void
test_await_deep_chain (void)
{
  for (guint workers = 1; workers <= 2; workers++)
    {
      g_autoptr(WsRuntime) rt = ws_runtime_new (workers);
      WsTestChainLink *root = g_new0 (WsTestChainLink, 1);
      WsJoinHandle *h;

      root->depth = CHAIN_DEPTH;
      h = ws_runtime_spawn_joinable (rt, ws_test_chain_link_poll, root, g_free);
      g_assert_cmpuint (ws_test_join_uint64 (h), ==, CHAIN_DEPTH);
      g_assert_true (ws_runtime_shutdown (rt, -1));
    }
}

/* A child run first that cannot finish yet returns PENDING as usual: the
 * parent waits for it, and both end once the child's oneshot is sent. */
typedef struct
{
  WsOneshot    *oneshot;
  WsJoinHandle *child;
  gint          parent_pending;
  gint          child_polled;
  gint          done;
} Waiting;

static WsPoll
child_waits_oneshot (WsContext *cx,
                     gpointer   data)
{
  Waiting *w = data;
  gpointer item = NULL;

  g_atomic_int_set (&w->child_polled, 1);
  if (ws_oneshot_poll (w->oneshot, cx, &item, NULL) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  g_assert_true (item == w);
  return WS_POLL_READY;
}

static WsPoll
parent_of_waiting_child (WsContext *cx,
                         gpointer   data)
{
  Waiting *w = data;

  if (w->child == NULL)
    w->child = ws_context_spawn (cx, child_waits_oneshot, w, NULL);
  if (ws_join_handle_poll (w->child, cx) == WS_POLL_PENDING)
    {
      /* The child ran (nested) before the parent learned it must wait. */
      g_assert_true (g_atomic_int_get (&w->child_polled));
      g_atomic_int_set (&w->parent_pending, 1);
      return WS_POLL_PENDING;
    }
  g_assert_true (ws_join_handle_finish (g_steal_pointer (&w->child), NULL) == NULL);
  g_atomic_int_set (&w->done, 1);
  return WS_POLL_READY;
}

static void
test_await_child_pending (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  Waiting w = { 0, };

  w.oneshot = ws_oneshot_new (NULL);
  ws_runtime_spawn_detached (rt, parent_of_waiting_child, &w, NULL);
  ws_test_wait_until (g_atomic_int_get (&w.parent_pending));
  g_assert_false (g_atomic_int_get (&w.done));
  g_assert_true (ws_oneshot_send (w.oneshot, &w));
  ws_test_wait_until (g_atomic_int_get (&w.done));
  g_assert_true (ws_runtime_shutdown (rt, -1));
  ws_oneshot_unref (w.oneshot);
}

/* A child run first may hand the worker to another thread with
 * ws_block_in_place (): the parent's poll goes on without the worker,
 * finishes, and the runtime keeps running tasks on the new thread. */
static void
note_blocked (gpointer data)
{
  g_atomic_int_set ((gint *) data, 1);
}

typedef struct
{
  WsJoinHandle *child;
  gint          blocked;
} Blocking;

static WsPoll
child_blocks_in_place (WsContext *cx,
                       gpointer   data)
{
  g_autoptr(GError) error = NULL;

  g_assert_true (ws_block_in_place (note_blocked, data, &error));
  g_assert_no_error (error);
  ws_context_return_uint64 (cx, 5);
  return WS_POLL_READY;
}

static WsPoll
parent_of_blocking_child (WsContext *cx,
                          gpointer   data)
{
  Blocking *b = data;
  guint64 v = 0;

  if (b->child == NULL)
    b->child = ws_context_spawn (cx, child_blocks_in_place, &b->blocked, NULL);
  if (ws_join_handle_poll (b->child, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  g_assert_true (ws_join_handle_finish_uint64 (g_steal_pointer (&b->child), &v, NULL));
  ws_context_return_uint64 (cx, v + 1);
  return WS_POLL_READY;
}

/* The end of a test of a hand-off inside a nested run: the awaiting
 * task @h ended with @expected after one ws_block_in_place (*@blocked),
 * and the worker, now on another thread, still runs tasks. */
static void
assert_handed_off (WsRuntime    *rt,
                   WsJoinHandle *h,
                   guint64       expected,
                   gint         *blocked)
{
  g_assert_cmpuint (ws_test_join_uint64 (h), ==, expected);
  g_assert_cmpint (g_atomic_int_get (blocked), ==, 1);
  for (guint i = 0; i < 10; i++)
    g_assert_cmpuint (run_parent (rt, 2, 1), >=, 1);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static void
test_await_child_blocks_in_place (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  Blocking b = { NULL, 0 };

  assert_handed_off (rt, ws_runtime_spawn_joinable (rt, parent_of_blocking_child, &b, NULL),
                     6, &b.blocked);
}

/* The hand-off two levels down, with more to await after it: a parent
 * runs child A nested, A runs grandchild G nested, and G blocks in place,
 * so the worker's core moves to another thread. A and the parent finish
 * their polls off the worker; the parent then awaits child B, which is
 * queued on the core it no longer has, so it waits for B as usual, and
 * the new worker thread runs B and wakes it. */
typedef struct
{
  WsJoinHandle *a;
  WsJoinHandle *b;
  WsJoinHandle *g;
  gint          blocked;
  gboolean      started;
  guint64       sum;
} Deep;

static WsPoll
deep_grandchild (WsContext *cx,
                 gpointer   data)
{
  Deep *d = data;
  g_autoptr(GError) error = NULL;

  g_assert_true (ws_block_in_place (note_blocked, &d->blocked, &error));
  g_assert_no_error (error);
  ws_context_return_uint64 (cx, 1);
  return WS_POLL_READY;
}

static WsPoll
deep_child (WsContext *cx,
            gpointer   data)
{
  Deep *d = data;
  guint64 v = 0;

  if (d->g == NULL)
    d->g = ws_context_spawn (cx, deep_grandchild, d, NULL);
  if (ws_join_handle_poll (d->g, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  g_assert_true (ws_join_handle_finish_uint64 (g_steal_pointer (&d->g), &v, NULL));
  ws_context_return_uint64 (cx, v + 10);
  return WS_POLL_READY;
}

static WsPoll
deep_parent (WsContext *cx,
             gpointer   data)
{
  Deep *d = data;
  guint64 v = 0;

  if (!d->started)
    {
      d->started = TRUE;
      d->b = ws_context_spawn (cx, ws_test_return_uint64, GUINT_TO_POINTER (100), NULL);
      d->a = ws_context_spawn (cx, deep_child, d, NULL);
    }
  if (d->a != NULL && ws_join_handle_poll (d->a, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  if (d->a != NULL)
    {
      g_assert_true (ws_join_handle_finish_uint64 (g_steal_pointer (&d->a), &v, NULL));
      d->sum += v;
    }
  if (ws_join_handle_poll (d->b, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  g_assert_true (ws_join_handle_finish_uint64 (g_steal_pointer (&d->b), &v, NULL));
  d->sum += v;
  ws_context_return_uint64 (cx, d->sum);
  return WS_POLL_READY;
}

static void
test_await_hand_off_two_levels_down (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  Deep d = { NULL, };

  assert_handed_off (rt, ws_runtime_spawn_joinable (rt, deep_parent, &d, NULL), 111, &d.blocked);
}

/* A child cancelled before it started still ends through the parent's
 * await: READY, with the cancellation as its outcome. */
static WsPoll
parent_of_cancelled_child (WsContext *cx,
                           gpointer   data)
{
  WsJoinHandle **child = data;
  g_autoptr(GError) error = NULL;
  guint64 v = 1;

  if (*child == NULL)
    {
      *child = ws_context_spawn (cx, ws_test_return_uint64, GUINT_TO_POINTER (9), NULL);
      ws_join_handle_cancel (*child);
    }
  if (ws_join_handle_poll (*child, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  g_assert_false (ws_join_handle_finish_uint64 (g_steal_pointer (child), &v, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  ws_context_return_uint64 (cx, 3);
  return WS_POLL_READY;
}

static void
test_await_cancelled_child (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  WsJoinHandle *child = NULL;
  WsJoinHandle *h = ws_runtime_spawn_joinable (rt, parent_of_cancelled_child, &child, NULL);
  guint64 v = 0;

  g_assert_true (ws_join_handle_wait (h, NULL));
  g_assert_true (ws_join_handle_finish_uint64 (h, &v, NULL));
  g_assert_cmpuint (v, ==, 3);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* A child run first whose poll makes a waker and then ends READY: every
 * other child registers on a oneshot, while another thread wakes and
 * drops that waker, so that at the end of the nested run the waker may be
 * gone, still held, or have woken the running child; the others arm a
 * sleep and disarm it, dropping the waker unused. Each parent awaits its child at once, so
 * the child runs nested, where RUNNING and COMPLETE are taken by stores
 * when nothing else holds a reference (ws-task-state-private.h); every
 * value arrives, and the ASan, TSan and leak-counting builds see every
 * task freed once. */
#define RACED_CHILDREN 2000

typedef struct
{
  GAsyncQueue  *to_sender;           /* WsOneshot, one ref each */
  WsJoinHandle *child;
  guint         spawned;
  guint         nested;              /* children ready at their first await */
  gboolean      awaited_once;
  guint64       sum;
  gint          done;
} Raced;

static WsPoll
child_polls_oneshot_once (WsContext *cx,
                          gpointer   data)
{
  WsOneshot *oneshot = data;
  gpointer item = NULL;

  if (oneshot == NULL)
    {
      /* A waker made and dropped unused within the poll: a sleep armed
       * and disarmed. */
      WsSleep *sleep = ws_sleep_new ((gint64) G_USEC_PER_SEC * 3600);

      g_assert_cmpint (ws_sleep_poll (sleep, cx), ==, WS_POLL_PENDING);
      ws_sleep_unref (sleep);
    }
  else
    /* PENDING registers our waker; READY if the sender was first. Either
     * way this child ends now, with its waker maybe still out there. */
    (void) ws_oneshot_poll (oneshot, cx, &item, NULL);
  ws_context_return_uint64 (cx, 1);
  return WS_POLL_READY;
}

static WsPoll
parent_of_raced_children (WsContext *cx,
                          gpointer   data)
{
  Raced *r = data;

  for (;;)
    {
      guint64 v = 0;

      if (r->child == NULL)
        {
          WsOneshot *oneshot;

          if (r->spawned == RACED_CHILDREN)
            break;
          if (r->spawned % 2 == 0)
            {
              oneshot = ws_oneshot_new (NULL);
              g_async_queue_push (r->to_sender, ws_oneshot_ref (oneshot));
              r->child = ws_context_spawn (cx, child_polls_oneshot_once, oneshot,
                                           (GDestroyNotify) ws_oneshot_unref);
            }
          else
            r->child = ws_context_spawn (cx, child_polls_oneshot_once, NULL, NULL);
          r->spawned++;
          r->awaited_once = FALSE;
        }
      /* Work-first: the child in this worker's LIFO slot runs in this
       * call while the poll's budget lasts. */
      if (ws_join_handle_poll (r->child, cx) == WS_POLL_PENDING)
        {
          r->awaited_once = TRUE;
          return WS_POLL_PENDING;
        }
      if (!r->awaited_once)
        r->nested++;
      g_assert_true (ws_join_handle_finish_uint64 (g_steal_pointer (&r->child), &v, NULL));
      r->sum += v;
    }
  g_atomic_int_set (&r->done, 1);
  return WS_POLL_READY;
}

static gpointer
send_each (gpointer data)
{
  Raced *r = data;

  for (guint i = 0; i < RACED_CHILDREN / 2; i++)
    {
      WsOneshot *oneshot = g_async_queue_pop (r->to_sender);

      (void) ws_oneshot_send (oneshot, oneshot);
      ws_oneshot_unref (oneshot);
    }
  return NULL;
}

static void
test_await_child_waker_raced (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  Raced r = { g_async_queue_new (), };
  GThread *sender = g_thread_new ("sender", send_each, &r);

  ws_runtime_spawn_detached (rt, parent_of_raced_children, &r, NULL);
  ws_test_wait_until (g_atomic_int_get (&r.done));
  g_thread_join (sender);
  g_assert_cmpuint (r.sum, ==, RACED_CHILDREN);
  /* A fresh poll has budget for its first child at least. */
  g_assert_cmpuint (r.nested, >, 0);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_async_queue_unref (r.to_sender);
}

/* ---- a task's state in the task (spawn_with_state) ------------------- */

/* State kept in the task: fib (22) with every child's Fib in its task. */
static void
test_state_fork_join (void)
{
  run_fork_join (TRUE);
}

/* A state of @size bytes: a pattern to check, a count of polls kept in
 * the state, and a string the clear function frees. */
typedef struct
{
  gsize     size;
  gpointer  seen;        /* the copy the first poll got */
  guint     polls;
  gint      n_cleared;   /* atomic */
  gpointer  cleared;     /* the pointer the clear function got */
} StateProbe;

typedef struct
{
  StateProbe *probe;
  char       *name;
  guint       polls;
  guint8      pattern[];
} ProbeState;

static void
probe_state_clear (gpointer data)
{
  ProbeState *s = data;

  s->probe->cleared = s;
  g_clear_pointer (&s->name, g_free);
  g_atomic_int_inc (&s->probe->n_cleared);
}

static WsPoll
probe_state_poll (WsContext *cx,
                  gpointer   data)
{
  ProbeState *s = data;
  StateProbe *p = s->probe;
  gsize n = p->size - sizeof (ProbeState);

  g_assert_cmpuint (GPOINTER_TO_SIZE (s) % _Alignof (max_align_t), ==, 0);
  if (s->polls == 0)
    p->seen = s;
  g_assert_true (p->seen == s);
  g_assert_cmpstr (s->name, ==, "state");
  for (gsize i = 0; i < n; i++)
    g_assert_cmpuint (s->pattern[i], ==, (guint8) (i * 7 + 1));
  /* Three polls: the count lives in the task's copy only. */
  if (++s->polls < 3)
    {
      ws_context_yield (cx);
      return WS_POLL_PENDING;
    }
  p->polls = s->polls;
  return WS_POLL_READY;
}

static ProbeState *
probe_state_new (StateProbe *p,
                 gsize       size)
{
  ProbeState *s = g_malloc0 (size);

  p->size = size;
  s->probe = p;
  s->name = g_strdup ("state");
  for (gsize i = 0; i < size - sizeof (ProbeState); i++)
    s->pattern[i] = (guint8) (i * 7 + 1);
  return s;
}

static WsPoll
spawn_probe_from_task (WsContext *cx,
                       gpointer   data)
{
  StateProbe *p = data;
  g_autofree ProbeState *s = probe_state_new (p, p->size);
  WsJoinHandle *h = ws_context_spawn_with_state (cx, probe_state_poll, s, p->size,
                                                 probe_state_clear);

  /* The spawner's struct is not the task's: scribble on it. */
  memset (s, 0xa5, p->size);
  ws_join_handle_free (h);
  return WS_POLL_READY;
}

/* Small states (in the task allocator's tailed blocks), larger ones (its
 * large blocks, up to a fiber's size) and the largest (malloc's), through
 * both entry points: the task sees a copy at one address across its
 * polls, and the clear function runs once, on it. */
static void
test_state_sizes (void)
{
  static const gsize sizes[] = {
    sizeof (ProbeState), sizeof (ProbeState) + 1, 64, 65, 200, 288, 289, 4096
  };
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);

  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++)
    for (guint from_task = 0; from_task < 2; from_task++)
      {
        StateProbe p = { sizes[i], NULL, 0, 0, NULL };

        if (from_task)
          {
            WsJoinHandle *h = ws_runtime_spawn_joinable (rt, spawn_probe_from_task, &p, NULL);

            g_assert_true (ws_join_handle_wait (h, NULL));
            ws_join_handle_free (h);
          }
        else
          {
            g_autofree ProbeState *s = probe_state_new (&p, sizes[i]);

            ws_runtime_spawn_detached_with_state (rt, probe_state_poll, s, sizes[i],
                                                  probe_state_clear);
            memset (s, 0xa5, sizes[i]);
          }
        while (g_atomic_int_get (&p.n_cleared) == 0)
          g_usleep (100);
        g_assert_cmpuint (p.polls, ==, 3);
        g_assert_true (p.cleared == p.seen);
        g_assert_cmpint (g_atomic_int_get (&p.n_cleared), ==, 1);
      }
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Refused after shutdown: the clear function has run on the task's copy
 * when the call returns. The string it freed was handed over with the
 * state, so freed once, by the task (ASan and valgrind would see a leak
 * or a double free). */
static void
test_state_refused_after_shutdown (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  StateProbe p = { 0 };
  g_autofree ProbeState *s = probe_state_new (&p, sizeof (ProbeState) + 8);

  g_assert_true (ws_runtime_shutdown (rt, -1));
  ws_runtime_spawn_detached_with_state (rt, probe_state_poll, s, p.size, probe_state_clear);
  g_assert_cmpint (g_atomic_int_get (&p.n_cleared), ==, 1);
  g_assert_true (p.cleared != s);
  g_assert_null (p.seen);
}

/* Programmer errors: a critical, and the state's members still freed
 * (through the clear function on the caller's struct) where there is a
 * state to clear. */
static void
test_state_bad_input (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  StateProbe p = { 0 };
  g_autofree ProbeState *s = probe_state_new (&p, sizeof (ProbeState));

  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*func != NULL*");
  ws_runtime_spawn_detached_with_state (rt, NULL, s, sizeof *s, probe_state_clear);
  g_test_assert_expected_messages ();
  g_assert_cmpint (g_atomic_int_get (&p.n_cleared), ==, 1);
  g_assert_true (p.cleared == s);
  g_assert_null (s->name);

  s->name = g_strdup ("state");
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*state_size > 0*");
  ws_runtime_spawn_detached_with_state (rt, probe_state_poll, s, 0, probe_state_clear);
  g_test_assert_expected_messages ();
  g_assert_cmpint (g_atomic_int_get (&p.n_cleared), ==, 2);
  g_assert_null (s->name);

  s->name = g_strdup ("state");
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*state_size <= G_MAXINT32*");
  ws_runtime_spawn_detached_with_state (rt, probe_state_poll, s, G_MAXSIZE, probe_state_clear);
  g_test_assert_expected_messages ();
  g_assert_cmpint (g_atomic_int_get (&p.n_cleared), ==, 3);
  g_assert_null (s->name);

  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*state != NULL*");
  ws_runtime_spawn_detached_with_state (rt, probe_state_poll, NULL, 8, probe_state_clear);
  g_test_assert_expected_messages ();
  g_assert_cmpint (g_atomic_int_get (&p.n_cleared), ==, 3);

  s->name = g_strdup ("state");
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*context != NULL*");
  g_assert_null (ws_context_spawn_with_state (NULL, probe_state_poll, s, sizeof *s,
                                              probe_state_clear));
  g_test_assert_expected_messages ();
  g_assert_cmpint (g_atomic_int_get (&p.n_cleared), ==, 4);
  g_assert_null (s->name);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

WS_TEST_MAIN ({ "/join-handle/fork-join", test_fork_join },
              { "/join-handle/used-after-end-reported", test_used_after_end_reported },
              { "/join-handle/results", test_results },
              { "/join-handle/wrong-result-kind", test_wrong_result_kind },
              { "/join-handle/cancel", test_cancel },
              { "/join-handle/free-detaches", test_free_detaches },
              { "/join-handle/into-task", test_into_task },
              { "/join-handle/wait-on-worker", test_wait_on_worker },
              { "/join-handle/refused-after-shutdown", test_refused_after_shutdown },
              { "/join-handle/bad-input", test_bad_input },
              { "/join-handle/two-waiters-reported", test_two_waiters_reported },
              { "/join-handle/await-runs-child-first", test_await_runs_child_first },
              { "/join-handle/await-deep-chain", test_await_deep_chain },
              { "/join-handle/await-child-pending", test_await_child_pending },
              { "/join-handle/await-child-blocks-in-place", test_await_child_blocks_in_place },
              { "/join-handle/await-hand-off-two-levels-down",
                test_await_hand_off_two_levels_down },
              { "/join-handle/await-cancelled-child", test_await_cancelled_child },
              { "/join-handle/await-child-waker-raced", test_await_child_waker_raced },
              { "/join-handle/state/fork-join", test_state_fork_join },
              { "/join-handle/state/sizes", test_state_sizes },
              { "/join-handle/state/refused-after-shutdown", test_state_refused_after_shutdown },
              { "/join-handle/state/bad-input", test_state_bad_input })
