/* test-handle.c: WsHandle, spawning from inside the runtime
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * ws_handle_get_current () is NULL off the runtime and the runtime's
 * handle on a worker; tasks spawn children through it and await them, or
 * spawn a 1,000-deep chain of detached tasks.
 */

#include "config.h"

#include "ws-test-fixture.h"

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
  ws_test_count_destroy (p);
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
        p->children[i] = ws_handle_spawn (handle, ws_test_return_index, GUINT_TO_POINTER (i + 1), NULL);
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

  ws_test_reset_counters ();
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
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, G_N_ELEMENTS (tasks));
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, 8 * G_N_ELEMENTS (tasks));
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* A 1,000-deep chain: each link spawns the next, detached; the last opens
 * the gate. */
typedef struct
{
  guint         depth;
  WsTestGate    done;
  _Atomic guint links;
} Chain;

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
    ws_test_gate_open (&c->done);
  return WS_POLL_READY;
}

static void
test_chain (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  Chain c = { .depth = 1000 };

  ws_test_gate_init (&c.done);
  ws_runtime_spawn_detached (rt, chain_link, &c, NULL);
  ws_test_gate_wait (&c.done);
  g_assert_cmpuint (atomic_load (&c.links), ==, 1000);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  ws_test_gate_clear (&c.done);
}

WS_TEST_MAIN ({ "/handle/nested-spawns", test_nested_spawns },
              { "/handle/chain", test_chain })
