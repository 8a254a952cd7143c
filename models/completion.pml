/* completion.pml: the once-only completion, and the timeout race on top of it
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Mirrors wsrt/ws-completion.c (C1-C3) and ws_task_wait_timeout_async ()
 * in wsrt/ws-task.c. A task is polled by a worker: each poll may return
 * its value or PENDING, and a cancel never interrupts a poll (it sets
 * CANCELLED, and the next owner of RUNNING ends the task cancelled;
 * ws-raw-task.c). Two waits run on the caller's context, each ending
 * through a completion claimed once and delivered through the context's
 * queue: the wait for the task (woken by its end, or cancelled by the
 * caller's cancellable with -DCALLER_CANCEL) and the sleep (its deadline,
 * or cancelled when the task's wait ends first). The context runs the
 * callbacks in the order they were queued, one at a time.
 *
 * Properties:
 *  - each completion is delivered exactly once (C1), and the caller gets
 *    exactly one answer;
 *  - TIMED_OUT only for a task that ended cancelled, and success only for
 *    one that completed with its value.
 *
 * Broken variants, each with a counterexample:
 *  -DBROKEN_REPORT_AT_DEADLINE: the deadline answers TIMED_OUT at once and
 *     cancels the task, as the wait did before: a task whose poll was
 *     running completes with its value after a TIMED_OUT (test:
 *     model-completion-broken-report-at-deadline);
 *  -DBROKEN_NO_CLAIM: a completion is queued by whoever ends it, with no
 *     claim, so a wake and a cancel both deliver (test:
 *     model-completion-broken-no-claim).
 */

#define T_IDLE    0
#define T_RUNNING 1
#define T_DONE    2

#define NONE      0
#define VALUE     1
#define CANCELLED 2

#define PENDING   0
#define WOKEN     1
#define C_CANCEL  2

#define R_NONE      0
#define R_OK        1
#define R_TIMED_OUT 2
#define R_CANCELLED 3

#define MSG_TASK  1
#define MSG_SLEEP 2

byte tstate = T_IDLE;
bool notified = true;        /* queued by its spawn */
bool tcancelled = false;
byte outcome = NONE;

byte wait_claim = PENDING;
byte sleep_claim = PENDING;
byte wait_deliveries = 0;
byte sleep_deliveries = 0;

bool timed_out = false;
bool caller_cancelled = false;
byte report = R_NONE;
byte n_reports = 0;

chan ctxq = [4] of { byte };

/* C1 + C2: the claim, then the queue. */
#ifdef BROKEN_NO_CLAIM
#define CLAIM_WAIT(kind) \
  atomic { wait_claim = kind; wait_deliveries++; ctxq ! MSG_TASK }
#else
#define CLAIM_WAIT(kind) \
  atomic { if :: wait_claim == PENDING -> wait_claim = kind; wait_deliveries++; ctxq ! MSG_TASK \
                :: else -> skip fi }
#endif

#define CLAIM_SLEEP(kind) \
  atomic { if :: sleep_claim == PENDING -> sleep_claim = kind; sleep_deliveries++; ctxq ! MSG_SLEEP \
                :: else -> skip fi }

/* ws_raw_task_cancel: CANCELLED, and an idle task is queued to end. */
inline cancel_task ()
{
  atomic {
    if
    :: tstate != T_DONE ->
       tcancelled = true;
       if
       :: tstate == T_IDLE -> notified = true
       :: else -> skip
       fi
    :: else -> skip
    fi
  }
}

inline answer (r)
{
  assert (report == R_NONE);
  report = r;
  n_reports++
}

proctype Worker ()
{
again:
  /* transition_to_running; with CANCELLED set, the task ends cancelled. */
  atomic { tstate == T_IDLE && notified -> notified = false; tstate = T_RUNNING };
  if
  :: tcancelled -> goto cancelled
  :: else -> skip
  fi;
  /* The poll: a cancel may come meanwhile; it does not interrupt it. */
  if
  :: atomic { outcome = VALUE; tstate = T_DONE }; goto wake
  :: skip
  fi;
  /* transition_to_idle: PENDING; a cancelled task keeps RUNNING and ends. */
  atomic {
    if
    :: tcancelled -> skip
    :: else -> tstate = T_IDLE; notified = true      /* its own wake, later */
    fi
  };
  if
  :: tstate == T_IDLE -> goto again
  :: else -> skip
  fi;
cancelled:
  atomic { outcome = CANCELLED; tstate = T_DONE };
wake:
  CLAIM_WAIT (WOKEN)
}

/* The timer's tick. */
proctype Deadline ()
{
  CLAIM_SLEEP (WOKEN)
}

#ifdef CALLER_CANCEL
/* The caller's cancellable: both waits (on_timeout_caller_cancelled). */
proctype Caller ()
{
  caller_cancelled = true;
  CLAIM_WAIT (C_CANCEL);
  CLAIM_SLEEP (C_CANCEL)
}
#endif

proctype Context ()
{
  byte msg;
  byte got = 0;

  do
  :: got == 2 -> break
  :: else ->
     ctxq ? msg;
     got++;
     if
     :: msg == MSG_TASK ->
        /* on_timeout_task_done: the task's end decides. */
        CLAIM_SLEEP (C_CANCEL);
        if
        :: report != R_NONE -> skip
        :: else ->
           if
           :: wait_claim == C_CANCEL -> answer (R_CANCELLED)
           :: wait_claim == WOKEN && outcome == VALUE -> answer (R_OK)
           :: wait_claim == WOKEN && outcome == CANCELLED && timed_out -> answer (R_TIMED_OUT)
           :: wait_claim == WOKEN && outcome == CANCELLED && !timed_out -> answer (R_CANCELLED)
           fi
        fi
     :: msg == MSG_SLEEP ->
        /* on_timeout_sleep_done */
        if
        :: sleep_claim == WOKEN && report == R_NONE && !caller_cancelled ->
#ifdef BROKEN_REPORT_AT_DEADLINE
           answer (R_TIMED_OUT);
#endif
           timed_out = true;
           cancel_task ()
        :: else -> skip
        fi
     fi
  od;

  assert (n_reports == 1);
  assert (wait_deliveries == 1 && sleep_deliveries == 1);
  assert (report != R_TIMED_OUT || outcome == CANCELLED);
  assert (report != R_OK || outcome == VALUE)
}

init
{
  atomic {
    run Worker ();
    run Deadline ();
#ifdef CALLER_CANCEL
    run Caller ();
#endif
    run Context ()
  }
}
