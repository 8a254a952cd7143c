/* ws-runtime-ref-private.h: the reference count that one runtime's parts
 * share
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The worker pool, the blocking pool and the local executors are parts of
 * one runtime (ws-runtime-core.c), whose memory they share: a task holds
 * its host (doc/architecture.md, "Shutdown", invariant H), and every host
 * forwards that reference to the runtime's count, so the runtime and all
 * its parts live until the last task, thread and caller let go. The parts
 * see only this struct, not the runtime above them; its address is also
 * the runtime's identity in ws_thread.runtime.
 *
 * Credit: no shared write per task. Every task takes a reference when it
 * is made and gives it back when it is freed; on the one shared count
 * that is a write from every worker to one cache line per spawn and per
 * free. A thread of the runtime (a worker or a blocking thread, which
 * holds a reference of its own for as long as it runs) keeps a credit
 * instead: references taken from the count in batches of
 * WS_RUNTIME_REF_BATCH and not yet given to a task
 * (ws_thread.ref_credit). Its tasks take their reference from the
 * credit, and a task freed on it gives its reference to the credit; the
 * credit goes back to the count in batches when it grows past
 * 2 * WS_RUNTIME_REF_BATCH, and whole when the thread stops
 * (ws_runtime_ref_return_credit), before it lets go of its own reference.
 * Any other thread, or a task of another runtime, uses the count.
 *
 * Why the runtime is still freed exactly when its last user lets go:
 *   C1 count = the references held (by tasks, threads, callers) + every
 *      thread's credit. Taking from or giving to a credit moves a
 *      reference between a task and the thread's credit, the sum
 *      unchanged; a batch moves between the credit and the count, the
 *      sum unchanged.
 *   C2 A credit is kept only while its thread holds its own reference,
 *      so the count cannot reach zero while any credit is outstanding:
 *      the credit is returned first, then the thread's own reference
 *      goes through the count, and the release that reaches zero is
 *      always one on the count (acq_rel), after which nobody touches
 *      the runtime.
 *   C3 A credit is used only on its own thread (ws_thread), for its own
 *      runtime (ref_credit_owner == the task's runtime), so no atomic.
 * models/runtime-ref.pml checks C1-C2 with tasks made and freed on
 * threads with and without credit; it finds a use after free if a thread
 * returns its credit after its own reference.
 *
 * Who else holds a reference, and why:
 *   C4 A foreign wake (a waker on a thread that is not the pool's) holds
 *      a reference of its own across its push and its notify
 *      (pool_schedule, ws-worker-pool.c, "Foreign pushes"). A task
 *      reference does not do: once the task has ended and every task of
 *      the pool has, the last sweep hands an ended task's host reference
 *      back (a zombie, ws-raw-task.c), so the task no longer keeps the
 *      runtime. It is taken while the task still holds the runtime (the
 *      waker owns its queued instance, and only that instance's holder
 *      ends a NOTIFIED task), and released last, on the count (acq_rel):
 *      the notify happens before the free.
 *   C5 The last worker-pool thread keeps its own reference while it
 *      drains the completions GIO still owes the workers' contexts
 *      ("Owed completions" there), so the contexts, freed with the pool,
 *      outlive a late completion; a shutdown caller never waits for that
 *      drain past its deadline.
 * models/shutdown.pml checks C4 (-DBROKEN_NO_FOREIGN_REF,
 * -DBROKEN_WALK_TAKES_NOTIFIED), models/owed.pml C5
 * (-DBROKEN_DRAIN_UNHELD).
 */

#pragma once

#include <stdatomic.h>

#include <glib.h>

#include "ws-thread-private.h"

G_BEGIN_DECLS

typedef struct _WsRuntimeRef WsRuntimeRef;

struct _WsRuntimeRef
{
  _Atomic gint   count;
  void         (*last_unref) (WsRuntimeRef *self);
};

static inline void
ws_runtime_ref_acquire (WsRuntimeRef *self)
{
  /* Relaxed: the caller holds a reference already. */
  atomic_fetch_add_explicit (&self->count, 1, memory_order_relaxed);
}

static inline void
ws_runtime_ref_release (WsRuntimeRef *self)
{
  /* AcqRel: the usual reference-count pairing before a free. */
  if (atomic_fetch_sub_explicit (&self->count, 1, memory_order_acq_rel) == 1)
    self->last_unref (self);
}

#define WS_RUNTIME_REF_BATCH 64

/* A thread of the runtime starts keeping a credit (C2: it holds its own
 * reference from before this until after ws_runtime_ref_return_credit). */
static inline void
ws_runtime_ref_keep_credit (WsRuntimeRef *self)
{
  ws_thread.ref_credit_owner = self;
  ws_thread.ref_credit = 0;
}

/* The thread stops keeping a credit: what is left goes back to the
 * count, before the thread's own reference does (C2). */
static inline void
ws_runtime_ref_return_credit (void)
{
  WsRuntimeRef *self = ws_thread.ref_credit_owner;
  gint credit = ws_thread.ref_credit;

  ws_thread.ref_credit_owner = NULL;
  ws_thread.ref_credit = 0;
  /* Release: as any release of references (the thread's own, still
   * held, keeps the count above zero here). */
  if (self != NULL && credit > 0)
    atomic_fetch_sub_explicit (&self->count, credit, memory_order_release);
}

/* A task's reference: from this thread's credit if it keeps one for
 * @self, else from the count. */
static inline void
ws_runtime_ref_acquire_for_task (WsRuntimeRef *self)
{
  if G_LIKELY (ws_thread.ref_credit_owner == self)
    {
      if G_UNLIKELY (ws_thread.ref_credit == 0)
        {
          /* Relaxed: the thread holds its own reference (C2). */
          atomic_fetch_add_explicit (&self->count, WS_RUNTIME_REF_BATCH,
                                     memory_order_relaxed);
          ws_thread.ref_credit = WS_RUNTIME_REF_BATCH;
        }
      ws_thread.ref_credit--;
      return;
    }
  ws_runtime_ref_acquire (self);
}

/* A freed task's reference: to this thread's credit if it keeps one for
 * @self (never the last reference then: C2), else to the count. */
static inline void
ws_runtime_ref_release_for_task (WsRuntimeRef *self)
{
  if G_LIKELY (ws_thread.ref_credit_owner == self)
    {
      if G_UNLIKELY (++ws_thread.ref_credit > 2 * WS_RUNTIME_REF_BATCH)
        {
          ws_thread.ref_credit -= WS_RUNTIME_REF_BATCH;
          /* Release, as above; cannot reach zero (C2). */
          atomic_fetch_sub_explicit (&self->count, WS_RUNTIME_REF_BATCH,
                                     memory_order_release);
        }
      return;
    }
  ws_runtime_ref_release (self);
}

G_END_DECLS
