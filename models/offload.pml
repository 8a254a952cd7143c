/* offload.pml: the fibers' syscall offload, its thread backend and the
 * end of an op (wsrt/core/ws-offload.c)
 *
 * Three callers make one call each, with at most two threads (or, with
 * -DREPEAT, two callers make two calls each, one after the other, with
 * one thread); each call waits either by suspending (woken after `done`;
 * a stale wake of a caller's last call only polls again) or, as a
 * cancelled fiber does, blocking (ws_offload_wait: the waiter count, then
 * a wait on the condition under the lock). The threads are capped at
 * MAX_THREADS, so calls also queue. Mirrored functions: threads_submit,
 * offload_thread_main, op_end, ws_offload_wait.
 *
 * Checked:
 *  - no call is stranded and no blocking waiter sleeps for ever: every
 *    caller reaches its end (an invalid end state otherwise; the idle
 *    thread's wait is a valid end);
 *  - op_end touches no field of an op once its caller may have returned
 *    (the waker is taken before `done`);
 *  - a thread is started only when every thread runs a call: n_threads
 *    <= n_in_flight just after a start (so the threads never outnumber
 *    the most calls in flight at once), and n_threads <= MAX_THREADS.
 *
 * Broken variants, each must fail:
 *  - BROKEN_WAITERS_BEFORE_DONE: op_end reads the waiter count before it
 *    sets `done`: a waiter that counts itself in between sleeps for ever;
 *  - BROKEN_WAKER_AFTER_DONE: op_end takes the waker after `done`: the
 *    caller may have returned (its op was on its stack);
 *  - BROKEN_START_WHILE_IDLE: a submission starts a thread although one
 *    is idle: the bound fails;
 *  - BROKEN_NO_QUEUE: a thread that ends an op does not take a queued
 *    one: the queued call is stranded.
 */

#ifdef REPEAT
#define N_CALLERS   2
#define N_CALLS     2
#define MAX_THREADS 1
#else
#define N_CALLERS   3
#define N_CALLS     1
#define MAX_THREADS 2
#endif
#define N_PIDS      8
#define NONE        255

byte n_threads;
byte n_in_flight;
byte n_idle;
bit  is_idle[N_PIDS];             /* listed idle, by pid */
byte handed[N_PIDS];              /* the op handed to an idle thread, +1 */
chan queue = [N_CALLERS] of { byte };

/* One op per caller at a time: op i is caller i's current call. */
bit  done[N_CALLERS];
bit  returned[N_CALLERS];         /* the caller left its call (its op is gone) */
bit  waker[N_CALLERS];            /* the op holds its caller's waker */
bit  woken[N_CALLERS];
byte n_waiters;
bit  lock;                        /* the offload's lock, for the waiters */
bit  sleeping[N_CALLERS];         /* a blocking waiter in its cond wait */

/* Uses the caller's locals w and j. */
inline op_end (i)
{
#ifdef BROKEN_WAKER_AFTER_DONE
  done[i] = 1;
  w = n_waiters;
  assert (!returned[i]);          /* reads op->waker: the op may be gone */
  waker[i] = 0;
#else
  assert (!returned[i]);
  waker[i] = 0;                   /* g_steal_pointer (&op->waker) */
#ifdef BROKEN_WAITERS_BEFORE_DONE
  w = n_waiters;
  done[i] = 1;
#else
  done[i] = 1;                    /* seq_cst */
  w = n_waiters;                  /* seq_cst */
#endif
#endif
  if
  :: w > 0 ->
       atomic { lock == 0 -> lock = 1 };
       j = 0;
       do
       :: j < N_CALLERS -> sleeping[j] = 0; j++
       :: else -> break
       od;
       lock = 0
  :: else
  fi;
  woken[i] = 1                    /* ws_waker_take_and_wake () */
}

proctype thread (byte first)
{
  byte op = first;
  byte next;
  byte w, j;

  do
  :: /* op_run (op), then choose what comes next */
     atomic {
       n_in_flight--;
       next = NONE;
#ifndef BROKEN_NO_QUEUE
       if
       :: nempty (queue) -> queue ? next
       :: empty (queue)
       fi;
#endif
       if
       :: next == NONE -> is_idle[_pid] = 1; n_idle++
       :: else
       fi
     };
     op_end (op);
     if
     :: next != NONE -> op = next
     :: else ->
          /* idle: an op handed to it, or, while another thread is idle
           * too, the end of its grace (the standby's keep-alive is left
           * out: it may wait for ever) */
end_idle:
          if
          :: atomic { handed[_pid] != 0 -> op = handed[_pid] - 1; handed[_pid] = 0 }
          :: atomic { is_idle[_pid] && n_idle > 1 ->
                        is_idle[_pid] = 0; n_idle--; n_threads-- };
             break
          fi
     fi
  od
}

inline submit (i)
{
  atomic {
    done[i] = 0;
    waker[i] = 1;
    n_in_flight++;
    if
    :: n_idle > 0 ->
         j = 0;
         do
         :: is_idle[j] -> break
         :: else -> j++
         od;
         is_idle[j] = 0;
         n_idle--;
         handed[j] = i + 1
#ifdef BROKEN_START_WHILE_IDLE
    :: n_threads < MAX_THREADS ->
#else
    :: n_idle == 0 && n_threads < MAX_THREADS ->
#endif
         /* every thread runs a call */
         n_threads++;
         assert (n_threads <= n_in_flight);
         run thread (i)
    :: n_idle == 0 && n_threads >= MAX_THREADS -> queue ! i
    fi
  }
}

proctype caller (byte i)
{
  byte k = 0;
  byte j;

  do
  :: k < N_CALLS ->
       returned[i] = 0;
       submit (i);
       if
       :: /* suspends until woken; a stale wake of its last call
           * only polls again */
          do
          :: atomic { woken[i] == 1 -> woken[i] = 0 };
             if
             :: done[i] -> break
             :: else
             fi
          od
       :: /* cancelled: ws_offload_wait () */
          atomic { lock == 0 -> lock = 1 };
          n_waiters++;
          do
          :: done[i] -> break
          :: else ->
               atomic { sleeping[i] = 1; lock = 0 };
               atomic { sleeping[i] == 0 && lock == 0 -> lock = 1 }
          od;
          n_waiters--;
          lock = 0
       fi;
       returned[i] = 1;
       k++
  :: else -> break
  od
}

init
{
  atomic {
    byte c = 0;
    do
    :: c < N_CALLERS -> run caller (c); c++
    :: else -> break
    od
  }
}
