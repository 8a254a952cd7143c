/* ws-handle-private.h
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "ws-handle.h"
#include "ws-core-private.h"

G_BEGIN_DECLS

WsHandle      *ws_handle_new_for_core (WsRuntimeCore *core);

G_END_DECLS
