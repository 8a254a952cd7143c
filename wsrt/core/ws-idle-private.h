/* ws-idle-private.h: which workers sleep, how many search
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <stdatomic.h>

#include "ws-lock-private.h"

G_BEGIN_DECLS

typedef struct
{
  /* Low 16 bits: workers searching for work. High 16: workers unparked. */
  _Atomic guint32   state;
  guint             n_workers;
  WsLock            lock;
  guint            *sleepers;      /* a stack, under lock */
  guint             n_sleepers;
  _Atomic gboolean *is_sleeping;   /* per worker; written under lock */
} WsIdle;

void     ws_idle_init                 (WsIdle   *self,
                                       guint     n_workers);
void     ws_idle_clear                (WsIdle   *self);
gboolean ws_idle_transition_to_searching   (WsIdle *self);
gboolean ws_idle_transition_from_searching (WsIdle *self);
gboolean ws_idle_transition_to_parked (WsIdle   *self,
                                       guint     worker,
                                       gboolean  is_searching);
gint     ws_idle_worker_to_notify     (WsIdle   *self);
gboolean ws_idle_is_parked            (WsIdle   *self,
                                       guint     worker);
gboolean ws_idle_unpark_worker_by_id  (WsIdle   *self,
                                       guint     worker);
guint    ws_idle_n_searching          (WsIdle   *self);

G_END_DECLS
