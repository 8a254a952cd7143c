/* timer.pml: a sleep's timer, its reset from another thread, and the
 * context that drives it
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One sleep awaited by one task, one thread that resets its deadline, and
 * the GMainContext whose timer driver holds it. Mirrors:
 *  - ws_sleep_poll and bind_driver (wsrt/ws-sleep.c): the fast path reads
 *    the clock and the deadline; the first arm binds the sleep to the
 *    driver by a compare-and-swap;
 *  - ws_timer_driver_arm, ws_timer_driver_reset (wsrt/core/ws-timer-driver.c):
 *    under the driver's lock, read the deadline, link the entry (or find
 *    it expired), lower `armed` and then make the source ready
 *    (g_source_set_ready_time (0), sticky like the eventfd it writes);
 *  - ws_sleep_reset: store the deadline, then read the binding (seq_cst);
 *  - driver_prepare / poll / driver_dispatch: prepare sets `armed` to the
 *    next expiration and the poll timeout from it; poll returns when the
 *    source is ready or the timeout passes (the clock then jumps to it);
 *    dispatch clears the ready time, expires what is due, and wakes
 *    outside the lock.
 *
 * Assumption: the context is iterated for as long as the timer is armed
 * (the model's context never stops). That holds because a timer is bound
 * to a context its task's host iterates until the task ends, never to one
 * that only the arming thread has; binding.pml checks it.
 *
 * Time: ticks. The sleep starts an hour away (FAR, beyond what the model's
 * clock can reach: a timer there never fires), and the resetter moves it
 * to NEAR, once, at any point. The clock moves only when the context
 * sleeps in poll, to the timeout it computed.
 *
 * Property: when nothing can move any more, the task has seen its sleep
 * ready (a reset to NEAR is never lost: the task is woken and ends), and
 * it never saw it ready before its deadline.
 *
 * Broken variants, each must give a counterexample:
 *  -DBROKEN_RESET_ORDER   the reset reads the binding before it stores the
 *                         deadline (D5): a reset racing the first poll is
 *                         lost, the task sleeps for the hour;
 *  -DBROKEN_NO_READY      lowering `armed` does not make the source ready
 *                         (D3): the context sleeps in poll with the timeout
 *                         it computed before the timer moved.
 */

#define FAR   9              /* an hour: past MAXCLOCK */
#define NEAR  2
#define MAXCLOCK 3
#define NONE  255            /* no expiration */

byte clock = 0;

/* The sleep */
byte deadline = FAR;
bool bound = false;

/* The driver: its lock guards armed, elapsed and the timer's fields. */
bool lock = false;
byte armed = NONE;
byte elapsed = 0;
bool linked = false;
byte when = 0;
bool waker = false;
bool ready = false;          /* the GSource's ready time is 0 */

/* The task */
bool notified = false;
bool task_done = false;

inline acquire () { atomic { !lock -> lock = true } }
inline release () { lock = false }

#ifndef ASYNC_WAIT
proctype Task ()
{
  byte now, d, tick;
  bool wake_ctx;

poll:
  /* ws_sleep_poll: the clock, then the deadline (fast path). */
  now = clock;
  if
  :: now >= deadline ->
     assert (clock >= deadline);
     goto done
  :: else -> skip
  fi;
  bound = true;                       /* compare-and-swap, seq_cst */

  /* ws_timer_driver_arm */
  wake_ctx = false;
  acquire ();
  d = deadline;
  tick = d;
  if
  :: now < d && linked && when == tick ->
     waker = true
  :: else ->
     linked = false;
     if
     :: now < d && tick > elapsed ->
        linked = true;
        when = tick;
        waker = true;
        if
        :: tick < armed -> armed = tick; wake_ctx = true
        :: else -> skip
        fi
     :: else ->
        waker = false;
        release ();
        assert (clock >= deadline);   /* never early */
        goto done
     fi
  fi;
  release ();
  if
  :: wake_ctx -> ready = true
  :: else -> skip
  fi;

  /* PENDING until woken. */
  notified;
  notified = false;
  goto poll;

done:
  task_done = true
}

