/* delivery.pml: arming a context's completion source, with the cooldown
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Mirrors wsrt/ws-delivery.c ("Arming"). Two threads push completions
 * into the queue of one context's delivery source; the context's thread
 * iterates it. GLib's side: g_source_set_ready_time () is one store under
 * the context lock, and a blocked iteration re-evaluates when it is
 * called from another thread (its wakeup is level-triggered, never
 * lost); a ready time in the future (LATER) becomes due after some time,
 * which the model lets pass whenever the loop would otherwise block.
 *
 *  push:      under the lock: arm = !armed; armed = true; append. After
 *             the unlock, if it armed: ready time 0 (NOW).
 *  dispatch:  with a batch left (a slice's rest), deliver from it only.
 *             Otherwise take the queue into the batch; more than one item:
 *             ready time LATER (the cooldown), still armed; one or none:
 *             ready time -1 (NEVER), then under the lock disarm if the
 *             queue is empty, else ready time NOW again. Then deliver
 *             some of the batch (a slice may end early).
 *  prepare:   a batch, or, while cooling (the last take was a burst's), a
 *             non-empty queue: a loop that iterates anyway takes it.
 *  callback:  an item is taken off the batch before it is delivered; its
 *             callback may iterate the context and leave GLib's ready
 *             flag set (NESTED_LOOK), so that a later iteration dispatches
 *             the source without a prepare or check.
 *
 * Properties:
 *  - no completion is stranded: the loop blocks for good only once every
 *    pushed item is delivered (an invalid end state otherwise);
 *  - the lifetime argument of ws-delivery.c: the queue is never taken
 *    while a pusher that armed the source has not yet set its ready time
 *    (that pusher touches the source after its unlock, held alive only by
 *    its item's reference on the context).
 *
 * Broken variants, each with a counterexample:
 *  -DBROKEN_DISARM_FIRST: the dispatch disarms under the lock and clears
 *     the ready time after: a push between the two sets NOW, which the
 *     clear undoes (test: model-delivery-broken-disarm-first);
 *  -DBROKEN_NO_RECHECK: the dispatch clears and disarms without looking
 *     at the queue again: an item pushed since the take, by a pusher that
 *     found the source armed, is left (test:
 *     model-delivery-broken-no-recheck);
 *  -DBROKEN_COOLDOWN_UNARMED: a burst's take disarms the source (the
 *     queue it left is empty) and sets the cooldown: the next push arms
 *     it again while the cooldown's ready time can make a dispatch take
 *     the queue before that pusher's call, on a context its item no
 *     longer keeps alive (test: model-delivery-broken-cooldown-unarmed).
 */

#define NEVER 0
#define NOW   1
#define LATER 2

#define NPUSHERS 2
#define NITEMS   3          /* per pusher */

byte queued;                /* pushed, not taken (under the lock) */
bool armed;                 /* under the lock */
byte ready = NEVER;         /* the source's ready time */
byte batch;                 /* taken, not delivered (the loop's thread) */
byte delivered;
byte arming;                /* pushers that armed and have not set NOW */
bool cooling;               /* the loop's: a burst's take set LATER */
bool flag;                  /* GLib's ready flag, left set by a prepare or
                             * check whose dispatch did not come */

#ifdef BROKEN_PEEK_ALWAYS
#define PEEK (queued > 0)
#else
#define PEEK (cooling && queued > 0)
#endif

/* An item's callback may iterate the context (a nested main loop, or
 * g_main_context_pending ()): its prepare or check may find the source
 * ready and set GLib's flag, and a deeper nested prepare may drop the
 * dispatch still pending, leaving the flag set; a later iteration then
 * dispatches the source without asking prepare or check again. */
#define NESTED_LOOK \
  if \
  :: !flag && (batch > 0 || ready == NOW || ready == LATER || PEEK) -> flag = true \
  :: true \
  fi

proctype pusher ()
{
  byte i = 0;
  bool arm;

  do
  :: i == NITEMS -> break
  :: else ->
       atomic { arm = !armed; armed = true; queued++; if :: arm -> arming++ :: else fi }
       if
       :: arm -> atomic { ready = NOW; arming-- }
       :: else
       fi;
       i++
  od
}

active proctype context_loop ()
{
  bool rearm;

  do
  :: delivered == NPUSHERS * NITEMS -> break
  :: else ->
       /* One iteration: blocks until the source is ready. */
       (flag || batch > 0 || ready == NOW || ready == LATER || PEEK);
       flag = false;
       if
       :: batch == 0 ->
            atomic { assert (arming == 0); batch = queued; queued = 0 };
            if
#ifdef BROKEN_COOLDOWN_UNARMED
            :: batch >= 2 -> cooling = true; ready = LATER; atomic { armed = false }
#else
            :: batch >= 2 -> cooling = true; ready = LATER
#endif
            :: else ->
                 cooling = false;
#if defined(BROKEN_DISARM_FIRST)
                 atomic { if :: queued == 0 -> armed = false :: else -> rearm = true fi };
                 ready = NEVER;
#elif defined(BROKEN_NO_RECHECK)
                 ready = NEVER;
                 atomic { armed = false };
#else
                 ready = NEVER;
                 atomic { if :: queued == 0 -> armed = false :: else -> rearm = true fi };
#endif
                 if
                 :: rearm -> ready = NOW; rearm = false
                 :: else
                 fi
            fi
       :: else
       fi;
       /* Deliver: all of the batch, or a slice of it. */
       do
#ifdef BROKEN_DELIVER_BEFORE_POP
       :: batch > 0 -> NESTED_LOOK; batch--; delivered++
#else
       :: batch > 0 -> batch--; NESTED_LOOK; delivered++
#endif
       :: batch > 0 -> break
       :: batch == 0 -> break
       od
  od
}

init
{
  atomic { run pusher (); run pusher () }
}
