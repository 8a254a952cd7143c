/* ws-fiber.h: fibers, tasks whose body is a C function on its own stack
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#if !defined(WSRT_INSIDE) && !defined(WSRT_COMPILATION)
# error "Only <wsrt.h> can be included directly."
#endif

#include <glib-object.h>

#include "ws-types.h"
#include "ws-context.h"
#include "ws-task.h"
#include "ws-runtime.h"
#include "ws-join-handle.h"

G_BEGIN_DECLS

/**
 * WsFiberFunc:
 * @context: the fiber's context, valid until @func returns
 * @user_data: the data given at the spawn
 *
 * The body of a fiber ([method@Ws.Runtime.spawn_fiber]): an ordinary
 * function that runs once, on the fiber's own stack, and waits where it
 * needs to with %WS_FIBER_AWAIT or [func@Ws.fiber_suspend]. It sets the
 * fiber's result with the `ws_context_return_*` calls (at most once) and
 * returns; a fiber that returns without a result ends with none.
 *
 * Once an await returns %FALSE the fiber's task was cancelled: the
 * function cleans up and returns (its `g_autoptr` variables run as for
 * any return).
 */
typedef void (*WsFiberFunc) (WsContext *context,
                             gpointer   user_data);

/**
 * WS_FIBER_AWAIT:
 * @cx: the fiber's #WsContext
 * @poll_expression: an expression that returns a #WsPoll, such as
 *   `ws_sleep_poll (nap, cx)`: evaluated again each time the fiber is
 *   resumed, until it returns %WS_POLL_READY
 *
 * Waits, inside a fiber, for what @poll_expression polls: while it
 * returns %WS_POLL_PENDING the fiber suspends ([func@Ws.fiber_suspend])
 * until its task is woken. Every `_poll` function of wsrt works here
 * ([method@Ws.JoinHandle.poll], [method@Ws.Task.poll],
 * [method@Ws.Sleep.poll], [method@Ws.Channel.poll_receive],
 * [method@Ws.Oneshot.poll], [method@Ws.AsyncOp.poll],
 * [method@Ws.Limiter.acquire_poll], ...).
 *
 * ```c
 * if (!WS_FIBER_AWAIT (cx, ws_join_handle_poll (child, cx)))
 *   return;                    // cancelled: clean up and return
 * ```
 *
 * Evaluates to %TRUE once @poll_expression returned %WS_POLL_READY, or
 * %FALSE if the fiber's task was cancelled first, or if the await was
 * refused: inside a callback of a `GMainContext` that the fiber itself
 * iterates, a critical says so and the await returns %FALSE at once
 * ([func@Ws.fiber_suspend]).
 */
#define WS_FIBER_AWAIT(cx, poll_expression) \
  G_GNUC_EXTENSION ({ \
    gboolean ws_fiber_await_ok_ = TRUE; \
    while ((poll_expression) == WS_POLL_PENDING) \
      if (!ws_fiber_suspend (cx)) \
        { \
          ws_fiber_await_ok_ = FALSE; \
          break; \
        } \
    ws_fiber_await_ok_; \
  })

typedef gpointer (*WsThreadFunc) (GCancellable  *cancellable,
                                  gpointer       user_data,
                                  GError       **error);

WS_AVAILABLE_IN_ALL
WsTask       *ws_runtime_spawn_fiber          (WsRuntime      *self,
                                               WsFiberFunc     func,
                                               gpointer        user_data,
                                               GDestroyNotify  destroy) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsJoinHandle *ws_runtime_spawn_fiber_full     (WsRuntime      *self,
                                               gsize           stack_size,
                                               WsFiberFunc     func,
                                               gpointer        user_data,
                                               GDestroyNotify  destroy) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsJoinHandle *ws_context_spawn_fiber          (WsContext      *context,
                                               WsFiberFunc     func,
                                               gpointer        user_data,
                                               GDestroyNotify  destroy) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
WsTask       *ws_runtime_spawn_local_fiber    (WsRuntime      *self,
                                               GMainContext   *context,
                                               WsFiberFunc     func,
                                               gpointer        user_data,
                                               GDestroyNotify  destroy) G_GNUC_WARN_UNUSED_RESULT;
WS_AVAILABLE_IN_ALL
gpointer      ws_fiber_run_in_thread          (WsContext      *cx,
                                               WsThreadFunc    func,
                                               gpointer        user_data,
                                               GError        **error);
WS_AVAILABLE_IN_ALL
gboolean      ws_fiber_suspend                (WsContext      *context);
WS_AVAILABLE_IN_ALL
gboolean      ws_fiber_yield                  (WsContext      *context);
WS_AVAILABLE_IN_ALL
gboolean      ws_context_is_fiber             (WsContext      *context);

G_END_DECLS