proctype Resetter ()
{
  byte tick;
  bool wake_ctx = false, expired = false;

#ifdef BROKEN_RESET_ORDER
  bool seen = bound;
  deadline = NEAR;
  if
  :: seen -> skip
  :: else -> goto out
  fi;
#else
  deadline = NEAR;                    /* seq_cst store ... */
  if
  :: bound -> skip                    /* ... then seq_cst load */
  :: else -> goto out
  fi;
#endif

  /* ws_timer_driver_reset */
  acquire ();
  if
  :: linked ->
     tick = deadline;
     linked = false;
     if
     :: tick > elapsed ->
        linked = true;
        when = tick;
        if
        :: tick < armed -> armed = tick; wake_ctx = true
        :: else -> skip
        fi
     :: else ->
        expired = waker;
        waker = false
     fi
  :: else -> skip
  fi;
  release ();
  if
  :: expired -> notified = true
  :: else -> skip
  fi;
#ifndef BROKEN_NO_READY
  if
  :: wake_ctx -> ready = true
  :: else -> skip
  fi;
#endif
out:
  skip
}

proctype Context ()
{
  byte next;
  bool wake;

  do
  :: /* driver_prepare */
     acquire ();
     if
     :: linked -> next = when
     :: else -> next = NONE
     fi;
     armed = next;
     if
     :: next > clock && clock > elapsed -> elapsed = clock
     :: else -> skip
     fi;
     release ();

     /* poll: until ready, or until the timeout (only a timeout the
      * model's clock can reach passes). */
end_poll:
     if
     :: ready -> skip
     :: next != NONE && next <= MAXCLOCK ->
        if
        :: next > clock -> clock = next
        :: else -> skip
        fi
     fi;

     /* driver_dispatch */
     ready = false;
     wake = false;
     acquire ();
     if
     :: linked && when <= clock ->
        linked = false;
        wake = waker;
        waker = false
     :: else -> skip
     fi;
     if
     :: clock > elapsed -> elapsed = clock
     :: else -> skip
     fi;
     release ();
     if
     :: wake -> notified = true
     :: else -> skip
     fi
  od
}

init
{
  atomic
  {
    run Task ();
    run Resetter ();
    run Context ()
  }
}

/* Nothing can move: the reset to NEAR was made, so the task must have
 * ended. */
active proctype Monitor ()
{
  timeout -> assert (task_done)
}
#endif

#ifdef ASYNC_WAIT
/* ---- async waits (-DASYNC_WAIT) -------------------------------------------
 *
 * A second model in this file, of what ws_sleep_wait_async adds (A1-A5
 * in wsrt/ws-sleep.c, D7 in ws-timer-driver.c): the timer's waker is an
 * async wait's (W1, with a cancellable), which a cancel from another
 * thread ends, and which a later waiter (W2, a poll or another wait)
 * replaces in the slot. The deadline, the binding and `armed` are the
 * first model's business: here the deadline is reachable (NEAR), the
 * clock jumps to it once, and the context dispatches whenever the timer
 * is due. Mirrors async_wait_claim / _complete / _arm / _wake /
 * _waker_unref and ws_timer_driver_arm_waker / ws_timer_driver_disarm_waker.
 *
 * Properties:
 *  - W1 completes exactly once (TRUE only at or after its deadline, or
 *    cancelled, or replaced), and the driver's references to it all go;
 *  - W2, the later waiter, is always woken: nobody takes its waker out;
 *  - A3: once W1 is done and its start and its canceller are through,
 *    the slot no longer holds W1 (no stale registration).
 *
 * Broken variants, each must give a counterexample:
 *  -DBROKEN_UNCONDITIONAL_DISARM  the cancel unlinks the timer whatever
 *                                 waker it holds (ws_timer_driver_disarm):
 *                                 it steals W2's waker, W2 never wakes;
 *  -DBROKEN_NO_RECHECK            the start does not load `done` after its
 *                                 arm: a cancel that came first leaves W1
 *                                 registered in the timer (A3).
 */

byte slot2 = 0;              /* 0, 1 (W1's waker) or 2 (W2's) */
bool linked2 = false;
byte n1 = 0;                 /* the driver's references to W1 (A2) */
bool done1 = false;
byte completions1 = 0;
bool start_end = false, cancel_end = false;
bool w2_armed = false, w2_woken = false;

