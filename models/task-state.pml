/* task-state.pml: the task state word of wsrt/core/ws-raw-task.c
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One task, as the core sees it: the state word (RUNNING, COMPLETE,
 * NOTIFIED, CANCELLED, JOIN_INTEREST, JOIN_WAKER and the reference count),
 * two worker threads that poll whatever is queued, a waker thread, a
 * canceller thread, the join handle and runtime shutdown. Each C function that is one CAS
 * loop (or one RMW) on the word is one atomic step here: the loop only
 * retries with a fresh value, so it behaves as one atomic
 * read-compute-write. Spin explores every interleaving of those steps
 * (sequentially consistent; the memory orders are argued in
 * doc/architecture.md, "Why each memory order is what it is").
 *
 * The future: a poll returns READY once the waker thread has set `ready`
 * (the state it waits for), PENDING before. The waker sets `ready`, then
 * wakes, as a channel or a GIO callback does.
 *
 * Properties checked (assertions; `spin -a`, `pan` finds any violation):
 *  - no double poll: never two polls at once, never a poll after the end
 *    (assert in poll);
 *  - no lost wake: when nothing can move any more, the task has ended,
 *    every reference is gone, and a join handle that registered its waker
 *    was woken (assert in the monitor, which runs on `timeout`);
 *  - exactly one outcome: the future is destroyed exactly once, one
 *    completion, and the outcome is consumed exactly once, by the handle
 *    or by whoever drops it (assert in the monitor);
 *  - no use after free: every step on the task asserts it is not freed;
 *    the reference count never goes below zero;
 *  - the alive count is right when a waiter looks: a handle that sees
 *    COMPLETE finds the task out of the task registry (assert in handle).
 *
 * A model that cannot fail proves nothing: build with -DBROKEN_WAKE (a wake
 * during a poll is dropped instead of setting NOTIFIED) or -DBROKEN_IDLE
 * (transition_to_idle ignores NOTIFIED) and pan reports the lost wake;
 * -DBROKEN_ALIVE (complete() leaves the task registry after publishing
 * COMPLETE) and pan reports a handle that saw the end while the task was
 * still counted alive; -DBROKEN_FUSED_WAKER (complete() drops its
 * references in the CAS that publishes COMPLETE even when a join waker
 * is left to wake after it) and pan reports the completer reading
 * join_waker from a task the handle has freed; -DBROKEN_UNIQUE_ON_COMPLETE
 * (the handle frees the task without an RMW once it sees COMPLETE, its
 * reference not being known to be the last) and pan reports the same;
 * -DBROKEN_SOLE_COUNTS_HANDLE (the completer takes the task as its own
 * alone when the references left are its and the handle's) and pan
 * reports the handle reading a freed task. -DDETACHED models a task with
 * no handle whose waker comes from its first poll, where the first poll
 * takes RUNNING by a store; with -DBROKEN_UNIQUE_STORE (that store made
 * on a fresh-looking word whatever its reference count) pan reports the
 * count going wrong. -DAWAITED models a child awaited through its join
 * handle by its owner (a WsJoinHandle: one owner, who also cancels), which
 * may take the queued instance back and run it nested in its await
 * (ws_worker_run_awaited); that run takes RUNNING, and COMPLETE, by
 * stores where the word shows the queued instance's (or poller's) and the
 * handle's references alone (ws_task_state_transition_to_running_awaited).
 * With -DBROKEN_AWAITED_ANY_REFS (the store made on a queued, handled word
 * whatever its count: a task polled and woken before) pan reports a use
 * after free; with -DBROKEN_AWAITED_COMPLETE_ANY_REFS (COMPLETE stored
 * while a waker may still hold a reference) pan reports a use after free;
 * with -DBROKEN_AWAITED_ANYWHERE (every poller takes the stores, not only
 * the handle's owner) pan reports the handle's join waker lost. A poll
 * may yield once (MAX_YIELDS): its wake of its own task is made by its
 * transition to idle, in the same step; with -DBROKEN_YIELD (that
 * transition ignores the yield) pan reports the lost wake (tests:
 * model-task-state-broken-*, model-task-state-awaited-broken-*, which
 * must find a counterexample).
 */

