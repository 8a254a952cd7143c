/* ws-inject-queue.c: the global queue, with batch push and a sealed bit
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
 * stream allocates nothing.
 *
 * Shutdown does not close this queue: spawns accepted before the spawn
 * gate closed, and wakes of tasks that shutdown is cancelling, keep
 * landing here while the workers stop, and shutdown's last sweep drains
 * them. That sweep pops until the queue is empty and seals it in the
 * same critical section (ws_inject_queue_pop_or_seal). A push to a sealed
 * queue is refused and the caller keeps its reference: by then every
 * task of the pool has ended (doc/architecture.md, "Shutdown"), so the
 * caller only drops it. A push never cancels or completes a task.
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
  self->sealed = FALSE;
  atomic_init (&self->len, 0);
  atomic_init (&self->n_remote, 0);
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

/* With the lock held: FALSE if sealed; else pushes @n tasks and, if
 * @remote, counts them as pushed from outside the pool. */
static gboolean
push_batch_locked (WsInjectQueue    *self,
                   WsRawTask *const *tasks,
                   gsize             n,
                   gboolean          remote)
{
  if G_UNLIKELY (self->sealed)
    return FALSE;
  for (gsize i = 0; i < n; i++)
    push_locked (self, tasks[i]);
  /* SeqCst: a producer's push must be ordered before its look at the idle
   * state (ws_sleepers_worker_to_notify), against a worker that parks and then
   * re-checks this length. */
  atomic_store_explicit (&self->len,
                         atomic_load_explicit (&self->len, memory_order_relaxed) + n,
                         memory_order_seq_cst);
  /* After the length, with release: a worker that reads (acquire) a count
   * including these tasks then reads a length including them too
   * (take_injected, ws-worker.c). Every writer holds the lock, so a load
   * and a store count without a read-modify-write. */
  if (remote)
    atomic_store_explicit (&self->n_remote,
                           atomic_load_explicit (&self->n_remote, memory_order_relaxed) + n,
                           memory_order_release);
  return TRUE;
}

/* Returns FALSE, and takes nothing, if the queue is sealed. */
gboolean
ws_inject_queue_push_batch (WsInjectQueue    *self,
                            WsRawTask *const *tasks,
                            gsize             n)
{
  gboolean pushed;

  ws_lock_lock (&self->lock);
  pushed = push_batch_locked (self, tasks, n, FALSE);
  ws_lock_unlock (&self->lock);

  /* Between the push and the producer's look at the idle state. */
  if (pushed)
    WS_CHAOS_POINT ();
  return pushed;
}

/* A push from outside the pool: as ws_inject_queue_push (), counted in
 * ws_inject_queue_n_remote (). */
gboolean
ws_inject_queue_push_remote (WsInjectQueue *self,
                             WsRawTask     *task)
{
  gboolean pushed;

  ws_lock_lock (&self->lock);
  pushed = push_batch_locked (self, &task, 1, TRUE);
  ws_lock_unlock (&self->lock);

  if (pushed)
    WS_CHAOS_POINT ();
  return pushed;
}

gboolean
ws_inject_queue_push (WsInjectQueue *self,
                      WsRawTask     *task)
{
  return ws_inject_queue_push_batch (self, &task, 1);
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

/* Pops one task; if the queue is empty, seals it in the same critical
 * section, so that no push can land after the last pop. */
WsRawTask *
ws_inject_queue_pop_or_seal (WsInjectQueue *self)
{
  WsRawTask *task;

  for (;;)
    {
      if (ws_inject_queue_pop_batch (self, &task, 1) == 1)
        return task;

      ws_lock_lock (&self->lock);
      if (atomic_load_explicit (&self->len, memory_order_relaxed) == 0)
        {
          self->sealed = TRUE;
          ws_lock_unlock (&self->lock);
          return NULL;
        }
      ws_lock_unlock (&self->lock);
    }
}

gboolean
ws_inject_queue_is_sealed (WsInjectQueue *self)
{
  gboolean sealed;

  ws_lock_lock (&self->lock);
  sealed = self->sealed;
  ws_lock_unlock (&self->lock);

  return sealed;
}
