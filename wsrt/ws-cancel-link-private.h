/* ws-cancel-link-private.h: the link from a GCancellable to an async wait
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/* The link from a GCancellable to an async wait's WsCompletion
 * (ws-completion.c): a "cancelled" handler, not a
 * GCancellableSource (a GSource per wait, and GLib 2.74 leaks one whose
 * last reference goes while another thread is inside
 * g_cancellable_cancel ()). The handler runs on the cancelling thread;
 * the wait decides its outcome once (its own lock or exchange) and
 * returns its GTask, which calls back on the GTask's context. Whoever
 * completes the wait disconnects the link, the handler included:
 * disconnect takes the id once, so it is safe from any thread, from
 * inside the handler, and twice. Connect before anything else can
 * complete the wait. ws-cancel-link.c has the argument. */
typedef struct
{
  GCancellable    *cancellable;   /* the wait's; not a reference */
  _Atomic gulong   id;            /* 0 once disconnected */
} WsCancelLink;

/* Runs once or twice per cancel (the wait decides once): on the
 * cancelling thread, or in connect if @cancellable was cancelled
 * already. */
typedef void (*WsCancelledFunc) (GCancellable *cancellable,
                                 gpointer      data);

void         ws_cancel_link_connect    (WsCancelLink        *link,
                                        GCancellable        *cancellable,
                                        WsCancelledFunc      func,
                                        gpointer             data,
                                        GClosureNotify       data_notify);
void         ws_cancel_link_disconnect (WsCancelLink        *link);

G_END_DECLS
