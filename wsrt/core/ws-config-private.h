/* ws-config-private.h: the settings of one runtime, and its hooks
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The runtime (ws-runtime-core.c) owns one WsConfig; the worker pool, the
 * blocking pool and the local executors read it through a pointer. The
 * scalar settings are fixed before the first thread starts. Hooks are set
 * until the first worker starts and read without a lock afterwards (the
 * thread creation orders the writes before every read); they are
 * released once no thread of the runtime runs (doc/architecture.md,
 * "Shutdown").
 */

#pragma once

#include <glib.h>

#include "ws-frame-slice-private.h"

G_BEGIN_DECLS

/* A C callback run on runtime threads (doc/architecture.md, "Rules: hooks"). */
typedef struct
{
  void           (*func) (gpointer user_data);
  gpointer         data;
  GDestroyNotify   destroy;
} WsHook;

typedef enum
{
  WS_HOOK_THREAD_START,
  WS_HOOK_THREAD_STOP,
  WS_HOOK_BEFORE_PARK,
  WS_HOOK_AFTER_UNPARK,
  WS_N_HOOKS
} WsHookKind;

/* The default of local-slice: a local dispatch returns to the main loop
 * after this long, the frame budget (ws-frame-slice-private.h). */
#define WS_LOCAL_SLICE_USEC WS_FRAME_SLICE_USEC

typedef struct
{
  guint    n_workers;               /* 0: one per processor */
  gchar   *thread_name_prefix;
  guint    global_queue_interval;
  guint    event_interval;
  gboolean disable_lifo_slot;
  guint    budget;
  guint    max_blocking_threads;
  gint64   blocking_keep_alive;     /* microseconds */
  gint64   local_slice;             /* microseconds per local dispatch */
  guint    fiber_stack_size;        /* bytes, usable, of a fiber's stack */
  guint    max_fiber_stacks;        /* stacks mapped at once; 0: automatic */
  WsHook   hooks[WS_N_HOOKS];
} WsConfig;

static inline void
ws_hook_run (const WsHook *hook)
{
  if (hook->func != NULL)
    hook->func (hook->data);
}

void ws_config_init_from  (WsConfig       *self,
                           const WsConfig *settings);
void ws_config_take_hooks (WsConfig       *self,
                           WsHook          out[WS_N_HOOKS]);
void ws_config_clear      (WsConfig       *self);
void ws_hooks_release     (WsHook          hooks[WS_N_HOOKS]);

G_END_DECLS
