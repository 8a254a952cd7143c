/* test-task-group.c: WsTaskGroup, waiting for all or any of some tasks
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "ws-test-fixture.h"

static WsPoll
sleepy_value (WsContext *cx,
              gpointer   data)
{
  g_usleep (GPOINTER_TO_UINT (data) * 1000);
  return ws_test_return_int (cx, 40);
}

/* What a wait for all (or any, if @any) of a group got. */
typedef struct
{
  gboolean  any;
  guint     calls;
  gboolean  ok;
  WsTask   *first;
  GError   *error;
} GroupResult;

static void
group_cb (GObject      *object,
          GAsyncResult *result,
          gpointer      data)
{
  GroupResult *r = data;
  WsTaskGroup *group = WS_TASK_GROUP (object);

  r->calls++;
  if (r->any)
    r->first = ws_task_group_wait_any_finish (group, result, &r->error);
  else
    r->ok = ws_task_group_wait_all_finish (group, result, &r->error);
}

static void
test_wait_all_and_any (void)
{
  WsTestOnContext f;
  g_autoptr(WsTaskGroup) all = ws_task_group_new ();
  g_autoptr(WsTaskGroup) any = ws_task_group_new ();
  GroupResult r_all = { FALSE, }, r_any = { TRUE, };

  ws_test_on_context_init (&f, 2);
  for (guint i = 0; i < 100; i++)
    {
      g_autoptr(WsTask) t = ws_runtime_spawn (f.rt, sleepy_value, GUINT_TO_POINTER (i % 3), NULL);

      ws_task_group_add (all, t);
    }
  ws_task_group_wait_all_async (all, NULL, group_cb, &r_all);

  {
    g_autoptr(WsTask) fast = ws_runtime_spawn (f.rt, ws_test_ready, NULL, NULL);
    g_autoptr(WsTask) slow1 = ws_runtime_spawn (f.rt, ws_test_pending_forever, NULL, NULL);
    g_autoptr(WsTask) slow2 = ws_runtime_spawn (f.rt, ws_test_pending_forever, NULL, NULL);

    ws_task_group_add (any, slow1);
    ws_task_group_add (any, fast);
    ws_task_group_add (any, slow2);
  }
  ws_task_group_wait_any_async (any, NULL, group_cb, &r_any);

  ws_test_iterate_until (f.ctx, r_all.calls && r_any.calls);
  g_assert_true (r_all.ok);
  g_assert_no_error (r_all.error);
  g_assert_cmpuint (ws_task_group_get_n_finished (all), ==, 100);
  g_assert_true (r_any.first == ws_task_group_get_task (any, 1));

  /* Cancel the rest; then waiting for all reports the cancellation. */
  ws_task_group_cancel_all (any);
  r_all = (GroupResult) { FALSE, };
  ws_task_group_wait_all_async (any, NULL, group_cb, &r_all);
  ws_test_iterate_until (f.ctx, r_all.calls);
  g_assert_false (r_all.ok);
  g_assert_error (r_all.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpuint (ws_task_group_get_n_finished (any), ==, 3);

  g_clear_error (&r_all.error);
  g_clear_object (&r_any.first);
  ws_test_on_context_clear (&f);
}

WS_TEST_MAIN ({ "/task-group/wait-all-and-any", test_wait_all_and_any })
