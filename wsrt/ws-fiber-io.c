/* ws-fiber-io.c: one blocking syscall awaited from a fiber, run off its thread
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Each call fills a WsOffloadOp on the fiber's stack, hands it to the
 * runtime's offload (core/ws-offload.c: io_uring, or threads of its own)
 * with the fiber task's waker, and suspends until the op is done; the
 * offload sets `done` and then wakes the task. On io_uring a call the
 * kernel ends within the submission is usually done when the submission
 * returns (its submitter took the completion): then the fiber goes on
 * without a suspend, spending one unit of the cooperative budget. No
 * task, no allocation per call.
 *
 * The op lives on the fiber's stack, and a read writes into the caller's
 * buffer, so the await returns only once the op is done, also after a
 * cancel: while the task is not cancelled the fiber suspends as for any
 * await; once it is, a suspend no longer switches out (ws-fiber.c), and
 * the thread that unwinds the fiber waits for the syscall's end in
 * ws_offload_wait (), inside ws_block_in_place () on a worker (its queue
 * goes on on another thread), or in place on a main context's thread,
 * which cannot hand off. This is the rule of ws_fiber_run_in_thread ()
 * (models/fiber.pml, THREAD_JOB); the wait ends because every submitted
 * op ends, from the reaper, a submitter or an offload thread, and op_end
 * wakes a blocking waiter as surely as a suspended one
 * (models/offload.pml, models/offload-uring.pml). The syscall itself is
 * not interrupted: a read of a pipe that nobody writes keeps the
 * unwinding thread waiting.
 */

#include "config.h"

#include <fcntl.h>
#include <unistd.h>

#include "ws-fiber-io.h"
#include "ws-fiber.h"
#include "ws-fiber-private.h"
#include "ws-runtime.h"

/* Why an await returned. */
typedef enum
{
  AWAIT_DONE,        /* the syscall ran, the task was not cancelled */
  AWAIT_CANCELLED,   /* the task was cancelled: before the call (not made) or during it */
  AWAIT_REFUSED,     /* not in a fiber: a critical was given */
} AwaitEnd;

typedef struct
{
  WsOffload   *offload;
  WsOffloadOp *op;
} Wait;

static void
wait_op (gpointer data)
{
  Wait *w = data;

  ws_offload_wait (w->offload, w->op);
}

/* Runs @op off the fiber's thread and waits for it (see the top). A call
 * that @cancellable is FALSE for (close) runs also in a cancelled fiber
 * and reports its own result. */
static AwaitEnd
await_op (WsContext   *cx,
          WsOffloadOp *op,
          gboolean     cancellable,
          const char  *strfunc)
{
  WsRuntimeCore *core = ws_fiber_get_running_core (cx);
  WsOffload *offload;
  gboolean cancelled = FALSE;

  if G_UNLIKELY (core == NULL)
    {
      char label[WS_RAW_TASK_LABEL_SIZE];

      g_critical ("%s: called outside a fiber, by task %s: it suspends the fiber that "
                  "calls it, so it works only in the function of a fiber "
                  "(ws_runtime_spawn_fiber, ws_runtime_spawn_local_fiber), with that "
                  "fiber's own WsContext; from a poll function, make the call in a job "
                  "of ws_runtime_spawn_blocking", strfunc, ws_context_label (cx, label));
      return AWAIT_REFUSED;
    }
  if (cancellable && ws_fiber_check_cancelled (cx))
    return AWAIT_CANCELLED;

  offload = ws_runtime_core_get_offload (core);
  op->waker = ws_context_get_waker (cx);
  ws_offload_submit (offload, op);

  /* Ended within the submission (io_uring, ws-offload.c): no suspend,
   * but the call spends the cooperative budget as any awaitable that
   * finds its value ready does, so that a loop of such calls still lets
   * the thread's other tasks, or its main loop, run now and then. */
  if (ws_offload_op_is_done (op))
    {
      if (!ws_context_poll_proceed (cx))
        (void) ws_fiber_suspend (cx);
      return AWAIT_DONE;
    }

  while (!ws_offload_op_is_done (op))
    {
      /* The syscall's name, for WS_DEBUG=stuck. */
      ws_context_note_await (cx, strfunc);
      if (!ws_fiber_suspend (cx))
        {
          /* Cancelled (or a suspend refused inside a dispatch, which gave
           * its critical): the op stays ours until it is done. On a worker
           * the wait hands the worker's queue to another thread first; a
           * main context's thread cannot hand off, and waits itself. */
          Wait w = { offload, op };

          cancelled = ws_fiber_check_cancelled (cx);
          if (!ws_block_in_place (wait_op, &w, NULL))
            ws_offload_wait (offload, op);
          break;
        }
    }
  return cancelled && cancellable ? AWAIT_CANCELLED : AWAIT_DONE;
}

