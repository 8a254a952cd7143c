/* ws-io-op-private.h: the adapter every WsIoOp operation is written on
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * An operation is one WsIoOpVTable (a row: its names, its GIO call, its
 * _finish(), the type of its result) and one constructor that checks the
 * arguments and fills the operation; ws-io-op.c polls every operation
 * the same way (the protocol is in its opening comment). The rows live
 * one file per family: ws-io-op-file.c, ws-io-op-stream.c,
 * ws-io-op-subprocess.c, ws-io-op-dbus.c. A new operation is a row and a
 * constructor in its family's file, and its prototype in ws-io-op.h.
 */

#pragma once

#include <stdatomic.h>

#include "ws-io-op.h"
#include "ws-async-op.h"

G_BEGIN_DECLS

typedef struct
{
  /* What a refused finish names: the constructor, and the finish
   * function that takes this operation's outcome. */
  const char *constructor;
  const char *finish;
  /* Bytes of the operation's own arguments and poll state, after the
   * WsIoOp (ws_io_op_get_priv); zeroed at creation. */
  gsize       priv_size;

  /* Makes the GIO call of the current step (self->step, 0 first) on the
   * polling thread; @cancellable and @data go to the call, whose callback
   * is ws_async_op_callback. */
  void      (*start)       (WsIoOp       *self,
                            GCancellable *cancellable,
                            gpointer      data);
  /* Takes the step's result with its _finish(): stores the outcome
   * (self->result, or self->error) and returns TRUE when the operation is
   * over, or moves self->step on and returns FALSE for another call. */
  gboolean  (*finish_step) (WsIoOp       *self,
                            GAsyncResult *result);
  /* The value of ws_runtime_spawn_io's task: the type of self->result
   * when it is one object, boxed or variant; NULL for none. */
  GType     (*value_type)  (void);
  /* Frees what the priv part holds; NULL if it holds nothing to free. */
  void      (*clear)       (WsIoOp       *self);
} WsIoOpVTable;

struct _WsIoOp
{
  gatomicrefcount     ref_count;
  const WsIoOpVTable *vtable;

  /* The arguments, written by the constructor. */
  GObject            *source;        /* the GFile, stream, GSubprocess or GDBusConnection */
  GBytes             *input;         /* what is written, if anything */
  char               *attributes;    /* the GFileInfo attributes, if any */
  GFileQueryInfoFlags query_flags;   /* a query's: whether to follow links */

  /* The poll state: the polling task's alone (ws-io-op.c). */
  WsAsyncOp          *op;            /* the step in flight */
  guint               step;

  /* The outcome, set before `done`. */
  gpointer            result;
  GDestroyNotify      result_free;
  GError             *error;
  _Atomic gboolean    done;
};

WsIoOp   *ws_io_op_new                 (const WsIoOpVTable *vtable,
                                        gpointer            source);
gboolean  ws_io_op_check_finish        (WsIoOp             *self,
                                        const char         *function,
                                        gboolean            any_kind,
                                        GError            **error);
gboolean  ws_io_op_take_error          (WsIoOp             *self,
                                        GError            **error);
void      ws_io_op_keep_until_callback (GCancellable       *cancellable,
                                        gpointer            data,
                                        GDestroyNotify      destroy);

/* The operation's own part, after the WsIoOp in the same allocation. */
static inline gpointer
ws_io_op_get_priv (WsIoOp *self)
{
  return self + 1;
}

/* Stores @result, of the type the row's value_type names, as the outcome. */
static inline void
ws_io_op_set_result (WsIoOp         *self,
                     gpointer        result,
                     GDestroyNotify  result_free)
{
  self->result = result;
  self->result_free = result_free;
}

G_END_DECLS
