/* ws-async.h: stackless coroutine macros, so async C reads top to bottom
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#if !defined(WSRT_INSIDE) && !defined(WSRT_COMPILATION)
# error "Only <wsrt.h> can be included directly."
#endif

#include "ws-types.h"
#include "ws-context.h"

G_BEGIN_DECLS

/**
 * WS_ASYNC_STATE:
 *
 * Declares the resume point inside a task's state structure. Put it in the
 * structure you pass as the task's user data:
 *
 * ```c
 * typedef struct
 * {
 *   WS_ASYNC_STATE;
 *   WsSleep   *nap;
 *   WsChannel *inbox;
 *   WsTask    *child;
 *   gpointer   item;       // locals that live across an await go here
 * } Job;
 *
 * static WsPoll
 * job_func (WsContext *cx, gpointer user_data)
 * {
 *   Job *s = user_data;
 *   g_autoptr(GError) error = NULL;   // fine: never lives across an await
 *
 *   WS_ASYNC_BEGIN (s);
 *
 *   WS_AWAIT (s, ws_sleep_poll (s->nap, cx));
 *   WS_AWAIT (s, ws_channel_poll_receive (s->inbox, cx, &s->item, &error));
 *   if (error != NULL)
 *     WS_ASYNC_RETURN_ERROR (s, cx, g_steal_pointer (&error));
 *   WS_AWAIT (s, ws_task_poll (s->child, cx));
 *
 *   WS_ASYNC_END (s);
 * }
 * ```
 *
 * How locals survive a suspension: they do not. Each %WS_AWAIT that is not
 * ready returns from the function, and the next poll jumps back to that
 * %WS_AWAIT with a `switch` on the line number saved in the state. Every
 * value that must outlive an await lives in the state structure; plain
 * locals are fine between awaits. Two awaits cannot share a source line,
 * and `switch` statements of your own cannot enclose an await.
 */
#define WS_ASYNC_STATE int ws_async_line_

/**
 * WS_ASYNC_BEGIN:
 * @state: a pointer to the task's state, which has a %WS_ASYNC_STATE
 *
 * Opens the body of a coroutine task; the first poll starts here, later
 * polls resume at the await that was pending.
 */
#define WS_ASYNC_BEGIN(state) \
  switch ((state)->ws_async_line_) { case 0:

/**
 * WS_AWAIT:
 * @state: the task's state
 * @poll_expr: an expression that polls an awaitable and gives a #WsPoll,
 *   such as `ws_sleep_poll (s->nap, cx)`
 *
 * Evaluates @poll_expr; if it is %WS_POLL_PENDING, returns
 * %WS_POLL_PENDING from the task, to evaluate @poll_expr again here on the
 * next poll.
 */
#define WS_AWAIT(state, poll_expr)                              \
  G_STMT_START {                                                \
    (state)->ws_async_line_ = __LINE__; G_GNUC_FALLTHROUGH;     \
    case __LINE__:                                              \
    if ((poll_expr) == WS_POLL_PENDING)                         \
      return WS_POLL_PENDING;                                   \
  } G_STMT_END

/**
 * WS_ASYNC_YIELD:
 * @state: the task's state
 * @cx: the #WsContext of the poll
 *
 * Yields to other tasks (see ws_context_yield()) and resumes here.
 */
#define WS_ASYNC_YIELD(state, cx)                               \
  G_STMT_START {                                                \
    (state)->ws_async_line_ = __LINE__;                         \
    return ws_context_yield (cx);                               \
    case __LINE__:;                                             \
  } G_STMT_END

/**
 * WS_ASYNC_RETURN_ERROR:
 * @state: the task's state
 * @cx: the #WsContext of the poll
 * @error: (transfer full): the error
 *
 * Ends the coroutine task with @error.
 */
#define WS_ASYNC_RETURN_ERROR(state, cx, error)                 \
  G_STMT_START {                                                \
    (state)->ws_async_line_ = -1;                               \
    ws_context_return_error ((cx), (error));                    \
    return WS_POLL_READY;                                       \
  } G_STMT_END

/**
 * WS_ASYNC_END:
 * @state: the task's state
 *
 * Closes the body of a coroutine task: reaching it ends the task (set the
 * result with a `ws_context_return_*()` call before it).
 */
#define WS_ASYNC_END(state)                                     \
    default:                                                    \
      break;                                                    \
  }                                                             \
  (state)->ws_async_line_ = -1;                                 \
  return WS_POLL_READY

G_END_DECLS
