/* ws-context-budget.c: the cooperative budget of a poll
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * See ws-context-budget-private.h.
 */

#include "config.h"

#include "ws-context-budget-private.h"
#include "ws-worker-private.h"

gboolean
ws_context_poll_proceed (WsContext *cx)
{
  if (cx->budget > 0)
    {
      cx->budget--;
      return TRUE;
    }

  /* Out of budget: yield. Wake ourselves (the task is running, so this
   * only sets NOTIFIED) and go to the back of the queue. */
  if (cx->worker != NULL)
    WS_STAT_INC (cx->worker, forced_yields);
  cx->yielded = TRUE;
  ws_raw_task_wake_by_ref (cx->task);
  return FALSE;
}
