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
 *  - n_threads <= n_in_flight + 1 at every change, and n_threads <=
 *    MAX_THREADS.
 *
 * Broken variants, each must fail:
 *  - BROKEN_WAITERS_BEFORE_DONE: op_end reads the waiter count before it
 *    sets `done`: a waiter that counts itself in between sleeps for ever;
 *  - BROKEN_WAKER_AFTER_DONE: op_end takes the waker after `done`: the
 *    caller may have returned (its op was on its stack);
 *  - BROKEN_TWO_STANDBYS: a thread stands by without looking for one
 *    already idle: the bound fails;
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
byte idle = NONE;                 /* the standby's pid */
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

inline check_bound ()
{
  assert (n_threads <= n_in_flight + 1);
  assert (n_threads <= MAX_THREADS)
}

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
  bit leave;
  byte w, j;

  do
  :: /* op_run (op), then choose what comes next */
     atomic {
       leave = 0;
       next = NONE;
#ifndef BROKEN_NO_QUEUE
       if
       :: nempty (queue) -> queue ? next
       :: empty (queue)
       fi;
#endif
       if
       :: next != NONE -> n_in_flight--
#ifdef BROKEN_TWO_STANDBYS
       :: next == NONE -> n_in_flight--; idle = _pid
#else
       :: next == NONE && idle == NONE -> n_in_flight--; idle = _pid
       :: next == NONE && idle != NONE -> leave = 1
#endif
       fi;
       check_bound ()
     };
     op_end (op);
     if
     :: leave ->
          atomic { n_in_flight--; n_threads--; check_bound () };
          break
     :: !leave && next != NONE -> op = next
     :: !leave && next == NONE ->
          /* the standby: an op handed to it (no keep-alive here) */
end_idle:
          atomic { handed[_pid] != 0 -> op = handed[_pid] - 1; handed[_pid] = 0 }
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
    :: idle != NONE -> handed[idle] = i + 1; idle = NONE
    :: idle == NONE && n_threads < MAX_THREADS -> n_threads++; run thread (i)
    :: idle == NONE && n_threads >= MAX_THREADS -> queue ! i
    fi;
    check_bound ()
  }
}

proctype caller (byte i)
{
  byte k = 0;

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
