/* binding.pml: which context a timer or a completion is bound to, and
 * who iterates that context
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * timer.pml proves that a timer armed on a driver fires, assuming the
 * driver's context is iterated for as long as the timer is armed. This
 * model checks that assumption for each place a task's timer can be
 * bound, and that a completion delivered through a shared source reaches
 * a callback that waits for it in a nested main loop. Mirrors:
 *  - ws_timer_driver_ref_for_current_thread (wsrt/core/ws-timer-driver.c,
 *    "Where a timer goes") and ws_thread.host_context, set by the local
 *    executor's dispatch (ws-local-executor.c, run_slice) and by
 *    ws_worker_hand_off_core (ws-worker.c) for the rest of the poll;
 *  - the contexts' lives: a worker core's context is iterated by whichever
 *    thread runs the core until shutdown, a local executor's by its owner;
 *    the private context of a thread that left ws_block_in_place () only
 *    while that thread lives (a thread the blocking pool does not adopt
 *    leaves as soon as the poll returns); worker 0's only once the
 *    workers have started (the default runtime starts none for local
 *    tasks);
 *  - D8 in ws-timer-driver.c and the batch of ws-delivery.c: a dispatch
 *    keeps the items it took in the source, takes the queue only when
 *    that batch is empty, may end its slice with items left, and the
 *    source can recurse;
 *  - ws_owed_drain (wsrt/core/ws-owed.c), called by
 *    drop_adopted_context (ws-worker.c) and a retiring blocking thread: a
 *    thread iterates its own context until GIO owes it nothing.
 *
 * Scenarios (one is chosen at the start, nondeterministically):
 *  LOCAL      a local task on a thread with no thread-default context
 *             sleeps; the runtime's workers may never start;
 *  HANDOFF    a worker task calls ws_block_in_place () and then sleeps in
 *             the same poll; its old thread may or may not be adopted;
 *  GIO        a worker task calls ws_block_in_place () and then starts a
 *             GIO call in the same poll: GIO completes it on the thread's
 *             private context, whatever wsrt binds (ws-owed.c); the
 *             thread may or may not be adopted;
 *  NESTED     two completions for one context; the first callback runs a
 *             nested main loop until the second has been delivered; the
 *             second may be queued before the first dispatch or during
 *             the nested loop.
 *
 * Property: in every end state the task has been woken (LOCAL, HANDOFF)
 * or both callbacks have run (NESTED): no wait is left to a context that
 * nobody iterates, or to a dispatch that cannot run.
 *
 * Broken variants, each must give a counterexample:
 *  -DBROKEN_THREAD_BOUND  the timer goes where the arming thread's defaults
 *                         say (worker 0 for a thread without a default,
 *                         the private context after a hand-off), as
 *                         before the host binding;
 *  -DBROKEN_NO_RECURSE    the shared source cannot recurse and its batch
 *                         lives on the dispatching stack;
 *  -DBROKEN_NO_DRAIN      a thread lets its private context go without
 *                         iterating it until GIO owes it nothing.
 */

#define LOCAL   0
#define HANDOFF 1
#define NESTED  2
#define GIO     3

/* Contexts. */
#define HOST    0      /* the local executor's, or the handed-off core's */
#define WORKER0 1      /* the first worker's */
#define PRIVATE 2      /* the private context of the thread that polls */
#define NONE    255

byte scenario;
bool armed[3];         /* a timer armed on that context */
bool woken;            /* the task's waker fired */
bool task_done;
bool workers_started;  /* worker 0's context is iterated */
bool private_alive;    /* the polling thread (and its context) lives */

/* NESTED: the queue of the shared source, the batch a dispatch took, and
 * the callbacks. */
byte queued;           /* items pushed, not taken */
byte batch;            /* taken by a dispatch, not delivered */
bool dispatching;      /* a dispatch of the source is on the stack */
bool first_done;
bool second_done;
bool second_pushed;

inline bind_timer (where)
{
#ifdef BROKEN_THREAD_BOUND
  if
  :: scenario == LOCAL -> where = WORKER0
  :: scenario == HANDOFF -> where = PRIVATE
  fi
#else
  where = HOST
#endif
}

