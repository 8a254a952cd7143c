/* test-oneshot.c: WsOneshot, a single value from one side to the other
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "ws-test-fixture.h"

typedef struct
{
  WsOneshot *shot;
  gpointer   item;
  GError    *error;
} ShotWait;

static WsPoll
shot_func (WsContext *cx,
           gpointer   data)
{
  ShotWait *s = data;

  return ws_oneshot_poll (s->shot, cx, &s->item, &s->error);
}

/* A send reaches the awaiting task, a second send is refused and its item
 * freed; a close ends the other's wait with WS_ERROR_CLOSED. */
static void
test_send_and_close (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  ShotWait a = { ws_oneshot_new (ws_test_count_destroy) };
  ShotWait b = { ws_oneshot_new (ws_test_count_destroy) };
  g_autoptr(WsTask) ta = ws_runtime_spawn (rt, shot_func, &a, NULL);
  g_autoptr(WsTask) tb = ws_runtime_spawn (rt, shot_func, &b, NULL);

  ws_test_reset_counters ();
  g_usleep (5000);
  g_assert_true (ws_oneshot_send (a.shot, GUINT_TO_POINTER (7)));
  g_assert_false (ws_oneshot_send (a.shot, GUINT_TO_POINTER (8)));   /* refused, freed */
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 1);
  ws_oneshot_close (b.shot);

  g_assert_true (ws_task_wait (ta, NULL, NULL));
  g_assert_true (ws_task_wait (tb, NULL, NULL));
  g_assert_cmpuint (GPOINTER_TO_UINT (a.item), ==, 7);
  g_assert_no_error (a.error);
  g_assert_null (b.item);
  g_assert_error (b.error, WS_ERROR, WS_ERROR_CLOSED);

  g_clear_error (&b.error);
  ws_oneshot_unref (a.shot);
  ws_oneshot_unref (b.shot);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

WS_TEST_MAIN ({ "/oneshot/send-and-close", test_send_and_close })
