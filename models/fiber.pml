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
 * Thread identity (-DLOCAL, ws_runtime_spawn_local_fiber): the task's
 * host is a local executor, whose queue one thread drains, the owner of
 * its GMainContext (proctype owner, in place of the workers). A cancel
 * from any thread is queued for the owner like a wake; a shutdown on
 * another thread marks the task cancelled, queues it and waits for the
 * owner (ws-local-executor.c, "Shutdown"); with -DSHUTDOWN_ON_OWNER the
 * owner itself shuts the runtime down and runs the cancellation.
 *  (e) a local fiber runs, suspends and unwinds on the owner alone
 *      (run_fiber asserts the resuming process).
 *
 * The thread job (-DTHREAD_JOB, ws_fiber_run_in_thread): the fiber's
 * first await is a job on another thread (proctype job) whose function
 * uses the fiber's frame until it returns; the pool may also cancel it
 * before it runs (shutdown). The fiber suspends while the job runs;
 * once cancelled its suspend does not switch out, and it blocks where it
 * is until the job is done, whoever resumed it (a worker, the owner, the
 * shutting down thread).
 *  (f) the job never uses the fiber's frame after the call returned or
 *      the stack was released (the job asserts it at each use).
 *
 * The GIO await (-DTHREAD_JOB -DGIO_CALL -DLOCAL, ws_fiber_await_gio on
 * a local fiber): the same wait, but the call's end reaches the fiber
 * only through a dispatch of the owner's context (GIO's callback, then
 * the delivery that publishes the result: callback_pending), which only
 * the owner runs. A cancelled local fiber is unwound on the owner, so the
 * owner's uninterruptible wait must run that dispatch itself
 * (ws_async_op_wait_published iterates its own context).
 *  (g) the wait ends: no process blocks for ever (an invalid end state
 *      otherwise), with (f) holding.
 *
 * Broken variants (each must give a counterexample; tests
 * model-fiber-broken-*, model-fiber-*-broken-*):
 *  -DBROKEN_LOCAL_SHUTDOWN_ELSEWHERE (with -DLOCAL): a shutdown on
 *   another thread takes the idle local task and cancels it there, as
 *   the worker pool's sweep does for worker tasks: the fiber unwinds on
 *   the wrong thread (e);
 *  -DBROKEN_RETURN_ON_CANCEL (with -DTHREAD_JOB): the call returns once
 *   the task is cancelled, while the job runs: the fiber's frame goes
 *   while the job uses it (f);
 *  -DBROKEN_WAIT_WITHOUT_ITERATING (with -DGIO_CALL): the owner's wait
 *   only waits for the result, as a thread job's wait does: the dispatch
 *   that would publish it is the owner's own, and never comes (g).
 *
 * NW=2, NA=2: 12,614 states, depth 96; -DTHREAD_JOB 63,922 states;
 * -DLOCAL -DTHREAD_JOB 11,150 states. By hand, -DNW=3 -DNA=3: no error.
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

/* -DLOCAL: the process of the context's owner. */
byte owner_pid = 255;

/* -DTHREAD_JOB: the job of ws_fiber_run_in_thread. */
#define JOB_NONE    0
#define JOB_RUNNING 1        /* spawned; func may use the fiber's frame */
#define JOB_DONE    2        /* thread_job_done () ran */
byte job_state = JOB_NONE;
bool callback_pending = false;  /* -DGIO_CALL: GIO called back; the owner's dispatch publishes it */
bool in_job = false;         /* the fiber is in the call */
bool frame_live = false;     /* the call's frame is on the fiber's stack */

chan queue = [2] of { bit };

/* -DGIO_CALL: the dispatch of the owner's context that publishes the
 * call's result and wakes the task (deliver_result in ws-async-op.c). */
inline deliver_callback ()
{
  atomic {
    callback_pending = false;
    job_state = JOB_DONE;
    if
    :: !complete && !running && !notified -> notified = true; queue ! 1
    :: !complete && running -> notified = true
    :: else -> skip
    fi
  }
}

/* The fiber's function, run by whoever resumed it, until it suspends or
 * returns. A suspend sets F_SUSPENDED and leaves: the resumer sees it. */
