/* ws-task-private.h
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "ws-task.h"
#include "ws-core-private.h"

G_BEGIN_DECLS

/* Takes the join reference of @raw. */
WsTask  *ws_task_new_for_raw (WsRawTask *raw);

/* Wakes @waker (taking a reference) when the task ends; at once if it has. */
void      ws_task_add_waiter  (WsTask    *self,
                               WsWaker   *waker);

/* Stores a heap copy of @value in @result (a payload the core cannot
 * look into). */
void      ws_result_set_value (WsResult     *result,
                               const GValue *value);

/* The outcome of an ended task as TRUE, or FALSE with its error. */
gboolean  ws_task_get_outcome (WsTask    *self,
                               GError   **error);

G_END_DECLS
