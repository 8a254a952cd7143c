/* ws-task-registry.c: the set of live tasks of one host, with a closed bit
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Shutdown must reach every task that has not ended, including those
 * waiting on a waker and sitting in no queue; this list is how. A task
 * that sits in a queue is reached by the queue's drain instead
 * (ws_raw_task_drop_queued), so the worker pool binds a task only when
 * its first poll returns PENDING: the tasks that end in their first poll,
 * most of them, never take a lock here (doc/architecture.md, "The task
 * and its state word").
 *
 * A fiber waiting inside its function is such a task: the walk's
 * ws_raw_task_shutdown () destroys its future, which resumes the fiber
 * until its function returns (ws-fiber.c), so the walk never leaves a
 * fiber's stack with live frames.
 *
 * Counter slots. The counters (alive, spawned) are per slot, so that
 * counting touches a line no other thread writes. A thread claims one of
 * WS_TASK_REGISTRY_SHARDS counter slots for itself at its first count
 * (a CAS on the slot's owner flag, acquire) and gives it back when it
 * exits (a store, release; the GPrivate destructor below); while it owns
 * it no other thread writes that slot's counters in any registry, so it
 * counts with a plain load and store, not an atomic add (a lock-prefixed
 * instruction at every spawn and completion; doc/performance.md). The
 * acquire and release order one
 * owner's last store before the next owner's first load, so no count is
 * lost across owners. A thread that finds every slot owned (more than
 * WS_TASK_REGISTRY_SHARDS counting threads at once) counts on the shared
 * last slot with atomic adds. A thread that has given its slot back and
 * still counts (another thread-exit destructor completing a task) uses
 * the shared slot too. models/counter-slots.pml checks this, with the
 * two ways of losing a count as broken variants.
 *
 * The spawn gate. A host that binds late has no lock on its spawn path,
 * so "refused, or reachable by shutdown" is kept by a gate instead: a
 * spawner enters (gate_entered + 1, seq_cst), then reads `closed`
 * (seq_cst); if closed it takes its entry back (gate_entered - 1) and
 * refuses the task; otherwise it pushes the task and then leaves
 * (gate_left + 1, release), which also counts the task as accepted.
 * Shutdown stores `closed` (seq_cst), then, slot by slot, waits until
 * gate_left (acquire) has caught up with gate_entered (seq_cst), reading
 * both afresh each time. This is a Dekker pair: in the single total order
 * of seq_cst operations either the spawner's read of `closed` follows the
 * close (it refuses and takes its entry back), or its increment precedes
 * shutdown's reads of its slot (shutdown waits for it to leave, and its
 * acquire of gate_left makes the push visible). Threads share a slot
 * when there are more than WS_TASK_REGISTRY_SHARDS of them; a refusal on a shared
 * slot takes back its own entry, so it never stands in for the leave of
 * an accepted spawn still in flight on that slot.
 */

#include "config.h"

#include "ws-task-registry-private.h"
#include "ws-thread-private.h"

/* The slot of this thread is ws_thread.registry_slot, 1-based (0: not
 * assigned yet). */
static _Atomic guint next_slot;

guint
ws_task_registry_current_slot (void)
{
  guint slot = ws_thread.registry_slot;

  if G_UNLIKELY (slot == 0)
    {
      /* Relaxed: any distinct-enough number will do. */
      slot = atomic_fetch_add_explicit (&next_slot, 1, memory_order_relaxed)
             % WS_TASK_REGISTRY_SHARDS + 1;
      ws_thread.registry_slot = slot;
    }
  return slot - 1;
}

/* Owner flags of the counter slots; the shared slot has none. */
static _Atomic gboolean counter_slot_owned[WS_TASK_REGISTRY_SHARDS];

static void
release_counter_slot (gpointer data)
{
  guint slot = GPOINTER_TO_UINT (data);

  /* Whatever this thread counts from now on goes to the shared slot. */
  ws_thread.counter_slot = WS_TASK_REGISTRY_SHARED_COUNTER + 1;
  /* Release: this thread's last counts, before the next owner's plain
   * load (after its acquire CAS). */
  atomic_store_explicit (&counter_slot_owned[slot - 1], FALSE, memory_order_release);
}

static GPrivate counter_slot_key = G_PRIVATE_INIT (release_counter_slot);

