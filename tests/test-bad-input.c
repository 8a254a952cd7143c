/* test-bad-input.c: programmer errors and invalid configuration
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * doc/architecture.md, "Rules: errors": every g_return_if_fail / g_return_val_if_fail of the public
 * API is hit once here (each must log a critical in the Wsrt domain naming
 * the function, and return the documented fallback); invalid configuration
 * is a WS_ERROR_INVALID_CONFIG; a refused call still frees what it was
 * handed. Also: the leak check of ws-test-util.h fails a test that leaks.
 */

#include "config.h"

#include <fcntl.h>

#include "ws-test-fixture.h"
#include "ws-raw-task-private.h"

static void
hook_func (gpointer data)
{
}

static void
blocking_func (gpointer data)
{
}

static void
completion_func (WsJoinHandle *handle,
                 gpointer      data)
{
  g_assert_not_reached ();
}

static void
test_runtime_refusals (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(GMainContext) ctx = g_main_context_new ();
  g_autoptr(WsHandle) handle = ws_runtime_get_handle (rt);
  GError *preset = g_error_new_literal (G_IO_ERROR, G_IO_ERROR_FAILED, "already set");

  ws_test_reset_counters ();
  ws_test_n_refusals = 0;

  WS_TEST_REFUSED (ws_runtime_new, g_assert_null (ws_runtime_new (1025)));
  /* The range, as g_initable_new says it. */
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL,
                         "ws_runtime_new: n_workers must be between 0 (one per CPU) and 1024, "
                         "not 100000");
  g_assert_null (ws_runtime_new (100000));
  g_test_assert_expected_messages ();

  /* Refused spawns free their user data: NULL runtime, then NULL func. */
  WS_TEST_REFUSED (ws_runtime_spawn, g_assert_null (ws_runtime_spawn (NULL, ws_test_ready, NULL, ws_test_count_destroy)));
  WS_TEST_REFUSED (ws_runtime_spawn, g_assert_null (ws_runtime_spawn (rt, NULL, NULL, ws_test_count_destroy)));
  WS_TEST_REFUSED (ws_runtime_spawn_detached, ws_runtime_spawn_detached (NULL, ws_test_ready, NULL, ws_test_count_destroy));
  WS_TEST_REFUSED (ws_runtime_spawn_detached, ws_runtime_spawn_detached (rt, NULL, NULL, ws_test_count_destroy));
  WS_TEST_REFUSED (ws_runtime_spawn_blocking, g_assert_null (ws_runtime_spawn_blocking (NULL, ws_test_ready, NULL, ws_test_count_destroy)));
  WS_TEST_REFUSED (ws_runtime_spawn_blocking, g_assert_null (ws_runtime_spawn_blocking (rt, NULL, NULL, ws_test_count_destroy)));
  WS_TEST_REFUSED (ws_runtime_spawn_local, g_assert_null (ws_runtime_spawn_local (NULL, ctx, ws_test_ready, NULL, ws_test_count_destroy)));
  WS_TEST_REFUSED (ws_runtime_spawn_local, g_assert_null (ws_runtime_spawn_local (rt, ctx, NULL, NULL, ws_test_count_destroy)));
  WS_TEST_REFUSED (ws_runtime_spawn_local_detached, ws_runtime_spawn_local_detached (NULL, ctx, ws_test_ready, NULL, ws_test_count_destroy));
  WS_TEST_REFUSED (ws_runtime_spawn_local_detached, ws_runtime_spawn_local_detached (rt, ctx, NULL, NULL, ws_test_count_destroy));
  WS_TEST_REFUSED (ws_handle_spawn, g_assert_null (ws_handle_spawn (NULL, ws_test_ready, NULL, ws_test_count_destroy)));
  WS_TEST_REFUSED (ws_handle_spawn, g_assert_null (ws_handle_spawn (handle, NULL, NULL, ws_test_count_destroy)));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 12);
  /* NULL runtime, func or callback: refused, the data freed, no callback. */
  WS_TEST_REFUSED (ws_runtime_spawn_with_callback,
           g_assert_false (ws_runtime_spawn_with_callback (NULL, ws_test_ready, NULL, ws_test_count_destroy,
                                                           completion_func, NULL)));
  WS_TEST_REFUSED (ws_runtime_spawn_with_callback,
           g_assert_false (ws_runtime_spawn_with_callback (rt, NULL, NULL, ws_test_count_destroy,
                                                           completion_func, NULL)));
  WS_TEST_REFUSED (ws_runtime_spawn_with_callback,
           g_assert_false (ws_runtime_spawn_with_callback (rt, ws_test_ready, NULL, ws_test_count_destroy,
                                                           NULL, NULL)));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 15);

  /* Refused hooks free their user data too. */
  WS_TEST_REFUSED (ws_runtime_set_on_thread_start, ws_runtime_set_on_thread_start (NULL, hook_func, NULL, ws_test_count_destroy));
  WS_TEST_REFUSED (ws_runtime_set_on_thread_stop, ws_runtime_set_on_thread_stop (NULL, hook_func, NULL, ws_test_count_destroy));
  WS_TEST_REFUSED (ws_runtime_set_before_park, ws_runtime_set_before_park (NULL, hook_func, NULL, ws_test_count_destroy));
  WS_TEST_REFUSED (ws_runtime_set_after_unpark, ws_runtime_set_after_unpark (NULL, hook_func, NULL, ws_test_count_destroy));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 19);

  WS_TEST_REFUSED (ws_runtime_shutdown, g_assert_false (ws_runtime_shutdown (NULL, -1)));
  WS_TEST_REFUSED (ws_runtime_shutdown, g_assert_false (ws_runtime_shutdown (rt, -2)));
  WS_TEST_REFUSED (ws_runtime_get_handle, g_assert_null (ws_runtime_get_handle (NULL)));
  WS_TEST_REFUSED (ws_runtime_get_n_workers, g_assert_cmpuint (ws_runtime_get_n_workers (NULL), ==, 0));
  WS_TEST_REFUSED (ws_runtime_get_metrics, g_assert_null (ws_runtime_get_metrics (NULL)));
  WS_TEST_REFUSED (ws_runtime_dump_tasks, g_assert_null (ws_runtime_dump_tasks (NULL)));
  WS_TEST_REFUSED (ws_block_in_place, g_assert_false (ws_block_in_place (NULL, NULL, NULL)));
  WS_TEST_REFUSED (ws_block_in_place, g_assert_false (ws_block_in_place (blocking_func, NULL, &preset)));
  g_clear_error (&preset);

  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_test_message ("runtime: %u refusals checked", ws_test_n_refusals);
}

