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
 * -DBROKEN_NO_RECHECK (the installer does not read the state after
 * storing the hook) gives a counterexample: a cancel that read no hook,
 * then a hook that never runs while the job keeps running.
 */

bool cancelled = false;      /* WS_STATE_CANCELLED */
bool hook = false;           /* task->cancel_hook != NULL */
byte runs = 0;               /* times the hook (GCancellable) was cancelled */
bool canceller_done = false;
bool installed = false;

proctype Poller ()
{
  /* ws_context_get_cancellable -> ws_raw_task_set_cancel_hook */
  hook = true;                          /* release store; seq_cst fence */
#ifndef BROKEN_NO_RECHECK
  if
  :: cancelled -> runs++                /* already cancelled: run it now */
  :: else -> skip
  fi;
#endif
  installed = true;

  /* The long job: it keeps running until it sees the cancel. */
  (canceller_done);
  assert (runs > 0);                    /* seen while still running */

  /* The poll returns; the task ends cancelled (cancel_task) */
  runs++
}

proctype Canceller ()
{
  cancelled = true;                     /* state RMW; seq_cst fence */
  if
  :: hook -> runs++                     /* run_cancel_hook */
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
