/* ws-io-op.c: ready-made awaitables for GIO operations
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A WsIoOp is one or more WsAsyncOp steps with their GIO calls and their
 * _finish() built in; each operation is a row (WsIoOpVTable,
 * ws-io-op-private.h) in its family's file, and this file polls them all
 * the same way. The constructor only keeps the arguments (checked
 * against every precondition of the GIO call, so that the call, made
 * later on a worker, never refuses and never leaves the task waiting for
 * a callback that will not come). The first poll makes the first call, on
 * the polling thread's thread-default context (doc/architecture.md,
 * "Rules: main contexts"), with a fresh WsAsyncOp whose cancellable
 * ws_async_op_start() links to the task's; the poll that sees a step's
 * callback calls its _finish() and either starts the next step (the
 * batches of an enumeration, the chunks of a read) or stores the outcome
 * and sets `done`.
 *
 * Ownership and ordering: the arguments are written by the constructor
 * and only read afterwards. The poll state (`op`, `step`, the partial and
 * final results, `error`) belongs to the one task that polls the
 * operation: a task's polls are ordered by its RUNNING bit, so they need
 * no lock. Another thread reads the outcome only after the polling task
 * ended: the task's end (the completer's release of COMPLETE, read with
 * acquire by the waiter, or the delivery queue's lock for an async wait)
 * comes after the poll that stored the outcome, so it publishes it.
 * `done` is atomic as well (release after the outcome, acquire in the
 * finish functions), so a finish that a program calls too early, from
 * another thread, reads a clean "not ready" instead of racing the poll.
 */

#include "config.h"

#include "ws-io-op-private.h"
#include "ws-core-private.h"
#include "ws-context.h"

/**
 * WsIoOp:
 *
 * A GIO operation to await inside a task: the `_async()` call and its
 * `_finish()` made for you, on top of [struct@Ws.AsyncOp]. One type for
 * every operation; the constructor says which (files, streams,
 * subprocesses, D-Bus), the finish function of the kind takes the result:
 *
 * | constructor | finish |
 * | --- | --- |
 * | [func@Ws.file_load_contents] | [method@Ws.IoOp.finish_bytes] |
 * | [func@Ws.file_replace_contents] | [method@Ws.IoOp.finish] |
 * | [func@Ws.file_query_info] | [method@Ws.IoOp.finish_info] |
 * | [func@Ws.file_enumerate_children] | [method@Ws.IoOp.finish_infos] |
 * | [func@Ws.input_stream_read_all] | [method@Ws.IoOp.finish_bytes] |
 * | [func@Ws.output_stream_write_all] | [method@Ws.IoOp.finish] |
 * | [func@Ws.subprocess_communicate] | [method@Ws.IoOp.finish_communicate] |
 * | [func@Ws.subprocess_wait_check] | [method@Ws.IoOp.finish] |
 * | [func@Ws.dbus_connection_call] | [method@Ws.IoOp.finish_variant] |
 *
 * ```c
 * typedef struct
 * {
 *   WS_ASYNC_STATE;
 *   WsIoOp *op;
 * } Load;
 *
 * static WsPoll
 * load (WsContext *cx, gpointer user_data)
 * {
 *   Load *s = user_data;
 *   g_autoptr(GError) error = NULL;
 *   g_autoptr(GBytes) bytes = NULL;
 *
 *   WS_ASYNC_BEGIN (s);
 *   WS_AWAIT (s, ws_io_op_poll (s->op, cx));  // s->op = ws_file_load_contents (file)
 *   bytes = ws_io_op_finish_bytes (s->op, &error);
 *   if (bytes == NULL)
 *     WS_ASYNC_RETURN_ERROR (s, cx, g_steal_pointer (&error));
 *   ...
 *   WS_ASYNC_END (s);
 * }
 * ```
 *
 * The first [method@Ws.IoOp.poll] makes the GIO call on the polling
 * thread, which completes it on that thread's context, with a cancellable
 * linked to the task's ([method@Ws.Context.get_cancellable]): cancelling
 * the task cancels the call, and so does releasing the operation while
 * the call is in flight. Once the poll returned %WS_POLL_READY, the
 * finish function of its kind gives the outcome, as often as asked; a
 * finish function of another kind is refused with a critical that names
 * the right one. An operation is polled by one task at a time. JavaScript,
 * which cannot run on the workers, awaits one with
 * [method@Ws.Runtime.spawn_io].
 */