static void
test_context_and_waker_refusals (void)
{
  WsContext idle_cx = { NULL, };   /* a context outside any poll */
  GValue v = G_VALUE_INIT;

  ws_test_reset_counters ();
  ws_test_n_refusals = 0;

  /* Refused results are freed: the pointer with its destroy notify, the
   * error (LSan would see it otherwise). */
  WS_TEST_REFUSED (ws_context_return_pointer, ws_context_return_pointer (NULL, &v, ws_test_count_destroy));
  WS_TEST_REFUSED (ws_context_return_pointer, ws_context_return_pointer (&idle_cx, &v, ws_test_count_destroy));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 2);
  g_value_init (&v, G_TYPE_INT);
  WS_TEST_REFUSED (ws_context_return_value, ws_context_return_value (NULL, &v));
  WS_TEST_REFUSED (ws_context_return_value, ws_context_return_value (&idle_cx, &v));
  WS_TEST_REFUSED (ws_context_return_error, ws_context_return_error (NULL, g_error_new_literal (G_IO_ERROR, G_IO_ERROR_FAILED, "x")));
  WS_TEST_REFUSED (ws_context_return_error, ws_context_return_error (&idle_cx, g_error_new_literal (G_IO_ERROR, G_IO_ERROR_FAILED, "x")));
  WS_TEST_REFUSED (ws_context_yield, g_assert_cmpint (ws_context_yield (NULL), ==, WS_POLL_PENDING));
  WS_TEST_REFUSED (ws_context_get_waker, g_assert_null (ws_context_get_waker (NULL)));
  WS_TEST_REFUSED (ws_context_get_waker, g_assert_null (ws_context_get_waker (&idle_cx)));
  WS_TEST_REFUSED (ws_context_set_task_name, ws_context_set_task_name (NULL, "x"));
  WS_TEST_REFUSED (ws_context_set_task_name, ws_context_set_task_name (&idle_cx, "x"));
  WS_TEST_REFUSED (ws_waker_ref, g_assert_null (ws_waker_ref (NULL)));
  WS_TEST_REFUSED (ws_waker_unref, ws_waker_unref (NULL));
  WS_TEST_REFUSED (ws_waker_wake, ws_waker_wake (NULL));
  g_value_unset (&v);
  g_test_message ("context and waker: %u refusals checked", ws_test_n_refusals);
}

static WsPoll
keep_context (WsContext *cx,
              gpointer   data)
{
  *(WsContext **) data = cx;
  return WS_POLL_READY;
}

/* A WsContext used after the poll that received it returned: the
 * critical names the rule and what to keep instead, for every call (here
 * a context outside any poll), and for a context a task really kept: the
 * worker's, which outlives the poll on the worker's stack while the
 * worker runs (nothing else is spawned, so it stays outside a poll). */
static void
test_stale_context (void)
{
  WsContext idle_cx = { NULL, };
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(WsTask) task = NULL;
  g_autoptr(GError) error = NULL;
  WsContext *kept = NULL;
  GValue v = G_VALUE_INIT;

#define EXPECT_STALE(func, call) \
  G_STMT_START { \
    g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, \
                           #func ": *valid only during the call of the poll function " \
                           "that received it*ws_context_get_waker*"); \
    call; \
    g_test_assert_expected_messages (); \
  } G_STMT_END

  g_value_init (&v, G_TYPE_INT);
  EXPECT_STALE (ws_context_yield, g_assert_cmpint (ws_context_yield (&idle_cx), ==, WS_POLL_PENDING));
  EXPECT_STALE (ws_context_get_waker, g_assert_null (ws_context_get_waker (&idle_cx)));
  EXPECT_STALE (ws_context_get_cancellable, g_assert_null (ws_context_get_cancellable (&idle_cx)));
  EXPECT_STALE (ws_context_return_value, ws_context_return_value (&idle_cx, &v));
  EXPECT_STALE (ws_context_return_uint64, ws_context_return_uint64 (&idle_cx, 1));
  EXPECT_STALE (ws_context_return_error,
                ws_context_return_error (&idle_cx, g_error_new_literal (G_IO_ERROR, G_IO_ERROR_FAILED, "x")));
  g_value_unset (&v);

  task = ws_runtime_spawn (rt, keep_context, &kept, NULL);
  g_assert_true (ws_task_wait (task, NULL, &error));
  g_assert_no_error (error);
  g_assert_nonnull (kept);
  EXPECT_STALE (ws_context_yield, g_assert_cmpint (ws_context_yield (kept), ==, WS_POLL_PENDING));
#undef EXPECT_STALE

  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static void
fiber_noop (WsContext *cx,
            gpointer   data)
{
}

static gpointer
thread_job_noop (GCancellable  *cancellable,
                 gpointer       data,
                 GError       **error)
{
  g_assert_not_reached ();
  return NULL;
}

/* A poll function, not a fiber: it may not suspend, nor wait for a
 * thread job. */
static WsPoll
suspend_outside_fiber (WsContext *cx,
                       gpointer   data)
{
  g_assert_false (ws_context_is_fiber (cx));
  /* The critical names the fix, and tells the FALSE from a cancel. */
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL,
                         "ws_fiber_suspend: called outside a fiber*ws_runtime_spawn_fiber*"
                         "not cancelled");
  g_assert_false (WS_FIBER_AWAIT (cx, WS_POLL_PENDING));
  g_test_assert_expected_messages ();
  ws_test_n_refusals++;
  WS_TEST_REFUSED (ws_fiber_suspend, g_assert_false (ws_fiber_suspend (cx)));
  WS_TEST_REFUSED (ws_fiber_yield, g_assert_false (ws_fiber_yield (cx)));
  /* The critical names the fix. */
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL,
                         "ws_fiber_run_in_thread: called outside a fiber*ws_runtime_spawn_blocking*");
  g_assert_null (ws_fiber_run_in_thread (cx, thread_job_noop, NULL, NULL));
  g_test_assert_expected_messages ();
  return WS_POLL_READY;
}

/* A fiber that passes no function to a thread job. */
static void
run_in_thread_without_func (WsContext *cx,
                            gpointer   data)
{
  WS_TEST_REFUSED (ws_fiber_run_in_thread, g_assert_null (ws_fiber_run_in_thread (cx, NULL, NULL, NULL)));
  ws_context_return_uint64 (cx, 1);
}

