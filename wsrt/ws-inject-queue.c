/* ws-inject-queue.c: the global queue, with batch push and a closed bit
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Spawns and wakes from outside a worker, and local-queue overflow, land
 * here. A locked intrusive list: the link lives in the task, so a push
 * allocates nothing. Pushing to a closed queue drops the queued instance
 * (ws_raw_task_drop_queued): a task never polled is cancelled right there;
 * shutdown reaches the others through the owned set.
 */

#include "config.h"

#include "ws-inject-queue-private.h"
#include "ws-chaos-private.h"

void
ws_inject_queue_init (WsInjectQueue *self)
{
  ws_lock_init (&self->lock);
  self->head = self->tail = NULL;
  self->closed = FALSE;
  atomic_init (&self->len, 0);
}

void
ws_inject_queue_clear (WsInjectQueue *self)
{
  g_assert (self->head == NULL);
  ws_lock_clear (&self->lock);
}

static void
drop_list (WsRawTask *first)
{
  while (first != NULL)
    {
      WsRawTask *next = first->queue_next;

      first->queue_next = NULL;
      ws_raw_task_drop_queued (first);
      first = next;
    }
}

void
ws_inject_queue_push_batch (WsInjectQueue *self,
                            WsRawTask     *first,
                            WsRawTask     *last,
                            gsize          n)
{
  last->queue_next = NULL;

  ws_lock_lock (&self->lock);
  if (self->closed)
    {
      ws_lock_unlock (&self->lock);
      drop_list (first);
      return;
    }
  if (self->tail != NULL)
    self->tail->queue_next = first;
  else
    self->head = first;
  self->tail = last;
  /* SeqCst: a producer's push must be ordered before its look at the idle
   * state (ws_idle_notify...), against a worker that parks and then
   * re-checks this length. */
  atomic_store_explicit (&self->len,
                         atomic_load_explicit (&self->len, memory_order_relaxed) + n,
                         memory_order_seq_cst);
  ws_lock_unlock (&self->lock);

  /* Between the push and the producer's look at the idle state. */
  WS_CHAOS_POINT ();
}

void
ws_inject_queue_push (WsInjectQueue *self,
                      WsRawTask     *task)
{
  ws_inject_queue_push_batch (self, task, task, 1);
}

WsRawTask *
ws_inject_queue_pop_batch (WsInjectQueue *self,
                           gsize          max,
                           gsize         *n_out)
{
  WsRawTask *first;
  WsRawTask *last;
  gsize n = 0;

  *n_out = 0;
  if (ws_inject_queue_is_empty (self) || max == 0)
    return NULL;

  WS_CHAOS_POINT ();

  ws_lock_lock (&self->lock);
  first = self->head;
  last = NULL;
  for (WsRawTask *t = first; t != NULL && n < max; t = t->queue_next)
    {
      last = t;
      n++;
    }
  if (n == 0)
    {
      ws_lock_unlock (&self->lock);
      return NULL;
    }
  self->head = last->queue_next;
  if (self->head == NULL)
    self->tail = NULL;
  last->queue_next = NULL;
  atomic_store_explicit (&self->len,
                         atomic_load_explicit (&self->len, memory_order_relaxed) - n,
                         memory_order_relaxed);
  ws_lock_unlock (&self->lock);

  *n_out = n;
  return first;
}

WsRawTask *
ws_inject_queue_pop (WsInjectQueue *self)
{
  gsize n;

  return ws_inject_queue_pop_batch (self, 1, &n);
}

/* Returns TRUE if this call closed it. */
gboolean
ws_inject_queue_close (WsInjectQueue *self)
{
  gboolean was_closed;

  ws_lock_lock (&self->lock);
  was_closed = self->closed;
  self->closed = TRUE;
  ws_lock_unlock (&self->lock);

  return !was_closed;
}

gboolean
ws_inject_queue_is_closed (WsInjectQueue *self)
{
  gboolean closed;

  ws_lock_lock (&self->lock);
  closed = self->closed;
  ws_lock_unlock (&self->lock);

  return closed;
}
