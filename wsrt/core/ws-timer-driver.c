/* ws-timer-driver.c: timers of a GMainContext on a timing wheel
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A driver is one GSource on a GMainContext (one per context, owned by
 * the context: ws-context-source-private.h) that holds all the timers
 * armed through it in a hierarchical wheel (ws-timer-wheel.c) with 1 ms
 * ticks counted from the driver's creation. GLib walks every source of a
 * context on each iteration; with one source per context instead of one
 * per timer, an iteration costs the same with a million timers as with
 * one, and arming, moving or cancelling a timer is O(1).
 *
 * Where a timer goes: to a context that the task's host iterates for as
 * long as the task can wait, never to one that only the arming thread
 * happens to have (doc/architecture.md, "Rules: timers").
 *
 *  - A task polled by a worker: the driver of the worker core's context
 *    (cached in the core), iterated by whichever thread runs the core
 *    until shutdown.
 *  - A task whose poll carries on after ws_block_in_place (): the context
 *    of the core it handed off (ws_thread.host_context), not the private
 *    context the thread took, which dies with the thread.
 *  - A local task: its executor's context (ws_thread.host_context during
 *    the dispatch), whatever the thread's default is; so a local task's
 *    sleep needs no worker thread.
 *  - A blocking job: the first worker's context (the job's thread
 *    iterates no context while it runs, and may retire afterwards); the
 *    pool's threads are started for it.
 *  - An async wait (ws-sleep.c): its GTask's context, where the callback
 *    is owed anyway.
 *  - Anything else: the thread-default context, else the global default.
 *
 * Wakers work from any thread, so a task that moves to another thread
 * after arming is still woken where it runs.
 *
 * Driving: the context asks the driver, before each poll, how long it may
 * sleep (prepare: until the wheel's next expiration, in whole
 * milliseconds rounded up), and dispatches it when that time has come. A
 * worker iterates its context when it parks and, under load, at every
 * event interval, so timers are driven by the park and by maintenance.
 *
 * The protocol:
 *  D1 A driver's lock guards its wheel, `armed` and every bound timer's
 *     entry and waker. A timer's waker is set exactly while its entry is
 *     linked, so the wake of a timer is taken once: by the dispatch that
 *     expires it, or by the disarm or reset that unlinks it.
 *  D2 Nothing is woken under the lock: the dispatch steals up to a batch
 *     of wakers, unlocks, then wakes them, and never touches a timer's
 *     memory after unlocking (its owner may free it at once).
 *  D3 `armed` is the earliest tick the context will wake up for: prepare
 *     sets it (under the lock) to the next expiration it computed the
 *     poll timeout from. A timer placed earlier than `armed` lowers it and
 *     makes the source ready (g_source_set_ready_time (0), which wakes a
 *     context sleeping in poll, from any thread). A context that is not
 *     in poll prepares again before it sleeps, so either it computes its
 *     timeout with the new timer in the wheel or it is woken: no timer
 *     waits for a poll timeout computed without it.
 *  D4 Never early: a timer's tick is its deadline rounded up, and the
 *     dispatch expires only ticks at or before the iteration's clock
 *     rounded down. An arm that finds its tick already passed by the
 *     wheel (another thread dispatched with a later clock) reports the
 *     deadline as passed, which it is (ws_timer_driver_arm).
 *  D5 The deadline lives outside the lock (the owner reads it without
 *     the driver) and is read again under the lock by arm and reset. The
 *     owner binds to a driver once, by a compare-and-swap, before the
 *     first arm; a reset stores the deadline and then reads the binding
 *     (both seq_cst), so it either finds the driver and moves the timer
 *     under the lock, or the first arm, which reads the deadline after
 *     the binding, sees the new deadline (ws-sleep.c).
 *  D6 A bound owner holds a reference on its driver, so a driver outlives
 *     every timer in it; a context that is freed destroys its driver, and
 *     the timers still in it are dropped with their owners.
 *  D7 A timer's waker is opaque here: a polling task's
 *     (ws_timer_driver_arm) or any other WsWaker with its own vtable
 *     (ws_timer_driver_arm_waker; ws-sleep.c's async waits, whose wake
 *     completes a GTask). Nothing above changes with the kind: the slot
 *     holds one reference, taken under the lock, and whoever unlinks the
 *     timer takes it out (D1) and wakes or drops it outside the lock (D2).
 *     A later arm replaces the waker and drops the earlier one unwoken
 *     (one waiter per timer). A waiter that stops waiting uses the
 *     conditional disarm (ws_timer_driver_disarm_waker), which unlinks the
 *     timer only if the slot still holds that waiter's waker, so it never
 *     takes out the registration of a waiter that replaced it; a waiter
 *     that arms concurrently with its own end checks its end again after
 *     the arm and disarms itself conditionally (ws-sleep.c, A3).
 *  D8 Recursion: the source can recurse, and the wakers a dispatch took
 *     from the wheel wait in the driver, not on the dispatching stack,
 *     until they are woken. A wake that completes a GTask may run its
 *     callback at once, and that callback may iterate the context again
 *     (a nested main loop, a dialog run synchronously): the nested
 *     dispatch wakes the rest of the batch first, then expires what is
 *     due. Only the thread that owns the context dispatches it, so the
 *     batch needs no lock; prepare and check report a batch left over.
 *  D9 A dispatch by a worker of its own driver expires at most as many
 *     timers as its local queue has free slots, and at least one. Its
 *     wakes stay local (LIFO slot, then the run queue); past the queue's
 *     room they would overflow into the injection queue, behind every
 *     task spawned from outside and not polled yet, and their tasks would
 *     be polled long after the wake, their memory evicted meanwhile (with
 *     a million sleeps, about twice the work per sleep; doc/performance.md,
 *     "What each optimisation bought", 81eb9ac). What it leaves
 *     stays linked on the wheel's expired list with its waker, so D1-D7
 *     hold as before, and the wheel's next expiration is then its elapsed
 *     tick: prepare and check report the source ready, and the worker's
 *     next iteration (at the next maintenance, or before it parks, whose
 *     iteration does not sleep while a source is ready) expires more. At
 *     least one per dispatch: a queue kept full by tasks that yield does
 *     not hold timers back for good. Any other thread's dispatch has no
 *     bound (its wakes go to the injection queue anyway).
 *  D10 A disarm that finds the timer's waker slot empty returns without
 *     the lock (ws_timer_driver_disarm). The slot is written only under
 *     the lock, and with release, after the entry's links (D1: empty
 *     exactly while unlinked); the disarm reads it with acquire. It takes
 *     effect at that load, as if it had taken the lock there and found
 *     the timer unlinked: it cannot read an empty slot older than an arm
 *     its own thread made or was ordered after (coherence), and an arm
 *     concurrent with it may come before or after it either way. A
 *     disarm that reads the empty slot a dispatch left (D2) sees every
 *     write the dispatch made to the timer, and the dispatch never
 *     touches it again, so the owner may free the timer at once
 *     (ws_sleep_unref); every other access to a timer (arm, reset,
 *     conditional disarm) comes from a caller holding a reference on
 *     the owner, so not concurrent with its last unref. The poll that
 *     finds a fired sleep ready and the sleep's last unref thus take no
 *     lock: a timer costs the driver's lock at its arm and at its
 *     dispatch only.
 */