/* A fiber that lends its context out while it waits. */
static WsContext *lent_cx;
static _Atomic gint lent;

static void
lending_fiber (WsContext *cx,
               gpointer   data)
{
  WsOneshot *shot = data;
  gpointer item = NULL;

  lent_cx = cx;
  atomic_store (&lent, 1);
  g_assert_true (WS_FIBER_AWAIT (cx, ws_oneshot_poll (shot, cx, &item, NULL)));
}

/* The syscall offload (ws_fiber_pread, ...) outside a fiber: a critical
 * naming ws_runtime_spawn_fiber, and -1 or FALSE; bad arguments inside
 * one. */
#define WS_TEST_OFFLOAD_REFUSED(func, call) \
  G_STMT_START { \
    g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, \
                           #func ": called outside a fiber*ws_runtime_spawn_fiber*"); \
    call; \
    g_test_assert_expected_messages (); \
    ws_test_n_refusals++; \
  } G_STMT_END

static void
offload_outside_fiber (WsContext *cx)
{
  char byte = 0;

  WS_TEST_OFFLOAD_REFUSED (ws_fiber_read, g_assert_cmpint (ws_fiber_read (cx, 0, &byte, 1, NULL), ==, -1));
  WS_TEST_OFFLOAD_REFUSED (ws_fiber_pread, g_assert_cmpint (ws_fiber_pread (cx, 0, &byte, 1, 0, NULL), ==, -1));
  WS_TEST_OFFLOAD_REFUSED (ws_fiber_write, g_assert_cmpint (ws_fiber_write (cx, 1, &byte, 1, NULL), ==, -1));
  WS_TEST_OFFLOAD_REFUSED (ws_fiber_pwrite, g_assert_cmpint (ws_fiber_pwrite (cx, 1, &byte, 1, 0, NULL), ==, -1));
  WS_TEST_OFFLOAD_REFUSED (ws_fiber_fsync, g_assert_false (ws_fiber_fsync (cx, 1, NULL)));
  WS_TEST_OFFLOAD_REFUSED (ws_fiber_openat, g_assert_cmpint (ws_fiber_openat (cx, AT_FDCWD, "/", O_RDONLY, 0, NULL), ==, -1));
  WS_TEST_OFFLOAD_REFUSED (ws_fiber_close, g_assert_false (ws_fiber_close (cx, -1, NULL)));
}

static WsPoll
offload_in_poll_function (WsContext *cx,
                          gpointer   data)
{
  offload_outside_fiber (cx);
  return WS_POLL_READY;
}

static void
offload_bad_arguments (WsContext *cx,
                       gpointer   data)
{
  g_autoptr(GError) error = g_error_new_literal (G_IO_ERROR, G_IO_ERROR_FAILED, "set");
  char byte = 0;

  WS_TEST_REFUSED (ws_fiber_read, g_assert_cmpint (ws_fiber_read (cx, 0, NULL, 1, NULL), ==, -1));
  WS_TEST_REFUSED (ws_fiber_read, g_assert_cmpint (ws_fiber_read (cx, 0, &byte, 1, &error), ==, -1));
  WS_TEST_REFUSED (ws_fiber_pread, g_assert_cmpint (ws_fiber_pread (cx, 0, NULL, 1, 0, NULL), ==, -1));
  WS_TEST_REFUSED (ws_fiber_pread, g_assert_cmpint (ws_fiber_pread (cx, 0, &byte, 1, -1, NULL), ==, -1));
  WS_TEST_REFUSED (ws_fiber_write, g_assert_cmpint (ws_fiber_write (cx, 1, NULL, 1, NULL), ==, -1));
  WS_TEST_REFUSED (ws_fiber_pwrite, g_assert_cmpint (ws_fiber_pwrite (cx, 1, NULL, 1, 0, NULL), ==, -1));
  WS_TEST_REFUSED (ws_fiber_pwrite, g_assert_cmpint (ws_fiber_pwrite (cx, 1, &byte, 1, -2, NULL), ==, -1));
  WS_TEST_REFUSED (ws_fiber_fsync, g_assert_false (ws_fiber_fsync (cx, 1, &error)));
  WS_TEST_REFUSED (ws_fiber_openat, g_assert_cmpint (ws_fiber_openat (cx, AT_FDCWD, NULL, O_RDONLY, 0, NULL), ==, -1));
  WS_TEST_REFUSED (ws_fiber_close, g_assert_false (ws_fiber_close (cx, -1, &error)));
}

