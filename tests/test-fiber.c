/* test-fiber.c: fibers, tasks whose body is a C function on its own stack
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The contract of ws-fiber.h: a fiber returns its result through
 * ws_context_return_*, awaits every awaitable with WS_FIBER_AWAIT (join
 * handles, sleeps, channels, oneshots, GIO operations, a limiter's
 * permits; a group awaits fibers), spawns fibers
 * (fork-join), is resumed with FALSE when cancelled and at shutdown so
 * that its own cleanup runs before its destroy notify and before the
 * shutdown returns, may be resumed on another worker, fits a deep
 * recursion in its default stack, refuses an await inside a callback of a
 * main context the fiber itself iterates (a critical, FALSE, and the
 * worker's next task is outside any dispatch), costs one stack per fiber that stays
 * mapped only while it waits (reused after), and dies by SIGSEGV on a
 * stack overflow (of the size fiber-stack-size sets). A thread job
 * (ws_fiber_run_in_thread) hands back its function's result and error as
 * given, and the call returns only after the function did, also once the
 * task is cancelled (the function writes to the fiber's stack then).
 */

#include "config.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ws-test-fixture.h"
#include "ws-fiber-stack-private.h"

/* A guard whose cleanup counts: a fiber holds one in a g_autoptr across
 * its awaits, and the count says that its frames were unwound. */
typedef struct
{
  gint tag;
} Guard;

static _Atomic gint n_guards_freed;

