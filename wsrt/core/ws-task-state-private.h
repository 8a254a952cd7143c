/* ws-task-state-private.h: the state word of a task and its transitions
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Everything a task is, apart from its future and its outcome, is one
 * 64-bit word: six flags in the low byte, the reference count above them.
 * This comment is the word's normative description (doc/architecture.md,
 * "The task and its state word", points here). One word, so that
 * every transition is a single CAS or RMW: a flag and the reference it
 * carries change together or not at all, and no transition ever sees a
 * half-made one.
 *
 * Each transition is a pure function from the word it read to the word
 * it wants and an action that tells the caller what to do next (poll,
 * queue, free, nothing). ws_task_state_fetch_update_action () is the one
 * loop that applies it: load, compute, CAS; on a failed CAS recompute
 * from the word the CAS found. A transition may decline to write (the
 * action then describes the word as it was); it never has side effects,
 * since it may run several times for one transition. The caller acts
 * only on the action of the CAS that succeeded.
 *
 *   bits 63..8   the reference count (56 bits)
 *   bits 7, 6    unused
 *   bit 5        JOIN_WAKER      join_waker is set and is the completer's
 *   bit 4        JOIN_INTEREST   a join handle exists
 *   bit 3        CANCELLED
 *   bit 2        NOTIFIED        queued, or to be re-queued after the poll
 *   bit 1        COMPLETE
 *   bit 0        RUNNING         held by the one poller
 *
 * A reference is WS_STATE_REF_ONE (1 << 8). ws_raw_task_new () starts a
 * task at NOTIFIED with 1 reference (2 with a join handle).
 *
 * The transitions ("idle" is none of RUNNING, COMPLETE, NOTIFIED):
 *
 *   wake (ws_raw_task_wake_by_ref)
 *     idle                    +NOTIFIED, then schedule       +1 (queued)
 *     RUNNING, not NOTIFIED   +NOTIFIED                      none
 *     COMPLETE or NOTIFIED    nothing                        none
 *   cancel (ws_raw_task_cancel)
 *     idle                    +CANCELLED +NOTIFIED, schedule +1
 *     RUNNING or NOTIFIED     +CANCELLED +NOTIFIED           none
 *     COMPLETE or CANCELLED   nothing                        none
 *   transition_to_running
 *     NOTIFIED, not RUNNING/COMPLETE  +RUNNING -NOTIFIED     the queued
 *                                                            ref becomes
 *                                                            the poller's
 *     NOTIFIED and one ref only       the same, by a store   as above
 *     NOTIFIED, JOIN_INTEREST and     the same, by a store   as above
 *     two refs only, run nested by    (_running_awaited)
 *     the handle's owner
 *     RUNNING or COMPLETE     unchanged                      -1 (a stale
 *                                                            queued copy)
 *   transition_to_idle
 *     RUNNING, not CANCELLED  -RUNNING; if NOTIFIED,         kept if
 *                             schedule again                 NOTIFIED,
 *                                                            else -1
 *     RUNNING + CANCELLED     keeps RUNNING, cancel_task
 *     after a yield           as if NOTIFIED were set: the   kept
 *                             yield's wake, in the same CAS
 *   complete (ws-raw-task.c)
 *     RUNNING                 leave the registry, then       -1 poller,
 *                             XOR RUNNING|COMPLETE           -1 registry
 *                                                            if linked
 *     RUNNING, no JOIN_WAKER, the same XOR and the unref in  as above, in
 *     no other reference      one CAS (_and_unref)           the same CAS
 *     RUNNING, no handle, no  nothing written: the task is   all; freed
 *     ref but the completer's the completer's alone
 *     RUNNING, JOIN_INTEREST  the same, by a store           -1 poller
 *     and two refs only, run
 *     nested by the handle's
 *     owner
 *   transition_to_shutdown (ws_raw_task_shutdown)
 *     not RUNNING/COMPLETE    +CANCELLED +RUNNING,           the registry
 *                             cancel_task                    ref plays the
 *                                                            poller's
 *     otherwise               +CANCELLED                     none
 *   transition_to_shutdown_idle (ws_raw_task_shutdown_idle)
 *     idle                    +CANCELLED +RUNNING,           as above
 *                             cancel_task
 *     otherwise               +CANCELLED                     none
 *     (NOTIFIED is not idle: the holder of the queued instance,
 *     which may be a waker still on its way to the push, ends it)
 *
 * What the transitions keep, together (ws-raw-task.c states the rules of
 * a task they serve):
 *
 *  - RUNNING is set only where it was clear (transition_to_running,
 *    transition_to_shutdown), and cleared only by its holder
 *    (transition_to_idle, transition_to_complete): one poller at a time.
 *  - A task is queued only by its spawn or by the transition that moved
 *    it from idle to NOTIFIED (transition_to_notified_by_ref,
 *    transition_to_notified_and_cancel), and that transition adds the
 *    queued instance's reference in the same CAS.
 *  - COMPLETE is set once, by the holder of RUNNING, and never cleared;
 *    after it no transition queues the task or takes RUNNING.
 *  - JOIN_WAKER hands the task's join_waker field between the join
 *    handle (which writes it only while the bit is clear) and the
 *    completer (which reads it only if the word it replaced had the bit).
 *  - The reference count never goes below zero; the transition that
 *    drops the last reference reports it (a DEALLOC action, or TRUE from
 *    ws_task_state_ref_dec) and nobody touches the task after it.
 *  - A transition that drops references the caller still needs to act
 *    on the task is not made: the fused completion declines (SPLIT) when
 *    the completer would read join_waker after it, or note a zombie.
 *  - A transition is a plain store only where the word it loaded shows
 *    that nobody but the caller can write it before the store: the
 *    references it counts are all the caller's (taking or dropping one,
 *    or setting a bit, needs a reference or the join handle), and the
 *    handle, if any, belongs to a task the caller is running nested in
 *    (ws_raw_task_run_awaited: the owner of a handle is the only one who
 *    acts on it, ws-join-handle.c). models/task-state.pml, -DDETACHED and
 *    -DAWAITED, checks both kinds of store.
 *
 * The memory orders are those of doc/architecture.md, "Why each memory
 * order is what it is"; each transition states its own. They are
 * parameters of the loop, constants once it is inlined.
 *
 * Everything here is static inline: the transitions are on the path of
 * every poll and every wake.
 */