static void
test_fiber_io_refusals (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  WsContext idle_cx = { NULL, };
  g_autoptr(WsTask) task = NULL;

  ws_test_n_refusals = 0;
  offload_outside_fiber (NULL);
  offload_outside_fiber (&idle_cx);
  task = ws_runtime_spawn (rt, offload_in_poll_function, NULL, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_clear_object (&task);
  task = ws_runtime_spawn_fiber (rt, offload_bad_arguments, NULL, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_cmpuint (ws_test_n_refusals, ==, 31);
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
}

static void
test_fiber_refusals (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  WsContext idle_cx = { NULL, };   /* a context outside any poll */
  g_autoptr(WsTask) task = NULL;

  ws_test_reset_counters ();
  ws_test_n_refusals = 0;

  /* A refused spawn still frees its data. */
  WS_TEST_REFUSED (ws_runtime_spawn_fiber, g_assert_null (ws_runtime_spawn_fiber (NULL, fiber_noop, NULL, ws_test_count_destroy)));
  WS_TEST_REFUSED (ws_runtime_spawn_fiber, g_assert_null (ws_runtime_spawn_fiber (rt, NULL, NULL, ws_test_count_destroy)));
  WS_TEST_REFUSED (ws_runtime_spawn_fiber_full, g_assert_null (ws_runtime_spawn_fiber_full (NULL, 0, fiber_noop, NULL, ws_test_count_destroy)));
  WS_TEST_REFUSED (ws_runtime_spawn_fiber_full, g_assert_null (ws_runtime_spawn_fiber_full (rt, 0, NULL, NULL, ws_test_count_destroy)));
  WS_TEST_REFUSED (ws_runtime_spawn_fiber_full, g_assert_null (ws_runtime_spawn_fiber_full (rt, (gsize) 2 << 30, fiber_noop, NULL, ws_test_count_destroy)));
  WS_TEST_REFUSED (ws_context_spawn_fiber, g_assert_null (ws_context_spawn_fiber (NULL, fiber_noop, NULL, ws_test_count_destroy)));
  WS_TEST_REFUSED (ws_context_spawn_fiber, g_assert_null (ws_context_spawn_fiber (&idle_cx, fiber_noop, NULL, ws_test_count_destroy)));
  WS_TEST_REFUSED (ws_runtime_spawn_local_fiber, g_assert_null (ws_runtime_spawn_local_fiber (NULL, NULL, fiber_noop, NULL, ws_test_count_destroy)));
  WS_TEST_REFUSED (ws_runtime_spawn_local_fiber, g_assert_null (ws_runtime_spawn_local_fiber (rt, NULL, NULL, NULL, ws_test_count_destroy)));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 9);

  /* A thread job outside a fiber: a critical, and NULL. */
  WS_TEST_REFUSED (ws_fiber_run_in_thread, g_assert_null (ws_fiber_run_in_thread (NULL, thread_job_noop, NULL, NULL)));
  WS_TEST_REFUSED (ws_fiber_run_in_thread, g_assert_null (ws_fiber_run_in_thread (&idle_cx, thread_job_noop, NULL, NULL)));
  task = ws_runtime_spawn_fiber (rt, run_in_thread_without_func, NULL, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_clear_object (&task);

  /* Suspending outside a fiber: a critical naming the call, FALSE. */
  WS_TEST_REFUSED (ws_fiber_suspend, g_assert_false (ws_fiber_suspend (NULL)));
  WS_TEST_REFUSED (ws_fiber_suspend, g_assert_false (ws_fiber_suspend (&idle_cx)));
  WS_TEST_REFUSED (ws_fiber_yield, g_assert_false (ws_fiber_yield (NULL)));
  WS_TEST_REFUSED (ws_fiber_yield, g_assert_false (ws_fiber_yield (&idle_cx)));
  WS_TEST_REFUSED (ws_context_is_fiber, g_assert_false (ws_context_is_fiber (NULL)));
  task = ws_runtime_spawn (rt, suspend_outside_fiber, NULL, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_clear_object (&task);

  /* A fiber's context suspended from outside that fiber (here, the main
   * thread, while the fiber waits). */
  {
    WsOneshot *shot = ws_oneshot_new (NULL);

    task = ws_runtime_spawn_fiber (rt, lending_fiber, shot, NULL);
    ws_test_wait_until (atomic_load (&lent) == 1);
    WS_TEST_REFUSED (ws_fiber_suspend, g_assert_false (ws_fiber_suspend (lent_cx)));
    WS_TEST_REFUSED (ws_fiber_run_in_thread, g_assert_null (ws_fiber_run_in_thread (lent_cx, thread_job_noop, NULL, NULL)));
    g_assert_true (ws_oneshot_send (shot, GUINT_TO_POINTER (1)));
    g_assert_true (ws_task_wait (task, NULL, NULL));
    ws_oneshot_unref (shot);
  }
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_test_message ("fiber: %u refusals checked", ws_test_n_refusals);
}

/* Checks the refusals that need a context inside a real poll. */
typedef struct
{
  GValue invalid;   /* zeroed: not a valid GValue */
} InPoll;

static WsPoll
in_poll_func (WsContext *cx,
              gpointer   data)
{
  InPoll *ip = data;

  WS_TEST_REFUSED (ws_context_return_value, ws_context_return_value (cx, &ip->invalid));
  WS_TEST_REFUSED (ws_context_return_error, ws_context_return_error (cx, NULL));
  /* A second result is refused, and freed. */
  ws_context_return_pointer (cx, NULL, NULL);
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL,
                         "ws_context_return_pointer: *already returned*exactly one result*");
  ws_context_return_pointer (cx, ip, ws_test_count_destroy);
  g_test_assert_expected_messages ();
  /* One critical, naming the call; the refused error is freed (the leak
   * check of the ASan build). */
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL,
                         "ws_context_return_error: *already returned*exactly one result*");
  ws_context_return_error (cx, g_error_new_literal (G_IO_ERROR, G_IO_ERROR_FAILED, "late"));
  g_test_assert_expected_messages ();
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL,
                         "ws_context_return_uint64: *already returned*");
  ws_context_return_uint64 (cx, 7);
  g_test_assert_expected_messages ();
  return WS_POLL_READY;
}

static void
test_in_poll_refusals (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(GMainContext) ctx = g_main_context_new ();
  InPoll ip = { G_VALUE_INIT };
  g_autoptr(WsTask) task = NULL;

  ws_test_reset_counters ();
  ws_test_n_refusals = 0;
  /* Polled on this thread, so the expected messages are ours. */
  task = ws_runtime_spawn_local (rt, ctx, in_poll_func, &ip, NULL);
  ws_test_iterate_until (ctx, ws_task_is_finished (task));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 1);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static void
