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
 *    outside the lock;
 *  - ws_timer_driver_disarm (D10): the poll that finds the sleep ready
 *    and the last unref disarm, without the lock when the waker slot is
 *    empty; the last unref then frees the sleep. The task and the
 *    resetter each hold a reference; the task may drop its own while
 *    pending (cancelled), so the task ends either way.
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
 *                         it computed before the timer moved;
 *  -DBROKEN_EMPTY_FIRST   the dispatch empties the waker slot before it
 *                         unlinks the entry (D10 needs the slot written
 *                         last): a disarm that finds the slot empty frees
 *                         the sleep while the dispatch still writes it.
 *
 * Also: no process touches the sleep's timer after it was freed.
 *
 * Two more models share this file, each with its own header below:
 * -DASYNC_WAIT (an async wait's waker, cancelled and replaced) and
 * -DMANY_DUE (two timers due at one tick, a dispatch bounded by D9).
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

/* The sleep's references (the task's and the resetter's) and its end. */
byte refs = 2;
bool freed = false;
/* Chosen at the start: whether this run's task may be dropped pending
 * (the runs where it may not check that it is always woken). */
bool may_drop = false;

inline acquire () { atomic { !lock -> lock = true } }
inline release () { lock = false }

/* ws_timer_driver_disarm: D10's unlocked look at the slot, else the
 * locked unlink. */
inline disarm ()
{
  if
  :: bound && waker ->
     acquire ();
     assert (!freed);
     linked = false;
     waker = false;
     release ()
  :: else -> skip
  fi
}

/* ws_sleep_unref: the last reference disarms and frees. */
inline unref ()
{
  if
  :: atomic { refs == 1 -> refs = 0 } ->
     disarm ();
     freed = true
  :: atomic { refs > 1 -> refs-- }
  fi
}

#if !defined (ASYNC_WAIT) && !defined (MANY_DUE)
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

  /* PENDING until woken, or dropped pending (a cancel, the loser of a
   * race), which unrefs the sleep at any time, also while a dispatch
   * expires its timer. */
  if
  :: notified ->
     notified = false;
     goto poll
  :: may_drop -> goto dropped
  fi;

done:
  disarm ();                          /* ws_sleep_poll, found ready */
dropped:
  task_done = true;
  unref ()
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
  assert (!freed);
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
  unref ()
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
#ifdef BROKEN_EMPTY_FIRST
        wake = waker;
        waker = false;
        assert (!freed);
        linked = false
#else
        assert (!freed);
        linked = false;
        wake = waker;
        waker = false                 /* the last write of the timer */
#endif
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
    if
    :: may_drop = true
    :: skip
    fi;
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

#ifdef MANY_DUE
/* ---- timers due together, a bounded dispatch (-DMANY_DUE) ----------------
 *
 * A third model in this file, of D9 in ws-timer-driver.c: two sleeps, each
 * awaited by its own task, both due at the same tick on the same driver,
 * and a context iterated by the worker that owns the driver, whose local
 * queue is full: each dispatch expires at most LIMIT (1) timers and
 * leaves the rest linked on the wheel's expired list with their wakers.
 * The deadlines do not move here (the reset is the first model's
 * business): NEAR, which the clock reaches when the context sleeps in
 * poll to the timeout it computed. Mirrors:
 *  - ws_timer_driver_arm with lower_armed_locked and wake_context (the
 *    sleeps' first polls, as in the first model);
 *  - the wheel (ws-timer-wheel.c), one level of one-tick slots: a timer is
 *    unlinked, in the slot of its tick, or on the expired list;
 *    ws_timer_wheel_insert fails for a tick not after elapsed;
 *    ws_timer_wheel_next_expiration is elapsed while the expired list is
 *    not empty, else the earliest tick in a slot, else none;
 *    ws_timer_wheel_poll takes an entry of the expired list (either one:
 *    the list's order is not modelled), else moves the whole first slot
 *    whose tick is at or before now to the expired list and takes from it,
 *    else advances elapsed to now and returns none;
 *  - one iteration of the context, as GLib runs it: driver_prepare
 *    (sets `armed` to the next expiration; ready with timeout 0 if that
 *    has come, else polls the wheel to now and times out at it), then the
 *    source's ready time; poll; driver_check unless prepare said ready,
 *    then the ready time; driver_dispatch if the source is ready: clears
 *    the ready time, dispatch_limit (the worker's own driver, its queue
 *    full: 1), expires up to that many under the lock, wakes outside it.
 *    With two timers the batch (WAKE_BATCH) never fills, so the dispatch's
 *    outer loop runs once, and no wake is left in the batch for prepare or
 *    check to see (D8 is binding.pml's).
 *
 * Properties:
 *  - when nothing can move any more, every task has seen its sleep ready,
 *    no timer is left on the expired list, and no unlinked timer holds a
 *    waker (D1);
 *  - never early: a sleep is ready only at or after its deadline, and the
 *    dispatch expires only timers due at the iteration's clock.
 *
 * Broken variant, must give a counterexample:
 *  -DBROKEN_NO_REREADY  the next expiration comes from the timers in the
 *                       slots only, not the expired list: after the first
 *                       dispatch leaves a timer behind, prepare and check
 *                       do not report the source ready, prepare's poll of
 *                       the wheel to now takes the timer left behind and
 *                       drops it, and the context sleeps in poll with no
 *                       timeout while its task waits for ever.
 *                       With -DLIMIT=2 (room for both: the dispatch as it
 *                       was before D9) the same variant passes: the
 *                       re-ready is needed only because of the limit.
 */

#define NT       2           /* timers */
#ifndef LIMIT
#define LIMIT    1           /* dispatch_limit: the worker's queue is full */
#endif
#define UNLINKED 0
#define IN_SLOT  1
#define EXPIRED  2

byte entry[NT];              /* UNLINKED, IN_SLOT or EXPIRED (under lock) */
byte twhen[NT];              /* the entry's tick (under lock) */
bool twaker[NT];             /* the timer holds its task's waker (D1) */
bool tnotified[NT];
bool tdone[NT];

/* ws_timer_wheel_next_expiration, under the lock. */
inline next_expiration (next)
{
  next = NONE;
#ifndef BROKEN_NO_REREADY
  if
  :: entry[0] == EXPIRED || entry[1] == EXPIRED -> next = elapsed
  :: else ->
#endif
     if
     :: entry[0] == IN_SLOT -> next = twhen[0]
     :: else -> skip
     fi;
     if
     :: entry[1] == IN_SLOT && twhen[1] < next -> next = twhen[1]
     :: else -> skip
     fi
#ifndef BROKEN_NO_REREADY
  fi
#endif
}

/* ws_timer_wheel_poll, under the lock: got is the entry taken, or NT. */
inline wheel_poll (now, got)
{
  got = NT;
  do
  :: entry[0] == EXPIRED -> entry[0] = UNLINKED; got = 0; break
  :: entry[1] == EXPIRED -> entry[1] = UNLINKED; got = 1; break
  :: else ->
     start = NONE;
     if
     :: entry[0] == IN_SLOT -> start = twhen[0]
     :: else -> skip
     fi;
     if
     :: entry[1] == IN_SLOT && twhen[1] < start -> start = twhen[1]
     :: else -> skip
     fi;
     if
     :: start != NONE && start <= now ->
        /* the first occupied slot has come: all its entries expire */
        elapsed = start;
        if
        :: entry[0] == IN_SLOT && twhen[0] == start -> entry[0] = EXPIRED
        :: else -> skip
        fi;
        if
        :: entry[1] == IN_SLOT && twhen[1] == start -> entry[1] = EXPIRED
        :: else -> skip
        fi
     :: else ->
        if
        :: now > elapsed -> elapsed = now
        :: else -> skip
        fi;
        break
     fi
  od
}

/* A task's poll of its sleep: ws_sleep_poll, then ws_timer_driver_arm
 * (the sleep is bound already, its deadline NEAR for good). */
proctype Sleeper (byte me)
{
  byte now, tick;
  bool wake_ctx;

poll:
  now = clock;
  if
  :: now >= NEAR ->
     assert (clock >= NEAR);
     goto done
  :: else -> skip
  fi;

  wake_ctx = false;
  acquire ();
  tick = NEAR;
  if
  :: entry[me] != UNLINKED && twhen[me] == tick ->
     twaker[me] = true                /* armed already: the waker only */
  :: else ->
     entry[me] = UNLINKED;            /* ws_timer_wheel_remove */
     if
     :: tick > elapsed ->             /* ws_timer_wheel_insert */
        entry[me] = IN_SLOT;
        twhen[me] = tick;
        twaker[me] = true;
        if
        :: tick < armed -> armed = tick; wake_ctx = true
        :: else -> skip
        fi
     :: else ->                       /* the wheel is past the tick */
        twaker[me] = false;
        release ();
        assert (clock >= NEAR);       /* never early */
        goto done
     fi
  fi;
  release ();
  if
  :: wake_ctx -> ready = true         /* wake_context */
  :: else -> skip
  fi;

  /* PENDING until woken. */
  tnotified[me];
  tnotified[me] = false;
  goto poll;

done:
  tdone[me] = true
}

proctype Worker ()
{
  byte next, got, start, n, limit;
  bool rdy, wake0, wake1;

  do
  :: /* driver_prepare */
     acquire ();
     next_expiration (next);
     armed = next;
     if
     :: next <= clock -> rdy = true   /* timeout 0 */
     :: else ->
        rdy = false;
        /* The wheel moves to now. The C drops what this returns (nothing
         * is due, so it returns none): a timer it took would stay
         * unlinked with its waker. */
        wheel_poll (clock, got)
     fi;
     release ();
     if
     :: ready -> rdy = true           /* the ready time is 0 */
     :: else -> skip
     fi;

     /* poll: not at all if a source is ready; else until the source is
      * made ready, or until the timeout (only a timeout the model's clock
      * can reach passes). */
end_poll:
     if
     :: rdy -> skip
     :: ready -> skip
     :: next != NONE && next <= MAXCLOCK ->
        if
        :: next > clock -> clock = next
        :: else -> skip
        fi
     fi;

     /* driver_check, unless prepare said ready; then the ready time */
     if
     :: !rdy ->
        acquire ();
        next_expiration (next);
        rdy = (next <= clock);
        release ();
        if
        :: ready -> rdy = true
        :: else -> skip
        fi
     :: else -> skip
     fi;

     /* driver_dispatch */
     if
     :: rdy ->
        ready = false;
        limit = LIMIT;                /* dispatch_limit */
        n = 0;
        wake0 = false;
        wake1 = false;
        acquire ();
        do
        :: n < limit ->
           wheel_poll (clock, got);
           if
           :: got == NT -> break
           :: else ->
              assert (twhen[got] <= clock);   /* never early (D4) */
              if
              :: got == 0 -> wake0 = twaker[0]; twaker[0] = false
              :: else -> wake1 = twaker[1]; twaker[1] = false
              fi;
              n++
           fi
        :: else -> break
        od;
        release ();
        /* wake_batch */
        if
        :: wake0 -> tnotified[0] = true
        :: else -> skip
        fi;
        if
        :: wake1 -> tnotified[1] = true
        :: else -> skip
        fi
     :: else -> skip
     fi
  od
}

init
{
  atomic
  {
    run Sleeper (0);
    run Sleeper (1);
    run Worker ()
  }
}

/* Nothing can move: every sleep was seen ready, nothing is left behind. */
active proctype Monitor3 ()
{
  timeout ->
  assert (tdone[0] && tdone[1]);
  assert (entry[0] != EXPIRED && entry[1] != EXPIRED);
  assert (!twaker[0] || entry[0] != UNLINKED);
  assert (!twaker[1] || entry[1] != UNLINKED)
}
#endif
