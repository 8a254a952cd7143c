/* ws-fiber-overflow-private.h: a message naming the fiber whose stack overflowed
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The protocol is at the top of ws-fiber-overflow.c.
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Before a thread first resumes a fiber: installs the process's SIGSEGV
 * handler the first time, and gives the calling thread an alternate
 * signal stack if it has none. Cheap after the first call on a thread. */
void ws_fiber_overflow_prepare_thread (void);

/* Test hook: whether this process has the handler installed. */
gboolean ws_fiber_overflow_is_installed (void);

G_END_DECLS
