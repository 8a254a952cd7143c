/* shutdown.pml: the shutdown protocol of the worker pool
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * What shutdown must reach and in what order, with the host (the
 * WsWorkerPool, reached through its WsRuntimeRef) as a reference-counted
 * object that can be freed. NT tasks
 * spawned by one foreign (non-worker) spawner thread, NW workers, one
 * foreign waker (a GIO callback holding a waker of task 0), the thread
 * that calls shutdown and then drops the runtime. Mirrors:
 *  - the spawn gate of ws_worker_pool_spawn (wsrt/core/ws-worker-pool.c): create
 *    the task (ws_raw_task_new; the task takes a host reference, it is not
 *    counted alive yet), in_flight++ (the spawner's per-thread counter),
 *    read `closed`; closed: in_flight--, the refused task is cancelled
 *    right here (ws_raw_task_refuse: destroy notify on the
 *    spawner, complete, free) and was never counted; open: count it alive,
 *    push it to the injection queue, notify a worker, in_flight--;
 *  - the wake of a task from a foreign thread: ws_raw_task_wake_by_ref
 *    (one CAS: idle -> NOTIFIED, +1 reference for the queue), then, as a
 *    separate step, the pool's schedule: push to the injection queue and
 *    notify. A push to the sealed queue only drops the queued reference;
 *    it never cancels or completes a task;
 *  - the worker: pops the injection queue or its local queue and runs the
 *    task (ws_task_state_transition_to_running, the poll,
 *    ws_task_state_transition_to_idle; a wake during the poll re-queues
 *    it on the local queue). The first PENDING
 *    binds the task to the task registry (ws_task_registry_bind, under the
 *    set's lock); a closed set refuses and the poller cancels the task. A
 *    task that ends in its first poll is never bound. On the shutdown
 *    flag: ws_task_registry_shutdown_all (ws_raw_task_shutdown: idle ones are
 *    taken (RUNNING) and destroyed here, running ones are marked CANCELLED
 *    and destroyed by their poller), drain the local queue
 *    (ws_raw_task_drop_queued), exit;
 *  - ws_runtime_core_shutdown: close (the task registry's closed bit, which is
 *    also the spawn gate's) and set the shutdown flag, wake the workers;
 *    wait until every worker has exited; wait until every in_flight is 0;
 *    the final sweep: walk the task registry, drain the injection queue
 *    (ws_inject_queue_pop + ws_raw_task_drop_queued), again until both are
 *    empty, then seal the injection queue in the same step that sees it
 *    empty; return TRUE. The program then drops its runtime reference.
 *
 * The host: every task holds one host reference from ws_raw_task_new
 * until it is freed, the runtime owner holds one; the host is freed when
 * the count reaches 0. Every access to host state (the queues, the owned
 * set, the counters, the notify) asserts that it is not freed. Each C
 * step that is one atomic RMW, one CAS loop or one critical section is one
 * atomic step here (sequentially consistent, as in the other models). The
 * task state word is that of task-state.pml without the join handle (no
 * handle here: the outcome is dropped on completion).
 *
 * The future: a poll returns READY once the waker set `ready`; before,
 * it returns READY or PENDING (either); its first PENDING hands task 0's
 * waker to the GIO callback (+1 task reference, not a host reference).
 *
 * Properties (assertions):
 *  (a) when shutdown returns TRUE, every task the gate accepted has had
 *      its destroy notify run, and the alive count is 0 (in shutdown);
 *  (b) a refused task had its destroy notify run before its spawn
 *      returned, and was never counted alive (in the spawner);
 *  (c) no use after free of the host: every access asserts the host is
 *      not freed; no step touches a freed task either;
 *  (d) when nothing can move any more, every task has completed and been
 *      freed, its destroy notify ran exactly once, no reference count went
 *      below 0, the alive count is 0 and the host was freed (monitor, on
 *      `timeout`).
 * In the protocol the spawner's push never meets a sealed queue (asserted
 * there): the sweep seals only after in_flight was 0 after `closed` was
 * set, so a spawner that read `closed` false has pushed by then.
 *
 * Broken variants (each must give a counterexample; tests
 * model-shutdown-broken-*):
 *  -DBROKEN_LATE_BIND: the code before the gate (commit 0af2f96): no
 *   in_flight gate (the spawner reads `closed`, then pushes, shutdown does
 *   not wait for it), the task is counted alive when it is created, the
 *   injection queue is closed at the start of shutdown and a push to it
 *   cancels the task inline (destroy notify on the spawner or waker), a
 *   single drain instead of the iterative sweep and seal, shutdown returns
 *   `alive == 0`, and tasks hold no host reference. pan finds a use of the
 *   host after the owner dropped it (c): a spawn begun after shutdown
 *   returned reads `closed` on the freed host (or, with the spawns done
 *   before the drop, the waker notifies after its push to the closed
 *   queue). Without the host checks it passes (a), (b) and (d): counted at
 *   creation, a spawn in flight makes shutdown return FALSE instead;
 *  -DBROKEN_NO_GATE: the protocol without shutdown's wait for in_flight:
 *   shutdown returns TRUE with an accepted task not yet pushed, its
 *   destroy notify not run (a). It also breaks (c) (the spawner's
 *   in_flight-- after a worker ran and freed the task and the owner freed
 *   the host), which pan meets first if the workers run first in init;
 *  -DBROKEN_NO_HOST_REF: the protocol, but tasks hold no host reference:
 *   a spawner (in_flight++ after the task was made, or the completion of
 *   a refused task after in_flight--) or the waker (its notify) touches
 *   the host after the owner freed it (c).
 *  -DBROKEN_NO_FOREIGN_REF: the waker holds only its task reference
 *   across its push and notify: the sweep ends the task it pushed, hands
 *   its host reference back (a zombie: the waker still holds the task),
 *   the owner frees the host, and the notify touches it (c);
 *  -DBROKEN_WALK_TAKES_NOTIFIED: the walks take a NOTIFIED task: a walk
 *   ends task 0 between the waker's CAS and its push, the sweep seals
 *   and releases the zombie, the owner frees the host, and the waker's
 *   reference for the push is taken on the freed host (c).
 *
 * -DLAZY_START: the workers start lazily (ws_worker_pool_start, "Lazy
 *   start" at the top of wsrt/core/ws-worker-pool.c): none runs at
 *   first; the spawner, before each spawn, starts them if no start has
 *   been made (one critical section: NW workers, or none if the gate is
 *   closed, or none because the first thread could not start, and then
 *   the gate closes). The shutdown is called from a runtime thread (a
 *   blocking job, a local task): it closes the gate, then marks a pool
 *   never started as started, raises the flag and returns at once; that
 *   thread then drops the runtime. The last worker to stop waits for the
 *   gate and makes the final sweep (ws_worker_pool_thread_stopped).
 *   Property (d) says that every accepted task ends with no other
 *   shutdown call. NT=2, NW=2: 1,347,927 states, depth 376;
 *  -DLAZY_START -DBROKEN_START_BEFORE_CLOSE: shutdown marks the pool
 *   started before it closes the gate, and a start does not look at the
 *   gate: a spawn between the two finds the pool started and the gate
 *   open, and its task stays in the injection queue of a pool that no
 *   thread runs, never ended (d).
 *
 * The program starts a spawn only on a runtime it still holds (the
 * spawner's first step is guarded by !owner_dropped), but the rest of the
 * spawn may race the owner's drop: that is what the task's host
 * reference and the gate are for.
 *
 * NT=2, NW=2: 506,236 states, depth 338. By hand, -DNT=3: 3,188,227
 * states; -DNW=3 not run since the foreign push was added (doc/testing.md).
 */

