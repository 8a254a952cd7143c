/* ws-offload-private.h: one blocking syscall run off the calling thread
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * See ws-offload.c for the two backends and the completion protocol.
 */

#pragma once

#include <glib.h>

#include "ws-lock-private.h"
#include "ws-waker-private.h"

G_BEGIN_DECLS

typedef enum
{
  WS_OFFLOAD_READ,       /* read (fd, buf, count), or pread at offset >= 0 */
  WS_OFFLOAD_WRITE,      /* write (fd, buf, count), or pwrite at offset >= 0 */
  WS_OFFLOAD_FSYNC,      /* fsync (fd) */
  WS_OFFLOAD_OPENAT,     /* openat (fd, path, flags, mode) */
  WS_OFFLOAD_CLOSE,      /* close (fd) */
} WsOffloadKind;

/* The largest count one read or write is given, as Linux's own cap on a
 * read(2) (MAX_RW_COUNT): a larger count is cut to it. */
#define WS_OFFLOAD_MAX_COUNT ((gsize) 0x7ffff000)

typedef struct _WsOffloadOp WsOffloadOp;

/* One call. The caller owns the record (a fiber keeps it on its stack)
 * and must not reuse or free it before ws_offload_op_is_done () returned
 * TRUE or ws_offload_wait () returned. */
struct _WsOffloadOp
{
  WsOffloadKind  kind;
  int            fd;                 /* the dirfd of OPENAT */
  gpointer       buf;                /* the path of OPENAT */
  gsize          count;
  gint64         offset;             /* -1: the file position */
  int            flags;
  guint          mode;
  WsWaker       *waker;              /* taken and woken (or, by its own submitter,
                                      * only released) at the end; may be NULL */
  gint64         result;             /* >= 0, or -errno; valid once done */
  _Atomic int    done;
  WsOffloadOp   *next;               /* the threads' queue */
};

typedef struct _WsOffload WsOffload;

WsOffload  *ws_offload_new             (guint         max_threads);
void        ws_offload_free            (WsOffload    *self);
void        ws_offload_submit          (WsOffload    *self,
                                        WsOffloadOp  *op);
void        ws_offload_wait            (WsOffload    *self,
                                        WsOffloadOp  *op);
const char *ws_offload_get_backend     (WsOffload    *self);
void        ws_offload_get_counts      (WsOffload    *self,
                                        guint        *n_threads,
                                        guint        *n_in_flight,
                                        guint        *peak_threads,
                                        guint        *peak_in_flight);
/* How many ops their own submitter ended (io_uring: ended within the
 * submission); for the tests. */
guint64     ws_offload_get_n_ended_by_submitter (WsOffload *self);
/* Tests: the next ws_offload_new () uses the threads whatever the kernel
 * allows (as WS_IO_URING=0 does). */
void        ws_offload_set_force_threads (gboolean    force);

/* Whether @op has ended; acquire, so its result can be read. */
static inline gboolean
ws_offload_op_is_done (WsOffloadOp *op)
{
  return atomic_load_explicit (&op->done, memory_order_acquire) != 0;
}

G_END_DECLS
