/* ws-inject-queue.c: the global queue, with batch push and a closed bit
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Spawns and wakes from outside a worker, and local-queue overflow, land
 * here. Task pointers sit in a list of 1 KiB blocks, so that a worker
 * taking a batch copies pointers out of one or two blocks under the lock
 * instead of walking the tasks (an intrusive list made the batch pop walk
 * up to 128 tasks that another core had just written, a cache miss each,
 * while the producer waited on the lock: 10-12% of the samples of
 * spawn_many_local). One drained block is kept as a spare, so a steady
 * stream allocates nothing. Pushing to a closed queue drops the queued
 * instance (ws_raw_task_drop_queued): a task never polled is cancelled
 * right there; shutdown reaches the others through the owned set.
 */

#include "config.h"

#include "ws-inject-queue-private.h"
#include "ws-chaos-private.h"

void
ws_inject_queue_init (WsInjectQueue *self)
{
  ws_lock_init (&self->lock);
  self->head_block = self->tail_block = g_new0 (WsInjectBlock, 1);
  self->head_index = self->tail_index = 0;
  self->spare = NULL;
  self->closed = FALSE;
  atomic_init (&self->len, 0);
}

void
ws_inject_queue_clear (WsInjectQueue *self)
{
  g_assert (atomic_load_explicit (&self->len, memory_order_relaxed) == 0);
  g_assert (self->head_block == self->tail_block);
  g_free (self->head_block);
  g_free (self->spare);
  self->head_block = self->tail_block = self->spare = NULL;
  ws_lock_clear (&self->lock);
}

/* With the lock held. */
static void
push_locked (WsInjectQueue *self,
             WsRawTask     *task)
{
  if G_UNLIKELY (self->tail_index == WS_INJECT_BLOCK_SLOTS)
    {
      WsInjectBlock *block = self->spare;

      if (block != NULL)
        self->spare = NULL;
      else
        block = g_new (WsInjectBlock, 1);
      block->next = NULL;
      self->tail_block->next = block;
      self->tail_block = block;
      self->tail_index = 0;
    }
  self->tail_block->slots[self->tail_index++] = task;
}

void
ws_inject_queue_push_batch (WsInjectQueue    *self,
                            WsRawTask *const *tasks,
                            gsize             n)
{
  ws_lock_lock (&self->lock);
  if (self->closed)
    {
      ws_lock_unlock (&self->lock);
      for (gsize i = 0; i < n; i++)
        ws_raw_task_drop_queued (tasks[i]);
      return;
    }
  for (gsize i = 0; i < n; i++)
    push_locked (self, tasks[i]);
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
  ws_inject_queue_push_batch (self, &task, 1);
}

/* Moves up to @max tasks, oldest first, into @out; returns how many. */
gsize
ws_inject_queue_pop_batch (WsInjectQueue  *self,
                           WsRawTask     **out,
                           gsize           max)
{
  WsInjectBlock *retired = NULL;
  gsize len;
  gsize n = 0;

  if (ws_inject_queue_is_empty (self) || max == 0)
    return 0;

  WS_CHAOS_POINT ();

  ws_lock_lock (&self->lock);
  len = atomic_load_explicit (&self->len, memory_order_relaxed);
  max = MIN (max, len);
  while (n < max)
    {
      guint end;
      gsize k;

      if (self->head_index == WS_INJECT_BLOCK_SLOTS)
        {
          /* Tasks remain, so there is a next block. */
          WsInjectBlock *old = self->head_block;

          self->head_block = old->next;
          self->head_index = 0;
          if (self->spare == NULL)
            self->spare = old;
          else
            {
              old->next = retired;
              retired = old;
            }
        }

      end = self->head_block == self->tail_block ? self->tail_index : WS_INJECT_BLOCK_SLOTS;
      k = MIN ((gsize) (end - self->head_index), max - n);
      memcpy (out + n, &self->head_block->slots[self->head_index], k * sizeof *out);
      self->head_index += k;
      n += k;
    }
  if (n == len)
    {
      /* Empty: start the last block over. */
      g_assert (self->head_block == self->tail_block);
      self->head_index = self->tail_index = 0;
    }
  atomic_store_explicit (&self->len, len - n, memory_order_relaxed);
  ws_lock_unlock (&self->lock);

  while (retired != NULL)
    {
      WsInjectBlock *next = retired->next;

      g_free (retired);
      retired = next;
    }
  return n;
}

WsRawTask *
ws_inject_queue_pop (WsInjectQueue *self)
{
  WsRawTask *task;

  if (ws_inject_queue_pop_batch (self, &task, 1) == 0)
    return NULL;
  return task;
}

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
