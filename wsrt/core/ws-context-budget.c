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

  /* Out of budget: yield. The poll's transition to idle wakes the task
   * (ws-task-state-private.h), which goes to the back of the queue. */
  if (cx->worker != NULL)
    WS_STAT_INC (cx->worker, forced_yields);
  cx->yielded = TRUE;
  return FALSE;
}
