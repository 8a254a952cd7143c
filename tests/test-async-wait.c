/* test-async-wait.c: ws_task_wait_async, completion delivery
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The callback runs exactly once, on the thread-default context of the
 * caller, never from inside the call: for a task already finished, one
 * that finishes later, one cancelled, and a wait whose GCancellable is
 * cancelled (the task then ends later without a second call).
 */

#include "config.h"

#include "ws-test-fixture.h"

static void
test_exactly_once (void)
{
  WsTestOnContext f;
  g_autoptr(WsTask) done = NULL;
  g_autoptr(WsTask) pending = NULL;
  g_autoptr(WsTask) cancelled = NULL;
  g_autoptr(WsTask) forever = NULL;
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  WsTestWaitResult r_done = { 0 }, r_pending = { 0 }, r_cancelled = { 0 }, r_wait_cancelled = { 0 };

  ws_test_on_context_init (&f, 2);

  done = ws_runtime_spawn (f.rt, ws_test_ready, NULL, NULL);
  g_assert_true (ws_task_wait (done, NULL, NULL));
  ws_task_wait_async (done, NULL, ws_test_wait_cb, &r_done);
  g_assert_cmpuint (r_done.calls, ==, 0);

  pending = ws_runtime_spawn (f.rt, ws_test_ready, NULL, NULL);
  ws_task_wait_async (pending, NULL, ws_test_wait_cb, &r_pending);
  g_assert_cmpuint (r_pending.calls, ==, 0);

  cancelled = ws_runtime_spawn (f.rt, ws_test_pending_forever, NULL, NULL);
  ws_task_wait_async (cancelled, NULL, ws_test_wait_cb, &r_cancelled);
  ws_task_cancel (cancelled);

  forever = ws_runtime_spawn (f.rt, ws_test_pending_forever, NULL, NULL);
  ws_task_wait_async (forever, cancellable, ws_test_wait_cb, &r_wait_cancelled);
  g_cancellable_cancel (cancellable);
  g_assert_cmpuint (r_wait_cancelled.calls, ==, 0);

  ws_test_iterate_until (f.ctx, r_done.calls && r_pending.calls && r_cancelled.calls
                              && r_wait_cancelled.calls);
  g_assert_true (r_done.ok);
  g_assert_true (r_pending.ok);
  g_assert_false (r_cancelled.ok);
  g_assert_error (r_cancelled.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_false (r_wait_cancelled.ok);
  g_assert_error (r_wait_cancelled.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);

  /* The task behind the cancelled wait ends later: still no second call. */
  ws_task_cancel (forever);
  g_assert_false (ws_task_wait (forever, NULL, NULL));
  while (g_main_context_iteration (f.ctx, FALSE))
    ;
  g_assert_cmpuint (r_done.calls, ==, 1);
  g_assert_cmpuint (r_pending.calls, ==, 1);
  g_assert_cmpuint (r_cancelled.calls, ==, 1);
  g_assert_cmpuint (r_wait_cancelled.calls, ==, 1);

  g_clear_error (&r_cancelled.error);
  g_clear_error (&r_wait_cancelled.error);
  ws_test_on_context_clear (&f);
}

WS_TEST_MAIN ({ "/async-wait/exactly-once", test_exactly_once })
