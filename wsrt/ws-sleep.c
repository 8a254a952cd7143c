/* ws-sleep.c: a sleep / deadline awaitable on the runtime's timer wheels
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A sleep is a timer (wsrt/core/ws-timer-driver.c) and a deadline. Ready
 * is decided by the clock alone, so a sleep never ends early and stays
 * ready until a reset moves its deadline. The first poll that finds it
 * not ready binds it to the timer driver of the polling thread, once
 * (protocol point D5 there): from then on its timer and the waker in it
 * are guarded by that driver's lock. The deadline is an atomic of its
 * own, stored by a reset before the reset reads the binding, and read by
 * every arm under the driver's lock after the binding (both seq_cst):
 * whichever of the two comes second sees the other, so a reset racing
 * the first poll is never lost.
 *
 * Layout: 56 bytes (a 64-byte heap block) per sleep, the wheel's links
 * included.
 */

#include "config.h"

#include <stdatomic.h>

#include "ws-sleep.h"
#include "ws-context.h"
#include "ws-context-budget-private.h"
#include "ws-timer-driver-private.h"

struct _WsSleep
{
  WsTimer                   timer;         /* guarded by the driver's lock */
  _Atomic gint64            deadline;
  WsTimerDriver *_Atomic    driver;        /* bound once, at the first arm */
  gatomicrefcount           ref_count;
};

/**
 * WsSleep:
 *
 * An awaitable that becomes ready at a deadline on the monotonic clock
 * (g_get_monotonic_time()).
 *
 * ```c
 * // in a task's state: WsSleep *nap = ws_sleep_new (50 * G_TIME_SPAN_MILLISECOND);
 * if (ws_sleep_poll (state->nap, cx) == WS_POLL_PENDING)
 *   return WS_POLL_PENDING;
 * ```
 *
 * For a timeout, poll the sleep next to the thing awaited and stop when
 * the sleep is ready first.
 *
 Any number of sleeps can be pending: the timers of a thread are kept in
 * a hierarchical timing wheel behind one #GSource on its #GMainContext,
 * so arming, resetting and dropping a sleep cost the same with a million
 * pending as with one.
 *
 * Precision: the wheel counts whole milliseconds and #GMainContext sleeps
 * in whole milliseconds, so a sleep ends between its deadline and about
 * 2 ms after it when the worker is idle. On a busy worker the context is
 * dispatched every [property@Ws.Runtime:event-interval] ticks, so the
 * delay also depends on how long the polls of that many tasks take. A
 * sleep never ends early.
 *
 * A task that is cancelled or dropped while it awaits a sleep drops its
 * sleep, and with it the timer.
 */

G_DEFINE_BOXED_TYPE (WsSleep, ws_sleep, ws_sleep_ref, ws_sleep_unref)

/**
 * ws_sleep_new:
 * @duration_usec: how long from now, in microseconds
 *
 * Creates a timer that a task awaits with [method@Ws.Sleep.poll].
 *
 * Returns: (transfer full): a sleep that is ready @duration_usec from now
 */
WsSleep *
ws_sleep_new (gint64 duration_usec)
{
  return ws_sleep_new_deadline (g_get_monotonic_time () + MAX (duration_usec, 0));
}

/**
 * ws_sleep_new_deadline:
 * @deadline_usec: when, in g_get_monotonic_time() units
 *
 * Creates a timer that is ready at @deadline_usec, on the clock of
 * g_get_monotonic_time().
 *
 * Returns: (transfer full): a sleep that is ready at @deadline_usec
 */
WsSleep *
ws_sleep_new_deadline (gint64 deadline_usec)
{
  WsSleep *self = g_new (WsSleep, 1);

  ws_timer_init (&self->timer);
  atomic_init (&self->deadline, deadline_usec);
  atomic_init (&self->driver, NULL);
  g_atomic_ref_count_init (&self->ref_count);
  return self;
}

/**
 * ws_sleep_ref:
 * @self: a #WsSleep
 *
 * Takes a reference on @self.
 *
 * Returns: (transfer full): @self
 */
WsSleep *
ws_sleep_ref (WsSleep *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  g_atomic_ref_count_inc (&self->ref_count);
  return self;
}