static void
set_cancelled (GError    **error,
               const char *call)
{
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED,
               "%s: the fiber's task was cancelled", call);
}

static void
set_errno (GError    **error,
           const char *call,
           gint64      result)
{
  int errsv = (int) -result;

  g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv), "%s failed: %s", call,
               g_strerror (errsv));
}

static gssize
read_write (WsContext     *cx,
            WsOffloadKind  kind,
            int            fd,
            gpointer       buf,
            gsize          count,
            goffset        offset,
            GError       **error,
            const char    *call,
            const char    *strfunc)
{
  WsOffloadOp op = { 0 };

  op.kind = kind;
  op.fd = fd;
  op.buf = buf;
  op.count = count;
  op.offset = offset;
  switch (await_op (cx, &op, TRUE, strfunc))
    {
    case AWAIT_REFUSED:
      return -1;
    case AWAIT_CANCELLED:
      set_cancelled (error, call);
      return -1;
    case AWAIT_DONE:
    default:
      break;
    }
  if (op.result < 0)
    {
      set_errno (error, call, op.result);
      return -1;
    }
  return (gssize) op.result;
}

/**
 * ws_fiber_read: (skip)
 * @cx: the context of the running fiber
 * @fd: a file descriptor open for reading
 * @buf: (out caller-allocates) (array length=count) (element-type guint8):
 *   where the bytes go
 * @count: at most this many bytes are read (and at most 0x7ffff000, as
 *   Linux's read(2))
 * @error: return location for a #GError
 *
 * Reads from @fd at its file position, as `read (fd, buf, count)`,
 * without blocking the fiber's thread: the call runs on the runtime's
 * syscall offload (io_uring where the kernel allows it, or a few threads
 * of its own) and the fiber suspends until it has returned. No task is
 * made per call: it is much cheaper than [func@Ws.fiber_run_in_thread]
 * for one syscall (doc/blocking.md says which to use when).
 *
 * As read(2), it may read fewer bytes than @count; 0 is the end of the
 * file. Do not call it twice at once on one descriptor's file position
 * (two fibers reading one pipe): use [func@Ws.fiber_pread] for files.
 *
 * Cancellation: if the fiber's task is cancelled while the read is in
 * flight, the call still waits for the read to end (it writes into @buf,
 * which is the caller's), then fails with %G_IO_ERROR_CANCELLED; the
 * bytes it read are lost. The read is not interrupted: the thread that
 * unwinds the cancelled fiber waits for it, so a read that never ends (a
 * pipe nobody writes) holds that thread. If the task was cancelled before
 * the call, nothing is read.
 *
 * Calling it outside a fiber is a programmer error: a critical naming the
 * fix, and -1 with @error left unset.
 *
 * Returns: the number of bytes read, or -1 with @error set (a
 *   %G_IO_ERROR from errno, its message naming the call)
 */
gssize
ws_fiber_read (WsContext  *cx,
               int         fd,
               void       *buf,
               gsize       count,
               GError    **error)
{
  g_return_val_if_fail (buf != NULL || count == 0, -1);
  g_return_val_if_fail (error == NULL || *error == NULL, -1);

  return read_write (cx, WS_OFFLOAD_READ, fd, buf, count, -1, error, "read()", G_STRFUNC);
}

