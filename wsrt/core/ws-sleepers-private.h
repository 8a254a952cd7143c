/* ws-sleepers-private.h: which workers sleep, how many search
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
} WsSleepers;

void     ws_sleepers_init                      (WsSleepers   *self,
                                                guint         n_workers);
void     ws_sleepers_clear                     (WsSleepers   *self);
gboolean ws_sleepers_transition_to_searching   (WsSleepers   *self);
gboolean ws_sleepers_transition_from_searching (WsSleepers   *self);
gboolean ws_sleepers_transition_to_parked      (WsSleepers   *self,
                                                guint         worker,
                                                gboolean      is_searching);
gint     ws_sleepers_worker_to_notify          (WsSleepers   *self);
gint     ws_sleepers_worker_to_notify_after_sc (WsSleepers   *self);
gboolean ws_sleepers_is_parked                 (WsSleepers   *self,
                                                guint         worker);
gboolean ws_sleepers_unpark_worker_by_id       (WsSleepers   *self,
                                                guint         worker);
guint    ws_sleepers_n_searching               (WsSleepers   *self);

G_END_DECLS