#ifndef NT
#define NT 2                 /* tasks spawned */
#endif
#ifndef NW
#define NW 2                 /* workers */
#endif

#ifdef BROKEN_LATE_BIND
#define OLD_PROTOCOL
#else
#ifndef BROKEN_NO_GATE
#define GATE                 /* shutdown waits for in_flight == 0 */
#endif
#ifndef BROKEN_NO_HOST_REF
#define HOST_REF             /* a task holds a host reference */
#endif
#ifndef BROKEN_NO_FOREIGN_REF
#define FOREIGN_REF          /* a foreign wake holds the host across push and notify */
#endif
#ifndef BROKEN_WALK_TAKES_NOTIFIED
#define WALK_LEAVES_NOTIFIED /* the walks end only idle, un-NOTIFIED tasks */
#endif
#endif

/* The host (WsWorkerPool and its WsRuntimeRef). */
byte host_refs = 1;          /* the runtime owner's */
bool host_freed = false;
bool closed = false;         /* the task registry's closed bit = the gate's */
bool shutdown_flag = false;  /* WsWorkerPool.shutdown */
bool sealed = false;         /* the injection queue (closed, in the old code) */
byte in_flight = 0;          /* the spawner's gate counter */
byte alive = 0;              /* the task registry's alive counters */
byte n_owned = 0;            /* tasks linked in the task registry */
#ifdef LAZY_START
byte workers_running = 0;    /* n_running_threads: none until a start */
bool started = false;        /* WsWorkerPool.started (and started_flag) */
bool shutdown_begun = false; /* WsWorkerPool.shutdown_begun */
#else
byte workers_running = NW;   /* n_running_threads */
#endif
byte n_shutdown_workers = 0;
chan injq = [NT] of { byte };
chan lq[NW] = [NT] of { byte };