test_task_refusals (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(WsTask) task = ws_runtime_spawn (rt, ws_test_ready, NULL, NULL);
  g_autoptr(WsTask) pending = ws_runtime_spawn (rt, ws_test_pending_forever, NULL, NULL);
  g_autoptr(GTask) other = g_task_new (NULL, NULL, NULL, NULL);
  GError *preset = g_error_new_literal (G_IO_ERROR, G_IO_ERROR_FAILED, "already set");

  ws_test_n_refusals = 0;
  g_assert_true (ws_task_wait (task, NULL, NULL));

  WS_TEST_REFUSED (ws_task_poll, g_assert_cmpint (ws_task_poll (NULL, NULL), ==, WS_POLL_READY));
  WS_TEST_REFUSED (ws_task_poll, g_assert_cmpint (ws_task_poll (task, NULL), ==, WS_POLL_READY));
  WS_TEST_REFUSED (ws_task_cancel, ws_task_cancel (NULL));
  WS_TEST_REFUSED (ws_task_is_finished, g_assert_false (ws_task_is_finished (NULL)));
  WS_TEST_REFUSED (ws_task_set_name, ws_task_set_name (NULL, "x"));
  WS_TEST_REFUSED (ws_task_get_name, g_assert_null (ws_task_get_name (NULL)));
  WS_TEST_REFUSED (ws_join_handle_set_name, ws_join_handle_set_name (NULL, "x"));
  WS_TEST_REFUSED (ws_join_handle_get_name, g_assert_null (ws_join_handle_get_name (NULL)));
  WS_TEST_REFUSED (ws_task_wait, g_assert_false (ws_task_wait (NULL, NULL, NULL)));
  WS_TEST_REFUSED (ws_task_wait, g_assert_false (ws_task_wait (task, (GCancellable *) other, NULL)));
  WS_TEST_REFUSED (ws_task_wait, g_assert_false (ws_task_wait (task, NULL, &preset)));
  WS_TEST_REFUSED (ws_task_wait_async, ws_task_wait_async (NULL, NULL, NULL, NULL));
  WS_TEST_REFUSED (ws_task_wait_async, ws_task_wait_async (task, (GCancellable *) other, NULL, NULL));
  WS_TEST_REFUSED (ws_task_wait_finish, g_assert_false (ws_task_wait_finish (NULL, G_ASYNC_RESULT (other), NULL)));
  WS_TEST_REFUSED (ws_task_wait_finish, g_assert_false (ws_task_wait_finish (task, G_ASYNC_RESULT (other), NULL)));
  /* A task is the result of its own waits only: not of another's, and not
   * before it has ended. */
  WS_TEST_REFUSED (ws_task_wait_finish, g_assert_false (ws_task_wait_finish (task, G_ASYNC_RESULT (pending), NULL)));
  WS_TEST_REFUSED (ws_task_wait_finish, g_assert_false (ws_task_wait_finish (pending, G_ASYNC_RESULT (pending), NULL)));
  WS_TEST_REFUSED (ws_task_get_value, g_assert_null (ws_task_get_value (NULL)));
  WS_TEST_REFUSED (ws_task_propagate_pointer, g_assert_null (ws_task_propagate_pointer (NULL, NULL)));
  WS_TEST_REFUSED (ws_task_propagate_pointer, g_assert_null (ws_task_propagate_pointer (task, &preset)));
  g_clear_error (&preset);

  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_test_message ("task: %u refusals checked", ws_test_n_refusals);
}

static void
test_group_refusals (void)
{
  g_autoptr(WsTaskGroup) group = ws_task_group_new ();
  g_autoptr(GTask) other = g_task_new (NULL, NULL, NULL, NULL);

  ws_test_n_refusals = 0;
  WS_TEST_REFUSED (ws_task_group_add, ws_task_group_add (NULL, NULL));
  WS_TEST_REFUSED (ws_task_group_add, ws_task_group_add (group, NULL));
  WS_TEST_REFUSED (ws_task_group_get_size, g_assert_cmpuint (ws_task_group_get_size (NULL), ==, 0));
  WS_TEST_REFUSED (ws_task_group_get_n_finished, g_assert_cmpuint (ws_task_group_get_n_finished (NULL), ==, 0));
  WS_TEST_REFUSED (ws_task_group_get_task, g_assert_null (ws_task_group_get_task (NULL, 0)));
  WS_TEST_REFUSED (ws_task_group_get_task, g_assert_null (ws_task_group_get_task (group, 0)));
  WS_TEST_REFUSED (ws_task_group_cancel_all, ws_task_group_cancel_all (NULL));
  WS_TEST_REFUSED (ws_task_group_poll_all, g_assert_cmpint (ws_task_group_poll_all (NULL, NULL), ==, WS_POLL_READY));
  WS_TEST_REFUSED (ws_task_group_poll_all, g_assert_cmpint (ws_task_group_poll_all (group, NULL), ==, WS_POLL_READY));
  WS_TEST_REFUSED (ws_task_group_poll_any, g_assert_cmpint (ws_task_group_poll_any (NULL, NULL, NULL), ==, WS_POLL_READY));
  WS_TEST_REFUSED (ws_task_group_poll_any, g_assert_cmpint (ws_task_group_poll_any (group, NULL, NULL), ==, WS_POLL_READY));
  WS_TEST_REFUSED (ws_task_group_wait_all_async, ws_task_group_wait_all_async (NULL, NULL, NULL, NULL));
  WS_TEST_REFUSED (ws_task_group_wait_all_finish, g_assert_false (ws_task_group_wait_all_finish (NULL, G_ASYNC_RESULT (other), NULL)));
  WS_TEST_REFUSED (ws_task_group_wait_all_finish, g_assert_false (ws_task_group_wait_all_finish (group, G_ASYNC_RESULT (other), NULL)));
  WS_TEST_REFUSED (ws_task_group_wait_any_async, ws_task_group_wait_any_async (NULL, NULL, NULL, NULL));
  WS_TEST_REFUSED (ws_task_group_wait_any_finish, g_assert_null (ws_task_group_wait_any_finish (NULL, G_ASYNC_RESULT (other), NULL)));
  WS_TEST_REFUSED (ws_task_group_wait_any_finish, g_assert_null (ws_task_group_wait_any_finish (group, G_ASYNC_RESULT (other), NULL)));
  g_test_message ("task group: %u refusals checked", ws_test_n_refusals);
}

