/* ws-completion-private.h: WsCompletion, the once-only completion of an async wait
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

#include "ws-cancel-link-private.h"
#include "ws-delivery-private.h"

G_BEGIN_DECLS

/* One `_async ()` wait's completion: claimed once, delivered on the
 * waiter's context, holding the waiter's GTask until then. Embedded in
 * the wait (a channel's send or receive, a limiter's acquire, a sleep's
 * wait, a task's, a group's or a oneshot's wait);
 * ws-completion.c keeps the protocol. */
typedef struct _WsCompletion WsCompletion;

/* The cancel link's handler of a completion: on the cancelling thread,
 * or in ws_completion_connect () for a cancellable cancelled already.
 * It applies its owner's rule, then claims. */
typedef void (*WsCompletionCancelFunc) (WsCompletion *self);

struct _WsCompletion
{
  WsDeliveryItem   item;          /* queued by the claimer, once */
  GTask           *task;          /* the waiter's, a reference until delivered (C4); NULL
                                   * in the custom form */
  WsCancelLink     cancel;        /* the waiter's GCancellable, if any */
  _Atomic gint     state;         /* PENDING, CLAIMED */
  GError          *error;         /* the claimer's outcome: NULL for success */
  WsDelivery      *delivery;      /* of the waiter's context */
  WsCompletionCancelFunc cancel_func;  /* the owner's rule, if connected */
};

void         ws_completion_init         (WsCompletion                *self,
                                         GTask                       *task);
void         ws_completion_init_custom  (WsCompletion                *self,
                                         WsDelivery                  *delivery,
                                         const WsDeliveryItemVTable  *vtable);
void         ws_completion_connect      (WsCompletion                *self,
                                         GCancellable                *cancellable,
                                         WsCompletionCancelFunc       func);
G_GNUC_WARN_UNUSED_RESULT
gboolean     ws_completion_claim        (WsCompletion                *self);
gboolean     ws_completion_is_claimed   (WsCompletion                *self);
void         ws_completion_return       (WsCompletion                *self,
                                         GError                      *error);
gboolean     ws_completion_complete     (WsCompletion                *self,
                                         GError                      *error);
void         ws_completion_reset        (WsCompletion                *self);

G_END_DECLS
