/* ws-runtime-private.h: what the face's other modules need of WsRuntime
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "ws-runtime.h"
#include "ws-core-private.h"

G_BEGIN_DECLS

/* The core of @self, made on first use with its configuration. */
WsRuntimeCore *ws_runtime_get_core (WsRuntime *self);

G_END_DECLS
