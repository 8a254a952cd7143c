/* ws-worker-private.h: one worker of the pool
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A worker is its core (WsWorkerCore: the run queue, the LIFO slot, the
 * GMainContext its tasks' GIO calls complete on, the parker and the
 * scheduling state), which ws_block_in_place () moves to a new thread as
 * a unit, and the state of the thread that runs that core now.
 */

#pragma once

#include <stdatomic.h>

#include <glib.h>

#include "ws-local-queue-private.h"
#include "ws-parker-private.h"
#include "ws-raw-task-private.h"
#include "ws-thread-private.h"

G_BEGIN_DECLS

typedef struct _WsWorkerPool WsWorkerPool;

#define WS_CACHE_LINE_PAIR 128

/* After this many polls of LIFO-slot tasks in one tick the slot is
 * bypassed, so a chain of tasks that respawn each other cannot starve the
 * run queue or the injection queue (doc/architecture.md, "Rules: scheduling";
 * tokio >= 1.29 uses 3). */
#define WS_MAX_LIFO_POLLS_PER_TICK 3

/* How deep work-first runs nest on a thread's stack, and on a fiber's
 * (whose smallest size is 16 KiB) (ws-worker.c). */
#define WS_MAX_AWAITED_DEPTH         32
#define WS_MAX_AWAITED_DEPTH_ON_FIBER 4

/* How often, in polling time, a worker looks at the injection queue first
 * (self-tuned between 2 ticks and global-queue-interval ticks). */
#ifndef WS_GLOBAL_QUEUE_TARGET_USEC
# define WS_GLOBAL_QUEUE_TARGET_USEC 200
#endif

/* Written by the owning worker only (load + store, no RMW), read by
 * anyone: relaxed atomics keep that race-free at the cost of a plain
 * increment on x86. */
typedef struct
{
  _Atomic guint64 polls;
  _Atomic guint64 steals;
  _Atomic guint64 steal_operations;
  _Atomic guint64 parks;
  _Atomic guint64 unparks;
  _Atomic guint64 noop_wakes;
  _Atomic guint64 local_schedules;
  _Atomic guint64 overflows;
  _Atomic guint64 forced_yields;
  _Atomic guint64 busy_usec;
} WsWorkerStats;

#define WS_STAT_ADD(w, field, n) \
  atomic_store_explicit (&(w)->core.stats.field, \
                         atomic_load_explicit (&(w)->core.stats.field, \
                                               memory_order_relaxed) + (n), \
                         memory_order_relaxed)
#define WS_STAT_INC(w, field) WS_STAT_ADD (w, field, 1)

/* What ws_block_in_place () hands to the next thread. */
typedef struct
{
  /* First, and on lines of its own: thieves write its head. */
  _Alignas (WS_CACHE_LINE_PAIR) WsLocalQueue queue;
  WsRawTask      *lifo;              /* not stealable */
  GMainContext   *context;
  WsParker        parker;
  guint32         tick;
  guint32         rand_state;
  guint           lifo_polls;
  gboolean        is_searching;
  gboolean        just_unparked;     /* for the no-op wake count */
  gboolean        is_shutdown;
  guint64         remote_seen;       /* the inject queue's n_remote at the last take */
  gint64          busy_since;
  guint32         gq_interval;       /* self-tuned global-queue interval */
  /* Ticks left until the next maintenance and the next fairness tick:
   * counted down, so that a tick costs no division (a `div` is 20-40
   * cycles, a yield's whole poll about a hundred). */
  guint32         until_maintenance;
  guint32         until_fairness;
  guint32         tick_at_tune;      /* tick when gq_interval was last tuned */
  gint64          tune_since;        /* and the time then, in usec */
  /* When this thread's fiber stacks are trimmed if it is parked then
   * (park ()); 0 while they have nothing to trim. */
  gint64          trim_at;
  WsWorkerStats   stats;
  /* The timer driver of `context` (ws-timer-driver.c), made on the first
   * timer; the context owns it, this borrows it. */
  struct _WsTimerDriver *timers;
} WsWorkerCore;

struct _WsWorker
{
  WsWorkerPool   *pool;
  guint           index;
  WsWorkerCore    core;
  /* The thread that runs the core now: its handle (shutdown joins it),
   * its poll context, whether a task poll is on its stack, and whether it
   * is parked (then wakes from its own context go remote). */
  GThread        *thread;
  WsContext      *cx;
  gboolean        in_poll;
  gboolean        in_park;
};

static inline WsWorker *
ws_worker_get_current (void)
{
  return ws_thread.worker;
}

WsWorker *ws_worker_new                (WsWorkerPool *pool,
                                        guint         index);
void      ws_worker_free               (WsWorker     *self);
gpointer  ws_worker_thread_main        (gpointer      data);
void      ws_worker_schedule_local     (WsWorker     *self,
                                        WsRawTask    *task,
                                        gboolean      is_yield);
gboolean  ws_worker_drain              (WsWorker     *self);
gboolean  ws_worker_hand_off_core      (GError      **error);
gboolean  ws_worker_run_awaited        (WsContext    *cx,
                                        WsRawTask    *task);

G_END_DECLS
