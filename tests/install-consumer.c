/* install-consumer.c: a program built against an installed wsrt-1.pc
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Spawns, wakes, awaits, cancels and joins tasks with the public API only.
 */

#include <stdio.h>

#include <wsrt.h>

typedef struct
{
  WsTask  *child;
  WsWaker *waker;
  int      polls;
} Parent;

static WsPoll
child_func (WsContext *cx,
            gpointer   data)
{
  GValue v = G_VALUE_INIT;

  g_value_init (&v, G_TYPE_INT);
  g_value_set_int (&v, 21);
  ws_context_return_value (cx, &v);
  return WS_POLL_READY;
}

static WsPoll
parent_func (WsContext *cx,
             gpointer   data)
{
  Parent *p = data;
  GValue v = G_VALUE_INIT;

  if (p->polls++ == 0)
    {
      g_autoptr(WsHandle) handle = ws_handle_get_current ();

      p->child = ws_handle_spawn (handle, child_func, NULL, NULL);
      /* Wake ourselves once, too. */
      p->waker = ws_context_get_waker (cx);
      ws_waker_wake (p->waker);
    }
  if (ws_task_poll (p->child, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;

  g_value_init (&v, G_TYPE_INT);
  g_value_set_int (&v, 2 * g_value_get_int (ws_task_get_value (p->child)));
  ws_context_return_value (cx, &v);
  return WS_POLL_READY;
}

static WsPoll
forever (WsContext *cx,
         gpointer   data)
{
  return WS_POLL_PENDING;
}

int
main (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  Parent p = { 0, };
  g_autoptr(WsTask) parent = ws_runtime_spawn (rt, parent_func, &p, NULL);
  g_autoptr(WsTask) stuck = ws_runtime_spawn (rt, forever, NULL, NULL);
  g_autoptr(GError) error = NULL;

  if (!ws_task_wait (parent, NULL, &error))
    {
      fprintf (stderr, "consumer: %s\n", error->message);
      return 1;
    }
  ws_task_cancel (stuck);
  if (ws_task_wait (stuck, NULL, &error) || !g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      fprintf (stderr, "consumer: cancel did not cancel\n");
      return 1;
    }
  printf ("consumer: result %d after %d polls; cancelled task reported “%s”\n",
          g_value_get_int (ws_task_get_value (parent)), p.polls, error->message);
  ws_waker_unref (p.waker);
  g_clear_object (&p.child);
  return ws_runtime_shutdown (rt, -1) && g_value_get_int (ws_task_get_value (parent)) == 42 ? 0 : 1;
}