/**
 * ws_fiber_pread: (skip)
 * @cx: the context of the running fiber
 * @fd: a file descriptor open for reading, of a file that can seek
 * @buf: (out caller-allocates) (array length=count) (element-type guint8):
 *   where the bytes go
 * @count: at most this many bytes are read (and at most 0x7ffff000)
 * @offset: where in the file to read, 0 or more
 * @error: return location for a #GError
 *
 * Reads from @fd at @offset, as `pread (fd, buf, count, offset)`, without
 * blocking the fiber's thread, as [func@Ws.fiber_read] does (the same
 * rules for cancellation and misuse). The file position is left as it
 * is, so many fibers may read one descriptor at once.
 *
 * Returns: the number of bytes read (0 at or past the end), or -1 with
 *   @error set
 */
gssize
ws_fiber_pread (WsContext  *cx,
                int         fd,
                void       *buf,
                gsize       count,
                goffset     offset,
                GError    **error)
{
  g_return_val_if_fail (buf != NULL || count == 0, -1);
  g_return_val_if_fail (offset >= 0, -1);
  g_return_val_if_fail (error == NULL || *error == NULL, -1);

  return read_write (cx, WS_OFFLOAD_READ, fd, buf, count, offset, error, "pread()", G_STRFUNC);
}

/**
 * ws_fiber_write: (skip)
 * @cx: the context of the running fiber
 * @fd: a file descriptor open for writing
 * @buf: (array length=count) (element-type guint8): the bytes to write
 * @count: at most this many bytes are written (and at most 0x7ffff000)
 * @error: return location for a #GError
 *
 * Writes to @fd at its file position, as `write (fd, buf, count)`,
 * without blocking the fiber's thread, as [func@Ws.fiber_read] reads (the
 * same rules for cancellation and misuse: a write in flight when the task
 * is cancelled still ends, and the call then fails with
 * %G_IO_ERROR_CANCELLED, although the bytes may have been written). As
 * write(2), it may write fewer bytes than @count: loop on the rest.
 *
 * Returns: the number of bytes written, or -1 with @error set
 */
gssize
ws_fiber_write (WsContext   *cx,
                int          fd,
                const void  *buf,
                gsize        count,
                GError     **error)
{
  g_return_val_if_fail (buf != NULL || count == 0, -1);
  g_return_val_if_fail (error == NULL || *error == NULL, -1);

  return read_write (cx, WS_OFFLOAD_WRITE, fd, (gpointer) buf, count, -1, error, "write()",
                     G_STRFUNC);
}

/**
 * ws_fiber_pwrite: (skip)
 * @cx: the context of the running fiber
 * @fd: a file descriptor open for writing, of a file that can seek
 * @buf: (array length=count) (element-type guint8): the bytes to write
 * @count: at most this many bytes are written (and at most 0x7ffff000)
 * @offset: where in the file to write, 0 or more
 * @error: return location for a #GError
 *
 * Writes to @fd at @offset, as `pwrite (fd, buf, count, offset)`, without
 * blocking the fiber's thread (the rules of [func@Ws.fiber_write]).
 *
 * Returns: the number of bytes written, or -1 with @error set
 */
gssize
ws_fiber_pwrite (WsContext   *cx,
                 int          fd,
                 const void  *buf,
                 gsize        count,
                 goffset      offset,
                 GError     **error)
{
  g_return_val_if_fail (buf != NULL || count == 0, -1);
  g_return_val_if_fail (offset >= 0, -1);
  g_return_val_if_fail (error == NULL || *error == NULL, -1);

  return read_write (cx, WS_OFFLOAD_WRITE, fd, (gpointer) buf, count, offset, error,
                     "pwrite()", G_STRFUNC);
}

/**
 * ws_fiber_fsync: (skip)
 * @cx: the context of the running fiber
 * @fd: a file descriptor
 * @error: return location for a #GError
 *
 * Flushes @fd's file to its storage, as `fsync (fd)`, without blocking
 * the fiber's thread (the rules of [func@Ws.fiber_read] for cancellation
 * and misuse: a cancel does not stop the flush, and the call then fails
 * with %G_IO_ERROR_CANCELLED).
 *
 * Returns: %TRUE once the file is on its storage, or %FALSE with @error
 *   set
 */
