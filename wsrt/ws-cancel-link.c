/* ws-cancel-link.c: the link from a GCancellable to an async wait
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The protocol (ws-cancel-link-private.h says what the link is for):
 * connect, store the id, then look at the cancellable again: a cancel
 * that ran the handler before the id was stored found nothing to
 * disconnect, and is seen here, which runs the handler again (the wait
 * decides once, so the second run does nothing) and disconnects. A
 * cancel after the store finds the id. The handler's closure holds what
 * @data_notify drops until it is disconnected.
 */

#include "config.h"

#include <stdatomic.h>

#include "ws-cancel-link-private.h"

void
ws_cancel_link_connect (WsCancelLink    *link,
                        GCancellable    *cancellable,
                        WsCancelledFunc  func,
                        gpointer         data,
                        GClosureNotify   data_notify)
{
  gulong id;

  link->cancellable = cancellable;
  id = g_signal_connect_data (cancellable, "cancelled", G_CALLBACK (func), data, data_notify, 0);
  /* seq_cst store, then the cancellable's flag: see above. */
  atomic_store_explicit (&link->id, id, memory_order_seq_cst);
  if (g_cancellable_is_cancelled (cancellable))
    {
      func (cancellable, data);
      ws_cancel_link_disconnect (link);
    }
}

void
ws_cancel_link_disconnect (WsCancelLink *link)
{
  /* seq_cst: the exchange decides who disconnects; it pairs with the
   * store in connect. g_signal_handler_disconnect (unlike
   * g_cancellable_disconnect) never waits for a running handler, so it
   * is safe inside the handler. */
  gulong id = atomic_exchange_explicit (&link->id, 0, memory_order_seq_cst);

  if (id != 0)
    g_signal_handler_disconnect (link->cancellable, id);
}
