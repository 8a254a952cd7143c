/* offload-uring.pml: the completion queue of the syscall offload's
 * io_uring backend and its two consumers (wsrt/core/ws-offload.c)
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Three callers submit one op each. The kernel posts an op's completion
 * to the CQ within the submission (a read of cached pages) or later, from
 * its own worker. The CQ has two consumers: the reaper, which waits in
 * the kernel until the CQ holds an entry, then takes entries under
 * `cq_lock` (uring_reaper_main), and each submitter, which right after
 * its submission tries `cq_lock` and, if it gets it, takes what the CQ
 * holds (uring_reap_own). A consumer reads the entry at the head and then
 * advances the head: two steps, which the lock makes one consumer's at a
 * time. An op a consumer takes is ended by it (op_end): the waker is
 * taken, `done` set, the waker woken; except the submitter's own op,
 * which it ends before it would wait, without a wake. A caller whose op
 * is not done after its submission suspends until its waker is woken.
 * Once every caller has returned, the offload's teardown posts the
 * reaper's stop request, which only the reaper takes.
 *
 * Checked:
 *  - each op is ended exactly once, and never after its caller returned
 *    (its op lived on its stack);
 *  - no caller waits for ever and the reaper stops: every process
 *    reaches its end (an invalid end state otherwise);
 *  - the CQ is empty at the end: no completion is left untaken.
 *
 * Broken variants, each must fail:
 *  - BROKEN_NO_CQ_LOCK: a submitter takes entries without `cq_lock`: two
 *    consumers read the same head, one op is ended twice and another
 *    never;
 *  - BROKEN_OWN_WAKELESS_ALL: a submitter ends every op it takes without
 *    a wake, as if each were its own: another caller, suspended, is never
 *    woken.
 *
 * Both consumers end the ops they took after letting go of the lock, as
 * the C code does. A submitter leaves the stop request in the CQ, but no
 * submitter can meet it: it is sent only once every caller has returned
 * (ws_offload_free runs at the runtime's last unref, and each submitting
 * fiber's task holds the runtime), which this model assumes rather than
 * checks. Not modelled: the batch bound (REAP_BATCH), which only leaves
 * entries for the next take.
 */

#define N_CALLERS 3
#define STOP      7

chan cq = [N_CALLERS + 1] of { byte };   /* the completion queue, in order */
chan later = [N_CALLERS] of { byte };    /* ops the kernel's worker will end */
bit  cq_lock;
bit  done[N_CALLERS];
bit  woken[N_CALLERS];
bit  returned[N_CALLERS];
byte ends[N_CALLERS];
byte n_returned;
bit  stop_sent;

inline op_end (i, wake)
{
  atomic {
    assert (!returned[i]);       /* reads the op: its caller is still in */
    assert (ends[i] == 0);       /* exactly once */
    ends[i]++;
    done[i] = 1;                 /* from here the op is the caller's */
    if
    :: wake -> woken[i] = 1
    :: else -> skip
    fi
  }
}

/* Reads the head, then advances: @x gets the head's op. Under cq_lock
 * in the C code, except in BROKEN_NO_CQ_LOCK. */
inline take_one (x)
{
  cq ? <x>;                      /* io_uring_for_each_cqe: the head's entry */
  cq ? _                         /* io_uring_cq_advance */
}

/* The kernel's worker: ends an op that had to wait, later. */
proctype kernel_worker ()
{
  byte x;

end:
  do
  :: later ? x -> cq ! x
  od
}

proctype reaper ()
{
  chan taken = [N_CALLERS] of { byte };
  byte x;
  bool stop = false;

  do
  :: stop -> break
  :: else ->
     nempty (cq);                /* io_uring_enter (GETEVENTS): waits */
     atomic { cq_lock == 0 -> cq_lock = 1 };
     do
     :: empty (cq) -> break
     :: nempty (cq) ->
        take_one (x);
        if
        :: x == STOP -> stop = true
        :: else -> taken ! x
        fi
     od;
     cq_lock = 0;
     do
     :: taken ? x -> op_end (x, true)
     :: empty (taken) -> break
     od
  od
}

proctype caller (byte i)
{
  chan taken = [N_CALLERS] of { byte };
  byte x;
  bool locked;

  /* The submission: the kernel ends the op within it, or later. */
  if
  :: cq ! i
  :: later ! i
  fi;

  /* uring_reap_own: try the lock; take what the CQ holds. */
#ifdef BROKEN_NO_CQ_LOCK
  locked = true;
#else
  atomic {
    if
    :: cq_lock == 0 -> cq_lock = 1; locked = true
    :: else -> locked = false
    fi
  };
#endif
  if
  :: locked ->
     do
     :: empty (cq) -> break
     :: nempty (cq) ->
        cq ? <x>;
        if
        :: x == STOP -> break    /* the reaper's: left in the CQ */
        :: else -> cq ? _; taken ! x
        fi
     od;
#ifndef BROKEN_NO_CQ_LOCK
     cq_lock = 0;
#endif
     do
     :: taken ? x ->
        if
        :: x == i -> op_end (x, false)
#ifdef BROKEN_OWN_WAKELESS_ALL
        :: x != i -> op_end (x, false)
#else
        :: x != i -> op_end (x, true)
#endif
        fi
     :: empty (taken) -> break
     od
  :: else -> skip
  fi;

  /* await_op: suspended until woken, unless done already. */
  if
  :: done[i] -> skip
  :: else -> woken[i] == 1; assert (done[i])
  fi;
  atomic { returned[i] = 1; n_returned++ }
}

/* ws_offload_free: once no op is in flight, the stop request. */
proctype teardown ()
{
  n_returned == N_CALLERS;
  cq ! STOP;
  stop_sent = 1
}

proctype monitor ()
{
  timeout ->
    assert (n_returned == N_CALLERS);
    assert (ends[0] == 1 && ends[1] == 1 && ends[2] == 1);
    assert (empty (cq))
}

init
{
  atomic {
    run kernel_worker ();
    run reaper ();
    run caller (0);
    run caller (1);
    run caller (2);
    run teardown ();
    run monitor ()
  }
}
