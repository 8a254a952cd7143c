/* runtime-ref.pml: the runtime's reference count with per-thread credit
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Mirrors wsrt/core/ws-runtime-ref-private.h ("Credit", C1-C3): a worker
 * thread W holds its own reference and keeps a credit, from which its
 * tasks take their references (batches of BATCH from the count) and to
 * which a task freed on W gives its reference back (a batch back to the
 * count past 2 * BATCH). The caller (the WsRuntime object) holds one
 * reference and makes a task on the count; a foreign thread F frees
 * tasks on the count. W returns its credit when it stops, then drops its
 * own reference. An update of the count is one atomic step; a credit is
 * a plain variable of W, read and written in two steps.
 *
 * Properties: nothing touches the runtime after it was freed (every step
 * on the count or a task asserts !freed), it is freed once, and, when
 * nothing can move any more, it has been freed with count 0.
 *
 * -DBROKEN_RETURN_LATE (W drops its own reference before it returns its
 * credit) gives a counterexample: the credit's return, which never frees,
 * takes the count to zero, and the runtime is never freed.
 * -DBROKEN_FOREIGN_CREDIT (F gives a freed task's reference to W's
 * credit, which is not its own) gives one too: the two unlocked updates
 * of the credit lose one, and the count never returns to zero.
 */

#define BATCH   2
#define N_TASKS 4               /* made: 3 by W on its credit, 1 by the caller */

byte count = 1;                 /* the caller's reference */
bool freed = false;
byte n_frees = 0;
byte credit = 0;                /* W's */
bool w_keeps_credit = false;
byte n_freed_tasks = 0;
chan tasks = [N_TASKS] of { bit };

inline release_count (n)
{
  atomic {
    assert (!freed);
    assert (count >= n);
    count = count - n;
    if
    :: count == 0 -> freed = true; n_frees++
    :: else -> skip
    fi
  }
}

/* A credit going back to the count (ws_runtime_ref_return_credit, and
 * the batch in ws_runtime_ref_release_for_task): a plain subtraction, it
 * never frees (C2 says it cannot reach zero). */
inline return_to_count (n)
{
  atomic { assert (!freed); assert (count >= n); count = count - n }
}

inline acquire_count (n)
{
  atomic { assert (!freed); count = count + n }
}

/* ws_runtime_ref_acquire_for_task on W */
inline w_task_acquire ()
{
  if
  :: credit == 0 -> acquire_count (BATCH); credit = BATCH
  :: else -> skip
  fi;
  credit--
}

/* ws_runtime_ref_release_for_task on W: a read and a write of the credit */
inline credit_give_back (tmp)
{
  tmp = credit;
  credit = tmp + 1;
  if
  :: credit > 2 * BATCH -> credit = credit - BATCH; return_to_count (BATCH)
  :: else -> skip
  fi
}

proctype Worker ()
{
  byte tmp;
  bit t;
  byte made = 0;

  w_keeps_credit = true;
  do
  :: made < N_TASKS - 1 -> w_task_acquire (); made++; tasks ! 1
  :: made == N_TASKS - 1 -> break
  od;
  /* free what it is given, on its credit */
  do
  :: tasks ? t -> credit_give_back (tmp); atomic { n_freed_tasks++ }
  :: n_freed_tasks == N_TASKS -> break
  :: timeout -> break
  od;
#ifdef BROKEN_RETURN_LATE
  release_count (1);            /* its own reference, too early */
  atomic { w_keeps_credit = false; tmp = credit; credit = 0 };
  if
  :: tmp > 0 -> return_to_count (tmp)
  :: else -> skip
  fi
#else
  atomic { w_keeps_credit = false; tmp = credit; credit = 0 };
  if
  :: tmp > 0 -> return_to_count (tmp)
  :: else -> skip
  fi;
  release_count (1)             /* its own reference, last */
#endif
}

proctype Foreign ()
{
  bit t;
  byte tmp;

  do
  :: tasks ? t ->
#ifdef BROKEN_FOREIGN_CREDIT
     if
     :: w_keeps_credit -> credit_give_back (tmp)
     :: else -> release_count (1)
     fi;
#else
     release_count (1);
#endif
     atomic { n_freed_tasks++ }
  :: n_freed_tasks == N_TASKS -> break
  :: timeout -> break
  od
}

proctype Caller ()
{
  /* one task made on the count, then the caller lets go */
  acquire_count (1);
  tasks ! 1;
  release_count (1)
}

init
{
  atomic {
    count++;                    /* W's own reference, taken before it starts */
    run Worker ();
    run Foreign ();
    run Caller ()
  }
}

active proctype Monitor ()
{
  timeout -> assert (freed && count == 0 && n_frees == 1)
}
