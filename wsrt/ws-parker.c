/* ws-parker.c: parking = iterating the worker's own GMainContext
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * DESIGN 3: while a worker sleeps it still dispatches its context, so a
 * GIO callback, a timeout or a Vala coroutine resumed there runs (and
 * wakes its task) without any extra thread. Unparking is a flag plus
 * g_main_context_wakeup(), whose eventfd write is sticky: a wakeup sent
 * between our flag check and the poll makes the poll return at once.
 */

#include "config.h"

#include "ws-parker-private.h"
#include "ws-chaos-private.h"

enum
{
  EMPTY,
  PARKED,
  NOTIFIED,
};

void
ws_parker_init (WsParker     *self,
                GMainContext *context)
{
  atomic_init (&self->state, EMPTY);
  self->context = context;
}

/* Called by the thread that owns (has acquired) the context. */
void
ws_parker_park (WsParker *self)
{
  gint expected = NOTIFIED;

  WS_CHAOS_POINT ();

  /* Acquire on taking a notification: everything the unparker did before
   * unpark() (queued a task, set shutdown) is visible after we return. */
  if (atomic_compare_exchange_strong_explicit (&self->state, &expected, EMPTY,
                                               memory_order_acquire,
                                               memory_order_relaxed))
    return;

  expected = EMPTY;
  if (!atomic_compare_exchange_strong_explicit (&self->state, &expected, PARKED,
                                                memory_order_relaxed,
                                                memory_order_relaxed))
    {
      /* Notified in between. */
      atomic_exchange_explicit (&self->state, EMPTY, memory_order_acquire);
      return;
    }

  WS_CHAOS_POINT ();

  for (;;)
    {
      g_main_context_iteration (self->context, TRUE);

      expected = NOTIFIED;
      if (atomic_compare_exchange_strong_explicit (&self->state, &expected, EMPTY,
                                                   memory_order_acquire,
                                                   memory_order_relaxed))
        return;
      /* A source was dispatched (a timer, a GIO callback): keep sleeping. */
    }
}

void
ws_parker_unpark (WsParker *self)
{
  gint prev;

  WS_CHAOS_POINT ();

  /* Release: pairs with the acquire in park(). */
  prev = atomic_exchange_explicit (&self->state, NOTIFIED, memory_order_release);

  if (prev == PARKED)
    g_main_context_wakeup (self->context);
}
