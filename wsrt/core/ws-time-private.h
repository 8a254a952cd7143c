/* ws-time-private.h: deadlines on the monotonic clock
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Every deadline wsrt computes is "now plus a duration" in
 * g_get_monotonic_time () units, and callers pass G_MAXINT64 to mean
 * "for ever" (a sleep, a shutdown timeout). Signed overflow there is
 * undefined behaviour and, in practice, a deadline in the past: so the
 * sum saturates at G_MAXINT64, a deadline that never comes.
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* @now plus @duration_usec (clamped at 0 from below), saturating at
 * G_MAXINT64. */
static inline gint64
ws_time_deadline_after (gint64 now,
                        gint64 duration_usec)
{
  if (duration_usec <= 0)
    return now;
  if (now > 0 && duration_usec > G_MAXINT64 - now)
    return G_MAXINT64;
  return now + duration_usec;
}

G_END_DECLS