#include "config.h"

#include "ws-timer-driver-private.h"
#include "ws-context-source-private.h"
#include "ws-lock-private.h"
#include "ws-waker-private.h"
#include "ws-worker-private.h"
#include "ws-runtime-core-private.h"
#include "ws-thread-private.h"

#define USEC_PER_TICK 1000
/* Wakers taken per lock hold in a dispatch. */
#define WAKE_BATCH 64

struct _WsTimerDriver
{
  GSource       source;
  gint64        origin;              /* monotonic usec of tick 0 */
  WsLock        lock;                /* guards what follows (D1) */
  guint64       armed;               /* D3; G_MAXUINT64 when none */
  WsTimerWheel  wheel;
  /* D8: wakers taken from the wheel and not woken yet; only the thread
   * that dispatches the context touches them, so they need no lock. */
  WsWaker      *batch[WAKE_BATCH];
  guint         batch_next;
  guint         batch_len;
};

static inline WsTimer *
timer_of_entry (WsTimerEntry *entry)
{
  return (WsTimer *) ((guint8 *) entry - G_STRUCT_OFFSET (WsTimer, entry));
}

/* The waker slot, with the lock held. Relaxed: the lock orders it with
 * every other locked access. */
static inline WsWaker *
slot_get_locked (WsTimer *timer)
{
  return atomic_load_explicit (&timer->waker, memory_order_relaxed);
}

