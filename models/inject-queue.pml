/* inject-queue.pml: the injection queue's two sides
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One pusher and one popper, each standing for its side's lock holder
 * (pushers serialise on tail_lock, poppers on head_lock, so each side is
 * one thread at a time). Mirrors wsrt/core/ws-inject-queue.c:
 *  - push_locked / push_batch_locked: a push of one task or a batch of
 *    two writes each slot of the tail block, and where the tail block is
 *    full takes the spare block (exchange) or a free one, clears its
 *    next, links it behind the tail block and moves there; then it adds
 *    the batch to `pushed`, one store;
 *  - ws_inject_queue_pop_batch: a pop of up to MAXPOP tasks reads
 *    `pushed` once, takes at most pushed - popped, follows `next` when
 *    it has taken a block's last slot and more is counted, hands the
 *    block it left to the pushers as the spare (exchange) and frees the
 *    spare that was there; then it adds what it took to `popped`.
 * Blocks are NBLOCKS cells of SLOTS slots. A freed block's slots and next
 * read as garbage (0 and NONE) until a pusher takes it again.
 *
 * Spin's interleavings are sequentially consistent; in C the same order
 * comes from the seq_cst store and load of `pushed` (a release and an
 * acquire) and the acq_rel exchanges of the spare.
 *
 * Properties (assertions): the popper gets tasks 1, 2, ... NT in order,
 * each once, never a garbage slot or a link to nowhere, and never more
 * in one pop than it asked for; at the end it has all NT.
 *
 * Broken variants (each must give a counterexample):
 *  -DBROKEN_COUNT_FIRST     the pusher counts a task before it writes its
 *                           slot: the popper reads an unwritten slot;
 *  -DBROKEN_READ_TWICE      the popper bounds its take with one read of
 *                           `pushed` and takes the count of a second one
 *                           (MIN () over the atomic load evaluates it
 *                           twice): it takes more than it asked for;
 *  -DBROKEN_RETIRE_AT_END   the popper hands a block to the pushers as
 *                           soon as it took the block's last slot, before
 *                           it follows next: a pusher reuses the block
 *                           and clears the link the popper still needs.
 */

#ifndef NT
#define NT 6
#endif
#define SLOTS   2
#define NBLOCKS 3
#define MAXPOP  3
#define NONE    255

byte slot[NBLOCKS * SLOTS];
byte next[NBLOCKS];
bool used[NBLOCKS];
byte spare = NONE;
byte pushed = 0;
byte popped = 0;

/* The pusher's side. */
byte tail = 0;
byte tail_index = 0;

/* The popper's side. */
byte head = 0;
byte head_index = 0;
byte got = 0;           /* the last task popped */

inline push_one (v)
{
  if
  :: tail_index == SLOTS ->
     atomic { b = spare; spare = NONE };
     if
     :: b == NONE ->
        /* A new block: any free cell. */
        atomic {
          if
          :: !used[0] -> b = 0
          :: !used[1] -> b = 1
          :: !used[2] -> b = 2
          fi;
          used[b] = true
        }
     :: else -> skip
     fi;
     next[b] = NONE;
     next[tail] = b;
     tail = b;
     tail_index = 0
  :: else -> skip
  fi;
  slot[tail * SLOTS + tail_index] = v;
  tail_index++
}

proctype pusher ()
{
  byte v = 1;
  byte b;

  do
  :: v > NT -> break
  :: v <= NT ->
#ifdef BROKEN_COUNT_FIRST
     pushed++;
     push_one (v);
     v++
#else
     if
     :: push_one (v);
        pushed++;
        v++
     :: v < NT ->
        /* A batch of two, counted once. */
        push_one (v);
        push_one (v + 1);
        pushed = pushed + 2;
        v = v + 2
     fi
#endif
  od
}

proctype popper ()
{
  byte max, m, n, p, old, x;

  do
  :: got == NT -> break
  :: got < NT ->
     if
     :: max = 1
     :: max = 2
     :: max = MAXPOP
     fi;
     p = pushed;
#ifdef BROKEN_READ_TWICE
     if
     :: max < p - popped -> m = max
     :: else -> m = pushed - popped
     fi;
#else
     if
     :: max < p - popped -> m = max
     :: else -> m = p - popped
     fi;
#endif
     n = 0;
     do
     :: n == m -> break
     :: n < m ->
        assert (n < max);
        if
        :: head_index == SLOTS ->
           old = head;
           head = next[old];
           assert (head != NONE);
           head_index = 0;
#ifndef BROKEN_RETIRE_AT_END
           atomic { x = spare; spare = old };
           if
           :: x != NONE ->
              /* g_free (): its memory reads as garbage from now on. */
              used[x] = false;
              slot[x * SLOTS] = 0;
              slot[x * SLOTS + 1] = 0;
              next[x] = NONE
           :: else -> skip
           fi
#endif
        :: else -> skip
        fi;
        assert (used[head]);
        assert (slot[head * SLOTS + head_index] == got + 1);
        got++;
        head_index++;
#ifdef BROKEN_RETIRE_AT_END
        if
        :: head_index == SLOTS ->
           /* Handed over while still the head, its next not read yet. */
           atomic { x = spare; spare = head };
           if
           :: x != NONE -> used[x] = false; slot[x * SLOTS] = 0; slot[x * SLOTS + 1] = 0; next[x] = NONE
           :: else -> skip
           fi
        :: else -> skip
        fi;
#endif
        n++
     od;
     popped = popped + n
  od
}

init
{
  atomic
  {
    used[0] = true;
    next[0] = NONE;
    next[1] = NONE;
    next[2] = NONE;
    run pusher ();
    run popper ()
  }
}
