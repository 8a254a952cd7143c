/* remote-hint.pml: "remote tasks wait", the hint that ends a chain early
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One worker and NREMOTE remote producers. Mirrors:
 *  - ws_inject_queue_push_remote (wsrt/core/ws-inject-queue.c): under
 *    tail_lock, push the task (pushed + 1), then count it as remote
 *    (n_remote + 1, release);
 *  - take_injected (wsrt/core/ws-worker.c): read the count (acquire),
 *    then the queue's length; an empty queue records the count as seen;
 *    otherwise take a batch, and a batch that empties the queue (n >= len)
 *    records it too;
 *  - remote_tasks_waiting (wsrt/core/ws-worker.c): the queue is not empty
 *    and the count differs from the one seen. When it says so at the LIFO
 *    cap, the worker's chain queues behind the injection queue's tasks;
 *    when it wrongly says no, a remote task waits for the fairness tick.
 *
 * The release/acquire pair makes the interleaving semantics of spin exact
 * for these two variables: a count that includes a push is read only
 * after that push's length is visible.
 *
 * Property: once every producer has pushed and counted, a task still in
 * the injection queue shows as waiting, however the worker's takes
 * interleaved with the pushes (a take may see the queue empty, take all
 * it saw, or take less).
 *
 * Build with -DBROKEN_COUNT_FIRST (the producer counts before it pushes)
 * and pan finds the worker recording a count whose task is not queued
 * yet, so that the task then sits in the queue unflagged (test:
 * model-remote-hint-broken-count-first).
 */

#ifndef NREMOTE
#define NREMOTE 2
#endif

byte qlen = 0;        /* tasks in the injection queue */
byte count = 0;      /* the injection queue's n_remote */
byte seen = 0;       /* the worker's remote_seen */
byte pushed = 0;     /* producers done */

#define WAITING (qlen > 0 && count != seen)

proctype producer ()
{
#ifdef BROKEN_COUNT_FIRST
  count++;
  qlen++;
#else
  qlen++;
  count++;
#endif
  pushed++
}

/* take_injected: a batch of all the length it read, or fewer. */
inline take ()
{
  atomic { r = count };
  atomic { l = qlen };
  if
  :: l == 0 -> seen = r
  :: l > 0 ->
     if
     :: qlen = qlen - l; seen = r              /* n >= len: the batch took all it saw */
     :: l > 1 -> qlen--                        /* a smaller batch */
     fi
  fi
}

proctype worker ()
{
  byte r, l;

  do
  :: take ()
  :: pushed == NREMOTE -> break
  od;
  /* Every producer has pushed and counted: what is still queued must
   * show as waiting, or it waits for the fairness tick. */
  assert (qlen == 0 || WAITING)
}

init
{
  atomic
  {
    byte i;
    for (i : 1 .. NREMOTE)
      {
        run producer ()
      }
    run worker ()
  }
}