#pragma once

#include <stdatomic.h>

#include <glib.h>

#include "ws-chaos-private.h"

G_BEGIN_DECLS

/* State word layout. The flags sit in the low byte, the reference count
 * above it, so that every transition is one CAS on one word. */
#define WS_STATE_RUNNING       ((guint64) 1 << 0)  /* being polled; owns the stage */
#define WS_STATE_COMPLETE      ((guint64) 1 << 1)  /* the outcome is in the stage */
#define WS_STATE_NOTIFIED      ((guint64) 1 << 2)  /* queued, or to be re-queued */
#define WS_STATE_CANCELLED     ((guint64) 1 << 3)
#define WS_STATE_JOIN_INTEREST ((guint64) 1 << 4)  /* a join handle exists */
#define WS_STATE_JOIN_WAKER    ((guint64) 1 << 5)  /* join_waker is set */
#define WS_STATE_REF_SHIFT     8
#define WS_STATE_REF_ONE       ((guint64) 1 << WS_STATE_REF_SHIFT)

/* An invariant of the state word. It holds in every build, G_DISABLE_ASSERT
 * included (CONTRIBUTING.md, "Assertions"): a word that breaks one means
 * a task is polled twice, freed while referenced or completed twice, and
 * going on would corrupt memory that other threads use. */
