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
 * The head word packs three fields: "steal" and "real" (16-bit indices,
 * free-running and wrapping, masked into the buffer) and a 32-bit
 * generation that every change of the head increments. The tail is a
 * 32-bit free-running index; every difference of indices is taken modulo
 * 2^16, which CAPACITY divides. Each update of the head is one CAS, and
 * the generation makes it ABA-safe: a CAS from a head read earlier
 * succeeds only if no update happened since, or a multiple of 2^32 of
 * them (tokio's 64-bit targets have the same bound, with 32-bit
 * indices). The indices alone would not do: the take-back below moves
 * the tail, not the head, so without the generation a take-back would
 * leave the head as it was.
 *
 * Taking back the newest task (ws_local_queue_take_back): a task that
 * awaits a child still at the tail of this queue runs it at once
 * (work-first, ws-worker.c). A thief computes its claim from a tail it
 * read after the head, then CASes the head it read, so a thief that read
 * the tail before the owner lowered it claims with a stale, larger tail
 * and may claim the slot the owner took. The take-back therefore:
 *
 *  1. reads the head; gives up if a thief is at work (steal != real), if
 *     the queue is empty, or if the newest slot holds another task;
 *  2. lowers the tail (release, as a push's store of the tail: a thief
 *     that reads it has the slots below it written);
 *  3. CASes the head from what it read in 1 to the same indices with the
 *     next generation (acq_rel). If that fails, a thief claimed since 1,
 *     perhaps with the old tail: the owner puts the tail back and gives
 *     up, and the task stays queued (or is the thief's).
 *
 * Between 2 and a failed 3 the tail can be below the head (a thief
 * claimed the last tasks after 1): readers take a length above CAPACITY
 * as an empty queue.
 *
 * Why no task is taken twice: a thief's claim succeeds only if the head
 * is still the value it read before reading the tail. A thief that read
 * the head before step 3 fails its CAS (the generation changed) and
 * starts over. A thief that read the head after step 3 acquired the
 * value step 3 released (or a later one, in its release sequence: every
 * write of the head is an RMW), so it reads the lowered tail or a later
 * one, and claims at most what is below it. Tasks pushed later at the same index are
 * queued, and claimed, like any other. A thief that succeeded between
 * 1 and 3 made step 3 fail. models/local-queue.pml checks this with one
 * owner (push with its overflow, pop, take-back) and two thieves; its
 * BROKEN_NO_TAG variant, a take-back that leaves the head as it was,
 * lets a thief take the task the owner took.
 *
 * The generation counts every change of the head, not only take-backs,
 * and is 32 bits wide: a count of take-backs alone, 16 bits wide, comes
 * back to the value a thief read after 65,536 take-backs (about 16 ms of
 * fork-join), which a thief descheduled between its read of the head and
 * its CAS can sleep through. The model's -DBROKEN_GEN_WRAP (a one-bit
 * generation) finds that double take.
 */

#include "config.h"

#include "ws-local-queue-private.h"
#include "ws-inject-queue-private.h"
#include "ws-chaos-private.h"

#define CAPACITY WS_LOCAL_QUEUE_CAPACITY
#define MASK     (CAPACITY - 1)
#define IDX_BITS 16
#define IDX_MASK ((1u << IDX_BITS) - 1)

G_STATIC_ASSERT (CAPACITY <= (IDX_MASK + 1) / 2);

/* The distance from index @from to index @to, modulo 2^16. */
static inline guint32
dist (guint32 to,
      guint32 from)
{
  return (to - from) & IDX_MASK;
}

static inline guint64
pack (guint32 steal,
      guint32 real,
      guint32 gen)
{
  return ((guint64) gen << (2 * IDX_BITS))
         | ((guint64) (steal & IDX_MASK) << IDX_BITS)
         | (real & IDX_MASK);
}

static inline guint32
unpack_steal (guint64 v)
{
  return (guint32) (v >> IDX_BITS) & IDX_MASK;
}

static inline guint32
unpack_real (guint64 v)
{
  return (guint32) v & IDX_MASK;
}