/* The first count of this thread: out of line, so that every other
 * count, one at each spawn and completion, costs no stack frame. */
static G_GNUC_NO_INLINE guint
claim_counter_slot (void)
{
  guint slot = WS_TASK_REGISTRY_SHARED_COUNTER + 1;

  for (guint i = 0; i < WS_TASK_REGISTRY_SHARDS; i++)
    {
      gboolean expected = FALSE;

      /* Acquire: the counts of the slot's last owner, stored before its
       * release, come before our first load. */
      if (atomic_compare_exchange_strong_explicit (&counter_slot_owned[i], &expected, TRUE,
                                                   memory_order_acquire, memory_order_relaxed))
        {
          slot = i + 1;
          g_private_set (&counter_slot_key, GUINT_TO_POINTER (slot));
          break;
        }
    }
  ws_thread.counter_slot = slot;
  return slot - 1;
}

guint
ws_task_registry_counter_slot (void)
{
  guint slot = ws_thread.counter_slot;

  if G_LIKELY (slot != 0)
    return slot - 1;
  return claim_counter_slot ();
}

void
ws_task_registry_init (WsTaskRegistry *self)
{
  atomic_init (&self->closed, FALSE);
  for (guint i = 0; i < WS_TASK_REGISTRY_SHARDS; i++)
    {
      ws_lock_init (&self->shards[i].lock);
      self->shards[i].head = NULL;
    }
  for (guint i = 0; i < WS_TASK_REGISTRY_COUNTER_SLOTS; i++)
    {
      atomic_init (&self->counters[i].gate_entered, 0);
      atomic_init (&self->counters[i].gate_left, 0);
      atomic_init (&self->counters[i].accepted, 0);
      atomic_init (&self->counters[i].completed, 0);
    }
}

void
ws_task_registry_clear (WsTaskRegistry *self)
{
  for (guint i = 0; i < WS_TASK_REGISTRY_SHARDS; i++)
    {
      g_assert (self->shards[i].head == NULL);
      ws_lock_clear (&self->shards[i].lock);
    }
}

/* Links the task and takes a reference for the set. Returns FALSE (and
 * takes nothing) when the set is closed. Called by the spawner before the
 * task is published, or by the poller while it holds RUNNING (hosts that
 * bind on the first PENDING): either way no other thread reads `bound`
 * until an acquire that follows this write. */
gboolean
ws_task_registry_bind (WsTaskRegistry *self,
                     WsRawTask    *task)
{
  guint idx = ws_task_registry_current_slot ();
  WsRegistryShard *shard = &self->shards[idx];

  ws_lock_lock (&shard->lock);

  /* Read under the shard lock: close() stores the flag before it takes
   * any shard lock, so a bind either sees it or is drained by close. */
  if (atomic_load_explicit (&self->closed, memory_order_relaxed))
    {
      ws_lock_unlock (&shard->lock);
      return FALSE;
    }

  ws_raw_task_ref (task);
  if (!task->counted)
    {
      /* A host that binds at spawn counts the task here, under the lock
       * that the shutdown walk takes: a walk that finds the task finds it
       * counted, and its completion is counted too. */
      task->counted = TRUE;
      ws_task_registry_count_accepted (self);
    }
  task->bound = TRUE;
  task->registry_shard = idx;
  task->registry_linked = TRUE;
  task->registry_prev = NULL;
  task->registry_next = shard->head;
  if (shard->head != NULL)
    shard->head->registry_prev = task;
  shard->head = task;
  ws_lock_unlock (&shard->lock);

  return TRUE;
}

static void
unlink_locked (WsRegistryShard *shard,
               WsRawTask    *task)
{
  if (task->registry_prev != NULL)
    task->registry_prev->registry_next = task->registry_next;
  else
    shard->head = task->registry_next;
  if (task->registry_next != NULL)
    task->registry_next->registry_prev = task->registry_prev;
  task->registry_prev = task->registry_next = NULL;
  task->registry_linked = FALSE;
}

static G_GNUC_NO_INLINE gboolean
remove_bound (WsTaskRegistry *self,
              WsRawTask      *task)
{
  WsRegistryShard *shard = &self->shards[task->registry_shard];
  gboolean linked;

  ws_lock_lock (&shard->lock);
  linked = task->registry_linked;
  if (linked)
    unlink_locked (shard, task);
  ws_lock_unlock (&shard->lock);

  return linked;
}