/* A1 */
inline claim1 (won) { atomic { won = !done1; done1 = true } }
inline complete1 () { completions1++ }

/* ws_timer_driver_disarm_waker (W1) and the unref after it. */
inline disarm1 ()
{
  acquire ();
  if
  :: slot2 == 1 -> linked2 = false; slot2 = 0; taken = true
  :: else -> taken = false
  fi;
  release ();
  if
  :: taken -> n1--                  /* done: the unref completes nothing */
  :: else -> skip
  fi
}

/* async_wait_waker_unref: the last reference with `done` unset. */
inline unref1 ()
{
  n1--;
  if
  :: n1 == 0 && !done1 ->
     claim1 (won);
     if
     :: won -> complete1 ()         /* TRUE if due, else WS_ERROR_FAILED */
     :: else -> skip
     fi
  :: else -> skip
  fi
}

proctype Start1 ()                  /* wait_start: arm, then A3 */
{
  bool ok, taken, won;

  acquire ();
  assert (slot2 == 0);              /* W2 comes after */
  if
  :: clock < NEAR -> linked2 = true; slot2 = 1; n1++; ok = true
  :: else -> ok = false
  fi;
  release ();
  if
  :: ok ->
#ifndef BROKEN_NO_RECHECK
     if
     :: done1 -> disarm1 ()
     :: else -> skip
     fi
#else
     skip
#endif
  :: else ->
     claim1 (won);
     if
     :: won -> assert (clock >= NEAR); complete1 ()
     :: else -> skip
     fi
  fi;
  start_end = true
}

proctype Cancel1 ()                 /* async_wait_cancelled */
{
  bool taken, won;

  claim1 (won);
  if
  :: won ->
     complete1 ();
#ifdef BROKEN_UNCONDITIONAL_DISARM
     acquire ();
     linked2 = false;
     if
     :: slot2 == 1 -> taken = true
     :: else -> taken = false
     fi;
     slot2 = 0;                     /* W2's waker dropped unwoken */
     release ();
     if
     :: taken -> n1--
     :: else -> skip
     fi
#else
     disarm1 ()
#endif
  :: else -> skip
  fi;
  cancel_end = true
}

proctype Waiter2 ()                 /* a later arm of the same sleep */
{
  byte old;
  bool won;

  start_end;                        /* later than W1's start */
  acquire ();
  old = slot2;
  if
  :: clock < NEAR -> linked2 = true; slot2 = 2; w2_armed = true
  :: else -> linked2 = false; slot2 = 0; w2_woken = true   /* ready: no wait */
  fi;
  release ();
  if
  :: old == 1 -> unref1 ()          /* W1 replaced */
  :: else -> skip
  fi
}

proctype Clock () { clock = NEAR }

proctype Context2 ()                /* driver_dispatch of a due timer */
{
  byte w;
  bool won;

end:
  do
  :: atomic { clock >= NEAR && linked2 && !lock -> lock = true };
     linked2 = false;
     w = slot2;
     slot2 = 0;
     release ();
     if
     :: w == 1 ->                   /* async_wait_wake, then the unref */
        if
        :: !done1 ->
           assert (clock >= NEAR);  /* never early */
           claim1 (won);
           if
           :: won -> complete1 ()
           :: else -> skip
           fi
        :: else -> skip
        fi;
        unref1 ()
     :: w == 2 -> w2_woken = true
     :: else -> skip
     fi
  od
}

/* A3: never a stale registration once everything about W1 is through. */
active proctype Stale ()
{
end:
  atomic { start_end && cancel_end && done1 && slot2 == 1 -> assert (false) }
}

init
{
  atomic
  {
    run Start1 ();
    run Cancel1 ();
    run Clock ();
    run Context2 ();
    if
    :: run Waiter2 ()
    :: skip
    fi
  }
}

active proctype Monitor2 ()
{
  timeout ->
  assert (completions1 == 1);
  assert (n1 == 0 || slot2 == 1);
  assert (!w2_armed || w2_woken)
}
#endif
