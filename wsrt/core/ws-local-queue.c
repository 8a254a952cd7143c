/* ws-local-queue.c: a fixed ring, one producer, many stealers
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The algorithm is tokio's: the owner pushes at the tail and pops at the
 * head; a thief claims half of the tasks by moving the real head while
 * leaving "steal" behind, copies them, then closes the gap. Only one thief
 * works on a victim at a time, and the owner never overwrites a slot a
 * thief is still copying because capacity is measured from "steal".
 *
 * Indices are free-running 32-bit counters (wrapping), masked into the
 * buffer; packing both heads in one 64-bit word makes each update one CAS
 * and keeps it ABA-safe.
 */

#include "config.h"

#include "ws-local-queue-private.h"
#include "ws-inject-queue-private.h"
#include "ws-chaos-private.h"

#define CAPACITY WS_LOCAL_QUEUE_CAPACITY
#define MASK     (CAPACITY - 1)

static inline guint64
pack (guint32 steal,
      guint32 real)
{
  return ((guint64) steal << 32) | real;
}

static inline guint32
unpack_steal (guint64 v)
{
  return (guint32) (v >> 32);
}

static inline guint32
unpack_real (guint64 v)
{
  return (guint32) v;
}

void
ws_local_queue_init (WsLocalQueue *self)
{
  atomic_init (&self->head, 0);
  atomic_init (&self->tail, 0);
  for (guint i = 0; i < CAPACITY; i++)
    atomic_init (&self->buffer[i], NULL);
}

guint
ws_local_queue_len (WsLocalQueue *self)
{
  guint64 head = atomic_load_explicit (&self->head, memory_order_acquire);
  guint32 tail = atomic_load_explicit (&self->tail, memory_order_acquire);

  return tail - unpack_real (head);
}

gboolean
ws_local_queue_has_tasks (WsLocalQueue *self)
{
  return ws_local_queue_len (self) != 0;
}

/* Free slots, as the owner sees them. */
guint
ws_local_queue_remaining (WsLocalQueue *self)
{
  guint64 head = atomic_load_explicit (&self->head, memory_order_acquire);
  guint32 tail = atomic_load_explicit (&self->tail, memory_order_relaxed);

  return CAPACITY - (tail - unpack_steal (head));
}

/* Moves half of the queue plus @task to the injection queue in one batch.
 * Fails if a thief moved the head meanwhile; the caller retries. */
static gboolean
push_overflow (WsLocalQueue  *self,
               WsRawTask     *task,
               guint32        head,
               guint32        tail,
               WsInjectQueue *inject)
{
  const guint32 n = CAPACITY / 2;
  guint64 expected = pack (head, head);
  WsRawTask *batch[CAPACITY / 2 + 1];

  g_assert (tail - head == CAPACITY);

  /* Claim the first half. AcqRel: acquire pairs with a thief's release of
   * the head, so we never claim slots a thief still copies; release makes
   * the claim visible before the slots are reused by later pushes. */
  if (!atomic_compare_exchange_strong_explicit (&self->head, &expected,
                                                pack (head + n, head + n),
                                                memory_order_acq_rel,
                                                memory_order_relaxed))
    return FALSE;

  WS_CHAOS_POINT ();

  for (guint32 i = 0; i < n; i++)
    batch[i] = atomic_load_explicit (&self->buffer[(head + i) & MASK],
                                     memory_order_relaxed);
  batch[n] = task;

  /* Only a running worker pushes here, and the injection queue is sealed
   * only after every worker has stopped. */
  if (!ws_inject_queue_push_batch (inject, batch, n + 1))
    g_error ("wsrt: a worker overflowed into a sealed injection queue");
  return TRUE;
}

/* Owner only. Returns TRUE if the queue overflowed into @overflow. */
gboolean
ws_local_queue_push_back_or_overflow (WsLocalQueue  *self,
                          WsRawTask     *task,
                          WsInjectQueue *overflow)
{
  for (;;)
    {
      /* Acquire: pairs with a thief's release of the head so its copies
       * of the slots are done before we reuse them. */
      guint64 head = atomic_load_explicit (&self->head, memory_order_acquire);
      guint32 steal = unpack_steal (head);
      guint32 real = unpack_real (head);
      /* Relaxed: only this thread writes the tail. */
      guint32 tail = atomic_load_explicit (&self->tail, memory_order_relaxed);

      if (tail - steal < CAPACITY)
        {
          WS_CHAOS_POINT ();
          atomic_store_explicit (&self->buffer[tail & MASK], task, memory_order_relaxed);
          /* Release: publishes the slot to thieves, which acquire the
           * tail before they read slots. */
          atomic_store_explicit (&self->tail, tail + 1, memory_order_release);
          return FALSE;
        }

      if (steal != real)
        {
          /* A thief is at work and will free room soon; do not wait. */
          if (!ws_inject_queue_push (overflow, task))
            g_error ("wsrt: a worker overflowed into a sealed injection queue");
          return TRUE;
        }

      if (push_overflow (self, task, real, tail, overflow))
        return TRUE;
      /* A thief took some tasks meanwhile: there is room now, retry. */
    }
}

