/* local-queue.pml: a worker's run queue, its thieves, and the take-back
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Mirrors wsrt/core/ws-local-queue.c: the owner pushes at the tail (with
 * push_overflow when the ring is full), pops at the head, and takes its
 * newest task back from the tail (ws_local_queue_take_back, the
 * work-first run of ws-worker.c); a thief claims the larger half by
 * moving the real head from a head and a tail it read (steal_half_into),
 * copies the claimed slots, then closes the gap. The head word (steal,
 * real, gen) changes in one atomic step (a CAS), and every change of it
 * increments gen; the tail and each slot are single words; every read
 * and write is its own step, in program order.
 *
 * The owner makes N_OPS (5) choices among push, pop and take-back, then,
 * once the thieves are done, pops what is left. N_THIEVES (2) thieves
 * steal N_STEALS (1) times each, concurrently. Tasks are numbered from 1
 * as they are pushed; a task moved to the injection queue counts as
 * taken there.
 *
 * Properties: no task is taken twice (each take asserts it), and at the
 * end every pushed task has been taken exactly once (nothing lost, and
 * the queue's indices came back to an empty queue).
 *
 * Broken variants, each must give a counterexample:
 *  -DBROKEN_NO_TAG    the take-back leaves the head as it was: a thief
 *                     that read the head and then the tail before the
 *                     take-back lowered the tail still succeeds with its
 *                     CAS, and claims the slot the owner took;
 *  -DBROKEN_GEN_WRAP  gen is one bit wide: two changes of the head bring
 *                     it back to the value a thief read (the C's 32-bit
 *                     generation needs 2^32 of them).
 */

#define CAP    4
#define N_IDS  (N_OPS + 1)
#ifndef N_THIEVES
#define N_THIEVES 2
#endif
#ifndef N_STEALS
#define N_STEALS 1
#endif
#ifndef N_OPS
#define N_OPS 5
#endif
#ifdef BROKEN_GEN_WRAP
#define GEN_MOD 2
#else
#define GEN_MOD 256
#endif

byte steal = 0;
byte real = 0;
byte gen = 0;
byte tail = 0;
byte buffer[CAP];
byte taken[N_IDS];
byte injected = 0;
byte n_pushed = 0;
byte thieves_done = 0;

inline take (id)
{
  assert (id != 0);
  assert (taken[id] == 0);
  taken[id] = 1
}

/* ws_local_queue_push_back_or_overflow: into the ring if there is room;
 * else to the injection queue if a thief is at work, or push_overflow:
 * claim the older half with one CAS and move it, and the new task, to the
 * injection queue (b_ok is the owner's). */
inline push ()
{
  byte h_steal, h_real, h_gen, k;
  bool h_done = false;
  n_pushed++;
  do
  :: h_done -> break
  :: else ->
  atomic { h_steal = steal; h_real = real; h_gen = gen }
  if
  :: tail - h_steal < CAP ->
     buffer[tail % CAP] = n_pushed;
     tail++; h_done = true
  :: else ->
     if
     :: h_steal != h_real -> take (n_pushed); h_done = true    /* to the injection queue */
     :: else ->
        /* push_overflow: claim the first half with one CAS */
        atomic {
          if
          :: steal == h_steal && real == h_real && gen == h_gen ->
             steal = h_real + CAP / 2; real = h_real + CAP / 2;
             gen = (h_gen + 1) % GEN_MOD; b_ok = true
          :: else -> b_ok = false
          fi
        }
        if
        :: b_ok ->
           k = 0;
           do
           :: k < CAP / 2 -> take (buffer[(h_real + k) % CAP]); k++
           :: else -> break
           od;
           take (n_pushed); h_done = true
        :: else -> skip   /* retry */
        fi
     fi
  fi
  od
}

/* ws_local_queue_pop */
inline pop ()
{
  byte p_steal, p_real, p_gen, p_idx;
  bool p_done = false;
  do
  :: p_done -> break
  :: else ->
     atomic { p_steal = steal; p_real = real; p_gen = gen }
     if
     :: p_real == tail -> p_done = true
     :: else ->
        atomic {
          if
          :: steal == p_steal && real == p_real && gen == p_gen ->
             if
             :: p_steal == p_real -> steal = p_real + 1
             :: else -> skip
             fi;
             real = p_real + 1;
             gen = (p_gen + 1) % GEN_MOD;
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
  byte b_steal, b_real, b_gen, b_task;
  atomic { b_steal = steal; b_real = real; b_gen = gen }
  if
  :: b_steal == b_real && b_real != tail ->
     b_task = buffer[(tail - 1) % CAP];
     tail--;
     atomic {
       if
       :: steal == b_steal && real == b_real && gen == b_gen ->
#ifndef BROKEN_NO_TAG
          gen = (b_gen + 1) % GEN_MOD;
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
  bool b_ok;
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

/* ws_local_queue_steal_into's claim (steal_half_into), N_STEALS times,
 * each retrying its CAS as the C loop does. */
active [N_THIEVES] proctype thief ()
{
  byte t_steal, t_real, t_gen, t_tail, n, first, j, round = 0;
  bool claimed;
again:
  claimed = false;
  do
  :: claimed -> break
  :: else ->
     atomic { t_steal = steal; t_real = real; t_gen = gen }
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
       :: steal == t_steal && real == t_real && gen == t_gen ->
          real = t_real + n;
          gen = (t_gen + 1) % GEN_MOD;
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
     atomic { steal = real; gen = (gen + 1) % GEN_MOD }
  :: else -> skip
  fi;
  round++;
  if
  :: round < N_STEALS -> goto again
  :: else -> skip
  fi;
  thieves_done++
}
