/* test-fiber-gio.c: WS_GIO and ws_fiber_await_gio, any _async call in one call
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A fiber awaits GIO calls in one line each, on the workers and on a main
 * loop; two calls in a row; a cancel that the call ignores is still
 * waited for (the call writes into the fiber's stack after the cancel);
 * the misuse outside a fiber and an await with nothing to await.
 */

#include "config.h"

#include "ws-test-fixture.h"

/* ---- a file, loaded and queried --------------------------------------- */

typedef struct
{
  GFile    *file;
  gsize     length;
  guint64   size;                /* from the query, before the load */
  GThread  *thread;
  GError   *error;
} Load;

static void
load_fiber (WsContext *cx,
            gpointer   user_data)
{
  Load *l = user_data;
  g_autoptr(GFileInfo) info = NULL;
  g_autofree char *text = NULL;

  g_file_query_info_async (l->file, G_FILE_ATTRIBUTE_STANDARD_SIZE, G_FILE_QUERY_INFO_NONE,
                           G_PRIORITY_DEFAULT, WS_GIO (cx));
  info = g_file_query_info_finish (l->file, ws_fiber_await_gio (cx), &l->error);
  if (info == NULL)
    return;
  l->size = g_file_info_get_size (info);
  g_file_load_contents_async (l->file, WS_GIO (cx));
  if (g_file_load_contents_finish (l->file, ws_fiber_await_gio (cx), &text, &l->length, NULL,
                                   &l->error))
    l->thread = g_thread_self ();
}

