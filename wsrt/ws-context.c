/* ws-context.c: the context of one poll, and wakers
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "ws-context.h"
#include "ws-context-private.h"
#include "ws-core-private.h"
#include "ws-task-private.h"

/**
 * WsContext:
 *
 * The context of one poll of a task, like Rust's `Context`.
 *
 * It is valid only while the [callback@Ws.TaskFunc] that received it runs.
 * Through it a task sets its result ([method@Ws.Context.return_value] and
 * friends), yields ([method@Ws.Context.yield]) and gets the waker that
 * schedules it again ([method@Ws.Context.get_waker]).
 *
 * The boxed type exists so that bindings can pass it around; copying it
 * returns the same pointer, which is still only valid during the poll.
 */

static WsContext *
ws_context_copy (WsContext *self)
{
  return self;
}

static void
ws_context_free (WsContext *self)
{
}

G_DEFINE_BOXED_TYPE (WsContext, ws_context, ws_context_copy, ws_context_free)

/**
 * WsWaker:
 *
 * Schedules its task for another poll when woken.
 *
 * A waker is reference counted and may be woken from any thread, any number
 * of times: waking a task that is already scheduled, finished or cancelled
 * does nothing.
 */
G_DEFINE_BOXED_TYPE (WsWaker, ws_waker, ws_waker_ref, ws_waker_unref)

gboolean
ws_context_check_in_poll (WsContext  *cx,
                          const char *strfunc)
{
  if G_UNLIKELY (cx == NULL)
    {
      g_return_if_fail_warning (G_LOG_DOMAIN, strfunc, "context != NULL");
      return FALSE;
    }
  if G_UNLIKELY (cx->task == NULL)
    {
      g_critical ("%s: the WsContext is not in a poll: a WsContext is valid only "
                  "during the call of the poll function that received it. To act "
                  "on the task later, keep its waker (ws_context_get_waker) and "
                  "wake it, and set results, yield and await from within a poll",
                  strfunc);
      return FALSE;
    }
  return TRUE;
}

/* A second result in one poll: a critical that names the public call
 * (@strfunc) the program made. */
static gboolean
check_no_result (WsContext  *self,
                 const char *strfunc)
{
  if G_UNLIKELY (self->result.kind != WS_RESULT_NONE)
    {
      char label[WS_RAW_TASK_LABEL_SIZE];

      g_critical ("%s: task %s already returned a result this poll; "
                  "a task returns exactly one result", strfunc,
                  ws_context_label (self, label));
      return FALSE;
    }
  return TRUE;
}

/**
 * ws_context_return_pointer:
 * @self: a #WsContext
 * @result: (nullable) (transfer full): the result
 * @result_destroy: (nullable): frees @result if nobody takes it
 *
 * Sets the result of the task. Call it once, then return %WS_POLL_READY.
 * A waiter takes the result with [method@Ws.Task.propagate_pointer].
 */
void
ws_context_return_pointer (WsContext      *self,
                           gpointer        result,
                           GDestroyNotify  result_destroy)
{
  if (!ws_context_check_in_poll (self, G_STRFUNC) || !check_no_result (self, G_STRFUNC))
    {
      /* A refused call still frees what it was given. */
      if (result_destroy != NULL && result != NULL)
        result_destroy (result);
      return;
    }

  self->result.kind = WS_RESULT_POINTER;
  self->result.u.pointer.data = result;
  self->result.u.pointer.destroy = result_destroy;
}

static void
value_free (gpointer data)
{
  GValue *value = data;

  g_value_unset (value);
  g_free (value);
}

/* The core keeps results it cannot look into as a payload pointer and
 * the function that clears it: a copy of @value, on the heap. */
void
ws_result_set_value (WsResult     *result,
                     const GValue *value)
{
  GValue *copy = g_new0 (GValue, 1);

  g_value_init (copy, G_VALUE_TYPE (value));
  g_value_copy (value, copy);
  result->kind = WS_RESULT_PAYLOAD;
  result->u.pointer.data = copy;
  result->u.pointer.destroy = value_free;
}

/**
 * ws_context_return_value:
 * @self: a #WsContext
 * @value: the result; copied
 *
 * Sets the result of the task to a copy of @value. Call it once, then
 * return %WS_POLL_READY. Waiters read it with [method@Ws.Task.get_value];
 * bindings see it with its type (a task that returns the integer 42 gives
 * `42` to JavaScript).
 */
void
ws_context_return_value (WsContext    *self,
                         const GValue *value)
{
  ws_context_return_if_not_in_poll (self);
  g_return_if_fail (G_IS_VALUE (value));

  if (!check_no_result (self, G_STRFUNC))
    return;

  ws_result_set_value (&self->result, value);
}

/**
 * ws_context_return_uint64:
 * @self: a #WsContext
 * @value: the result
 *
 * Sets the result of the task to the integer @value, without an
 * allocation: the cheapest result there is, read with
 * [method@Ws.JoinHandle.finish_uint64]. Call it once, then return
 * %WS_POLL_READY. Through a [class@Ws.Task] the result is a value of type
 * %G_TYPE_UINT64 ([method@Ws.Task.get_value]).
 */
