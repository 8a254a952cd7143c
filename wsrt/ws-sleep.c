/* ws-sleep.c: a sleep / deadline awaitable driven by GMainContext
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The first poll attaches a GSource with a ready time to the context of the
 * thread that polls: the worker's own context on a worker (dispatched while
 * it sleeps and, under load, every event-interval ticks), the application's
 * context for a local task. When it fires it wakes the last waker
 * registered. A task that moves to another worker meanwhile is still woken:
 * wakers work from any thread.
 *
 * The waker of an awaiting task lives only in the timer, so a reset must
 * never drop a timer that holds one: it moves the ready time of the armed
 * timer instead (g_source_set_ready_time() locks the source's context and
 * wakes it, so any thread may call it). The task then wakes at the new
 * deadline, on the context its timer is attached to.
 */

#include "config.h"

#include "ws-sleep.h"
#include "ws-context.h"
#include "ws-lock-private.h"
#include "ws-context-budget-private.h"
#include "ws-runtime-core-private.h"
#include "ws-worker-private.h"

/* The timer's state lives in the GSource, which GLib keeps alive while it
 * dispatches: freeing the sleep from one thread while its timer fires on
 * another is then safe. */
typedef struct
{
  GSource   parent;
  WsLock    lock;            /* guards what follows */
  WsWaker  *waker;           /* the awaiting task's; taken when it fires */
  gboolean  fired;           /* dispatched: it will never wake again */
} SleepSource;

/* Lock order: WsSleep.lock, then SleepSource.lock; GLib's context lock is
 * taken under WsSleep.lock only (attach, destroy, set_ready_time), never
 * under SleepSource.lock, and GLib calls dispatch and finalize with it
 * released. */
struct _WsSleep
{
  gatomicrefcount   ref_count;
  WsLock            lock;            /* guards what follows */
  gint64            deadline;
  gboolean          fired;           /* a poll saw it ready; until a reset */
  SleepSource      *source;          /* armed timer, ready time = deadline */
};

static gboolean
sleep_source_dispatch (GSource     *source,
                       GSourceFunc  callback,
                       gpointer     user_data)
{
  SleepSource *ss = (SleepSource *) source;
  WsWaker *waker;

  ws_lock_lock (&ss->lock);
  ss->fired = TRUE;
  waker = g_steal_pointer (&ss->waker);
  ws_lock_unlock (&ss->lock);

  ws_waker_take_and_wake (waker);
  return G_SOURCE_REMOVE;
}

static void
sleep_source_finalize (GSource *source)
{
  SleepSource *ss = (SleepSource *) source;
  WsWaker *waker;

  /* The last reference can go on another thread than the last user of the
   * lock: a reset or a poll drops the sleep's reference while the
   * context's thread still holds GLib's for the dispatch. GLib's atomic
   * reference count orders the two, unseen by TSan in uninstrumented
   * GLib; taking the lock once makes that order visible to it (and the
   * waker, written under it, is read under it). Nobody else can take it
   * now: every reference is gone. */
  ws_lock_lock (&ss->lock);
  waker = g_steal_pointer (&ss->waker);
  ws_lock_unlock (&ss->lock);
  ws_lock_clear (&ss->lock);

  if (waker != NULL)
    ws_waker_unref (waker);
}

