/* ws-io-op-subprocess.c: WsIoOp operations on a GSubprocess
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One row (WsIoOpVTable) and one constructor per operation, on the
 * adapter of ws-io-op.c (ws-io-op-private.h).
 */

#include "config.h"

#include "ws-io-op-private.h"

/* ---- communicate --------------------------------------------------------- */

typedef struct
{
  GBytes *stderr_bytes;      /* the result is the standard output */
} Communicate;

static void
communicate_start (WsIoOp       *self,
                   GCancellable *cancellable,
                   gpointer      data)
{
  g_subprocess_communicate_async (G_SUBPROCESS (self->source), self->input, cancellable,
                                  ws_async_op_callback, data);
}

static gboolean
communicate_finish (WsIoOp       *self,
                    GAsyncResult *result)
{
  Communicate *c = ws_io_op_get_priv (self);
  GSubprocess *subprocess = G_SUBPROCESS (self->source);
  GBytes *stdout_bytes = NULL;

  if (g_subprocess_communicate_finish (subprocess, result, &stdout_bytes, &c->stderr_bytes,
                                       &self->error))
    {
      /* The communication waited for the exit: the status is there. A
       * failure keeps the output, for a program to show. */
      g_spawn_check_wait_status (g_subprocess_get_status (subprocess), &self->error);
    }
  ws_io_op_set_result (self, stdout_bytes, (GDestroyNotify) g_bytes_unref);
  return TRUE;
}

static void
communicate_clear (WsIoOp *self)
{
  Communicate *c = ws_io_op_get_priv (self);

  g_clear_pointer (&c->stderr_bytes, g_bytes_unref);
}

static const WsIoOpVTable communicate_vtable = {
  .constructor = "ws_subprocess_communicate",
  .finish = "ws_io_op_finish_communicate",
  .priv_size = sizeof (Communicate),
  .start = communicate_start,
  .finish_step = communicate_finish,
  .clear = communicate_clear,
};

/**
 * ws_subprocess_communicate:
 * @subprocess: a started subprocess
 * @stdin_buf: (nullable): what to write to its standard input, which
 *   @subprocess must then have as a pipe (`G_SUBPROCESS_FLAGS_STDIN_PIPE`)
 *
 * Creates an awaitable that feeds @stdin_buf to @subprocess, collects
 * its standard output and error (those it has as pipes) and waits for it
 * to exit (g_subprocess_communicate_async()) when a task first polls it.
 * With a standard input pipe and no @stdin_buf, the pipe is closed at
 * once. Get the output and the exit check with
 * [method@Ws.IoOp.finish_communicate].
 *
 * Cancelling the task stops the communication, not the process: call
 * g_subprocess_force_exit() for that.
 *
 * Returns: (transfer full): a new operation, not started
 */
WsIoOp *
ws_subprocess_communicate (GSubprocess *subprocess,
                           GBytes      *stdin_buf)
{
  WsIoOp *self;

  g_return_val_if_fail (G_IS_SUBPROCESS (subprocess), NULL);
  g_return_val_if_fail (stdin_buf == NULL || g_subprocess_get_stdin_pipe (subprocess) != NULL,
                        NULL);

  self = ws_io_op_new (&communicate_vtable, subprocess);
  /* GIO asserts that a process with a stdin pipe gets a buffer. */
  if (stdin_buf != NULL)
    self->input = g_bytes_ref (stdin_buf);
  else if (g_subprocess_get_stdin_pipe (subprocess) != NULL)
    self->input = g_bytes_new_static ("", 0);
  return self;
}

/**
 * ws_io_op_finish_communicate:
 * @self: a #WsIoOp made by [func@Ws.subprocess_communicate], ready
 * @stdout_buf: (out) (optional) (nullable) (transfer full): return
 *   location for the standard output of the process, %NULL if it was no
 *   pipe
 * @stderr_buf: (out) (optional) (nullable) (transfer full): return
 *   location for its standard error, %NULL if it was no pipe
 * @error: return location for the error of the operation
 *
 * Gets the output of the process once [method@Ws.IoOp.poll] returned
 * %WS_POLL_READY, and checks how it exited, as g_subprocess_wait_check()
 * does: a process that exited with a status other than 0 fails with
 * `G_SPAWN_EXIT_ERROR` and the status as the code, one killed by a
 * signal with `G_SPAWN_ERROR_FAILED`. The output is given in those cases
 * too (an error message on the standard error is worth showing); it is
 * %NULL only if the communication itself failed (`G_IO_ERROR_CANCELLED`
 * when the task was cancelled).
 *
 * Returns: %TRUE if the process exited with status 0
 */
gboolean
ws_io_op_finish_communicate (WsIoOp  *self,
                             GBytes **stdout_buf,
                             GBytes **stderr_buf,
                             GError **error)
{
  Communicate *c;

  if (stdout_buf != NULL)
    *stdout_buf = NULL;
  if (stderr_buf != NULL)
    *stderr_buf = NULL;
  if (!ws_io_op_check_finish (self, G_STRFUNC, FALSE, error))
    return FALSE;

  c = ws_io_op_get_priv (self);
  if (stdout_buf != NULL && self->result != NULL)
    *stdout_buf = g_bytes_ref (self->result);
  if (stderr_buf != NULL && c->stderr_bytes != NULL)
    *stderr_buf = g_bytes_ref (c->stderr_bytes);
  return !ws_io_op_take_error (self, error);
}

/* ---- wait check ---------------------------------------------------------- */

static void
wait_check_start (WsIoOp       *self,
                  GCancellable *cancellable,
                  gpointer      data)
{
  g_subprocess_wait_check_async (G_SUBPROCESS (self->source), cancellable,
                                 ws_async_op_callback, data);
}

static gboolean
wait_check_finish (WsIoOp       *self,
                   GAsyncResult *result)
{
  g_subprocess_wait_check_finish (G_SUBPROCESS (self->source), result, &self->error);
  return TRUE;
}

static const WsIoOpVTable wait_check_vtable = {
  .constructor = "ws_subprocess_wait_check",
  .finish = "ws_io_op_finish",
  .start = wait_check_start,
  .finish_step = wait_check_finish,
};

/**
 * ws_subprocess_wait_check:
 * @subprocess: a started subprocess
 *
 * Creates an awaitable that waits for @subprocess to exit and checks how
 * it exited (g_subprocess_wait_check_async()) when a task first polls
 * it. Get the outcome with [method@Ws.IoOp.finish]: a process that
 * exited with a status other than 0 fails with `G_SPAWN_EXIT_ERROR` and
 * the status as the code, one killed by a signal with
 * `G_SPAWN_ERROR_FAILED`.
 *
 * Cancelling the task stops the wait, not the process: call
 * g_subprocess_force_exit() for that.
 *
 * Returns: (transfer full): a new operation, not started
 */
WsIoOp *
ws_subprocess_wait_check (GSubprocess *subprocess)
{
  g_return_val_if_fail (G_IS_SUBPROCESS (subprocess), NULL);

  return ws_io_op_new (&wait_check_vtable, subprocess);
}