#define WS_STATE_INVARIANT(expr) \
  G_STMT_START \
    { \
      if G_UNLIKELY (!(expr)) \
        g_error ("wsrt: task state invariant failed: %s", #expr); \
    } \
  G_STMT_END

/* The word itself. A plain atomic, so that code that only loads it (a
 * host that orders its own accesses on it) needs nothing from here. */
typedef _Atomic guint64 WsTaskState;

static inline guint64
ws_task_state_ref_count (guint64 word)
{
  return word >> WS_STATE_REF_SHIFT;
}

/* What a transition computed from one value of the word: the action for
 * the caller and, if @store, the word to write in its place. */
typedef struct
{
  guint    action;
  gboolean store;
  guint64  next;
} WsTaskStateStep;

static inline WsTaskStateStep
ws_task_state_step_store (guint    action,
                          guint64  next)
{
  return (WsTaskStateStep) { action, TRUE, next };
}

static inline WsTaskStateStep
ws_task_state_step_keep (guint action)
{
  return (WsTaskStateStep) { action, FALSE, 0 };
}

/* The one update loop (tokio's State::fetch_update_action). Loads the
 * word with @failure, as a failed CAS reads it: the first load and a
 * retry read the word for the same purpose. @transition is pure and may
 * run more than once; only the action of the step that was written, or
 * of the step that declined to write, is returned. The action is a
 * guint here only: each transition below returns it as its own enum,
 * marked G_GNUC_WARN_UNUSED_RESULT (tokio's #[must_use] on
 * TransitionToRunning, TransitionToIdle, ...), so that a caller names
 * every case it acts on and cannot drop one. */
G_ALWAYS_INLINE static inline guint
ws_task_state_fetch_update_action (WsTaskState      *state,
                                   WsTaskStateStep (*transition) (guint64 cur),
                                   memory_order      success,
                                   memory_order      failure)
{
  guint64 cur = atomic_load_explicit (state, failure);

  /* Between the load and the CAS: where a racing transition makes the
   * CAS fail and the loop recompute. */
  WS_CHAOS_POINT ();

  for (;;)
    {
      WsTaskStateStep step = transition (cur);

      if (!step.store)
        return step.action;
      if (atomic_compare_exchange_weak_explicit (state, &cur, step.next,
                                                 success, failure))
        return step.action;
    }
}

/* ---- creation ------------------------------------------------------- */

/* A new task: NOTIFIED (its spawn queues it), one reference for that
 * queued instance and one for the join handle if there is one. Relaxed:
 * the task is not shared yet; the queue push that publishes it is a
 * release. */
static inline void
ws_task_state_init (WsTaskState *state,
                    gboolean     join_interest)
{
  guint64 refs = join_interest ? 2 : 1;

  atomic_init (state,
               WS_STATE_NOTIFIED
               | (join_interest ? WS_STATE_JOIN_INTEREST : 0)
               | (refs << WS_STATE_REF_SHIFT));
}

static inline guint64
ws_task_state_load (WsTaskState  *state,
                    memory_order  order)
{
  return atomic_load_explicit (state, order);
}

/* A refused spawn with a join handle, never shared: ended as cancelled,
 * with the handle's reference alone left. Relaxed: not shared yet;
 * whoever receives the handle gets it through a release (the return of
 * the spawn, or a queue). */
static inline void
ws_task_state_store_refused (WsTaskState *state)
{
  atomic_store_explicit (state,
                         WS_STATE_COMPLETE | WS_STATE_CANCELLED | WS_STATE_JOIN_INTEREST
                         | ((guint64) 1 << WS_STATE_REF_SHIFT),
                         memory_order_relaxed);
}

/* ---- references ----------------------------------------------------- */

static inline void
ws_task_state_ref_inc (WsTaskState *state)
{
  /* Relaxed, as for any reference count increment: the caller already
   * holds a reference, so nothing needs to be made visible. */
  guint64 prev = atomic_fetch_add_explicit (state, WS_STATE_REF_ONE,
                                            memory_order_relaxed);

  WS_STATE_INVARIANT (ws_task_state_ref_count (prev) > 0);
}

/* Drops @n references; TRUE if they were the last (the caller frees the
 * task: tokio's transition_to_terminal when it follows completion). */
G_GNUC_WARN_UNUSED_RESULT static inline gboolean
ws_task_state_ref_dec (WsTaskState *state,
                       guint        n)
{
  /* Release so that our writes to the task happen before the free;
   * acquire (on the last one) so that the freeing thread sees everyone
   * else's writes. */
  guint64 prev = atomic_fetch_sub_explicit (state,
                                            (guint64) n * WS_STATE_REF_ONE,
                                            memory_order_acq_rel);
  guint64 refs = ws_task_state_ref_count (prev);

  WS_STATE_INVARIANT (refs >= n);
  return refs == n;
}

/* TRUE if the task is COMPLETE and the caller's reference is the only
 * one left: then the caller owns the task, as after a ref_dec that
 * returned TRUE, and frees it without writing the word. No reference can
 * appear after that: taking one needs one, and no transition queues a
 * COMPLETE task. Without COMPLETE the answer would not do: the poller
 * may still be on its way to drop its own reference. Acquire: the word
 * read is the last write of a chain in which each writer saw every
 * release before it: an RMW continues the release sequence, and the one
 * plain stores (a sole owner's first poll, transition_to_running; a
 * nested child's, transition_to_running_awaited) are made by a thread
 * that acquired every earlier release and passes them on by its own
 * later release RMWs, or by the release store of COMPLETE of a nested
 * child (transition_to_complete_and_unref with @awaited), made after an
 * acquire of the same word. So the caller sees every other holder's
 * writes before the free. */
static inline gboolean
ws_task_state_is_last_after_complete (WsTaskState *state)
{
  guint64 cur = atomic_load_explicit (state, memory_order_acquire);

  return (cur & WS_STATE_COMPLETE) && ws_task_state_ref_count (cur) == 1;
}

/* ---- polling -------------------------------------------------------- */

typedef enum
{
  WS_TO_RUNNING_SUCCESS,     /* RUNNING is ours: poll */
  WS_TO_RUNNING_CANCELLED,   /* RUNNING is ours, but cancelled: end it */
  WS_TO_RUNNING_FAILED,      /* a stale queued copy: its reference is gone */
  WS_TO_RUNNING_DEALLOC,     /* ... and it was the last: free the task */
} WsToRunning;

/* Invariant: only a queued (NOTIFIED) instance is run. From idle it takes
 * RUNNING and clears NOTIFIED, and the queued reference becomes the
 * poller's. If RUNNING or COMPLETE is set (shutdown took the task, or it
 * ended), the instance is stale: drop its reference, nothing else. */
static inline WsTaskStateStep
ws_task_state_to_running_step (guint64 cur)
{
  guint64 next;

  WS_STATE_INVARIANT (cur & WS_STATE_NOTIFIED);

  if (cur & (WS_STATE_RUNNING | WS_STATE_COMPLETE))
    {
      next = cur - WS_STATE_REF_ONE;
      return ws_task_state_step_store (ws_task_state_ref_count (next) == 0
                                       ? WS_TO_RUNNING_DEALLOC : WS_TO_RUNNING_FAILED,
                                       next);
    }

  next = (cur | WS_STATE_RUNNING) & ~WS_STATE_NOTIFIED;
  return ws_task_state_step_store ((cur & WS_STATE_CANCELLED)
                                   ? WS_TO_RUNNING_CANCELLED : WS_TO_RUNNING_SUCCESS,
                                   next);
}

G_GNUC_WARN_UNUSED_RESULT static inline WsToRunning
ws_task_state_transition_to_running (WsTaskState *state)
{
  /* A word of NOTIFIED and one reference, no other bit: a task never
   * shared, whose one reference is the queued instance the caller holds
   * (a detached task before its first poll: no handle, not in the task
   * registry, no waker yet). Nobody else can reach the word, so a store
   * takes RUNNING; the same word seen later in the modification order
   * would still be ours alone, as taking a reference needs one. Acquire
   * on the load, as below. Relaxed store: the wakers the poll makes
   * reach other threads through their own release. */
  if (atomic_load_explicit (state, memory_order_acquire)
      == (WS_STATE_NOTIFIED | WS_STATE_REF_ONE))
    {
      atomic_store_explicit (state, WS_STATE_RUNNING | WS_STATE_REF_ONE,
                             memory_order_relaxed);
      return WS_TO_RUNNING_SUCCESS;
    }

  /* Acquire: we must see everything the previous poller did to the
   * future (it released in transition_to_idle) and whatever the waker
   * published before its release in the wake. */
  return ws_task_state_fetch_update_action (state, ws_task_state_to_running_step,
                                            memory_order_acq_rel,
                                            memory_order_acquire);
}

typedef enum
{
  WS_TO_IDLE_OK,             /* idle; the poller's reference is gone */
  WS_TO_IDLE_NOTIFIED,       /* woken during the poll: queue it again */
  WS_TO_IDLE_DEALLOC,        /* idle, and that was the last reference */
  WS_TO_IDLE_CANCELLED,      /* RUNNING kept: end it now */
} WsToIdle;

/* Invariant: a wake during the poll re-polls exactly once. The holder of
 * RUNNING clears it; if NOTIFIED was set meanwhile its reference becomes
 * the queued instance's (the wake added none), otherwise it is dropped.
 * A cancelled task keeps RUNNING: its poller destroys the future. */
static inline WsTaskStateStep
ws_task_state_to_idle_step (guint64 cur)
{
  guint64 next;

  WS_STATE_INVARIANT (cur & WS_STATE_RUNNING);

  if (cur & WS_STATE_CANCELLED)
    return ws_task_state_step_keep (WS_TO_IDLE_CANCELLED);

  next = cur & ~WS_STATE_RUNNING;
  if (cur & WS_STATE_NOTIFIED)
    return ws_task_state_step_store (WS_TO_IDLE_NOTIFIED, next);

  next -= WS_STATE_REF_ONE;
  return ws_task_state_step_store (ws_task_state_ref_count (next) == 0
                                   ? WS_TO_IDLE_DEALLOC : WS_TO_IDLE_OK,
                                   next);
}

/* transition_to_idle for a poll that yielded (ws_context_yield (), or a
 * budget that ran out): the yield's wake of its own task is made here,
 * in this CAS, instead of by a CAS of its own during the poll. The same
 * word comes out: a wake of a RUNNING task only sets NOTIFIED
 * (to_notified_by_ref_step), and nobody acts on a running task's
 * NOTIFIED before its poller's transition_to_idle: another waker that
 * finds it clear sets it (and queues nothing, as when it is set), a
 * canceller sets it with CANCELLED, and CANCELLED decides first here as
 * in to_idle_step. Only the poller could make the yield's wake, so only
 * its own transition needs to know. One bus-locked instruction fewer a
 * yield; models/task-state.pml checks it (YIELD). */
static inline WsTaskStateStep
ws_task_state_to_idle_yielded_step (guint64 cur)
{
  return ws_task_state_to_idle_step (cur | WS_STATE_NOTIFIED);
}

/* The word of a child that its join handle's owner takes back from its
 * own worker to run nested in its await (ws_worker_run_awaited): queued,
 * a join handle, and two references, the queued instance's and the
 * handle's. See ws_task_state_transition_to_running_awaited. */
#define WS_STATE_AWAITED_FRESH \
  (WS_STATE_NOTIFIED | WS_STATE_JOIN_INTEREST | 2 * WS_STATE_REF_ONE)
/* The same child running, the queued reference now the poller's: the word
 * transition_to_running_awaited stores, and the one its completion may
 * replace by a store (transition_to_complete_and_unref, @awaited). */
#define WS_STATE_AWAITED_RUNNING \
  (WS_STATE_RUNNING | WS_STATE_JOIN_INTEREST | 2 * WS_STATE_REF_ONE)

/* transition_to_running for a task run nested by the owner of its join
 * handle (ws_worker_run_awaited), which holds the queued instance: the
 * awaiting task is below us on this thread's stack, inside
 * ws_join_handle_poll, and a handle is used by its owner only
 * (ws-join-handle.c), so nobody else can act on the handle meanwhile.
 * A word of exactly WS_STATE_AWAITED_FRESH then has no holder of a
 * reference but this thread: no waker (it would hold a third), not in
 * the task registry (ditto), no JOIN_WAKER, not cancelled. On the worker
 * pool that is a task never polled (a poll that returned PENDING bound
 * it to the registry). Nobody can write the word before we do (writing
 * needs a reference, or the handle), so a store takes RUNNING, as for
 * the detached task above. Acquire on the load, as below: it sees the
 * spawn's writes. Relaxed store, as the detached case. */
G_GNUC_WARN_UNUSED_RESULT static inline WsToRunning
ws_task_state_transition_to_running_awaited (WsTaskState *state)
{
  if (atomic_load_explicit (state, memory_order_acquire) == WS_STATE_AWAITED_FRESH)
    {
      atomic_store_explicit (state, WS_STATE_AWAITED_RUNNING, memory_order_relaxed);
      return WS_TO_RUNNING_SUCCESS;
    }
  return ws_task_state_transition_to_running (state);
}

G_GNUC_WARN_UNUSED_RESULT static inline WsToIdle
ws_task_state_transition_to_idle (WsTaskState *state,
                                  gboolean     yielded)
{
  /* Release: the next poller (on any thread) acquires in
   * transition_to_running and must see the future as we left it. */
  return ws_task_state_fetch_update_action (state,
                                            yielded ? ws_task_state_to_idle_yielded_step
                                                    : ws_task_state_to_idle_step,
                                            memory_order_acq_rel,
                                            memory_order_acquire);
}

/* ---- wake and cancel ------------------------------------------------ */

typedef enum
{
  WS_TO_NOTIFIED_DO_NOTHING,  /* running (its poller re-queues it), queued or ended */
  WS_TO_NOTIFIED_SUBMIT,      /* was idle: queue it, with the reference taken for it */
} WsToNotified;

/* Invariant: a task is queued at most once per wake cycle, and never
 * after it ended. Idle: set NOTIFIED and take a reference for the queued
 * instance; the caller queues it (SUBMIT). Running: set NOTIFIED only,
 * the poller re-queues it. NOTIFIED or COMPLETE already: nothing to do. */
static inline WsTaskStateStep
ws_task_state_to_notified_by_ref_step (guint64 cur)
{
  if (cur & (WS_STATE_COMPLETE | WS_STATE_NOTIFIED))
    return ws_task_state_step_keep (WS_TO_NOTIFIED_DO_NOTHING);

  if (cur & WS_STATE_RUNNING)
    return ws_task_state_step_store (WS_TO_NOTIFIED_DO_NOTHING, cur | WS_STATE_NOTIFIED);

  return ws_task_state_step_store (WS_TO_NOTIFIED_SUBMIT,
                                   (cur | WS_STATE_NOTIFIED) + WS_STATE_REF_ONE);
}

G_GNUC_WARN_UNUSED_RESULT static inline WsToNotified
ws_task_state_transition_to_notified_by_ref (WsTaskState *state)
{
  /* Release: whatever the waker wrote before waking (a channel slot, a
   * GIO result) must be visible to the poller, which acquires in
   * transition_to_running or transition_to_idle. Relaxed load and
   * failure: a wake that finds NOTIFIED or COMPLETE writes nothing, so it
   * publishes nothing. */
  return ws_task_state_fetch_update_action (state, ws_task_state_to_notified_by_ref_step,
                                            memory_order_acq_rel,
                                            memory_order_relaxed);
}

/* Invariant: cancel never destroys a future during a poll; it only sets
 * bits. Running or queued: set CANCELLED (and NOTIFIED), and whoever next
 * holds RUNNING ends the task. Idle: also take a reference and have the
 * caller queue it (WS_TO_NOTIFIED_SUBMIT), so that the task's own
 * executor destroys the future (on the owner thread for local tasks).
 * Complete or cancelled already: nothing. */
static inline WsTaskStateStep
ws_task_state_to_notified_and_cancel_step (guint64 cur)
{
  guint64 next = cur | WS_STATE_CANCELLED | WS_STATE_NOTIFIED;

  if (cur & (WS_STATE_COMPLETE | WS_STATE_CANCELLED))
    return ws_task_state_step_keep (WS_TO_NOTIFIED_DO_NOTHING);

  if (cur & (WS_STATE_RUNNING | WS_STATE_NOTIFIED))
    return ws_task_state_step_store (WS_TO_NOTIFIED_DO_NOTHING, next);

  return ws_task_state_step_store (WS_TO_NOTIFIED_SUBMIT, next + WS_STATE_REF_ONE);
}

G_GNUC_WARN_UNUSED_RESULT static inline WsToNotified
ws_task_state_transition_to_notified_and_cancel (WsTaskState *state)
{
  /* AcqRel for the same reasons as a wake. */
  return ws_task_state_fetch_update_action (state, ws_task_state_to_notified_and_cancel_step,
                                            memory_order_acq_rel,
                                            memory_order_relaxed);
}

typedef enum
{
  WS_TO_SHUTDOWN_MARKED,      /* CANCELLED set: its poller, its queued instance or nobody ends it */
  WS_TO_SHUTDOWN_RUNNING,     /* RUNNING is ours: end the task here */
} WsToShutdown;

/* Invariant: shutdown ends a task only by holding RUNNING. Sets
 * CANCELLED; if the task is idle (neither running nor complete) it also
 * takes RUNNING, and the caller ends it here (WS_TO_SHUTDOWN_RUNNING).
 * Otherwise the poller, or nobody (it has ended), sees CANCELLED. */
static inline WsTaskStateStep
ws_task_state_to_shutdown_step (guint64 cur)
{
  guint64 next = cur | WS_STATE_CANCELLED;

  if (cur & (WS_STATE_RUNNING | WS_STATE_COMPLETE))
    return ws_task_state_step_store (WS_TO_SHUTDOWN_MARKED, next);

  return ws_task_state_step_store (WS_TO_SHUTDOWN_RUNNING, next | WS_STATE_RUNNING);
}

G_GNUC_WARN_UNUSED_RESULT static inline WsToShutdown
ws_task_state_transition_to_shutdown (WsTaskState *state)
{
  /* Acquire: if we take RUNNING we own the future and must see the last
   * poller's writes (it released going idle). */
  return ws_task_state_fetch_update_action (state, ws_task_state_to_shutdown_step,
                                            memory_order_acq_rel,
                                            memory_order_relaxed);
}

/* Invariant: a walk of the worker pool's registry ends only tasks that
 * no queued instance stands for. Sets CANCELLED; takes RUNNING
 * (WS_TO_SHUTDOWN_RUNNING) only if the task is idle and not NOTIFIED. A NOTIFIED task has a
 * queued instance in a queue or in the hands of a waker between its CAS
 * and its push; that instance's holder ends it (a drain's
 * ws_raw_task_drop_queued, or the poller that finds CANCELLED), so a
 * waker's push always comes before the task ends (ws-worker-pool.c,
 * "Foreign pushes"). */
static inline WsTaskStateStep
ws_task_state_to_shutdown_idle_step (guint64 cur)
{
  guint64 next = cur | WS_STATE_CANCELLED;

  if (cur & (WS_STATE_RUNNING | WS_STATE_COMPLETE | WS_STATE_NOTIFIED))
    return ws_task_state_step_store (WS_TO_SHUTDOWN_MARKED, next);

  return ws_task_state_step_store (WS_TO_SHUTDOWN_RUNNING, next | WS_STATE_RUNNING);
}

G_GNUC_WARN_UNUSED_RESULT static inline WsToShutdown
ws_task_state_transition_to_shutdown_idle (WsTaskState *state)
{
  /* AcqRel, as transition_to_shutdown. */
  return ws_task_state_fetch_update_action (state, ws_task_state_to_shutdown_idle_step,
                                            memory_order_acq_rel,
                                            memory_order_relaxed);
}

/* ---- completion ----------------------------------------------------- */

/* Invariant: called by the holder of RUNNING with the outcome stored;
 * RUNNING and COMPLETE flip together, so no instant shows neither (a
 * shutdown would take the task) or both. Returns the word it replaced:
 * its JOIN_INTEREST and JOIN_WAKER say who gets the outcome and whether
 * the join waker is the completer's to wake. */
G_GNUC_WARN_UNUSED_RESULT static inline guint64
ws_task_state_transition_to_complete (WsTaskState *state)
{
  /* AcqRel: release publishes the stage (outcome) and the removal from
   * the task registry to the join handle, which reads them after an acquire
   * load that sees COMPLETE; acquire pairs with the handle's release
   * when it set JOIN_WAKER or dropped JOIN_INTEREST. */
  guint64 prev = atomic_fetch_xor_explicit (state,
                                            WS_STATE_RUNNING | WS_STATE_COMPLETE,
                                            memory_order_acq_rel);

  WS_STATE_INVARIANT (prev & WS_STATE_RUNNING);
  WS_STATE_INVARIANT (!(prev & WS_STATE_COMPLETE));
  return prev;
}

typedef enum
{
  WS_TO_COMPLETE_SPLIT,    /* nothing written: transition_to_complete, then the unref */
  WS_TO_COMPLETE_HANDLE,   /* done; the join handle's is the one reference left: hands off */
  WS_TO_COMPLETE_DEALLOC,  /* done; no reference left: drop the stage and free the task */
} WsToComplete;

/* The completion and the completer's unref of @n references in one CAS,
 * where nothing of the completer's is left to do between them. That is
 * so when the word it replaces has no JOIN_WAKER (the join waker, the
 * completer's to wake after COMPLETE, would be read from a task whose
 * last reference the handle may already have dropped) and holds no
 * reference beyond the @n and the join handle's (any other is a waker
 * held somewhere: the task becomes a zombie before its unref, which
 * touches it). Then after the CAS either the handle's reference alone
 * is left, and the completer never touches the task again, or none is,
 * and the completer is the task's only owner: it drops the stage
 * (nobody wants the outcome) and frees it. Otherwise nothing is written
 * (WS_TO_COMPLETE_SPLIT). Called by the holder of RUNNING with the
 * outcome stored. */
G_GNUC_WARN_UNUSED_RESULT static inline WsToComplete
ws_task_state_transition_to_complete_and_unref (WsTaskState *state,
                                                guint        n,
                                                gboolean     awaited)
{
  /* Acquire on the first load and on a failed CAS: the word decides
   * whether the completer may skip its second step, as the acquire of
   * transition_to_complete does. */
  guint64 cur = atomic_load_explicit (state, memory_order_acquire);

  /* No handle, no join waker and no reference but the @n: the caller
   * owns the task alone from this word on (taking a reference needs
   * one), and nobody will read the word again: nothing to write. The
   * acquire sees every earlier holder's writes: each decrement is a
   * release RMW, and the first poll's plain store, if any, came from this
   * thread or from one that acquired them and released again after it
   * (see ws_task_state_is_last_after_complete). */
  if (!(cur & (WS_STATE_JOIN_INTEREST | WS_STATE_JOIN_WAKER))
      && ws_task_state_ref_count (cur) == n)
    {
      WS_STATE_INVARIANT (cur & WS_STATE_RUNNING);
      return WS_TO_COMPLETE_DEALLOC;
    }

  /* Run nested by the owner of its handle (@awaited), with the poller's
   * reference and the handle's alone: no waker, no registry, no
   * JOIN_WAKER, not cancelled, not woken. The handle's owner is below us
   * on this stack and nobody else holds a reference, so nobody writes the
   * word between this load and the store: COMPLETE and the unref by a
   * store. Release: publishes the stage to whoever later reads the word
   * with acquire (the handle's owner, here or after it moved). */
  if (awaited && n == 1
      && cur == WS_STATE_AWAITED_RUNNING)
    {
      atomic_store_explicit (state, WS_STATE_COMPLETE | WS_STATE_JOIN_INTEREST | WS_STATE_REF_ONE,
                             memory_order_release);
      return WS_TO_COMPLETE_HANDLE;
    }

  WS_CHAOS_POINT ();

  for (;;)
    {
      guint64 handle = (cur & WS_STATE_JOIN_INTEREST) ? 1 : 0;
      guint64 next;

      WS_STATE_INVARIANT (cur & WS_STATE_RUNNING);
      WS_STATE_INVARIANT (!(cur & WS_STATE_COMPLETE));
      if ((cur & WS_STATE_JOIN_WAKER)
          || ws_task_state_ref_count (cur) != n + handle)
        return WS_TO_COMPLETE_SPLIT;
      next = (cur ^ (WS_STATE_RUNNING | WS_STATE_COMPLETE))
             - (guint64) n * WS_STATE_REF_ONE;
      /* AcqRel, as transition_to_complete and ws_task_state_ref_dec:
       * release publishes the stage and the registry removal to the
       * handle and our writes to whoever frees the task; acquire pairs
       * with the handle's release when it dropped JOIN_INTEREST, and,
       * on the last reference, with every other holder's release. */
      if (atomic_compare_exchange_weak_explicit (state, &cur, next,
                                                 memory_order_acq_rel,
                                                 memory_order_acquire))
        return handle ? WS_TO_COMPLETE_HANDLE : WS_TO_COMPLETE_DEALLOC;
    }
}

/* ---- the join side -------------------------------------------------- */

typedef enum
{
  WS_JOIN_WAKER_COMPLETE,     /* completed: join_waker stays the handle's; read the outcome */
  WS_JOIN_WAKER_OK,           /* JOIN_WAKER changed (set: the field is the completer's) */
} WsJoinWaker;

/* Invariant: the handle may own join_waker only while JOIN_WAKER is
 * clear, the completer only after it replaced a word with it set. Set
 * the bit unless the task completed (then WS_JOIN_WAKER_COMPLETE: the
 * handle keeps the field and reads the outcome). */
static inline WsTaskStateStep
ws_task_state_set_join_waker_step (guint64 cur)
{
  if (cur & WS_STATE_COMPLETE)
    return ws_task_state_step_keep (WS_JOIN_WAKER_COMPLETE);
  return ws_task_state_step_store (WS_JOIN_WAKER_OK, cur | WS_STATE_JOIN_WAKER);
}

G_GNUC_WARN_UNUSED_RESULT static inline WsJoinWaker
ws_task_state_set_join_waker (WsTaskState *state)
{
  /* Release: the completer reads join_waker after an acquire that sees
   * JOIN_WAKER. */
  return ws_task_state_fetch_update_action (state, ws_task_state_set_join_waker_step,
                                            memory_order_acq_rel,
                                            memory_order_acquire);
}

/* Takes JOIN_WAKER back so the handle may rewrite join_waker; fails
 * (WS_JOIN_WAKER_COMPLETE) once the task is complete: then the completer
 * owns the field. */
static inline WsTaskStateStep
ws_task_state_unset_join_waker_step (guint64 cur)
{
  if (cur & WS_STATE_COMPLETE)
    return ws_task_state_step_keep (WS_JOIN_WAKER_COMPLETE);
  return ws_task_state_step_store (WS_JOIN_WAKER_OK, cur & ~WS_STATE_JOIN_WAKER);
}

G_GNUC_WARN_UNUSED_RESULT static inline WsJoinWaker
ws_task_state_unset_join_waker (WsTaskState *state)
{
  /* Acquire: we are about to rewrite the field the completer may have
   * read; we only do so after it can no longer read it. */
  return ws_task_state_fetch_update_action (state, ws_task_state_unset_join_waker_step,
                                            memory_order_acq_rel,
                                            memory_order_acquire);
}

typedef enum
{
  WS_UNSET_JOIN_INTEREST_COMPLETE,    /* too late: the outcome is the handle's to drop */
  WS_UNSET_JOIN_INTEREST_OK,          /* the completer will drop the outcome */
  WS_UNSET_JOIN_INTEREST_TOOK_WAKER,  /* ... and join_waker is the handle's to release */
} WsUnsetJoinInterest;

/* Invariant: exactly one side drops the outcome. Before COMPLETE, the
 * handle clears JOIN_INTEREST (and takes JOIN_WAKER back with it), and
 * the completer, seeing no interest, drops the outcome. After COMPLETE
 * the completer left it, and the handle drops it. */
static inline WsTaskStateStep
ws_task_state_unset_join_interest_step (guint64 cur)
{
  WS_STATE_INVARIANT (cur & WS_STATE_JOIN_INTEREST);

  if (cur & WS_STATE_COMPLETE)
    return ws_task_state_step_keep (WS_UNSET_JOIN_INTEREST_COMPLETE);
  return ws_task_state_step_store ((cur & WS_STATE_JOIN_WAKER)
                                   ? WS_UNSET_JOIN_INTEREST_TOOK_WAKER
                                   : WS_UNSET_JOIN_INTEREST_OK,
                                   cur & ~(WS_STATE_JOIN_INTEREST | WS_STATE_JOIN_WAKER));
}

G_GNUC_WARN_UNUSED_RESULT static inline WsUnsetJoinInterest
ws_task_state_unset_join_interest (WsTaskState *state)
{
  /* AcqRel: release so that the completer (acquire) sees we no longer
   * want the outcome; acquire because we may also take back the join
   * waker, and on COMPLETE we read the stage. */
  return ws_task_state_fetch_update_action (state, ws_task_state_unset_join_interest_step,
                                            memory_order_acq_rel,
                                            memory_order_acquire);
}

G_END_DECLS