static void
guard_free (Guard *g)
{
  atomic_fetch_add (&n_guards_freed, 1);
  g_free (g);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (Guard, guard_free)

static Guard *
guard_new (void)
{
  return g_new0 (Guard, 1);
}

/* ---- results ------------------------------------------------------------ */

static void
return_uint64 (WsContext *cx,
               gpointer   user_data)
{
  g_assert_true (ws_context_is_fiber (cx));
  ws_context_return_uint64 (cx, GPOINTER_TO_UINT (user_data));
}

static void
return_pointer (WsContext *cx,
                gpointer   user_data)
{
  /* A result set before an await is kept until the function returns. */
  ws_context_return_pointer (cx, g_strdup ("from a fiber"), g_free);
  g_assert_true (ws_fiber_yield (cx));
}

static void
return_error (WsContext *cx,
              gpointer   user_data)
{
  ws_context_return_error (cx, g_error_new_literal (G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "none"));
}

static void
test_results (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GError) error = NULL;
  WsJoinHandle *h;
  g_autoptr(WsTask) t = NULL;
  guint64 v = 0;
  g_autofree char *s = NULL;

  ws_test_reset_counters ();
  h = ws_runtime_spawn_fiber_full (rt, 0, return_uint64, GUINT_TO_POINTER (42),
                                   ws_test_count_destroy);
  g_assert_true (ws_join_handle_wait (h, NULL));
  g_assert_true (ws_join_handle_finish_uint64 (h, &v, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (v, ==, 42);
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 1);

  t = ws_runtime_spawn_fiber (rt, return_pointer, NULL, NULL);
  g_assert_true (ws_task_wait (t, NULL, NULL));
  s = ws_task_propagate_pointer (t, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (s, ==, "from a fiber");
  g_clear_object (&t);

  t = ws_runtime_spawn_fiber (rt, return_error, NULL, NULL);
  g_assert_false (ws_task_wait (t, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ---- awaiting ----------------------------------------------------------- */

typedef struct
{
  WsOneshot *shot;
  WsChannel *chan;
  GFile     *file;
} Awaits;

static void
await_all (WsContext *cx,
           gpointer   user_data)
{
  Awaits *a = user_data;
  g_autoptr(WsSleep) nap = ws_sleep_new (2000);
  g_autoptr(WsAsyncOp) op = ws_async_op_new ();
  g_autoptr(GFileInfo) info = NULL;
  g_autoptr(GError) error = NULL;
  gpointer item = NULL;
  guint64 sum = 0;

  g_assert_true (WS_FIBER_AWAIT (cx, ws_sleep_poll (nap, cx)));

  g_assert_true (WS_FIBER_AWAIT (cx, ws_oneshot_poll (a->shot, cx, &item, &error)));
  g_assert_no_error (error);
  sum += GPOINTER_TO_UINT (item);

  for (guint i = 0; i < 3; i++)
    {
      g_assert_true (WS_FIBER_AWAIT (cx, ws_channel_poll_receive (a->chan, cx, &item, &error)));
      g_assert_no_error (error);
      sum += GPOINTER_TO_UINT (item);
    }

  g_file_query_info_async (a->file, G_FILE_ATTRIBUTE_STANDARD_TYPE, G_FILE_QUERY_INFO_NONE,
                           G_PRIORITY_DEFAULT, ws_async_op_get_cancellable (op),
                           ws_async_op_callback, ws_async_op_start (op, cx));
  g_assert_true (WS_FIBER_AWAIT (cx, ws_async_op_poll (op, cx)));
  info = g_file_query_info_finish (a->file, ws_async_op_get_result (op), &error);
  g_assert_no_error (error);
  g_assert_cmpint (g_file_info_get_file_type (info), ==, G_FILE_TYPE_DIRECTORY);

  ws_context_return_uint64 (cx, sum);
}

static void
test_awaits (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  Awaits a = { ws_oneshot_new (NULL), ws_channel_new (1, NULL), g_file_new_for_path ("/") };
  WsJoinHandle *h = ws_runtime_spawn_fiber_full (rt, 0, await_all, &a, NULL);
  guint64 v = 0;

  g_assert_true (ws_oneshot_send (a.shot, GUINT_TO_POINTER (1)));
  for (guint i = 0; i < 3; i++)
    {
      /* A channel of one slot: the sends wait for the fiber to take. */
      while (!ws_channel_try_send (a.chan, GUINT_TO_POINTER (10), NULL))
        g_usleep (100);
    }
  g_assert_true (ws_join_handle_wait (h, NULL));
  g_assert_true (ws_join_handle_finish_uint64 (h, &v, NULL));
  g_assert_cmpuint (v, ==, 31);

  ws_oneshot_unref (a.shot);
  ws_channel_unref (a.chan);
  g_object_unref (a.file);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ---- fork-join ---------------------------------------------------------- */

static guint64
fib_serial (guint n)
{
  return n < 2 ? n : fib_serial (n - 1) + fib_serial (n - 2);
}

static void
fib_fiber (WsContext *cx,
           gpointer   user_data)
{
  guint n = GPOINTER_TO_UINT (user_data);
  g_autoptr(WsJoinHandle) a = NULL;
  g_autoptr(WsJoinHandle) b = NULL;
  guint64 x = 0, y = 0;

  if (n < 8)
    {
      ws_context_return_uint64 (cx, fib_serial (n));
      return;
    }
  a = ws_context_spawn_fiber (cx, fib_fiber, GUINT_TO_POINTER (n - 1), NULL);
  b = ws_context_spawn_fiber (cx, fib_fiber, GUINT_TO_POINTER (n - 2), NULL);
  if (!WS_FIBER_AWAIT (cx, ws_join_handle_poll (a, cx))
      || !WS_FIBER_AWAIT (cx, ws_join_handle_poll (b, cx)))
    return;
  g_assert_true (ws_join_handle_finish_uint64 (g_steal_pointer (&a), &x, NULL));
  g_assert_true (ws_join_handle_finish_uint64 (g_steal_pointer (&b), &y, NULL));
  ws_context_return_uint64 (cx, x + y);
}

/* The root is a poll task: a task spawns fibers as well as a fiber does. */
typedef struct
{
  WsJoinHandle *root;
} ForkRoot;

static WsPoll
fork_root_poll (WsContext *cx,
                gpointer   user_data)
{
  ForkRoot *r = user_data;
  guint64 v = 0;

  if (r->root == NULL)
    r->root = ws_context_spawn_fiber (cx, fib_fiber, GUINT_TO_POINTER (18), NULL);
  if (ws_join_handle_poll (r->root, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  g_assert_true (ws_join_handle_finish_uint64 (g_steal_pointer (&r->root), &v, NULL));
  ws_context_return_uint64 (cx, v);
  return WS_POLL_READY;
}

static void
test_fork_join (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  ForkRoot r = { NULL };
  WsJoinHandle *h = ws_runtime_spawn_joinable (rt, fork_root_poll, &r, NULL);
  guint64 v = 0;

  g_assert_true (ws_join_handle_wait (h, NULL));
  g_assert_true (ws_join_handle_finish_uint64 (h, &v, NULL));
  g_assert_cmpuint (v, ==, 2584);          /* fib (18) */
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static void
group_done_cb (GObject      *object,
               GAsyncResult *result,
               gpointer      user_data)
{
  gboolean *done = user_data;

  g_assert_true (ws_task_group_wait_all_finish (WS_TASK_GROUP (object), result, NULL));
  *done = TRUE;
}

/* ---- limiters and groups ------------------------------------------------ */

typedef struct
{
  WsLimiter   *limiter;
  _Atomic gint inside;
  _Atomic gint most_inside;
  _Atomic gint done;
} Limited;

/* Holds one of the limiter's permits across a wait: the limiter works on
 * a fiber as on any task, and its waiter is freed by a g_autoptr. */
static void
limited_fiber (WsContext *cx,
               gpointer   user_data)
{
  Limited *l = user_data;
  g_autoptr(WsLimiterWaiter) waiter = NULL;
  g_autoptr(WsSleep) nap = ws_sleep_new (500);
  gint now, most;

  if (!WS_FIBER_AWAIT (cx, ws_limiter_acquire_poll (l->limiter, cx, &waiter)))
    return;
  now = atomic_fetch_add (&l->inside, 1) + 1;
  most = atomic_load (&l->most_inside);
  while (now > most && !atomic_compare_exchange_weak (&l->most_inside, &most, now))
    ;
  g_assert_true (WS_FIBER_AWAIT (cx, ws_sleep_poll (nap, cx)));
  atomic_fetch_sub (&l->inside, 1);
  ws_limiter_release (l->limiter);
  atomic_fetch_add (&l->done, 1);
}

/* Fibers in a task group, at most two at once through a limiter; the
 * group's wait sees them all end. */
static void
test_limiter_and_group (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsTaskGroup) group = ws_task_group_new ();
  g_autoptr(GMainContext) ctx = g_main_context_new ();
  Limited l = { ws_limiter_new (2) };
  gboolean all_done = FALSE;
  const guint n = 16;

  g_main_context_push_thread_default (ctx);
  for (guint i = 0; i < n; i++)
    {
      g_autoptr(WsTask) t = ws_runtime_spawn_fiber (rt, limited_fiber, &l, NULL);

      ws_task_group_add (group, t);
    }
  ws_task_group_wait_all_async (group, NULL, group_done_cb, &all_done);
  ws_test_iterate_until (ctx, all_done);
  g_assert_cmpint (atomic_load (&l.done), ==, n);
  g_assert_cmpint (atomic_load (&l.most_inside), >=, 1);
  g_assert_cmpint (atomic_load (&l.most_inside), <=, 2);
  g_assert_cmpuint (ws_limiter_get_available (l.limiter), ==, 2);
  ws_limiter_unref (l.limiter);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_main_context_pop_thread_default (ctx);
}

/* ---- cancellation and shutdown ----------------------------------------- */

typedef struct
{
  WsOneshot       *shot;             /* never sent */
  _Atomic gint     waiting;          /* the fiber got to its await */
  _Atomic gint     await_false;      /* the await returned FALSE */
  _Atomic gint     later_false;      /* so did a later suspend, at once */
  _Atomic gint     returned;         /* the function got to its end */
} Waiter;

static void
wait_forever (WsContext *cx,
              gpointer   user_data)
{
  Waiter *w = user_data;
  g_autoptr(Guard) guard = guard_new ();
  g_autoptr(GError) error = NULL;
  gpointer item = NULL;
  gboolean ok;

  atomic_fetch_add (&w->waiting, 1);
  ok = WS_FIBER_AWAIT (cx, ws_oneshot_poll (w->shot, cx, &item, &error));
  if (!ok)
    {
      atomic_fetch_add (&w->await_false, 1);
      if (!ws_fiber_suspend (cx) && !ws_fiber_yield (cx))
        atomic_fetch_add (&w->later_false, 1);
      /* Work after the cancellation still runs, and may set a result
       * (which is dropped: the task ends as cancelled). */
      ws_context_return_uint64 (cx, 7);
    }
  atomic_fetch_add (&w->returned, 1);
}

static void
test_cancel (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  Waiter w = { ws_oneshot_new (NULL) };
  g_autoptr(WsTask) t = NULL;
  g_autoptr(GError) error = NULL;

  atomic_store (&n_guards_freed, 0);
  ws_test_reset_counters ();
  t = ws_runtime_spawn_fiber (rt, wait_forever, &w, ws_test_count_destroy);
  ws_test_wait_until (atomic_load (&w.waiting) == 1);
  ws_task_cancel (t);
  g_assert_false (ws_task_wait (t, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);

  /* Its frames unwound before its destroy notify, which ran before the
   * task was seen ended. */
  g_assert_cmpint (atomic_load (&w.await_false), ==, 1);
  g_assert_cmpint (atomic_load (&w.later_false), ==, 1);
  g_assert_cmpint (atomic_load (&w.returned), ==, 1);
  g_assert_cmpint (atomic_load (&n_guards_freed), ==, 1);
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 1);

  ws_oneshot_unref (w.shot);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Shutdown resumes every waiting fiber with FALSE: each unwinds (its
 * g_autoptr runs) before ws_runtime_shutdown () returns. Some fibers
 * never started (spawned while the workers are stuck): their destroy
 * notify runs and they never run at all. */
static void
test_shutdown (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  Waiter w = { ws_oneshot_new (NULL) };
  GPtrArray *tasks = g_ptr_array_new_with_free_func (g_object_unref);
  const guint n = 64;

  atomic_store (&n_guards_freed, 0);
  ws_test_reset_counters ();
  for (guint i = 0; i < n; i++)
    g_ptr_array_add (tasks, ws_runtime_spawn_fiber (rt, wait_forever, &w,
                                                    ws_test_count_destroy));
  ws_test_wait_until (atomic_load (&w.waiting) == (gint) n);
  g_assert_true (ws_runtime_shutdown (rt, -1));

  g_assert_cmpint (atomic_load (&w.returned), ==, n);
  g_assert_cmpint (atomic_load (&w.await_false), ==, n);
  g_assert_cmpint (atomic_load (&n_guards_freed), ==, n);
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, n);
  for (guint i = 0; i < n; i++)
    {
      g_autoptr(GError) error = NULL;

      g_assert_false (ws_task_wait (tasks->pdata[i], NULL, &error));
      g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
    }

  /* A fiber spawned after the shutdown is refused: it never runs. */
  ws_test_reset_counters ();
  g_ptr_array_add (tasks, ws_runtime_spawn_fiber (rt, wait_forever, &w,
                                                  ws_test_count_destroy));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 1);
  g_assert_cmpint (atomic_load (&w.waiting), ==, n);

  g_ptr_array_unref (tasks);
  ws_oneshot_unref (w.shot);
}

/* ---- migration ---------------------------------------------------------- */

typedef struct
{
  _Atomic gint resumed;              /* the fiber is past its yield */
  _Atomic gint migrated;             /* it found itself on another thread */
  _Atomic gint hogs;
  guint        rounds;
} Migration;

/* Read through a call the compiler cannot see into: the thread now, not
 * a value cached from before the suspend (the rule in the C guide). */
static G_GNUC_NO_INLINE GThread *
current_thread (void)
{
  return g_thread_self ();
}

/* noinline alone is not enough: GCC infers that a function which only
 * returns &errno is const, and reuses its result across the suspend. The
 * volatile asm makes it opaque. */
static G_GNUC_NO_INLINE int *
errno_address (void)
{
  __asm__ __volatile__ ("" ::: "memory");
  return &errno;
}

/* Keeps its worker busy until the fiber went on elsewhere, or was
 * resumed here after all. */
static WsPoll
hog_poll (WsContext *cx,
          gpointer   user_data)
{
  Migration *m = user_data;

  while (!atomic_load (&m->resumed))
    g_thread_yield ();
  atomic_fetch_sub (&m->hogs, 1);
  return WS_POLL_READY;
}

static void
migrating_fiber (WsContext *cx,
                 gpointer   user_data)
{
  Migration *m = user_data;

  while (!atomic_load (&m->migrated))
    {
      GThread *before = current_thread ();
      int *errno_before = errno_address ();
      g_autoptr(WsJoinHandle) hog = NULL;

      m->rounds++;
      atomic_store (&m->resumed, 0);
      atomic_fetch_add (&m->hogs, 1);
      /* The hog takes this worker's LIFO slot and this fiber goes to the
       * back of its queue: another worker steals the fiber or the hog. */
      hog = ws_context_spawn (cx, hog_poll, m, NULL);
      g_assert_true (ws_fiber_yield (cx));
      atomic_store (&m->resumed, 1);
      if (current_thread () != before)
        {
          /* On another thread: errno is that thread's, and wsrt's own
           * thread-local state is too (a spawn and an await from here go
           * through the new worker). */
          g_assert_true (errno_address () != errno_before);
          errno = 0;
          atomic_store (&m->migrated, 1);
        }
      g_assert_true (WS_FIBER_AWAIT (cx, ws_join_handle_poll (hog, cx)));
    }

  {
    g_autoptr(WsJoinHandle) a = ws_context_spawn_fiber (cx, fib_fiber, GUINT_TO_POINTER (12),
                                                        NULL);
    guint64 v = 0;

    g_assert_true (WS_FIBER_AWAIT (cx, ws_join_handle_poll (a, cx)));
    g_assert_true (ws_join_handle_finish_uint64 (g_steal_pointer (&a), &v, NULL));
    g_assert_cmpuint (v, ==, 144);
  }
}

static void
test_migration (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  Migration m = { 0 };
  g_autoptr(WsTask) t = ws_runtime_spawn_fiber (rt, migrating_fiber, &m, NULL);

  /* The watchdog fails a fiber that never moves. */
  g_assert_true (ws_task_wait (t, NULL, NULL));
  g_assert_cmpint (atomic_load (&m.migrated), ==, 1);
  g_test_message ("the fiber moved after %u rounds", m.rounds);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ---- stacks ------------------------------------------------------------- */

static G_GNUC_NO_INLINE guint
recurse (guint depth)
{
  volatile char frame[128];

  frame[0] = (char) depth;
  if (depth == 0)
    return frame[0];
  return recurse (depth - 1) + frame[0] % 2;
}

static void
deep_fiber (WsContext *cx,
            gpointer   user_data)
{
  guint depth = GPOINTER_TO_UINT (user_data);
  guint r;

  /* Half before the suspend, then all of it after. */
  r = recurse (depth / 2);
  if (!ws_fiber_yield (cx))
    return;
  r += recurse (depth);
  ws_context_return_uint64 (cx, r);
}

/* 500 frames of at least 128 bytes, about 100 KiB in an optimised build,
 * twice that under ASan: what libdex's 128 KiB was raised for (GTK and
 * Pango call depths) fits the 256 KiB default. */
static void
test_deep_recursion (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(WsTask) t = ws_runtime_spawn_fiber (rt, deep_fiber, GUINT_TO_POINTER (500), NULL);

  g_assert_true (ws_task_wait (t, NULL, NULL));
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

typedef struct
{
  WsOneshot   *shot;
  _Atomic gint *waiting;
} ManyArgs;

static void
many_fiber (WsContext *cx,
            gpointer   user_data)
{
  ManyArgs *a = user_data;
  g_autoptr(GError) error = NULL;
  gpointer item = NULL;

  atomic_fetch_add (a->waiting, 1);
  if (!WS_FIBER_AWAIT (cx, ws_oneshot_poll (a->shot, cx, &item, &error)))
    return;
  ws_context_return_uint64 (cx, GPOINTER_TO_UINT (item));
}

static void
many_args_free (gpointer data)
{
  ManyArgs *a = data;

  ws_oneshot_unref (a->shot);
  g_free (a);
}

/* 10,000 fibers waiting at once, each on its own stack; all complete.
 * Under TSan each fiber also costs TSan's state of a thread (about
 * 1.3 MB, __tsan_create_fiber), so that build runs 256 of them. */
#ifdef __SANITIZE_THREAD__
# define N_MANY_PENDING 256
#else
# define N_MANY_PENDING 10000
#endif

static void
test_many_pending (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  const guint n = N_MANY_PENDING;
  WsJoinHandle **h = g_new0 (WsJoinHandle *, n);
  WsOneshot **shots = g_new0 (WsOneshot *, n);
  _Atomic gint waiting = 0;
  guint64 sum = 0;

  for (guint i = 0; i < n; i++)
    {
      ManyArgs *a = g_new0 (ManyArgs, 1);

      a->shot = shots[i] = ws_oneshot_new (NULL);
      ws_oneshot_ref (a->shot);
      a->waiting = &waiting;
      h[i] = ws_runtime_spawn_fiber_full (rt, 0, many_fiber, a, many_args_free);
    }
  ws_test_wait_until (atomic_load (&waiting) == (gint) n);
  for (guint i = 0; i < n; i++)
    {
      g_assert_true (ws_oneshot_send (shots[i], GUINT_TO_POINTER (1)));
      ws_oneshot_unref (shots[i]);
    }
  for (guint i = 0; i < n; i++)
    {
      guint64 v = 0;

      g_assert_true (ws_join_handle_wait (h[i], NULL));
      g_assert_true (ws_join_handle_finish_uint64 (h[i], &v, NULL));
      sum += v;
    }
  g_assert_cmpuint (sum, ==, n);
  g_test_message ("%u fibers waited at once", n);
  g_free (h);
  g_free (shots);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* One worker, fibers one after the other: the worker's pool gives the
 * same stack back each time, so the whole run maps at most one stack
 * (none if a stack of that size waits in the depot). */
static void
test_stack_reuse (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  guint64 before = ws_fiber_stack_get_n_mapped ();

  for (guint i = 0; i < 100; i++)
    {
      WsJoinHandle *h = ws_runtime_spawn_fiber_full (rt, 64 * 1024, return_pointer, NULL,
                                                     NULL);

      g_assert_true (ws_join_handle_wait (h, NULL));
      g_free (ws_join_handle_finish (h, NULL));
    }
  g_assert_cmpuint (ws_fiber_stack_get_n_mapped () - before, <=, 1);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ---- work-first: an awaited child that has not started runs at once ---- */

typedef struct
{
  gboolean suspended;
  guint64  sum;
  gint     done;
} FirstRun;

static void
child_fiber (WsContext *cx,
             gpointer   data)
{
  ws_context_return_uint64 (cx, GPOINTER_TO_UINT (data));
}

/* A fiber that awaits the fiber and the poll task it just spawned finds
 * each ready at its first poll: they ran first, nested, and the parent
 * never suspended. On one worker, so that no thief takes them. */
static void
first_run_fiber (WsContext *cx,
                 gpointer   data)
{
  FirstRun *r = data;
  WsJoinHandle *a = ws_context_spawn_fiber (cx, child_fiber, GUINT_TO_POINTER (3), NULL);
  WsJoinHandle *b = ws_context_spawn (cx, ws_test_return_uint64, GUINT_TO_POINTER (4), NULL);
  guint64 va = 0, vb = 0;

  while (ws_join_handle_poll (a, cx) == WS_POLL_PENDING)
    {
      r->suspended = TRUE;
      g_assert_true (ws_fiber_suspend (cx));
    }
  while (ws_join_handle_poll (b, cx) == WS_POLL_PENDING)
    {
      r->suspended = TRUE;
      g_assert_true (ws_fiber_suspend (cx));
    }
  g_assert_true (ws_join_handle_finish_uint64 (a, &va, NULL));
  g_assert_true (ws_join_handle_finish_uint64 (b, &vb, NULL));
  r->sum = va + vb;
  g_atomic_int_set (&r->done, 1);
}

static void
test_await_runs_child_first (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  FirstRun r = { FALSE, 0, 0 };

  ws_join_handle_free (ws_runtime_spawn_fiber_full (rt, 0, first_run_fiber, &r, NULL));
  ws_test_wait_until (g_atomic_int_get (&r.done));
  g_assert_false (r.suspended);
  g_assert_cmpuint (r.sum, ==, 7);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* A fiber of the smallest stack awaits a chain of 200 poll tasks, each
 * awaiting the next: a few run nested on the fiber's stack, the rest
 * wait, and the fiber gets the chain's value. */
static void
chain_fiber (WsContext *cx,
             gpointer   data)
{
  WsTestChainLink *root = g_new0 (WsTestChainLink, 1);
  WsJoinHandle *h;
  guint64 v = 0;

  root->depth = 200;
  h = ws_context_spawn (cx, ws_test_chain_link_poll, root, g_free);
  g_assert_true (WS_FIBER_AWAIT (cx, ws_join_handle_poll (h, cx)));
  g_assert_true (ws_join_handle_finish_uint64 (h, &v, NULL));
  ws_context_return_uint64 (cx, v);
}

static void
test_await_chain_small_stack (void)
{
  g_autoptr(WsRuntime) rt = NULL;
  WsJoinHandle *h;

  rt = g_initable_new (WS_TYPE_RUNTIME, NULL, NULL, "n-workers", 2,
                       "fiber-stack-size", 16 * 1024, NULL);
  h = ws_runtime_spawn_fiber_full (rt, 0, chain_fiber, NULL, NULL);
  g_assert_cmpuint (ws_test_join_uint64 (h), ==, 200);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ---- the stacks give their memory back ---------------------------------- */

/* A burst of fibers that go 128 KiB deep and wait at once, then end: once
 * the workers are idle, the deep pages of every stack the runtime keeps
 * are given back (mincore finds them not resident, or the stack is
 * unmapped), and at the runtime's last unref every stack is unmapped. */
#define DEEP_FIBERS 64
#define DEEP_BYTES  (128 * 1024)

typedef struct
{
  WsOneshot *shot;
  guintptr   deep;             /* the lowest byte the fiber touched */
  gint      *n_waiting;
} DeepFiber;

/* Touches @bytes of the stack below the caller's frame; returns the
 * lowest address touched (an address, not a pointer to use). */
static G_GNUC_NO_INLINE guintptr
touch_deep (gsize bytes)
{
  volatile guint8 *area = g_alloca (bytes);
  guintptr lowest = (guintptr) area;

  for (gsize i = 0; i < bytes; i += 512)
    area[i] = (guint8) i;
  return lowest;
}

static void
deep_waiting_fiber (WsContext *cx,
                    gpointer   data)
{
  DeepFiber *d = data;
  gpointer item = NULL;

  d->deep = touch_deep (DEEP_BYTES);
  g_atomic_int_inc (d->n_waiting);
  g_assert_true (WS_FIBER_AWAIT (cx, ws_oneshot_poll (d->shot, cx, &item, NULL)));
}

static void
return_seven_fiber (WsContext *cx,
                    gpointer   data)
{
  ws_context_return_uint64 (cx, 7);
}

/* Whether the page at @address is out of memory: not resident, or not
 * mapped any more. */
static gboolean
page_given_back (guintptr address)
{
  gsize page = (gsize) sysconf (_SC_PAGESIZE);
  gpointer start = (gpointer) (address & ~(guintptr) (page - 1));
  unsigned char vec = 0;

  if (mincore (start, page, &vec) != 0)
    return errno == ENOMEM;
  return (vec & 1) == 0;
}

static gboolean
all_given_back (DeepFiber *d)
{
  for (guint i = 0; i < DEEP_FIBERS; i++)
    if (!page_given_back (d[i].deep))
      return FALSE;
  return TRUE;
}

/* Spawns DEEP_FIBERS deep fibers on @rt and returns once all wait. */
static void
deep_burst_start (WsRuntime     *rt,
                  DeepFiber     *d,
                  WsJoinHandle **h,
                  gint          *n_waiting)
{
  for (guint i = 0; i < DEEP_FIBERS; i++)
    {
      d[i] = (DeepFiber) { ws_oneshot_new (NULL), 0, n_waiting };
      h[i] = ws_runtime_spawn_fiber_full (rt, 0, deep_waiting_fiber, &d[i], NULL);
    }
  ws_test_wait_until (g_atomic_int_get (n_waiting) == DEEP_FIBERS);
}

/* Lets the fibers of deep_burst_start () end, and joins them. */
static void
deep_burst_end (DeepFiber     *d,
                WsJoinHandle **h)
{
  for (guint i = 0; i < DEEP_FIBERS; i++)
    ws_oneshot_send (d[i].shot, NULL);
  for (guint i = 0; i < DEEP_FIBERS; i++)
    {
      g_assert_true (ws_join_handle_wait (h[i], NULL));
      ws_join_handle_free (h[i]);
      ws_oneshot_unref (d[i].shot);
    }
}

static void
test_stacks_given_back (void)
{
  WsRuntime *rt;
  gint64 mapped_before;
  DeepFiber d[DEEP_FIBERS];
  WsJoinHandle *h[DEEP_FIBERS];
  gint n_waiting = 0;

  /* The runtime of an earlier test may still hold its stacks (a thread
   * that left ws_block_in_place () lets go of its runtime after that
   * runtime's shutdown returned): start once none is mapped. */
  ws_test_wait_until (ws_fiber_stack_get_mapped_bytes () == 0);
  rt = ws_runtime_new (2);
  mapped_before = ws_fiber_stack_get_mapped_bytes ();

  deep_burst_start (rt, d, h, &n_waiting);
  /* While they wait, their deep pages are theirs. */
  for (guint i = 0; i < DEEP_FIBERS; i++)
    g_assert_false (page_given_back (d[i].deep));
  g_assert_cmpint (ws_fiber_stack_get_mapped_bytes () - mapped_before, >=,
                   DEEP_FIBERS * (DEEP_BYTES + WS_FIBER_STACK_GUARD_SIZE));

  deep_burst_end (d, h);

  /* The stacks stay mapped for reuse; the idle workers give their deep
   * pages back, once parked for a while. */
  ws_test_wait_until (all_given_back (d));
  g_assert_cmpint (ws_fiber_stack_get_mapped_bytes (), >, mapped_before);

  /* A worker that trimmed inside its park still answers a wake: a new
   * fiber and a poll task run (a hang is the watchdog's). */
  for (guint i = 0; i < 2; i++)
    {
      WsJoinHandle *again = i == 0
        ? ws_runtime_spawn_fiber_full (rt, 0, return_seven_fiber, NULL, NULL)
        : ws_runtime_spawn_joinable (rt, ws_test_return_uint64, GUINT_TO_POINTER (7), NULL);
      guint64 v = 0;

      g_assert_true (ws_join_handle_wait (again, NULL));
      g_assert_true (ws_join_handle_finish_uint64 (again, &v, NULL));
      g_assert_cmpuint (v, ==, 7);
    }

  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_object_unref (rt);
  /* The runtime's pool went with it, and the workers' caches before. */
  g_assert_cmpint (ws_fiber_stack_get_mapped_bytes (), ==, mapped_before);
}

/* The same burst on one worker, which is then woken every 5 ms, more
 * often than the trim's delay: it still gives the deep pages back (its
 * deadline is kept across parks), while it keeps being woken. */
static void
test_stacks_given_back_while_woken (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  DeepFiber d[DEEP_FIBERS];
  WsJoinHandle *h[DEEP_FIBERS];
  gint n_waiting = 0;
  guint n_woken = 0;

  deep_burst_start (rt, d, h, &n_waiting);
  deep_burst_end (d, h);

  /* Wake the worker with a task every 5 ms until the pages are back (a
   * worker that restarted its delay at every park would never trim: the
   * watchdog's). */
  while (!all_given_back (d))
    {
      WsJoinHandle *tick = ws_runtime_spawn_joinable (rt, ws_test_return_uint64,
                                                      GUINT_TO_POINTER (1), NULL);

      g_assert_cmpuint (ws_test_join_uint64 (tick), ==, 1);
      n_woken++;
      g_usleep (5000);
    }
  g_test_message ("given back after %u wakes", n_woken);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* A poll task that calls ws_block_in_place and notes its result. */
typedef struct
{
  gboolean  ok;
  GError   *error;
} InPlaceAfter;

static void
nothing (gpointer data)
{
}

static WsPoll
block_in_place_after (WsContext *cx,
                      gpointer   data)
{
  InPlaceAfter *p = data;

  p->ok = ws_block_in_place (nothing, NULL, &p->error);
  return WS_POLL_READY;
}
/* ---- a suspend inside a GLib dispatch the fiber runs -------------------- */

/* A fiber iterates a GMainContext of its own (as a library's synchronous
 * mode does) and awaits inside a callback of that context: GLib's
 * per-thread dispatch record would stay set on the worker while the
 * fiber waits, and the fiber could resume on another thread in the
 * middle of GLib's dispatch. The await is refused with a critical and
 * returns FALSE, the fiber carries on (the callback returns, the
 * iteration ends), and a task polled after it on the same worker is
 * outside any dispatch: its ws_block_in_place is taken. One worker, so
 * that the task runs on the fiber's worker, right after the fiber's
 * poll. */
typedef struct
{
  WsContext  *cx;
  WsOneshot  *shot;
  gint        depth_in_callback;
  gint        entered;
  gboolean    await_ok;
  gint        done;
} DispatchAwait;

static gboolean
await_in_callback (gpointer data)
{
  DispatchAwait *d = data;
  gpointer item = NULL;

  d->depth_in_callback = g_main_depth ();
  g_atomic_int_set (&d->entered, 1);
  d->await_ok = WS_FIBER_AWAIT (d->cx, ws_oneshot_poll (d->shot, d->cx, &item, NULL));
  return G_SOURCE_REMOVE;
}

static void
dispatching_fiber (WsContext *cx,
                   gpointer   data)
{
  DispatchAwait *d = data;
  GMainContext *own = g_main_context_new ();
  GSource *idle = g_idle_source_new ();

  d->cx = cx;
  g_source_set_callback (idle, await_in_callback, d, NULL);
  g_source_attach (idle, own);
  g_source_unref (idle);
  while (!g_atomic_int_get (&d->entered))
    g_main_context_iteration (own, TRUE);
  g_main_context_unref (own);
  /* Outside the dispatch, an await is a suspend as any other. */
  g_assert_true (ws_fiber_yield (cx));
  g_atomic_int_set (&d->done, 1);
}

static void
test_suspend_in_dispatch (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  DispatchAwait d = { NULL, ws_oneshot_new (NULL), 0, 0, TRUE, 0 };
  InPlaceAfter p = { FALSE, NULL };
  WsJoinHandle *fiber;
  WsJoinHandle *after;

  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL,
                         "*inside a main-context callback that the fiber itself dispatches*");
  fiber = ws_runtime_spawn_fiber_full (rt, 0, dispatching_fiber, &d, NULL);
  ws_test_wait_until (g_atomic_int_get (&d.entered));

  /* Polled by the one worker after the fiber's poll returned. */
  after = ws_runtime_spawn_joinable (rt, block_in_place_after, &p, NULL);
  g_assert_true (ws_join_handle_wait (after, NULL));
  ws_join_handle_free (after);
  g_assert_no_error (p.error);
  g_assert_true (p.ok);

  /* Wakes the fiber if its await was taken (the old behaviour). */
  ws_oneshot_send (d.shot, NULL);
  g_assert_true (ws_join_handle_wait (fiber, NULL));
  ws_join_handle_free (fiber);
  g_assert_true (g_atomic_int_get (&d.done));
  g_assert_cmpint (d.depth_in_callback, ==, 1);
  g_assert_false (d.await_ok);
  g_test_assert_expected_messages ();

  ws_oneshot_unref (d.shot);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ---- stack overflow ----------------------------------------------------- */

/* A fiber that overflows its stack hits the guard page, and the process
 * dies of SIGSEGV, as a thread's overflow kills it. Before it dies, wsrt's
 * handler (ws-fiber-overflow.c), on an alternate signal stack, names the
 * fiber (its task and its function, which the child prints first) and the
 * stack size. The child's runtime sets fiber-stack-size to 32 KiB and its
 * fiber recurses as deep-recursion's does, which fits the default stack:
 * the property is what makes it overflow. Under ASan, whose own handler
 * takes SIGSEGV and wsrt installs none, ASan reports a stack overflow and
 * exits with an error; under TSan the message comes first, then TSan's
 * report. Run in a child of this program (WS_TEST_FIBER_OVERFLOW). */
static void
run_child (const char  *mode,
           char       **out,
           char       **err,
           gint        *status)
{
  g_autofree char *prog = g_file_read_link ("/proc/self/exe", NULL);
  const char *argv[] = { prog, NULL };
  g_auto(GStrv) envp = g_environ_setenv (g_get_environ (), "WS_TEST_FIBER_OVERFLOW", mode, TRUE);
  g_autoptr(GError) error = NULL;

  g_assert_nonnull (prog);
  g_assert_true (g_spawn_sync (NULL, (char **) argv, envp, G_SPAWN_DEFAULT, NULL, NULL,
                               out, err, status, &error));
  g_assert_no_error (error);
  g_test_message ("child %s: status %d, stdout: %s, stderr: %s", mode, *status, *out, *err);
}

static void
test_stack_overflow (void)
{
  g_autofree char *out = NULL;
  g_autofree char *err = NULL;
  gint status = 0;

  run_child ("plain", &out, &err, &status);
#ifdef __SANITIZE_ADDRESS__
  /* An error exit, or SIGABRT with ASAN_OPTIONS=abort_on_error=1. */
  g_assert_false (WIFEXITED (status) && WEXITSTATUS (status) == 0);
  g_assert_nonnull (strstr (err, "ERROR: AddressSanitizer: stack-overflow"));
#else
  {
    g_auto(GStrv) names = g_strsplit (g_strstrip (out), " ", 2);
    g_autofree char *task = NULL;
    g_autofree char *func = NULL;

    /* The child printed "TASK FUNC" before it waited. */
    g_assert_cmpuint (g_strv_length (names), ==, 2);
    task = g_strdup_printf ("task %s", names[0]);
    func = g_strdup_printf ("function %s", names[1]);
#ifdef __SANITIZE_THREAD__
    /* TSan's own SIGSEGV handler, which runs when wsrt's puts the
     * previous action back, reports the overflow and exits. */
    g_assert_false (WIFEXITED (status) && WEXITSTATUS (status) == 0);
    g_assert_nonnull (strstr (err, "ThreadSanitizer: stack-overflow"));
#else
    g_assert_true (WIFSIGNALED (status));
    g_assert_cmpint (WTERMSIG (status), ==, SIGSEGV);
#endif
    g_assert_nonnull (strstr (err, "wsrt: a fiber overflowed its stack"));
    g_assert_nonnull (strstr (err, task));
    g_assert_nonnull (strstr (err, func));
    g_assert_nonnull (strstr (err, "its stack of 32768 bytes"));
  }
#endif
}

static void
noop_fiber (WsContext *cx,
            gpointer   user_data)
{
}

/* max-fiber-stacks caps the stacks a runtime has mapped (ws-fiber-stack.c,
 * "The cap"): with one worker, three waiting fibers hold all three; the
 * fiber started past them ends at its first poll with an error that names
 * the property and its value, its function not run; once one of the
 * others returned, the next fiber reuses its stack. By default the cap is a quarter of vm.max_map_count, which the property
 * reads back. */
static void
test_max_fiber_stacks (void)
{
  g_autoptr(WsRuntime) rt = NULL;
  g_autoptr(WsRuntime) dflt = ws_runtime_new (1);
  g_autoptr(GError) error = NULL;
  g_autofree char *contents = NULL;
  WsOneshot *shots[3];
  WsJoinHandle *h[3];
  WsJoinHandle *refused;
  WsJoinHandle *later;
  _Atomic gint waiting = 0;
  guint64 v = 0;
  guint max = 0;

  rt = g_initable_new (WS_TYPE_RUNTIME, NULL, &error, "n-workers", 1, "max-fiber-stacks", 3,
                       NULL);
  g_assert_no_error (error);
  g_object_get (rt, "max-fiber-stacks", &max, NULL);
  g_assert_cmpuint (max, ==, 3);

  for (guint i = 0; i < 3; i++)
    {
      ManyArgs *a = g_new0 (ManyArgs, 1);

      a->shot = shots[i] = ws_oneshot_new (NULL);
      ws_oneshot_ref (a->shot);
      a->waiting = &waiting;
      h[i] = ws_runtime_spawn_fiber_full (rt, 0, many_fiber, a, many_args_free);
    }
  ws_test_wait_until (atomic_load (&waiting) == 3);

  /* The fourth: refused at its first poll, its function never runs. */
  refused = ws_runtime_spawn_fiber_full (rt, 0, many_fiber, NULL, NULL);
  g_assert_true (ws_join_handle_wait (refused, NULL));
  g_assert_false (ws_join_handle_finish_uint64 (refused, &v, &error));
  g_assert_error (error, WS_ERROR, WS_ERROR_FAILED);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "max-fiber-stacks"));
  g_assert_nonnull (strstr (error->message, " 3 "));
  g_clear_error (&error);

  /* One returns: its stack is no longer in use, and a new fiber starts. */
  g_assert_true (ws_oneshot_send (shots[0], GUINT_TO_POINTER (7)));
  g_assert_true (ws_join_handle_wait (h[0], NULL));
  g_assert_true (ws_join_handle_finish_uint64 (h[0], &v, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (v, ==, 7);
  later = ws_runtime_spawn_fiber_full (rt, 0, noop_fiber, NULL, NULL);
  g_assert_true (ws_join_handle_wait (later, NULL));
  g_assert_null (ws_join_handle_finish (later, &error));
  g_assert_no_error (error);

  for (guint i = 1; i < 3; i++)
    {
      g_assert_true (ws_oneshot_send (shots[i], GUINT_TO_POINTER (1)));
      g_assert_true (ws_join_handle_wait (h[i], NULL));
      ws_join_handle_free (h[i]);
    }
  for (guint i = 0; i < 3; i++)
    ws_oneshot_unref (shots[i]);
  g_assert_true (ws_runtime_shutdown (rt, -1));

  /* The default: a quarter of the kernel's limit on mappings. */
  g_object_get (dflt, "max-fiber-stacks", &max, NULL);
  if (g_file_get_contents ("/proc/sys/vm/max_map_count", &contents, NULL, NULL))
    g_assert_cmpuint (max, ==, g_ascii_strtoull (contents, NULL, 10) / 4);
  else
    g_assert_cmpuint (max, >, 0);
}

/* The application's own SIGSEGV handler, installed before the first
 * fiber (ws-fiber-overflow.c, "The rules"): wsrt's handler, installed at
 * the first resume, passes it every fault that is not a fiber's overflow,
 * and after its message on an overflow the fault goes to it too. It
 * exits with 3 (it runs on the alternate signal stack that wsrt gave the
 * thread, as it asks with SA_ONSTACK). Not under ASan: wsrt installs no
 * handler there. */
static void
test_stack_overflow_chains (void)
{
#ifdef __SANITIZE_ADDRESS__
  g_test_skip ("ASan takes SIGSEGV; wsrt installs no handler under ASan");
#else
  g_autofree char *out = NULL;
  g_autofree char *err = NULL;
  gint status = 0;

  /* A fault outside any fiber: the application's handler, no message. */
  run_child ("app-fault", &out, &err, &status);
  g_assert_true (WIFEXITED (status));
  g_assert_cmpint (WEXITSTATUS (status), ==, 3);
  g_assert_nonnull (strstr (err, "application handler: fault"));
  g_assert_null (strstr (err, "wsrt: a fiber overflowed its stack"));
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);

  /* An overflow: the message, then the application's handler. */
  run_child ("app-overflow", &out, &err, &status);
  g_assert_true (WIFEXITED (status));
  g_assert_cmpint (WEXITSTATUS (status), ==, 3);
  g_assert_nonnull (strstr (err, "wsrt: a fiber overflowed its stack"));
  g_assert_nonnull (strstr (err, "application handler: fault"));
  g_assert_true (strstr (err, "wsrt: a fiber overflowed its stack")
                 < strstr (err, "application handler: fault"));
#endif
}

/* ---- thread jobs (ws_fiber_run_in_thread) ------------------------------ */

static gpointer
job_returns_string (GCancellable  *cancellable,
                    gpointer       user_data,
                    GError       **error)
{
  g_assert_true (G_IS_CANCELLABLE (cancellable));
  g_assert_false (g_cancellable_is_cancelled (cancellable));
  return g_strdup_printf ("%s on %p", (const char *) user_data, (gpointer) g_thread_self ());
}

static gpointer
job_fails (GCancellable  *cancellable,
           gpointer       user_data,
           GError       **error)
{
  g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED, "denied");
  return NULL;
}

/* A job may give both a result and an error: both come back as given. */
static gpointer
job_gives_both (GCancellable  *cancellable,
                gpointer       user_data,
                GError       **error)
{
  g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_PARTIAL_INPUT, "partial");
  return user_data;
}

static void
runs_jobs (WsContext *cx,
           gpointer   user_data)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *s = NULL;
  g_autofree char *expected = NULL;
  int local = 5;
  gpointer p;

  s = ws_fiber_run_in_thread (cx, job_returns_string, "hashed", &error);
  g_assert_no_error (error);
  /* It ran on another thread than the fiber's (a blocking-pool thread). */
  expected = g_strdup_printf ("hashed on %p", (gpointer) g_thread_self ());
  g_assert_true (g_str_has_prefix (s, "hashed on "));
  g_assert_cmpstr (s, !=, expected);

  g_assert_null (ws_fiber_run_in_thread (cx, job_fails, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED);
  g_clear_error (&error);

  p = ws_fiber_run_in_thread (cx, job_gives_both, &local, &error);
  g_assert_true (p == &local);
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_PARTIAL_INPUT);
  g_clear_error (&error);

  /* NULL error: the job's error is dropped, its result kept. */
  g_assert_true (ws_fiber_run_in_thread (cx, job_gives_both, &local, NULL) == &local);
  ws_context_return_uint64 (cx, 9);
}

static void
test_run_in_thread (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  WsJoinHandle *h = ws_runtime_spawn_fiber_full (rt, 0, runs_jobs, NULL, NULL);

  g_assert_cmpuint (ws_test_join_uint64 (h), ==, 9);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* The cancellation does not cut the wait short: the job writes to a
 * variable on the fiber's stack after the cancel, and the call returns
 * only after the job did. */
typedef struct
{
  WsTestGate     gate;           /* the job waits here, cancelled or not */
  GCancellable  *job_cancellable;
  _Atomic gint   job_started;
  _Atomic gint   job_returned;
  _Atomic gint   call_returned;
  _Atomic gint   fiber_returned;
  gint           saw_write;      /* the fiber saw the job's late write */
  gint           later_await;    /* the next await after it: FALSE */
  gint           got_result;
} Uninterruptible;

typedef struct
{
  Uninterruptible *u;
  gint            *on_stack;
} JobArgs;

static gpointer
job_writes_late (GCancellable  *cancellable,
                 gpointer       user_data,
                 GError       **error)
{
  JobArgs *args = user_data;          /* on the fiber's stack */
  Uninterruptible *u = args->u;

  u->job_cancellable = g_object_ref (cancellable);
  atomic_store (&u->job_started, 1);
  ws_test_gate_wait (&u->gate);
  /* After the cancel: the fiber's frame must still be there. */
  *args->on_stack = 77;
  atomic_store (&u->job_returned, 1);
  g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_CANCELLED, "stopped");
  return GUINT_TO_POINTER (3);
}

static void
waits_for_job (WsContext *cx,
               gpointer   user_data)
{
  Uninterruptible *u = user_data;
  g_autoptr(GError) error = NULL;
  g_autoptr(Guard) guard = guard_new ();
  gint on_stack = 0;
  JobArgs args = { u, &on_stack };
  gpointer result;

  result = ws_fiber_run_in_thread (cx, job_writes_late, &args, &error);
  atomic_store (&u->call_returned, 1);
  /* The job had returned, its write is seen, its result and error are
   * as it gave them. */
  if (atomic_load (&u->job_returned) == 1 && on_stack == 77)
    u->saw_write = 1;
  if (GPOINTER_TO_UINT (result) == 3 && g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    u->got_result = 1;
  if (!ws_fiber_yield (cx))
    u->later_await = 1;
  atomic_store (&u->fiber_returned, 1);
}

static void
test_run_in_thread_cancel (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  Uninterruptible u = { 0, };
  g_autoptr(WsTask) t = NULL;
  g_autoptr(WsTask) probe = NULL;
  g_autoptr(GError) error = NULL;

  ws_test_gate_init (&u.gate);
  atomic_store (&n_guards_freed, 0);
  ws_test_reset_counters ();
  t = ws_runtime_spawn_fiber (rt, waits_for_job, &u, ws_test_count_destroy);
  ws_test_wait_until (atomic_load (&u.job_started) == 1);
  ws_test_gate_wait_for_waiters (&u.gate, 1);
  ws_task_cancel (t);

  /* The job sees the cancellation; the call has not returned, the fiber
   * is not unwound and the task has not ended while the job runs. */
  ws_test_wait_until (g_cancellable_is_cancelled (u.job_cancellable));
  /* The one worker took the cancelled fiber before this task (the
   * injection queue is FIFO) and, waiting for the job, handed its queue
   * to another thread (ws_block_in_place): the task runs, and the fiber
   * is still in the call. */
  probe = ws_runtime_spawn (rt, ws_test_ready, NULL, NULL);
  g_assert_true (ws_task_wait (probe, NULL, NULL));
  g_assert_cmpint (atomic_load (&u.call_returned), ==, 0);
  g_assert_cmpint (atomic_load (&u.fiber_returned), ==, 0);
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 0);
  g_assert_false (ws_task_is_finished (t));

  ws_test_gate_open (&u.gate);
  g_assert_false (ws_task_wait (t, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpint (u.saw_write, ==, 1);
  g_assert_cmpint (u.got_result, ==, 1);
  g_assert_cmpint (u.later_await, ==, 1);
  g_assert_cmpint (atomic_load (&u.fiber_returned), ==, 1);
  g_assert_cmpint (atomic_load (&n_guards_freed), ==, 1);
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 1);

  g_object_unref (u.job_cancellable);
  ws_test_gate_clear (&u.gate);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* A fiber cancelled before the call: the job does not run. */
static gpointer
job_must_not_run (GCancellable  *cancellable,
                  gpointer       user_data,
                  GError       **error)
{
  g_assert_not_reached ();
  return NULL;
}

typedef struct
{
  WsOneshot    *shot;
  _Atomic gint  waiting;
  _Atomic gint  refused;             /* the call failed as cancelled */
} AfterCancel;

static void
cancelled_then_runs_job (WsContext *cx,
                         gpointer   user_data)
{
  AfterCancel *a = user_data;
  g_autoptr(GError) error = NULL;
  gpointer item = NULL;

  atomic_store (&a->waiting, 1);
  g_assert_false (WS_FIBER_AWAIT (cx, ws_oneshot_poll (a->shot, cx, &item, NULL)));
  g_assert_null (ws_fiber_run_in_thread (cx, job_must_not_run, NULL, &error));
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    atomic_store (&a->refused, 1);
}

static void
test_run_in_thread_after_cancel (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  AfterCancel a = { ws_oneshot_new (NULL), };
  g_autoptr(WsTask) t = ws_runtime_spawn_fiber (rt, cancelled_then_runs_job, &a, NULL);
  g_autoptr(GError) error = NULL;

  ws_test_wait_until (atomic_load (&a.waiting) == 1);
  ws_task_cancel (t);
  g_assert_false (ws_task_wait (t, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpint (atomic_load (&a.refused), ==, 1);
  ws_oneshot_unref (a.shot);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Waits for the go, then recurses deep. */
static void
overflowing_fiber (WsContext *cx,
                   gpointer   user_data)
{
  WsOneshot *go = user_data;
  g_autoptr(GError) error = NULL;
  gpointer item = NULL;

  if (!WS_FIBER_AWAIT (cx, ws_oneshot_poll (go, cx, &item, &error)))
    return;
  ws_context_return_uint64 (cx, recurse (500));
}

static void
app_segv_handler (int        sig,
                  siginfo_t *info,
                  void      *uctx)
{
  static const char msg[] = "application handler: fault\n";

  (void) !write (STDERR_FILENO, msg, sizeof msg - 1);
  _exit (3);
}

static int
run_overflow_child (const char *mode)
{
  WsRuntime *rt = g_initable_new (WS_TYPE_RUNTIME, NULL, NULL, "n-workers", 1,
                                  "fiber-stack-size", 32 * 1024, NULL);
  WsOneshot *go = ws_oneshot_new (NULL);
  WsJoinHandle *h;

  if (g_str_has_prefix (mode, "app-"))
    {
      struct sigaction action = { .sa_sigaction = app_segv_handler,
                                  .sa_flags = SA_SIGINFO | SA_ONSTACK };

      sigemptyset (&action.sa_mask);
      g_assert_cmpint (sigaction (SIGSEGV, &action, NULL), ==, 0);
    }
  if (g_str_equal (mode, "app-fault"))
    {
      /* A fiber first, so that wsrt's handler is there; then a fault
       * outside any fiber. */
      volatile char *page = mmap (NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

      h = ws_runtime_spawn_fiber_full (rt, 0, noop_fiber, NULL, NULL);
      g_assert_true (ws_join_handle_wait (h, NULL));
      ws_join_handle_free (h);
      page[0] = 1;
      return 0;                      /* not reached */
    }

  /* The handle is the task's address, which the message names; printed
   * before the fiber may overflow. */
  h = ws_runtime_spawn_fiber_full (rt, 0, overflowing_fiber, go, NULL);
  g_print ("%p %p\n", (gpointer) h, (gpointer) overflowing_fiber);
  fflush (stdout);
  ws_oneshot_send (go, NULL);
  ws_join_handle_wait (h, NULL);
  return 0;                          /* not reached */
}

static const WsTestDef tests[] = {
  { "/fiber/results", test_results },
  { "/fiber/awaits", test_awaits },
  { "/fiber/fork-join", test_fork_join },
  { "/fiber/limiter-and-group", test_limiter_and_group },
  { "/fiber/cancel", test_cancel },
  { "/fiber/shutdown", test_shutdown },
  { "/fiber/migration", test_migration },
  { "/fiber/deep-recursion", test_deep_recursion },
  { "/fiber/many-pending", test_many_pending },
  { "/fiber/stack-reuse", test_stack_reuse },
  { "/fiber/stack-overflow", test_stack_overflow },
  { "/fiber/stack-overflow/chains", test_stack_overflow_chains },
  { "/fiber/max-fiber-stacks", test_max_fiber_stacks },
  { "/fiber/await-runs-child-first", test_await_runs_child_first },
  { "/fiber/await-chain-small-stack", test_await_chain_small_stack },
  { "/fiber/run-in-thread", test_run_in_thread },
  { "/fiber/run-in-thread/cancel", test_run_in_thread_cancel },
  { "/fiber/run-in-thread/after-cancel", test_run_in_thread_after_cancel },
  { "/fiber/suspend-in-dispatch", test_suspend_in_dispatch },
  { "/fiber/stacks-given-back", test_stacks_given_back },
  { "/fiber/stacks-given-back-while-woken", test_stacks_given_back_while_woken },
};

int
main (int   argc,
      char *argv[])
{
  if (g_getenv ("WS_TEST_FIBER_OVERFLOW") != NULL)
    return run_overflow_child (g_getenv ("WS_TEST_FIBER_OVERFLOW"));
  return ws_test_run_all (&argc, &argv, tests, G_N_ELEMENTS (tests));
}
