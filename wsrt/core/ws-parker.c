/* ws-parker.c: parking = iterating the worker's own GMainContext
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * While a worker sleeps it still dispatches its context, so a
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
/* Wakes the iteration at the deadline; nothing else. */
static gboolean
deadline_dispatch (GSource     *source,
                   GSourceFunc  callback,
                   gpointer     user_data)
{
  g_source_set_ready_time (source, -1);
  return G_SOURCE_CONTINUE;
}

static GSourceFuncs deadline_funcs = {
  NULL, NULL, deadline_dispatch, NULL, NULL, NULL,
};

/* Sleeps, dispatching the context, until unparked or until @deadline
 * (monotonic time; -1: none). Returns TRUE if it took a notification. */
gboolean
ws_parker_park_until (WsParker *self,
                      gint64    deadline)
{
  gint expected = NOTIFIED;
  GSource *timer = NULL;
  gboolean notified;

  WS_CHAOS_POINT ();

  /* Acquire on taking a notification: everything the unparker did before
   * unpark() (queued a task, set shutdown) is visible after we return. */
  if (atomic_compare_exchange_strong_explicit (&self->state, &expected, EMPTY,
                                               memory_order_acquire,
                                               memory_order_relaxed))
    return TRUE;

  expected = EMPTY;
  if (!atomic_compare_exchange_strong_explicit (&self->state, &expected, PARKED,
                                                memory_order_relaxed,
                                                memory_order_relaxed))
    {
      /* Notified in between. */
      atomic_exchange_explicit (&self->state, EMPTY, memory_order_acquire);
      return TRUE;
    }

  WS_CHAOS_POINT ();

  if (deadline >= 0)
    {
      timer = g_source_new (&deadline_funcs, sizeof (GSource));
      g_source_set_static_name (timer, "[wsrt] park deadline");
      g_source_set_ready_time (timer, deadline);
      g_source_attach (timer, self->context);
    }

  for (;;)
    {
      g_main_context_iteration (self->context, TRUE);

      expected = NOTIFIED;
      if (atomic_compare_exchange_strong_explicit (&self->state, &expected, EMPTY,
                                                   memory_order_acquire,
                                                   memory_order_relaxed))
        {
          notified = TRUE;
          break;
        }
      if (deadline >= 0 && g_get_monotonic_time () >= deadline)
        {
          /* Back to EMPTY, unless an unpark just came: then take it,
           * with the same acquire as above (EMPTY as well). A return at
           * the deadline took no wake (park () in ws-worker.c relies on
           * it). */
          expected = PARKED;
          notified = !atomic_compare_exchange_strong_explicit (&self->state, &expected, EMPTY,
                                                               memory_order_relaxed,
                                                               memory_order_relaxed);
          if (notified)
            atomic_exchange_explicit (&self->state, EMPTY, memory_order_acquire);
          break;
        }
      /* A source was dispatched (a timer, a GIO callback): keep sleeping. */
    }

  if (timer != NULL)
    {
      g_source_destroy (timer);
      g_source_unref (timer);
    }
  return notified;
}

void
ws_parker_park (WsParker *self)
{
  ws_parker_park_until (self, -1);
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