/* The tasks: the state word and what the model observes. */
bool t_running[NT];
bool t_complete[NT];
bool t_notified[NT];
bool t_cancelled[NT];
byte t_refs[NT];
bool t_bound[NT];
bool t_linked[NT];
bool t_counted[NT];          /* counted alive now */
bool t_ever_counted[NT];
bool t_accepted[NT];         /* the gate let it through */
bool t_ready[NT];            /* what the future waits for has happened */
byte t_destroyed[NT];        /* destroy notify runs */
bool t_freed[NT];
bool t_created[NT];
bool t_dead_host[NT];        /* a zombie whose host reference was handed back */
bool waker_given = false;    /* task 0 handed its waker to the waker */
bool shutdown_returned = false;
bool owner_dropped = false;  /* the program dropped the runtime */

inline check_host ()
{
  assert (!host_freed)
}

inline check_task (t)
{
  assert (!t_freed[t])
}

/* ws_runtime_ref_release, for the host reference of a task or of the owner. */
inline drop_host_ref ()
{
  check_host ();
  assert (host_refs > 0);
  host_refs--;
  if
  :: host_refs == 0 -> host_freed = true
  :: else -> skip
  fi
}

/* ws_raw_task_unref_n; dealloc drops the task's host reference. */
inline unref (t, n)
{
  atomic {
    check_task (t);
    assert (t_refs[t] >= n);
    t_refs[t] = t_refs[t] - n;
    if
    :: t_refs[t] == 0 ->
       t_freed[t] = true;
#ifdef HOST_REF
       if
       :: !t_dead_host[t] -> drop_host_ref ()
       :: else -> skip
       fi
#else
       skip
#endif
    :: else -> skip
    fi
  }
}

/* With RUNNING held: the future is dropped (destroy notify: after the
 * READY poll, or cancel_task), then complete (): leave the task registry,
 * count the completion, publish COMPLETE, drop the poller's reference
 * (and the set's if it was still linked). */
inline finish (t)
{
  atomic {
    check_task (t);
    assert (t_running[t] && !t_complete[t]);
    assert (t_destroyed[t] == 0);
    t_destroyed[t]++;
    check_host ();                     /* ws_task_registry_remove, the counters */
    n_unref = 1;
    if
    :: t_linked[t] -> t_linked[t] = false; n_owned--; n_unref = 2
    :: else -> skip
    fi;
    if
    :: t_counted[t] -> t_counted[t] = false; alive--
    :: else -> skip
    fi;
    t_running[t] = false;
    t_complete[t] = true
  }
  unref (t, n_unref);
  n_unref = 0
}

