/* ws-test-helper.c: native tasks for the GJS and Vala tests
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "ws-test-helper.h"

static WsPoll
sum_poll (WsContext *cx,
          gpointer   user_data)
{
  g_autoptr(WsHandle) handle = ws_handle_get_current ();
  guint n = GPOINTER_TO_UINT (user_data);
  guint64 sum = 0;
  GValue v = G_VALUE_INIT;

  /* Only runtime threads have a current handle: prove where we ran. */
  if (handle == NULL)
    {
      ws_context_return_error (cx, g_error_new_literal (WS_ERROR, WS_ERROR_FAILED,
                                                        "the sum ran off the workers"));
      return WS_POLL_READY;
    }
  for (guint i = 1; i <= n; i++)
    sum += i;
  g_value_init (&v, G_TYPE_UINT64);
  g_value_set_uint64 (&v, sum);
  ws_context_return_value (cx, &v);
  return WS_POLL_READY;
}

/**
 * ws_test_spawn_sum:
 * @runtime: a runtime
 * @n: the last number to add
 *
 * Spawns a task on the workers of @runtime that adds 1 to @n. It fails
 * with %WS_ERROR_FAILED if it finds itself off the runtime's threads.
 *
 * Returns: (transfer full): the task; its value is a guint64
 */
WsTask *
ws_test_spawn_sum (WsRuntime *runtime,
                   guint      n)
{
  return ws_runtime_spawn (runtime, sum_poll, GUINT_TO_POINTER (n), NULL);
}

static WsPoll
failing_poll (WsContext *cx,
              gpointer   user_data)
{
  ws_context_return_error (cx, g_error_new_literal (G_IO_ERROR, G_IO_ERROR_NOT_FOUND, user_data));
  return WS_POLL_READY;
}

/**
 * ws_test_spawn_failing:
 * @runtime: a runtime
 * @message: the error message
 *
 * Spawns a task on the workers that fails with `G_IO_ERROR_NOT_FOUND`.
 *
 * Returns: (transfer full): the task
 */
WsTask *
ws_test_spawn_failing (WsRuntime  *runtime,
                       const char *message)
{
  return ws_runtime_spawn (runtime, failing_poll, g_strdup (message), g_free);
}

static WsPoll
pending_poll (WsContext *cx,
              gpointer   user_data)
{
  return WS_POLL_PENDING;
}

/**
 * ws_test_spawn_pending:
 * @runtime: a runtime
 *
 * Spawns a task on the workers that stays pending until cancelled.
 *
 * Returns: (transfer full): the task
 */
WsTask *
ws_test_spawn_pending (WsRuntime *runtime)
{
  return ws_runtime_spawn (runtime, pending_poll, NULL, NULL);
}