#define NONE      0
#define FUTURE    1   /* WS_STAGE_FUTURE */
#define FINISHED  2   /* WS_STAGE_FINISHED */
#define CONSUMED  3   /* WS_STAGE_CONSUMED */

/* The state word (ws-raw-task-private.h). */
bool running = false;
bool complete = false;
bool notified = true;        /* ws_raw_task_new: NOTIFIED */
bool cancelled = false;
bool join_waker = false;
#ifdef DETACHED
/* A detached task: no handle, no canceller; the waker gets its
 * reference from the first poll, as a future's registration does. */
bool join_interest = false;
byte refs = 1;               /* queued */
#elif defined(AWAITED)
/* A child with a WsJoinHandle, spawned by the handle's owner: queued and
 * the handle; the waker's reference comes from its first poll. */
bool join_interest = true;
byte refs = 2;               /* queued + handle */
#else
bool join_interest = true;   /* spawned with a handle */
byte refs = 3;               /* queued + handle + the waker's */
#endif
bool waker_given = false;    /* DETACHED, AWAITED: the first poll cloned the waker */
bool waker_spare = false;    /* AWAITED: ... and ended READY all the same */

/* Yields, each a poll that returns PENDING and re-queues its task. */
#ifndef MAX_YIELDS
#define MAX_YIELDS 1
#endif
byte yields = 0;

byte stage = FUTURE;
/* The worker pool binds a task to its task registry when the first poll
 * returns PENDING (WsTaskHost.bind_on_pending); a task queued but never
 * polled is reached at shutdown by the queue drain instead. */
bool bound = false;          /* task->bound */
bool registry_linked = false;   /* in the owned-task set */
bool closed = false;         /* the task registry's closed flag */
bool freed = false;

/* Observations. */
byte polls_in_progress = 0;
byte destroyed = 0;          /* the future's destroy notify */
byte completions = 0;
byte outcome_consumed = 0;   /* taken by the handle or dropped */
bool handle_waiting = false; /* the handle registered its join waker */
bool handle_woken = false;
bool handle_done = false;
bool waker_done = false;
bool canceller_done = false;
bool ready = false;

chan runq = [4] of { bit };  /* queued instances, each holding a reference */

inline check_alive ()
{
  assert (!freed)
}

/* ws_raw_task_unref_n */
inline unref (n)
{
  atomic {
    check_alive ();
    assert (refs >= n);
    refs = refs - n;
    if
    :: refs == 0 -> freed = true      /* dealloc */
    :: else -> skip
    fi
  }
}

/* drop_stage: destroy the future, or drop an unread outcome. */
inline drop_stage ()
{
  if
  :: stage == FUTURE -> stage = CONSUMED; destroyed++
  :: stage == FINISHED -> stage = CONSUMED; outcome_consumed++
  :: else -> skip
  fi
}

/* complete (): leave the task registry (still RUNNING), XOR
 * RUNNING|COMPLETE, hand the outcome to the handle or drop it. */