/* ws_raw_task_shutdown: mark CANCELLED; an idle task is taken (RUNNING)
 * and cancelled here; otherwise the caller's reference (the set's or
 * the queued one) is dropped and a running task's poller cancels it. */
inline shutdown_task (t)
{
  atomic {
    check_task (t);
    t_cancelled[t] = true;
    idle = !t_running[t] && !t_complete[t];
    if
    :: idle -> t_running[t] = true
    :: else -> skip
    fi
  }
  if
  :: idle -> idle = false; finish (t)
  :: else -> unref (t, 1)
  fi
}

/* ws_raw_task_shutdown_idle, the walks' version: as shutdown_task, but a
 * NOTIFIED task (queued, or in a waker's hands between its CAS and its
 * push) is only marked CANCELLED, and the holder of that instance ends
 * it. */
inline shutdown_task_idle (t)
{
  atomic {
    check_task (t);
    t_cancelled[t] = true;
#ifdef WALK_LEAVES_NOTIFIED
    idle = !t_running[t] && !t_complete[t] && !t_notified[t];
#else
    idle = !t_running[t] && !t_complete[t];
#endif
    if
    :: idle -> t_running[t] = true
    :: else -> skip
    fi
  }
  if
  :: idle -> idle = false; finish (t)
  :: else -> unref (t, 1)
  fi
}

/* ws_task_registry_shutdown_all: unlink each task under the set's lock; its
 * reference is ours. */
inline walk_owned ()
{
  i = 0;
  do
  :: i < NT ->
     atomic {
       check_host ();
       linked = t_linked[i];
       if
       :: linked -> t_linked[i] = false; n_owned--
       :: else -> skip
       fi
     }
     if
#ifndef OLD_PROTOCOL
     :: linked -> linked = false; shutdown_task_idle (i)
#else
     :: linked -> linked = false; shutdown_task (i)
#endif
     :: else -> skip
     fi;
     i++
  :: else -> i = 0; break
  od
}

/* A push from a foreign thread (pool_schedule: ws_inject_queue_push),
 * then the notify (ws_worker_pool_notify_parked). */
inline push_foreign (t, from_spawner)
{
#ifndef OLD_PROTOCOL
#ifdef FOREIGN_REF
  /* pool_schedule: a waker takes a runtime reference for the push and
   * the notify (a spawner's caller holds the runtime: the gate) */
  if
  :: !from_spawner -> atomic { check_host (); host_refs++ }
  :: else -> skip
  fi;
#endif
  atomic {
    check_host ();
    if
    :: sealed ->
       assert (!from_spawner);         /* the gate: never for a spawn */
       unref (t, 1)                    /* only the queued reference */
    :: else -> injq ! t
    fi
  }
#else
  /* A push to the closed queue cancels the task inline. */
  atomic {
    check_host ();
    if
    :: sealed -> refused = true
    :: else -> injq ! t
    fi
  }
  if
  :: refused -> refused = false; shutdown_task (t)
  :: else -> skip
  fi;
#endif
  atomic { check_host () }             /* the notify */
#if !defined(OLD_PROTOCOL) && defined(FOREIGN_REF)
  if
  :: !from_spawner -> atomic { drop_host_ref () }
  :: else -> skip
  fi
#endif
}

