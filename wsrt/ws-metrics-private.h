/* ws-metrics-private.h
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "ws-metrics.h"
#include "ws-core-private.h"

G_BEGIN_DECLS

WsMetrics *ws_metrics_new_snapshot (WsRuntimeCore *core);

G_END_DECLS
