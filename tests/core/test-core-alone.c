/* test-core-alone.c: the scheduler core without the GObject face
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * This program links the core library and GLib only (no GObject, no
 * GIO): if the core called into either, it would not link. It runs the
 * core's own API: spawn from outside and from a worker, wake, shutdown.
 */

#include "config.h"

#include "ws-runtime-core-private.h"
#include "../ws-test-util.h"

typedef struct
{
  _Atomic guint  polls;
  _Atomic guint  destroyed;
  WsRuntimeCore   *core;
} Counter;

static void
counter_destroy (gpointer data)
{
  Counter *c = data;

  atomic_fetch_add (&c->destroyed, 1);
}

static WsPoll
count_once (WsContext *cx,
            gpointer   data)
{
  Counter *c = data;

  atomic_fetch_add (&c->polls, 1);
  return WS_POLL_READY;
}

/* Spawns ten children from the worker, then ends. */
static WsPoll
spawn_children (WsContext *cx,
                gpointer   data)
{
  Counter *c = data;

  for (guint i = 0; i < 10; i++)
    ws_runtime_core_spawn (c->core, count_once, c, counter_destroy, FALSE);
  return WS_POLL_READY;
}

static void
test_spawn_and_shutdown (void)
{
  WsConfig config = { .n_workers = 2, .global_queue_interval = 31,
                               .event_interval = 61, .budget = 128,
                               .max_blocking_threads = 4,
                               .blocking_keep_alive = G_USEC_PER_SEC,
                               .local_slice = 1000 };
  Counter c = { 0, };
  WsRuntimeCore *core = ws_runtime_core_new (&config);

  c.core = core;
  g_assert_true (ws_runtime_core_start (core, NULL));
  for (guint i = 0; i < 100; i++)
    ws_runtime_core_spawn (core, spawn_children, &c, counter_destroy, FALSE);

  /* Each of the 100 parents and 1,000 children ends, then its destroy
   * notify runs; shutdown returns TRUE only after every one of them. */
  while (atomic_load (&c.destroyed) < 1100)
    g_usleep (1000);
  g_assert_true (ws_runtime_core_shutdown (core, -1));
  g_assert_cmpuint (atomic_load (&c.polls), ==, 1000);
  g_assert_cmpuint (atomic_load (&c.destroyed), ==, 1100);
  g_assert_cmpint (ws_runtime_core_alive_tasks (core), ==, 0);
  ws_runtime_core_unref (core);
}

int
main (int    argc,
      char **argv)
{
  ws_test_init (&argc, &argv);
  ws_test_add_func ("/core/alone/spawn-and-shutdown", test_spawn_and_shutdown);
  return g_test_run ();
}
