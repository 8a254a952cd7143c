/* ws-task-host-private.h: what a task asks of the executor it belongs to
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A task's host is the worker pool, the blocking pool or a local executor
 * on one GMainContext. The task core (ws-raw-task.c) knows its host only
 * through this interface: where a woken task goes (schedule), how the
 * task keeps the host alive (ref, unref), and how the host's task registry
 * learns of the task (bind, release). So the task core calls no
 * scheduler and no registry itself, and a host is free in how it queues
 * and how it tracks its tasks.
 *
 * What must hold (doc/architecture.md, "The task and its state word" and
 * "Shutdown"):
 *
 *  - A task holds a reference on its host from ws_raw_task_new () until
 *    it is freed, as a tokio task holds its scheduler handle: a late
 *    wake, a join-handle read or a completion never touches a freed host,
 *    whatever the owner of the runtime did meanwhile.
 *  - schedule never completes or cancels a task: a closed host hands the
 *    task to a list that its shutdown drains, or drops the reference of a
 *    task that has ended. So no user code runs inside a wake, and the
 *    stack never grows with the length of an await chain.
 *  - The task core calls bind and release with RUNNING held, so binding
 *    and the task's end never race, and release before it publishes
 *    COMPLETE, so the alive count is right by the time a waiter looks.
 */

#pragma once

#include <glib.h>

#include "ws-runtime-ref-private.h"
#include "ws-trace-private.h"

G_BEGIN_DECLS

typedef struct _WsRawTask      WsRawTask;
typedef struct _WsTaskHost     WsTaskHost;
typedef struct _WsTaskRegistry   WsTaskRegistry;

typedef struct
{
  /* Takes over one reference of @task (the "notified" reference). Never
   * completes or cancels a task: a host that is closed hands the task to
   * a list that its shutdown drains, or drops the reference of a task
   * that has ended. */
  void     (*schedule) (WsTaskHost *host,
                        WsRawTask  *task,
                        gboolean    is_yield);
  void     (*ref)      (WsTaskHost *host);
  void     (*unref)    (WsTaskHost *host);
  /* The first poll of @task returned PENDING on a host that binds late
   * (bind_on_pending): put it in the task registry, which takes a reference.
   * FALSE if the set is closed (shutdown has begun): the poller then
   * cancels the task itself. */
  gboolean (*bind)     (WsTaskHost *host,
                        WsRawTask  *task);
  /* @task is ending (its poller holds RUNNING, the outcome is stored,
   * COMPLETE is not published yet): leave the task registry and count the
   * end. TRUE if the set held a reference, now the caller's to drop. */
  gboolean (*release)  (WsTaskHost *host,
                        WsRawTask  *task);
} WsTaskHostVTable;

struct _WsTaskHost
{
  const WsTaskHostVTable *vtable;
  WsTaskRegistry          *registry;
  /* Bind a task to the task registry when its first poll returns PENDING, not
   * at spawn. Only for a host whose spawns pass the task registry's spawn
   * gate and whose queues shutdown drains with ws_raw_task_drop_queued
   * (the worker pool): a queued task that was never polled is reached
   * there, not through the set. */
  gboolean               bind_on_pending;
  /* For a host whose memory is its runtime's (the worker pool, the
   * blocking pool): a task's reference on the host is a reference on the
   * runtime, and its vtable's ref and unref are the two functions below.
   * NULL for a host with a count of its own (a local executor). */
  WsRuntimeRef          *runtime;
  /* Ended tasks that something still holds by a waker (ws-raw-task.c,
   * "Stale wakers"), under the task core's zombie lock. */
  WsRawTask             *zombies;
  /* What this host's tasks are in Sysprof's marks (ws-trace-private.h):
   * WS_TRACE_TASK, WS_TRACE_BLOCKING_JOB or WS_TRACE_LOCAL_TASK. */
  WsTraceKind            trace_kind;
};

static inline void
ws_task_host_ref_runtime (WsTaskHost *host)
{
  ws_runtime_ref_acquire_for_task (host->runtime);
}

static inline void
ws_task_host_unref_runtime (WsTaskHost *host)
{
  ws_runtime_ref_release_for_task (host->runtime);
}

G_END_DECLS