static void
test_awaitable_refusals (void)
{
  g_autoptr(WsChannel) ch = ws_channel_new (1, NULL);
  g_autoptr(WsOneshot) os = ws_oneshot_new (NULL);
  g_autoptr(WsSleep) sl = ws_sleep_new (1000);
  g_autoptr(WsAsyncOp) op = ws_async_op_new ();
  g_autoptr(GTask) other = g_task_new (NULL, NULL, NULL, NULL);
  g_autoptr(GObject) plain = g_object_new (G_TYPE_OBJECT, NULL);   /* not a GAsyncResult */
  gpointer item = NULL;

  ws_test_n_refusals = 0;
  WS_TEST_REFUSED (ws_channel_new, g_assert_null (ws_channel_new (0, NULL)));
  WS_TEST_REFUSED (ws_channel_ref, g_assert_null (ws_channel_ref (NULL)));
  WS_TEST_REFUSED (ws_channel_unref, ws_channel_unref (NULL));
  WS_TEST_REFUSED (ws_channel_poll_send, g_assert_cmpint (ws_channel_poll_send (NULL, NULL, NULL, NULL), ==, WS_POLL_READY));
  WS_TEST_REFUSED (ws_channel_poll_send, g_assert_cmpint (ws_channel_poll_send (ch, NULL, NULL, NULL), ==, WS_POLL_READY));
  WS_TEST_REFUSED (ws_channel_poll_receive, g_assert_cmpint (ws_channel_poll_receive (NULL, NULL, &item, NULL), ==, WS_POLL_READY));
  WS_TEST_REFUSED (ws_channel_poll_receive, g_assert_cmpint (ws_channel_poll_receive (ch, NULL, &item, NULL), ==, WS_POLL_READY));
  WS_TEST_REFUSED (ws_channel_try_send, g_assert_false (ws_channel_try_send (NULL, NULL, NULL)));
  WS_TEST_REFUSED (ws_channel_try_receive, g_assert_false (ws_channel_try_receive (NULL, &item, NULL)));
  WS_TEST_REFUSED (ws_channel_try_receive, g_assert_false (ws_channel_try_receive (ch, NULL, NULL)));
  {
    /* The blocking forms: a cancellable that is not one, an error already
     * set. */
    GCancellable *not_cancellable = (GCancellable *) plain;
    g_autoptr(GError) set = g_error_new_literal (G_IO_ERROR, G_IO_ERROR_FAILED, "set");
    g_autoptr(WsChannel) values = ws_channel_new_for_type (1, G_TYPE_INT);
    g_auto(GValue) v = G_VALUE_INIT;

    g_value_init (&v, G_TYPE_INT);
    WS_TEST_REFUSED (ws_channel_send, g_assert_false (ws_channel_send (NULL, NULL, NULL, NULL)));
    WS_TEST_REFUSED (ws_channel_send, g_assert_false (ws_channel_send (ch, NULL, not_cancellable, NULL)));
    WS_TEST_REFUSED (ws_channel_send, g_assert_false (ws_channel_send (ch, NULL, NULL, &set)));
    WS_TEST_REFUSED (ws_channel_receive, g_assert_null (ws_channel_receive (NULL, NULL, NULL)));
    WS_TEST_REFUSED (ws_channel_receive, g_assert_null (ws_channel_receive (ch, not_cancellable, NULL)));
    WS_TEST_REFUSED (ws_channel_receive, g_assert_null (ws_channel_receive (ch, NULL, &set)));
    WS_TEST_REFUSED (ws_channel_send_value, g_assert_false (ws_channel_send_value (NULL, &v, NULL, NULL)));
    WS_TEST_REFUSED (ws_channel_send_value, g_assert_false (ws_channel_send_value (values, &v, not_cancellable, NULL)));
    WS_TEST_REFUSED (ws_channel_send_value, g_assert_false (ws_channel_send_value (values, &v, NULL, &set)));
    WS_TEST_REFUSED (ws_channel_send_value, g_assert_false (ws_channel_send_value (values, NULL, NULL, NULL)));
    WS_TEST_REFUSED (ws_channel_receive_value, g_assert_null (ws_channel_receive_value (NULL, NULL, NULL)));
    WS_TEST_REFUSED (ws_channel_receive_value, g_assert_null (ws_channel_receive_value (values, not_cancellable, NULL)));
    WS_TEST_REFUSED (ws_channel_receive_value, g_assert_null (ws_channel_receive_value (values, NULL, &set)));
    /* Nothing was sent, and the set error is untouched. */
    g_assert_cmpuint (ws_channel_get_length (ch), ==, 0);
    g_assert_cmpuint (ws_channel_get_length (values), ==, 0);
    g_assert_error (set, G_IO_ERROR, G_IO_ERROR_FAILED);
  }
  WS_TEST_REFUSED (ws_channel_close, ws_channel_close (NULL));
  WS_TEST_REFUSED (ws_channel_is_closed, g_assert_true (ws_channel_is_closed (NULL)));
  WS_TEST_REFUSED (ws_channel_get_length, g_assert_cmpuint (ws_channel_get_length (NULL), ==, 0));
  WS_TEST_REFUSED (ws_channel_get_capacity, g_assert_cmpuint (ws_channel_get_capacity (NULL), ==, 0));

  WS_TEST_REFUSED (ws_oneshot_ref, g_assert_null (ws_oneshot_ref (NULL)));
  WS_TEST_REFUSED (ws_oneshot_unref, ws_oneshot_unref (NULL));
  WS_TEST_REFUSED (ws_oneshot_send, g_assert_false (ws_oneshot_send (NULL, NULL)));
  WS_TEST_REFUSED (ws_oneshot_poll, g_assert_cmpint (ws_oneshot_poll (NULL, NULL, &item, NULL), ==, WS_POLL_READY));
  WS_TEST_REFUSED (ws_oneshot_poll, g_assert_cmpint (ws_oneshot_poll (os, NULL, &item, NULL), ==, WS_POLL_READY));
  WS_TEST_REFUSED (ws_oneshot_close, ws_oneshot_close (NULL));

  WS_TEST_REFUSED (ws_sleep_ref, g_assert_null (ws_sleep_ref (NULL)));
  WS_TEST_REFUSED (ws_sleep_unref, ws_sleep_unref (NULL));
  WS_TEST_REFUSED (ws_sleep_get_deadline, g_assert_cmpint (ws_sleep_get_deadline (NULL), ==, 0));
  WS_TEST_REFUSED (ws_sleep_reset, ws_sleep_reset (NULL, 0));
  WS_TEST_REFUSED (ws_sleep_poll, g_assert_cmpint (ws_sleep_poll (NULL, NULL), ==, WS_POLL_READY));
  WS_TEST_REFUSED (ws_sleep_poll, g_assert_cmpint (ws_sleep_poll (sl, NULL), ==, WS_POLL_READY));
  WS_TEST_REFUSED (ws_sleep_race,
                   g_assert_cmpint (ws_sleep_race (sl, NULL, WS_POLL_PENDING, NULL), ==, WS_POLL_READY));

  WS_TEST_REFUSED (ws_async_op_ref, g_assert_null (ws_async_op_ref (NULL)));
  WS_TEST_REFUSED (ws_async_op_unref, ws_async_op_unref (NULL));
  WS_TEST_REFUSED (ws_async_op_get_cancellable, g_assert_null (ws_async_op_get_cancellable (NULL)));
  WS_TEST_REFUSED (ws_async_op_start, g_assert_null (ws_async_op_start (NULL, NULL)));
  WS_TEST_REFUSED (ws_async_op_start, g_assert_null (ws_async_op_start (op, NULL)));
  WS_TEST_REFUSED (ws_async_op_poll, g_assert_cmpint (ws_async_op_poll (NULL, NULL), ==, WS_POLL_READY));
  WS_TEST_REFUSED (ws_async_op_poll, g_assert_cmpint (ws_async_op_poll (op, NULL), ==, WS_POLL_READY));
  /* The callback without the data ws_async_op_start() returned, or
   * without a result: refused, the operation untouched. */
  WS_TEST_REFUSED (ws_async_op_callback, ws_async_op_callback (NULL, NULL, NULL));
  WS_TEST_REFUSED (ws_async_op_callback, ws_async_op_callback (NULL, G_ASYNC_RESULT (other), NULL));
  WS_TEST_REFUSED (ws_async_op_callback, ws_async_op_callback (NULL, NULL, op));
  WS_TEST_REFUSED (ws_async_op_callback, ws_async_op_callback (NULL, (GAsyncResult *) plain, op));
  g_assert_null (ws_async_op_get_result (op));
  WS_TEST_REFUSED (ws_async_op_get_result, g_assert_null (ws_async_op_get_result (NULL)));
  WS_TEST_REFUSED (ws_async_op_cancel, ws_async_op_cancel (NULL));
  g_test_message ("awaitables: %u refusals checked", ws_test_n_refusals);
}

