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
 * Property: when nothing can move any more, both jobs have run.
 *
 * -DBROKEN_ONLY_WHEN_QUEUED (a thread that takes a job starts another
 * only if more jobs are still queued) gives the counterexample: the
 * thread that took the first job started none, and the second job waits
 * for ever behind the first with the pool below its cap.
 * -DBROKEN_NO_STANDBY (a thread that may not take a job waits listed idle
 * like the others, so nobody looks again when a busy job blocks) gives
 * one too: job 1 was busy when the second thread looked, then blocked
 * waiting for job 2, which nobody takes.
 */

#define MAX_THREADS 2
#define CPU_SLOTS   1

chan queue = [2] of { byte };
byte n_threads = 0;
byte n_idle = 0;
byte n_starting = 0;
bool woken[MAX_THREADS + 1];   /* a listed idle thread was unlisted by a spawn */
bool listed[MAX_THREADS + 1];
bool job1_done = false;
bool job2_done = false;
byte next_id = 0;
bool busy[3];                  /* a running job's meter says busy */
bool job1_waiting = false;
byte standby = 0;              /* the standby thread, 0: none */

#define N_BUSY     (busy[1] + busy[2])
#define ADMITTED   (N_BUSY < CPU_SLOTS)

proctype Thread (byte me)
{
  byte job;
  bool start;

  atomic { n_starting-- };

  do
  :: /* wait_for_job_locked, then take a job (one critical section each) */
     atomic {
       if
       :: len (queue) > 0 && ADMITTED -> queue ? job; busy[job] = true
#ifndef BROKEN_NO_STANDBY
       :: len (queue) > 0 && !ADMITTED && standby == 0 -> job = 0; standby = me
#endif
       :: else -> job = 0
       fi
     };
     if
     :: job == 0 && standby == me ->
        /* wait_standby_locked: a meter window, then look again */
        atomic { standby = 0 }
     :: job == 0 && standby != me ->
        /* list idle, or retire while another is listed idle */
        atomic {
          if
#ifndef BROKEN_NO_STANDBY
          :: len (queue) > 0 && (ADMITTED || standby == 0) -> skip   /* look again */
#else
          :: len (queue) > 0 && ADMITTED -> skip
#endif
#ifndef BROKEN_NO_STANDBY
          :: !(len (queue) > 0 && (ADMITTED || standby == 0)) && n_idle > 0 ->
#else
          :: !(len (queue) > 0 && ADMITTED) && n_idle > 0 ->
#endif
             n_threads--;
             goto retired
          :: else ->
             listed[me] = true;
             woken[me] = false;
             n_idle++
          fi
        };
        if
        :: listed[me] ->
end_idle:
           /* until woken by a spawn, or timed out to retire */
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
             run Thread (next_id)
          :: else -> skip
          fi
        };
        /* run_job */
        if
        :: job == 1 ->
           job1_waiting = true;
           job2_done;
           atomic { job1_waiting = false; job1_done = true; busy[1] = false }
        :: job == 2 -> atomic { job2_done = true; busy[2] = false }
        fi
     fi
  od;
retired:
  skip
}

/* blocking_schedule: queue, wake one listed idle thread; start a thread
 * only when the pool has none. */
inline spawn (j)
{
  atomic {
    queue ! j;
    if
    :: standby != 0 -> skip
    :: standby == 0 && n_idle > 0 ->
       byte w = 0;
       do
       :: w <= MAX_THREADS && listed[w] -> break
       :: w <= MAX_THREADS && !listed[w] -> w++
       od;
       listed[w] = false;
       woken[w] = true;
       n_idle--
    :: standby == 0 && n_idle == 0 && n_threads == 0 ->
       n_threads++;
       n_starting++;
       next_id++;
       run Thread (next_id)
    :: else -> skip
    fi
  }
}

proctype Spawner ()
{
  spawn (1);
  spawn (2)
}

init
{
  atomic
  {
    run Spawner ()
  }
}

/* ws_run_meter_is_busy: a job that waits is found blocked, some time. */
active proctype Meter ()
{
end_meter:
  atomic { job1_waiting && busy[1] -> busy[1] = false }
}

active proctype Monitor ()
{
  timeout -> assert (job1_done && job2_done)
}