/* Release: publishes the entry's links, written before under the lock,
 * to a disarm that reads the slot without it (D10). */
static inline void
slot_set_locked (WsTimer *timer,
                 WsWaker *waker)
{
  atomic_store_explicit (&timer->waker, waker, memory_order_release);
}

static inline WsWaker *
slot_take_locked (WsTimer *timer)
{
  WsWaker *waker = slot_get_locked (timer);

  if (waker != NULL)
    slot_set_locked (timer, NULL);
  return waker;
}

/* The tick of a deadline, rounded up (D4). */
static inline guint64
tick_ceil (WsTimerDriver *self,
           gint64         usec)
{
  if (usec <= self->origin)
    return 0;
  return ((guint64) (usec - self->origin) + USEC_PER_TICK - 1) / USEC_PER_TICK;
}

/* The tick a clock reading is in, rounded down (D4). */
static inline guint64
tick_floor (WsTimerDriver *self,
            gint64         usec)
{
  if (usec <= self->origin)
    return 0;
  return (guint64) (usec - self->origin) / USEC_PER_TICK;
}

static gboolean
driver_prepare (GSource *source,
                gint    *timeout)
{
  WsTimerDriver *self = (WsTimerDriver *) source;
  gint64 now = g_source_get_time (source);
  guint64 next;
  gboolean ready = FALSE;

  if (self->batch_next < self->batch_len)
    {
      /* D8: an outer dispatch left wakers to wake. */
      *timeout = 0;
      return TRUE;
    }

  ws_lock_lock (&self->lock);
  next = ws_timer_wheel_next_expiration (&self->wheel);
  self->armed = next;
  if (next <= tick_floor (self, now))
    {
      *timeout = 0;
      ready = TRUE;
    }
  else
    {
      /* Nothing is due: the wheel moves to now (the poll returns no
       * entry), so timers armed from here on are placed from the current
       * tick, most of them on level 0 or 1. */
      (void) ws_timer_wheel_poll (&self->wheel, tick_floor (self, now));
    }
  if (next == G_MAXUINT64)
    *timeout = -1;
  else if (!ready)
    {
      gint64 wait_usec = self->origin + (gint64) next * USEC_PER_TICK - now;

      *timeout = (gint) MIN ((wait_usec + 999) / 1000, G_MAXINT);
    }
  ws_lock_unlock (&self->lock);
  return ready;
}

static gboolean
driver_check (GSource *source)
{
  WsTimerDriver *self = (WsTimerDriver *) source;
  gboolean ready;

  if (self->batch_next < self->batch_len)
    return TRUE;
  ws_lock_lock (&self->lock);
  ready = ws_timer_wheel_next_expiration (&self->wheel)
          <= tick_floor (self, g_source_get_time (source));
  ws_lock_unlock (&self->lock);
  return ready;
}

/* Wakes what is left of the batch (D8). A waker may complete a GTask
 * whose callback runs a nested main loop on this context; that loop's
 * dispatch carries on from the next waker. */
static void
wake_batch (WsTimerDriver *self)
{
  while (self->batch_next < self->batch_len)
    {
      WsWaker *waker = g_steal_pointer (&self->batch[self->batch_next]);

      self->batch_next++;
      ws_waker_take_and_wake (waker);
    }
}

/* D9: how many timers a dispatch may expire now. */
static guint
dispatch_limit (WsTimerDriver *self)
{
  WsWorker *w = ws_worker_get_current ();

  if (w == NULL || w->core.timers != self)
    return G_MAXUINT;
  return MAX (ws_local_queue_remaining (&w->core.queue), 1);
}