G_DEFINE_BOXED_TYPE (WsIoOp, ws_io_op, ws_io_op_ref, ws_io_op_unref)

/* A new operation of the kind @vtable on @source, its priv part zeroed;
 * the constructor fills in the rest. */
WsIoOp *
ws_io_op_new (const WsIoOpVTable *vtable,
              gpointer            source)
{
  WsIoOp *self = g_malloc0 (sizeof (WsIoOp) + vtable->priv_size);

  g_atomic_ref_count_init (&self->ref_count);
  atomic_init (&self->done, FALSE);
  self->vtable = vtable;
  self->source = g_object_ref (source);
  return self;
}

/**
 * ws_io_op_ref:
 * @self: a #WsIoOp
 *
 * Takes a reference on @self.
 *
 * Returns: (transfer full): @self
 */
WsIoOp *
ws_io_op_ref (WsIoOp *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  g_atomic_ref_count_inc (&self->ref_count);
  return self;
}

/**
 * ws_io_op_unref:
 * @self: (transfer full): a #WsIoOp
 *
 * Releases a reference. Releasing the last one while a GIO call is in
 * flight cancels the call.
 */
void
ws_io_op_unref (WsIoOp *self)
{
  g_return_if_fail (self != NULL);

  /* A full barrier (CONTRIBUTING.md, "Reference counts"): it also orders
   * the polling task's writes before the free on whichever thread drops
   * last. */
  if (!g_atomic_ref_count_dec (&self->ref_count))
    return;

  /* The step in flight first: its unref cancels the GIO call. */
  g_clear_pointer (&self->op, ws_async_op_unref);
  if (self->vtable->clear != NULL)
    self->vtable->clear (self);
  g_clear_object (&self->source);
  g_clear_pointer (&self->input, g_bytes_unref);
  g_clear_pointer (&self->attributes, g_free);
  if (self->result != NULL && self->result_free != NULL)
    self->result_free (self->result);
  g_clear_error (&self->error);
  g_free (self);
}

/* GIO's read_all and write_all take a bare buffer, which a stream that
 * cannot poll reads or writes on a thread of GIO's until the callback,
 * also after a cancel and after the last unref of the operation. The
 * step's cancellable lives that long (its WsAsyncOp owns it and is held
 * by the callback data until the callback returned): it keeps @data. */
void
ws_io_op_keep_until_callback (GCancellable   *cancellable,
                              gpointer        data,
                              GDestroyNotify  destroy)
{
  g_object_set_data_full (G_OBJECT (cancellable), "ws-io-op-buffer", data, destroy);
}

/* Makes the GIO call of the current step with a new WsAsyncOp. */
static void
start_step (WsIoOp    *self,
            WsContext *context)
{
  gpointer data;

  self->op = ws_async_op_new ();
  data = ws_async_op_start (self->op, context);
  self->vtable->start (self, ws_async_op_get_cancellable (self->op), data);
}

/* Takes the result of the step whose callback came: the row's
 * finish_step keeps the outcome or moves to the next step. Returns
 * whether the operation is over. */
static gboolean
finish_step (WsIoOp *self)
{
  g_autoptr(WsAsyncOp) op = g_steal_pointer (&self->op);

  return self->vtable->finish_step (self, ws_async_op_get_result (op));
}

/**
 * ws_io_op_poll:
 * @self: a #WsIoOp
 * @context: the context of the task that awaits @self
 *
 * Awaits the operation. The first poll makes the GIO call, linked to the
 * task's cancellable; the poll that sees its callback calls its
 * `_finish()` (and makes the next call of an operation of several, an
 * enumeration or a read). Consumes one unit of the cooperative budget
 * per call awaited.
 *
 * Returns: %WS_POLL_READY once the outcome is there, to get with the
 *   finish function of the operation's kind
 */
