/* ws-runtime-core-private.h: one runtime: the worker pool, the blocking
 * pool and the local executors side by side
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The top of the core, and the only module the GObject face calls for
 * spawn and shutdown (WsRuntime owns one). See ws-runtime-core.c for the
 * order in which shutdown stops the three parts.
 */

#pragma once

#include <glib.h>

#include "ws-blocking-pool-private.h"
#include "ws-config-private.h"
#include "ws-fiber-stack-private.h"
#include "ws-local-executor-private.h"
#include "ws-offload-private.h"
#include "ws-runtime-ref-private.h"
#include "ws-worker-pool-private.h"

G_BEGIN_DECLS

typedef struct _WsRuntimeCore WsRuntimeCore;

struct _WsRuntimeCore
{
  /* Every task holds it (through its host), so it is written on every
   * spawn and every free: on a cache line of its own, away from the
   * pointers every worker reads. */
  _Alignas (64) WsRuntimeRef ref;
  _Alignas (64) WsConfig     config;
  WsWorkerPool      *pool;
  WsBlockingPool    *blocking;
  WsLocalExecutors  *locals;
  /* The stacks of this runtime's fibers (ws-fiber-stack.c, "The pool"),
   * emptied at the last unref. */
  WsFiberStackPool  *fiber_stacks;
  /* The fibers' syscall offload (ws-offload.c), made at its first call
   * and freed at the last unref. */
  _Atomic (WsOffload *) offload;

  _Atomic gboolean   finished;        /* a shutdown call saw every task end */
  WsLock             lock;            /* guards what follows */
  WsCond             cond;
  gboolean           shutdown_begun;
  gboolean           closing_done;    /* step 1 of shutdown is over */

  /* Sysprof's counters (ws-trace-private.h): the sampler's id (0 unless
   * recorded), and what the last sample read, the sampler's alone. */
  guint              trace_sampler;
  gint64             trace_busy_usec;
  gint64             trace_time;
  /* WS_DEBUG=stuck's thread (ws-runtime-core.c, "The stuck watchdog"),
   * or NULL; it stops when watchdog_stop is set. */
  GThread           *watchdog;
  gboolean           watchdog_stop;
  WsCond             watchdog_cond;
};

WsRuntimeCore *ws_runtime_core_new             (const WsConfig *settings);
WsRuntimeCore *ws_runtime_core_ref             (WsRuntimeCore  *self);
void           ws_runtime_core_unref           (WsRuntimeCore  *self);
gboolean       ws_runtime_core_start           (WsRuntimeCore  *self,
                                                GError        **error);
gboolean       ws_runtime_core_set_hook        (WsRuntimeCore  *self,
                                                WsHookKind      kind,
                                                void          (*func) (gpointer),
                                                gpointer        data,
                                                GDestroyNotify  destroy);
WsRawTask     *ws_runtime_core_spawn           (WsRuntimeCore  *self,
                                                WsTaskFunc      func,
                                                gpointer        data,
                                                GDestroyNotify  destroy,
                                                gboolean        join_interest);
WsRawTask     *ws_runtime_core_spawn_with_tail (WsRuntimeCore  *self,
                                                WsTaskFunc      func,
                                                gpointer        data,
                                                GDestroyNotify  destroy,
                                                gsize           tail_size);
WsRawTask     *ws_runtime_core_spawn_blocking  (WsRuntimeCore  *self,
                                                WsTaskFunc      func,
                                                gpointer        data,
                                                GDestroyNotify  destroy,
                                                gboolean        join_interest);
WsRawTask     *ws_runtime_core_spawn_local     (WsRuntimeCore  *self,
                                                GMainContext   *context,
                                                WsTaskFunc      func,
                                                gpointer        data,
                                                GDestroyNotify  destroy,
                                                gboolean        join_interest);
gboolean       ws_runtime_core_shutdown        (WsRuntimeCore  *self,
                                                gint64          timeout_usec);
guint          ws_runtime_core_dump_pending    (WsRuntimeCore  *self,
                                                gint64          min_age_usec,
                                                gboolean        mark,
                                                GString        *out);
gboolean       ws_runtime_core_shutdown_full   (WsRuntimeCore  *self,
                                                gint64          timeout_usec,
                                                gboolean        wait_owed);
gboolean       ws_runtime_core_is_shutdown     (WsRuntimeCore  *self);
gboolean       ws_runtime_core_is_finished     (WsRuntimeCore  *self);
gint64         ws_runtime_core_alive_tasks     (WsRuntimeCore  *self);
guint64        ws_runtime_core_spawned_tasks   (WsRuntimeCore  *self);

/* The runtime whose code runs on this thread (a worker, a blocking
 * thread, a local dispatch), or NULL. */
WsRuntimeCore *ws_runtime_core_get_current       (void);
/* The context that the timers of a blocking job go to: the first
 * worker's, iterated until shutdown (ws-timer-driver.c). Starts the
 * workers if they have not started (ws-worker-pool.c, "Lazy start"). */
GMainContext  *ws_runtime_core_get_timer_context (WsRuntimeCore *self);
/* The runtime's syscall offload, made on first use. */
WsOffload     *ws_runtime_core_get_offload       (WsRuntimeCore *self);

G_END_DECLS
