/* ws-debug.c: reading WS_DEBUG and its thresholds
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * See ws-debug-private.h. A value that does not parse is reported and
 * replaced by the default, as a malformed G_DEBUG key is ignored: a
 * debugging switch never stops a program.
 */

#include "config.h"

#include <stdlib.h>

#include "ws-debug-private.h"

_Atomic guint ws_debug_flags_;
/* Relaxed, like the flags: written once by ws_debug_init (). */
static _Atomic gint64 slow_poll_usec = WS_DEBUG_SLOW_POLL_DEFAULT_MS * 1000;
static _Atomic gint64 stuck_usec = WS_DEBUG_STUCK_DEFAULT_S * G_USEC_PER_SEC;

static const GDebugKey debug_keys[] = {
  { "slow-poll", WS_DEBUG_SLOW_POLL },
  { "stuck", WS_DEBUG_STUCK },
};

/* @name's value as a positive number of @unit microseconds, or @fallback
 * with a warning. */
static gint64
read_threshold (const char *name,
                double      unit,
                const char *unit_name,
                gint64      fallback)
{
  const char *text = g_getenv (name);
  char *end = NULL;
  double value;

  if (text == NULL)
    return fallback;
  value = g_ascii_strtod (text, &end);
  if (end == text || *end != '\0' || !(value > 0) || value * unit > (double) G_MAXINT64 / 2)
    {
      g_warning ("wsrt: %s=%s is not a positive number of %s; using %g", name, text,
                 unit_name, fallback / unit);
      return fallback;
    }
  return MAX ((gint64) (value * unit), 1);
}

void
ws_debug_init (void)
{
  static gsize done;

  if (g_once_init_enter (&done))
    {
      const char *env = g_getenv ("WS_DEBUG");
      guint flags = 0;

      if (env != NULL)
        flags = g_parse_debug_string (env, debug_keys, G_N_ELEMENTS (debug_keys));
      if (flags & WS_DEBUG_SLOW_POLL)
        atomic_store_explicit (&slow_poll_usec,
                               read_threshold ("WS_DEBUG_SLOW_POLL_MS", 1000, "milliseconds",
                                               WS_DEBUG_SLOW_POLL_DEFAULT_MS * 1000),
                               memory_order_relaxed);
      if (flags & WS_DEBUG_STUCK)
        atomic_store_explicit (&stuck_usec,
                               read_threshold ("WS_DEBUG_STUCK_S", G_USEC_PER_SEC, "seconds",
                                               WS_DEBUG_STUCK_DEFAULT_S * G_USEC_PER_SEC),
                               memory_order_relaxed);
      /* After the thresholds: a thread that sees a flag reads a threshold
       * set before it (the thread creation, or g_once_init_enter's
       * acquire on another runtime's first call, orders both). */
      atomic_store_explicit (&ws_debug_flags_, flags, memory_order_relaxed);
      g_once_init_leave (&done, 1);
    }
}

gint64
ws_debug_slow_poll_usec (void)
{
  return atomic_load_explicit (&slow_poll_usec, memory_order_relaxed);
}

gint64
ws_debug_stuck_usec (void)
{
  return atomic_load_explicit (&stuck_usec, memory_order_relaxed);
}
