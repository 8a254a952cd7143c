/* ws-owned-tasks.c: the set of live tasks of one host, with a closed bit
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Shutdown must reach every task that has not ended, including those
 * waiting on a waker and sitting in no queue; this list is how.
 */

#include "config.h"

#include "ws-owned-tasks-private.h"

void
ws_owned_tasks_init (WsOwnedTasks *self)
{
  atomic_init (&self->closed, FALSE);
  atomic_init (&self->spawned, 0);
  for (guint i = 0; i < WS_OWNED_SHARDS; i++)
    {
      ws_lock_init (&self->shards[i].lock);
      self->shards[i].head = NULL;
      atomic_init (&self->shards[i].count, 0);
    }
}

void
ws_owned_tasks_clear (WsOwnedTasks *self)
{
  for (guint i = 0; i < WS_OWNED_SHARDS; i++)
    {
      g_assert (self->shards[i].head == NULL);
      ws_lock_clear (&self->shards[i].lock);
    }
}

/* Returns FALSE (and does not take the task) when the set is closed. */
gboolean
ws_owned_tasks_bind (WsOwnedTasks *self,
                     WsRawTask    *task,
                     guint         shard_hint)
{
  guint idx = shard_hint & (WS_OWNED_SHARDS - 1);
  WsOwnedShard *shard = &self->shards[idx];

  ws_lock_lock (&shard->lock);

  /* Read under the shard lock: close() stores the flag before it takes
   * any shard lock, so a bind either sees it or is drained by close. */
  if (atomic_load_explicit (&self->closed, memory_order_relaxed))
    {
      ws_lock_unlock (&shard->lock);
      return FALSE;
    }

  task->owned_shard = idx;
  task->owned_linked = TRUE;
  task->owned_prev = NULL;
  task->owned_next = shard->head;
  if (shard->head != NULL)
    shard->head->owned_prev = task;
  shard->head = task;
  atomic_store_explicit (&shard->count,
                         atomic_load_explicit (&shard->count, memory_order_relaxed) + 1,
                         memory_order_relaxed);
  ws_lock_unlock (&shard->lock);

  atomic_fetch_add_explicit (&self->spawned, 1, memory_order_relaxed);
  return TRUE;
}

static void
unlink_locked (WsOwnedShard *shard,
               WsRawTask    *task)
{
  if (task->owned_prev != NULL)
    task->owned_prev->owned_next = task->owned_next;
  else
    shard->head = task->owned_next;
  if (task->owned_next != NULL)
    task->owned_next->owned_prev = task->owned_prev;
  task->owned_prev = task->owned_next = NULL;
  task->owned_linked = FALSE;
  atomic_store_explicit (&shard->count,
                         atomic_load_explicit (&shard->count, memory_order_relaxed) - 1,
                         memory_order_relaxed);
}

/* Returns TRUE if the task was in the set (its reference is now the
 * caller's to drop). */
gboolean
ws_owned_tasks_remove (WsOwnedTasks *self,
                       WsRawTask    *task)
{
  WsOwnedShard *shard = &self->shards[task->owned_shard];
  gboolean linked;

  ws_lock_lock (&shard->lock);
  linked = task->owned_linked;
  if (linked)
    unlink_locked (shard, task);
  ws_lock_unlock (&shard->lock);

  return linked;
}

void
ws_owned_tasks_close (WsOwnedTasks *self)
{
  /* Every reader reads the flag under a shard lock, which shutdown_all
   * takes after this store; seq_cst also orders it before the shutdown
   * flag the workers read. */
  atomic_store_explicit (&self->closed, TRUE, memory_order_seq_cst);
}

gboolean
ws_owned_tasks_is_closed (WsOwnedTasks *self)
{
  return atomic_load_explicit (&self->closed, memory_order_acquire);
}

/* Cancels every task in the set. Tasks idle now are destroyed by this
 * thread; running ones see CANCELLED when their poll returns. */
void
ws_owned_tasks_shutdown_all (WsOwnedTasks *self)
{
  g_assert (ws_owned_tasks_is_closed (self));

  for (guint i = 0; i < WS_OWNED_SHARDS; i++)
    {
      WsOwnedShard *shard = &self->shards[i];

      for (;;)
        {
          WsRawTask *task;

          ws_lock_lock (&shard->lock);
          task = shard->head;
          if (task != NULL)
            unlink_locked (shard, task);
          ws_lock_unlock (&shard->lock);

          if (task == NULL)
            break;

          /* The set's reference is ours now. If shutdown took the task,
           * complete() dropped it as the poller's reference (it found the
           * task unlinked); otherwise drop it here. */
          if (!ws_raw_task_shutdown (task))
            ws_raw_task_unref (task);
        }
    }
}

gint64
ws_owned_tasks_count (WsOwnedTasks *self)
{
  gint64 n = 0;

  for (guint i = 0; i < WS_OWNED_SHARDS; i++)
    n += atomic_load_explicit (&self->shards[i].count, memory_order_relaxed);
  return n;
}
