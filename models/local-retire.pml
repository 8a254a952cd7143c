/* local-retire.pml: a local executor leaves the runtime's set at
 * shutdown, without waiting for a later call
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One local executor with one task, a thread that spawns one more local
 * task at any moment, its owner thread iterating the executor's context,
 * and one shutdown, called either from a thread that
 * can wait (steps 1 and 7) or from one of the runtime's own threads (step
 * 1 only: it returns at once; the last WsRuntime reference dropped in a
 * task). Mirrors wsrt/core/ws-local-executor.c:
 *  - ws_local_executor_spawn and ws_task_registry_bind: a spawn that found
 *    the executor open binds its task unless the registry is closed; the
 *    flag is read under a shard lock, so a bind is either refused or
 *    finished before the sweep (ws_task_registry_cancel_all) takes that
 *    lock;
 *  - ws_local_executors_close (step 1): close the set and the registry,
 *    sweep (queue the cancellation of every bound task), mark the
 *    executor swept, make the source ready;
 *  - local_source_dispatch and retire_on_owner: the owner runs what is
 *    queued, and once it is swept and no task is left takes it out of the set
 *    under the set's lock and drops the set's reference;
 *  - ws_local_executors_shutdown (step 7): under the lock, move the
 *    executor to the detached list; then, until no task is left, run the
 *    cancellations where it can acquire the context or wait for the
 *    owner; take the executor out of the set once it has no task and drop
 *    that reference.
 *
 * Property: in every end state the executor is out of the set, the set's
 * reference was dropped exactly once (so the executor, and with it the
 * runtime it holds, can be freed), and no task is left (none was bound
 * to an executor that had already left, where nothing would end it).
 *
 * Broken variants, each must give a counterexample:
 *  -DBROKEN_LATER_CALL        only step 7 takes executors out of the set
 *                             (as before): a shutdown from a runtime
 *                             thread leaves the executor, and the runtime,
 *                             for ever;
 *  -DBROKEN_RETIRE_UNSWEPT    the owner retires an executor of a closed set
 *                             before the sweep: a bind in flight lands in
 *                             an executor nobody dispatches any more.
 */

bool closed;
bool reg_closed;       /* the executor's registry */
bool binding;          /* a bind holds the shard lock */
bool swept;
bool ready;            /* the executor's source is ready */
byte queued;           /* cancellations queued */
byte tasks;            /* the executor's registry count: 0 or 1 at first */
bool in_set = true;    /* in the table or on the detached list */
byte set_ref_drops;    /* the set's reference, dropped */
bool owner_busy;       /* the owner holds the context (a dispatch) */
bool shutdown_done;

inline retire ()
{
  atomic {
    if
#ifdef BROKEN_RETIRE_UNSWEPT
    :: closed && in_set && tasks == 0 -> in_set = false; set_ref_drops++
#else
    :: swept && closed && in_set && tasks == 0 -> in_set = false; set_ref_drops++
#endif
    :: else -> skip
    fi
  }
}

proctype spawner ()
{
  if
  :: atomic { !closed -> skip };        /* the lookup found it open */
     atomic { !binding -> binding = true };
     if
     :: !reg_closed -> tasks++; ready = true
     :: else -> skip                    /* refused */
     fi;
     binding = false
  :: skip                               /* spawned nothing */
  fi
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
  /* Step 1: close, sweep (every shard lock), mark swept, arm. */
  closed = true;
  reg_closed = true;
  atomic { !binding -> queued = tasks };
  swept = true;
  ready = true;
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
  /* A task or none, and the source ready or not (a wake came). */
  if
  :: tasks = 1
  :: skip
  fi;
  if
  :: ready = true
  :: skip
  fi;
  run spawner ();
  run owner ();
  if
  :: run shutdown (true)
  :: run shutdown (false)
  fi;
  (shutdown_done && !in_set);
  assert (set_ref_drops == 1);
  /* A task bound after the executor left would never end. */
  assert (tasks == 0)
}
