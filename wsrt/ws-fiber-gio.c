/* ws-fiber-gio.c: any GIO-style `_async ()` call awaited in one call from a fiber
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * WS_GIO (cx) is the last three arguments of an `_async ()` call:
 * ws_fiber_gio_cancellable (cx), ws_fiber_gio_callback and
 * ws_fiber_gio_user_data (cx). Each call is one WsAsyncOp
 * (ws-async-op.c), which keeps the GIO side of the protocol: the result
 * is handed over once, through the delivery source of the context GIO
 * calls back on, after GIO's own dispatch returned; the cancel reaches
 * GIO on that context; a runtime thread iterates the context while the
 * call is owed. What is added here:
 *
 *  - The slot. A fiber has one (WsFiber.gio, ws-fiber.c), made at
 *    its first WS_GIO and freed when its function returns. It holds the
 *    current call's operation and two flags, one per half of WS_GIO:
 *    C leaves the order in which a call's arguments are evaluated open,
 *    so each half arms the slot if it has not been armed for this call,
 *    and the call a half belongs to is the one whose flag for that half
 *    is still clear. A half whose flag is set, or an operation already
 *    awaited, starts a new call. The operation of the previous call, and
 *    with it the result its finish read, goes at that moment: the result
 *    is valid until the fiber's next WS_GIO or its return.
 *  - The await is the uninterruptible one. GIO calls back exactly once,
 *    also after a cancel, and until then the call may write to what the
 *    fiber passed it (buffers on the fiber's stack). So the await returns
 *    only once the result is in: while the task is not cancelled the
 *    fiber suspends as for any await, woken by the delivery; once it is,
 *    a suspend no longer switches out (ws-fiber.c), and the await cancels
 *    the call and waits for its result in place
 *    (ws_async_op_wait_published: it iterates the call's context if this
 *    thread can own it, or waits for the thread that does), so the thread
 *    unwinding the fiber is held for as long as GIO takes to answer a
 *    cancel. The finish then reports G_IO_ERROR_CANCELLED, or the result
 *    if the operation won.
 */

#include "config.h"

#include "ws-fiber-gio.h"
#include "ws-core-private.h"
#include "ws-fiber.h"
#include "ws-fiber-private.h"
#include "ws-async-op.h"
#include "ws-async-op-private.h"
#include "ws-runtime.h"

typedef struct
{
  WsAsyncOp *op;                 /* the current call, or the last awaited */
  gboolean   gave_cancellable;
  gboolean   gave_user_data;
  gboolean   awaited;
} FiberGio;

void
ws_fiber_gio_free (gpointer gio)
{
  FiberGio *g = gio;

  /* An operation in flight that nobody awaits any more is cancelled by
   * its last unref of ours; GIO's reference keeps it until it calls
   * back. */
  g_clear_pointer (&g->op, ws_async_op_unref);
  g_free (g);
}

static void
refuse_outside_fiber (WsContext  *cx,
                      const char *strfunc)
{
  char label[WS_RAW_TASK_LABEL_SIZE];

  g_critical ("%s: called outside a fiber, by task %s. WS_GIO() and ws_fiber_await_gio() "
              "work in the function of a fiber (ws_runtime_spawn_fiber, "
              "ws_runtime_spawn_local_fiber), with its own WsContext; from a poll "
              "function, await the call with a WsAsyncOp", strfunc,
              ws_context_label (cx, label));
}

/* The operation of the call that one half of WS_GIO belongs to; see the
 * top. NULL outside a fiber. */
static WsAsyncOp *
arm (WsContext  *cx,
     gboolean    user_data_half,
     const char *strfunc)
{
  gpointer *slot = ws_fiber_get_gio_slot (cx);
  FiberGio *g;
  gboolean *flag;

  if G_UNLIKELY (slot == NULL)
    {
      refuse_outside_fiber (cx, strfunc);
      return NULL;
    }
  if (*slot == NULL)
    *slot = g_new0 (FiberGio, 1);
  g = *slot;
  flag = user_data_half ? &g->gave_user_data : &g->gave_cancellable;

  if (g->op == NULL || g->awaited || *flag)
    {
      if G_UNLIKELY (g->op != NULL && !g->awaited && g->gave_user_data)
        {
          char label[WS_RAW_TASK_LABEL_SIZE];

          g_critical ("%s: fiber %s made a WS_GIO() call and did not await it: call "
                      "ws_fiber_await_gio() after each WS_GIO() call, before the next "
                      "one (the call that was not awaited is cancelled)", strfunc,
                      ws_context_label (cx, label));
        }
      g_clear_pointer (&g->op, ws_async_op_unref);
      g->op = ws_async_op_new ();
      g->gave_cancellable = FALSE;
      g->gave_user_data = FALSE;
      g->awaited = FALSE;
    }
  *flag = TRUE;
  return g->op;
}

