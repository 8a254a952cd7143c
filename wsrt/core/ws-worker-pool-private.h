/* ws-scheduler-private.h: the worker pool shared state and the workers
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * This is the scheduler core: plain C, no GObject face. WsRuntime owns one
 * WsScheduler and calls into it; nothing here calls back into the face.
 */

#pragma once

#include <stdatomic.h>

#include <glib.h>

#include "ws-raw-task-private.h"
#include "ws-local-queue-private.h"
#include "ws-inject-queue-private.h"
#include "ws-sleepers-private.h"
#include "ws-parker-private.h"
#include "ws-task-registry-private.h"
#include "ws-lock-private.h"

G_BEGIN_DECLS

typedef struct _WsScheduler     WsScheduler;
typedef struct _WsBlockingPool  WsBlockingPool;
typedef struct _WsLocalExecutor WsLocalExecutor;

/* After this many polls of LIFO-slot tasks in one tick the slot is
 * bypassed, so a chain of tasks that respawn each other cannot starve the
 * run queue or the injection queue (DESIGN 5; tokio >= 1.29 uses 3). */
#define WS_MAX_LIFO_POLLS_PER_TICK 3

/* How often, in polling time, a worker looks at the injection queue first
 * (self-tuned between 2 ticks and global-queue-interval ticks). */
#ifndef WS_GLOBAL_QUEUE_TARGET_USEC
# define WS_GLOBAL_QUEUE_TARGET_USEC 200
#endif

/* A C callback run on runtime threads (DESIGN 8). */
typedef struct
{
  void           (*func) (gpointer user_data);
  gpointer         data;
  GDestroyNotify   destroy;
} WsHook;

static inline void
ws_hook_run (const WsHook *hook)
{
  if (hook->func != NULL)
    hook->func (hook->data);
}

typedef enum
{
  WS_HOOK_THREAD_START,
  WS_HOOK_THREAD_STOP,
  WS_HOOK_BEFORE_PARK,
  WS_HOOK_AFTER_UNPARK,
  WS_N_HOOKS
} WsHookKind;

typedef struct
{
  guint    n_workers;
  gchar   *thread_name_prefix;
  guint    global_queue_interval;
  guint    event_interval;
  gboolean disable_lifo_slot;
  guint    budget;
  guint    max_blocking_threads;
  gint64   blocking_keep_alive;     /* microseconds */
  gint64   local_slice;             /* microseconds per local dispatch */
  WsHook   hooks[WS_N_HOOKS];       /* set before start, read-only after */
} WsSchedulerConfig;

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
  atomic_store_explicit (&(w)->stats.field, \
                         atomic_load_explicit (&(w)->stats.field, memory_order_relaxed) + (n), \
                         memory_order_relaxed)
#define WS_STAT_INC(w, field) WS_STAT_ADD (w, field, 1)

struct _WsWorker
{
  WsScheduler    *sched;
  guint           index;
  WsLocalQueue    queue;
  WsRawTask      *lifo;              /* owner only; not stealable */
  WsParker        parker;
  GMainContext   *context;
  GThread        *thread;
  guint32         tick;
  guint32         rand_state;
  guint           lifo_polls;
  gboolean        is_searching;
  gboolean        just_unparked;     /* for the no-op wake count */
  gboolean        in_poll;           /* a task poll is on the stack */
  gboolean        is_shutdown;
  gboolean        in_park;           /* wakes from our own context go remote */
  gint64          busy_since;
  guint32         gq_interval;       /* self-tuned global-queue interval */
  guint32         tick_at_tune;      /* tick when gq_interval was last tuned */
  gint64          tune_since;        /* and the time then, in usec */
  WsContext      *cx;                /* of the thread running the worker now */
  WsWorkerStats   stats;
};

struct _WsScheduler
{
  WsTaskHost         host;            /* first: tasks point here */
  WsSchedulerConfig  config;
  guint              n_workers;
  WsWorker         **workers;
  /* Every task holds a reference (a task holds its host), so this is
   * written on every spawn and every free: on a cache line of its own, away
   * from the configuration and the pointers every worker reads on every
   * tick. */
  _Alignas (64) _Atomic gint ref_count;
  _Alignas (64) WsInjectQueue inject;
  WsSleepers             sleepers;
  WsTaskRegistry       registry;
  WsBlockingPool    *blocking;

