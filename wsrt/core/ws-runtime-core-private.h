/* ws-runtime-core-private.h: one runtime: the worker pool, the blocking
 * pool and the local executors side by side
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The top of the core, and the only module the GObject face calls for
 * spawn and shutdown (WsRuntime owns one). See ws-runtime-core.c for the
 * order in which shutdown stops the three parts.
 *
 * A WsRuntimeCore is opaque here, as GMainContext is outside gmain.c: the
 * struct is in ws-runtime-core-struct-private.h, which only the core
 * includes, so that the face (which reaches this header through its door,
 * ws-core-private.h) cannot walk into the pools. tools/check-layers fails
 * if the door reaches a host's header.
 */

#pragma once

#include <glib.h>

#include "ws-config-private.h"
#include "ws-fiber-stack-private.h"
#include "ws-offload-private.h"
#include "ws-raw-task-private.h"

G_BEGIN_DECLS

typedef struct _WsRuntimeCore WsRuntimeCore;

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
WsRawTask     *ws_runtime_core_spawn_with_state (WsRuntimeCore *self,
                                                 WsTaskFunc     func,
                                                 gconstpointer  state,
                                                 gsize          state_size,
                                                 gsize          tail_size,
                                                 GDestroyNotify clear,
                                                 gboolean       join_interest);
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

/* The configuration the runtime runs with (n_workers resolved), for as
 * long as the caller holds the runtime. */
const WsConfig   *ws_runtime_core_get_config       (WsRuntimeCore *self);
/* The stacks of this runtime's fibers (ws-fiber-stack.c, "The pool"). */
WsFiberStackPool *ws_runtime_core_get_fiber_stacks (WsRuntimeCore *self);

/* The runtime whose code runs on this thread (a worker, a blocking
 * thread, a local dispatch), or NULL. */
WsRuntimeCore *ws_runtime_core_get_current       (void);
/* The context that the timers of a blocking job go to: the first
 * worker's, iterated until shutdown (ws-timer-driver.c). Starts the
 * workers if they have not started (ws-worker-pool.c, "Lazy start"). */
GMainContext  *ws_runtime_core_get_timer_context (WsRuntimeCore *self);
/* The runtime's syscall offload, made on first use. */
WsOffload     *ws_runtime_core_get_offload       (WsRuntimeCore *self);
/* The offload if a call has made it, else NULL; never makes it. */
WsOffload     *ws_runtime_core_peek_offload      (WsRuntimeCore *self);

G_END_DECLS