inline complete_task (awaited)
{
  bool prev_interest, prev_waker, fused = false, last = false, sole, exact;
  byte n_unref;

  n_unref = 1;
#ifndef BROKEN_ALIVE
  /* ws_task_registry_remove, under the set's lock */
  atomic {
    assert (running);
    if
    :: registry_linked -> registry_linked = false; n_unref = 2
    :: else -> skip
    fi
  }
#endif
  /* ws_task_state_transition_to_complete_and_unref, first its load: no
   * handle, no join waker, no reference but ours: the task is ours
   * alone, freed without writing the word (COMPLETE below is a ghost
   * for the monitor). */
  atomic {
    check_alive ();
    assert (running && !complete);
#ifdef BROKEN_SOLE_COUNTS_HANDLE
    /* the handle's reference taken for one of ours */
    sole = !join_waker && refs == n_unref + (join_interest -> 1 : 0)
#else
    sole = !join_interest && !join_waker && refs == n_unref
#endif
  }
  if
  :: sole ->
     atomic {
       check_alive ();
       running = false;
       complete = true;
       completions++;
       drop_stage ();
       refs = refs - n_unref;
       freed = true
     };
     goto completed
  :: else -> skip
  fi;
  /* ... then, run nested by the handle's owner, the poller's and the
   * handle's references alone and nothing else set: COMPLETE and the
   * unref by a store, a step of its own after the load. */
  exact = false;
  if
  :: awaited && n_unref == 1 ->
     atomic {
       check_alive ();
#ifdef BROKEN_AWAITED_COMPLETE_ANY_REFS
       /* the poller's and the handle's taken to be the only references */
       exact = running && !complete && !notified && !cancelled &&
               join_interest && !join_waker
#else
       exact = running && !complete && !notified && !cancelled &&
               join_interest && !join_waker && refs == 2
#endif
     }
  :: else -> skip
  fi;
  if
  :: exact ->
     atomic {
       check_alive ();
#if !defined(BROKEN_AWAITED_ANYWHERE) && !defined(BROKEN_AWAITED_COMPLETE_ANY_REFS)
       /* The store loses no update: the word is still the one the load
        * read (the handle's owner is below on this stack, and nobody
        * else holds a reference). */
       assert (running && !complete && !notified && !cancelled &&
               join_interest && !join_waker && refs == 2);
#endif
       /* WS_STATE_COMPLETE | WS_STATE_JOIN_INTEREST | one reference */
       running = false; complete = true; notified = false; cancelled = false;
       join_interest = true; join_waker = false; refs = 1;
       completions++
     };
     goto completed
  :: else -> skip
  fi;
  /* ... then COMPLETE and the unref in one CAS where nothing is left
   * between them (no join waker, no reference but ours and the
   * handle's); else the XOR alone. */
  atomic {
    check_alive ();
    assert (running && !complete);
    running = false;
    complete = true;
    completions++;
    prev_interest = join_interest;
    prev_waker = join_waker;
#ifdef BROKEN_FUSED_WAKER
    /* fused even with a join waker to wake after it */
    if
    :: refs == n_unref + (join_interest -> 1 : 0) -> fused = true
    :: else -> skip
    fi;
#else
    if
    :: !join_waker && refs == n_unref + (join_interest -> 1 : 0) -> fused = true
    :: else -> skip
    fi;
#endif
    if
    :: fused -> refs = refs - n_unref; last = (refs == 0)
    :: else -> skip
    fi
  }
  if
  :: fused && prev_waker ->
     atomic { check_alive (); handle_woken = true }   /* reads join_waker */
  :: fused && !prev_waker && last ->
     /* ours alone: drop the stage, then dealloc */
     atomic { check_alive (); drop_stage (); freed = true }
  :: fused && !prev_waker && !last -> skip    /* the handle's now */
  :: !fused -> skip
  fi;
  if
  :: fused -> goto completed
  :: else -> skip
  fi;
#ifdef BROKEN_ALIVE
  /* the order before the fix: the set is left after COMPLETE is out */
  atomic {
    if
    :: registry_linked -> registry_linked = false; n_unref = 2
    :: else -> skip
    fi
  }
#endif
  if
  :: !prev_interest -> drop_stage ()
  :: prev_interest && prev_waker ->
     atomic { check_alive (); handle_woken = true }   /* wake join_waker */
  :: else -> skip
  fi;
  unref (n_unref);
completed:
  skip
}

/* store_result + complete, after drop_stage: cancel_task and READY. */
inline finish_task (awaited)
{
  drop_stage ();
  assert (stage == CONSUMED);
  stage = FINISHED;
  complete_task (awaited)
}

/* ws_raw_task_wake_by_ref */
inline wake_by_ref ()
{
  bool submit = false;

  atomic {
    check_alive ();
    if
    :: complete || notified -> skip
    :: else ->
       if
       :: running ->
#ifndef BROKEN_WAKE
          notified = true
#else
          skip
#endif
       :: else -> notified = true; refs++; submit = true
       fi
    fi
  }
  if
  :: submit -> runq ! 1      /* schedule () */
  :: else -> skip
  fi
}

/* ws_raw_task_cancel */
inline cancel ()
{
  bool submit = false;

  atomic {
    check_alive ();
    if
    :: complete || cancelled -> skip
    :: else ->
       if
       :: running || notified -> cancelled = true; notified = true
       :: else -> cancelled = true; notified = true; refs++; submit = true
       fi
    fi
  }
  if
  :: submit -> runq ! 1
  :: else -> skip
  fi
}

