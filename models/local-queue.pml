/* local-queue.pml: a worker's run queue, its thief, and the take-back
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Mirrors wsrt/core/ws-local-queue.c: the owner pushes at the tail, pops
 * at the head, and takes its newest task back from the tail (the
 * work-first run of ws-worker.c); a thief claims the larger half by
 * moving the real head from a head and a tail it read, copies the
 * claimed slots, then closes the gap. The head word (steal, real, tag)
 * changes in one atomic step (a CAS); the tail and each slot are single
 * words; every read and write is its own step, in program order.
 *
 * The owner makes N_OPS choices among push (when there is room), pop and
 * take-back, then, once the thieves are done, pops what is left. Two
 * thieves steal once each, concurrently. Tasks are
 * numbered from 1 as they are pushed.
 *
 * Properties: no task is taken twice (each take asserts it), and at the
 * end every pushed task has been taken exactly once (nothing lost, and
 * the queue's indices came back to an empty queue).
 *
 * -DBROKEN_NO_TAG: the take-back leaves the head as it was instead of
 * changing its tag. A thief that read the head and then the tail before
 * the take-back lowered the tail still succeeds with its CAS, and claims
 * the slot the owner took: a task is taken twice.
 */

#define CAP    4
#define N_OPS  5
#define N_IDS  (N_OPS + 1)
#define N_THIEVES 2

byte steal = 0;
byte real = 0;
byte tag = 0;
byte tail = 0;
byte buffer[CAP];
byte taken[N_IDS];
byte n_pushed = 0;
byte thieves_done = 0;

inline take (id)
{
  assert (id != 0);
  assert (taken[id] == 0);
  taken[id] = 1
}

/* ws_local_queue_push_back_or_overflow, without the overflow: the model
 * pushes only when there is room. */
inline push ()
{
  byte h_steal;
  atomic { h_steal = steal }
  if
  :: tail - h_steal < CAP ->
     n_pushed++;
     buffer[tail % CAP] = n_pushed;
     tail++
  :: else -> skip
  fi
}

/* ws_local_queue_pop */
inline pop ()
{
  byte p_steal, p_real, p_tag, p_idx;
  bool p_done = false;
  do
  :: p_done -> break
  :: else ->
     atomic { p_steal = steal; p_real = real; p_tag = tag }
     if
     :: p_real == tail -> p_done = true
     :: else ->
        atomic {
          if
          :: steal == p_steal && real == p_real && tag == p_tag ->
             if
             :: p_steal == p_real -> steal = p_real + 1
             :: else -> skip
             fi;
             real = p_real + 1;
             p_idx = p_real % CAP;
             p_done = true
          :: else -> skip       /* a thief moved the head: retry */
          fi
        }
        if
        :: p_done -> take (buffer[p_idx])
        :: else -> skip
        fi
     fi
  od
}

/* ws_local_queue_take_back of the newest task */
inline take_back ()
{
  byte b_steal, b_real, b_tag, b_task;
  bool b_ok;
  atomic { b_steal = steal; b_real = real; b_tag = tag }
  if
  :: b_steal == b_real && b_real != tail ->
     b_task = buffer[(tail - 1) % CAP];
     tail--;
     atomic {
       if
       :: steal == b_steal && real == b_real && tag == b_tag ->
#ifndef BROKEN_NO_TAG
          tag = b_tag + 1;
#endif
          b_ok = true
       :: else -> b_ok = false
       fi
     }
     if
     :: b_ok -> take (b_task)
     :: else -> tail++         /* a thief claimed meanwhile: put it back */
     fi
  :: else -> skip
  fi
}

active proctype owner ()
{
  byte i = 0;
  do
  :: i < N_OPS + N_IDS ->
     if
     :: i < N_OPS ->
        if
        :: push ()
        :: pop ()
        :: take_back ()
        fi
     :: else ->
        /* Once the thieves are done, pop what is left. */
        thieves_done == N_THIEVES;
        pop ()
     fi;
     i++
  :: else -> break
  od;
  /* Everything pushed was taken once, and the queue is empty. */
  byte k = 1;
  do
  :: k <= n_pushed -> assert (taken[k] == 1); k++
  :: else -> break
  od;
  assert (steal == real && real == tail)
}

/* ws_local_queue_steal_into's claim (steal_half_into), one attempt that
 * retries its CAS as the C loop does. */
active [N_THIEVES] proctype thief ()
{
  byte t_steal, t_real, t_tag, t_tail, n, first, j;
  bool claimed = false;
  do
  :: claimed -> break
  :: else ->
     atomic { t_steal = steal; t_real = real; t_tag = tag }
     if
     :: t_steal != t_real -> break
     :: else -> skip
     fi;
     t_tail = tail;
     if
     :: t_tail < t_real -> break  /* a take-back in flight (see the C) */
     :: else -> skip
     fi;
     n = t_tail - t_real;
     n = n - n / 2;
     if
     :: n == 0 -> break
     :: else -> skip
     fi;
     atomic {
       if
       :: steal == t_steal && real == t_real && tag == t_tag ->
          real = t_real + n;
          claimed = true
       :: else -> skip          /* the head moved: read it again */
       fi
     }
  od;
  if
  :: claimed ->
     first = t_steal;
     j = 0;
     do
     :: j < n -> take (buffer[(first + j) % CAP]); j++
     :: else -> break
     od;
     /* Close the gap: steal catches up with real (the owner may have
      * popped meanwhile). */
     atomic { steal = real }
  :: else -> skip
  fi;
  thieves_done++
}
