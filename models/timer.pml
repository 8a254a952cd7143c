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
