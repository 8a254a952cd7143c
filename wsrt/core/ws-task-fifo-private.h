/* ws-task-fifo-private.h: a FIFO of tasks linked through queue_next
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The run queues that hold few tasks, or hold them under a lock that is
 * not contended (a local executor's queue, the blocking pool's jobs), link
 * the tasks themselves: a push allocates nothing and cannot fail, which
 * a schedule path needs (it must never fail to take a task over, see
 * ws-task-host-private.h). The busy injection queue keeps pointers in
 * blocks instead, so that a batch pop does not walk tasks that another
 * core just wrote (ws-inject-queue.c).
 *
 * What must hold:
 *
 *  - A task is in at most one FIFO at a time: queue_next is its only
 *    link. Holding the task's queued (NOTIFIED) reference is what entitles
 *    a host to push it, and the state word lets one such reference exist
 *    per task at a time (ws-task-state-private.h).
 *  - head is NULL exactly when tail is NULL and len is 0; tail's
 *    queue_next is NULL. A popped task has its queue_next cleared before
 *    the caller sees it, so a stale link never reaches another list.
 *  - The FIFO is not thread-safe: its owner's lock guards it. A FIFO
 *    moved out with ws_task_fifo_take_all () belongs to the thread that
 *    took it.
 *
 * Static inline: these are a few stores each, on schedule paths.
 */

#pragma once

#include "ws-raw-task-private.h"

G_BEGIN_DECLS

typedef struct
{
  WsRawTask *head;
  WsRawTask *tail;
  gsize      len;
} WsTaskFifo;

#define WS_TASK_FIFO_INIT { NULL, NULL, 0 }

static inline void
ws_task_fifo_init (WsTaskFifo *self)
{
  *self = (WsTaskFifo) WS_TASK_FIFO_INIT;
}

static inline gboolean
ws_task_fifo_is_empty (const WsTaskFifo *self)
{
  return self->head == NULL;
}

static inline gsize
ws_task_fifo_len (const WsTaskFifo *self)
{
  return self->len;
}

/* Appends @task, which is in no FIFO. */
static inline void
ws_task_fifo_push (WsTaskFifo *self,
                   WsRawTask  *task)
{
  task->queue_next = NULL;
  if (self->tail != NULL)
    self->tail->queue_next = task;
  else
    self->head = task;
  self->tail = task;
  self->len++;
}

/* Moves every task of @other, in order, behind those of @self. @other is
 * left empty. */
static inline WsRawTask *
ws_task_fifo_pop (WsTaskFifo *self)
{
  WsRawTask *task = self->head;

  if (task == NULL)
    return NULL;
  self->head = task->queue_next;
  if (self->head == NULL)
    self->tail = NULL;
  self->len--;
  task->queue_next = NULL;
  return task;
}

/* Moves every task out (under the owner's lock), to be popped from the
 * FIFO returned outside it. @self is left empty. */
static inline WsTaskFifo
ws_task_fifo_take_all (WsTaskFifo *self)
{
  WsTaskFifo taken = *self;

  ws_task_fifo_init (self);
  return taken;
}

G_END_DECLS
