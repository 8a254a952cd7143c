/* ws-io-op-dbus.c: WsIoOp operations on a GDBusConnection
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One row (WsIoOpVTable) and one constructor per operation, on the
 * adapter of ws-io-op.c (ws-io-op-private.h).
 */

#include "config.h"

#include "ws-io-op-private.h"

/* ---- call ---------------------------------------------------------------- */

typedef struct
{
  char           *bus_name;
  char           *object_path;
  char           *interface_name;
  char           *method_name;
  GVariant       *parameters;
  GVariantType   *reply_type;
  GDBusCallFlags  flags;
  int             timeout_msec;
} Call;

static void
call_start (WsIoOp       *self,
            GCancellable *cancellable,
            gpointer      data)
{
  Call *c = ws_io_op_get_priv (self);

  g_dbus_connection_call (G_DBUS_CONNECTION (self->source), c->bus_name, c->object_path,
                          c->interface_name, c->method_name, c->parameters, c->reply_type,
                          c->flags, c->timeout_msec, cancellable, ws_async_op_callback, data);
}

static gboolean
call_finish (WsIoOp       *self,
             GAsyncResult *result)
{
  ws_io_op_set_result (self, g_dbus_connection_call_finish (G_DBUS_CONNECTION (self->source),
                                                            result, &self->error),
                       (GDestroyNotify) g_variant_unref);
  return TRUE;
}

static GType
variant_type (void)
{
  return G_TYPE_VARIANT;
}

static void
call_clear (WsIoOp *self)
{
  Call *c = ws_io_op_get_priv (self);

  g_clear_pointer (&c->bus_name, g_free);
  g_clear_pointer (&c->object_path, g_free);
  g_clear_pointer (&c->interface_name, g_free);
  g_clear_pointer (&c->method_name, g_free);
  g_clear_pointer (&c->parameters, g_variant_unref);
  g_clear_pointer (&c->reply_type, g_variant_type_free);
}

static const WsIoOpVTable call_vtable = {
  .constructor = "ws_dbus_connection_call",
  .finish = "ws_io_op_finish_variant",
  .priv_size = sizeof (Call),
  .start = call_start,
  .finish_step = call_finish,
  .value_type = variant_type,
  .clear = call_clear,
};

/**
 * ws_dbus_connection_call:
 * @connection: a #GDBusConnection
 * @bus_name: (nullable): the unique or well-known name of the peer, or
 *   %NULL on a peer-to-peer connection
 * @object_path: the path of the remote object
 * @interface_name: the D-Bus interface of the method
 * @method_name: the method to call
 * @parameters: (nullable): a tuple with the arguments, or %NULL for none;
 *   a floating reference is consumed
 * @reply_type: (nullable): the type the reply must have (a tuple type),
 *   or %NULL to take any
 * @flags: flags for the call
 * @timeout_msec: the timeout in milliseconds, -1 for the default one,
 *   %G_MAXINT for none
 *
 * Creates an awaitable that calls @method_name (g_dbus_connection_call())
 * when a task first polls it. Get the reply with
 * [method@Ws.IoOp.finish_variant]. An error returned by the peer arrives
 * as a #GError that g_dbus_error_get_remote_error() reads; a reply of
 * another type than @reply_type fails with `G_IO_ERROR_INVALID_ARGUMENT`.
 *
 * Returns: (transfer full): a new operation, not started
 */
WsIoOp *
ws_dbus_connection_call (GDBusConnection    *connection,
                         const char         *bus_name,
                         const char         *object_path,
                         const char         *interface_name,
                         const char         *method_name,
                         GVariant           *parameters,
                         const GVariantType *reply_type,
                         GDBusCallFlags      flags,
                         int                 timeout_msec)
{
  g_autoptr(GVariant) sunk = parameters != NULL ? g_variant_ref_sink (parameters) : NULL;
  WsIoOp *self;
  Call *c;

  /* The preconditions of g_dbus_connection_call(), checked here where
   * the caller sees them. A refused call still releases @parameters. */
  g_return_val_if_fail (G_IS_DBUS_CONNECTION (connection), NULL);
  g_return_val_if_fail (bus_name == NULL || g_dbus_is_name (bus_name), NULL);
  g_return_val_if_fail (object_path != NULL && g_variant_is_object_path (object_path), NULL);
  g_return_val_if_fail (interface_name != NULL && g_dbus_is_interface_name (interface_name), NULL);
  g_return_val_if_fail (method_name != NULL && g_dbus_is_member_name (method_name), NULL);
  g_return_val_if_fail (timeout_msec >= 0 || timeout_msec == -1, NULL);
  g_return_val_if_fail (sunk == NULL || g_variant_is_of_type (sunk, G_VARIANT_TYPE_TUPLE), NULL);

  self = ws_io_op_new (&call_vtable, connection);
  c = ws_io_op_get_priv (self);
  c->bus_name = g_strdup (bus_name);
  c->object_path = g_strdup (object_path);
  c->interface_name = g_strdup (interface_name);
  c->method_name = g_strdup (method_name);
  c->parameters = g_steal_pointer (&sunk);
  c->reply_type = reply_type != NULL ? g_variant_type_copy (reply_type) : NULL;
  c->flags = flags;
  c->timeout_msec = timeout_msec;
  return self;
}

/**
 * ws_io_op_finish_variant:
 * @self: a #WsIoOp made by [func@Ws.dbus_connection_call], ready
 * @error: return location for the error of the operation
 *
 * Gets the reply of the call once [method@Ws.IoOp.poll] returned
 * %WS_POLL_READY.
 *
 * Returns: (transfer full) (nullable): the reply, a tuple with the
 *   method's return values, or %NULL with @error set
 */
GVariant *
ws_io_op_finish_variant (WsIoOp  *self,
                         GError **error)
{
  if (!ws_io_op_check_finish (self, G_STRFUNC, FALSE, error) || ws_io_op_take_error (self, error))
    return NULL;
  return g_variant_ref (self->result);
}