proctype poller ()
{
  byte where = NONE;

  /* The poll arms the timer, returns PENDING, and the thread that ran it
   * goes on (a hand-off's old thread may leave at once). */
  if
  :: scenario == GIO -> where = PRIVATE     /* GIO's choice, not ours */
  :: else -> bind_timer (where)
  fi;
  armed[where] = true;
  if
  :: scenario == HANDOFF || scenario == GIO ->
       /* Not adopted: the thread goes, after draining what is owed to
        * its context. */
#ifndef BROKEN_NO_DRAIN
       (!armed[PRIVATE]);
#endif
       private_alive = false
  :: scenario == HANDOFF || scenario == GIO -> skip   /* adopted: lives on */
  :: scenario == LOCAL -> skip
  fi;
  woken;
  task_done = true
}

/* A context that is iterated from its start until the task is done. */
proctype iterate (byte ctx)
{
  do
  :: armed[ctx] -> armed[ctx] = false; woken = true
  :: task_done -> break
  od
}

/* Worker 0's context: iterated only once the workers start. */
proctype worker0 ()
{
  if
  :: workers_started ->
       do
       :: armed[WORKER0] -> armed[WORKER0] = false; woken = true
       :: task_done -> break
       od
  :: !workers_started -> skip
  fi
}

/* The private context: iterated while its thread lives. */
proctype private_context ()
{
  do
  :: private_alive && armed[PRIVATE] -> armed[PRIVATE] = false; woken = true
  :: !private_alive -> break
  :: task_done -> break
  od
}

/* ---- NESTED ------------------------------------------------------------ */

/* The context's thread: iterations of the shared source. The first item
 * delivered is the first callback, which iterates the context again (at
 * depth 1) until the second was delivered. */
proctype dispatch_context ()
{
  byte depth = 0;
  byte mine = 0;       /* BROKEN_NO_RECURSE: the batch on this stack */

  do
  :: first_done && second_done -> break
  :: else ->
     /* One iteration at the current depth: the source is ready if it has
      * items; a source that cannot recurse is blocked while it
      * dispatches. */
     atomic {
       (queued > 0 || batch > 0);
       dispatching = true;
#ifdef BROKEN_NO_RECURSE
       mine = queued; queued = 0
#else
       if
       :: batch == 0 -> batch = queued; queued = 0
       :: else -> skip
       fi
#endif
     };
     /* Deliver one by one. */
     do
#ifdef BROKEN_NO_RECURSE
     :: mine > 0 -> mine--;
#else
     :: batch > 0 -> batch--;
#endif
        if
        :: !first_done && depth == 0 ->
             /* The first callback: a nested loop until the second came. */
             depth = 1;
             do
             :: second_done -> break
             :: else ->
                atomic {
#ifdef BROKEN_NO_RECURSE
                  /* GLib blocks a non-recursive source while it
                   * dispatches; nothing else is ready: stuck. */
                  (false);
#endif
                  (queued > 0 || batch > 0);
                  if
                  :: batch == 0 -> batch = queued; queued = 0
                  :: else -> skip
                  fi
                };
                do
                :: batch > 0 -> batch--; second_done = true
                :: else -> break
                od
             od;
             depth = 0;
             first_done = true
        :: else -> second_done = true
        fi
#ifdef BROKEN_NO_RECURSE
     :: mine == 0 -> break
#else
     :: batch == 0 -> break
     :: batch > 0 && depth == 0 -> break      /* the slice's budget is spent */
#endif
     od;
     dispatching = false
  od
}

proctype pusher ()
{
  /* The first completion, then the second: before the first dispatch, or
   * while the first callback runs its nested loop. */
  queued++;
  if
  :: queued++; second_pushed = true
  :: dispatching -> queued++; second_pushed = true
  fi
}

init
{
  if
  :: scenario = LOCAL
  :: scenario = HANDOFF
  :: scenario = NESTED
  :: scenario = GIO
  fi;
  if
  :: workers_started = true
  :: workers_started = false
  fi;
  private_alive = true;

  if
  :: scenario == NESTED ->
       run dispatch_context ();
       run pusher ();
       (first_done && second_done)
  :: else ->
       run iterate (HOST);
       run worker0 ();
       run private_context ();
       run poller ();
       (task_done)
  fi;
  assert (scenario == NESTED || woken)
}