/* Returns TRUE if the task was in the set (its reference is now the
 * caller's to drop). Called by complete(), with RUNNING held: a task that
 * was never bound (it ended in its first poll, or was cancelled before
 * it) costs no lock here, nor the stack frame of the lock's path, which
 * is out of line for that reason. */
gboolean
ws_task_registry_remove (WsTaskRegistry *self,
                         WsRawTask      *task)
{
  if (!task->bound)
    return FALSE;
  return remove_bound (self, task);
}

/* The owned-set half of the host interface (WsTaskHostVTable.bind and
 * .release), the same for every host: each keeps its set in
 * host->registry. The task core calls both with RUNNING held. */
gboolean
ws_task_registry_bind_task (WsTaskHost *host,
                            WsRawTask  *task)
{
  return ws_task_registry_bind (host->registry, task);
}

/* Before COMPLETE is published: an accepted task leaves the set (if it
 * was bound) and its end is counted. Returns TRUE if the set's reference
 * is now the caller's to drop. A task never counted (refused, or made
 * outside a spawn) was never in the set either. */
gboolean
ws_task_registry_release_task (WsTaskHost *host,
                               WsRawTask  *task)
{
  gboolean linked;

  if (!task->counted)
    return FALSE;
  linked = ws_task_registry_remove (host->registry, task);
  ws_task_registry_count_completed (host->registry);
  return linked;
}

void
ws_task_registry_close (WsTaskRegistry *self)
{
  /* Every reader reads the flag under a shard lock, which shutdown_all
   * takes after this store; seq_cst also orders it before the shutdown
   * flag the workers read. */
  atomic_store_explicit (&self->closed, TRUE, memory_order_seq_cst);
}

gboolean
ws_task_registry_is_closed (WsTaskRegistry *self)
{
  return atomic_load_explicit (&self->closed, memory_order_acquire);
}

/* Cancels every task in the set. Tasks idle now are destroyed by this
 * thread; running ones see CANCELLED when their poll returns. With
 * @leave_notified, a NOTIFIED task is only marked CANCELLED and ended by
 * the holder of its queued instance (ws_raw_task_shutdown_idle; the
 * worker pool, whose wakers push from foreign threads); without, it is
 * taken and ended here, and its instance is dropped later (the blocking
 * pool, whose queue its own shutdown empties). */
void
ws_task_registry_shutdown_all (WsTaskRegistry *self,
                               gboolean        leave_notified)
{
  g_assert (ws_task_registry_is_closed (self));

  for (guint i = 0; i < WS_TASK_REGISTRY_SHARDS; i++)
    {
      WsRegistryShard *shard = &self->shards[i];

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
          if (!(leave_notified ? ws_raw_task_shutdown_idle (task)
                               : ws_raw_task_shutdown (task)))
            ws_raw_task_unref (task);
        }
    }
}

/* Queues the cancellation of every task in the set and leaves them in
 * it: for a host whose futures must be destroyed on its own thread (a
 * local executor), where shutdown_all would destroy idle ones here. Each
 * shard's tasks are taken with a reference under its lock and cancelled
 * outside it (a cancel schedules the task on its host). */
void
ws_task_registry_cancel_all (WsTaskRegistry *self)
{
  g_assert (ws_task_registry_is_closed (self));

  for (guint i = 0; i < WS_TASK_REGISTRY_SHARDS; i++)
    {
      WsRegistryShard *shard = &self->shards[i];
      GPtrArray *tasks = g_ptr_array_new ();

      ws_lock_lock (&shard->lock);
      for (WsRawTask *t = shard->head; t != NULL; t = t->registry_next)
        {
          ws_raw_task_ref (t);
          g_ptr_array_add (tasks, t);
        }
      ws_lock_unlock (&shard->lock);

      for (guint j = 0; j < tasks->len; j++)
        {
          ws_raw_task_cancel (tasks->pdata[j]);
          ws_raw_task_unref (tasks->pdata[j]);
        }
      g_ptr_array_unref (tasks);
    }
}

/* Calls @func on every task in the set, each under its shard's lock,
 * which keeps it alive (the set holds a reference until it unlinks the
 * task, under that lock): @func only reads the task, and takes no lock
 * of the task core. For diagnostics (the stuck dump, ws-debug-private.h). */
