/* ws-context-private.h: the check every call taking a WsContext makes
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "ws-context.h"
#include "ws-core-private.h"

G_BEGIN_DECLS

/* Whether @cx may be used by @strfunc: set, and inside the poll that
 * received it (the poller sets the context's task for the poll's length
 * only, ws-raw-task.c). Otherwise logs a critical naming @strfunc and,
 * for a context kept past its poll, the rule and what to keep instead. */
gboolean ws_context_check_in_poll (WsContext  *cx,
                                   const char *strfunc);

/* The refusal of a call made with a context that is not in a poll: the
 * g_return_val_if_fail () of a WsContext argument. */
#define ws_context_return_val_if_not_in_poll(cx, val) \
  G_STMT_START { \
    if G_UNLIKELY (!ws_context_check_in_poll ((cx), G_STRFUNC)) \
      return (val); \
  } G_STMT_END

#define ws_context_return_if_not_in_poll(cx) \
  G_STMT_START { \
    if G_UNLIKELY (!ws_context_check_in_poll ((cx), G_STRFUNC)) \
      return; \
  } G_STMT_END

G_END_DECLS
