/* tcp-echo.c: libdex's examples/tcp-echo.c on wsrt
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   tcp-echo [PORT]
 *
 * The same server as libdex 1.1's examples/tcp-echo.c: a fiber on the
 * main loop (libdex's dex_scheduler_spawn (NULL, ...)) accepts
 * connections, and each connection is echoed by a fiber on the workers
 * (libdex's thread pool scheduler), every GIO call awaited with WS_GIO and
 * ws_fiber_await_gio. Unlike libdex's, it listens on 127.0.0.1 only, on
 * PORT (8080 by default; 0 picks a free port, printed at start).
 */

#include <wsrt.h>

static WsRuntime *runtime;

static void
socket_connection_fiber (WsContext *cx,
                         gpointer   user_data)
{
  GIOStream *connection = user_data;
  GInputStream *input = g_io_stream_get_input_stream (connection);
  GOutputStream *output = g_io_stream_get_output_stream (connection);
  GError *error = NULL;
  guint8 buffer[1024];
  gssize n_read;

  for (;;)
    {
      g_input_stream_read_async (input, buffer, sizeof buffer, G_PRIORITY_DEFAULT, WS_GIO (cx));
      n_read = g_input_stream_read_finish (input, ws_fiber_await_gio (cx), &error);
      if (n_read <= 0)
        break;

      g_output_stream_write_all_async (output, buffer, n_read, G_PRIORITY_HIGH, WS_GIO (cx));
      if (!g_output_stream_write_all_finish (output, ws_fiber_await_gio (cx), NULL, &error))
        break;
    }

  if (error != NULL)
    ws_context_return_error (cx, error);
}

static void
socket_listener_fiber (WsContext *cx,
                       gpointer   user_data)
{
  GSocketListener *socket_listener = user_data;

  for (;;)
    {
      GSocketConnection *connection;
      GError *error = NULL;

      /* Accept an incoming connection */
      g_socket_listener_accept_async (socket_listener, WS_GIO (cx));
      connection = g_socket_listener_accept_finish (socket_listener, ws_fiber_await_gio (cx),
                                                    NULL, &error);
      if (connection == NULL)
        {
          ws_context_return_error (cx, error);
          return;
        }

      /* Echo it on a worker fiber, which runs on alone */
      g_object_unref (ws_runtime_spawn_fiber (runtime, socket_connection_fiber,
                                              connection, g_object_unref));
    }
}

int
main (int   argc,
      char *argv[])
{
  g_autoptr(GSocketListener) socket_listener = g_socket_listener_new ();
  g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr(GSocketAddress) address = NULL;
  g_autoptr(GSocketAddress) bound = NULL;
  g_autoptr(WsTask) task = NULL;
  g_autoptr(GError) error = NULL;

  address = g_inet_socket_address_new (loopback, argc > 1 ? atoi (argv[1]) : 8080);
  runtime = ws_runtime_get_default ();

  /* Try to listen on the port, or bail */
  if (!g_socket_listener_add_address (socket_listener, address, G_SOCKET_TYPE_STREAM,
                                      G_SOCKET_PROTOCOL_TCP, NULL, &bound, &error))
    g_error ("Failed to listen: %s", error->message);

  g_print ("Listening on 127.0.0.1:%u\n",
           g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound)));

  /* Accept on this thread: ws_task_wait () iterates the main context for
   * the fiber, as libdex's g_main_loop_run () does, until it fails */
  task = ws_runtime_spawn_local_fiber (runtime, NULL, socket_listener_fiber,
                                       g_object_ref (socket_listener), g_object_unref);
  if (!ws_task_wait (task, NULL, &error))
    g_error ("%s", error->message);

  return 0;
}
