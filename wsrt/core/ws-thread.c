/* ws-thread.c: everything the core keeps per thread, in one place
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "ws-thread-private.h"
#include "ws-owed-private.h"

_Thread_local WsThread ws_thread WS_TLS_INITIAL_EXEC;

void
ws_thread_drop_adopted_context (void)
{
  GMainContext *context = g_steal_pointer (&ws_thread.adopted_context);

  if (context == NULL)
    return;
  /* GIO calls made in the rest of the poll complete here: this thread
   * stays until they have (ws-owed.c). */
  (void) ws_owed_drain (context, -1);
  g_main_context_pop_thread_default (context);
  g_main_context_unref (context);
}