void
ws_task_registry_foreach (WsTaskRegistry  *self,
                          WsTaskVisitFunc  func,
                          gpointer         data)
{
  for (guint i = 0; i < WS_TASK_REGISTRY_SHARDS; i++)
    {
      WsRegistryShard *shard = &self->shards[i];

      ws_lock_lock (&shard->lock);
      for (WsRawTask *t = shard->head; t != NULL; t = t->registry_next)
        func (t, data);
      ws_lock_unlock (&shard->lock);
    }
}

/* Accepted spawns of one slot (acquire loads). */
static guint64
slot_accepted (WsRegistryCounters *c)
{
  return atomic_load_explicit (&c->gate_left, memory_order_acquire)
         + atomic_load_explicit (&c->accepted, memory_order_acquire);
}

/* Tasks accepted by this host that have not completed. The slots are
 * read one by one while other threads count, and a foreign spawn is
 * counted when it leaves the gate, after its push, so a running sum can
 * dip below the truth; it is clamped at 0, and exact once the threads that
 * spawned and completed the tasks are done, or ordered before the caller.
 * Acquire: see ws_task_registry_count_completed. */
gint64
ws_task_registry_count (WsTaskRegistry *self)
{
  gint64 n = 0;

  for (guint i = 0; i < WS_TASK_REGISTRY_COUNTER_SLOTS; i++)
    {
      WsRegistryCounters *c = &self->counters[i];
      guint64 completed = atomic_load_explicit (&c->completed, memory_order_acquire);

      n += (gint64) (slot_accepted (c) - completed);
    }
  return MAX (n, 0);
}

/* The spawner's half of the gate (see the top of this file). Returns
 * FALSE if the set is closed: the caller has left the gate already and
 * must refuse the task. */
gboolean
ws_task_registry_enter_spawn (WsTaskRegistry *self)
{
  WsRegistryCounters *c = &self->counters[ws_task_registry_current_slot ()];

  /* SeqCst RMW, then a seq_cst load: the spawner's side of the Dekker
   * pair with ws_task_registry_close () and ws_task_registry_wait_spawns (). */
  atomic_fetch_add_explicit (&c->gate_entered, 1, memory_order_seq_cst);
  if G_UNLIKELY (atomic_load_explicit (&self->closed, memory_order_seq_cst))
    {
      /* Take our entry back; we push nothing, so nothing to publish. */
      atomic_fetch_sub_explicit (&c->gate_entered, 1, memory_order_relaxed);
      return FALSE;
    }
  return TRUE;
}

/* Leaves the gate and counts the task accepted. */
void
ws_task_registry_leave_spawn (WsTaskRegistry *self)
{
  /* Release: the push before it is visible to the shutdown that sees
   * this slot caught up. */
  atomic_fetch_add_explicit (&self->counters[ws_task_registry_current_slot ()].gate_left,
                             1, memory_order_release);
}

/* Shutdown's half: after close, waits until no accepted spawn is between
 * the gate and its push. A spawner spends a few hundred nanoseconds
 * there, so this yields rather than sleeps. Returns FALSE if @deadline
 * (monotonic time, -1 for none) passed first. */
gboolean
ws_task_registry_wait_spawns (WsTaskRegistry *self,
                            gint64        deadline)
{
  g_assert (ws_task_registry_is_closed (self));

  for (guint i = 0; i < WS_TASK_REGISTRY_SHARDS; i++)
    {
      WsRegistryCounters *c = &self->counters[i];

      /* SeqCst on gate_entered: shutdown's side of the Dekker pair. Read
       * afresh each time: a refusal on this slot takes its entry back. */
      while (atomic_load_explicit (&c->gate_left, memory_order_acquire)
             < atomic_load_explicit (&c->gate_entered, memory_order_seq_cst))
        {
          if (deadline >= 0 && g_get_monotonic_time () >= deadline)
            return FALSE;
          g_thread_yield ();
        }
    }
  return TRUE;
}

guint64
ws_task_registry_spawned (WsTaskRegistry *self)
{
  guint64 n = 0;

  for (guint i = 0; i < WS_TASK_REGISTRY_COUNTER_SLOTS; i++)
    n += slot_accepted (&self->counters[i]);
  return n;
}
