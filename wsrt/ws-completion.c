/* ws-completion.c: WsCompletion, the once-only completion of an async wait
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Every `_async ()` wait of wsrt ends through one WsCompletion, as every
 * GIO call ends through g_task_return (). The protocol:
 *
 *  C1 Claimed once. Whoever ends the wait (a wake from the awaited thing,
 *     the GCancellable's handler, the last waker reference dropped
 *     unanswered, a refusal) first wins the claim, a CAS from PENDING to
 *     CLAIMED; the others change nothing. The claim is the only decision:
 *     an owner whose rule needs a lock (a channel retries under its lock,
 *     a limiter queues under its own) claims inside that lock, so that
 *     its state and the claim move together.
 *  C2 The winner alone returns the outcome (ws_completion_return ()): it
 *     disconnects the cancel link, stores the outcome (NULL: success; or
 *     a GError) and queues the completion on the delivery source of the
 *     waiter's context (ws-delivery.c). It touches nothing of the wait
 *     after the push: the dispatch may free it at once.
 *  C3 Delivered on the waiter's context, from that context's dispatch,
 *     never from inside the `_async ()` call and never from the thread
 *     that ended the wait: the dispatch returns the GTask there (GTask
 *     then calls back at once, or in the next iteration while its
 *     cancellable is cancelled) and drops the completion's reference on
 *     it. In the custom form (a WsTask's own wait, which is its own
 *     GAsyncResult) the owner's item class delivers instead.
 *  C4 Held. Until the delivery the completion holds a reference on the
 *     GTask, so the wait, which is the GTask's data, and the GTask's
 *     context live while a claim is queued (the delivery source's rule).
 *     The cancel link's closure holds one more until it is disconnected.
 *  C5 The cancel link (ws-cancel-link.c) is connected before anything can
 *     claim, and disconnected by the winner with the exchange that never
 *     waits for a running handler: a handler running on another thread
 *     loses the claim and returns, its closure keeping the wait alive.
 *
 * What C1 answers that five separate state machines did not: the
 * outcome is decided by one CAS, so "completed" and "cancelled" can never
 * both be reported, nor neither (models/completion.pml checks it, with
 * the timeout race of ws_task_wait_timeout_async () on top).
 */

#include "config.h"

#include <stdatomic.h>

#include "ws-completion-private.h"

enum
{
  COMPLETION_PENDING,
  COMPLETION_CLAIMED,
};

#define COMPLETION_FROM_ITEM(i) \
  ((WsCompletion *) ((guint8 *) (i) - G_STRUCT_OFFSET (WsCompletion, item)))

/* C3: on the waiter's context. */
static void
completion_deliver (WsDeliveryItem *item)
{
  WsCompletion *self = COMPLETION_FROM_ITEM (item);
  GTask *task = self->task;
  GError *error = g_steal_pointer (&self->error);

  /* The GTask may free @self when we drop it (C4): only locals below. */
  if (error != NULL)
    g_task_return_error (task, error);
  else
    g_task_return_boolean (task, TRUE);
  g_object_unref (task);
}

/* The context went away with the completion queued: nobody can be called
 * back any more. */
static void
completion_discard (WsDeliveryItem *item)
{
  WsCompletion *self = COMPLETION_FROM_ITEM (item);

  g_clear_error (&self->error);
  g_object_unref (self->task);
}

static const WsDeliveryItemVTable completion_item_vtable = {
  completion_deliver,
  completion_discard,
};

static void
completion_init_common (WsCompletion *self)
{
  self->item.next = NULL;
  self->cancel.cancellable = NULL;
  atomic_init (&self->cancel.id, 0);
  self->error = NULL;
  self->cancel_func = NULL;
  atomic_init (&self->state, COMPLETION_PENDING);
}

/* Before anything can claim: @task is the waiter's GTask, made on the
 * waiter's thread, whose thread-default context is where it is
 * delivered. Takes a reference (C4). */
void
ws_completion_init (WsCompletion *self,
                    GTask        *task)
{
  completion_init_common (self);
  self->item.vtable = &completion_item_vtable;
  self->task = g_object_ref (task);
  /* Valid while the GTask holds its context, which is while we hold it. */
  self->delivery = ws_delivery_get (g_task_get_context (task));
}

/* The form without a GTask: @vtable delivers (C3), and the owner keeps
 * its context alive while the completion is queued. */
void
ws_completion_init_custom (WsCompletion               *self,
                           WsDelivery                 *delivery,
                           const WsDeliveryItemVTable *vtable)
{
  completion_init_common (self);
  self->item.vtable = vtable;
  self->task = NULL;
  self->delivery = delivery;
}

/* A custom completion that is reused (a WsTask's own wait): PENDING
 * again. Only once its delivery has run. */
void
ws_completion_reset (WsCompletion *self)
{
  /* Relaxed: the owner's lock orders the reuse. */
  atomic_store_explicit (&self->state, COMPLETION_PENDING, memory_order_relaxed);
}

static void
link_cancelled (GCancellable *cancellable,
                gpointer      data)
{
  WsCompletion *self = data;

  self->cancel_func (self);
}

static void
link_closure_notify (gpointer  data,
                     GClosure *closure)
{
  WsCompletion *self = data;

  /* The closure's reference keeps @self (the GTask's data) alive. */
  g_object_unref (self->task);
}

/* C5: connect @cancellable to the completion, before anything can claim.
 * @func runs on the cancelling thread (or here, if @cancellable is
 * cancelled already): the owner's rule, then its claim. The GTask form
 * only. */
void
ws_completion_connect (WsCompletion           *self,
                       GCancellable           *cancellable,
                       WsCompletionCancelFunc  func)
{
  g_assert (self->task != NULL);

  if (cancellable == NULL)
    return;
  /* Read only by the handler, which the connect below publishes. */
  self->cancel_func = func;
  g_object_ref (self->task);                    /* the closure's (C4) */
  ws_cancel_link_connect (&self->cancel, cancellable, link_cancelled, self,
                          link_closure_notify);
}

/* C1. seq_cst: a total order with the sleeps' arm-then-look (ws-sleep.c,
 * A3); acquire on success for what the starter wrote, and the winner's
 * writes reach the dispatch through the delivery queue's lock. */
gboolean
ws_completion_claim (WsCompletion *self)
{
  gint expected = COMPLETION_PENDING;

  return atomic_compare_exchange_strong_explicit (&self->state, &expected, COMPLETION_CLAIMED,
                                                  memory_order_seq_cst,
                                                  memory_order_seq_cst);
}

gboolean
ws_completion_is_claimed (WsCompletion *self)
{
  /* seq_cst: as the claim. */
  return atomic_load_explicit (&self->state, memory_order_seq_cst) == COMPLETION_CLAIMED;
}

/* C2: the winner of the claim, once. Takes @error. */
void
ws_completion_return (WsCompletion *self,
                      GError       *error)
{
  ws_cancel_link_disconnect (&self->cancel);
  self->error = error;
  /* Last touch of @self (C2). */
  ws_delivery_push (self->delivery, &self->item);
}

/* C1 and C2 together; FALSE, freeing @error, if another claimed first. */
gboolean
ws_completion_complete (WsCompletion *self,
                        GError       *error)
{
  if (!ws_completion_claim (self))
    {
      g_clear_error (&error);
      return FALSE;
    }
  ws_completion_return (self, error);
  return TRUE;
}