gboolean
ws_fiber_fsync (WsContext  *cx,
                int         fd,
                GError    **error)
{
  WsOffloadOp op = { 0 };

  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  op.kind = WS_OFFLOAD_FSYNC;
  op.fd = fd;
  switch (await_op (cx, &op, TRUE, G_STRFUNC))
    {
    case AWAIT_REFUSED:
      return FALSE;
    case AWAIT_CANCELLED:
      set_cancelled (error, "fsync()");
      return FALSE;
    case AWAIT_DONE:
    default:
      break;
    }
  if (op.result < 0)
    {
      set_errno (error, "fsync()", op.result);
      return FALSE;
    }
  return TRUE;
}

/**
 * ws_fiber_openat: (skip)
 * @cx: the context of the running fiber
 * @dirfd: the directory that a relative @path starts from, or `AT_FDCWD`
 *   for the working directory
 * @path: (type filename): the file's path
 * @flags: open(2)'s flags, such as `O_RDONLY | O_CLOEXEC`
 * @mode: the permissions of a file that `O_CREAT` makes, such as 0644
 * @error: return location for a #GError
 *
 * Opens @path, as `openat (dirfd, path, flags, mode)`, without blocking
 * the fiber's thread (the rules of [func@Ws.fiber_read] for misuse). A
 * missing file fails with %G_IO_ERROR_NOT_FOUND. Add `O_CLOEXEC` to
 * @flags, as GLib does, unless the descriptor is meant for a child
 * process.
 *
 * If the fiber's task is cancelled while the call is in flight, the call
 * waits for it to end, closes the descriptor it may have opened, and
 * fails with %G_IO_ERROR_CANCELLED.
 *
 * Returns: the new file descriptor, or -1 with @error set
 */
int
ws_fiber_openat (WsContext   *cx,
                 int          dirfd,
                 const char  *path,
                 int          flags,
                 int          mode,
                 GError     **error)
{
  WsOffloadOp op = { 0 };
  g_autofree char *display = NULL;

  g_return_val_if_fail (path != NULL, -1);
  g_return_val_if_fail (error == NULL || *error == NULL, -1);

  op.kind = WS_OFFLOAD_OPENAT;
  op.fd = dirfd;
  op.buf = (gpointer) path;
  op.flags = flags;
  op.mode = (guint) mode;
  switch (await_op (cx, &op, TRUE, G_STRFUNC))
    {
    case AWAIT_REFUSED:
      return -1;
    case AWAIT_CANCELLED:
      /* A descriptor nobody will get: closed here (a close does not
       * block on a file just opened). */
      if (op.result >= 0 && ws_offload_op_is_done (&op))
        close ((int) op.result);
      set_cancelled (error, "openat()");
      return -1;
    case AWAIT_DONE:
    default:
      break;
    }
  if (op.result < 0)
    {
      int errsv = (int) -op.result;

      display = g_filename_display_name (path);
      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv),
                   "openat() of “%s” failed: %s", display, g_strerror (errsv));
      return -1;
    }
  return (int) op.result;
}

/**
 * ws_fiber_close: (skip)
 * @cx: the context of the running fiber
 * @fd: the file descriptor to close
 * @error: return location for a #GError
 *
 * Closes @fd, as `close (fd)`, without blocking the fiber's thread (a
 * close may block: the last close of a file on a network file system
 * flushes it). Unlike the other calls it is not cut short by a cancel:
 * @fd is closed also when the fiber's task was cancelled, before or
 * during the call, and the call reports close's own result, so a cleanup
 * path can rely on it. As with close(2), @fd is closed also when the call
 * fails, and must not be closed again.
 *
 * Calling it outside a fiber is a programmer error: a critical naming the
 * fix, and %FALSE; @fd is then left open.
 *
 * Returns: %TRUE, or %FALSE with @error set
 */
gboolean
ws_fiber_close (WsContext  *cx,
                int         fd,
                GError    **error)
{
  WsOffloadOp op = { 0 };

  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  op.kind = WS_OFFLOAD_CLOSE;
  op.fd = fd;
  if (await_op (cx, &op, FALSE, G_STRFUNC) == AWAIT_REFUSED)
    return FALSE;
  if (op.result < 0)
    {
      set_errno (error, "close()", op.result);
      return FALSE;
    }
  return TRUE;
}