void
ws_context_return_uint64 (WsContext *self,
                          guint64    value)
{
  ws_context_return_if_not_in_poll (self);

  if (!check_no_result (self, G_STRFUNC))
    return;

  self->result.kind = WS_RESULT_UINT64;
  self->result.u.uint64 = value;
}

/**
 * ws_context_return_error:
 * @self: a #WsContext
 * @error: (transfer full): the error
 *
 * Fails the task with @error, which it takes. Call it once, then return
 * %WS_POLL_READY. Waiters get a copy of @error; the runtime goes on.
 */
void
ws_context_return_error (WsContext *self,
                         GError    *error)
{
  /* A refused call still frees what it was given; one critical each,
   * naming what was wrong (checked before the error is freed). */
  if (!ws_context_check_in_poll (self, G_STRFUNC))
    {
      g_clear_error (&error);
      return;
    }
  g_return_if_fail (error != NULL);
  if (!check_no_result (self, G_STRFUNC))
    {
      g_clear_error (&error);
      return;
    }

  self->result.kind = WS_RESULT_ERROR;
  self->result.u.error = error;
}

/**
 * ws_context_yield:
 * @self: a #WsContext
 *
 * Puts the task at the back of its run queue, so that other tasks run
 * first. Return what it returns:
 *
 * ```c
 * if (state->n++ < 1000)
 *   return ws_context_yield (cx);
 * ```
 *
 * Returns: %WS_POLL_PENDING
 */
WsPoll
ws_context_yield (WsContext *self)
{
  ws_context_return_val_if_not_in_poll (self, WS_POLL_PENDING);

  /* The wake of our own task is made when the poll returns, by its
   * transition to idle (ws-task-state-private.h). */
  self->yielded = TRUE;
  return WS_POLL_PENDING;
}

/* The task's GCancellable, as its core cancel hook. A local task's is
 * cancelled only on the thread that owns its context: the core runs the
 * hook on the cancelling thread first, and again, with RUNNING held,
 * where the task's future is destroyed, which for a local task is its
 * context's owner (ws-local-executor.c); the first run is skipped
 * elsewhere, so the cancellable's handlers (a GJS callback, a widget
 * update) run on the thread of the task's main loop.
 *
 * The last run settles (ws-raw-task.c, "Cancellation the work can see"):
 * @inside counts the runs in g_cancellable_cancel () of this hook, and
 * the last run, once its own call returned, waits until the only runs
 * left are those of its own thread that it is nested in: a handler that
 * ends the task where it runs (a shutdown that takes RUNNING from the
 * NOTIFIED task it cancels, a drain of a queue on that thread) cannot be
 * waited for. Each thread lists the runs it is inside in @emissions. A
 * handler on another thread that waits for the task to end, or for work
 * that the blocked thread would do, waits for itself, as with
 * g_cancellable_disconnect (); the documentation of
 * ws_context_get_cancellable () says so. */
typedef struct
{
  WsCancelHook  hook;
  GCancellable *cancellable;
  GMainContext *local_context;   /* a local task's (a reference): a cancel
                                  * may come after the host is gone */
  GMutex        lock;            /* guards @inside */
  GCond         settled;         /* @inside went down */
  guint         inside;
} CancellableHook;

typedef struct _Emission Emission;
struct _Emission
{
  CancellableHook *hook;
  Emission        *outer;
};

/* The hooks' runs this thread is inside, innermost first. */
static _Thread_local Emission *emissions WS_TLS_INITIAL_EXEC;

static guint
emissions_of (CancellableHook *h)
{
  guint n = 0;

  for (Emission *e = emissions; e != NULL; e = e->outer)
    n += e->hook == h;
  return n;
}

static void
cancellable_hook_cancel (WsCancelHook *hook,
                         gboolean      last)
{
  CancellableHook *h = (CancellableHook *) hook;
  Emission e = { h, emissions };
  guint own;

  if (h->local_context != NULL && !g_main_context_is_owner (h->local_context))
    return;

  g_mutex_lock (&h->lock);
  h->inside++;
  g_mutex_unlock (&h->lock);

  emissions = &e;
  g_cancellable_cancel (h->cancellable);
  emissions = e.outer;

  own = last ? emissions_of (h) : 0;
  g_mutex_lock (&h->lock);
  h->inside--;
  if (last)
    {
      while (h->inside > own)
        g_cond_wait (&h->settled, &h->lock);
    }
  else
    {
      /* The last run waits for a count that may include runs of its
       * own thread: wake it at every step down. */
      g_cond_signal (&h->settled);
    }
  g_mutex_unlock (&h->lock);
}

static void
cancellable_hook_free (WsCancelHook *hook)
{
  CancellableHook *h = (CancellableHook *) hook;

  g_clear_pointer (&h->local_context, g_main_context_unref);
  g_object_unref (h->cancellable);
  g_mutex_clear (&h->lock);
  g_cond_clear (&h->settled);
  g_free (hook);
}

