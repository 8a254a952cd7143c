/* ws-inject-queue.c: the global queue, with batch push and a sealed bit
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Spawns and wakes from outside a worker, and local-queue overflow, land
 * here. Task pointers sit in a list of 1 KiB blocks, so that a worker
 * taking a batch copies pointers out of one or two blocks instead of
 * walking the tasks (an intrusive list made the batch pop walk up to 128
 * tasks that another core had just written, a cache miss each, while the
 * producer waited on the lock: 10-12% of the samples of
 * spawn_many_local).
 *
 * Two locks, as in Michael and Scott's two-lock queue: pushers take
 * tail_lock and touch only the tail block, poppers take head_lock and
 * touch only the head block, so a spawning thread never waits for a
 * worker taking a batch (with one lock, the main thread of
 * spawn_many_local slept in futex_wait on it for a tenth of its time:
 * doc/performance.md). What passes between the two sides:
 *
 *  - pushed, the count of tasks ever pushed: a pusher writes its slots,
 *    links a new block where the tail one is full, and only then stores
 *    pushed (seq_cst, so also a release), under tail_lock. A popper reads
 *    pushed (seq_cst, so also an acquire) under head_lock and takes only
 *    what that count covers: every slot it reads, and every `next` link
 *    it follows, was written before the store it read.
 *  - popped, the count of tasks ever popped, stored (release) under
 *    head_lock. The length is pushed - popped, with popped read first and
 *    pushed second (ws_inject_queue_len), so that the difference is never
 *    less than the tasks the queue held when pushed was read, only more
 *    (a pop between the two reads), which costs at most a look under the
 *    lock or a spare wake; the release of popped, paired with that
 *    acquire (seq_cst) load, makes the pushed read after it at least the
 *    one the popper read, so the difference never wraps. The Dekker pair
 *    with a parker is on pushed (ws-sleepers.c).
 *  - Blocks: a popper that leaves a block behind (it took the block's
 *    last slot and follows `next`) no longer needs it, and the pushers
 *    stopped writing it when they linked the next one. It hands it to the
 *    pushers as `spare` (exchange, acq_rel: its reads of the slots come
 *    before a pusher's writes into the reused block), and a pusher that
 *    needs a new block takes the spare first. So a steady stream allocates
 *    nothing.
 *
 * Shutdown does not close this queue: spawns accepted before the spawn
 * gate closed, and wakes of tasks that shutdown is cancelling, keep
 * landing here while the workers stop, and shutdown's last sweep drains
 * them. That sweep pops until the queue is empty and seals it with both
 * locks held (ws_inject_queue_pop_or_seal; head_lock before tail_lock,
 * the one order in which a thread holds both). A push to a sealed queue
 * is refused and the caller keeps its reference: by then every task of
 * the pool has ended (doc/architecture.md, "Shutdown"), so the caller
 * only drops it. A push never cancels or completes a task.
 */

#include "config.h"

#include "ws-inject-queue-private.h"
#include "ws-chaos-private.h"

void
ws_inject_queue_init (WsInjectQueue *self)
{
  WsInjectBlock *block = g_new0 (WsInjectBlock, 1);

  ws_lock_init (&self->head_lock);
  ws_lock_init (&self->tail_lock);
  self->head_block = self->tail_block = block;
  self->head_index = self->tail_index = 0;
  self->sealed = FALSE;
  atomic_init (&self->popped, 0);
  atomic_init (&self->pushed, 0);
  atomic_init (&self->n_remote, 0);
  atomic_init (&self->spare, NULL);
}

void
ws_inject_queue_clear (WsInjectQueue *self)
{
  g_assert (ws_inject_queue_len (self) == 0);
  /* Every task pushed was popped, so the poppers are in the last block. */
  g_assert (self->head_block == self->tail_block);
  g_free (self->head_block);
  g_free (atomic_load_explicit (&self->spare, memory_order_relaxed));
  self->head_block = self->tail_block = NULL;
  atomic_store_explicit (&self->spare, NULL, memory_order_relaxed);
  ws_lock_clear (&self->head_lock);
  ws_lock_clear (&self->tail_lock);
}

/* With tail_lock held. */
static void
push_locked (WsInjectQueue *self,
             WsRawTask     *task)
{
  if G_UNLIKELY (self->tail_index == WS_INJECT_BLOCK_SLOTS)
    {
      /* Acquire (of the exchange): the popper's reads of the spare's
       * slots came before its release. */
      WsInjectBlock *block = atomic_exchange_explicit (&self->spare, NULL,
                                                       memory_order_acq_rel);

      if (block == NULL)
        block = g_new (WsInjectBlock, 1);
      block->next = NULL;
      /* Published to the poppers by the store of pushed below. */
      self->tail_block->next = block;
      self->tail_block = block;
      self->tail_index = 0;
    }
  self->tail_block->slots[self->tail_index++] = task;
}