static void
test_metrics_refusals (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(WsMetrics) m = ws_runtime_get_metrics (rt);
  guint64 (*worker_getters[]) (WsMetrics *, guint) = {
    ws_metrics_get_worker_poll_count,
    ws_metrics_get_worker_steal_count,
    ws_metrics_get_worker_steal_operations,
    ws_metrics_get_worker_park_count,
    ws_metrics_get_worker_unpark_count,
    ws_metrics_get_worker_noop_count,
    ws_metrics_get_worker_local_schedule_count,
    ws_metrics_get_worker_overflow_count,
    ws_metrics_get_worker_forced_yield_count,
    ws_metrics_get_worker_busy_time,
  };

  ws_test_n_refusals = 0;
  WS_TEST_REFUSED (ws_metrics_ref, g_assert_null (ws_metrics_ref (NULL)));
  WS_TEST_REFUSED (ws_metrics_unref, ws_metrics_unref (NULL));
  WS_TEST_REFUSED (ws_metrics_to_string, g_assert_null (ws_metrics_to_string (NULL)));
  WS_TEST_REFUSED (ws_metrics_get_n_workers, g_assert_cmpuint (ws_metrics_get_n_workers (NULL), ==, 0));
  WS_TEST_REFUSED (ws_metrics_get_alive_tasks, g_assert_cmpuint (ws_metrics_get_alive_tasks (NULL), ==, 0));
  WS_TEST_REFUSED (ws_metrics_get_spawned_tasks, g_assert_cmpuint (ws_metrics_get_spawned_tasks (NULL), ==, 0));
  WS_TEST_REFUSED (ws_metrics_get_remote_schedule_count, g_assert_cmpuint (ws_metrics_get_remote_schedule_count (NULL), ==, 0));
  WS_TEST_REFUSED (ws_metrics_get_injection_queue_depth, g_assert_cmpuint (ws_metrics_get_injection_queue_depth (NULL), ==, 0));
  WS_TEST_REFUSED (ws_metrics_get_blocking_threads, g_assert_cmpuint (ws_metrics_get_blocking_threads (NULL), ==, 0));
  WS_TEST_REFUSED (ws_metrics_get_idle_blocking_threads, g_assert_cmpuint (ws_metrics_get_idle_blocking_threads (NULL), ==, 0));
  WS_TEST_REFUSED (ws_metrics_get_blocking_queue_depth, g_assert_cmpuint (ws_metrics_get_blocking_queue_depth (NULL), ==, 0));
  for (guint i = 0; i < G_N_ELEMENTS (worker_getters); i++)
    {
      WS_TEST_REFUSED (ws_metrics_get_worker_, g_assert_cmpuint (worker_getters[i] (NULL, 0), ==, 0));
      WS_TEST_REFUSED (ws_metrics_get_worker_, g_assert_cmpuint (worker_getters[i] (m, 1), ==, 0));
    }
  WS_TEST_REFUSED (ws_metrics_get_worker_local_queue_depth, g_assert_cmpuint (ws_metrics_get_worker_local_queue_depth (NULL, 0), ==, 0));
  WS_TEST_REFUSED (ws_metrics_get_worker_local_queue_depth, g_assert_cmpuint (ws_metrics_get_worker_local_queue_depth (m, 1), ==, 0));
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_test_message ("metrics: %u refusals checked", ws_test_n_refusals);
}

/* A runtime with this thread-name prefix is refused with
 * WS_ERROR_INVALID_CONFIG naming the property. */
static void
assert_prefix_refused (const char *prefix)
{
  g_autoptr(GError) error = NULL;
  WsRuntime *rt = g_initable_new (WS_TYPE_RUNTIME, NULL, &error,
                                  "thread-name-prefix", prefix, NULL);

  g_assert_null (rt);
  g_assert_error (error, WS_ERROR, WS_ERROR_INVALID_CONFIG);
  g_assert_nonnull (strstr (error->message, "thread-name-prefix"));
}

/* Invalid configuration: WS_ERROR_INVALID_CONFIG naming the property and
 * its valid range, out-of-range numbers included (the property
 * specifications take any value of their type, so that g_initable_init()
 * sees it); the ends of each range are accepted. */