static gboolean
driver_dispatch (GSource     *source,
                 GSourceFunc  callback,
                 gpointer     user_data)
{
  WsTimerDriver *self = (WsTimerDriver *) source;
  guint64 now = tick_floor (self, g_source_get_time (source));
  guint limit;

  /* Cleared before the wheel is read: a ready time that another thread
   * sets from now on (D3) makes one more dispatch at worst. */
  if (g_source_get_ready_time (source) != -1)
    g_source_set_ready_time (source, -1);

  wake_batch (self);
  limit = dispatch_limit (self);
  do
    {
      WsTimerEntry *entry;
      guint n = 0;
      guint max = MIN (limit, WAKE_BATCH);

      ws_lock_lock (&self->lock);
      while (n < max && (entry = ws_timer_wheel_poll (&self->wheel, now)) != NULL)
        {
          WsTimer *timer = timer_of_entry (entry);
          WsWaker *waker = slot_take_locked (timer);

          /* The wake writes the waker's owner (a task's state, in the
           * waker's cache line): start the load now, so that it overlaps
           * the next entry's, which the walk of the list must wait for. */
          __builtin_prefetch (waker, 1);
          self->batch[n++] = waker;
        }
      ws_lock_unlock (&self->lock);

      limit -= n;
      self->batch_next = 0;
      self->batch_len = n;
      wake_batch (self);
    }
  while (self->batch_len == WAKE_BATCH && limit > 0);

  return G_SOURCE_CONTINUE;
}

static void
driver_finalize (GSource *source)
{
  WsTimerDriver *self = (WsTimerDriver *) source;

  /* D6: every owner dropped its reference, and with it its timer. The
   * lock is taken once so that TSan sees the last unlock of another
   * thread ordered before the clear (GLib's reference count is not
   * instrumented). */
  ws_lock_lock (&self->lock);
  g_assert (ws_timer_wheel_get_n_entries (&self->wheel) == 0);
  ws_lock_unlock (&self->lock);
  ws_lock_clear (&self->lock);
}

static GSourceFuncs driver_funcs = {
  driver_prepare, driver_check, driver_dispatch, driver_finalize, NULL, NULL,
};

static void
driver_setup (GSource *source)
{
  WsTimerDriver *self = (WsTimerDriver *) source;

  self->origin = g_get_monotonic_time ();
  ws_lock_init (&self->lock);
  self->armed = G_MAXUINT64;
  ws_timer_wheel_init (&self->wheel, 0);
  g_source_set_static_name (source, "[wsrt] timers");
  g_source_set_can_recurse (source, TRUE);
}

/* The drivers, one per context (ws-context-source-private.h). */
static WsContextSourceKind driver_kind =
  WS_CONTEXT_SOURCE_KIND_INIT (&driver_funcs, sizeof (WsTimerDriver), driver_setup);

/**
 * ws_timer_driver_ref_for_context:
 * @context: a context
 *
 * The driver of @context, made and attached if it has none.
 *
 * Returns: (transfer full): a driver
 */
WsTimerDriver *
ws_timer_driver_ref_for_context (GMainContext *context)
{
  return (WsTimerDriver *) ws_context_source_ref (&driver_kind, context);
}

/**
 * ws_timer_driver_ref_for_current_thread:
 *
 * The driver that timers armed on this thread belong to (see the opening
 * comment).
 *
 * Returns: (transfer full): a driver
 */
WsTimerDriver *
ws_timer_driver_ref_for_current_thread (void)
{
  WsWorker *w = ws_worker_get_current ();
  GMainContext *context;
  WsRuntimeCore *core;

  if (w != NULL)
    {
      /* The context owns the driver for as long as the core lives; the
       * cache borrows it. Only the thread running the core reads it. */
      if (w->core.timers == NULL)
        {
          w->core.timers = ws_timer_driver_ref_for_context (w->core.context);
          g_source_unref ((GSource *) w->core.timers);
        }
      g_source_ref ((GSource *) w->core.timers);
      return w->core.timers;
    }

  if (ws_thread.host_context != NULL)
    return ws_timer_driver_ref_for_context (ws_thread.host_context);

  core = ws_runtime_core_get_current ();
  if (core != NULL && ws_thread.blocking_pool != NULL)
    return ws_timer_driver_ref_for_context (ws_runtime_core_get_timer_context (core));

  context = g_main_context_get_thread_default ();
  if (context == NULL)
    context = g_main_context_default ();
  return ws_timer_driver_ref_for_context (context);
}

