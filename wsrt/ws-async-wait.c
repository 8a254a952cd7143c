/* ws-async-wait.c: WsAsyncWait, an async wait that a waker ends
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A WsAsyncWait is the waker the core wakes, embedded with the wait's
 * WsCompletion in the data of its GTask, which is the GAsyncResult. Its
 * own rule, on top of the completion's (ws-completion.c, C1-C5): a wake
 * claims success; the cancellable claims G_IO_ERROR_CANCELLED; the last
 * waker reference dropped before any wake (the slot was given to another
 * waiter, the awaitable was freed) claims WS_ERROR_FAILED, so such a wait
 * is delivered with an error, never left pending. A waker reference is a
 * reference on the GTask, so a listed waker keeps the wait alive.
 */

#include "config.h"

#include <stdatomic.h>

#include "ws-async-wait-private.h"
#include "ws-completion-private.h"
#include "ws-error.h"
#include "ws-core-private.h"

struct _WsAsyncWait
{
  WsWaker          waker;          /* woken by the core */
  WsCompletion     completion;
  GTask           *task;           /* not a reference: we are its data */
  const char      *what;           /* static */
  _Atomic guint    n_waker_refs;   /* references held as a waker */
};

#define WAIT_FROM_WAKER(w) \
  ((WsAsyncWait *) ((guint8 *) (w) - G_STRUCT_OFFSET (WsAsyncWait, waker)))
#define WAIT_FROM_COMPLETION(c) \
  ((WsAsyncWait *) ((guint8 *) (c) - G_STRUCT_OFFSET (WsAsyncWait, completion)))

static void
waker_wake (WsWaker *waker)
{
  (void) ws_completion_complete (&WAIT_FROM_WAKER (waker)->completion, NULL);
}

static void
waker_ref (WsWaker *waker)
{
  WsAsyncWait *self = WAIT_FROM_WAKER (waker);

  /* Relaxed: a count; the awaitable orders a ref before its unref (its
   * lock, or the oneshot's release and acquire of its waker slot). */
  atomic_fetch_add_explicit (&self->n_waker_refs, 1, memory_order_relaxed);
  g_object_ref (self->task);
}

/* The last waker reference going without a wake: nothing can wake the
 * wait any more, so it ends now. A wake that came first claimed already
 * and this changes nothing (C1). */
static void
waker_unref (WsWaker *waker)
{
  WsAsyncWait *self = WAIT_FROM_WAKER (waker);
  GTask *task = self->task;

  /* AcqRel: the last unref sees every other holder's wake or drop. */
  if (atomic_fetch_sub_explicit (&self->n_waker_refs, 1, memory_order_acq_rel) == 1)
    (void) ws_completion_complete (&self->completion,
                                   g_error_new (WS_ERROR, WS_ERROR_FAILED,
                                                "The wait for %s ended unanswered: another "
                                                "wait or poll replaced it (one waiter at a "
                                                "time), or the last reference to what it "
                                                "waited on was released", self->what));
  g_object_unref (task);
}

static const WsWakerVTable wait_waker_vtable = {
  waker_wake,
  waker_ref,
  waker_unref,
};

static void
wait_cancelled (WsCompletion *completion)
{
  WsAsyncWait *self = WAIT_FROM_COMPLETION (completion);

  (void) ws_completion_complete (completion,
                                 g_error_new (G_IO_ERROR, G_IO_ERROR_CANCELLED,
                                              "The wait for %s was cancelled", self->what));
}

WsAsyncWait *
ws_async_wait_new (gpointer             source_object,
                   gpointer             source_tag,
                   const char          *what,
                   GCancellable        *cancellable,
                   GAsyncReadyCallback  callback,
                   gpointer             user_data)
{
  WsAsyncWait *self = g_new0 (WsAsyncWait, 1);
  GTask *task = g_task_new (source_object, cancellable, callback, user_data);

  g_task_set_source_tag (task, source_tag);
  /* The completion decides (C1): a wait that was woken stays woken. */
  g_task_set_check_cancellable (task, FALSE);
  g_task_set_task_data (task, self, g_free);
  self->waker.vtable = &wait_waker_vtable;
  self->task = task;
  self->what = what;
  atomic_init (&self->n_waker_refs, 0);
  ws_completion_init (&self->completion, task);
  /* Before anything can wake us (C5). */
  ws_completion_connect (&self->completion, cancellable, wait_cancelled);
  return self;
}

WsWaker *
ws_async_wait_get_waker (WsAsyncWait *self)
{
  return &self->waker;
}

void
ws_async_wait_complete (WsAsyncWait *self)
{
  (void) ws_completion_complete (&self->completion, NULL);
}

void
ws_async_wait_unref (WsAsyncWait *self)
{
  g_object_unref (self->task);
}

gboolean
ws_async_wait_is_valid (GAsyncResult *result,
                        gpointer      source_object,
                        gpointer      source_tag)
{
  return g_task_is_valid (result, source_object)
         && g_task_get_source_tag (G_TASK (result)) == source_tag;
}

gboolean
ws_async_wait_propagate_error (GAsyncResult  *result,
                               GError       **error)
{
  return !g_task_propagate_boolean (G_TASK (result), error);
}