WsPoll
ws_io_op_poll (WsIoOp    *self,
               WsContext *context)
{
  g_return_val_if_fail (self != NULL, WS_POLL_READY);
  g_return_val_if_fail (context != NULL, WS_POLL_READY);

  /* Relaxed: `done` is written by this same task's earlier poll. */
  if (atomic_load_explicit (&self->done, memory_order_relaxed))
    return WS_POLL_READY;

  for (;;)
    {
      if (self->op == NULL)
        start_step (self, context);
      if (ws_async_op_poll (self->op, context) == WS_POLL_PENDING)
        {
          ws_context_note_await (context, G_STRFUNC);
          return WS_POLL_PENDING;
        }
      if (finish_step (self))
        break;
    }

  /* Release: publishes the outcome to a finish function that reads
   * `done` with acquire (see the top of the file). */
  atomic_store_explicit (&self->done, TRUE, memory_order_release);
  return WS_POLL_READY;
}

/* Acquire: pairs with the release in ws_io_op_poll(), so the outcome is
 * seen whole on any thread (see the top of the file). */
static gboolean
is_ready (WsIoOp *self)
{
  return atomic_load_explicit (&self->done, memory_order_acquire);
}

/* The preconditions of every finish function, reported as @function's
 * own: @self is given, of a kind that @function finishes (unless
 * @any_kind; a critical names the right function otherwise), ready, and
 * @error is clear. */
gboolean
ws_io_op_check_finish (WsIoOp      *self,
                       const char  *function,
                       gboolean     any_kind,
                       GError     **error)
{
  if (self == NULL)
    {
      g_return_if_fail_warning (G_LOG_DOMAIN, function, "self != NULL");
      return FALSE;
    }
  if (!any_kind && !g_str_equal (self->vtable->finish, function))
    {
      g_autofree char *expression = NULL;

      expression = g_strdup_printf ("an operation made by %s() is finished with %s()",
                                    self->vtable->constructor, self->vtable->finish);

      g_return_if_fail_warning (G_LOG_DOMAIN, function, expression);
      return FALSE;
    }
  if (!is_ready (self))
    {
      g_return_if_fail_warning (G_LOG_DOMAIN, function, "is_ready (self)");
      return FALSE;
    }
  if (error != NULL && *error != NULL)
    {
      g_return_if_fail_warning (G_LOG_DOMAIN, function, "error == NULL || *error == NULL");
      return FALSE;
    }
  return TRUE;
}

/* Gives a copy of the operation's error, if it failed. */
gboolean
ws_io_op_take_error (WsIoOp  *self,
                     GError **error)
{
  if (self->error == NULL)
    return FALSE;
  g_propagate_error (error, g_error_copy (self->error));
  return TRUE;
}

/**
 * ws_io_op_finish:
 * @self: a #WsIoOp that is ready
 * @error: return location for the error of the operation
 *
 * Gets the outcome of an operation once [method@Ws.IoOp.poll] returned
 * %WS_POLL_READY: whether it succeeded. The only finish function of
 * [func@Ws.file_replace_contents] and [func@Ws.output_stream_write_all];
 * the others may use it too, to learn the error alone (for
 * [func@Ws.subprocess_communicate], the exit check's included).
 *
 * Returns: %TRUE if the operation succeeded
 */
gboolean
ws_io_op_finish (WsIoOp  *self,
                 GError **error)
{
  if (!ws_io_op_check_finish (self, G_STRFUNC, TRUE, error))
    return FALSE;
  return !ws_io_op_take_error (self, error);
}

/**
 * ws_io_op_finish_bytes:
 * @self: a #WsIoOp made by [func@Ws.file_load_contents] or
 *   [func@Ws.input_stream_read_all], ready
 * @error: return location for the error of the operation
 *
 * Gets the bytes the operation loaded or read once
 * [method@Ws.IoOp.poll] returned %WS_POLL_READY.
 *
 * Returns: (transfer full) (nullable): the contents, or %NULL with @error
 *   set
 */
