/* ws-runtime-core-struct-private.h: what a WsRuntimeCore holds
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Only the core includes this header: the face reaches the runtime
 * through ws-runtime-core-private.h, where the struct is opaque, and
 * tools/check-layers fails if the face's door reaches this header or a
 * host's (doc/architecture.md, "Modules").
 */

#pragma once

#include <glib.h>

#include "ws-blocking-pool-private.h"
#include "ws-local-executor-private.h"
#include "ws-lock-private.h"
#include "ws-runtime-core-private.h"
#include "ws-runtime-ref-private.h"
#include "ws-worker-pool-private.h"

G_BEGIN_DECLS

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

G_END_DECLS