static void
test_worker_fiber (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autofree char *path = g_test_build_filename (G_TEST_DIST, "test-fiber-gio.c", NULL);
  g_autoptr(GFile) file = g_file_new_for_path (path);
  g_autoptr(WsTask) task = NULL;
  Load l = { file, };

  task = ws_runtime_spawn_fiber (rt, load_fiber, &l, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_no_error (l.error);
  g_assert_cmpuint (l.length, >, 0);
  g_assert_cmpuint (l.length, ==, l.size);
  g_assert_true (l.thread != g_thread_self ());
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
}

/* On the main loop: every resume on this thread, and the loop runs while
 * the fiber waits. */
static gboolean
count_idle (gpointer data)
{
  (*(guint *) data)++;
  return G_SOURCE_CONTINUE;
}

static void
test_local_fiber (void)
{
  WsTestOnContext f;
  g_autofree char *path = g_test_build_filename (G_TEST_DIST, "test-fiber-gio.c", NULL);
  g_autoptr(GFile) file = g_file_new_for_path (path);
  g_autoptr(WsTask) task = NULL;
  g_autoptr(GSource) idle = g_idle_source_new ();
  guint idles = 0;
  Load l = { file, };

  ws_test_on_context_init (&f, 1);
  /* At the executor's priority: an iteration that dispatches anything
   * dispatches it, and the fiber's resume comes in a later iteration than
   * its suspend (a GIO callback, then the delivery, then the wake). */
  g_source_set_priority (idle, G_PRIORITY_DEFAULT);
  g_source_set_callback (idle, count_idle, &idles, NULL);
  g_source_attach (idle, f.ctx);
  task = ws_runtime_spawn_local_fiber (f.rt, NULL, load_fiber, &l, NULL);
  ws_test_iterate_until (f.ctx, ws_task_is_finished (task));
  g_source_destroy (idle);
  g_assert_no_error (l.error);
  g_assert_cmpuint (l.length, ==, l.size);
  g_assert_true (l.thread == g_thread_self ());
  /* The loop dispatched other sources between the fiber's resumes. */
  g_assert_cmpuint (idles, >, 0);
  ws_test_on_context_clear (&f);
}

/* ---- a call that ignores its cancellable --------------------------------- */

/* stubborn_write_async (): a GIO-style call whose thread waits for the
 * test's gate, whatever its cancellable says, then writes into the
 * caller's buffer and succeeds. */
typedef struct
{
  WsTestGate  *gate;
  char        *buffer;           /* the fiber's, on its stack */
  _Atomic gint saw_cancel;
} Stubborn;

static void
stubborn_thread (GTask        *task,
                 gpointer      source_object,
                 gpointer      task_data,
                 GCancellable *cancellable)
{
  Stubborn *s = task_data;

  ws_test_wait_until (g_cancellable_is_cancelled (cancellable));
  atomic_store (&s->saw_cancel, 1);
  ws_test_gate_wait (s->gate);
  g_strlcpy (s->buffer, "written after the cancel", 64);
  g_task_return_boolean (task, TRUE);
}

static void
stubborn_write_async (Stubborn            *s,
                      GCancellable        *cancellable,
                      GAsyncReadyCallback  callback,
                      gpointer             user_data)
{
  g_autoptr(GTask) task = g_task_new (NULL, cancellable, callback, user_data);

  /* Its result stands, cancel or not: the operation won. */
  g_task_set_check_cancellable (task, FALSE);
  g_task_set_task_data (task, s, NULL);
  g_task_run_in_thread (task, stubborn_thread);
}

typedef struct
{
  Stubborn          s;
  _Atomic gint      waiting;
  _Atomic gint      returned;
  gboolean          ok;
  char              copy[64];
} StubbornFiber;

static void
stubborn_fiber (WsContext *cx,
                gpointer   user_data)
{
  StubbornFiber *sf = user_data;
  char buffer[64] = "";

  sf->s.buffer = buffer;
  stubborn_write_async (&sf->s, WS_GIO (cx));
  atomic_store (&sf->waiting, 1);
  sf->ok = g_task_propagate_boolean (G_TASK (ws_fiber_await_gio (cx)), NULL);
  g_strlcpy (sf->copy, buffer, sizeof sf->copy);
  atomic_store (&sf->returned, 1);
}

/* On the main loop the fiber is unwound on this thread, which waits for
 * the call there while it iterates the context: an idle opens the gate
 * once the call saw the cancel, and notes whether the fiber had returned
 * by then. */
typedef struct
{
  StubbornFiber *sf;
  WsTask        *task;
  WsTestGate    *gate;
  gint           returned_at_open;
  gboolean       finished_at_open;
  gboolean       opened;
} GateOpener;

static gboolean
open_gate_after_cancel (gpointer data)
{
  GateOpener *o = data;

  if (!atomic_load (&o->sf->s.saw_cancel))
    return G_SOURCE_CONTINUE;
  o->returned_at_open = atomic_load (&o->sf->returned);
  o->finished_at_open = ws_task_is_finished (o->task);
  o->opened = TRUE;
  ws_test_gate_open (o->gate);
  return G_SOURCE_REMOVE;
}

static void
check_cancel_waits (WsRuntime    *rt,
                    GMainContext *ctx)
{
  WsTestGate gate;
  StubbornFiber sf = { { &gate, }, };
  g_autoptr(WsTask) task = NULL;

  ws_test_gate_init (&gate);
  if (ctx != NULL)
    {
      GateOpener o = { &sf, NULL, &gate, -1, TRUE, FALSE };
      g_autoptr(GSource) idle = g_idle_source_new ();

      task = ws_runtime_spawn_local_fiber (rt, ctx, stubborn_fiber, &sf, NULL);
      o.task = task;
      ws_test_iterate_until (ctx, atomic_load (&sf.waiting));
      g_source_set_callback (idle, open_gate_after_cancel, &o, NULL);
      g_source_attach (idle, ctx);
      ws_task_cancel (task);
      ws_test_iterate_until (ctx, ws_task_is_finished (task));
      g_assert_true (o.opened);
      /* The fiber had not returned when the call could go on. */
      g_assert_cmpint (o.returned_at_open, ==, 0);
      g_assert_false (o.finished_at_open);
    }
  else
    {
      task = ws_runtime_spawn_fiber (rt, stubborn_fiber, &sf, NULL);
      ws_test_wait_until (atomic_load (&sf.waiting));
      ws_task_cancel (task);
      /* The cancel reached the call, which goes on. */
      ws_test_wait_until (atomic_load (&sf.s.saw_cancel));
      /* The fiber has not returned: the await waits for GIO's callback. */
      g_assert_cmpint (atomic_load (&sf.returned), ==, 0);
      g_assert_false (ws_task_is_finished (task));
      ws_test_gate_open (&gate);
      ws_test_wait_until (ws_task_is_finished (task));
    }
  g_assert_cmpint (atomic_load (&sf.returned), ==, 1);
  /* The operation won: its result, and its write into the fiber's stack. */
  g_assert_true (sf.ok);
  g_assert_cmpstr (sf.copy, ==, "written after the cancel");
  ws_test_gate_clear (&gate);
}

static void
test_cancel_waits_for_callback_worker (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);

  check_cancel_waits (rt, NULL);
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
}

