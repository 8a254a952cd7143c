/* ws-debug-private.h: the diagnostics that WS_DEBUG switches on
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Off by default. The environment is read once per process, when the
 * first runtime is made (ws_debug_init ()), as GLib reads G_DEBUG:
 *
 *   WS_DEBUG=slow-poll,stuck   which diagnostics (g_parse_debug_string:
 *                              "all", and "help" lists the keys)
 *   WS_DEBUG_SLOW_POLL_MS=N    slow-poll's threshold, in milliseconds
 *   WS_DEBUG_STUCK_S=S         stuck's threshold, in seconds (a decimal)
 *
 * slow-poll: a poll (or a fiber's slice) that ran longer than the
 * threshold on a worker is reported once per task (ws-raw-task.c).
 * stuck: a runtime-owned thread reports the tasks pending longer than the
 * threshold, with what they last awaited (ws-runtime-core.c).
 *
 * The cost when off: the poll path reads ws_debug_get_flags () (a relaxed
 * load of a global that is written once) and branches on it; no clock is
 * read and nothing is recorded. doc/getting-started-c.md, "Debugging
 * stuck work", is the user's side.
 */

#pragma once

#include <stdatomic.h>

#include <glib.h>

G_BEGIN_DECLS

typedef enum
{
  WS_DEBUG_SLOW_POLL = 1 << 0,
  WS_DEBUG_STUCK     = 1 << 1,
} WsDebugFlags;

#define WS_DEBUG_SLOW_POLL_DEFAULT_MS 50
#define WS_DEBUG_STUCK_DEFAULT_S      10

extern _Atomic guint ws_debug_flags_;

void   ws_debug_init             (void);
gint64 ws_debug_slow_poll_usec   (void);
gint64 ws_debug_stuck_usec       (void);

/* Relaxed: written once, before the threads of the first runtime start
 * (thread creation orders it before their reads); a thread that reads it
 * early sees 0 and records nothing, which is harmless. */
static inline guint
ws_debug_get_flags (void)
{
  return atomic_load_explicit (&ws_debug_flags_, memory_order_relaxed);
}

G_END_DECLS
