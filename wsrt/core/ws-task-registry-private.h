/* ws-task-registry-private.h: the set of live tasks of one host
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "ws-lock-private.h"
#include "ws-raw-task-private.h"

G_BEGIN_DECLS

/* Sharded so that threads binding and completing at once rarely meet on
 * one lock. A power of two. */
#define WS_TASK_REGISTRY_SHARDS 16
/* Counter slots: one per shard that a thread may own alone, and the last
 * one shared by the threads that found none free. */
#define WS_TASK_REGISTRY_COUNTER_SLOTS (WS_TASK_REGISTRY_SHARDS + 1)
#define WS_TASK_REGISTRY_SHARED_COUNTER WS_TASK_REGISTRY_SHARDS

/* A shard to a cache line of its own: each thread binds on the shard of
 * its slot, so two workers' shards on one line would make every bind and
 * release of one worker miss on the other's writes. */
typedef struct
{
  _Alignas (64) WsLock lock;
  WsRawTask       *head;
} WsRegistryShard;

/* Counters of one slot; a thread always uses the same slots, so that two
 * workers counting never share a cache line (the padding). A foreign spawn enters and
 * leaves the spawn gate (ws-task-registry.c) and is counted by leaving it,
 * so that the gate costs no more atomic operations than counting did.
 * The gate counters are at the thread's gate slot; accepted and
 * completed at its counter slot, which only that thread writes (plain
 * loads and stores), or the shared last slot (atomic adds): see
 * "Counter slots" in ws-task-registry.c.
 * All but gate_entered (which a refusal takes back) only ever grow. */
typedef struct
{
  _Atomic guint64  gate_entered; /* foreign spawns in or past the gate, less refusals */
  _Atomic guint64  gate_left;    /* ... accepted and pushed */
  _Atomic guint64  accepted;     /* spawns accepted without the gate */
  _Atomic guint64  completed;    /* accepted tasks that completed */
  gchar            padding[64 - 4 * sizeof (guint64)];
} WsRegistryCounters;

/* Called on each task of a registry walk (ws_task_registry_foreach). */
typedef void (*WsTaskVisitFunc) (WsRawTask *task,
                                 gpointer   data);

struct _WsTaskRegistry
{
  /* Read on every spawn, written once: not on a line with shard 0's lock. */
  _Atomic gboolean   closed;
  _Alignas (64) WsRegistryShard shards[WS_TASK_REGISTRY_SHARDS];
  WsRegistryCounters counters[WS_TASK_REGISTRY_COUNTER_SLOTS];
};

void     ws_task_registry_init          (WsTaskRegistry *self);
void     ws_task_registry_clear         (WsTaskRegistry *self);
gboolean ws_task_registry_bind          (WsTaskRegistry *self,
                                         WsRawTask      *task);
gboolean ws_task_registry_remove        (WsTaskRegistry *self,
                                         WsRawTask      *task);
gboolean ws_task_registry_bind_task     (WsTaskHost     *host,
                                         WsRawTask      *task);
gboolean ws_task_registry_release_task  (WsTaskHost     *host,
                                         WsRawTask      *task);
void     ws_task_registry_close         (WsTaskRegistry *self);
gboolean ws_task_registry_is_closed     (WsTaskRegistry *self);
void     ws_task_registry_shutdown_all  (WsTaskRegistry *self,
                                         gboolean        leave_notified);
void     ws_task_registry_cancel_all    (WsTaskRegistry *self);
gint64   ws_task_registry_count         (WsTaskRegistry *self);
void     ws_task_registry_foreach       (WsTaskRegistry *self,
                                         WsTaskVisitFunc func,
                                         gpointer        data);
gboolean ws_task_registry_enter_spawn   (WsTaskRegistry *self);
void     ws_task_registry_leave_spawn   (WsTaskRegistry *self);
gboolean ws_task_registry_wait_spawns   (WsTaskRegistry *self,
                                         gint64          deadline);
guint64  ws_task_registry_spawned       (WsTaskRegistry *self);

guint    ws_task_registry_current_slot  (void);
guint    ws_task_registry_counter_slot  (void);

/* Adds one to a counter of the counter slot @slot with @order: a plain
 * load and store on a slot this thread owns (no other writer), an
 * atomic add on the shared one. */
static inline void
ws_task_registry_counter_add (_Atomic guint64 *counter,
                              guint            slot,
                              memory_order     order)
{
  if G_LIKELY (slot != WS_TASK_REGISTRY_SHARED_COUNTER)
    atomic_store_explicit (counter, atomic_load_explicit (counter, memory_order_relaxed) + 1,
                           order);
  else
    atomic_fetch_add_explicit (counter, 1, order);
}

/* A task was accepted without the gate (a worker's own spawn, a host
 * that binds at spawn) / an accepted task completed (complete()).
 * Relaxed on acceptance: the push that publishes the task is a release.
 * Release on completion: whoever reads the slot with acquire and sees the
 * count also sees the destroy notify that ran before it (shutdown's "TRUE
 * means every destroy notify has run and its effects are visible"). */
static inline void
ws_task_registry_count_accepted (WsTaskRegistry *self)
{
  guint slot = ws_task_registry_counter_slot ();

  ws_task_registry_counter_add (&self->counters[slot].accepted, slot, memory_order_relaxed);
}

static inline void
ws_task_registry_count_completed (WsTaskRegistry *self)
{
  guint slot = ws_task_registry_counter_slot ();

  ws_task_registry_counter_add (&self->counters[slot].completed, slot, memory_order_release);
}

G_END_DECLS