/* The generation of the head's next value. */
static inline guint32
next_gen (guint64 v)
{
  return (guint32) (v >> (2 * IDX_BITS)) + 1;
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
  guint32 n = dist (tail, unpack_real (head));

  /* A failing take-back can leave the tail below the head for a moment
   * (see the top of this file): that is an empty queue. */
  return n <= CAPACITY ? n : 0;
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

  return CAPACITY - dist (tail, unpack_steal (head));
}

/* Moves half of the queue plus @task to the injection queue in one batch.
 * Fails if a thief moved the head meanwhile; the caller retries. */
static gboolean
push_overflow (WsLocalQueue  *self,
               WsRawTask     *task,
               guint64        head_word,
               guint32        tail,
               WsInjectQueue *inject)
{
  const guint32 n = CAPACITY / 2;
  guint32 head = unpack_real (head_word);
  guint64 expected = head_word;
  WsRawTask *batch[CAPACITY / 2 + 1];

  g_assert (dist (tail, head) == CAPACITY);

  /* Claim the first half. AcqRel: acquire pairs with a thief's release of
   * the head, so we never claim slots a thief still copies; release makes
   * the claim visible before the slots are reused by later pushes. */
  if (!atomic_compare_exchange_strong_explicit (&self->head, &expected,
                                                pack (head + n, head + n,
                                                      next_gen (head_word)),
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

      if (dist (tail, steal) < CAPACITY)
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

      if (push_overflow (self, task, head, tail, overflow))
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

      if (dist (tail, real) == 0)
        return NULL;

      WS_CHAOS_POINT ();

      next = steal == real ? pack (real + 1, real + 1, next_gen (head))
                           : pack (steal, real + 1, next_gen (head));

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
      n = dist (src_tail, real);
      /* More than the capacity: the tail is below the head, lowered by
       * a take-back after another thief claimed; that take-back's CAS
       * fails and puts the tail back. Nothing to take now. */
      if (n > CAPACITY)
        return 0;
      n -= n / 2;               /* the larger half */
      if (n == 0)
        return 0;

      next = pack (steal, real + n, next_gen (prev));
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

      next = pack (real, real, next_gen (prev));
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
  if (dist (dst_tail, unpack_steal (dst_head)) > CAPACITY / 2)
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

/* Owner only. Takes @task back if it is the newest task queued, so that
 * the caller can run it now; FALSE if it is not there or a thief may be
 * taking it. The protocol and why it is safe are at the top of this
 * file. */
gboolean
ws_local_queue_take_back (WsLocalQueue *self,
                          WsRawTask    *task)
{
  /* Acquire: pairs with a thief's release of the head, as in the pop. */
  guint64 head = atomic_load_explicit (&self->head, memory_order_acquire);
  guint32 real = unpack_real (head);
  /* Relaxed: only this thread writes the tail and the slots. */
  guint32 tail = atomic_load_explicit (&self->tail, memory_order_relaxed);
  guint64 expected = head;

  if (unpack_steal (head) != real || dist (tail, real) == 0)
    return FALSE;
  if (atomic_load_explicit (&self->buffer[(tail - 1) & MASK], memory_order_relaxed) != task)
    return FALSE;

  /* Step 2. Release, as a push's: a thief that reads this tail has the
   * slots below it written (the release of step 3 publishes it too, to
   * the thieves whose claim can still succeed). */
  atomic_store_explicit (&self->tail, tail - 1, memory_order_release);

  WS_CHAOS_POINT ();

  /* Step 3. AcqRel: release publishes the lowered tail to the thieves
   * that acquire this head; the new generation fails every claim made
   * from the head read before it. Strong: a spurious failure would only
   * give up. */
  if (atomic_compare_exchange_strong_explicit (&self->head, &expected,
                                              pack (real, real, next_gen (head)),
                                              memory_order_acq_rel,
                                              memory_order_relaxed))
    return TRUE;

  /* A thief claimed since step 1, maybe with the old tail: leave the task
   * where it was (queued, or the thief's). Release: as a push's. */
  atomic_store_explicit (&self->tail, tail, memory_order_release);
  return FALSE;
}
