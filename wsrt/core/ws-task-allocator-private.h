/* ws-task-allocator-private.h: per-thread caches of task memory
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Blocks of one size, a task's: the allocator knows nothing of a task
 * but that size, which its one caller (ws_raw_task_new) passes, so it
 * sits below ws-raw-task and includes none of it.
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

gpointer ws_task_allocator_alloc0       (gsize     size);
void     ws_task_allocator_free         (gpointer  block);

/* Test hook: blocks cached by this thread, and in the shared depot. */
void     ws_task_allocator_get_n_cached (gsize    *n_thread,
                                         gsize    *n_depot);

G_END_DECLS
