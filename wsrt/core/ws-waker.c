/* ws-waker.c: the waker list and the waker leak counter
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The rules these keep are at the top of ws-waker-private.h: a kept
 * waker holds a reference; wakers are stored and taken under the
 * awaitable's lock and woken outside it.
 *
 * A WsWakerList is a growable array of waker pointers. It is short (the
 * tasks waiting on one awaitable at one time) and emptied whole, so a
 * linear scan for duplicates costs less than any index would, and taking
 * the list out under the lock is a copy of three words.
 *
 * The slot's store, ws_waker_slot_replace (), is the task's
 * (ws-raw-task.c): the waker a poll stands for is its task's own, and
 * this module includes nothing of the task, which includes it.
 */

#include "config.h"

#include "ws-waker-private.h"

#ifdef WS_ENABLE_LEAK_COUNTERS
_Atomic gint64 ws_waker_n_live;
#endif

gint64
ws_waker_get_n_live (void)
{
#ifdef WS_ENABLE_LEAK_COUNTERS
  return atomic_load_explicit (&ws_waker_n_live, memory_order_relaxed);
#else
  return -1;
#endif
}

/* Under the owner's lock. Adds a new reference to @waker, unless @waker is
 * listed already (then it takes nothing and returns FALSE). */
gboolean
ws_waker_list_add (WsWakerList *self,
                   WsWaker     *waker)
{
  for (guint i = 0; i < self->len; i++)
    if (self->wakers[i] == waker)
      return FALSE;

  if (self->len == self->size)
    {
      self->size = MAX (4, self->size * 2);
      self->wakers = g_renew (WsWaker *, self->wakers, self->size);
    }
  waker->vtable->ref (waker);
  self->wakers[self->len++] = waker;
  return TRUE;
}

/* Under the owner's lock: takes @waker out of @self if it is listed, and
 * returns whether it was; its reference is then the caller's, to drop
 * outside the lock. For a waiter that stops waiting without being woken
 * (a cancelled async operation). The list is unordered: every waiter is
 * woken, so moving the last entry into the hole changes nothing. */
gboolean
ws_waker_list_remove (WsWakerList *self,
                      WsWaker     *waker)
{
  for (guint i = 0; i < self->len; i++)
    if (self->wakers[i] == waker)
      {
        self->wakers[i] = self->wakers[--self->len];
        return TRUE;
      }
  return FALSE;
}

/* Outside the owner's lock, on a list that ws_waker_list_take () moved
 * out (or on one nobody else can reach any more): wakes every waker, drops
 * its reference, and leaves @self empty. */
void
ws_waker_list_wake_all (WsWakerList *self)
{
  WsWakerList list = ws_waker_list_take (self);

  for (guint i = 0; i < list.len; i++)
    ws_waker_take_and_wake (list.wakers[i]);
  g_free (list.wakers);
}

/* Drops every reference without waking: the awaitable is going away and
 * nobody can wait on it any more. Leaves @self empty. */
void
ws_waker_list_clear (WsWakerList *self)
{
  WsWakerList list = ws_waker_list_take (self);

  for (guint i = 0; i < list.len; i++)
    list.wakers[i]->vtable->unref (list.wakers[i]);
  g_free (list.wakers);
}
