/* counter-slots.pml: the task registry's counter slots (no count lost)
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Mirrors ws_task_registry_counter_slot, release_counter_slot and
 * ws_task_registry_counter_add (wsrt/core/ws-task-registry.c and
 * -private.h): NT threads share one owned slot (the model's stand-in for
 * WS_TASK_REGISTRY_SHARDS of them: one is enough for two owners to meet)
 * and the shared slot. A thread claims the owned slot with a CAS on its
 * flag, or falls back to the shared slot; it counts NC times, on its own
 * slot with a load and a store (two steps: another writer in between
 * loses a count), on the shared slot with an atomic add; at exit it gives
 * the slot back and counts once more, as a later thread-exit destructor
 * that completes a task would, on the shared slot.
 *
 * Spin's interleavings are sequentially consistent; in C the claim's
 * acquire and the give-back's release make one owner's last store happen
 * before the next owner's first load, which is what this order assumes.
 *
 * Property: when every thread is done, the two slots hold every count.
 *
 * Broken variants, each with a counterexample:
 *  -DBROKEN_NO_CLAIM: a thread takes the owned slot without the CAS, so
 *     two threads write it with loads and stores at once
 *     (test: model-counter-slots-broken-no-claim);
 *  -DBROKEN_KEEP_SLOT: a thread that gave its slot back still counts on
 *     it, racing its next owner (test: model-counter-slots-broken-keep-slot).
 */

#ifndef NT
#define NT 3
#endif
#ifndef NC
#define NC 2
#endif

bit owned = 0;          /* the owned slot's flag */
byte owned_count = 0;
byte shared_count = 0;
byte done = 0;

inline count_on (mine)
{
  if
  :: mine ->
     tmp = owned_count;
     owned_count = tmp + 1
  :: else ->
     shared_count++                           /* an atomic add */
  fi
}

proctype counter ()
{
  bit mine = 0;
  byte tmp, i;

#ifdef BROKEN_NO_CLAIM
  mine = 1;
#else
  atomic                                      /* the CAS on the flag */
  {
    if
    :: owned == 0 -> owned = 1; mine = 1
    :: else -> mine = 0                       /* every slot owned: shared */
    fi
  };
#endif
  i = 0;
  do
  :: i < NC -> count_on (mine); i++
  :: else -> break
  od;
  /* Exit: the GPrivate destructor gives the slot back. */
  if
  :: mine ->
#ifndef BROKEN_KEEP_SLOT
     owned = 0;
     mine = 0
#else
     owned = 0
#endif
  :: else
  fi;
  /* A later destructor completes one more task. */
  count_on (mine);
  done++
}

init
{
  byte i;

  atomic
  {
    for (i : 1 .. NT)
      {
        run counter ()
      }
  }
  done == NT;
  assert (owned_count + shared_count == NT * (NC + 1))
}
