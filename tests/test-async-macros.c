/* test-async-macros.c: the coroutine macros of ws-async.h
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * WS_ASYNC_BEGIN, WS_AWAIT, WS_ASYNC_YIELD and WS_ASYNC_END: one task
 * function awaits a sleep, a channel and another task, in sequence, and
 * returns a value computed from what it got.
 */

#include "config.h"

#include "ws-test-fixture.h"

typedef struct
{
  WS_ASYNC_STATE;
  WsSleep   *nap;
  WsChannel *inbox;
  WsTask    *child;
  gpointer   item;
  guint      steps;
} Job;

static WsPoll
child_value (WsContext *cx,
             gpointer   data)
{
  return ws_test_return_int (cx, 40);
}

static WsPoll
job_func (WsContext *cx,
          gpointer   data)
{
  Job *s = data;
  g_autoptr(GError) error = NULL;

  WS_ASYNC_BEGIN (s);

  WS_AWAIT (s, ws_sleep_poll (s->nap, cx));
  s->steps++;
  WS_AWAIT (s, ws_channel_poll_receive (s->inbox, cx, &s->item, &error));
  g_assert_no_error (error);
  s->steps++;
  WS_ASYNC_YIELD (s, cx);
  WS_AWAIT (s, ws_task_poll (s->child, cx));
  s->steps++;

  ws_test_return_int (cx, g_value_get_int (ws_task_get_value (s->child)) + GPOINTER_TO_INT (s->item));

  WS_ASYNC_END (s);
}

static void
test_sleep_channel_task (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  Job job = { 0 };
  g_autoptr(WsTask) task = NULL;

  job.nap = ws_sleep_new (5000);
  job.inbox = ws_channel_new (1, NULL);
  job.child = ws_runtime_spawn (rt, child_value, NULL, NULL);
  task = ws_runtime_spawn (rt, job_func, &job, NULL);
  g_usleep (10000);
  g_assert_true (ws_channel_try_send (job.inbox, GINT_TO_POINTER (2), NULL));
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_cmpuint (job.steps, ==, 3);
  g_assert_cmpint (g_value_get_int (ws_task_get_value (task)), ==, 42);

  ws_sleep_unref (job.nap);
  ws_channel_unref (job.inbox);
  g_object_unref (job.child);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

WS_TEST_MAIN ({ "/async-macros/sleep-channel-task", test_sleep_channel_task })