/**
 * ws_fiber_gio_cancellable: (skip)
 * @cx: the running fiber's context
 *
 * The #GCancellable half of %WS_GIO: the cancellable of the fiber's
 * next GIO call, cancelled when the fiber's task is. Use %WS_GIO rather
 * than calling it.
 *
 * Returns: (transfer none) (nullable): the call's cancellable; %NULL
 *   outside a fiber (a critical)
 */
GCancellable *
ws_fiber_gio_cancellable (WsContext *cx)
{
  WsAsyncOp *op = arm (cx, FALSE, G_STRFUNC);

  return op != NULL ? ws_async_op_get_cancellable (op) : NULL;
}

/**
 * ws_fiber_gio_user_data: (skip)
 * @cx: the running fiber's context
 *
 * The user-data half of %WS_GIO: starts the fiber's next GIO call and
 * returns what [func@Ws.fiber_gio_callback] needs. Use %WS_GIO rather
 * than calling it.
 *
 * Returns: (nullable): the callback's data; %NULL outside a fiber (a
 *   critical)
 */
gpointer
ws_fiber_gio_user_data (WsContext *cx)
{
  WsAsyncOp *op = arm (cx, TRUE, G_STRFUNC);

  return op != NULL ? ws_async_op_start (op, cx) : NULL;
}

/**
 * ws_fiber_gio_callback: (skip)
 * @source_object: (nullable): the call's source object
 * @result: the call's result
 * @user_data: what [func@Ws.fiber_gio_user_data] returned
 *
 * The callback half of %WS_GIO: hands the result to the awaiting fiber.
 */
void
ws_fiber_gio_callback (GObject      *source_object,
                       GAsyncResult *result,
                       gpointer      user_data)
{
  /* NULL: the call was made outside a fiber, which was refused already. */
  if (user_data != NULL)
    ws_async_op_callback (source_object, result, user_data);
}

/**
 * ws_fiber_await_gio: (skip)
 * @cx: the running fiber's context
 *
 * Waits for the GIO call that the fiber started with %WS_GIO and returns
 * its result, for the call's `_finish ()`:
 *
 * ```c
 * g_file_load_contents_async (file, WS_GIO (cx));
 * ok = g_file_load_contents_finish (file, ws_fiber_await_gio (cx), &text, &len, NULL, &error);
 * ```
 *
 * While it waits the fiber is suspended: the worker, or the main loop of
 * a local fiber, goes on with other work. Cancelling the fiber's task
 * cancels the call, and this still waits for GIO's callback (GIO always
 * calls back, and may use the fiber's data until it has): the finish
 * then reports %G_IO_ERROR_CANCELLED, or the result if the operation won
 * the race. So, unlike %WS_FIBER_AWAIT, it does not tell a cancel apart:
 * the finish does.
 *
 * Calling it outside a fiber, or with no %WS_GIO call to await, is a
 * programmer error: a critical naming the fix, and %NULL.
 *
 * Returns: (transfer none) (nullable): the call's result, valid until
 *   the fiber's next %WS_GIO or its return
 */
static void
wait_published (gpointer op)
{
  ws_async_op_wait_published (op);
}

GAsyncResult *
ws_fiber_await_gio (WsContext *cx)
{
  gpointer *slot = ws_fiber_get_gio_slot (cx);
  FiberGio *g;

  if G_UNLIKELY (slot == NULL)
    {
      refuse_outside_fiber (cx, G_STRFUNC);
      return NULL;
    }
  g = *slot;
  if G_UNLIKELY (g == NULL || g->op == NULL || g->awaited || !g->gave_user_data)
    {
      char label[WS_RAW_TASK_LABEL_SIZE];

      g_critical ("%s: fiber %s has no GIO call to await: start one with WS_GIO(cx) as "
                  "the last arguments of an _async() call, then await it once", G_STRFUNC,
                  ws_context_label (cx, label));
      return NULL;
    }

  while (ws_async_op_poll (g->op, cx) == WS_POLL_PENDING)
    {
      ws_context_note_await (cx, G_STRFUNC);
      if (!ws_fiber_suspend (cx))
        {
          /* Cancelled: the call is cancelled, and we wait for its answer
           * here (see the top). */
          ws_async_op_cancel (g->op);
          /* On a worker the wait hands the worker's queue to another
           * thread first, so its other tasks go on; a main context's
           * thread cannot hand off, and waits itself. */
          if (!ws_block_in_place (wait_published, g->op, NULL))
            ws_async_op_wait_published (g->op);
          break;
        }
    }
  g->awaited = TRUE;
  return ws_async_op_get_result (g->op);
}
