/* fiber.pml: a fiber's stack across cancellation and shutdown
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Where a fiber can be and how cancellation and shutdown reach it
 * (wsrt/ws-fiber.c, "The suspend/resume protocol"). One fiber task, the
 * workers that poll it (NW), a waker (a GIO callback holding its waker),
 * a canceller (ws_task_cancel), and the thread that shuts the runtime
 * down. Mirrors:
 *  - the task state word of task-state.pml, reduced to what a fiber
 *    needs: RUNNING, NOTIFIED, CANCELLED, COMPLETE, each transition one
 *    atomic step (ws-task-state-private.h);
 *  - the poll (ws_raw_task_run): ws_task_state_transition_to_running
 *    (a cancelled task goes to cancel_task instead), the poll function
 *    fiber_poll (), then ws_task_state_transition_to_idle (NOTIFIED:
 *    queue it again; CANCELLED: cancel_task);
 *  - fiber_poll (): the first poll takes a stack; each poll resumes the
 *    fiber, which runs its function until it suspends or returns; a
 *    return releases the stack and the poll is READY;
 *  - the fiber's function: up to NA awaits; each await is ready or
 *    suspends (ws_fiber_suspend: return FALSE at once if the fiber's
 *    cancelled flag or the state's CANCELLED is set; otherwise hand the
 *    waker to the waker, SUSPENDED, switch out). A FALSE await makes it
 *    unwind and return;
 *  - cancel_task (with RUNNING held): destroy the future, which is
 *    fiber_destroy (): a SUSPENDED fiber is resumed with its cancelled
 *    flag set, runs to its return, and only then is its stack released
 *    and the user's destroy notify run; then complete;
 *  - shutdown (ws_raw_task_shutdown on the task registry's walk and
 *    ws_raw_task_drop_queued on the drains, ws-worker-pool.c steps 2 and
 *    5): an idle task is taken (RUNNING) and cancel_task runs here; a
 *    running one is marked CANCELLED and its poller cancels it; a queued
 *    one is cancelled by the drain, which makes the same call.
 *
 * Properties (assertions):
 *  (a) a stack is released only when the fiber's function has returned:
 *      no live frame is ever abandoned (release_stack);
 *  (b) the user's destroy notify runs exactly once, after the function
 *      returned or when it never started;
 *  (c) one thread at a time runs the fiber (resume asserts nobody does);
 *  (d) when shutdown returns, the fiber's function has returned or never
 *      started, its stack is released and its destroy notify ran; and
 *      when nothing can move any more, the same holds (monitor, on
 *      `timeout`).
 *
 * Broken variants (each must give a counterexample; tests
 * model-fiber-broken-*):
 *  -DBROKEN_DROP_SUSPENDED: fiber_destroy () frees a SUSPENDED fiber's
 *   stack without resuming it, as a task's future is dropped: its frames
 *   are abandoned (a);
 *  -DBROKEN_SWITCH_WHEN_CANCELLED: ws_fiber_suspend () switches out even
 *   after the cancellation, so the one resume of fiber_destroy () does
 *   not run the function to its return (a).
 *
 * NW=2, NA=2: 12,307 states, depth 95. By hand, -DNW=3 -DNA=3: 40,239
 * states; no error.
 */

#ifndef NW
#define NW 2                 /* workers */
#endif
#ifndef NA
#define NA 2                 /* awaits in the fiber's function */
#endif

/* The task's state word. */
bool running = false;
bool notified = true;        /* spawned: queued once */
bool cancelled = false;
bool complete = false;

/* The fiber. */
#define F_NEW       0
#define F_RUNNING   1
#define F_SUSPENDED 2
#define F_DONE      3
byte fstate = F_NEW;
bool has_stack = false;
bool f_cancelled = false;    /* WsFiber.cancelled */
byte resumers = 0;           /* threads running the fiber now */
byte awaits_done = 0;
byte destroyed = 0;          /* user destroy notify runs */
bool waker_held = false;     /* the waker holds the task's waker */

bool shutdown_begun = false;
bool shutdown_returned = false;

chan queue = [2] of { bit };

/* The fiber's function, run by whoever resumed it, until it suspends or
 * returns. A suspend sets F_SUSPENDED and leaves: the resumer sees it. */
