/* ws-owned-tasks-private.h: the set of live tasks of one host
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "ws-lock-private.h"
#include "ws-raw-task-private.h"

G_BEGIN_DECLS

/* Sharded so that workers spawning and completing at once rarely meet on
 * one lock. A power of two. */
#define WS_OWNED_SHARDS 16

typedef struct
{
  WsLock           lock;
  WsRawTask       *head;
  _Atomic gint64   count;     /* written under lock; read relaxed for metrics */
} WsOwnedShard;

struct _WsOwnedTasks
{
  _Atomic gboolean closed;
  _Atomic guint64  spawned;   /* relaxed counter: metrics only */
  WsOwnedShard     shards[WS_OWNED_SHARDS];
};

void     ws_owned_tasks_init         (WsOwnedTasks *self);
void     ws_owned_tasks_clear        (WsOwnedTasks *self);
gboolean ws_owned_tasks_bind         (WsOwnedTasks *self,
                                      WsRawTask    *task,
                                      guint         shard_hint);
gboolean ws_owned_tasks_remove       (WsOwnedTasks *self,
                                      WsRawTask    *task);
void     ws_owned_tasks_close        (WsOwnedTasks *self);
gboolean ws_owned_tasks_is_closed    (WsOwnedTasks *self);
void     ws_owned_tasks_shutdown_all (WsOwnedTasks *self);
gint64   ws_owned_tasks_count        (WsOwnedTasks *self);

G_END_DECLS
