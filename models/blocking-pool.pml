/* blocking-pool.pml: who starts the blocking pool's threads, and why no
 * queued job is stranded
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Mirrors wsrt/core/ws-blocking-pool.c: blocking_schedule (a spawn queues
 * the job and wakes one listed idle thread; it starts a thread only when
 * the pool has none), thread_loop (a thread that takes a job first starts
 * one more when no thread is idle or starting and the pool is below its
 * cap) and wait_idle_locked (an idle thread waits until woken or until
 * its keep-alive, and retires only while another thread is listed idle).
 * Everything under the pool's lock is one atomic step here, as it is one
 * critical section in C. The pool's first thread starts with the runtime
 * (ws_blocking_pool_start).
 *
 * The jobs: two, spawned one after the other from a foreign thread, on a
 * pool capped at two threads; the first waits for the second to have run
 * (a job that waits for another, as a pipeline stage does). Keep-alive
 * timeouts are nondeterministic: an idle thread may time out at any
 * moment.
 *
 * Property: when nothing can move any more, both jobs have run.
 *
 * -DBROKEN_ONLY_WHEN_QUEUED (a thread that takes a job starts another
 * only if more jobs are still queued) gives the counterexample: the
 * thread that took the first job started none, and the second job waits
 * for ever behind the first with the pool below its cap.
 */

#define MAX_THREADS 2

chan queue = [2] of { byte };
byte n_threads = 0;
byte n_idle = 0;
byte n_starting = 0;
bool woken[MAX_THREADS + 1];   /* a listed idle thread was unlisted by a spawn */
bool listed[MAX_THREADS + 1];
bool job1_done = false;
bool job2_done = false;
byte next_id = 0;

proctype Thread (byte me)
{
  byte job;
  bool start;

  atomic { n_starting-- };

  do
  :: /* wait_idle_locked, then take a job (one critical section each) */
     atomic {
       if
       :: len (queue) > 0 -> queue ? job
       :: else -> job = 0
       fi
     };
     if
     :: job == 0 ->
        /* list idle, or retire while another is listed idle */
        atomic {
          if
          :: len (queue) > 0 -> skip          /* raced a push: look again */
          :: len (queue) == 0 && n_idle > 0 ->
             n_threads--;
             goto retired
          :: len (queue) == 0 ->
             listed[me] = true;
             woken[me] = false;
             n_idle++
          fi
        };
        if
        :: listed[me] ->
end_idle:
           /* until woken by a spawn, or the keep-alive times out */
           if
           :: woken[me] -> skip
           :: atomic { listed[me] -> listed[me] = false; n_idle-- }
           fi
        :: else -> skip
        fi
     :: else ->
        atomic {
          start = n_idle == 0 && n_starting == 0 && n_threads < MAX_THREADS;
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
        :: job == 1 -> job2_done; job1_done = true
        :: job == 2 -> job2_done = true
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
    :: n_idle > 0 ->
       byte w = 0;
       do
       :: w <= MAX_THREADS && listed[w] -> break
       :: w <= MAX_THREADS && !listed[w] -> w++
       od;
       listed[w] = false;
       woken[w] = true;
       n_idle--
    :: n_idle == 0 && n_threads == 0 ->
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
    /* ws_blocking_pool_start: the first thread */
    n_threads = 1;
    n_starting = 1;
    next_id = 1;
    run Thread (1);
    run Spawner ()
  }
}

active proctype Monitor ()
{
  timeout -> assert (job1_done && job2_done)
}
