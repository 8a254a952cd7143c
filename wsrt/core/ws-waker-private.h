/* ws-waker-private.h: wakers, the slot of one waker and the list of many
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A waker is what an awaitable keeps to make a waiting task (or a main
 * loop callback, or a task group) run again. It is anything whose first
 * member is a WsWakerVTable pointer: a task is its own waker, so
 * registering one costs a reference, not an allocation (doc/architecture.md,
 * "The task and its state word").
 *
 * The rules every keeper of wakers follows:
 *
 *  - A kept waker holds a reference, taken when it is stored and dropped
 *    by whoever takes it out (to wake it, or because nobody can wait any
 *    more).
 *  - Wakers are stored and taken under the awaitable's own lock (in the
 *    lock-free WsOneshot, by the one thread its state word gives the slot
 *    to), and woken outside it: a wake may run arbitrary code (a task
 *    group's member waker takes the group's lock, a local executor arms
 *    a GSource), and the woken task may poll the awaitable again at once
 *    on another thread, taking that same lock.
 *  - A wake keeps the caller's reference (wake by reference); the
 *    reference is dropped after the wake, so the waker is alive during it.
 *
 * WsWakerList is the one list of wakers of the awaitables: the waiters of
 * each side of a channel, of a task group, of a join handle. It keeps one
 * entry per waker (a task that polls again while still listed is not
 * listed twice), and is emptied whole: every change an awaitable wakes
 * for is one that any of its waiters may need, and a woken waiter that
 * finds nothing registers again, so a waiter whose task was cancelled
 * never sits on a wake another waiter needed.
 */

#pragma once

#include <stdatomic.h>

#include <glib.h>

#include "ws-types.h"

G_BEGIN_DECLS

typedef struct
{
  void (*wake)  (WsWaker *waker);      /* by reference: keeps the ref */
  void (*ref)   (WsWaker *waker);
  void (*unref) (WsWaker *waker);
} WsWakerVTable;

struct _WsWaker
{
  const WsWakerVTable *vtable;
};

/* Live references to task wakers (ws_context_get_waker, a waker slot, a
 * vtable ref), counted only with WS_ENABLE_LEAK_COUNTERS (debug builds):
 * the test harness checks it is 0 after every test case. -1 when not
 * counted. Relaxed, like the live-task count: exact once the threads are
 * done. */
gint64 ws_waker_get_n_live (void);
#ifdef WS_ENABLE_LEAK_COUNTERS
extern _Atomic gint64 ws_waker_n_live;
# define WS_COUNT_WAKERS(n) \
  ((void) atomic_fetch_add_explicit (&ws_waker_n_live, (n), memory_order_relaxed))
#else
# define WS_COUNT_WAKERS(n) ((void) 0)
#endif

/* ---- one waker ------------------------------------------------------ */

/* Awaitables that keep one waker keep it in a slot. Register the polling
 * task's waker there (under the awaitable's lock) with
 * ws_waker_slot_replace (), which is the task's (ws-raw-task-private.h:
 * only the task knows which waker a context's poll stands for), and
 * unref the one returned outside it; wake a taken waker with
 * ws_waker_take_and_wake (). */

/* Wakes @waker, if any, and drops the reference its taker held. */
static inline void
ws_waker_take_and_wake (WsWaker *waker)
{
  if (waker != NULL)
    {
      waker->vtable->wake (waker);
      waker->vtable->unref (waker);
    }
}

/* ---- many wakers ---------------------------------------------------- */

/* Not locked itself: its owner's lock guards it, except a list that
 * ws_waker_list_take () moved out, which belongs to the thread that took
 * it. An all-zero list is empty (WS_WAKER_LIST_INIT). */
typedef struct
{
  WsWaker **wakers;
  guint     len;
  guint     size;
} WsWakerList;

#define WS_WAKER_LIST_INIT { NULL, 0, 0 }

static inline void
ws_waker_list_init (WsWakerList *self)
{
  *self = (WsWakerList) WS_WAKER_LIST_INIT;
}

/* Moves every waker out of @self (under the owner's lock) into the list
 * returned, which the caller wakes outside the lock with
 * ws_waker_list_wake_all (). @self is left empty. */
static inline WsWakerList
ws_waker_list_take (WsWakerList *self)
{
  WsWakerList taken = *self;

  ws_waker_list_init (self);
  return taken;
}

gboolean   ws_waker_list_add             (WsWakerList    *self,
                                          WsWaker        *waker);
gboolean   ws_waker_list_remove          (WsWakerList    *self,
                                          WsWaker        *waker);
void       ws_waker_list_wake_all        (WsWakerList    *self);
void       ws_waker_list_clear           (WsWakerList    *self);

G_END_DECLS
