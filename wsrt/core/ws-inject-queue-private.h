/* ws-inject-queue-private.h: the global queue
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <stdatomic.h>

#include "ws-lock-private.h"
#include "ws-raw-task-private.h"

G_BEGIN_DECLS

typedef struct _WsInjectQueue WsInjectQueue;
typedef struct _WsInjectBlock WsInjectBlock;

/* A block of the queue: 1 KiB. */
#define WS_INJECT_BLOCK_SLOTS 127

struct _WsInjectBlock
{
  WsInjectBlock  *next;
  WsRawTask      *slots[WS_INJECT_BLOCK_SLOTS];
};

/* A FIFO of task pointers in a list of blocks, under one lock. Everything
 * but `len` is under the lock. */
struct _WsInjectQueue
{
  WsLock          lock;
  WsInjectBlock  *head_block;
  WsInjectBlock  *tail_block;
  guint           head_index;  /* next slot to pop in head_block */
  guint           tail_index;  /* next slot to fill in tail_block */
  WsInjectBlock  *spare;       /* a drained block kept for the next one */
  gboolean        sealed;      /* drained for the last time by shutdown */
  _Atomic gsize   len;         /* written under lock; read lock-free */
  /* Tasks pushed from outside the pool so far (ws_inject_queue_push_remote),
   * not the pool's own overflow: written under the lock, after len, with
   * release; read lock-free. Next to len, on a line a pusher writes
   * anyway. */
  _Atomic guint64 n_remote;
};

void       ws_inject_queue_init        (WsInjectQueue    *self);
void       ws_inject_queue_clear       (WsInjectQueue    *self);
gboolean   ws_inject_queue_push        (WsInjectQueue    *self,
                                        WsRawTask        *task);
gboolean   ws_inject_queue_push_remote (WsInjectQueue    *self,
                                        WsRawTask        *task);
gboolean   ws_inject_queue_push_batch  (WsInjectQueue    *self,
                                        WsRawTask *const *tasks,
                                        gsize             n);
WsRawTask *ws_inject_queue_pop         (WsInjectQueue    *self);
gsize      ws_inject_queue_pop_batch   (WsInjectQueue    *self,
                                        WsRawTask       **out,
                                        gsize             max);
WsRawTask *ws_inject_queue_pop_or_seal (WsInjectQueue    *self);
gboolean   ws_inject_queue_is_sealed   (WsInjectQueue    *self);

static inline gsize
ws_inject_queue_len (WsInjectQueue *self)
{
  /* SeqCst: this load is the second half of the Dekker pattern between a
   * worker going to sleep and a producer (see ws-sleepers.c). */
  return atomic_load_explicit (&self->len, memory_order_seq_cst);
}

static inline gboolean
ws_inject_queue_is_empty (WsInjectQueue *self)
{
  return ws_inject_queue_len (self) == 0;
}

/* The tasks pushed from outside the pool so far. @order: acquire where
 * the caller reads the length next and must find every push the count
 * includes there (the count is stored after the length, with release);
 * relaxed for a hint or a statistic. */
static inline guint64
ws_inject_queue_n_remote (WsInjectQueue *self,
                          memory_order   order)
{
  return atomic_load_explicit (&self->n_remote, order);
}

G_END_DECLS