/* ws_raw_task_run on a worker. */
inline run_task (t)
{
  /* transition_to_running: 0 poll, 1 cancelled, 2 ended: drop the ref */
  atomic {
    check_task (t);
    assert (t_notified[t]);
    if
    :: t_running[t] || t_complete[t] -> act = 2
    :: else ->
       t_running[t] = true;
       t_notified[t] = false;
       if
       :: t_cancelled[t] -> act = 1
       :: else -> act = 0
       fi
    fi
  }
  if
  :: act == 2 -> act = 0; unref (t, 1)
  :: act == 1 -> act = 0; finish (t)   /* cancel_task */
  :: act == 0 ->
     /* the poll */
     atomic {
       check_task (t);
       assert (t_running[t] && t_destroyed[t] == 0);
       if
       :: t_ready[t] -> pending = false
       :: else ->
          if
          :: pending = false
          :: pending = true;
             if
             :: t == 0 && !waker_given -> waker_given = true; t_refs[t]++
             :: else -> skip
             fi
          fi
       fi
     }
     if
     :: !pending -> finish (t)         /* READY */
     :: else ->
        pending = false;
        /* The first PENDING binds the task (ws_task_registry_bind, under
         * the set's lock), or cancels it if the set is closed. */
        atomic {
          check_task (t);
          if
          :: !t_bound[t] ->
             check_host ();
             if
             :: closed -> act = 1
             :: else ->
                t_bound[t] = true; t_linked[t] = true; n_owned++; t_refs[t]++
             fi
          :: else -> skip
          fi
        }
        if
        :: act == 1 -> act = 0; finish (t)   /* cancel_task */
        :: else ->
           /* transition_to_idle: 0 idle (drop our ref), 1 notified,
            * 3 cancelled */
           atomic {
             check_task (t);
             assert (t_running[t]);
             if
             :: t_cancelled[t] -> act = 3
             :: else ->
                t_running[t] = false;
                if
                :: t_notified[t] -> act = 1
                :: else -> act = 0; unref (t, 1)
                fi
             fi
           }
           if
           :: act == 1 -> act = 0; atomic { check_host (); lq[me] ! t }   /* schedule, local */
           :: act == 3 -> act = 0; finish (t)                             /* cancel_task */
           :: else -> skip
           fi
        fi
     fi
  fi
}

/* The final sweep (final_sweep, then ws_raw_task_release_zombies): walk
 * the task registry, drain the injection queue, again until no task is
 * alive, sealing the queue in the step that sees it empty; then the
 * zombies hand their host references back. */
inline final_sweep ()
{
  do
  :: walk_owned ();
     do
     :: atomic { nempty (injq) -> check_host (); injq ? t }; shutdown_task (t); t = 0
     :: empty (injq) -> break
     od;
     /* Seal only once no task is alive: a task still alive has its
      * queued instance with a waker that has not pushed yet. */
     atomic {
       check_host ();
       if
       :: len (injq) == 0 && n_owned == 0 && alive == 0 -> sealed = true; done = true
       :: else -> skip
       fi
     }
     if
     :: done -> break
     :: else -> skip
     fi
  od;
  /* ws_raw_task_release_zombies: an ended task that something still
   * holds (the waker) hands its host reference back (zombie lock). */
  i = 0;
  do
  :: i < NT ->
     atomic {
       if
       :: t_complete[i] && !t_freed[i] && !t_dead_host[i] ->
          t_dead_host[i] = true; drop_host_ref ()
       :: else -> skip
       fi
     };
     i++
  :: else -> i = 0; break
  od
}

proctype worker (byte me)
{
  byte t, i, act, n_unref;
  bool idle, linked, pending;
  bool last, done;

  do
  :: atomic { nempty (lq[me]) -> check_host (); lq[me] ? t }; run_task (t); t = 0
  :: atomic { nempty (injq) -> check_host (); injq ? t }; run_task (t); t = 0
  :: shutdown_flag -> break            /* seen in maintenance or park */
  od;

  /* worker_shutdown */
  walk_owned ();
  do                                   /* drain_local */
  :: atomic { nempty (lq[me]) -> check_host (); lq[me] ? t }; shutdown_task (t); t = 0
  :: empty (lq[me]) -> break
  od;
#ifdef OLD_PROTOCOL
  /* The last worker also drained the (closed) injection queue. */
  atomic { check_host (); n_shutdown_workers++; last = (n_shutdown_workers == NW) };
  if
  :: last ->
     do
     :: atomic { nempty (injq) -> check_host (); injq ? t }; shutdown_task (t); t = 0
     :: empty (injq) -> break
     od
  :: else -> skip
  fi;
#endif
#ifndef LAZY_START
  atomic { check_host (); workers_running-- }
#else
  /* ws_worker_pool_thread_stopped: the last pool thread, once shutdown
   * has begun, waits for the gate and sweeps (shutdown returned at
   * once). */
  atomic { check_host (); workers_running--; last = (workers_running == 0 && shutdown_begun) };
  if
  :: last ->
     in_flight == 0;
     final_sweep ()
  :: else -> skip
  fi;
  atomic { drop_host_ref () }          /* the thread's runtime reference */
#endif
}