/**
 * ws_sleep_unref:
 * @self: (transfer full): a #WsSleep
 *
 * Releases a reference; the last one cancels the timer.
 */
void
ws_sleep_unref (WsSleep *self)
{
  WsTimerDriver *driver;

  g_return_if_fail (self != NULL);

  if (!g_atomic_ref_count_dec (&self->ref_count))
    return;

  /* Acquire: pairs with the binding's compare-and-swap, for the driver's
   * memory (the last reference also orders it, but TSan does not see
   * GLib's count). */
  driver = atomic_load_explicit (&self->driver, memory_order_acquire);
  if (driver != NULL)
    {
      ws_timer_driver_disarm (driver, &self->timer);
      ws_timer_driver_unref (driver);
    }
  g_free (self);
}

/**
 * ws_sleep_get_deadline:
 * @self: a #WsSleep
 *
 * Gets the monotonic time at which the sleep is ready.
 *
 * Returns: the deadline, in g_get_monotonic_time() units
 */
gint64
ws_sleep_get_deadline (WsSleep *self)
{
  g_return_val_if_fail (self != NULL, 0);

  /* Relaxed: a value, with no memory behind it. */
  return atomic_load_explicit (&self->deadline, memory_order_relaxed);
}

/**
 * ws_sleep_reset:
 * @self: a #WsSleep
 * @deadline_usec: the new deadline, in g_get_monotonic_time() units
 *
 * Moves the deadline, also of a sleep that is already ready. Any thread
 * may call it, also while a task awaits the sleep: that task then wakes at
 * the new deadline (at once if it has passed), not at the old one.
 */
void
ws_sleep_reset (WsSleep *self,
                gint64   deadline_usec)
{
  WsTimerDriver *driver;

  g_return_if_fail (self != NULL);

  /* seq_cst store, then seq_cst load of the binding: the opening
   * comment's race with the first poll. */
  atomic_store_explicit (&self->deadline, deadline_usec, memory_order_seq_cst);
  driver = atomic_load_explicit (&self->driver, memory_order_seq_cst);
  if (driver != NULL)
    ws_timer_driver_reset (driver, &self->timer, &self->deadline);
}

/* Binds @self to the polling thread's driver, or to the one another
 * thread bound it to first. */
static WsTimerDriver *
bind_driver (WsSleep *self)
{
  WsTimerDriver *driver = ws_timer_driver_ref_for_current_thread ();
  WsTimerDriver *bound = NULL;

  /* seq_cst on success: the opening comment's race with a reset; acquire
   * on failure, for the winner's driver. */
  if (atomic_compare_exchange_strong_explicit (&self->driver, &bound, driver,
                                               memory_order_seq_cst,
                                               memory_order_acquire))
    return driver;
  ws_timer_driver_unref (driver);
  return bound;
}

/**
 * ws_sleep_poll:
 * @self: a #WsSleep
 * @context: the context of the task that awaits @self
 *
 * Awaits the sleep. Consumes one unit of the cooperative budget.
 *
 * Returns: %WS_POLL_READY once the deadline has passed
 */
WsPoll
ws_sleep_poll (WsSleep   *self,
               WsContext *context)
{
  WsTimerDriver *driver;
  gint64 now;

  g_return_val_if_fail (self != NULL, WS_POLL_READY);
  g_return_val_if_fail (context != NULL && context->task != NULL, WS_POLL_READY);

  if (!ws_context_poll_proceed (context))
    return WS_POLL_PENDING;

  now = g_get_monotonic_time ();
  driver = atomic_load_explicit (&self->driver, memory_order_acquire);
  /* seq_cst: a deadline read outside the lock only decides the fast
   * path; the arm reads it again under the lock. */
  if (now >= atomic_load_explicit (&self->deadline, memory_order_seq_cst))
    {
      if (driver != NULL)
        ws_timer_driver_disarm (driver, &self->timer);
      return WS_POLL_READY;
    }

  if (driver == NULL)
    driver = bind_driver (self);
  return ws_timer_driver_arm (driver, &self->timer, &self->deadline, now, context)
         ? WS_POLL_PENDING : WS_POLL_READY;
}
