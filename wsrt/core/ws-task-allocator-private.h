/* ws-task-allocator-private.h: per-thread caches of task memory
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Blocks of one size, a task's: the allocator knows nothing of a task
 * but that size, which its one caller (ws_raw_task_new) passes, so it
 * sits below ws-raw-task and includes none of it. And large blocks, of
 * WS_TASK_ALLOCATOR_LARGE bytes, for what the face allocates with each
 * task of a kind (a fiber, ws-fiber.c): freed with
 * ws_task_allocator_free_large (), on any thread. And small blocks, of
 * WS_TASK_ALLOCATOR_SMALL bytes, for the face's small objects that come
 * and go with tasks (a WsOneshot, ws-oneshot.c): freed with
 * ws_task_allocator_free_small (), on any thread.
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The size of a large block, and of a small one. */
#define WS_TASK_ALLOCATOR_LARGE 288
#define WS_TASK_ALLOCATOR_SMALL 64
/* The size of a tailed task's block: a task and a tail of up to 64 bytes
 * (ws_raw_task_new_with_tail). */
#define WS_TASK_ALLOCATOR_TAILED 192

gpointer ws_task_allocator_alloc0       (gsize     size);
void     ws_task_allocator_free         (gpointer  block);
/* @size bytes zeroed, at most WS_TASK_ALLOCATOR_LARGE. */
gpointer ws_task_allocator_alloc0_large (gsize     size);
void     ws_task_allocator_free_large   (gpointer  block);
/* @size bytes zeroed, at most WS_TASK_ALLOCATOR_SMALL. */
gpointer ws_task_allocator_alloc0_small (gsize     size);
void     ws_task_allocator_free_small   (gpointer  block);
/* @size bytes zeroed, at most WS_TASK_ALLOCATOR_TAILED. */
gpointer ws_task_allocator_alloc0_tailed (gsize    size);
void     ws_task_allocator_free_tailed  (gpointer  block);

/* Test hook: blocks cached by this thread, and in the shared depot. */
void     ws_task_allocator_get_n_cached (gsize    *n_thread,
                                         gsize    *n_depot);

G_END_DECLS
