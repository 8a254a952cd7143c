/* blocking-pool.pml: who starts the blocking pool's threads, and why no
 * queued job is stranded
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Mirrors wsrt/core/ws-blocking-pool.c: blocking_schedule (a spawn queues
 * the job and wakes one listed idle thread unless there is a standby; it
 * starts a thread only when the pool has none), thread_loop (a thread
 * that takes a job first starts one more when no thread is idle,
 * standby or starting and the pool is below its cap), admitted_locked (a
 * thread takes a queued job only while fewer than CPU_SLOTS running jobs
 * are busy) and wait_for_job_locked (a thread that may not take the job
 * yet is the standby, which looks again after each meter window, if there
 * is none; otherwise it waits listed idle, as a thread with nothing to do
 * does, until woken, and retires only while another thread is listed
 * idle). Everything under the pool's lock is one atomic step here, as it
 * is one critical section in C. The pool's first thread is started by the
 * first spawn, which finds none.
 *
 * The jobs: two, spawned one after the other from a foreign thread, on a
 * pool capped at two threads with one CPU slot; the first waits for the
 * second to have run (a job that waits for another, as a pipeline stage
 * does). A job counts as busy from the moment it is taken; while job 1
 * waits, the meter (ws-run-meter.c) may find it blocked at any moment
 * (process Meter). A listed idle thread times out only to retire (while
 * another is listed idle): in C a lone idle thread also wakes at its
 * grace and its keep-alive, but a job that waits for those has waited
 * seconds, so the model does not count them as progress.
 *
 * Scenario -DIDLE_START: two threads are listed idle from an earlier
 * burst, the cap is 3, and jobs 1 and 2 each wait for job 3. It is where
 * the standby's end matters: a spawn that found a standby woke nobody,
 * so the standby, when it takes a job and starts no thread, wakes a
 * listed idle thread for the jobs still queued (thread_loop).
 *
 * The meter may lie: at the start it either tells the truth (finds a
 * waiting job blocked, some time) or says busy for ever (meter_lies). The
 * admission deadline (ws-blocking-pool.c, "The admission deadline") is
 * process Clock: once the job at the head of the queue has waited there
 * for the deadline it is overdue, and a thread may take it whatever the
 * meter says; the next job to reach the head starts its wait anew. The
 * standby's looks that find nothing changed (the queue still holds a job
 * that may not be taken) are stutter steps: the model waits for a change
 * instead, so that a standby that would look for ever is a state where
 * nothing moves.
 *
 * Property: when nothing can move any more, every job has run.
 *
 * -DBROKEN_ONLY_WHEN_QUEUED (a thread that takes a job starts another
 * only if more jobs are still queued) gives the counterexample: the
 * thread that took the first job started none, and the second job waits
 * for ever behind the first with the pool below its cap.
 * -DBROKEN_NO_STANDBY (a thread that may not take a job waits listed idle
 * like the others, so nobody looks again when a busy job blocks) gives
 * one too: job 1 was busy when the second thread looked, then blocked
 * waiting for job 2, which nobody takes.
 * -DIDLE_START -DBROKEN_NO_HANDOFF (the standby takes a job without
 * waking an idle thread) gives one: job 3 stays queued behind jobs 1 and
 * 2, which wait for it, with an idle thread asleep and room in the pool.

 * -DBROKEN_NO_DEADLINE (the meter's word is the only rule, as before the
 * deadline) gives one: the meter says job 1 is busy for ever while it
 * waits for job 2, and the standby never takes job 2.
 */

#ifdef IDLE_START
#define MAX_THREADS 3
#define N_JOBS      3
#else
#define MAX_THREADS 2
#define N_JOBS      2
#endif
#define CPU_SLOTS   1
#define N_IDS       (MAX_THREADS + 3)

chan queue = [N_JOBS] of { byte };
byte n_threads = 0;
byte n_idle = 0;
byte n_starting = 0;
bool woken[N_IDS];             /* a listed idle thread was unlisted by a wake */
bool listed[N_IDS];
byte next_id = 0;
bool done[N_JOBS + 1];
bool busy[N_JOBS + 1];         /* a running job's meter says busy */
bool waiting[N_JOBS + 1];      /* a job that waits for the last one */
byte standby = 0;              /* the standby thread, 0: none */
bool meter_lies;               /* the meter says busy for ever */
bool overdue;                  /* the queue's head has waited the deadline */

#ifdef IDLE_START
#define N_BUSY     (busy[1] + busy[2] + busy[3])
#define ALL_DONE   (done[1] && done[2] && done[3])
#else
#define N_BUSY     (busy[1] + busy[2])
#define ALL_DONE   (done[1] && done[2])
#endif
#define ADMITTED   (N_BUSY < CPU_SLOTS)
#ifdef BROKEN_NO_DEADLINE
#define ADMIT      ADMITTED
#else
#define ADMIT      (ADMITTED || overdue)
#endif

/* Unlists and wakes the first listed idle thread (a spawn's wake, and
 * the standby's hand-off). */