/* ws_raw_task_drop_queued: a queued instance drained at shutdown, or
 * pushed to a closed injection queue (ws_raw_task_shutdown, then the
 * queued reference plays the poller's or is dropped). */
inline drop_queued ()
{
  bool idle;

  atomic {
    check_alive ();
    cancelled = true;
    idle = !running && !complete;
    if
    :: idle -> running = true
    :: else -> skip
    fi
  }
  if
  :: idle -> finish_task (false)    /* cancel_task */
  :: else -> unref (1)
  fi
}

/* ws_raw_task_run (@aw FALSE) and ws_raw_task_run_awaited (@aw TRUE) of
 * a queued instance the caller took, with transition_to_running and
 * transition_to_idle. The caller declares action, is_ready, yielded,
 * bind_failed and unique. */
inline run_instance (aw)
{
  /* transition_to_running, first its load: NOTIFIED and one reference,
   * no other bit, is a task never shared: RUNNING by a store, a step
   * of its own after the load. */
  atomic {
    check_alive ();
#ifdef BROKEN_UNIQUE_STORE
    /* a fresh-looking word taken as ours whatever its count */
    unique = (notified && !running && !complete && !cancelled &&
              !join_interest && !join_waker)
#else
    unique = (notified && !running && !complete && !cancelled &&
              !join_interest && !join_waker && refs == 1)
#endif
  }
  if
  :: unique ->
     atomic {
       check_alive ();
       /* The plain store loses no update: the word is still the one
        * the load read (no reference taken, no CANCELLED set since). */
       assert (notified && !running && !complete && !cancelled &&
               !join_interest && !join_waker && refs == 1);
       running = true; notified = false; refs = 1; cancelled = false;
       action = 0
     }
     goto polled
  :: else -> skip
  fi;
  /* transition_to_running_awaited, first its load: run nested by the
   * handle's owner, a word of NOTIFIED, JOIN_INTEREST and two
   * references (the queued instance's and the handle's), nothing else,
   * is a task nobody else can reach: RUNNING by a store, a step of its
   * own after the load. */
  unique = false;
  if
  :: aw ->
     atomic {
       check_alive ();
#ifdef BROKEN_AWAITED_ANY_REFS
       /* a queued, handled word taken as ours whatever its count */
       unique = (notified && !running && !complete && !cancelled &&
                 join_interest && !join_waker)
#else
       unique = (notified && !running && !complete && !cancelled &&
                 join_interest && !join_waker && refs == 2)
#endif
     }
  :: else -> skip
  fi;
  if
  :: unique ->
     atomic {
       check_alive ();
#if !defined(BROKEN_AWAITED_ANY_REFS) && !defined(BROKEN_AWAITED_ANYWHERE)
       /* The plain store loses no update: the word is still the one the
        * load read (the handle's owner is running us; nobody else holds a
        * reference). */
       assert (notified && !running && !complete && !cancelled &&
               join_interest && !join_waker && refs == 2);
#endif
       /* WS_STATE_RUNNING | WS_STATE_JOIN_INTEREST | two references */
       running = true; notified = false; cancelled = false;
       join_interest = true; join_waker = false; refs = 2;
       action = 0
     }
     goto polled
  :: else -> skip
  fi;
  /* transition_to_running: 0 success, 1 cancelled, 2 failed, 3 dealloc */
  atomic {
    check_alive ();
    assert (notified);
    if
    :: running || complete ->
       assert (refs > 0);
       refs--;
       if
       :: refs == 0 -> action = 3; freed = true
       :: else -> action = 2
       fi
    :: else ->
       running = true;
       notified = false;
       if
       :: cancelled -> action = 1
       :: else -> action = 0
       fi
    fi
  }
polled:
  if
  :: action == 2 || action == 3 -> skip
  :: action == 1 -> finish_task (false)   /* cancel_task */
  :: action == 0 ->
     /* the poll */
     atomic {
       check_alive ();
       assert (running && !complete && stage == FUTURE);
       assert (polls_in_progress == 0);
       polls_in_progress++
     }
     is_ready = ready;
     /* A poll may yield (ws_context_yield, or a budget that ran out): it
      * returns PENDING whatever it waits for, and makes no wake of its
      * own during the poll: its transition to idle does, in its CAS
      * (ws_task_state_to_idle_yielded_step). */
     yielded = false;
     if
     :: yields < MAX_YIELDS -> yields++; yielded = true; is_ready = false
     :: true -> skip
     fi;
     if
     :: yielded -> skip
     :: else ->
#ifdef AWAITED
     /* a future that needs nothing ends at its first poll, making no
      * waker (a fork-join leaf); or it registers a waker and ends all the
      * same, leaving that waker to be dropped elsewhere, unused or not
      * (a race it won, a timer it no longer needs) */
     if
     :: !waker_given -> is_ready = true
     :: !waker_given ->
        is_ready = true;
        atomic { check_alive (); refs++; waker_given = true; waker_spare = true }
     :: true -> skip
     fi;
#endif
#if defined(DETACHED) || defined(AWAITED)
     /* a first poll that is not ready registers a clone of its waker */
     atomic {
       if
       :: !waker_given && !is_ready -> check_alive (); refs++; waker_given = true
       :: else -> skip
       fi
     }
#endif
        skip
     fi;
     polls_in_progress--;
     /* The first PENDING binds the task (still RUNNING); a closed set
      * refuses it and the poller cancels the task. */
     bind_failed = false;
     if
     :: !is_ready ->
        atomic {
          check_alive ();
          if
          :: !bound && closed -> bind_failed = true
          :: !bound && !closed -> bound = true; registry_linked = true; refs++
          :: else -> skip
          fi
        }
     :: else -> skip
     fi;
     if
     :: is_ready -> finish_task (aw)     /* READY */
     :: bind_failed -> finish_task (false) /* cancel_task */
     :: else ->
        /* transition_to_idle: 0 ok, 1 notified, 2 dealloc, 3 cancelled */
        atomic {
          check_alive ();
          assert (running);
          if
          :: cancelled -> action = 3
          :: else ->
             running = false;
#ifndef BROKEN_IDLE
             if
#ifndef BROKEN_YIELD
             :: notified || yielded -> notified = true; action = 1
#else
             :: notified -> action = 1
#endif
             :: else ->
#endif
                refs--;
                if
                :: refs == 0 -> action = 2; freed = true
                :: else -> action = 0
                fi
#ifndef BROKEN_IDLE
             fi
#endif
          fi
        }
        if
        :: action == 1 -> runq ! 1       /* schedule again */
        :: action == 3 -> finish_task (false) /* cancel_task */
        :: else -> skip
        fi
     fi
  fi
}

