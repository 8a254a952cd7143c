/* ws-context-budget-private.h: the cooperative budget of a poll
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Each poll gets a budget of awaitable operations (WsRuntime:budget). An
 * awaitable that is ready spends one unit; with the budget spent it
 * answers "not ready" once and marks the poll as a yield (the poll's
 * transition to idle then wakes the task, ws-task-state-private.h), so
 * that a task whose awaitables are always ready still goes to the back of
 * the queue and the others get their turn (tokio's coop module).
 */

#pragma once

#include "ws-raw-task-private.h"

G_BEGIN_DECLS

/* TRUE if the poll may go on; FALSE means the budget of this poll is
 * spent, the poll is marked as a yield and must return PENDING. */
gboolean ws_context_poll_proceed (WsContext *cx);

G_END_DECLS
