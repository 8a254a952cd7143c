/* ws-async-op-private.h: what the fibers' GIO await needs of WsAsyncOp
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "ws-async-op.h"

G_BEGIN_DECLS

/* Blocks until the call's result is published (ws-async-op.c says how);
 * at once if the call was never started. */
void ws_async_op_wait_published (WsAsyncOp *self);

G_END_DECLS