/* Owner only. */
WsRawTask *
ws_local_queue_pop (WsLocalQueue *self)
{
  guint64 head = atomic_load_explicit (&self->head, memory_order_acquire);
  guint32 idx;

  for (;;)
    {
      guint32 steal = unpack_steal (head);
      guint32 real = unpack_real (head);
      guint32 tail = atomic_load_explicit (&self->tail, memory_order_relaxed);
      guint64 next;

      if (real == tail)
        return NULL;

      WS_CHAOS_POINT ();

      next = steal == real ? pack (real + 1, real + 1) : pack (steal, real + 1);

      /* AcqRel: the claim must be ordered against thieves' claims on the
       * same word; the slot itself was written by this thread. */
      if (atomic_compare_exchange_weak_explicit (&self->head, &head, next,
                                                 memory_order_acq_rel,
                                                 memory_order_acquire))
        {
          idx = real & MASK;
          break;
        }
    }

  return atomic_load_explicit (&self->buffer[idx], memory_order_relaxed);
}

/* Claims half of @src's tasks and copies them to @dst's buffer (not yet
 * published). Returns how many. */
static guint32
steal_half_into (WsLocalQueue *src,
             WsLocalQueue *dst,
             guint32       dst_tail)
{
  guint64 prev = atomic_load_explicit (&src->head, memory_order_acquire);
  guint64 next;
  guint32 n;
  guint32 first;

  for (;;)
    {
      guint32 steal = unpack_steal (prev);
      guint32 real = unpack_real (prev);
      guint32 src_tail;

      if (steal != real)
        return 0;               /* another thief is at work */

      /* Acquire: pairs with the owner's release of the tail, so the slots
       * below it are written. */
      src_tail = atomic_load_explicit (&src->tail, memory_order_acquire);
      n = src_tail - real;
      n -= n / 2;               /* the larger half */
      if (n == 0)
        return 0;

      next = pack (steal, real + n);
      /* AcqRel: claims the range against the owner's pops and other
       * thieves. */
      if (atomic_compare_exchange_weak_explicit (&src->head, &prev, next,
                                                 memory_order_acq_rel,
                                                 memory_order_acquire))
        break;
    }

  g_assert (n <= CAPACITY / 2);

  WS_CHAOS_POINT ();

  first = unpack_steal (next);
  for (guint32 i = 0; i < n; i++)
    {
      WsRawTask *t = atomic_load_explicit (&src->buffer[(first + i) & MASK],
                                           memory_order_relaxed);
      atomic_store_explicit (&dst->buffer[(dst_tail + i) & MASK], t, memory_order_relaxed);
    }

  /* Close the gap: steal catches up with real. The owner may have popped
   * meanwhile (moving real), so loop. Release: our reads of the slots
   * happen before the owner may reuse them. */
  prev = next;
  for (;;)
    {
      guint32 real = unpack_real (prev);

      next = pack (real, real);
      if (atomic_compare_exchange_weak_explicit (&src->head, &prev, next,
                                                 memory_order_acq_rel,
                                                 memory_order_acquire))
        return n;
      g_assert (unpack_steal (prev) == first);
    }
}

/* Called by the owner of @dst. Returns one stolen task to run now and
 * leaves the rest in @dst. */
WsRawTask *
ws_local_queue_steal_into (WsLocalQueue *src,
                           WsLocalQueue *dst,
                           guint        *n_stolen)
{
  guint32 dst_tail = atomic_load_explicit (&dst->tail, memory_order_relaxed);
  guint64 dst_head = atomic_load_explicit (&dst->head, memory_order_acquire);
  guint32 n;
  WsRawTask *ret;

  *n_stolen = 0;

  /* Skip stealing while our own queue is more than half full. */
  if (dst_tail - unpack_steal (dst_head) > CAPACITY / 2)
    return NULL;

  n = steal_half_into (src, dst, dst_tail);
  if (n == 0)
    return NULL;

  *n_stolen = n;
  n--;
  ret = atomic_load_explicit (&dst->buffer[(dst_tail + n) & MASK], memory_order_relaxed);
  if (n > 0)
    /* Release: publishes the copied slots to our own thieves. */
    atomic_store_explicit (&dst->tail, dst_tail + n, memory_order_release);

  return ret;
}