static void
test_cancel_waits_for_callback_local (void)
{
  WsTestOnContext f;

  ws_test_on_context_init (&f, 1);
  check_cancel_waits (f.rt, f.ctx);
  ws_test_on_context_clear (&f);
}

/* A cancel that the call obeys: the finish reports G_IO_ERROR_CANCELLED. */
typedef struct
{
  _Atomic gint  waiting;
  GError       *error;
  gboolean      ok;
} Obedient;

static void
obedient_fiber (WsContext *cx,
                gpointer   user_data)
{
  Obedient *o = user_data;
  g_autoptr(GSocketClient) client = g_socket_client_new ();
  g_autoptr(GSocketListener) listener = g_socket_listener_new ();
  g_autoptr(GSocketConnection) connection = NULL;

  g_assert_cmpuint (g_socket_listener_add_any_inet_port (listener, NULL, NULL), >, 0);
  g_socket_listener_accept_async (listener, WS_GIO (cx));
  atomic_store (&o->waiting, 1);
  connection = g_socket_listener_accept_finish (listener, ws_fiber_await_gio (cx), NULL,
                                                &o->error);
  o->ok = connection != NULL;
}

static void
test_cancel_obeyed (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsTask) task = NULL;
  g_autoptr(GError) error = NULL;
  Obedient o = { 0 };

  task = ws_runtime_spawn_fiber (rt, obedient_fiber, &o, NULL);
  ws_test_wait_until (atomic_load (&o.waiting));
  ws_task_cancel (task);
  g_assert_false (ws_task_wait (task, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_false (o.ok);
  g_assert_error (o.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&o.error);
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
}

/* ---- misuse ----------------------------------------------------------- */

static WsPoll
gio_in_poll_function (WsContext *cx,
                      gpointer   user_data)
{
  GFile *file = user_data;

  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*outside a fiber*");
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*outside a fiber*");
  g_file_load_contents_async (file, WS_GIO (cx));
  g_test_assert_expected_messages ();
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*outside a fiber*");
  g_assert_null (ws_fiber_await_gio (cx));
  g_test_assert_expected_messages ();
  return WS_POLL_READY;
}

static void
nothing_to_await (WsContext *cx,
                  gpointer   user_data)
{
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*no GIO call to await*");
  g_assert_null (ws_fiber_await_gio (cx));
  g_test_assert_expected_messages ();
}

static void
test_misuse (void)
{
  WsTestOnContext f;
  g_autofree char *path = g_test_build_filename (G_TEST_DIST, "test-fiber-gio.c", NULL);
  g_autoptr(GFile) file = g_file_new_for_path (path);
  g_autoptr(WsTask) poll_task = NULL;
  g_autoptr(WsTask) fiber = NULL;

  /* Local, so that the expected messages are this thread's. */
  ws_test_on_context_init (&f, 1);
  poll_task = ws_runtime_spawn_local (f.rt, NULL, gio_in_poll_function, file, NULL);
  ws_test_iterate_until (f.ctx, ws_task_is_finished (poll_task));
  fiber = ws_runtime_spawn_local_fiber (f.rt, NULL, nothing_to_await, NULL, NULL);
  ws_test_iterate_until (f.ctx, ws_task_is_finished (fiber));
  /* The load that was started without a fiber called back and was
   * dropped; nothing of it stays. */
  ws_test_on_context_clear (&f);
}

WS_TEST_MAIN ({ "/fiber-gio/worker-fiber", test_worker_fiber },
              { "/fiber-gio/local-fiber", test_local_fiber },
              { "/fiber-gio/cancel-waits-for-callback-worker", test_cancel_waits_for_callback_worker },
              { "/fiber-gio/cancel-waits-for-callback-local", test_cancel_waits_for_callback_local },
              { "/fiber-gio/cancel-obeyed", test_cancel_obeyed },
              { "/fiber-gio/misuse", test_misuse })
