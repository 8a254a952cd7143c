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
 *   // before WS_ASYNC_BEGIN: set up on every poll
 *   g_autoptr(GError) error = NULL;
 *
 *   WS_ASYNC_BEGIN (s);
 *
 *   WS_AWAIT (s, ws_sleep_poll (s->nap, cx));
 *   WS_AWAIT (s, ws_channel_poll_receive (s->inbox, cx, &s->item, &error));
 *   if (error != NULL)
 *     WS_ASYNC_RETURN_ERROR (s, cx, g_steal_pointer (&error));
 *   {
 *     // fine: a block that holds no await
 *     g_autofree char *text = g_strdup_printf ("got %p", s->item);
 *     g_debug ("%s", text);
 *   }
 *   WS_AWAIT (s, ws_task_poll (s->child, cx));
 *
 *   WS_ASYNC_END (s);
 * }
 * ```
 *
 * How locals survive a suspension: they do not. Each %WS_AWAIT that is not
 * ready returns from the function, and the next poll jumps back to that
 * %WS_AWAIT with a `switch` on the line number saved in the state. So:
 *
 * - A value that must outlive an await lives in the state structure (and
 *   the task's destroy notify frees what the state owns).
 * - A local declared between %WS_ASYNC_BEGIN and %WS_ASYNC_END with an
 *   initializer must not be in scope at a later await: the resume jumps
 *   over its initialization, and a `g_autofree` or `g_autoptr()` local
 *   would then free garbage when the function returns. With GCC (C) this
 *   is a compile error, "switch jumps over variable initialization"
 *   (%WS_ASYNC_BEGIN turns `-Wjump-misses-init` into an error up to
 *   %WS_ASYNC_END); with Clang, a `cleanup` local there is an error of its
 *   own. (A cleanup local without an initializer escapes GCC's check;
 *   GLib requires one anyway.) Declare such locals before %WS_ASYNC_BEGIN
 *   (they are set up and cleaned up on every poll), inside a block `{ }`
 *   that contains no await, or after the last await; a
 *   `for (int i = 0; ...)` loop around an await keeps its counter in the
 *   state instead (`for (s->i = 0; ...)`).
 * - Two awaits cannot share a source line, and `switch` statements of your
 *   own cannot enclose an await.
 */
#define WS_ASYNC_STATE int ws_async_line_

/* Between WS_ASYNC_BEGIN and WS_ASYNC_END, GCC's C front end makes a
 * resume that jumps over the initialization of a local an error: that
 * local's value is garbage after the jump, and a cleanup attribute on it
 * (g_autofree, g_autoptr) frees garbage. GCC has no diagnostic for the
 * cleanup attribute alone; Clang rejects that jump by itself, and C++
 * rejects any jump over an initialization. */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__cplusplus)
# define _WS_ASYNC_CHECKS_PUSH \
  _Pragma ("GCC diagnostic push") \
  _Pragma ("GCC diagnostic error \"-Wjump-misses-init\"")
# define _WS_ASYNC_CHECKS_POP _Pragma ("GCC diagnostic pop")
#else
# define _WS_ASYNC_CHECKS_PUSH
# define _WS_ASYNC_CHECKS_POP
#endif

/**
 * WS_ASYNC_BEGIN:
 * @state: a pointer to the task's state, which has a %WS_ASYNC_STATE
 *
 * Opens the body of a coroutine task; the first poll starts here, later
 * polls resume at the await that was pending.
 *
 * A local declared after it with an initializer (a `g_autofree` or
 * `g_autoptr()` one above all) must not be in scope at a later await; with
 * GCC that is a compile error. See %WS_ASYNC_STATE for where to put it.
 *
 * The state must start zeroed (`g_new0`, `= { 0 }`) and belong to one
 * task: a resume point the function never saved (a state from `g_new`)
 * is a critical naming the function, and the task ends without running
 * its body. A coroutine polled again after its end returns
 * %WS_POLL_READY at once.
 */
#define WS_ASYNC_BEGIN(state)                                   \
  _WS_ASYNC_CHECKS_PUSH                                         \
  switch ((state)->ws_async_line_)                              \
    {                                                           \
    case -1:                                                    \
      return WS_POLL_READY;                                     \
    default:                                                    \
      g_critical ("%s: the coroutine state holds no resume "    \
                  "point this function knows (%d): allocate "   \
                  "the state zeroed (g_new0) and give each "    \
                  "task its own",                               \
                  G_STRFUNC, (state)->ws_async_line_);          \
      (state)->ws_async_line_ = -1;                             \
      return WS_POLL_READY;                                     \
    case 0:

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
    }                                                           \
  (state)->ws_async_line_ = -1;                                 \
  _WS_ASYNC_CHECKS_POP                                          \
  return WS_POLL_READY

G_END_DECLS
