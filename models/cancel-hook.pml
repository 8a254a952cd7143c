/* cancel-hook.pml: a task's cancel hook (its GCancellable) installed by
 * its poll while another thread cancels the task
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Mirrors ws_raw_task_set_cancel_hook and run_cancel_hook with
 * ws_raw_task_cancel / ws_raw_task_shutdown (wsrt/core/ws-raw-task.c):
 * the poller (holding RUNNING) stores the hook, fences (seq_cst) and
 * reads the state; the canceller sets CANCELLED in the state word (an
 * atomic RMW), fences and reads the hook. Spin's interleavings are
 * sequentially consistent, which the two seq_cst fences give the C code
 * for this pair. The poll then goes on, and a cancelled task ends through
 * cancel_task, which runs the hook once more with RUNNING held
 * (modelled: the poller's end).
 *
 * Properties: once the canceller has returned, the hook has run if the
 * poller installed it before its poll returned (a long job sees its
 * cancel while it still runs, not only at its end); and it has run at
 * the latest when the task ends.
 *
 * A run of the hook is g_cancellable_cancel () (ws-context.c): the first
 * call sets the cancellable's flag and runs the handlers, a later one
 * returns at once, even while the first is still in the handlers. The
 * hook counts the runs inside it (under its lock: one atomic step here),
 * and the run in cancel_task waits for the count to reach 0 before the
 * destroy notify. Property: no handler is running when the destroy
 * notify runs, and none starts after it.
 *
 * -DBROKEN_NO_RECHECK (the installer does not read the state after
 * storing the hook) gives a counterexample: a cancel that read no hook,
 * then a hook that never runs while the job keeps running.
 *
 * -DBROKEN_NO_SETTLE (cancel_task's run returns as soon as its own
 * g_cancellable_cancel () does) gives a counterexample: the destroy
 * notify frees the task's data while the canceller's handler uses it.
 *
 * -DNESTED: the task's poll has returned; the canceller's handler ends
 * the task on its own thread (a shutdown takes RUNNING from the NOTIFIED
 * task and runs cancel_task inside the handler). The last run waits only
 * for runs of other threads; each thread counts its own. Property: no
 * deadlock (Spin's invalid end states). -DNESTED -DBROKEN_COUNT_OWN (the
 * last run waits for every run, its own thread's too) gives the
 * counterexample: the last run waits for the handler it is in.
 */

bool cancelled = false;      /* WS_STATE_CANCELLED */
bool hook = false;           /* task->cancel_hook != NULL */
byte runs = 0;               /* times the hook (GCancellable) was cancelled */
bool canceller_done = false;
bool installed = false;

bool gc_cancelled = false;   /* the GCancellable's flag */
byte inside = 0;             /* CancellableHook.inside */
byte in_handlers = 0;        /* runs that are in the handlers */
bool destroyed = false;      /* the destroy notify has run */

/* cancellable_hook_cancel (): one run of the hook. */
inline hook_cancel (last)
{
  runs++;
  inside++;
  if
  :: atomic { !gc_cancelled -> gc_cancelled = true; in_handlers++ };
     assert (!destroyed);               /* the handler uses the data */
     in_handlers--
  :: atomic { gc_cancelled -> skip }    /* returns at once */
  fi;
  inside--;
#ifndef BROKEN_NO_SETTLE
  if
  :: last -> (inside == 0)              /* g_cond_wait until settled */
  :: else -> skip
  fi
#endif
}

#ifdef NESTED
proctype NestedCanceller ()
{
  byte own = 0;                         /* this thread's runs it is inside */

  cancelled = true;                     /* ws_raw_task_cancel: NOTIFIED */
  runs++;                               /* run_cancel_hook: the outer run */
  inside++;
  own++;
  if
  :: atomic { !gc_cancelled -> gc_cancelled = true; in_handlers++ };
     /* The handler shuts down: cancel_task here, the last run. */
     runs++;
     inside++;
     atomic { gc_cancelled -> skip };   /* returns at once */
     inside--;
#ifdef BROKEN_COUNT_OWN
     (inside == 0);
#else
     (inside == own);
#endif
     assert (in_handlers == 1);         /* only the one it is in */
     destroyed = true;
     in_handlers--
  :: atomic { gc_cancelled -> skip }
  fi;
  inside--;
  own--;
  canceller_done = true
}

init
{
  hook = true;                          /* installed by the first poll */
  run NestedCanceller ()
}
#else
proctype Poller ()
{
  /* ws_context_get_cancellable -> ws_raw_task_set_cancel_hook */
  hook = true;                          /* release store; seq_cst fence */
#ifndef BROKEN_NO_RECHECK
  if
  :: cancelled -> hook_cancel (false)   /* already cancelled: run it now */
  :: else -> skip
  fi;
#endif
  installed = true;

  /* The long job: it keeps running until it sees the cancel. */
  (gc_cancelled || canceller_done);     /* g_cancellable_is_cancelled () */
  assert (runs > 0);                    /* seen while still running */

  /* The poll returns; the task ends cancelled (cancel_task): the last
   * run, then the destroy notify. */
  hook_cancel (true);
  assert (in_handlers == 0);
  destroyed = true
}

proctype Canceller ()
{
  cancelled = true;                     /* state RMW; seq_cst fence */
  if
  :: hook -> hook_cancel (false)        /* run_cancel_hook */
  :: else -> skip
  fi;
  canceller_done = true
}

init
{
  atomic
  {
    run Poller ();
    run Canceller ()
  }
}
#endif
