/* ws-owned-tasks-private.h: the set of live tasks of one host
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
#define WS_OWNED_SHARDS 16

typedef struct
{
  WsLock           lock;
  WsRawTask       *head;
} WsOwnedShard;

/* Counters of one slot; a thread always uses the same slot, so that two
 * workers counting never share a cache line (the padding). */
typedef struct
{
  _Atomic gint64   alive;     /* accepted minus completed, by this slot's threads */
  _Atomic guint64  spawned;
  _Atomic guint64  in_flight; /* spawns between the gate and their push */
  gchar            padding[64 - 3 * sizeof (gint64)];
} WsOwnedCounters;

struct _WsOwnedTasks
{
  _Atomic gboolean closed;
  WsOwnedShard     shards[WS_OWNED_SHARDS];
  WsOwnedCounters  counters[WS_OWNED_SHARDS];
};

void     ws_owned_tasks_init          (WsOwnedTasks *self);
void     ws_owned_tasks_clear         (WsOwnedTasks *self);
gboolean ws_owned_tasks_bind          (WsOwnedTasks *self,
                                       WsRawTask    *task);
gboolean ws_owned_tasks_remove        (WsOwnedTasks *self,
                                       WsRawTask    *task);
void     ws_owned_tasks_close         (WsOwnedTasks *self);
gboolean ws_owned_tasks_is_closed     (WsOwnedTasks *self);
void     ws_owned_tasks_shutdown_all  (WsOwnedTasks *self);
gint64   ws_owned_tasks_count         (WsOwnedTasks *self);
gboolean ws_owned_tasks_enter_spawn   (WsOwnedTasks *self);
void     ws_owned_tasks_leave_spawn   (WsOwnedTasks *self);
gboolean ws_owned_tasks_wait_spawns   (WsOwnedTasks *self,
                                       gint64        deadline);
guint64  ws_owned_tasks_spawned       (WsOwnedTasks *self);

guint    ws_owned_tasks_current_slot  (void);

/* A task was accepted by its host (ws_raw_task_mark_counted) / counted
 * as spawned / completed (complete()). Relaxed increments: the push that
 * publishes the task is a release. Release on completion: whoever reads
 * a slot with acquire and sees the decrement also sees the destroy
 * notify that ran before it (shutdown's "TRUE means every destroy notify
 * has run and its effects are visible"). */
static inline void
ws_owned_tasks_count_created (WsOwnedTasks *self)
{
  atomic_fetch_add_explicit (&self->counters[ws_owned_tasks_current_slot ()].alive,
                             1, memory_order_relaxed);
}

static inline void
ws_owned_tasks_count_spawned (WsOwnedTasks *self)
{
  atomic_fetch_add_explicit (&self->counters[ws_owned_tasks_current_slot ()].spawned,
                             1, memory_order_relaxed);
}

static inline void
ws_owned_tasks_count_completed (WsOwnedTasks *self)
{
  atomic_fetch_sub_explicit (&self->counters[ws_owned_tasks_current_slot ()].alive,
                             1, memory_order_release);
}

G_END_DECLS
