/* ws-inject-queue-private.h: the global queue
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The protocol is at the top of ws-inject-queue.c.
 */

#pragma once

#include <stdatomic.h>

#include "ws-lock-private.h"
#include "ws-raw-task-private.h"

G_BEGIN_DECLS

typedef struct _WsInjectQueue WsInjectQueue;
typedef struct _WsInjectBlock WsInjectBlock;

/* A block of the queue: 1 KiB; -Dsmall_queue=true makes it 3 slots, so
 * that pops and pushes cross blocks, and reuse them, every few tasks. */
#ifndef WS_INJECT_BLOCK_SLOTS
# define WS_INJECT_BLOCK_SLOTS 127
#endif

struct _WsInjectBlock
{
  WsInjectBlock  *next;
  WsRawTask      *slots[WS_INJECT_BLOCK_SLOTS];
};

/* A FIFO of task pointers in a list of blocks, with a lock for the
 * poppers and another for the pushers (ws-inject-queue.c). */
struct _WsInjectQueue
{
  /* The poppers' side, under head_lock. */
  WsLock          head_lock;
  WsInjectBlock  *head_block;
  guint           head_index;  /* next slot to pop in head_block */
  _Atomic gsize   popped;      /* tasks popped so far; read lock-free */

  /* The pushers' side, under tail_lock, on lines of its own. */
  _Alignas (64) WsLock tail_lock;
  WsInjectBlock  *tail_block;
  guint           tail_index;  /* next slot to fill in tail_block */
  gboolean        sealed;      /* drained for the last time by shutdown;
                                * set with both locks held */
  _Atomic gsize   pushed;      /* tasks pushed so far; read lock-free */
  /* Tasks pushed from outside the pool so far (ws_inject_queue_push_remote),
   * not the pool's own overflow: stored after pushed, with release. */
  _Atomic guint64 n_remote;
  /* A drained block, handed from the poppers to the pushers. */
  _Atomic (WsInjectBlock *) spare;
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

/* The tasks in the queue, or more (never fewer than it held when pushed
 * was read): popped is read before pushed, and both only grow. SeqCst:
 * the load of pushed is the second half of the Dekker pattern between a
 * worker going to sleep and a producer (see ws-sleepers.c). */
static inline gsize
ws_inject_queue_len (WsInjectQueue *self)
{
  gsize popped = atomic_load_explicit (&self->popped, memory_order_seq_cst);

  return atomic_load_explicit (&self->pushed, memory_order_seq_cst) - popped;
}

static inline gboolean
ws_inject_queue_is_empty (WsInjectQueue *self)
{
  return ws_inject_queue_len (self) == 0;
}

/* The tasks pushed from outside the pool so far. @order: acquire where
 * the caller reads the length next and must find every push the count
 * includes there (the count is stored after pushed, with release);
 * relaxed for a hint or a statistic. */
static inline guint64
ws_inject_queue_n_remote (WsInjectQueue *self,
                          memory_order   order)
{
  return atomic_load_explicit (&self->n_remote, order);
}

G_END_DECLS
