/* ws-types.h: basic types shared by every wsrt header
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#if !defined(WSRT_INSIDE) && !defined(WSRT_COMPILATION)
# error "Only <wsrt.h> can be included directly."
#endif

/* GLib alone: the scheduler core includes this header and does not use
 * GObject. Headers that need GObject or GIO include them themselves. */
#include <glib.h>

/* WS_AVAILABLE_IN_ALL and the other availability macros: every public
 * symbol is marked; everything else in libwsrt is hidden. */
#include "ws-version-macros.h"

G_BEGIN_DECLS

/**
 * WsPoll:
 * @WS_POLL_READY: the task is done; its result, if any, has been set with
 *   one of the `ws_context_return_*()` functions
 * @WS_POLL_PENDING: the task is not done; it has arranged to be woken
 *   through the waker of its [struct@Ws.Context]
 *
 * What a [callback@Ws.TaskFunc] returns from one poll.
 *
 * No value is 0: a poll function that returns anything else (a binding
 * returns 0 for a callback that threw, or returned nothing) fails its
 * task with %WS_ERROR_FAILED instead of ending it as if it had succeeded.
 */
typedef enum
{
  WS_POLL_READY = 1,
  WS_POLL_PENDING = 2,
} WsPoll;

typedef struct _WsContext WsContext;
typedef struct _WsWaker   WsWaker;
typedef struct _WsMetrics WsMetrics;

/**
 * WsTaskFunc:
 * @context: the context of this poll, valid only until the function returns
 * @user_data: the data given at spawn time
 *
 * The body of a task: one poll of a future.
 *
 * A run-to-completion closure returns %WS_POLL_READY the first time. A
 * future that has to wait registers the waker of @context with whatever it
 * waits for (or awaits another task with [method@Ws.Task.poll]) and returns
 * %WS_POLL_PENDING; it is polled again after the waker is woken.
 *
 * Returns: %WS_POLL_READY when done, %WS_POLL_PENDING otherwise
 */
typedef WsPoll (*WsTaskFunc) (WsContext *context,
                              gpointer   user_data);

/**
 * WsBlockingFunc:
 * @user_data: the data given to ws_block_in_place()
 *
 * Blocking work run by ws_block_in_place().
 */
typedef void (*WsBlockingFunc) (gpointer user_data);

/**
 * WsHookFunc:
 * @user_data: the data given when the hook was set
 *
 * A runtime hook. It runs on a runtime thread, never on the thread that set
 * it.
 */
typedef void (*WsHookFunc) (gpointer user_data);

G_END_DECLS
