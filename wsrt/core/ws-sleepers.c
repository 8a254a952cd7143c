/* ws-sleepers.c: idle coordination between workers
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Sleeping is expensive (about 24 us for a park/unpark round trip on this
 * kind of machine; doc/architecture.md, "Rules: main contexts"), so the
 * protocol wakes as few workers as it can without ever leaving work
 * behind:
 *
 *  - a worker with nothing to do "searches" (steals, reads the injection
 *    queue) before it parks, but only while fewer than half the workers
 *    search, so that thieves do not outnumber victims;
 *  - a new task wakes a parked worker only when nobody searches: a
 *    searcher will find it; the woken worker starts as a searcher;
 *  - a searcher that finds work and stops searching wakes the next one if
 *    it was the last and more work is in sight in any queue, so wakes
 *    chain one at a time;
 *  - every worker that parks looks at every queue first.
 *
 * The lost-wake argument is a Dekker pattern: a producer stores the task
 * (a seq_cst store of the injection queue's count of pushes, or a release
 * store of a run queue's tail), makes a seq_cst fence and reads this
 * state; a parker updates this state (seq_cst RMW), makes a seq_cst fence
 * and reads the queues. One of the two sees the other. A producer whose
 * store was the injection queue's seq_cst count needs no fence before its
 * seq_cst load of this state (ws_sleepers_worker_to_notify_after_sc): the
 * single total order of seq_cst operations keeps the two in program order,
 * and if the load comes before the parker's RMW in that order, the
 * parker's seq_cst load of the count comes after the store. (On x86 that
 * store is an xchg, a full barrier already; on ARMv8 an stlr, which a
 * later ldar cannot pass.) Where the producer notifies for a task
 * another thread pushed (a parker's or a searcher's look below), that
 * push happens before its fence through the acquire read of the queue,
 * which the fence rules of C11 as C++20 states them (P0668) order as
 * well.
 *
 * Tasks that move between queues keep the pair: a worker that takes a
 * batch from the injection queue into its run queue notifies for them
 * (take_injected, ws-worker.c), and so does a take-back that lowered a
 * run queue's tail and put it back (ws_worker_run_awaited); a thief's
 * tasks are in its own queue before its RMW of this state.
 *
 * Searchers. The pattern must hold for a task in a run queue too, not
 * only for the injection queue: a running worker that pushes to its own
 * queue (ws_worker_schedule_local) runs the task when its poll returns,
 * but that poll may block (a task that busy-waits for its child, which
 * /scheduling/blocked-worker-child-stolen expects another worker to
 * take). So each way a producer's look can leave the task to others is
 * paired with a look at every run queue:
 *  - the look sees a worker unparked: that worker's park is later in the
 *    seq_cst order, and its look at every queue (park, ws-worker.c) sees
 *    the task. A parker that looked at the injection queue only would
 *    strand it;
 *  - the look sees a worker searching: that searcher's RMW when it stops
 *    searching is later, and its look at every queue after a fence
 *    (transition_from_searching, ws-worker.c) sees the task and wakes a
 *    sleeper if one is needed; or it parks, and looks as above. Looking
 *    at its own queue and the injection queue only would leave the task
 *    if the searcher's own task then blocks too.
 * models/park.pml checks both with a spawner that blocks until its child
 * was taken (-DBROKEN_NONLAST_INJECT_ONLY strands the child; with three
 * workers and a second blocking task, so does
 * -DBROKEN_SEARCH_EXIT_OWN_ONLY), and the batch from the injection queue
 * (-DBROKEN_BATCH_NO_NOTIFY strands a task behind a blocking one).
 */

#include "config.h"

#include "ws-sleepers-private.h"
#include "ws-chaos-private.h"

#define SEARCH_MASK    0xffffu
#define UNPARK_SHIFT   16
#define UNPARK_ONE     (1u << UNPARK_SHIFT)

void
ws_sleepers_init (WsSleepers *self,
              guint   n_workers)
{
  g_assert (n_workers > 0 && n_workers < SEARCH_MASK);
  atomic_init (&self->state, n_workers << UNPARK_SHIFT);
  self->n_workers = n_workers;
  ws_lock_init (&self->lock);
  self->sleepers = g_new0 (guint, n_workers);
  self->n_sleepers = 0;
  self->is_sleeping = g_new0 (_Atomic gboolean, n_workers);
  for (guint i = 0; i < n_workers; i++)
    atomic_init (&self->is_sleeping[i], FALSE);
}

void
ws_sleepers_clear (WsSleepers *self)
{
  ws_lock_clear (&self->lock);
  g_free (self->sleepers);
  g_free ((gpointer) self->is_sleeping);
}

guint
ws_sleepers_n_searching (WsSleepers *self)
{
  return atomic_load_explicit (&self->state, memory_order_seq_cst) & SEARCH_MASK;
}

