/* ws-handle.c
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "ws-handle-private.h"
#include "ws-task-private.h"
#include "ws-refuse-private.h"

/**
 * WsHandle:
 *
 * A reference to a [class@Ws.Runtime] that code running on it can use to
 * spawn more tasks, without holding the runtime itself.
 *
 * A handle does not keep the runtime running: after the runtime shuts
 * down, [method@Ws.Handle.spawn] returns tasks that are already cancelled.
 */

struct _WsHandle
{
  GObject        parent_instance;
  WsRuntimeCore *core;
};

G_DEFINE_FINAL_TYPE (WsHandle, ws_handle, G_TYPE_OBJECT)

static void
ws_handle_finalize (GObject *object)
{
  WsHandle *self = WS_HANDLE (object);

  g_clear_pointer (&self->core, ws_runtime_core_unref);

  G_OBJECT_CLASS (ws_handle_parent_class)->finalize (object);
}

static void
ws_handle_class_init (WsHandleClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = ws_handle_finalize;
}

static void
ws_handle_init (WsHandle *self)
{
}

WsHandle *
ws_handle_new_for_core (WsRuntimeCore *core)
{
  WsHandle *self = g_object_new (WS_TYPE_HANDLE, NULL);

  self->core = ws_runtime_core_ref (core);
  return self;
}

/**
 * ws_handle_get_current:
 *
 * Gets a handle to the runtime the calling thread belongs to: a worker or
 * blocking thread of it, or a main loop that is polling its local tasks.
 *
 * Returns: (nullable) (transfer full): a handle, or %NULL when called off
 *   any runtime thread
 */
WsHandle *
ws_handle_get_current (void)
{
  WsRuntimeCore *core = ws_runtime_core_get_current ();

  if (core == NULL)
    return NULL;
  return ws_handle_new_for_core (core);
}

/**
 * ws_handle_spawn: (skip)
 * @self: a #WsHandle
 * @func: (scope notified) (closure user_data) (destroy destroy): the task
 * @user_data: data for @func
 * @destroy: (nullable): frees @user_data after the last poll
 *
 * Spawns a task on the runtime of @self, like [method@Ws.Runtime.spawn].
 *
 * Returns: (transfer full): the join handle of the task
 */
WsTask *
ws_handle_spawn (WsHandle       *self,
                 WsTaskFunc      func,
                 gpointer        user_data,
                 GDestroyNotify  destroy)
{
  WsRawTask *raw;

  ws_return_val_if_fail_free (WS_IS_HANDLE (self), destroy, user_data, NULL);
  ws_return_val_if_fail_free (func != NULL, destroy, user_data, NULL);

  raw = ws_runtime_core_spawn (self->core, func, user_data, destroy, TRUE);
  return ws_task_new_for_raw (raw);
}