/**
 * ws_context_set_task_name:
 * @self: a #WsContext
 * @name: (nullable): a human-readable name for the task, or %NULL to clear it
 *
 * Names the task being polled, as [method@Ws.Task.set_name] does, from
 * inside it: for a task spawned without a handle
 * ([method@Ws.Runtime.spawn_detached],
 * [method@Ws.Runtime.spawn_with_callback]), or to have the name from the
 * task's first poll on.
 */
void
ws_context_set_task_name (WsContext  *self,
                          const char *name)
{
  g_return_if_fail (self != NULL && self->task != NULL);

  ws_raw_task_set_name (self->task, name);
}

/**
 * ws_context_get_cancellable:
 * @self: a #WsContext
 *
 * Gets a #GCancellable that is cancelled when the task being polled is
 * cancelled: by [method@Ws.Task.cancel], [method@Ws.JoinHandle.cancel], a
 * task group's cancel, or the runtime's shutdown. The same object on
 * every poll of the task, made on the first call.
 *
 * Pass it to the GIO calls the task makes ([method@Ws.AsyncOp.start]
 * links the operations it starts to it), or check it in long work: a
 * blocking job ([method@Ws.Runtime.spawn_blocking]) that hashes a large
 * file can stop at g_cancellable_is_cancelled(), or return at once with
 * g_cancellable_set_error_if_cancelled().
 *
 * It is cancelled on the thread that cancels the task, while the task may
 * still be in a poll on another thread (its handlers run there, as for any
 * #GCancellable), and again, if it was not yet, just before the task's
 * destroy notify runs. A local task's ([method@Ws.Runtime.spawn_local]) is
 * cancelled only on the thread that owns the task's main context, when
 * it next dispatches the task, so its handlers run on that thread.
 *
 * The handlers of its #GCancellable::cancelled signal that these cancels
 * run have returned before the task's destroy notify runs, whichever
 * thread ran them, so a handler may use the task's data; only a handler
 * whose own thread ends the task inside it (a runtime shutdown from the
 * handler) finds the data gone when the call returns. The task's end
 * waits for handlers on other threads, as g_cancellable_disconnect()
 * does, on the thread that ends it (a worker): a handler must not wait
 * for the task to end, nor for other work of the runtime
 * ([method@Ws.Task.wait], [method@Ws.JoinHandle.wait]). A
 * g_cancellable_cancel() that the program makes itself on this
 * cancellable is not waited for.
 *
 * Returns: (transfer none): the task's cancellable, valid as long as the
 *   task
 */
GCancellable *
ws_context_get_cancellable (WsContext *self)
{
  WsCancelHook *hook;
  CancellableHook *h;

  ws_context_return_val_if_not_in_poll (self, NULL);

  hook = ws_raw_task_get_cancel_hook (self->task);
  if (hook != NULL)
    return ((CancellableHook *) hook)->cancellable;

  /* Only the poller installs, and we are it. */
  h = g_new0 (CancellableHook, 1);
  h->hook.cancel = cancellable_hook_cancel;
  h->hook.free = cancellable_hook_free;
  h->cancellable = g_cancellable_new ();
  g_mutex_init (&h->lock);
  g_cond_init (&h->settled);
  h->local_context = ws_core_task_local_context (self->task);
  if (h->local_context != NULL)
    g_main_context_ref (h->local_context);
  ws_raw_task_set_cancel_hook (self->task, &h->hook);
  return h->cancellable;
}

/**
 * ws_context_get_waker:
 * @self: a #WsContext
 *
 * Gets the waker of the task being polled. Keep it, return
 * %WS_POLL_PENDING, and call [method@Ws.Waker.wake] (from any thread) when
 * the task can make progress.
 *
 * Returns: (transfer full): the waker; release it with
 *   [method@Ws.Waker.unref]
 */
WsWaker *
ws_context_get_waker (WsContext *self)
{
  ws_context_return_val_if_not_in_poll (self, NULL);

  ws_raw_task_ref (self->task);
  WS_COUNT_WAKERS (1);
  return &self->task->waker;
}

/**
 * ws_waker_ref:
 * @self: a #WsWaker
 *
 * Takes a reference.
 *
 * Returns: (transfer full): @self
 */
WsWaker *
ws_waker_ref (WsWaker *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  self->vtable->ref (self);
  return self;
}

/**
 * ws_waker_unref:
 * @self: (transfer full): a #WsWaker
 *
 * Releases a reference.
 */
void
ws_waker_unref (WsWaker *self)
{
  g_return_if_fail (self != NULL);

  self->vtable->unref (self);
}

/**
 * ws_waker_wake:
 * @self: a #WsWaker
 *
 * Schedules the task for another poll. May be called from any thread; the
 * caller keeps its reference. A wake during a poll makes exactly one more
 * poll after it; a wake of a finished task does nothing.
 */
void
ws_waker_wake (WsWaker *self)
{
  g_return_if_fail (self != NULL);

  self->vtable->wake (self);
}
