/* ws-task-allocator-private.h: per-thread caches of task memory
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Blocks of one size, a task's: the allocator knows nothing of a task
 * but that size, which its one caller (ws_raw_task_new) passes, so it
 * sits below ws-raw-task and includes none of it. Two more classes for
 * a task with a tail of the spawner's in the same block
 * (ws_raw_task_new_with_tail): tailed blocks, of WS_TASK_ALLOCATOR_TAILED
 * bytes, for a small state, and large ones, of WS_TASK_ALLOCATOR_LARGE
 * bytes, for a larger one (a fiber's, ws-fiber.c). And small blocks, of
 * WS_TASK_ALLOCATOR_SMALL bytes, for the face's small objects that come
 * and go with tasks (a WsOneshot, ws-oneshot.c). Each class is freed
 * with its own function, on any thread.
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The size of a small block. */
#define WS_TASK_ALLOCATOR_SMALL 64
/* The size of a tailed task's block: a task and a tail of up to 64 bytes
 * (ws_raw_task_new_with_tail). */
#define WS_TASK_ALLOCATOR_TAILED 192
/* The size of a large block: a task and a tail of up to 288 bytes, a
 * fiber's (ws-fiber.c). */
#define WS_TASK_ALLOCATOR_LARGE 416

gpointer ws_task_allocator_alloc0       (gsize     size);
void     ws_task_allocator_free         (gpointer  block);
/* Room for @size bytes, at most WS_TASK_ALLOCATOR_LARGE, of which the
 * first @n_zero are zeroed. */
gpointer ws_task_allocator_alloc_large  (gsize     size,
                                         gsize     n_zero);
void     ws_task_allocator_free_large   (gpointer  block);
/* @size bytes zeroed, at most WS_TASK_ALLOCATOR_SMALL. */
gpointer ws_task_allocator_alloc0_small (gsize     size);
void     ws_task_allocator_free_small   (gpointer  block);
/* As large blocks, at most WS_TASK_ALLOCATOR_TAILED. */
gpointer ws_task_allocator_alloc_tailed (gsize     size,
                                         gsize     n_zero);
void     ws_task_allocator_free_tailed  (gpointer  block);

/* Test hook: blocks cached by this thread, and in the shared depot. */
void     ws_task_allocator_get_n_cached (gsize    *n_thread,
                                         gsize    *n_depot);

G_END_DECLS
