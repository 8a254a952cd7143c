/* ws-core-private.h: the one door from the GObject face into the core
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The face (the .c and .h files of wsrt/) includes this header and no other of the core;
 * tools/check-layers fails on any other (doc/architecture.md, "Modules").
 * What the face may use of the core is what is included or declared here:
 *
 *  - the task harness (ws-raw-task-private.h: a task, its waker, its
 *    outcome and cancel hook), the waker lists and slots of the
 *    awaitables (ws-waker-private.h), the cooperative budget
 *    (ws-context-budget-private.h), the locks (ws-lock-private.h), the
 *    chaos points of the face's own lock-free code (ws-chaos-private.h);
 *  - one runtime, opaque (ws-runtime-core-private.h: spawn, hooks,
 *    shutdown, its configuration, fiber stacks and syscall offload,
 *    ws-offload-private.h, whose WsOffload is opaque too);
 *  - timers (ws-timer-driver-private.h, ws-time-private.h) and the
 *    GIO completions a runtime thread is owed (ws-owed-private.h);
 *  - the frame budget of a dispatch on an application's context
 *    (ws-frame-slice-private.h), which the completions' source shares
 *    with the local executors, and the one-source-per-context lookup
 *    (ws-context-source-private.h) that finds that source;
 *  - Sysprof's marks (ws-trace-private.h), for the completions' slices,
 *    ws_block_in_place and fibers;
 *  - below, what the calling thread is, block_in_place's policy, the
 *    context of a local task, and the statistics a metrics snapshot
 *    reads, so that the face never walks a worker, a pool or an executor.
 *
 * The hosts' own headers (ws-worker-private.h, ws-blocking-pool-private.h,
 * ws-local-executor-private.h, ...), their queues and sets, and the
 * struct of the runtime (ws-runtime-core-struct-private.h) stay behind
 * this door, as GLib's glib-private.h lets three private headers through
 * and GMainContext stays opaque in gmain.c: a face file that needs more
 * of them asks for a function here instead. tools/check-layers fails if
 * this header reaches, through any chain of includes, a header not in its
 * DOOR_LETS_THROUGH list.
 */

#pragma once

#include <glib.h>

#include "ws-chaos-private.h"
#include "ws-context-budget-private.h"
#include "ws-context-source-private.h"
#include "ws-fiber-stack-private.h"
#include "ws-fiber-switch-private.h"
#include "ws-frame-slice-private.h"
#include "ws-lock-private.h"
#include "ws-owed-private.h"
#include "ws-raw-task-private.h"
#include "ws-runtime-core-private.h"
#include "ws-task-allocator-private.h"
#include "ws-time-private.h"
#include "ws-timer-driver-private.h"
#include "ws-trace-private.h"
#include "ws-waker-private.h"

G_BEGIN_DECLS

/* What the calling thread is. A worker runs tasks that every other task
 * on its queues waits behind, so it must never block; a local dispatch
 * runs a main context's local tasks, which cannot leave that thread. */
typedef enum
{
  WS_CORE_THREAD_OTHER,
  WS_CORE_THREAD_WORKER,
  WS_CORE_THREAD_LOCAL_DISPATCH,
} WsCoreThread;

/* One worker's counters, read without stopping it (each has a single
 * writer; a snapshot is consistent per counter, not across counters). */
typedef struct
{
  guint64 polls;
  guint64 steals;
  guint64 steal_operations;
  guint64 parks;
  guint64 unparks;
  guint64 noop_wakes;
  guint64 local_schedules;
  guint64 overflows;
  guint64 forced_yields;
  guint64 busy_usec;
  guint   queue_depth;
} WsCoreWorkerStats;

/* What a metrics snapshot reads of a runtime. */
typedef struct
{
  guint              n_workers;
  guint              alive_tasks;     /* clamped to 0..G_MAXUINT */
  guint64            spawned_tasks;
  guint64            remote_schedules;
  guint              injection_queue_depth;
  guint              blocking_threads;
  guint              idle_blocking_threads;
  guint              blocking_queue_depth;
  WsCoreWorkerStats *workers;         /* n_workers of them, g_free () */
} WsCoreStats;

WsCoreThread  ws_core_current_thread       (void);
gboolean      ws_core_block_in_place_begin (GError        **error);
GMainContext *ws_core_task_local_context   (WsRawTask      *task);
void          ws_core_read_stats           (WsRuntimeCore  *core,
                                            WsCoreStats    *stats);
gboolean      ws_core_run_awaited          (WsContext      *cx,
                                            WsRawTask      *task);

/* TRUE on a worker thread, where no call may block. */
static inline gboolean
ws_core_on_worker (void)
{
  return ws_core_current_thread () == WS_CORE_THREAD_WORKER;
}

G_END_DECLS
