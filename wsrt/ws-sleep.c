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
 *
 * ws_sleep_wait_async () waits on a main context instead, with a GSource
 * of its own on the caller's thread-default context, ready at the
 * deadline (g_source_set_ready_time () is on the same monotonic clock, and
 * GLib rounds the poll timeout up: never early). It does not go through
 * the timer driver, whose arm registers the waker of a polling task; a
 * wait_async has no task. What must hold for it:
 *
 *  W1 A reset is never lost. Every pending wait is in `waits` (by sleep)
 *     and counted in `n_waits`. A wait's ready time is set only under
 *     `waits_lock`, from the deadline read there. A wait registers
 *     (count increment, seq_cst, under the lock) and then reads the
 *     deadline; a reset stores the deadline and then reads the count (both
 *     seq_cst), and if it is not 0 sets the ready time of its sleep's
 *     waits under the lock: either the reset sees the wait and moves it,
 *     or the wait reads the new deadline. Resets that find no wait
 *     anywhere cost one load.
 *  W2 Never early: the dispatch reads the deadline again under the lock
 *     and re-arms if it was moved later.
 *  W3 A cancel makes the source ready (ready time 0) under the lock and
 *     marks the wait, so no reset or re-arm overwrites it; the dispatch
 *     disconnects the handler (outside the lock: a disconnect waits for a
 *     handler running on another thread, which may wait for the lock).
 *  W4 The GTask holds the caller's context, which holds the source, until
 *     the dispatch completes the task: a wait without a cancellable that
 *     never comes due keeps its context alive.
 */

#include "config.h"

#include <stdatomic.h>

