/* ws-timer-driver-private.h: timers of a GMainContext on a timing wheel
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The protocol is in the opening comment of ws-timer-driver.c.
 */

#pragma once

#include <stdatomic.h>

#include <glib.h>

#include "ws-types.h"
#include "ws-timer-wheel-private.h"

G_BEGIN_DECLS

typedef struct _WsTimerDriver WsTimerDriver;

/* One timer, embedded in its owner (a WsSleep). Once the owner is bound
 * to a driver, both fields are written only under the driver's lock, and
 * waker != NULL exactly while the entry is linked. The waker is a polling
 * task's or any other (D7 in ws-timer-driver.c); it is an atomic so that
 * a disarm may find the slot empty without the lock (D10). */
typedef struct
{
  WsTimerEntry       entry;
  WsWaker *_Atomic   waker;
} WsTimer;

static inline void
ws_timer_init (WsTimer *timer)
{
  ws_timer_entry_init (&timer->entry);
  atomic_init (&timer->waker, NULL);
}

WsTimerDriver *ws_timer_driver_ref_for_current_thread (void);
WsTimerDriver *ws_timer_driver_ref_for_context        (GMainContext          *context);
void           ws_timer_driver_unref                  (WsTimerDriver         *self);
gboolean       ws_timer_driver_arm                    (WsTimerDriver         *self,
                                                       WsTimer               *timer,
                                                       const _Atomic gint64  *deadline,
                                                       gint64                 now,
                                                       WsContext             *cx);
gboolean       ws_timer_driver_arm_waker              (WsTimerDriver         *self,
                                                       WsTimer               *timer,
                                                       const _Atomic gint64  *deadline,
                                                       gint64                 now,
                                                       WsWaker               *waker);
void           ws_timer_driver_reset                  (WsTimerDriver         *self,
                                                       WsTimer               *timer,
                                                       const _Atomic gint64  *deadline);
void           ws_timer_driver_disarm                 (WsTimerDriver         *self,
                                                       WsTimer               *timer);
gboolean       ws_timer_driver_disarm_waker           (WsTimerDriver         *self,
                                                       WsTimer               *timer,
                                                       WsWaker               *waker);
gsize          ws_timer_driver_get_n_timers           (WsTimerDriver         *self);

G_END_DECLS
