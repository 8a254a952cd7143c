/* ws-local-queue-private.h: a worker's run queue
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <stdatomic.h>

#include "ws-raw-task-private.h"

G_BEGIN_DECLS

typedef struct _WsInjectQueue WsInjectQueue;

/* 256 slots, as in tokio; -Dsmall_queue=true makes it 4 so that the
 * overflow and steal paths run with a handful of tasks. */
#ifndef WS_LOCAL_QUEUE_CAPACITY
# define WS_LOCAL_QUEUE_CAPACITY 256
#endif

G_STATIC_ASSERT ((WS_LOCAL_QUEUE_CAPACITY & (WS_LOCAL_QUEUE_CAPACITY - 1)) == 0);

typedef struct
{
  /* Two 16-bit indices and a generation packed in one word: where the
   * stealer in progress started ("steal"), the real head, and a count of
   * the head's changes. The indices differ only while a thief copies
   * tasks out (ws-local-queue.c). */
  _Atomic guint64           head;
  _Atomic guint32           tail;         /* written by the owner only */
  _Atomic(WsRawTask *)      buffer[WS_LOCAL_QUEUE_CAPACITY];
} WsLocalQueue;

typedef struct
{
  guint64 overflows;
  guint64 stolen;       /* tasks taken by steal_into */
} WsLocalQueueStats;

void       ws_local_queue_init                  (WsLocalQueue  *self);
guint      ws_local_queue_len                   (WsLocalQueue  *self);
gboolean   ws_local_queue_has_tasks             (WsLocalQueue  *self);
guint      ws_local_queue_remaining             (WsLocalQueue  *self);
gboolean   ws_local_queue_push_back_or_overflow (WsLocalQueue  *self,
                                                 WsRawTask     *task,
                                                 WsInjectQueue *overflow);
WsRawTask *ws_local_queue_pop                   (WsLocalQueue  *self);
gboolean   ws_local_queue_take_back             (WsLocalQueue  *self,
                                                 WsRawTask     *task);
WsRawTask *ws_local_queue_steal_into            (WsLocalQueue  *src,
                                                 WsLocalQueue  *dst,
                                                 guint         *n_stolen);

G_END_DECLS
