/* zombie.pml: an ended task held by a stale waker lets its host go
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One task, one stale waker of it held by an awaitable (a channel's
 * waiter list), the task's poller, and the host's shutdown followed by
 * the owner's last reference. Mirrors wsrt/core/ws-raw-task.c, "Stale
 * wakers":
 *  - complete (): with RUNNING held, leave the registry (a host access),
 *    publish COMPLETE, and if more references are left than the poller's
 *    and the set's, put the task on the host's zombie list (under the
 *    zombie lock); then drop the poller's reference;
 *  - a waker's wake reads the state: COMPLETE makes it a no-op, anything
 *    else schedules the task on its host (a host access); its unref may
 *    be the last: dealloc () takes the task off the zombie list under the
 *    lock, reading the host there, and drops that host's reference;
 *  - ws_raw_task_release_zombies (), once every task of the host has
 *    ended, complete () included (the release runs on the thread that
 *    polled the last task, or after it was joined, or where its context
 *    could be acquired): under the lock, each zombie's host becomes the dead host;
 *    then the host's reference is dropped once per zombie;
 *  - the host is freed when its count reaches zero; every access asserts
 *    it is not.
 *
 * Property: no access to a freed host, each host reference dropped once
 * (the count never goes below zero), and when nothing can move the host
 * is freed, also while the awaitable keeps the stale waker (and so the
 * task's memory) for ever.
 *
 * Broken variants, each must give a counterexample:
 *  -DBROKEN_EARLY_RELEASE  the host hands back its zombies' references
 *                          without waiting for its tasks to end: a task
 *                          that ends later keeps the host;
 *  -DBROKEN_UNLOCKED_HOST  dealloc () reads the task's host outside the
 *                          zombie lock, so it and the release can both
 *                          drop the one host reference.
 */

#define DEAD 0
#define REAL 1

byte host_refs = 2;        /* the owner's and the task's */
bool host_freed;
byte task_host = REAL;
byte task_refs = 2;        /* the poller's and the stale waker's */
bool task_complete;
bool task_freed;
bool zombie;               /* on the host's list */
bool lock;
bool all_ended;            /* the host's tasks have all ended */

inline host_access ()
{
  assert (!host_freed)
}

inline host_unref ()
{
  atomic {
    assert (host_refs > 0);
    host_refs--;
    if
    :: host_refs == 0 -> host_freed = true
    :: else -> skip
    fi
  }
}

inline acquire ()
{
  atomic { !lock -> lock = true }
}

inline release ()
{
  lock = false
}

inline dealloc ()
{
  byte h;
#ifdef BROKEN_UNLOCKED_HOST
  h = task_host;
  acquire ();
  zombie = false;
  release ();
#else
  acquire ();
  h = task_host;
  if
  :: h == REAL -> zombie = false
  :: else -> skip
  fi;
  release ();
#endif
  task_freed = true;
  if
  :: h == REAL -> host_unref ()
  :: else -> skip
  fi
}

inline task_unref ()
{
  byte left;
  atomic { task_refs--; left = task_refs };
  if
  :: left == 0 -> dealloc ()
  :: else -> skip
  fi
}

bool running;              /* RUNNING: a wake only marks NOTIFIED */

proctype poller ()
{
  running = true;             /* took the task from its queue */
  host_access ();             /* leave the registry */
  task_complete = true;
  /* More references than the poller's: a waker is held somewhere. */
  if
  :: task_refs > 1 ->
       acquire ();
       zombie = true;
       release ()
  :: else -> skip
  fi;
  /* complete () has returned: the host sees its tasks ended only then
   * (the poller is a worker it joined, or its own thread, or the owner
   * of a local executor's context, which the release runs on). */
  all_ended = true;
  task_unref ()
}

bool waker_dropped;

proctype stale_waker ()
{
  /* Woken at any time, or never; dropped with its awaitable, or kept
   * (the awaitable lives on). */
  if
  :: atomic {
       /* The state word's CAS: a no-op once COMPLETE, only NOTIFIED
        * while RUNNING, a schedule on the host while idle. */
       if
       :: task_complete || running -> skip
       :: else -> host_access ()
       fi
     }
  :: skip
  fi;
  if
  :: waker_dropped = true; task_unref ()
  :: skip
  fi
}

proctype shutdown ()
{
  byte n = 0;

#ifndef BROKEN_EARLY_RELEASE
  all_ended;
#endif
  acquire ();
  if
  :: zombie -> task_host = DEAD; zombie = false; n++
  :: else -> skip
  fi;
  release ();
  do
  :: n > 0 -> n--; host_unref ()
  :: else -> break
  od;
  host_unref ()               /* the owner's */
}

init
{
  atomic {
    run poller ();
    run stale_waker ();
    run shutdown ()
  };
  (_nr_pr == 1);
  /* The host is freed even while the awaitable keeps the task. */
  assert (host_freed);
  assert (task_freed == waker_dropped)
}