inline run_fiber ()
{
  assert (resumers == 0);              /* (c) */
#ifdef LOCAL
  assert (_pid == owner_pid);          /* (e) */
#endif
  resumers++;
  fstate = F_RUNNING;
  do
  :: in_job ->
     /* ws_fiber_run_in_thread ()'s loop */
     if
     :: job_state == JOB_DONE ->
        in_job = false; frame_live = false; awaits_done++
     :: else ->
        if
        :: f_cancelled || cancelled ->
           f_cancelled = true;
#ifndef BROKEN_RETURN_ON_CANCEL
#if defined(GIO_CALL) && !defined(BROKEN_WAIT_WITHOUT_ITERATING)
           /* The owner runs its own context's dispatch while it waits. */
           do
           :: job_state == JOB_DONE -> break
           :: callback_pending -> deliver_callback ()
           od;
#else
           (job_state == JOB_DONE);    /* the uninterruptible wait */
#endif
#endif
           in_job = false; frame_live = false;
           awaits_done = NA            /* the fiber unwinds */
        :: else ->
           fstate = F_SUSPENDED;       /* the job's end wakes the task */
           break
        fi
     fi
  :: !in_job && awaits_done == NA -> break
  :: !in_job && awaits_done < NA ->
     if
#ifdef THREAD_JOB
     :: awaits_done == 0 && job_state == JOB_NONE ->
        if
        :: f_cancelled || cancelled ->
           f_cancelled = true;          /* cancelled first: no job */
           awaits_done = NA
        :: else ->
           frame_live = true; in_job = true;
           job_state = JOB_RUNNING
        fi
#endif
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
  assert (!frame_live);
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

/* -DLOCAL: the thread that iterates the context: it alone drains the
 * local executor's queue (the workers are not run). */
inline owner_shutdown ()
{
  /* ws_runtime_shutdown on the owner's thread: queue the cancellation
   * and run the executor's dispatch here until the task has ended. */
  shutdown_begun = true;
  atomic {
    if
    :: !complete ->
       cancelled = true;
       if
       :: !running && !notified -> notified = true; queue ! 1
       :: else -> skip
       fi
    :: else -> skip
    fi
  }
  do
  :: queue ? b -> run_task ()
  :: atomic { complete && len (queue) == 0 -> break }
  od;
  assert (fstate == F_DONE || fstate == F_NEW);   /* (d) */
  assert (!has_stack);
  assert (destroyed == 1);
  shutdown_returned = true
}

proctype owner ()
{
  bit b;
end:
  do
  :: queue ? b -> run_task ()
#ifdef GIO_CALL
  :: callback_pending -> deliver_callback ()
#endif
#ifdef SHUTDOWN_ON_OWNER
  :: !shutdown_begun -> owner_shutdown ()
#endif
  od
}

/* -DTHREAD_JOB: the blocking pool's thread. func uses the fiber's frame
 * (twice: it may at any time until it returns), then thread_job_done ()
 * marks it done and wakes the task. Or the pool cancels the queued job
 * at shutdown: done without a use. */
proctype job ()
{
end:
  job_state == JOB_RUNNING;
  if
  :: assert (frame_live && has_stack);  /* (f) */
     assert (frame_live && has_stack)   /* (f) */
  :: shutdown_begun -> skip
  fi;
#ifdef GIO_CALL
  /* GIO calls back on the owner's context: its dispatch goes on. */
  callback_pending = true
#else
  job_state = JOB_DONE;
  atomic {
    if
    :: !complete && !running && !notified -> notified = true; queue ! 1
    :: !complete && running -> notified = true
    :: else -> skip
    fi
  }
#endif
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
#if defined(LOCAL) && !defined(BROKEN_LOCAL_SHUTDOWN_ELSEWHERE)
  /* Not the owner: queue the cancellation, wait for the owner. */
  atomic {
    if
    :: !complete ->
       cancelled = true;
       if
       :: !running && !notified -> notified = true; queue ! 1
       :: else -> skip
       fi
    :: else -> skip
    fi
  }
  complete;
#else
  do
  :: atomic { !complete && !running -> running = true; cancelled = true };
     cancel_task ()
  :: atomic { !complete && running -> cancelled = true }
#ifndef LOCAL
  :: queue ? b -> run_task ()
#endif
  :: atomic { complete && len (queue) == 0 -> break }
#ifdef LOCAL
  :: atomic { complete && len (queue) > 0 -> break }   /* the owner drops it */
#endif
  od;
#endif
  assert (fstate == F_DONE || fstate == F_NEW);   /* (d) */
  assert (!has_stack);
  assert (destroyed == 1);
  shutdown_returned = true
}

init
{
  queue ! 1;
  atomic {
#ifdef LOCAL
    owner_pid = run owner ();
#else
    byte i = 0;
    do
    :: i < NW -> run worker (); i++
    :: i == NW -> break
    od;
#endif
    run waker ();
    run canceller ();
#ifdef THREAD_JOB
    run job ();
#endif
#ifndef SHUTDOWN_ON_OWNER
    run shutdown ()
#endif
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