proctype spawner ()
{
  byte k = 0;
  byte i, n_unref;
  bool refused, idle;
#ifdef LAZY_START
  byte w;
#endif

  /* The program spawns only on a runtime it still holds: a spawn call
   * begins (ws_raw_task_new) before the owner's drop, and may race it
   * from then on. */
  do
  :: atomic { k < NT && !owner_dropped ->
#ifndef OLD_PROTOCOL
#ifdef LAZY_START
       /* start_if_unstarted: started_flag, else ws_worker_pool_start,
        * one critical section under the pool's lock */
       check_host ();
       if
       :: !started ->
          started = true;
          if
#ifndef BROKEN_START_BEFORE_CLOSE
          :: closed -> skip            /* no worker into a closed pool */
          :: !closed -> closed = true  /* the first thread could not start */
#endif
          :: !closed ->
             workers_running = NW;
             host_refs = host_refs + NW;   /* each worker holds the runtime */
             w = 0;
             do
             :: w < NW -> run worker (w); w++
             :: else -> w = 0; break
             od
          fi
       :: else -> skip
       fi;
       /* (ws_raw_task_new follows the start; nothing between them
        * touches what another process reads, so they are one step) */
#endif
       /* ws_raw_task_new: NOTIFIED, the queued reference, a host
        * reference; not counted alive */
       check_host ();
       t_created[k] = true;
       t_notified[k] = true;
       t_refs[k] = 1;
#ifdef HOST_REF
       host_refs++
#endif
     }
     atomic { check_host (); in_flight++ }
     atomic { check_host (); refused = closed; t_accepted[k] = !refused }
     if
     :: refused ->
        atomic { check_host (); in_flight-- };
        /* ws_raw_task_refuse */
        atomic { check_task (k); t_cancelled[k] = true; t_running[k] = true };
        finish (k);
        assert (t_destroyed[k] == 1 && !t_ever_counted[k]);   /* (b) */
        refused = false
     :: else ->
        atomic { check_host (); alive++; t_counted[k] = true; t_ever_counted[k] = true };
        push_foreign (k, true);
        atomic { check_host (); in_flight-- }
     fi;
#else
       /* ws_raw_task_new: counted alive at once, no host reference */
       check_host ();
       t_created[k] = true;
       t_notified[k] = true;
       t_refs[k] = 1;
       alive++; t_counted[k] = true; t_ever_counted[k] = true
     }
     atomic { check_host (); refused = closed; t_accepted[k] = !refused }
     if
     :: refused ->
        refused = false;
        atomic { check_task (k); t_cancelled[k] = true; t_running[k] = true };
        finish (k);
        assert (t_destroyed[k] == 1)   /* (b), but it was counted */
     :: else -> push_foreign (k, true)
     fi;
#endif
     k++
  :: atomic { k == NT || owner_dropped } -> break
  od
}

/* The GIO callback of task 0's operation, on a foreign thread: sets what
 * the future waits for and wakes it, or is cancelled; then drops the
 * waker. */
