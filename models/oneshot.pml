/* oneshot.pml: WsOneshot's state word and its one waker slot
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Mirrors wsrt/ws-oneshot.c: two senders racing (a send each, or a send
 * and a close: -DCLOSER), a receiver that polls until it has an outcome
 * and waits for a wake between polls (R1), and a second receiver that
 * polls once and leaves its waker behind, as a cancelled task does (R2).
 * With -DUNSENT nothing is sent and both receivers poll once, so the last
 * unref finds a waker in the slot and drops it.
 * The state word's bits are those of the C code; each atomic step below
 * is one C11 read-modify-write or load of it, and the slot (a plain
 * pointer in C) is read and written in steps of its own, so a race on it
 * shows as a wrong reference count.
 *
 * Properties:
 *  - one claim wins: exactly one of the senders sends (or closes), and
 *    every send or close, won or lost, returns with the oneshot complete
 *    (a poll after it is READY, as under a lock);
 *  - the item is received exactly once when it was sent, never when the
 *    oneshot was closed;
 *  - no lost wake: R1 never waits for ever (an invalid end state); the
 *    model also lets R1 go on when R2 replaced its waker, which the
 *    oneshot's contract allows (a poll replaces the waiter before it);
 *  - every waker reference taken into the slot is dropped exactly once
 *    (counts never go below 0 and are 0 once the last reference is gone).
 *
 * Broken variants, each with a counterexample:
 *  -DBROKEN_NO_RECHECK: a receiver that publishes its waker returns
 *     PENDING without looking at the word it replaced, so a send that
 *     came between its load and its publish found no waker: R1 waits for
 *     ever (test: model-oneshot-broken-no-recheck);
 *  -DBROKEN_STEAL_FROM_SENDER: a receiver that clears WAKER and finds the
 *     send complete takes the old waker out anyway, though the sender saw
 *     WAKER and owns the slot: the sender finds it emptied under it (a
 *     lost wake, or a double drop when the two meet on the slot) (test:
 *     model-oneshot-broken-steal-from-sender);
 *  -DCLOSER -DBROKEN_NO_LOSER_WAIT: a close that loses the claim to a
 *     send returns before that send completed, so a poll right after the
 *     close could still be PENDING (test:
 *     model-oneshot-broken-no-loser-wait);
 *  -DBROKEN_NO_RX_LOCK: receivers register without RX_BUSY, so two of
 *     them write the slot at once and a reference is lost (test:
 *     model-oneshot-broken-no-rx-lock).
 */

#define CLAIMED  1
#define COMPLETE 2
#define VALUE    4
#define TAKEN    8
#define WAKER    16
#define RX_BUSY  32

#define PENDING 0
#define READY   1

byte state = 0;
byte slot = 0;          /* 0, or the receiver (1 or 2) whose waker it holds */
byte item = 0;          /* 0, or the sender that wrote it */
byte claims = 0;        /* senders whose claim won */
byte sent = 0;          /* the winning sender sent an item (not a close) */
byte got = 0;           /* items received */
byte got_closed = 0;    /* closed outcomes received */
short refs[3];          /* waker references held, per receiver */
bit woken[3];
bit replaced[3];
byte done = 0;          /* processes finished */

inline unref (w)
{
  refs[w]--;
  assert (refs[w] >= 0)
}


/* ws_oneshot_send (with_item) and ws_oneshot_close: claim, publish, wake
 * the waker the publish saw. */
proctype sender (byte id; bit with_item)
{
  byte prev, w;

  atomic { prev = state; state = state | CLAIMED };
  if
  :: (prev & CLAIMED) != 0 ->
     /* Refused (a send frees its item), once the winner completed. */
#ifndef BROKEN_NO_LOSER_WAIT
     (state & COMPLETE) != 0;
#endif
     goto out
  :: else -> claims++
  fi;
  if
  :: with_item -> item = id; sent = 1;
     atomic { prev = state; state = state | COMPLETE | VALUE }
  :: else -> atomic { prev = state; state = state | COMPLETE }
  fi;
  if
  :: (prev & WAKER) != 0 ->
     w = slot;
     slot = 0;
     assert (w != 0);
     woken[w] = 1;
     unref (w)
  :: else
  fi;
out:
  /* Whichever claim won, the call returns with the outcome in place. */
  assert ((state & COMPLETE) != 0);
  done++
}