gboolean
ws_sleepers_transition_to_searching (WsSleepers *self)
{
  guint32 state = atomic_load_explicit (&self->state, memory_order_seq_cst);

  /* Racy by design (as in tokio): a few extra searchers are harmless, the
   * bound only keeps them from piling up. */
  if (2 * (state & SEARCH_MASK) >= self->n_workers)
    return FALSE;

  WS_CHAOS_POINT ();

  atomic_fetch_add_explicit (&self->state, 1, memory_order_seq_cst);
  return TRUE;
}

/* Returns TRUE if the caller was the last searcher: it must then wake
 * another worker if there may be work left. */
gboolean
ws_sleepers_transition_from_searching (WsSleepers *self)
{
  guint32 prev;

  WS_CHAOS_POINT ();

  prev = atomic_fetch_sub_explicit (&self->state, 1, memory_order_seq_cst);
  g_assert ((prev & SEARCH_MASK) > 0);
  return (prev & SEARCH_MASK) == 1;
}

/* Returns TRUE if the caller was the last searcher. */
gboolean
ws_sleepers_transition_to_parked (WsSleepers   *self,
                              guint     worker,
                              gboolean  is_searching)
{
  guint32 prev;

  WS_CHAOS_POINT ();

  ws_lock_lock (&self->lock);
  /* SeqCst RMW: first half of the parker's side of the Dekker pattern. */
  prev = atomic_fetch_sub_explicit (&self->state,
                                    UNPARK_ONE + (is_searching ? 1 : 0),
                                    memory_order_seq_cst);
  self->sleepers[self->n_sleepers++] = worker;
  atomic_store_explicit (&self->is_sleeping[worker], TRUE, memory_order_relaxed);
  ws_lock_unlock (&self->lock);

  return is_searching && (prev & SEARCH_MASK) == 1;
}

static gboolean
should_wake (guint32 state,
             guint   n_workers)
{
  return (state & SEARCH_MASK) == 0 && (state >> UNPARK_SHIFT) < n_workers;
}

/* Picks a parked worker to wake, if nobody searches. The caller has just
 * made a task visible; the seq_cst fence orders that store before our
 * read of the state. Returns the worker index or -1. */
gint
ws_sleepers_worker_to_notify (WsSleepers *self)
{
  atomic_thread_fence (memory_order_seq_cst);
  return ws_sleepers_worker_to_notify_after_sc (self);
}

/* As ws_sleepers_worker_to_notify (), for a caller whose task became
 * visible by a seq_cst store (the injection queue's count of pushes): a
 * seq_cst store and the seq_cst load of the state after it are ordered
 * by the single total order of seq_cst operations, as the fence orders a
 * release store (see the top of this file), so no fence is needed. */
gint
ws_sleepers_worker_to_notify_after_sc (WsSleepers *self)
{
  gint worker = -1;

  if (!should_wake (atomic_load_explicit (&self->state, memory_order_seq_cst),
                    self->n_workers))
    return -1;

  WS_CHAOS_POINT ();

  ws_lock_lock (&self->lock);
  if (should_wake (atomic_load_explicit (&self->state, memory_order_seq_cst),
                   self->n_workers)
      && self->n_sleepers > 0)
    {
      /* The woken worker counts as unparked and searching from now. */
      atomic_fetch_add_explicit (&self->state, UNPARK_ONE + 1, memory_order_seq_cst);
      worker = self->sleepers[--self->n_sleepers];
      atomic_store_explicit (&self->is_sleeping[worker], FALSE, memory_order_relaxed);
    }
  ws_lock_unlock (&self->lock);

  return worker;
}

gboolean
ws_sleepers_is_parked (WsSleepers *self,
                   guint   worker)
{
  gboolean sleeping;

  ws_lock_lock (&self->lock);
  sleeping = atomic_load_explicit (&self->is_sleeping[worker], memory_order_relaxed);
  ws_lock_unlock (&self->lock);

  return sleeping;
}

/* Removes @worker from the sleepers (shutdown, or a worker that found
 * work by itself while listed). Returns TRUE if it was listed; it then
 * counts as unparked and not searching. */
gboolean
ws_sleepers_unpark_worker_by_id (WsSleepers *self,
                             guint   worker)
{
  gboolean found = FALSE;

  WS_CHAOS_POINT ();

  ws_lock_lock (&self->lock);
  for (guint i = 0; i < self->n_sleepers; i++)
    {
      if (self->sleepers[i] == worker)
        {
          self->sleepers[i] = self->sleepers[--self->n_sleepers];
          atomic_store_explicit (&self->is_sleeping[worker], FALSE, memory_order_relaxed);
          atomic_fetch_add_explicit (&self->state, UNPARK_ONE, memory_order_seq_cst);
          found = TRUE;
          break;
        }
    }
  ws_lock_unlock (&self->lock);

  return found;
}
