/* ws-worker-pool-private.h: the worker pool
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The pool of worker threads that steal work from each other: the
 * workers, the injection queue, the sleepers, the task registry of the
 * pool's tasks, and the pool's part of the shutdown protocol (written at
 * the top of ws-worker-pool.c). It knows neither the blocking pool nor
 * the local executors: the runtime (ws-runtime-core.c) holds all three
 * side by side and tells the pool, through WsThreadHandOff, what to do
 * with a thread that gave its worker away in ws_block_in_place ().
 */

#pragma once

#include <stdatomic.h>

#include <glib.h>

#include "ws-config-private.h"
#include "ws-inject-queue-private.h"
#include "ws-lock-private.h"
#include "ws-raw-task-private.h"
#include "ws-runtime-ref-private.h"
#include "ws-sleepers-private.h"
#include "ws-task-registry-private.h"

G_BEGIN_DECLS

typedef struct _WsWorkerPool WsWorkerPool;

/* What becomes of a thread that gave its worker's core away
 * (ws_block_in_place ()) once its poll returns: @adopt returns TRUE if
 * another part of the runtime (the blocking pool) takes the thread, and
 * then the thread calls @run until that part lets it go. */
typedef struct
{
  gboolean (*adopt) (gpointer data);
  void     (*run)   (gpointer data);
  gpointer   data;
} WsThreadHandOff;

struct _WsWorkerPool
{
  WsTaskHost         host;            /* first: tasks point here */
  const WsConfig    *config;          /* the runtime's */
  WsRuntimeRef      *runtime;         /* the count a task holds (H) */
  WsThreadHandOff    hand_off;
  guint              n_workers;
  WsWorker         **workers;
  _Alignas (64) WsInjectQueue inject;
  WsSleepers         sleepers;
  WsTaskRegistry     registry;

  _Atomic gboolean   shutdown;        /* set once, before workers are woken */
  _Atomic gboolean   started_flag;    /* lock-free check for lazy start */
  _Atomic gboolean   hooks_fixed;     /* a thread of the runtime may run them */

  WsLock             sweep_lock;      /* one last sweep at a time */
  WsLock             lock;            /* guards what follows */
  WsCond             cond;
  gboolean           started;
  gboolean           shutdown_begun;
  guint              n_running_threads; /* workers, and a thread inside
                                          * ws_block_in_place () until its
                                          * poll returns */
  guint              n_shutdown_workers;
  gboolean           last_sweep_pending; /* the last pool thread has not
                                          * swept yet */
  gboolean           draining;        /* the drain token: a thread
                                       * dispatches the workers' contexts */
};

WsWorkerPool *ws_worker_pool_new               (const WsConfig        *config,
                                                WsRuntimeRef          *runtime,
                                                const WsThreadHandOff *hand_off);
void          ws_worker_pool_free              (WsWorkerPool          *self);
gboolean      ws_worker_pool_start             (WsWorkerPool          *self,
                                                GError               **error);
gboolean      ws_worker_pool_has_started       (WsWorkerPool          *self);
void          ws_worker_pool_fix_hooks         (WsWorkerPool          *self);
gboolean      ws_worker_pool_run_unstarted     (WsWorkerPool          *self,
                                                void                 (*func) (gpointer),
                                                gpointer               data);
WsRawTask    *ws_worker_pool_spawn             (WsWorkerPool          *self,
                                                WsTaskFunc             func,
                                                gpointer               data,
                                                GDestroyNotify         destroy,
                                                gboolean               join_interest,
                                                gsize                  tail_size,
                                                gconstpointer          state,
                                                gsize                  state_size);
void          ws_worker_pool_begin_shutdown    (WsWorkerPool          *self);
gboolean      ws_worker_pool_stop              (WsWorkerPool          *self,
                                                gint64                 deadline,
                                                gboolean               wait_owed,
                                                gboolean              *drained);
gboolean      ws_worker_pool_dispatch_contexts (WsWorkerPool          *self,
                                                gint64                 deadline,
                                                gboolean               wait_owed);
gboolean      ws_worker_pool_is_shutdown       (WsWorkerPool          *self);
gint64        ws_worker_pool_alive_tasks       (WsWorkerPool          *self);
GMainContext *ws_worker_pool_get_context       (WsWorkerPool          *self,
                                                guint                  index);

/* For the workers (ws-worker.c). */
void          ws_worker_pool_notify_parked    (WsWorkerPool *self);
void          ws_worker_pool_thread_stopped   (WsWorkerPool *self);
gboolean      ws_worker_pool_drain            (WsWorkerPool *self,
                                               gboolean      seal);

G_END_DECLS