#include "ws-sleep.h"
#include "ws-context.h"
#include "ws-context-budget-private.h"
#include "ws-timer-driver-private.h"
#include "ws-lock-private.h"
#include "ws-error.h"

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
 *
 * On a main loop, or in a Vala `async` method (in a task spawned with
 * [method@Ws.Runtime.spawn_promise] its context is the worker's), wait
 * with [method@Ws.Sleep.wait_async], or sleep for a while with
 * [func@Ws.Sleep.for_async]:
 *
 * ```vala
 * yield Ws.Sleep.for_async (50 * TimeSpan.MILLISECOND, promise.get_cancellable ());
 * ```
 */

G_DEFINE_BOXED_TYPE (WsSleep, ws_sleep, ws_sleep_ref, ws_sleep_unref)

static _Atomic guint n_waits;
static void rearm_waits (WsSleep *self);

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
 * may call it, also while a task awaits the sleep or a
 * [method@Ws.Sleep.wait_async] is pending: that task, or that callback,
 * then comes at the new deadline (at once if it has passed), not at the
 * old one.
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
  /* seq_cst: W1, after the store above. */
  if (atomic_load_explicit (&n_waits, memory_order_seq_cst) != 0)
    rearm_waits (self);
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

/* ---- waiting on a main context (W1-W4 in the opening comment) ------------ */

typedef struct
{
  GSource        source;
  WsSleep       *sleep;          /* a reference */
  GTask         *task;           /* until the dispatch completes it */
  GCancellable  *cancellable;    /* a reference, or NULL */
  gulong         cancelled_id;
  gboolean       registered;     /* in `waits`; under waits_lock */
  gboolean       cancelled;      /* under waits_lock (W3) */
} SleepWait;

static WsLock waits_lock = WS_LOCK_INIT;
static GHashTable *waits;        /* WsSleep * -> GSList of SleepWait *; under waits_lock */
/* n_waits (declared above ws_sleep_reset): the waits in `waits`. */

/* Sets the ready time of @w from its sleep's deadline; under waits_lock. */
static void
arm_locked (SleepWait *w)
{
  if (w->cancelled)
    return;
  /* seq_cst: W1, paired with the store in ws_sleep_reset (). */
  g_source_set_ready_time (&w->source,
                           atomic_load_explicit (&w->sleep->deadline, memory_order_seq_cst));
}

static void
register_wait (SleepWait *w)
{
  GSList *list;

  ws_lock_lock (&waits_lock);
  if (waits == NULL)
    waits = g_hash_table_new (NULL, NULL);
  /* seq_cst: W1, before the deadline is read in arm_locked (). */
  atomic_fetch_add_explicit (&n_waits, 1, memory_order_seq_cst);
  list = g_hash_table_lookup (waits, w->sleep);
  g_hash_table_insert (waits, w->sleep, g_slist_prepend (list, w));
  w->registered = TRUE;
  arm_locked (w);
  ws_lock_unlock (&waits_lock);
}

static void
unregister_wait (SleepWait *w)
{
  ws_lock_lock (&waits_lock);
  if (w->registered)
    {
      GSList *list = g_slist_remove (g_hash_table_lookup (waits, w->sleep), w);

      if (list != NULL)
        g_hash_table_insert (waits, w->sleep, list);
      else
        g_hash_table_remove (waits, w->sleep);
      w->registered = FALSE;
      /* Relaxed: W1 needs the increment ordered, not the decrement; a
       * reset that still counts this wait only takes the lock for
       * nothing. */
      atomic_fetch_sub_explicit (&n_waits, 1, memory_order_relaxed);
    }
  ws_lock_unlock (&waits_lock);
}

/* W1: moves the ready time of every wait on @self. */
static void
rearm_waits (WsSleep *self)
{
  ws_lock_lock (&waits_lock);
  if (waits != NULL)
    for (GSList *l = g_hash_table_lookup (waits, self); l != NULL; l = l->next)
      arm_locked (l->data);
  ws_lock_unlock (&waits_lock);
}

static void
on_wait_cancelled (GCancellable *cancellable,
                   gpointer      data)
{
  SleepWait *w = data;

  /* W3. The source is alive while the handler is connected. */
  ws_lock_lock (&waits_lock);
  w->cancelled = TRUE;
  g_source_set_ready_time (&w->source, 0);
  ws_lock_unlock (&waits_lock);
}

/* Completes the task: with TRUE once due, or an error. */
static void
finish_wait (SleepWait *w,
             GError    *error)
{
  GTask *task = g_steal_pointer (&w->task);

  unregister_wait (w);
  /* Outside waits_lock (W3). */
  if (w->cancelled_id != 0)
    {
      g_cancellable_disconnect (w->cancellable, w->cancelled_id);
      w->cancelled_id = 0;
    }
  if (error != NULL)
    g_task_return_error (task, error);
  else
    g_task_return_boolean (task, TRUE);
  g_object_unref (task);
}

static gboolean
sleep_wait_dispatch (GSource     *source,
                     GSourceFunc  callback,
                     gpointer     user_data)
{
  SleepWait *w = (SleepWait *) source;
  gboolean cancelled, due = FALSE;

  ws_lock_lock (&waits_lock);
  cancelled = w->cancelled;
  if (!cancelled)
    {
      /* W2. seq_cst: as in arm_locked (). */
      due = g_get_monotonic_time ()
            >= atomic_load_explicit (&w->sleep->deadline, memory_order_seq_cst);
      if (!due)
        arm_locked (w);
    }
  ws_lock_unlock (&waits_lock);

  if (!cancelled && !due)
    return G_SOURCE_CONTINUE;

  finish_wait (w, cancelled ? g_error_new_literal (G_IO_ERROR, G_IO_ERROR_CANCELLED,
                                                   "The sleep was cancelled")
                            : NULL);
  return G_SOURCE_REMOVE;
}

static void
sleep_wait_finalize (GSource *source)
{
  SleepWait *w = (SleepWait *) source;

  /* Destroyed before it was due: only if someone destroyed the context
   * while the GTask held it (W4), which GLib does not do. */
  if (w->task != NULL)
    finish_wait (w, g_error_new_literal (WS_ERROR, WS_ERROR_CLOSED,
                                         "The main context of the sleep's wait was destroyed"));
  g_clear_object (&w->cancellable);
  ws_sleep_unref (w->sleep);
}

static GSourceFuncs sleep_wait_funcs = {
  NULL, NULL, sleep_wait_dispatch, sleep_wait_finalize, NULL, NULL,
};

static void
wait_start (WsSleep             *self,
            gpointer             source_tag,
            GCancellable        *cancellable,
            GAsyncReadyCallback  callback,
            gpointer             user_data)
{
  GSource *source = g_source_new (&sleep_wait_funcs, sizeof (SleepWait));
  SleepWait *w = (SleepWait *) source;

  w->sleep = ws_sleep_ref (self);
  w->task = g_task_new (NULL, cancellable, callback, user_data);
  g_task_set_source_tag (w->task, source_tag);
  /* Compared by the finish function only, never dereferenced. */
  g_task_set_task_data (w->task, self, NULL);
  g_task_set_name (w->task, "[wsrt] sleep");
  g_source_set_static_name (source, "[wsrt] sleep wait");
  g_source_set_priority (source, G_PRIORITY_DEFAULT);

  register_wait (w);
  if (cancellable != NULL)
    {
      w->cancellable = g_object_ref (cancellable);
      /* Already cancelled: the handler runs now and makes the source
       * ready; it is still dispatched from the context, not from here. */
      w->cancelled_id = g_cancellable_connect (cancellable, G_CALLBACK (on_wait_cancelled),
                                               w, NULL);
    }
  g_source_attach (source, g_task_get_context (w->task));
  g_source_unref (source);
}

/**
 * ws_sleep_wait_async:
 * @self: a #WsSleep
 * @cancellable: (nullable): stops the wait (not the sleep)
 * @callback: (scope async) (closure user_data): called once the deadline
 *   has passed, or @cancellable was cancelled
 * @user_data: data for @callback
 *
 * Waits for the deadline without blocking, from a main loop or a Vala
 * `async` method. @callback runs exactly once, on the thread-default main
 * context of the caller, never from inside this call and never before the
 * deadline; call [method@Ws.Sleep.wait_finish] from it. A
 * [method@Ws.Sleep.reset] from any thread moves a pending wait to the new
 * deadline, as it moves a poll.
 *
 * In a task spawned with [method@Ws.Runtime.spawn_promise] the context is
 * the worker's, so the code resumes on that worker. The wait is a #GSource
 * of its own on the context, not a timer on the runtime's timing wheel:
 * many thousands of waits on one context make each of its iterations
 * slower, where as many sleeps polled by tasks do not.
 *
 * A wait without @cancellable whose context is never iterated again holds
 * the context until the process ends: in a promise's work, pass the
 * promise's cancellable, which the runtime's shutdown cancels.
 */
void
ws_sleep_wait_async (WsSleep             *self,
                     GCancellable        *cancellable,
                     GAsyncReadyCallback  callback,
                     gpointer             user_data)
{
  g_return_if_fail (self != NULL);
  g_return_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable));

  wait_start (self, ws_sleep_wait_async, cancellable, callback, user_data);
}