static void
test_invalid_configuration (void)
{
  const char *prefixes[] = { "", "sixteen-chars-xx" };
  const struct
  {
    const char *name;
    gboolean    is_int64;
    gint64      value;
    const char *range;
  } out_of_range[] = {
    { "n-workers", FALSE, 100000, "between 0 and 1024" },
    { "n-workers", FALSE, 1025, "between 0 and 1024" },
    { "max-blocking-threads", FALSE, 0, "between 1 and 65536" },
    { "max-blocking-threads", FALSE, 65537, "between 1 and 65536" },
    { "blocking-keep-alive", TRUE, -1, "between 0 and 9223372036854775807" },
    { "global-queue-interval", FALSE, 0, "between 1 and 2147483647" },
    { "event-interval", FALSE, G_MAXUINT, "between 1 and 2147483647" },
    { "budget", FALSE, 0, "between 1 and 2147483647" },
    { "local-slice", TRUE, 0, "between 1 and 1000000" },
    { "local-slice", TRUE, G_USEC_PER_SEC + 1, "between 1 and 1000000" },
    { "fiber-stack-size", FALSE, 16383, "between 16384 and 1073741824" },
    { "fiber-stack-size", FALSE, (1 << 30) + 1, "between 16384 and 1073741824" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (prefixes); i++)
    assert_prefix_refused (prefixes[i]);

  for (guint i = 0; i < G_N_ELEMENTS (out_of_range); i++)
    {
      g_autoptr(GError) error = NULL;
      g_autofree char *value = g_strdup_printf (" %" G_GINT64_FORMAT ";", out_of_range[i].value);
      WsRuntime *rt;

      if (out_of_range[i].is_int64)
        rt = g_initable_new (WS_TYPE_RUNTIME, NULL, &error,
                             out_of_range[i].name, out_of_range[i].value, NULL);
      else
        rt = g_initable_new (WS_TYPE_RUNTIME, NULL, &error,
                             out_of_range[i].name, (guint) out_of_range[i].value, NULL);
      g_assert_null (rt);
      g_assert_error (error, WS_ERROR, WS_ERROR_INVALID_CONFIG);
      g_test_message ("%s", error->message);
      g_assert_true (g_str_has_prefix (error->message, out_of_range[i].name));
      g_assert_nonnull (strstr (error->message, value));
      g_assert_nonnull (strstr (error->message, out_of_range[i].range));
    }

  /* The ends of the ranges are valid (threads start on demand, so the
   * largest pool costs nothing here). */
  {
    g_autoptr(GError) error = NULL;
    g_autoptr(WsRuntime) rt = g_initable_new (WS_TYPE_RUNTIME, NULL, &error,
                                              "n-workers", 1,
                                              "max-blocking-threads", 65536,
                                              "blocking-keep-alive", (gint64) 0,
                                              "global-queue-interval", (guint) G_MAXINT32,
                                              "event-interval", 1,
                                              "budget", (guint) G_MAXINT32,
                                              "local-slice", (gint64) G_USEC_PER_SEC,
                                              "fiber-stack-size", 1 << 30,
                                              NULL);
    guint max_blocking = 0;

    g_assert_no_error (error);
    g_object_get (rt, "max-blocking-threads", &max_blocking, NULL);
    g_assert_cmpuint (max_blocking, ==, 65536);
    g_assert_true (ws_runtime_shutdown (rt, -1));
  }
}

/* A runtime made with g_object_new () alone has no GError to fill: on
 * first use an invalid value is replaced by its default, with a critical
 * that names the property and the range. */
static void
test_invalid_configuration_without_initable (void)
{
  g_autoptr(WsRuntime) rt = g_object_new (WS_TYPE_RUNTIME, "n-workers", 100000, NULL);
  g_autoptr(WsTask) task = NULL;
  guint n_workers = 0;

  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL,
                         "*n-workers is 100000; it must be between 0 and 1024; using 0*");
  task = ws_runtime_spawn (rt, ws_test_ready, NULL, NULL);
  g_test_assert_expected_messages ();
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_object_get (rt, "n-workers", &n_workers, NULL);
  g_assert_cmpuint (n_workers, ==, g_get_num_processors ());
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static void
test_invalid_thread_name_prefix (void)
{
  assert_prefix_refused ("much-too-long-prefix");
}

/* A spawn on no runtime is refused, naming the check, and frees its data. */
static void
test_refused_spawn_frees (void)
{
  ws_test_reset_counters ();
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*WS_IS_RUNTIME*");
  g_assert_null (ws_runtime_spawn (NULL, ws_test_return_index, NULL, ws_test_count_destroy));
  g_test_assert_expected_messages ();
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 1);
}

/* The harness itself: a test that leaks a waker reference fails. */
static WsPoll
leak_waker_func (WsContext *cx,
                 gpointer   data)
{
  /* Deliberately never released. */
  *(WsWaker **) data = ws_context_get_waker (cx);
  return WS_POLL_READY;
}

static void
test_leak_check_subprocess (void)
{
  static WsWaker *leaked;
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(WsTask) task = ws_runtime_spawn (rt, leak_waker_func, &leaked, NULL);

  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static void
test_leak_check_fails_a_leaking_test (void)
{
  if (ws_waker_get_n_live () < 0)
    {
      g_test_skip ("waker leak counter only in debug builds");
      return;
    }
  /* The child's harness gives up waiting after 100 ms. */
  g_setenv ("WS_TEST_LEAK_WAIT_MS", "100", TRUE);
  g_test_trap_subprocess ("/bad-input/leak-check/subprocess", 0, G_TEST_SUBPROCESS_DEFAULT);
  g_unsetenv ("WS_TEST_LEAK_WAIT_MS");
  g_test_trap_assert_failed ();
  g_test_trap_assert_stderr ("*ws_raw_task_get_n_live*");
}

int
main (int   argc,
      char *argv[])
{
  ws_test_init (&argc, &argv);

  ws_test_add_func ("/bad-input/runtime", test_runtime_refusals);
  ws_test_add_func ("/bad-input/context-and-waker", test_context_and_waker_refusals);
  ws_test_add_func ("/bad-input/stale-context", test_stale_context);
  ws_test_add_func ("/bad-input/in-poll", test_in_poll_refusals);
  ws_test_add_func ("/bad-input/fiber", test_fiber_refusals);
  ws_test_add_func ("/bad-input/task", test_task_refusals);
  ws_test_add_func ("/bad-input/task-group", test_group_refusals);
  ws_test_add_func ("/bad-input/awaitables", test_awaitable_refusals);
  ws_test_add_func ("/bad-input/metrics", test_metrics_refusals);
  ws_test_add_func ("/bad-input/fiber-io", test_fiber_io_refusals);
  ws_test_add_func ("/bad-input/invalid-configuration", test_invalid_configuration);
  ws_test_add_func ("/bad-input/invalid-configuration-without-initable",
                    test_invalid_configuration_without_initable);
  ws_test_add_func ("/bad-input/invalid-thread-name-prefix", test_invalid_thread_name_prefix);
  ws_test_add_func ("/bad-input/refused-spawn-frees", test_refused_spawn_frees);
  ws_test_add_func ("/bad-input/leak-check", test_leak_check_fails_a_leaking_test);
  {
    /* Static: the parent skips it, and a skipped case's data is never
     * freed. */
    static WsTestCase leak_case = { "/bad-input/leak-check/subprocess", test_leak_check_subprocess, };

    g_test_add_data_func (leak_case.path, &leak_case, ws_test_run_case);
  }

  return g_test_run ();
}
