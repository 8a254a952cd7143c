/* test-async-op.c: WsAsyncOp, GIO asynchronous calls as awaitables
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * GIO awaitables: a task starts a GIO call with ws_async_op_callback and
 * awaits it (a file load, a socket connect); cancelling the operation
 * makes the call's _finish fail with G_IO_ERROR_CANCELLED.
 */

#include "config.h"

#include "ws-test-fixture.h"

#ifdef __SANITIZE_ADDRESS__
# include <sanitizer/lsan_interface.h>
#endif

typedef struct
{
  GFile     *file;
  WsAsyncOp *op;
  gchar     *contents;
  GError    *error;
} LoadState;

static void
load_state_free (gpointer data)
{
  LoadState *s = data;

  g_clear_pointer (&s->op, ws_async_op_unref);
  /* contents and error are read by the test after the task ends */
}

static WsPoll
load_func (WsContext *cx,
           gpointer   data)
{
  LoadState *s = data;

  if (s->op == NULL)
    {
      s->op = ws_async_op_new ();
      g_file_load_contents_async (s->file, ws_async_op_get_cancellable (s->op),
                                  ws_async_op_callback, ws_async_op_start (s->op, cx));
    }
  if (ws_async_op_poll (s->op, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  g_file_load_contents_finish (s->file, ws_async_op_get_result (s->op),
                               &s->contents, NULL, NULL, &s->error);
  return WS_POLL_READY;
}

static void
test_load_contents (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autofree gchar *path = g_test_build_filename (G_TEST_DIST, "test-async-op.c", NULL);
  LoadState s = { 0 };
  g_autoptr(WsTask) task = NULL;

  s.file = g_file_new_for_path (path);
  task = ws_runtime_spawn (rt, load_func, &s, load_state_free);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_no_error (s.error);
  g_assert_nonnull (strstr (s.contents, "GIO awaitables"));
  g_free (s.contents);
  g_object_unref (s.file);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

typedef struct
{
  gchar             *host;
  WsAsyncOp         *op;
  GSocketConnection *conn;
  GError            *error;
} ConnectState;

static WsPoll
connect_func (WsContext *cx,
              gpointer   data)
{
  ConnectState *s = data;

  if (s->op == NULL)
    {
      g_autoptr(GSocketClient) client = g_socket_client_new ();

      s->op = ws_async_op_new ();
      g_socket_client_connect_to_host_async (client, s->host, 0,
                                             ws_async_op_get_cancellable (s->op),
                                             ws_async_op_callback, ws_async_op_start (s->op, cx));
    }
  if (ws_async_op_poll (s->op, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  {
    g_autoptr(GObject) client = g_async_result_get_source_object (ws_async_op_get_result (s->op));

    s->conn = g_socket_client_connect_to_host_finish (G_SOCKET_CLIENT (client),
                                                      ws_async_op_get_result (s->op), &s->error);
  }
  g_clear_pointer (&s->op, ws_async_op_unref);
  return WS_POLL_READY;
}

static void
test_socket_connect (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GSocketListener) listener = g_socket_listener_new ();
  g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr(GSocketAddress) addr = g_inet_socket_address_new (loopback, 0);
  g_autoptr(GSocketAddress) bound = NULL;
  g_autoptr(GSocketConnection) server_side = NULL;
  g_autoptr(GError) error = NULL;
  ConnectState s = { 0 };
  g_autoptr(WsTask) task = NULL;

  g_assert_true (g_socket_listener_add_address (listener, addr, G_SOCKET_TYPE_STREAM,
                                                G_SOCKET_PROTOCOL_TCP, NULL, &bound, &error));
  g_assert_no_error (error);
  s.host = g_strdup_printf ("127.0.0.1:%u",
                            g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound)));

  task = ws_runtime_spawn (rt, connect_func, &s, NULL);
  /* This thread is no worker: it may block on accept. */
  server_side = g_socket_listener_accept (listener, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_no_error (s.error);
  g_assert_nonnull (s.conn);

  g_object_unref (s.conn);
  g_free (s.host);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Cancelling the operation makes _finish fail with CANCELLED. */
typedef struct
{
  GSocketListener   *listener;
  WsAsyncOp         *op;
  GError            *error;
  _Atomic gboolean   started;
} AcceptState;

static WsPoll
accept_func (WsContext *cx,
             gpointer   data)
{
  AcceptState *s = data;
  GSocketConnection *conn;

  if (s->op == NULL)
    {
      s->op = ws_async_op_new ();
      g_socket_listener_accept_async (s->listener, ws_async_op_get_cancellable (s->op),
                                      ws_async_op_callback, ws_async_op_start (s->op, cx));
      atomic_store (&s->started, TRUE);
    }
  if (ws_async_op_poll (s->op, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  conn = g_socket_listener_accept_finish (s->listener, ws_async_op_get_result (s->op), NULL, &s->error);
  g_assert_null (conn);
  return WS_POLL_READY;
}

/* A listener on a loopback port that nobody connects to: its accept
 * stays pending until cancelled. */
static GSocketListener *
accept_listener_new (void)
{
  g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr(GSocketAddress) addr = g_inet_socket_address_new (loopback, 0);
  g_autoptr(GError) error = NULL;
  GSocketListener *listener = g_socket_listener_new ();

  g_assert_true (g_socket_listener_add_address (listener, addr, G_SOCKET_TYPE_STREAM,
                                                G_SOCKET_PROTOCOL_TCP, NULL, NULL, &error));
  return listener;
}

static void
test_cancel (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  AcceptState s = { accept_listener_new () };
  g_autoptr(WsTask) task = NULL;

  task = ws_runtime_spawn (rt, accept_func, &s, NULL);
  ws_test_wait_until (atomic_load (&s.started));
  ws_async_op_cancel (s.op);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_error (s.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);

  g_clear_error (&s.error);
  ws_async_op_unref (s.op);
  g_object_unref (s.listener);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Cancelling the task cancels the call: the operation's cancellable is
 * linked to the task's. The test keeps its own reference on the
 * operation, so only the link can cancel it (not the last unref). */
static void
test_task_cancel_cancels_call (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  AcceptState s = { accept_listener_new () };
  g_autoptr(WsTask) task = NULL;
  g_autoptr(GError) error = NULL;
  GSocketConnection *conn;

  task = ws_runtime_spawn (rt, accept_func, &s, NULL);
  ws_test_wait_until (atomic_load (&s.started));
  ws_task_cancel (task);
  g_assert_false (ws_task_wait (task, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&error);

  /* GIO calls back on the worker's context: the accept was cancelled. */
  ws_test_wait_until (ws_async_op_get_result (s.op) != NULL);
  conn = g_socket_listener_accept_finish (s.listener, ws_async_op_get_result (s.op), NULL,
                                          &error);
  g_assert_null (conn);
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);

  ws_async_op_unref (s.op);
  g_object_unref (s.listener);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* GIO is done with the GAsyncResult before the task sees it: a task made
 * ready by the op finds the GTask completed (GIO sets that after the
 * callback returns), whichever worker polls it. Many rounds, with the
 * GTask returned from another thread so that its callback runs in a
 * dispatch of the worker's context while the other worker is free. */
typedef struct
{
  WsAsyncOp *op;
  gboolean   completed_when_ready;
} ReturnState;

static gpointer
return_later (gpointer data)
{
  g_task_return_boolean (data, TRUE);
  g_object_unref (data);
  return NULL;
}

static WsPoll
await_gtask (WsContext *cx,
             gpointer   data)
{
  ReturnState *s = data;

  if (s->op == NULL)
    {
      GTask *gtask;

      s->op = ws_async_op_new ();
      gtask = g_task_new (NULL, ws_async_op_get_cancellable (s->op), ws_async_op_callback,
                          ws_async_op_start (s->op, cx));
      g_thread_unref (g_thread_new ("returner", return_later, gtask));
    }
  if (ws_async_op_poll (s->op, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  s->completed_when_ready = g_task_get_completed (G_TASK (ws_async_op_get_result (s->op)));
  g_assert_true (g_task_propagate_boolean (G_TASK (ws_async_op_get_result (s->op)), NULL));
  return WS_POLL_READY;
}

static void
test_result_completed_when_ready (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);

  for (guint i = 0; i < 1000; i++)
    {
      ReturnState s = { NULL, FALSE };
      g_autoptr(WsTask) task = ws_runtime_spawn (rt, await_gtask, &s, NULL);

      g_assert_true (ws_task_wait (task, NULL, NULL));
      g_assert_true (s.completed_when_ready);
      ws_async_op_unref (s.op);
    }
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* The pattern doc/async-gtk.md teaches for stale work: a fiber awaits a
 * GIO call that makes a GCancellableSource (an accept nobody connects
 * to) and its task is cancelled from another thread, many times. GLib
 * 2.74 leaks such a source when its last reference goes while another
 * thread is inside g_cancellable_cancel (); the operation forwards the
 * cancel to the context the call was started on, so the source is
 * cancelled and freed by the one thread. Under ASan the test asks
 * LeakSanitizer at the end (tests/lsan.supp has no entry for it). */
typedef struct
{
  GSocketListener   *listener;
  _Atomic gboolean   started;
  _Atomic gboolean   saw_cancel;
} AcceptRound;

static void
accept_fiber (WsContext *cx,
              gpointer   data)
{
  AcceptRound *r = data;
  g_autoptr(WsAsyncOp) op = ws_async_op_new ();

  g_socket_listener_accept_socket_async (r->listener, ws_async_op_get_cancellable (op),
                                         ws_async_op_callback, ws_async_op_start (op, cx));
  atomic_store (&r->started, TRUE);
  if (!WS_FIBER_AWAIT (cx, ws_async_op_poll (op, cx)))
    {
      atomic_store (&r->saw_cancel, TRUE);
      return;
    }
  g_assert_not_reached ();
}

static void
test_cancel_from_other_thread_leaks_nothing (void)
{
  GSocketListener *listener = accept_listener_new ();
  guint n = ws_test_scaled (2000);

  {
    g_autoptr(WsRuntime) rt = ws_runtime_new (2);

    for (guint i = 0; i < n; i++)
      {
        AcceptRound r = { listener, FALSE, FALSE };
        g_autoptr(WsTask) task = ws_runtime_spawn_fiber (rt, accept_fiber, &r, NULL);
        g_autoptr(GError) error = NULL;

        ws_test_wait_until (atomic_load (&r.started));
        ws_task_cancel (task);
        g_assert_false (ws_task_wait (task, NULL, &error));
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
        g_assert_true (atomic_load (&r.saw_cancel));
      }
    /* Shutdown dispatches what GIO still owes (each cancelled accept). */
    g_assert_true (ws_runtime_shutdown (rt, -1));
  }
  g_object_unref (listener);
#ifdef __SANITIZE_ADDRESS__
  g_assert_cmpint (__lsan_do_recoverable_leak_check (), ==, 0);
#else
  g_test_message ("no LeakSanitizer in this build: the rounds ran, leaks unchecked");
#endif
}

WS_TEST_MAIN ({ "/async-op/load-contents", test_load_contents },
              { "/async-op/socket-connect", test_socket_connect },
              { "/async-op/cancel", test_cancel },
              { "/async-op/task-cancel-cancels-call", test_task_cancel_cancels_call },
              { "/async-op/result-completed-when-ready", test_result_completed_when_ready },
              { "/async-op/cancel-from-other-thread-leaks-nothing",
                test_cancel_from_other_thread_leaks_nothing })
