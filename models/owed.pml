/* owed.pml: a completion GIO owes a worker's context, shutdown's deadline
 * and the release's wake
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Mirrors wsrt/core/ws-owed.c ("Who drains", "Release and wake") and the
 * "Owed completions" part of shutdown in wsrt/core/ws-worker-pool.c. A
 * task made a GIO call and was cancelled by shutdown; the call ignores
 * its cancellable. Processes:
 *  - the GIO call: calls back (the release: ws_owed_release, on another
 *    thread) some time, or never;
 *  - the last pool thread: holds a runtime reference, drains the
 *    workers' context (ws_owed_drain, no deadline: it sleeps in the
 *    context's poll until woken, and may also wake for any other reason
 *    and re-read the count), then marks the drain done and lets go of
 *    the runtime;
 *  - the shutdown caller: waits for the drain, up to its deadline (an
 *    event that may come at any time), returns TRUE only if nothing is
 *    owed, then drops the owner's reference.
 * The worker's context belongs to the pool: it is freed with the runtime
 * (ws_worker_free), unless a reference the release took keeps it.
 *
 * Properties: nothing touches the context or the runtime once freed
 * (asserted at each access); a TRUE return means nothing is owed; the
 * caller always returns (no invalid end state). The one valid end short
 * of the finish is the pool thread asleep in the drain of a call that
 * never calls back: the documented leak of that thread, the context and
 * the runtime.
 *
 * Broken variants (tests model-owed-broken-*):
 *  -DBROKEN_NO_DEADLINE: the caller waits for the drain with no deadline
 *   (it joined the last pool thread): with a call that never completes,
 *   it never returns (invalid end state).
 *  -DBROKEN_DRAIN_UNHELD: the pool thread lets go of the runtime before
 *   it drains: the owner's drop frees the runtime and the context, and
 *   the late completion wakes a freed context.
 *  -DBROKEN_WAKE_UNREFERENCED: the release decrements and then wakes the
 *   context it read, holding no reference: the drain, awake for another
 *   reason, reads 0 and lets go, the runtime and the context are freed
 *   before the wake.
 */

byte rt_refs = 2;            /* the owner's and the last pool thread's */
bool rt_freed = false;
byte ctx_refs = 1;           /* the pool's (freed with the runtime) */
bool ctx_freed = false;
byte owed = 1;               /* the call in flight */
bool woken = false;          /* the context's wakeup fd */
bool drained = false;
bool returned = false;
bool no_callback = false;    /* the call will never call back */

inline ctx_unref ()
{
  atomic {
    assert (!ctx_freed);
    ctx_refs--;
    if
    :: ctx_refs == 0 -> ctx_freed = true
    :: else -> skip
    fi
  }
}

/* ws_runtime_ref_release; the last frees the pool, with its contexts */
inline rt_unref (last)
{
  atomic {
    assert (!rt_freed);
    rt_refs--;
    last = (rt_refs == 0);
    if
    :: last -> rt_freed = true
    :: else -> skip
    fi
  };
  if
  :: last -> ctx_unref ()
  :: else -> skip
  fi
}

proctype gio_call ()
{
  if
  :: skip ->                  /* calls back: ws_owed_release */
#ifndef BROKEN_WAKE_UNREFERENCED
     atomic { assert (!ctx_freed); ctx_refs++ };
#endif
     atomic { assert (owed > 0); owed-- };
     atomic { assert (!ctx_freed); woken = true };
#ifndef BROKEN_WAKE_UNREFERENCED
     ctx_unref ()
#else
     skip
#endif
  :: no_callback = true       /* never calls back */
  fi
}

proctype pool_thread ()
{
  bool last;

#ifdef BROKEN_DRAIN_UNHELD
  rt_unref (last);
#endif
  /* ws_owed_drain (context, -1) */
  do
  :: owed == 0 -> break
  :: owed > 0 ->
     assert (!ctx_freed);
     /* the poll: woken by a release, or by anything else while the
      * call may still come; a call that never calls back leaves it here
      * for ever, the documented leak (a valid end) */
end_poll:
     if
     :: atomic { woken -> woken = false }
     :: !no_callback -> skip
     fi
  od;
  assert (!ctx_freed);
  drained = true;
#ifndef BROKEN_DRAIN_UNHELD
  rt_unref (last)
#endif
}

proctype caller ()
{
  bool result, last;

#ifndef BROKEN_NO_DEADLINE
  if
  :: drained -> result = (owed == 0)
  :: skip -> result = false   /* the deadline */
  fi;
#else
  drained;
  result = (owed == 0);
#endif
  assert (!result || owed == 0);
  returned = true;
  rt_unref (last)                 /* the program drops the runtime */
}

init
{
  atomic {
    run gio_call ();
    run pool_thread ();
    run caller ()
  }
}
