/* ws-task-allocator-private.h: per-thread caches of task memory
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "ws-raw-task-private.h"

G_BEGIN_DECLS

WsRawTask *ws_task_allocator_alloc0 (void);
void       ws_task_allocator_free   (WsRawTask *task);

/* Test hook: tasks cached by this thread, and in the shared depot. */
void       ws_task_allocator_get_n_cached (gsize *n_thread,
                                           gsize *n_depot);

G_END_DECLS