  _Atomic gboolean   shutdown;        /* set once, before workers are woken */
  _Atomic gboolean   finished;        /* a shutdown call saw every task end */
  _Atomic gboolean   started_flag;    /* lock-free check for lazy start */
  _Atomic guint64    remote_schedules;
  _Atomic guint64    local_polls;     /* polls made by local executors */

  WsLock             sweep_lock;      /* one last sweep at a time */
  WsLock             lock;            /* guards what follows */
  WsCond             cond;
  gboolean           started;
  gboolean           shutdown_begun;
  gboolean           closing_done;    /* step 1 of shutdown is over */
  guint              n_running_threads; /* workers, and a thread inside
                                          * ws_block_in_place () until its
                                          * poll returns */
  guint              n_shutdown_workers;
  GHashTable        *local_executors; /* GMainContext* -> WsLocalExecutor* */
  GPtrArray         *detached_executors; /* shut down, with tasks left (refs) */
};

/* Where the calling thread is, for spawn, wake and ws_handle_get_current. */
WsScheduler *ws_scheduler_get_current    (void);
WsWorker    *ws_worker_get_current       (void);
void         ws_scheduler_set_current    (WsScheduler *sched);

WsScheduler *ws_scheduler_new            (const WsSchedulerConfig *config);
WsScheduler *ws_scheduler_ref            (WsScheduler *self);
void         ws_scheduler_unref          (WsScheduler *self);
gboolean     ws_scheduler_start          (WsScheduler *self,
                                          GError     **error);
WsRawTask   *ws_scheduler_spawn          (WsScheduler *self,
                                          WsTaskFunc   func,
                                          gpointer     data,
                                          GDestroyNotify destroy,
                                          gboolean     join_interest);
WsRawTask   *ws_scheduler_spawn_blocking (WsScheduler *self,
                                          WsTaskFunc   func,
                                          gpointer     data,
                                          GDestroyNotify destroy,
                                          gboolean     join_interest);
WsRawTask   *ws_scheduler_spawn_local    (WsScheduler *self,
                                          GMainContext *context,
                                          WsTaskFunc   func,
                                          gpointer     data,
                                          GDestroyNotify destroy,
                                          gboolean     join_interest);
gboolean     ws_scheduler_shutdown       (WsScheduler *self,
                                          gint64       timeout_usec);
gboolean     ws_scheduler_is_shutdown    (WsScheduler *self);
gboolean     ws_scheduler_is_finished    (WsScheduler *self);
void         ws_scheduler_finish_from_last_thread (WsScheduler *self);
gboolean     ws_scheduler_set_hook       (WsScheduler *self,
                                          WsHookKind   kind,
                                          void       (*func) (gpointer),
                                          gpointer     data,
                                          GDestroyNotify destroy);
gboolean     ws_worker_hand_off_core     (GError     **error);
gint64       ws_scheduler_alive_tasks    (WsScheduler *self);

/* Spawning from a host (worker pool, blocking pool, local executor). */
WsRawTask   *ws_task_host_spawn          (WsTaskHost  *host,
                                          WsTaskFunc   func,
                                          gpointer     data,
                                          GDestroyNotify destroy,
                                          gboolean     join_interest);

/* ws-worker.c */
gpointer     ws_worker_thread_main       (gpointer     data);
void         ws_worker_schedule_local    (WsWorker    *worker,
                                          WsRawTask   *task,
                                          gboolean     is_yield);
void         ws_scheduler_notify_parked  (WsScheduler *self);
void         ws_worker_init_context      (WsContext   *cx,
                                          WsWorker    *worker);

/* Coop budget: TRUE if the poll may go on; FALSE means the budget of this
 * tick is spent, the task was woken and must return PENDING. */
gboolean     ws_context_poll_proceed     (WsContext   *cx);

G_END_DECLS
