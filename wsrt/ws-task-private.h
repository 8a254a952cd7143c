/* ws-task-private.h
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "ws-task.h"
#include "ws-raw-task-private.h"

G_BEGIN_DECLS

/* Takes the join reference of @raw. */
WsTask *ws_task_new_for_raw (WsRawTask *raw);

G_END_DECLS