/**
 * ws_sleep_wait_finish:
 * @self: a #WsSleep
 * @result: the result given to the callback
 * @error: return location for a #GError
 *
 * Ends a [method@Ws.Sleep.wait_async].
 *
 * Returns: %TRUE once the deadline has passed; %FALSE with
 *   %G_IO_ERROR_CANCELLED if the wait was cancelled
 */
gboolean
ws_sleep_wait_finish (WsSleep       *self,
                      GAsyncResult  *result,
                      GError       **error)
{
  g_return_val_if_fail (self != NULL, FALSE);
  g_return_val_if_fail (g_task_is_valid (result, NULL), FALSE);
  g_return_val_if_fail (g_task_get_source_tag (G_TASK (result)) == ws_sleep_wait_async
                        && g_task_get_task_data (G_TASK (result)) == self, FALSE);

  return g_task_propagate_boolean (G_TASK (result), error);
}

/**
 * ws_sleep_for_async:
 * @duration_usec: how long from now, in microseconds
 * @cancellable: (nullable): stops the wait
 * @callback: (scope async) (closure user_data): called once @duration_usec
 *   has passed, or @cancellable was cancelled
 * @user_data: data for @callback
 *
 * Sleeps for @duration_usec without blocking: a new [struct@Ws.Sleep]
 * awaited with [method@Ws.Sleep.wait_async]. The callback runs on the
 * thread-default main context of the caller. In Vala:
 *
 * ```vala
 * yield Ws.Sleep.for_async (50 * TimeSpan.MILLISECOND, promise.get_cancellable ());
 * ```
 *
 * Unlike `Timeout.add ()`, which attaches to the global default context,
 * the callback comes back to the caller's context: in a task spawned with
 * [method@Ws.Runtime.spawn_promise], the worker's.
 */
void
ws_sleep_for_async (gint64               duration_usec,
                    GCancellable        *cancellable,
                    GAsyncReadyCallback  callback,
                    gpointer             user_data)
{
  g_autoptr(WsSleep) sleep = NULL;

  g_return_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable));

  sleep = ws_sleep_new (duration_usec);
  wait_start (sleep, ws_sleep_for_async, cancellable, callback, user_data);
}

/**
 * ws_sleep_for_finish:
 * @result: the result given to the callback
 * @error: return location for a #GError
 *
 * Ends a [func@Ws.Sleep.for_async].
 *
 * Returns: %TRUE once the time has passed; %FALSE with
 *   %G_IO_ERROR_CANCELLED if the wait was cancelled
 */
gboolean
ws_sleep_for_finish (GAsyncResult  *result,
                     GError       **error)
{
  g_return_val_if_fail (g_task_is_valid (result, NULL), FALSE);
  g_return_val_if_fail (g_task_get_source_tag (G_TASK (result)) == ws_sleep_for_async, FALSE);

  return g_task_propagate_boolean (G_TASK (result), error);
}