inline wake_idle ()
{
  byte w = 0;
  do
  :: w < N_IDS && listed[w] -> break
  :: w < N_IDS && !listed[w] -> w++
  od;
  listed[w] = false;
  woken[w] = true;
  n_idle--
}

proctype Thread (byte me; bool idle_first)
{
  byte job;
  bool start;

  if
  :: idle_first -> goto idle_wait     /* listed idle by init */
  :: else -> atomic { n_starting-- }
  fi;

  do
  :: /* wait_for_job_locked, then take a job (one critical section each) */
     atomic {
       if
       :: len (queue) > 0 && ADMIT -> queue ? job; busy[job] = true; overdue = false
#ifndef BROKEN_NO_STANDBY
       :: len (queue) > 0 && !ADMIT && standby == 0 -> job = 0; standby = me
#endif
       :: else -> job = 0
       fi
     };
     if
     :: job == 0 && standby == me ->
        /* wait_standby_locked: a meter window, then look again; looks
         * that find the same (a job queued that may not be taken) are
         * stutter steps */
        atomic { !(len (queue) > 0 && !ADMIT) -> standby = 0 }
     :: job == 0 && standby != me ->
        /* list idle, or retire while another is listed idle */
        atomic {
          if
#ifndef BROKEN_NO_STANDBY
          :: len (queue) > 0 && (ADMIT || standby == 0) -> skip   /* look again */
          :: !(len (queue) > 0 && (ADMIT || standby == 0)) && n_idle > 0 ->
#else
          :: len (queue) > 0 && ADMIT -> skip
          :: !(len (queue) > 0 && ADMIT) && n_idle > 0 ->
#endif
             n_threads--;
             goto retired
#ifndef BROKEN_NO_STANDBY
          :: !(len (queue) > 0 && (ADMIT || standby == 0)) ->
#else
          :: !(len (queue) > 0 && ADMIT) ->
#endif
             listed[me] = true;
             woken[me] = false;
             n_idle++
          fi
        };
idle_wait:
        if
        :: listed[me] ->
end_idle:
           /* until woken, or timed out to retire */
           if
           :: woken[me] -> skip
           :: atomic { listed[me] && n_idle > 1 -> listed[me] = false; n_idle-- }
           fi
        :: else -> skip
        fi
     :: else ->
        atomic {
          start = n_idle == 0 && n_starting == 0 && standby == 0 && n_threads < MAX_THREADS;
#ifdef BROKEN_ONLY_WHEN_QUEUED
          start = start && len (queue) > 0;
#endif
          if
          :: start ->
             n_threads++;
             n_starting++;
             next_id++;
             run Thread (next_id, false)
#ifndef BROKEN_NO_HANDOFF
          :: !start && standby == 0 && len (queue) > 0 && n_idle > 0 ->
             wake_idle ()
          :: else -> skip
#else
          :: else -> skip
#endif
          fi
        };
        /* run_job: every job but the last waits for the last */
        if
        :: job < N_JOBS ->
           waiting[job] = true;
           done[N_JOBS];
           atomic { waiting[job] = false; done[job] = true; busy[job] = false }
        :: job == N_JOBS -> atomic { done[job] = true; busy[job] = false }
        fi
     fi
  od;
retired:
  skip
}

/* blocking_schedule: queue, wake one listed idle thread unless there is a
 * standby; start a thread only when the pool has none. */
inline spawn (j)
{
  atomic {
    queue ! j;
    if
    :: standby != 0 -> skip
    :: standby == 0 && n_idle > 0 -> wake_idle ()
    :: standby == 0 && n_idle == 0 && n_threads == 0 ->
       n_threads++;
       n_starting++;
       next_id++;
       run Thread (next_id, false)
    :: else -> skip
    fi
  }
}

proctype Spawner ()
{
  byte j = 1;
  do
  :: j <= N_JOBS -> spawn (j); j++
  :: j > N_JOBS -> break
  od
}

init
{
  atomic
  {
    if
    :: meter_lies = false
    :: meter_lies = true
    fi;
#ifdef IDLE_START
    /* two threads listed idle, from an earlier burst */
    n_threads = 2;
    n_idle = 2;
    listed[1] = true;
    listed[2] = true;
    next_id = 2;
    run Thread (1, true);
    run Thread (2, true);
#endif
    run Spawner ()
  }
}

/* ws_run_meter_is_busy: a job that waits is found blocked, some time,
 * unless the meter lies. */
active proctype Meter ()
{
end_meter:
  do
  :: atomic { !meter_lies && waiting[1] && busy[1] -> busy[1] = false }
#ifdef IDLE_START
  :: atomic { !meter_lies && waiting[2] && busy[2] -> busy[2] = false }
#endif
  od
}

/* The admission deadline: the job at the head of the queue becomes
 * overdue some time after it got there (the pop that made it the head
 * cleared the flag). */
active proctype Clock ()
{
end_clock:
  do
  :: atomic { len (queue) > 0 && !overdue -> overdue = true }
  od
}

active proctype Monitor ()
{
  timeout -> assert (ALL_DONE)
}
