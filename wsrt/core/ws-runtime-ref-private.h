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
 */

#pragma once

#include <stdatomic.h>

#include <glib.h>

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

G_END_DECLS