proctype waker ()
{
  byte i, n_unref;
  bool submit, idle, refused;

  if
  :: waker_given ->
     if
     :: t_ready[0] = true;
        /* ws_raw_task_wake_by_ref */
        atomic {
          check_task (0);
          if
          :: t_complete[0] || t_notified[0] -> skip
          :: !t_complete[0] && !t_notified[0] && t_running[0] -> t_notified[0] = true
          :: !t_complete[0] && !t_notified[0] && !t_running[0] ->
             t_notified[0] = true; t_refs[0]++; submit = true
          fi
        }
        if
        :: submit -> submit = false; push_foreign (0, false)
        :: else -> skip
        fi
     :: skip
     fi;
     unref (0, 1)
  :: atomic { !waker_given && (t_complete[0] || !t_created[0] && owner_dropped) } ->
     skip                              /* ended without one, or never made */
  fi
}

proctype shutdown ()
{
  byte t, i, n_unref;
  bool idle, linked, done;

#ifdef LAZY_START
  /* ws_worker_pool_begin_shutdown, called from a runtime thread: close
   * the gate, mark a pool never started as started (no worker will
   * start), raise the flag; then return FALSE at once, and this thread
   * drops the runtime (its last WsRuntime reference, inside a task). */
#ifndef BROKEN_START_BEFORE_CLOSE
  atomic { check_host (); closed = true };
#endif
  atomic {
    check_host ();
    shutdown_begun = true;
    if
    :: !started -> started = true
    :: else -> skip
    fi
  };
#ifdef BROKEN_START_BEFORE_CLOSE
  atomic { check_host (); closed = true };
#endif
  atomic { check_host (); shutdown_flag = true };
  atomic { shutdown_returned = true; drop_host_ref (); owner_dropped = true }
#else
  /* 1: close (the task registry and the gate), set the flag, wake workers */
  atomic {
    check_host ();
    closed = true;
#ifdef OLD_PROTOCOL
    sealed = true                      /* the old protocol sealed the injection queue here */
#endif
  }
  atomic { check_host (); shutdown_flag = true };
  /* 2: wait for the workers */
  workers_running == 0;
#ifdef GATE
  /* 3: wait for the spawners in flight */
  in_flight == 0;
#endif
  /* 4: the final sweep */
#ifndef OLD_PROTOCOL
  final_sweep ();
  /* 5: return TRUE; (a) */
  atomic {
    i = 0;
    do
    :: i < NT -> assert (!t_accepted[i] || t_destroyed[i] == 1); i++
    :: else -> break
    od;
    assert (alive == 0);
    shutdown_returned = true
  }
#else
  walk_owned ();
  do
  :: atomic { nempty (injq) -> check_host (); injq ? t }; shutdown_task (t); t = 0
  :: empty (injq) -> break
  od;
  /* returns alive == 0; (a) when it returns TRUE */
  atomic {
    check_host ();
    if
    :: alive == 0 ->
       i = 0;
       do
       :: i < NT -> assert (!t_accepted[i] || t_destroyed[i] == 1); i++
       :: else -> break
       od
    :: else -> skip
    fi;
    shutdown_returned = true
  }
#endif
  /* The program drops the runtime. */
  atomic { drop_host_ref (); owner_dropped = true }
#endif
}

/* When nothing can move any more, everything must have ended. */
proctype monitor ()
{
  byte i;

  timeout ->
    assert (shutdown_returned);
    i = 0;
    do
    :: i < NT ->
       assert (!t_created[i] || t_complete[i] && t_destroyed[i] == 1);
       assert (!t_created[i] || t_freed[i] && t_refs[i] == 0);
       i++
    :: else -> break
    od;
    assert (alive == 0 && n_owned == 0);
    assert (host_freed)
}

/* The order of the runs is the order of pan's search: with the spawner
 * first, the first error pan meets under -DBROKEN_NO_GATE is property (a)
 * (with the workers first it meets that variant's use after free). */
init
{
  byte w;

  atomic {
    run spawner ();
    run waker ();
    run shutdown ();
#ifndef LAZY_START
    w = 0;
    do
    :: w < NW -> run worker (w); w++
    :: else -> break
    od;
#endif
    run monitor ()
  }
}