/* With tail_lock held: FALSE if sealed; else pushes @n tasks and, if
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
   * state (ws_sleepers_worker_to_notify_after_sc, or the fenced
   * ws_sleepers_worker_to_notify after an overflow), against a worker
   * that parks and then re-checks the length; and, as a release, it
   * publishes the slots and links above to the poppers. Every writer
   * holds tail_lock, so a load and a store count without a
   * read-modify-write. */
  atomic_store_explicit (&self->pushed,
                         atomic_load_explicit (&self->pushed, memory_order_relaxed) + n,
                         memory_order_seq_cst);
  /* After pushed, with release: a worker that reads (acquire) a count
   * including these tasks then reads a length including them too
   * (take_injected, ws-worker.c). */
  if (remote)
    atomic_store_explicit (&self->n_remote,
                           atomic_load_explicit (&self->n_remote, memory_order_relaxed) + n,
                           memory_order_release);
  return TRUE;
}

static gboolean
push (WsInjectQueue    *self,
      WsRawTask *const *tasks,
      gsize             n,
      gboolean          remote)
{
  gboolean pushed;

  ws_lock_lock (&self->tail_lock);
  pushed = push_batch_locked (self, tasks, n, remote);
  ws_lock_unlock (&self->tail_lock);

  /* Between the push and the producer's look at the idle state. */
  if (pushed)
    WS_CHAOS_POINT ();
  return pushed;
}

/* Returns FALSE, and takes nothing, if the queue is sealed. */
gboolean
ws_inject_queue_push_batch (WsInjectQueue    *self,
                            WsRawTask *const *tasks,
                            gsize             n)
{
  return push (self, tasks, n, FALSE);
}

/* A push from outside the pool: as ws_inject_queue_push (), counted in
 * ws_inject_queue_n_remote (). */
gboolean
ws_inject_queue_push_remote (WsInjectQueue *self,
                             WsRawTask     *task)
{
  return push (self, &task, 1, TRUE);
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
  gsize popped;
  gsize pushed;
  gsize n = 0;

  if (ws_inject_queue_is_empty (self) || max == 0)
    return 0;

  WS_CHAOS_POINT ();

  ws_lock_lock (&self->head_lock);
  popped = atomic_load_explicit (&self->popped, memory_order_relaxed);
  /* Acquire (seq_cst): the slots and links of the pushes it counts. Read
   * once, into a variable: MIN () evaluates its arguments twice. */
  pushed = atomic_load_explicit (&self->pushed, memory_order_seq_cst);
  max = MIN (max, pushed - popped);
  while (n < max)
    {
      gsize k;

      if (self->head_index == WS_INJECT_BLOCK_SLOTS)
        {
          /* Tasks remain, so the pushers linked a next block before they
           * counted them, and write this one no more. */
          WsInjectBlock *old = self->head_block;

          self->head_block = old->next;
          self->head_index = 0;
          /* Release: our reads of its slots, before a pusher reuses it. */
          old = atomic_exchange_explicit (&self->spare, old, memory_order_acq_rel);
          if (old != NULL)
            {
              old->next = retired;
              retired = old;
            }
        }

      k = MIN ((gsize) (WS_INJECT_BLOCK_SLOTS - self->head_index), max - n);
      memcpy (out + n, &self->head_block->slots[self->head_index], k * sizeof *out);
      self->head_index += k;
      n += k;
    }
  /* Release: a reader that sees this count then reads a pushed at least
   * as large as the one we read (ws_inject_queue_len), so the length it
   * computes never wraps below zero. */
  atomic_store_explicit (&self->popped, popped + n, memory_order_release);
  ws_lock_unlock (&self->head_lock);

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

/* Pops one task; if the queue is empty, seals it with both locks held,
 * so that no push can land after the last pop. */
WsRawTask *
ws_inject_queue_pop_or_seal (WsInjectQueue *self)
{
  WsRawTask *task;

  for (;;)
    {
      gboolean sealed = FALSE;

      if (ws_inject_queue_pop_batch (self, &task, 1) == 1)
        return task;

      ws_lock_lock (&self->head_lock);
      ws_lock_lock (&self->tail_lock);
      /* Both counts are stable with both locks held. */
      if (atomic_load_explicit (&self->pushed, memory_order_relaxed)
          == atomic_load_explicit (&self->popped, memory_order_relaxed))
        sealed = self->sealed = TRUE;
      ws_lock_unlock (&self->tail_lock);
      ws_lock_unlock (&self->head_lock);
      if (sealed)
        return NULL;
    }
}

gboolean
ws_inject_queue_is_sealed (WsInjectQueue *self)
{
  gboolean sealed;

  ws_lock_lock (&self->tail_lock);
  sealed = self->sealed;
  ws_lock_unlock (&self->tail_lock);

  return sealed;
}
