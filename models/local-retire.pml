/* local-retire.pml: a local executor leaves the runtime's set at
 * shutdown, without waiting for a later call
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One local executor with one task, its owner thread iterating the
 * executor's context, and one shutdown, called either from a thread that
 * can wait (steps 1 and 7) or from one of the runtime's own threads (step
 * 1 only: it returns at once; the last WsRuntime reference dropped in a
 * task). Mirrors wsrt/core/ws-local-executor.c:
 *  - ws_local_executors_close (step 1): close the set, queue the task's
 *    cancellation, make the source ready;
 *  - local_source_dispatch and retire_on_owner: the owner runs what is
 *    queued, and once no task is left takes the executor out of the set
 *    under the set's lock and drops the set's reference;
 *  - ws_local_executors_shutdown (step 7): under the lock, move the
 *    executor to the detached list; then, until no task is left, run the
 *    cancellations where it can acquire the context or wait for the
 *    owner; take the executor out of the set once it has no task and drop
 *    that reference.
 *
 * Property: in every end state the executor is out of the set and the
 * set's reference was dropped exactly once (so the executor, and with it
 * the runtime it holds, can be freed).
 *
 * Broken variant, must give a counterexample:
 *  -DBROKEN_LATER_CALL  only step 7 takes executors out of the set (as
 *                       before): a shutdown from a runtime thread leaves
 *                       the executor, and the runtime, for ever.
 */

bool closed;
bool ready;            /* the executor's source is ready */
byte queued;           /* cancellations queued */
byte tasks = 1;        /* the executor's registry count */
bool in_set = true;    /* in the table or on the detached list */
byte set_ref_drops;    /* the set's reference, dropped */
bool owner_busy;       /* the owner holds the context (a dispatch) */
bool shutdown_done;

inline retire ()
{
  atomic {
    if
    :: closed && in_set && tasks == 0 -> in_set = false; set_ref_drops++
    :: else -> skip
    fi
  }
}

inline run_queued ()
{
  do
  :: queued > 0 -> queued--; tasks--
  :: else -> break
  od
}

proctype owner ()
{
  /* Iterates its context until the executor has left the set and the
   * shutdown is over. */
  do
  :: atomic { ready && !owner_busy -> ready = false; owner_busy = true };
     run_queued ();
#ifndef BROKEN_LATER_CALL
     retire ();
#endif
     owner_busy = false
  :: !in_set && shutdown_done -> break
  od
}

proctype shutdown (bool from_runtime)
{
  /* Step 1. */
  atomic { closed = true; queued = tasks; ready = true };
  if
  :: from_runtime -> skip
  :: else ->
     /* Step 7: run what it can (the context is free when the owner is
      * between dispatches), or wait for the owner. */
     do
     :: atomic { !owner_busy -> owner_busy = true };
        run_queued ();
        owner_busy = false
     :: tasks == 0 -> retire (); break
     od
  fi;
  shutdown_done = true
}

init
{
  run owner ();
  if
  :: run shutdown (true)
  :: run shutdown (false)
  fi;
  (shutdown_done && !in_set);
  assert (set_ref_drops == 1)
}