static GSourceFuncs sleep_source_funcs = {
  NULL, NULL, sleep_source_dispatch, sleep_source_finalize, NULL, NULL,
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
 * Precision: the timer is a #GSource with a ready time in microseconds, but
 * #GMainContext sleeps in whole milliseconds, so a sleep ends between its
 * deadline and about 1 ms after it when the worker is idle. On a busy
 * worker the context is dispatched every
 * [property@Ws.Runtime:event-interval] ticks, so the delay also depends on
 * how long the polls of that many tasks take. A sleep never ends early.
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
  WsSleep *self = g_new0 (WsSleep, 1);

  g_atomic_ref_count_init (&self->ref_count);
  self->deadline = deadline_usec;
  ws_lock_init (&self->lock);
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

static void
disarm_locked (WsSleep *self)
{
  if (self->source != NULL)
    {
      g_source_destroy ((GSource *) self->source);
      g_source_unref ((GSource *) self->source);
      self->source = NULL;
    }
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
  g_return_if_fail (self != NULL);

  if (!g_atomic_ref_count_dec (&self->ref_count))
    return;

  ws_lock_lock (&self->lock);
  disarm_locked (self);
  ws_lock_unlock (&self->lock);
  ws_lock_clear (&self->lock);
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
  gint64 deadline;

  g_return_val_if_fail (self != NULL, 0);

  ws_lock_lock (&self->lock);
  deadline = self->deadline;
  ws_lock_unlock (&self->lock);
  return deadline;
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
  g_return_if_fail (self != NULL);

  ws_lock_lock (&self->lock);
  self->deadline = deadline_usec;
  self->fired = FALSE;
  if (self->source != NULL)
    {
      SleepSource *ss = self->source;
      gboolean fired;

      ws_lock_lock (&ss->lock);
      fired = ss->fired;
      ws_lock_unlock (&ss->lock);

      if (fired)
        {
          /* Its dispatch took the waker and wakes the task, which polls
           * again and arms a timer for the new deadline. */
          disarm_locked (self);
        }
      else
        {
          /* Keep the timer and the waker in it; only its ready time
           * moves. A dispatch that GLib already decided on still runs
           * (it does not look at the ready time again), so the task may
           * wake at the old deadline: ws_sleep_poll() then sees from the
           * clock that the sleep is not ready and arms a new timer. A
           * past deadline becomes 0, "ready now" (-1 would be "never"). */
          g_source_set_ready_time ((GSource *) ss, MAX (deadline_usec, 0));
        }
    }
  ws_lock_unlock (&self->lock);
}

/* The context a timer of the calling thread belongs on. */
static GMainContext *
timer_context (void)
{
  WsWorker *w = ws_worker_get_current ();
  WsRuntimeCore *core;

  if (w != NULL)
    return w->core.context;

  /* Local executor: the application's context is the thread default. */
  core = ws_runtime_core_get_current ();
  if (core != NULL && g_main_context_get_thread_default () == NULL)
    {
      /* A blocking thread iterates no context: use the first worker's,
       * which its worker dispatches. */
      return ws_worker_pool_get_context (core->pool, 0);
    }
  return g_main_context_get_thread_default () ? g_main_context_get_thread_default ()
                                              : g_main_context_default ();
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
  WsWaker *old = NULL;
  WsPoll ret = WS_POLL_PENDING;

  g_return_val_if_fail (self != NULL, WS_POLL_READY);
  g_return_val_if_fail (context != NULL && context->task != NULL, WS_POLL_READY);

  if (!ws_context_poll_proceed (context))
    return WS_POLL_PENDING;

  ws_lock_lock (&self->lock);
  /* Ready is decided by the clock alone. A timer that fired says only
   * that its ready time passed, and a reset may have moved the deadline
   * later since. */
  if (!self->fired && g_get_monotonic_time () >= self->deadline)
    self->fired = TRUE;

  if (!self->fired && self->source != NULL)
    {
      SleepSource *ss = self->source;
      gboolean stale;

      ws_lock_lock (&ss->lock);
      stale = ss->fired;
      if (!stale)
        old = ws_waker_slot_replace (&ss->waker, context);
      ws_lock_unlock (&ss->lock);

      if (stale)
        {
          /* It fired after the clock read above (the deadline has passed
           * now), or for a deadline that a reset moved later. Either way
           * it will not wake us again. */
          disarm_locked (self);
          if (g_get_monotonic_time () >= self->deadline)
            self->fired = TRUE;
        }
    }

  if (!self->fired && self->source == NULL)
    {
      GSource *source = g_source_new (&sleep_source_funcs, sizeof (SleepSource));
      SleepSource *ss = (SleepSource *) source;

      /* The waker is in place before the timer is attached, so a dispatch
       * on the context's thread always finds it. The deadline is in the
       * future, so the ready time is never 0 or -1. */
      ws_lock_init (&ss->lock);
      old = ws_waker_slot_replace (&ss->waker, context);
      g_source_set_ready_time (source, self->deadline);
      g_source_set_static_name (source, "[wsrt] sleep");
      self->source = ss;
      g_source_attach (source, timer_context ());
    }

  if (self->fired)
    {
      disarm_locked (self);
      ret = WS_POLL_READY;
    }
  ws_lock_unlock (&self->lock);

  if (old != NULL)
    ws_waker_unref (old);
  return ret;
}
