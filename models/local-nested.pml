/* local-nested.pml: a local task whose poll runs a nested main loop on
 * its executor's own context
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Mirrors ws-local-executor.c ("Recursion"): local_schedule (push under
 * the lock, then arm the ready time if the queue was empty),
 * local_source_dispatch (clear the ready time, run_slice, which counts
 * itself in the executor's depth, re-arm if tasks remain),
 * local_source_prepare/check (while a slice is in progress, a non-empty
 * queue is ready) and
 * g_source_set_can_recurse; and the state word's deferral of a wake that
 * finds the task RUNNING (ws-raw-task.c: NOTIFIED, re-queued by the
 * poller once the poll has returned).
 *
 * Tasks: A's first poll wakes A itself, has a worker wake B, and runs a
 * nested loop on the context until B has ended; B was polled once before
 * and waits for that wake; C (present or not) is queued behind A, so the
 * worker's push of B may find the queue non-empty and not arm the
 * source. A slice ends after any poll (the frame budget).
 *
 * Properties: a task is polled only from the queue, never while its poll
 * runs (the assert in poll); every task ends (no invalid end state: a
 * context that waits with work nobody will dispatch is one); A's wake
 * during its poll is kept (A is polled a second time).
 *
 * Broken variants, each must give a counterexample:
 *  -DBROKEN_NO_RECURSE        the source cannot recurse: GLib blocks it
 *                             during its dispatch (as before);
 *  -DBROKEN_NO_PREPARE        it recurses, but only the ready time makes
 *                             it ready, which the outer dispatch cleared;
 *  -DBROKEN_REQUEUE_RUNNING   a wake of a running task queues it.
 */

#define IDLE     0
#define QUEUED   1
#define RUNNING  2
#define NOTIFIED 3     /* running, woken meanwhile */
#define DONE     4

#define A  0
#define B  1
#define C  2
#define NT 3

byte state[NT];
byte polls[NT];
chan q = [NT] of { byte };
bool ready;            /* the source's ready time is 0 */
byte level;            /* the executor's depth: dispatches on the owner's stack */
bool go_b;             /* A's poll has asked a worker to wake B */

/* The push of a wake (under the executor's lock in the code); returns in
 * @arm whether the queue was empty, so the waker arms the source after. */
inline push (t, arm)
{
  atomic {
    arm = (len (q) == 0);
    q!t
  }
}

/* A wake, by the owner or a worker: the state word decides. */
inline wake (t, arm)
{
  arm = false;
  atomic {
    if
    :: state[t] == IDLE -> state[t] = QUEUED; arm = (len (q) == 0); q!t
    :: state[t] == RUNNING ->
#ifdef BROKEN_REQUEUE_RUNNING
       arm = (len (q) == 0); q!t
#else
       state[t] = NOTIFIED
#endif
    :: else -> skip
    fi
  };
  if
  :: arm -> ready = true
  :: else -> skip
  fi
}

/* Whether an iteration of the context at the current level dispatches
 * the source. */
#ifdef BROKEN_NO_RECURSE
#define CAN_DISPATCH (level == 0 && ready)
#elif defined (BROKEN_NO_PREPARE)
#define CAN_DISPATCH (ready)
#else
#define CAN_DISPATCH (ready || (level > 0 && len (q) > 0))
#endif

/* The end of a poll of @t that returned @done (READY): a wake during the
 * poll queues the task again (on the owner: push, then arm). */
inline end_poll (t, done, arm)
{
  if
  :: state[t] == NOTIFIED && !done -> state[t] = QUEUED; push (t, arm);
     if
     :: arm -> ready = true
     :: else -> skip
     fi
  :: state[t] != NOTIFIED && !done -> state[t] = IDLE
  :: done -> state[t] = DONE
  fi
}

inline take (t)
{
  q?t;
  assert (state[t] == QUEUED);
  state[t] = RUNNING;
  polls[t]++
}

/* A nested slice (B and C only: A is running, and a pop of A fails the
 * assert in take). */
inline nested_slice ()
{
  ready = false;
  level++;
  do
  :: len (q) > 0 ->
     take (t2);
     end_poll (t2, (t2 == C || polls[t2] >= 2), arm2);
     if
     :: skip          /* the slice goes on */
     :: break         /* the budget is spent */
     fi
  :: else -> break
  od;
  level--;
  if
  :: len (q) > 0 -> ready = true
  :: else -> skip
  fi
}

/* A's first poll: wakes itself, has B woken, runs a nested loop until B
 * has ended. */
inline poll_a_first ()
{
  wake (A, arm);
  go_b = true;
  do
  :: state[B] == DONE -> break
  :: else -> CAN_DISPATCH; nested_slice ()
  od
}

proctype owner ()
{
  byte t, t2;
  bool arm, arm2;

  do
  :: state[A] == DONE && state[B] == DONE && (state[C] == DONE || state[C] == IDLE && polls[C] == 0) ->
     break
  :: else ->
     CAN_DISPATCH;
     ready = false;
     level++;
     do
     :: len (q) > 0 ->
        take (t);
        if
        :: t == A && polls[A] == 1 -> poll_a_first (); end_poll (A, false, arm)
        :: else -> end_poll (t, (t != B || polls[B] >= 2), arm)
        fi;
        if
        :: skip
        :: break
        fi
     :: else -> break
     od;
     level--;
     if
     :: len (q) > 0 -> ready = true
     :: else -> skip
     fi
  od;
  assert (polls[A] == 2)
}

proctype worker ()
{
  bool arm;

  go_b;
  wake (B, arm)
}

init
{
  bool arm;

  atomic {
    /* B ran once and waits; A is queued, C maybe behind it. */
    state[B] = IDLE; polls[B] = 1;
    state[A] = QUEUED; q!A;
    if
    :: state[C] = QUEUED; q!C
    :: skip
    fi;
    ready = true;
    run owner ();
    run worker ()
  }
}