void
ws_timer_driver_unref (WsTimerDriver *self)
{
  g_source_unref ((GSource *) self);
}

/* D3: lowers `armed` if @tick is earlier; TRUE if the context must then
 * be woken. Called with the lock held. */
static inline gboolean
lower_armed_locked (WsTimerDriver *self,
                    guint64        tick)
{
  if (tick >= self->armed)
    return FALSE;
  self->armed = tick;
  return TRUE;
}

static inline void
wake_context (WsTimerDriver *self)
{
  g_source_set_ready_time ((GSource *) self, 0);
}

/* Stores a new reference to the waker in @timer's slot: the polling
 * task's (@cx) or @waker. Returns the waker it replaced, whose reference
 * the caller drops outside the lock. Called with the lock held. */
static inline WsWaker *
replace_waker_locked (WsTimer   *timer,
                      WsContext *cx,
                      WsWaker   *waker)
{
  WsWaker *old = slot_get_locked (timer);

  if (waker == NULL)
    {
      WsWaker *slot = old;

      (void) ws_waker_slot_replace (&slot, cx);
      slot_set_locked (timer, slot);
      return old;
    }
  waker->vtable->ref (waker);
  slot_set_locked (timer, waker);
  return old;
}

/* The body of both arms: @cx for a poll, @waker otherwise (D7). */
static gboolean
arm (WsTimerDriver         *self,
     WsTimer               *timer,
     const _Atomic gint64  *deadline,
     gint64                 now,
     WsContext             *cx,
     WsWaker               *waker)
{
  WsWaker *old = NULL;
  gboolean armed = TRUE, wake = FALSE;
  gint64 when_usec;
  guint64 tick;

  ws_lock_lock (&self->lock);
  /* seq_cst: D5, paired with the store in a reset. */
  when_usec = atomic_load_explicit (deadline, memory_order_seq_cst);
  tick = tick_ceil (self, when_usec);

  if (now < when_usec && ws_timer_entry_is_linked (&timer->entry)
      && timer->entry.when == tick)
    {
      /* Armed already for this deadline: only the waker may change. */
      old = replace_waker_locked (timer, cx, waker);
    }
  else
    {
      if (ws_timer_entry_is_linked (&timer->entry))
        ws_timer_wheel_remove (&self->wheel, &timer->entry);
      /* D4: if the wheel is past the tick, the deadline has passed. */
      if (now < when_usec && ws_timer_wheel_insert (&self->wheel, &timer->entry, tick))
        {
          old = replace_waker_locked (timer, cx, waker);
          wake = lower_armed_locked (self, timer->entry.when);
        }
      else
        {
          old = slot_take_locked (timer);
          armed = FALSE;
        }
    }
  ws_lock_unlock (&self->lock);

  if (old != NULL)
    old->vtable->unref (old);
  if (wake)
    wake_context (self);
  return armed;
}

/**
 * ws_timer_driver_arm:
 * @self: the driver @timer's owner is bound to
 * @timer: the timer
 * @deadline: the owner's deadline, read under the lock (D5)
 * @now: the caller's clock reading, before the call
 * @cx: the polling task
 *
 * Registers @cx's waker in @timer and links it to expire at the deadline
 * (or keeps it where it is if the deadline did not move). A timer whose
 * deadline has passed is unlinked instead.
 *
 * Returns: %FALSE if the deadline has passed (@timer is then unlinked and
 *   holds no waker)
 */
gboolean
ws_timer_driver_arm (WsTimerDriver         *self,
                     WsTimer               *timer,
                     const _Atomic gint64  *deadline,
                     gint64                 now,
                     WsContext             *cx)
{
  return arm (self, timer, deadline, now, cx, NULL);
}