GBytes *
ws_io_op_finish_bytes (WsIoOp  *self,
                       GError **error)
{
  if (!ws_io_op_check_finish (self, G_STRFUNC, FALSE, error) || ws_io_op_take_error (self, error))
    return NULL;
  return g_bytes_ref (self->result);
}

/* ws_runtime_spawn_io's task: the state is the operation. It fails with
 * the operation's error; otherwise its value is the operation's result
 * when that is one object. */
static WsPoll
spawn_io_func (WsContext *cx,
               gpointer   user_data)
{
  WsIoOp *self = user_data;
  g_auto(GValue) value = G_VALUE_INIT;

  if (ws_io_op_poll (self, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;

  if (self->error != NULL)
    {
      ws_context_return_error (cx, g_error_copy (self->error));
      return WS_POLL_READY;
    }
  if (self->vtable->value_type == NULL)
    return WS_POLL_READY;
  g_value_init (&value, self->vtable->value_type ());
  if (G_VALUE_HOLDS_VARIANT (&value))
    g_value_set_variant (&value, self->result);
  else if (G_VALUE_HOLDS_OBJECT (&value))
    g_value_set_object (&value, self->result);
  else
    g_value_set_boxed (&value, self->result);
  ws_context_return_value (cx, &value);
  return WS_POLL_READY;
}

/**
 * ws_runtime_spawn_io:
 * @runtime: a #WsRuntime
 * @op: an operation no task polls
 *
 * Spawns a task on the workers of @runtime that awaits @op: the GIO call
 * is made, and completes, on a worker. The task fails with the error of
 * the operation (the one [method@Ws.IoOp.finish] gives); otherwise its
 * value ([method@Ws.Task.get_value]) is the result when that is one
 * object (the #GBytes of a load or a read, the #GFileInfo of a query, the
 * #GVariant reply of a D-Bus call) and there is none for the others.
 * Cancelling the task cancels the GIO call.
 *
 * Once the task has ended, the finish function of @op's kind gives the
 * result on any thread: the task's end publishes what its polls stored.
 *
 * No callback runs on a worker, so JavaScript may use it:
 *
 * ```js
 * const op = Ws.file_enumerate_children(dir, 'standard::name');
 * await rt.spawn_io(op).wait_async(null);
 * const names = op.finish_infos().map(info => info.get_name());
 * ```
 *
 * Returns: (transfer full): the task that awaits @op
 */
WsTask *
ws_runtime_spawn_io (WsRuntime *runtime,
                     WsIoOp    *op)
{
  g_return_val_if_fail (WS_IS_RUNTIME (runtime), NULL);
  g_return_val_if_fail (op != NULL, NULL);

  /* The task holds its own reference, released by its destroy notify
   * before its end is published ("Rules: tasks"). */
  return ws_runtime_spawn (runtime, spawn_io_func, ws_io_op_ref (op),
                           (GDestroyNotify) ws_io_op_unref);
}

/**
 * ws_runtime_load_file:
 * @runtime: a #WsRuntime
 * @file: the file to load
 *
 * Spawns a task on the workers of @runtime that loads the whole of @file:
 * [method@Ws.Runtime.spawn_io] of [func@Ws.file_load_contents]. Its value
 * ([method@Ws.Task.get_value]) is a #GBytes with the contents, its error
 * the one of the load (`G_IO_ERROR_NOT_FOUND` for a missing file).
 * Cancelling the task cancels the load.
 *
 * No callback runs on a worker, so JavaScript may call it and await the
 * task:
 *
 * ```js
 * const task = rt.load_file(Gio.File.new_for_path('data.json'));
 * const bytes = await Wsrt.result(task);
 * ```
 *
 * Returns: (transfer full): the task that loads @file
 */
WsTask *
ws_runtime_load_file (WsRuntime *runtime,
                      GFile     *file)
{
  g_autoptr(WsIoOp) op = NULL;

  g_return_val_if_fail (WS_IS_RUNTIME (runtime), NULL);
  g_return_val_if_fail (G_IS_FILE (file), NULL);

  op = ws_file_load_contents (file);
  return ws_runtime_spawn_io (runtime, op);
}