/* The workers: once the set is closed a worker may instead drain what it
 * pops (ws_worker_drain, worker_shutdown, ws_runtime_core_shutdown). */
proctype worker ()
{
  byte action;
  bool is_ready;
  bool yielded;
  bool bind_failed;
  bool unique;

end:
  do
  :: runq ? _ ->
   if
   :: closed -> drop_queued ()
   :: true ->
#ifdef BROKEN_AWAITED_ANYWHERE
     run_instance (true)
#else
     run_instance (false)
#endif
   fi
  od
}

/* Sets what the future waits for, then wakes it (maybe twice), then
 * drops its waker reference. */
proctype waker ()
{
#if defined(DETACHED) || defined(AWAITED)
  /* no poll registered a waker if the task ended first (shutdown) */
  if
  :: waker_given -> skip
  :: complete && !waker_given -> goto no_waker
  fi;
#endif
#ifdef AWAITED
  /* a waker the future no longer needs may be dropped without a wake */
  if
  :: waker_spare -> unref (1); goto no_waker
  :: true -> skip
  fi;
#endif
  ready = true;
  wake_by_ref ();
  if
  :: wake_by_ref ()
  :: skip
  fi;
  unref (1);
#if defined(DETACHED) || defined(AWAITED)
no_waker:
#endif
  waker_done = true
}

/* ws_task_cancel from another thread, through its own reference to the
 * WsTask (which shares the handle's join reference). */
proctype canceller ()
{
  if
  :: cancel ()
  :: skip
  fi;
  canceller_done = true
}

/* The join handle (WsTask): waits for the outcome through its join waker
 * (ws_raw_task_try_read_output, set_join_waker), or is dropped early
 * (ws_raw_task_drop_join_handle). */