/**
 * ws_timer_driver_arm_waker:
 * @self: the driver @timer's owner is bound to
 * @timer: the timer
 * @deadline: the owner's deadline, read under the lock (D5)
 * @now: the caller's clock reading, before the call
 * @waker: the waker to register; the timer takes a reference of its own
 *
 * Like ws_timer_driver_arm (), for a waiter that is not a polling task
 * (D7): registers a new reference to @waker in @timer.
 *
 * Returns: %FALSE if the deadline has passed (@timer is then unlinked and
 *   holds no waker, and no reference to @waker was taken)
 */
gboolean
ws_timer_driver_arm_waker (WsTimerDriver         *self,
                           WsTimer               *timer,
                           const _Atomic gint64  *deadline,
                           gint64                 now,
                           WsWaker               *waker)
{
  return arm (self, timer, deadline, now, NULL, waker);
}

/**
 * ws_timer_driver_reset:
 * @self: the driver @timer's owner is bound to
 * @timer: the timer
 * @deadline: the owner's deadline, stored before the call (D5)
 *
 * Moves a linked timer to the current deadline; one that is not linked
 * is left alone (its owner arms it when it polls). A timer moved to a
 * tick the wheel has passed is woken now.
 */
void
ws_timer_driver_reset (WsTimerDriver         *self,
                       WsTimer               *timer,
                       const _Atomic gint64  *deadline)
{
  WsWaker *expired = NULL;
  gboolean wake = FALSE;

  ws_lock_lock (&self->lock);
  if (ws_timer_entry_is_linked (&timer->entry))
    {
      guint64 tick = tick_ceil (self, atomic_load_explicit (deadline,
                                                            memory_order_seq_cst));

      ws_timer_wheel_remove (&self->wheel, &timer->entry);
      if (ws_timer_wheel_insert (&self->wheel, &timer->entry, tick))
        wake = lower_armed_locked (self, timer->entry.when);
      else
        expired = slot_take_locked (timer);
    }
  ws_lock_unlock (&self->lock);

  ws_waker_take_and_wake (expired);
  if (wake)
    wake_context (self);
}

/**
 * ws_timer_driver_disarm:
 * @self: the driver @timer's owner is bound to
 * @timer: the timer
 *
 * Unlinks @timer and drops its waker, if it holds one. A timer that holds
 * none is left alone without the lock (D10): the caller may free it
 * afterwards.
 */
void
ws_timer_driver_disarm (WsTimerDriver *self,
                        WsTimer       *timer)
{
  WsWaker *old;

  /* Acquire: D10, the writes of the dispatch that emptied the slot. */
  if (atomic_load_explicit (&timer->waker, memory_order_acquire) == NULL)
    return;

  ws_lock_lock (&self->lock);
  if (ws_timer_entry_is_linked (&timer->entry))
    ws_timer_wheel_remove (&self->wheel, &timer->entry);
  old = slot_take_locked (timer);
  ws_lock_unlock (&self->lock);

  if (old != NULL)
    old->vtable->unref (old);
}

/**
 * ws_timer_driver_disarm_waker:
 * @self: the driver @timer's owner is bound to
 * @timer: the timer
 * @waker: the waker the caller registered
 *
 * Unlinks @timer and drops its waker only if that waker is still @waker
 * (D7): a waiter that stops waiting takes out its own registration, never
 * the one of a waiter that replaced it.
 *
 * Returns: whether @timer held @waker
 */
gboolean
ws_timer_driver_disarm_waker (WsTimerDriver *self,
                              WsTimer       *timer,
                              WsWaker       *waker)
{
  gboolean taken = FALSE;

  ws_lock_lock (&self->lock);
  if (slot_get_locked (timer) == waker)
    {
      /* D1: holding a waker, it is linked. */
      ws_timer_wheel_remove (&self->wheel, &timer->entry);
      slot_set_locked (timer, NULL);
      taken = TRUE;
    }
  ws_lock_unlock (&self->lock);

  if (taken)
    waker->vtable->unref (waker);
  return taken;
}

/**
 * ws_timer_driver_get_n_timers:
 * @self: a driver
 *
 * Returns: how many timers are linked to @self now
 */
gsize
ws_timer_driver_get_n_timers (WsTimerDriver *self)
{
  gsize n;

  ws_lock_lock (&self->lock);
  n = ws_timer_wheel_get_n_entries (&self->wheel);
  ws_lock_unlock (&self->lock);
  return n;
}
