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
 * ws_sleep_wait_async () waits on a main context: the wait is a timer
 * like a poll's, on the same driver, whose waker completes a GTask
 * instead of waking a task (D7 in ws-timer-driver.c). No GSource per wait
 * and no registry: a context with 10,000 pending waits has one timer
 * source, and a reset moves the wait by the driver's reset, as it moves a
 * poll. An AsyncWait is 48 bytes plus its GTask. What holds:
 *
 *  A1 One completion: the wait's WsCompletion (ws-completion.c), claimed
 *     once and delivered on the caller's context. Whoever claims first
 *     completes: the wake (a due tick: D4 makes it never
 *     early), the cancellable's handler, or the driver dropping its last
 *     reference without a wake (the slot was taken by a later waiter on
 *     the same sleep, or a poll that found the sleep ready disarmed it).
 *     The others find it claimed and do nothing. A drop completes with
 *     TRUE if the deadline has passed, else with WS_ERROR_FAILED: a
 *     sleep has one waiter at a time, and a wait replaced before its
 *     deadline must not hang.
 *  A2 Never early, also against a reset that moves the deadline later
 *     between the tick that expired the timer and the wake: the wake
 *     reads the clock and the deadline again, and if the deadline is
 *     ahead it arms the timer again instead of completing. `n_armed`
 *     counts the driver's references; a wake re-arms before the
 *     dispatch drops the reference it woke with, so it never reaches 0
 *     on the way, and 0 with the wait unclaimed means a drop (A1).
 *  A3 No stale registration. An arm (the first, or a wake's re-arm) that
 *     installed the waker loads the claim after the arm's unlock; a
 *     completer claims (seq_cst) and then takes its waker out with
 *     the conditional disarm (under the lock). Whichever lock hold
 *     comes second sees the other: the completer finds the waker and
 *     takes it, or the arm sees the claim and takes it out itself. So after
 *     the completion no timer holds the wait, and the wait's reference on
 *     its sleep (kept until the wait is freed, so the wake can read the
 *     deadline) makes no cycle: the sleep is freed when the wait ends
 *     and nobody else holds it.
 *  A4 The cancel is a "cancelled" signal handler, the cancel link that
 *     channels and the limiter use too (WsCancelLink, ws-cancel-link.c;
 *     the closure holding a reference on the wait), not a
 *     GCancellableSource: that is a GSource per wait on the caller's
 *     context again (10,000 waits with a promise's cancellable would put
 *     10,000 sources in every iteration's walk, the cost this design
 *     removes). The completer disconnects it with
 *     g_signal_handler_disconnect (), which never waits for a handler
 *     running on another thread (g_cancellable_disconnect () does, and
 *     deadlocks when called from the wrong place); a handler already
 *     running loses the claim and does nothing, and its closure keeps
 *     the wait alive until it returns. The handler claims
 *     G_IO_ERROR_CANCELLED on the cancelling thread; the callback still
 *     comes from the context's dispatch (A5).
 *  A5 The callback runs where GIO's do: on the thread-default context of
 *     the caller (the GTask's), never from inside the call: the claimer
 *     queues the completion on that context's delivery source, one
 *     source for every completion there, none of its own.
 */

#include "config.h"

#include <stdatomic.h>

#include "ws-sleep.h"
#include "ws-context.h"
#include "ws-core-private.h"
#include "ws-context-private.h"
#include "ws-completion-private.h"
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
  return ws_sleep_new_deadline (ws_time_deadline_after (g_get_monotonic_time (), duration_usec));
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
}

/* Binds @self to @driver (a reference, taken over), or to the one
 * another thread bound it to first: a poll's driver is its task's host's
 * (ws_timer_driver_ref_for_current_thread), an async wait's is its
 * GTask's context's. */
static WsTimerDriver *
bind_driver (WsSleep       *self,
             WsTimerDriver *driver)
{
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
  ws_context_return_val_if_not_in_poll (context, WS_POLL_READY);
  ws_context_note_await (context, G_STRFUNC);

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
    driver = bind_driver (self, ws_timer_driver_ref_for_current_thread ());
  return ws_timer_driver_arm (driver, &self->timer, &self->deadline, now, context)
         ? WS_POLL_PENDING : WS_POLL_READY;
}

/**
 * ws_sleep_race:
 * @self: (nullable): the deadline; %NULL for none
 * @context: the context of the task that awaits
 * @poll: what the awaited operation's poll function returned in this poll
 *   of the task
 * @timed_out: (out) (optional): %TRUE when the deadline came first
 *
 * "This, or give up at the deadline" for any awaitable, in a poll
 * function or a fiber (tokio's `timeout`, libdex's
 * `dex_future_with_timeout`): pass the result of the awaited poll
 * function, called in the same poll, and @self, made once with
 * [ctor@Ws.Sleep.new] and kept in the task's state.
 *
 * ```c
 * if (ws_sleep_race (st->deadline, cx, ws_join_handle_poll (st->child, cx),
 *                    &timed_out) == WS_POLL_PENDING)
 *   return WS_POLL_PENDING;
 * if (timed_out)
 *   ws_join_handle_cancel (st->child);      // the loser: cancel it
 * ```
 *
 * When @poll is %WS_POLL_READY the operation won: the sleep's timer is
 * disarmed, so it wakes nobody later. Otherwise the sleep is polled: once
 * its deadline has passed, the result is %WS_POLL_READY with @timed_out
 * set, and the operation is the loser, for the caller to cancel (its
 * cancel call: [method@Ws.JoinHandle.cancel], [method@Ws.Task.cancel], a
 * #GCancellable) or drop. While neither is ready both are armed, so
 * whichever comes first wakes the task.
 *
 * Returns: %WS_POLL_READY when the operation is ready or the deadline
 *   has passed; %WS_POLL_PENDING otherwise
 */
WsPoll
ws_sleep_race (WsSleep   *self,
               WsContext *context,
               WsPoll     poll,
               gboolean  *timed_out)
{
  if (timed_out != NULL)
    *timed_out = FALSE;
  ws_context_return_val_if_not_in_poll (context, WS_POLL_READY);
  g_return_val_if_fail (poll == WS_POLL_READY || poll == WS_POLL_PENDING, WS_POLL_READY);

  if (poll == WS_POLL_READY)
    {
      WsTimerDriver *driver = self != NULL
                              ? atomic_load_explicit (&self->driver, memory_order_acquire)
                              : NULL;

      if (driver != NULL)
        ws_timer_driver_disarm (driver, &self->timer);
      return WS_POLL_READY;
    }
  if (self == NULL || ws_sleep_poll (self, context) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  if (timed_out != NULL)
    *timed_out = TRUE;
  return WS_POLL_READY;
}

/* ---- waiting on a main context (A1-A5 in the opening comment) ------------ */

typedef struct
{
  WsWaker          waker;         /* the timer's while armed (D7) */
  WsCompletion     completion;    /* A1 */
  _Atomic guint    n_armed;       /* the driver's references (A2) */
  WsSleep         *sleep;         /* a reference, until freed (A3) */
  GTask           *task;          /* not a reference: we are its data */
} AsyncWait;

#define ASYNC_WAIT(w) ((AsyncWait *) (w))
#define ASYNC_WAIT_FROM_COMPLETION(c) \
  ((AsyncWait *) ((guint8 *) (c) - G_STRUCT_OFFSET (AsyncWait, completion)))

/* The GTask is finalized: A3, no timer holds the wait any more. */
static void
async_wait_free (gpointer data)
{
  AsyncWait *self = data;

  ws_sleep_unref (self->sleep);
  WS_COUNT_WAKERS (-1);
  g_free (self);
}

/* A1: only the winner of the claim calls this, once. Takes the waker out
 * of the timer if it is still there (A3), then returns the outcome, which
 * disconnects the cancel link (A4). Outside any lock. */
static void
async_wait_complete (AsyncWait *self,
                     GError    *error)
{
  WsTimerDriver *driver;

  /* A3, after the claim. Acquire: the binding's driver memory. */
  driver = atomic_load_explicit (&self->sleep->driver, memory_order_acquire);
  if (driver != NULL)
    ws_timer_driver_disarm_waker (driver, &self->sleep->timer, &self->waker);

  /* Last touch of @self: the delivery may free it. */
  ws_completion_return (&self->completion, error);
}

/* A1: TRUE for the caller that decides the completion (seq_cst, A3). */
static inline gboolean
async_wait_claim (AsyncWait *self)
{
  return ws_completion_claim (&self->completion);
}

static inline gboolean
async_wait_is_done (AsyncWait *self)
{
  return ws_completion_is_claimed (&self->completion);
}

static gboolean
async_wait_is_due (AsyncWait *self,
                   gint64     now)
{
  /* seq_cst: as every read of the deadline (D5). */
  return now >= atomic_load_explicit (&self->sleep->deadline, memory_order_seq_cst);
}

/* Arms the timer with the wait's waker; FALSE if the deadline has passed.
 * A3: an arm that finds the wait done afterwards takes the waker out. */
static gboolean
async_wait_arm (AsyncWait     *self,
                WsTimerDriver *driver,
                gint64         now)
{
  if (!ws_timer_driver_arm_waker (driver, &self->sleep->timer, &self->sleep->deadline, now,
                                  &self->waker))
    return FALSE;
  /* A3, after the arm's unlock. */
  if (async_wait_is_done (self))
    ws_timer_driver_disarm_waker (driver, &self->sleep->timer, &self->waker);
  return TRUE;
}

/* The timer's tick came (D4), or a reset moved the timer to a tick the
 * wheel has passed. Called with the driver's reference held. */
static void
async_wait_wake (WsWaker *waker)
{
  AsyncWait *self = ASYNC_WAIT (waker);
  gint64 now;

  if (async_wait_is_done (self))
    return;

  now = g_get_monotonic_time ();
  /* A2: a reset moved the deadline later after the tick: wait again. The
   * driver is bound (it woke us). */
  if (!async_wait_is_due (self, now)
      && async_wait_arm (self, atomic_load_explicit (&self->sleep->driver, memory_order_acquire),
                         now))
    return;

  if (async_wait_claim (self))
    async_wait_complete (self, NULL);
}

static void
async_wait_waker_ref (WsWaker *waker)
{
  AsyncWait *self = ASYNC_WAIT (waker);

  /* Relaxed: a count; the driver's lock orders it with the unref. */
  atomic_fetch_add_explicit (&self->n_armed, 1, memory_order_relaxed);
  g_object_ref (self->task);
}

static void
async_wait_waker_unref (WsWaker *waker)
{
  AsyncWait *self = ASYNC_WAIT (waker);
  GTask *task = self->task;

  /* AcqRel: the last of the driver's references sees the others' ends.
   * 0 with the wait unclaimed: the driver let go without a wake (A1, A2). */
  if (atomic_fetch_sub_explicit (&self->n_armed, 1, memory_order_acq_rel) == 1
      && !async_wait_is_done (self)
      && async_wait_claim (self))
    {
      if (async_wait_is_due (self, g_get_monotonic_time ()))
        async_wait_complete (self, NULL);
      else
        async_wait_complete (self,
                             g_error_new_literal (WS_ERROR, WS_ERROR_FAILED,
                                                  "Another wait or poll of the same WsSleep "
                                                  "replaced this wait before its deadline: a "
                                                  "sleep has one waiter at a time"));
    }
  g_object_unref (task);
}

static const WsWakerVTable async_wait_vtable = {
  async_wait_wake,
  async_wait_waker_ref,
  async_wait_waker_unref,
};

/* A4: on the cancelling thread, or in the starter for a cancellable that
 * was cancelled already. */
static void
async_wait_cancelled (WsCompletion *completion)
{
  AsyncWait *self = ASYNC_WAIT_FROM_COMPLETION (completion);

  if (async_wait_claim (self))
    async_wait_complete (self, g_error_new_literal (G_IO_ERROR, G_IO_ERROR_CANCELLED,
                                                    "The wait for the sleep was cancelled"));
}

static void
wait_start (WsSleep             *sleep,
            gpointer             source_tag,
            GCancellable        *cancellable,
            GAsyncReadyCallback  callback,
            gpointer             user_data)
{
  AsyncWait *self = g_new (AsyncWait, 1);
  g_autoptr(GTask) task = g_task_new (NULL, cancellable, callback, user_data);
  WsTimerDriver *driver;
  gint64 now;

  self->waker.vtable = &async_wait_vtable;
  atomic_init (&self->n_armed, 0);
  self->sleep = ws_sleep_ref (sleep);
  self->task = task;
  /* Named before the tag, which would name it otherwise. */
  g_task_set_name (task, "[wsrt] sleep");
  g_task_set_source_tag (task, source_tag);
  /* The completion decides (A1): a wait that ended stays ended. */
  g_task_set_check_cancellable (task, FALSE);
  g_task_set_task_data (task, self, async_wait_free);
  WS_COUNT_WAKERS (1);
  /* Publishes the fields above to the claimer, which may be a handler or
   * a wake on another thread: the claim's seq_cst CAS reads the state
   * this initialises, after the fields (A1). */
  ws_completion_init (&self->completion, task);

  /* Connected before the timer is armed: only the handler can complete
   * the wait before the link is in place (A4). */
  ws_completion_connect (&self->completion, cancellable, async_wait_cancelled);

  /* Deadline passed already, or the wheel is past its tick: complete
   * through the delivery, which calls back from the context, not from
   * here (A5). */
  now = g_get_monotonic_time ();
  if (!async_wait_is_done (self))
    {
      if (async_wait_is_due (self, now))
        {
          if (async_wait_claim (self))
            async_wait_complete (self, NULL);
        }
      else
        {
          /* Acquire: as in ws_sleep_poll (). */
          driver = atomic_load_explicit (&sleep->driver, memory_order_acquire);
          if (driver == NULL)
            driver = bind_driver (sleep, ws_timer_driver_ref_for_context (
                                           g_task_get_context (task)));
          if (!async_wait_arm (self, driver, now) && async_wait_claim (self))
            async_wait_complete (self, NULL);
        }
    }
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
 * The callback runs where GIO's do: on the context that was the calling
 * thread's thread-default when the wait began. In a task spawned with
 * [method@Ws.Runtime.spawn_promise] that is the worker's context, so the
 * code resumes on that worker. The wait is a timer on the runtime's
 * timing wheel, like a poll's: many thousands of pending waits on one
 * context cost its iterations nothing more.
 *
 * One waiter per sleep at a time: a later wait or poll of @self replaces
 * this one. A wait replaced before the deadline then fails with
 * %WS_ERROR_FAILED (it never hangs); one replaced after it ends with
 * %TRUE. The wait holds a reference on @self until it ends.
 *
 * A wait without @cancellable whose deadline never comes, or whose
 * context is never iterated again, holds the context until the process
 * ends: in a promise's work, pass the promise's cancellable, which the
 * runtime's shutdown cancels.
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
 *   %G_IO_ERROR_CANCELLED if the wait was cancelled, with
 *   %WS_ERROR_FAILED if another wait or poll of @self replaced it
 *   before the deadline
 */
gboolean
ws_sleep_wait_finish (WsSleep       *self,
                      GAsyncResult  *result,
                      GError       **error)
{
  g_return_val_if_fail (self != NULL, FALSE);
  g_return_val_if_fail (g_task_is_valid (result, NULL), FALSE);
  g_return_val_if_fail (g_task_get_source_tag (G_TASK (result)) == ws_sleep_wait_async
                        && ((AsyncWait *) g_task_get_task_data (G_TASK (result)))->sleep == self,
                        FALSE);

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
 * Unlike `Timeout.add ()`, which attaches a #GSource per call to the
 * global default context, the callback comes back to the caller's
 * context (in a task spawned with [method@Ws.Runtime.spawn_promise], the
 * worker's), and the wait is a timer on the runtime's timing wheel: no
 * source of its own.
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