proctype handle ()
{
  bool registered, unique;
#ifdef AWAITED
  byte action;
  bool is_ready;
  bool yielded;
  bool bind_failed;
  bool taken;

  /* A WsJoinHandle's owner is the only one who cancels through it. */
  if
  :: cancel ()
  :: skip
  fi;
  canceller_done = true;
#endif

  if
  :: /* wait and take the outcome */
#ifdef AWAITED
     /* ws_join_handle_poll on a worker: work-first, the queued instance
      * taken back (ws_local_queue_take_back, which a thief may win) and
      * run nested by the owner, who stays inside this call until it
      * returns. A runtime shutting down takes nothing back. */
     atomic {
       if
       :: !closed && nempty (runq) -> runq ? _; taken = true
       :: else -> taken = false
       fi
     }
     if
     :: taken -> run_instance (true)
     :: else -> skip
     fi;
#endif
     atomic {
       check_alive ();
       if
       :: complete -> registered = false
       :: else -> join_waker = true; registered = true; handle_waiting = true
       fi
     }
     /* The alive count is right once a handle sees the end: the task
      * has left the task registry (ws_metrics_get_alive_tasks). */
     assert (!complete || !registry_linked);
     if
     /* blocks until the completer wakes it, or until another poll of
      * the handle (its owner woken for something else) sees COMPLETE */
     :: registered -> (handle_woken || complete)
     :: else -> skip
     fi;
     atomic {
       check_alive ();
       assert (complete && stage == FINISHED);
       stage = CONSUMED;             /* take_output */
       outcome_consumed++
     };
     canceller_done
  :: /* dropped before the end, or whenever */
     canceller_done;                 /* the WsTask's last reference */
     atomic {
       check_alive ();
       if
       :: complete ->
          if
          :: stage == FINISHED -> stage = CONSUMED; outcome_consumed++
          :: else -> skip
          fi
       :: else -> join_interest = false; join_waker = false
       fi
     }
  fi;
  /* ws_raw_task_drop_join_handle: a COMPLETE task whose last reference
   * is the handle's is the handle's alone; freed without an RMW. */
  atomic {
    check_alive ();
#ifdef BROKEN_UNIQUE_ON_COMPLETE
    /* COMPLETE taken to mean the completer is done with the task */
    unique = complete
#else
    unique = complete && refs == 1
#endif
  }
  if
  :: unique ->
     atomic { check_alive (); drop_stage (); refs = refs - 1; freed = true }
  :: else -> unref (1)
  fi;
  handle_done = true
}

/* Runtime shutdown: close the set (ws_task_registry_close), then
 * (ws_task_registry_shutdown_all, ws_raw_task_shutdown) unlink the task
 * from the task registry, mark it cancelled and, if it is idle, take RUNNING
 * and destroy it here; the set's reference then plays the poller's. A
 * queued instance left behind is run or drained by the worker that pops
 * it (drop_queued). */
proctype shutdown ()
{
  bool linked, idle;

  if
  :: skip
  :: closed = true;
     atomic { linked = registry_linked; registry_linked = false }
     if
     :: linked ->
        atomic {
          check_alive ();
          cancelled = true;
          idle = !running && !complete;
          if
          :: idle -> running = true
          :: else -> skip
          fi
        }
        if
        :: idle -> finish_task (false)    /* cancel_task */
        :: else -> unref (1)
        fi
     :: else -> skip
     fi
  fi
}

/* When nothing can move any more, everything must have ended. */
proctype monitor ()
{
  timeout ->
    assert (complete);                 /* no lost wake */
    assert (completions == 1);
    assert (destroyed == 1);           /* destroy notify exactly once */
    assert (outcome_consumed == 1);    /* exactly one outcome, consumed once */
    assert (handle_done && waker_done);
    assert (!handle_waiting || handle_woken);
    assert (freed && refs == 0)        /* no leak */
}

init
{
  runq ! 1;                            /* the spawn queues it */
  atomic {
    run worker ();
    run worker ();
    run waker ();
#ifdef DETACHED
    canceller_done = true;
    handle_done = true;
#elif defined(AWAITED)
    run handle ();              /* the owner: it cancels, if anyone does */
#else
    run canceller ();
    run handle ();
#endif
    run shutdown ();
    run monitor ()
  }
}