/* The outcome of a complete oneshot: the item once, else closed. */
inline outcome (me, ret)
{
  if
  :: (s & VALUE) != 0 ->
     atomic { prev = state; state = state | TAKEN };
     if
     :: (prev & TAKEN) == 0 -> assert (item != 0); got++
     :: else -> got_closed++
     fi
  :: else -> got_closed++
  fi;
  ret = READY
}

/* ws_oneshot_poll: register @me's waker unless the outcome is there. */
inline poll (me, ret)
{
  old = 0;
  atomic { s = state };
  if
  :: (s & COMPLETE) != 0 -> outcome (me, ret)
  :: else ->
#ifndef BROKEN_NO_RX_LOCK
     atomic { (state & RX_BUSY) == 0 -> state = state | RX_BUSY };
#endif
     atomic { s = state };
     if
     :: (s & COMPLETE) != 0 ->
#ifndef BROKEN_NO_RX_LOCK
        state = state & ~RX_BUSY;             /* an atomic RMW in C */
#endif
        outcome (me, ret)
     :: else ->
        if
        :: (s & WAKER) != 0 ->
           atomic { prev = state; state = state & ~WAKER };
#ifdef BROKEN_STEAL_FROM_SENDER
           old = slot; slot = 0;
#endif
           if
           :: (prev & COMPLETE) != 0 ->
              /* The sender saw WAKER: the slot is its own now. */
#ifndef BROKEN_NO_RX_LOCK
              state = state & ~RX_BUSY;
#endif
              s = prev;
              outcome (me, ret)
           :: else ->
#ifndef BROKEN_STEAL_FROM_SENDER
              old = slot;
              slot = 0;
#endif
              skip
           fi
        :: else
        fi;
        if
        :: ret == READY -> skip
        :: else ->
           refs[me]++;
           slot = me;
#ifndef BROKEN_NO_RX_LOCK
           /* In C one subtraction of RX_BUSY - WAKER, right only with
            * RX_BUSY set and WAKER clear. */
           atomic
           {
             assert ((state & RX_BUSY) != 0 && (state & WAKER) == 0);
             prev = state;
             state = state - (RX_BUSY - WAKER)
           };
#else
           atomic { prev = state; state = state | WAKER };
#endif
           if
#ifndef BROKEN_NO_RECHECK
           :: (prev & COMPLETE) != 0 ->
              /* The send came first and saw no waker: take ours back. */
              w = slot;
              slot = 0;
              assert (w == me);
              unref (w);
              s = prev;
              outcome (me, ret)
#endif
           :: else -> ret = PENDING
           fi
        fi
     fi
  fi;
  if
  :: old != 0 ->
     if
     :: old != me -> replaced[old] = 1
     :: else
     fi;
     unref (old)
  :: else
  fi
}

proctype receiver1 ()
{
  byte s, prev, old, w;
  bit ret;

#ifdef UNSENT
  ret = PENDING;
  poll (1, ret);
  goto finished;
#endif
  do
  :: ret = PENDING;
     poll (1, ret);
     if
     :: ret == READY -> break
     :: else ->
        (woken[1] || replaced[1]);
        woken[1] = 0;
        replaced[1] = 0
     fi
  od;
finished:
  done++
}

proctype receiver2 ()
{
  byte s, prev, old, w;
  bit ret;

  ret = PENDING;
  poll (2, ret);
  done++
}

init
{
  atomic
  {
#ifdef UNSENT
    done = 2;
#else
    run sender (1, 1);
# ifdef CLOSER
    run sender (2, 0);
# else
    run sender (2, 1);
# endif
#endif
    run receiver1 ();
    run receiver2 ()
  }
  /* The last unref: drops what the slot holds, and the item if nobody
   * took it. */
  done == 4;
  if
  :: slot != 0 -> unref (slot); slot = 0
  :: else
  fi;
  assert (refs[1] == 0 && refs[2] == 0);
#ifdef UNSENT
  assert (claims == 0);
#else
  assert (claims == 1);
#endif
  if
  :: sent -> assert (got == 1)
  :: else -> assert (got == 0)
  fi
}