inline run_fiber ()
{
  assert (resumers == 0);              /* (c) */
  resumers++;
  fstate = F_RUNNING;
  do
  :: awaits_done == NA -> break
  :: else ->
     if
     :: true -> awaits_done++          /* ready: go on */
     :: true ->
        /* ws_fiber_suspend () */
#ifdef BROKEN_SWITCH_WHEN_CANCELLED
        if
        :: f_cancelled -> awaits_done = NA   /* it unwinds after the switch... */
        :: else -> skip
        fi;
        waker_held = true;
        fstate = F_SUSPENDED;
        break
#else
        if
        :: f_cancelled || cancelled ->
           f_cancelled = true;
           awaits_done = NA            /* FALSE: unwind and return */
        :: else ->
           waker_held = true;
           fstate = F_SUSPENDED;
           break
        fi
#endif
     fi
  od;
  if
  :: fstate != F_SUSPENDED -> fstate = F_DONE
  :: else -> skip
  fi;
  resumers--
}

inline release_stack ()
{
  assert (fstate == F_DONE);           /* (a) */
  assert (has_stack);
  has_stack = false
}

inline user_destroy ()
{
  assert (fstate == F_DONE || fstate == F_NEW);   /* (b) */
  destroyed++;
  assert (destroyed == 1)
}

/* The task's future is destroyed (drop_stage), with RUNNING held. */
inline fiber_destroy ()
{
  if
  :: fstate == F_SUSPENDED ->
#ifdef BROKEN_DROP_SUSPENDED
     has_stack = false                 /* abandoned: frames still live */
#else
     f_cancelled = true;
     run_fiber ();
     release_stack ()
#endif
  :: else -> skip
  fi;
#ifdef BROKEN_DROP_SUSPENDED
  assert (fstate == F_DONE || fstate == F_NEW);   /* (a): frames dropped */
#endif
  user_destroy ()
}

/* cancel_task (): with RUNNING held. */
inline cancel_task ()
{
  if
  :: fstate != F_DONE || destroyed == 0 -> fiber_destroy ()
  :: else -> skip
  fi;
  atomic { complete = true; running = false; notified = false }
}

/* fiber_poll () and what ws_raw_task_run does around it. */
inline poll ()
{
  if
  :: fstate == F_NEW -> has_stack = true
  :: else -> skip
  fi;
  run_fiber ();
  if
  :: fstate == F_DONE ->
     release_stack ();
     /* READY: drop_stage runs fiber_destroy on a DONE fiber, complete */
     user_destroy ();
     atomic { complete = true; running = false; notified = false }
  :: else ->
     /* transition_to_idle */
     if
     :: atomic { cancelled -> running = true } -> cancel_task ()
     :: atomic { !cancelled && notified -> running = false; notified = false };
        queue ! 1
     :: atomic { !cancelled && !notified -> running = false }
     fi
  fi
}

/* A queued instance: ws_raw_task_run. */
inline run_task ()
{
  if
  :: atomic { !complete && !running && cancelled -> running = true; notified = false };
     cancel_task ()
  :: atomic { !complete && !running && !cancelled -> running = true; notified = false };
     poll ()
  :: atomic { complete || running -> skip }   /* FAILED: someone else has it */
  fi
}

proctype worker ()
{
  bit b;
  do
  :: queue ? b -> run_task ()
  :: shutdown_begun && len (queue) == 0 -> break
  od
}

/* The waker: wakes the task once it holds its waker; it may never get
 * one (end label). */
proctype waker ()
{
end:
  atomic { waker_held && !complete ->
    waker_held = false;
    if
    :: !running && !notified -> notified = true; queue ! 1
    :: else -> notified = true
    fi
  }
}

/* ws_task_cancel, maybe never (the task ended first: end label). */
proctype canceller ()
{
end:
  atomic {
    !complete ->
    cancelled = true;
    if
    :: !running && !notified -> notified = true; queue ! 1
    :: else -> skip
    fi
  }
}

/* ws_runtime_shutdown: begin, let the workers stop, then the last sweep:
 * ws_raw_task_shutdown on an idle task, drop_queued on the queue. */
proctype shutdown ()
{
  bit b;

  shutdown_begun = true;
  do
  :: atomic { !complete && !running -> running = true; cancelled = true };
     cancel_task ()
  :: atomic { !complete && running -> cancelled = true }
  :: queue ? b -> run_task ()
  :: atomic { complete && len (queue) == 0 -> break }
  od;
  assert (fstate == F_DONE || fstate == F_NEW);   /* (d) */
  assert (!has_stack);
  assert (destroyed == 1);
  shutdown_returned = true
}

init
{
  queue ! 1;
  atomic {
    byte i = 0;
    do
    :: i < NW -> run worker (); i++
    :: i == NW -> break
    od;
    run waker ();
    run canceller ();
    run shutdown ()
  }
}

/* (d) when nothing can move. */
active proctype monitor ()
{
  timeout ->
  assert (shutdown_returned);
  assert (!has_stack);
  assert (destroyed == 1)
}
