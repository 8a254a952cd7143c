/* tcp-echo-client.c: the client that the test and the benchmark of the
 * tcp-echo ports run against a server on 127.0.0.1
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   tcp-echo-client PORT KIB CONNECTIONS
 *
 * Opens CONNECTIONS connections to 127.0.0.1:PORT at once. On each, a
 * thread sends KIB KiB of a pattern of its own and then shuts its side
 * down, while another reads the echo until the server closes, and checks
 * that it got every byte back, in order. Exits 0 when every connection
 * did; every socket call gives up after 30 s, so a server that stops
 * answering fails the client instead of hanging it. It uses GIO's
 * blocking sockets and threads only: the same client for every server.
 */

#include <errno.h>
#include <sys/socket.h>

#include <gio/gio.h>

typedef struct
{
  guint16  port;
  guint    index;
  gsize    bytes;
  GSocket *socket;
  gboolean ok;
} Conn;

static guint8
pattern (const Conn *c,
         gsize       i)
{
  return (guint8) (i * 7 + i / 251 + c->index);
}

static gpointer
send_thread (gpointer data)
{
  Conn *c = data;
  guint8 chunk[65536];
  gsize sent = 0;
  g_autoptr(GError) error = NULL;

  while (sent < c->bytes)
    {
      gsize n = MIN (sizeof chunk, c->bytes - sent);
      gssize w;

      for (gsize i = 0; i < n; i++)
        chunk[i] = pattern (c, sent + i);
      for (gsize done = 0; done < n; done += w)
        if ((w = g_socket_send (c->socket, (char *) chunk + done, n - done, NULL, &error)) < 0)
          {
            g_printerr ("connection %u: send: %s\n", c->index, error->message);
            return GINT_TO_POINTER (FALSE);
          }
      sent += n;
    }
  /* The plain call: g_socket_shutdown () writes the GSocket's state,
   * which the receiving thread reads. */
  if (shutdown (g_socket_get_fd (c->socket), SHUT_WR) != 0)
    {
      g_printerr ("connection %u: shutdown: %s\n", c->index, g_strerror (errno));
      return GINT_TO_POINTER (FALSE);
    }
  return GINT_TO_POINTER (TRUE);
}

static gpointer
conn_thread (gpointer data)
{
  Conn *c = data;
  g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr(GSocketAddress) address = g_inet_socket_address_new (loopback, c->port);
  g_autoptr(GError) error = NULL;
  GThread *sender;
  guint8 chunk[65536];
  gsize received = 0;
  gssize r;
  gboolean sent;

  c->socket = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM,
                            G_SOCKET_PROTOCOL_TCP, &error);
  if (c->socket == NULL)
    {
      g_printerr ("connection %u: socket: %s\n", c->index, error->message);
      return NULL;
    }
  g_socket_set_timeout (c->socket, 30);
  if (!g_socket_connect (c->socket, address, NULL, &error))
    {
      g_printerr ("connection %u: connect: %s\n", c->index, error->message);
      return NULL;
    }

  sender = g_thread_new ("send", send_thread, c);
  while ((r = g_socket_receive (c->socket, (char *) chunk, sizeof chunk, NULL, &error)) > 0)
    {
      for (gssize i = 0; i < r; i++)
        if (chunk[i] != pattern (c, received + i))
          {
            g_printerr ("connection %u: byte %" G_GSIZE_FORMAT " differs\n", c->index, received + i);
            r = -1;
            break;
          }
      if (r < 0)
        break;
      received += r;
    }
  if (r < 0 && error != NULL)
    g_printerr ("connection %u: receive: %s\n", c->index, error->message);
  if (r < 0)
    shutdown (g_socket_get_fd (c->socket), SHUT_RDWR);  /* unblocks the sender */
  sent = GPOINTER_TO_INT (g_thread_join (sender));
  if (r == 0 && received != c->bytes)
    g_printerr ("connection %u: %" G_GSIZE_FORMAT " bytes echoed of %" G_GSIZE_FORMAT "\n",
                c->index, received, c->bytes);
  c->ok = sent && r == 0 && received == c->bytes;
  g_socket_close (c->socket, NULL);
  return NULL;
}

int
main (int   argc,
      char *argv[])
{
  guint n_conns;
  g_autofree Conn *conns = NULL;
  g_autofree GThread **threads = NULL;
  gboolean ok = TRUE;

  if (argc != 4)
    {
      g_printerr ("usage: %s PORT KIB CONNECTIONS\n", argv[0]);
      return 2;
    }
  n_conns = MAX (1, atoi (argv[3]));
  conns = g_new0 (Conn, n_conns);
  threads = g_new0 (GThread *, n_conns);
  for (guint i = 0; i < n_conns; i++)
    {
      conns[i].port = atoi (argv[1]);
      conns[i].index = i;
      conns[i].bytes = (gsize) g_ascii_strtoull (argv[2], NULL, 10) * 1024;
      threads[i] = g_thread_new ("conn", conn_thread, &conns[i]);
    }
  for (guint i = 0; i < n_conns; i++)
    {
      g_thread_join (threads[i]);
      g_clear_object (&conns[i].socket);
      ok = ok && conns[i].ok;
    }
  return ok ? 0 : 1;
}
