/* ws-promise.c: a task whose result comes from a callback
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * ws_runtime_spawn_promise () spawns an ordinary task (ws_runtime_spawn)
 * whose poll function calls the start function once, on its first poll,
 * and is then PENDING until the promise is completed: no worker is
 * blocked while the work that the start function began (a Vala coroutine,
 * GIO calls) runs on the worker's main context. What must hold:
 *
 *  - The result is set once. The first completion (a return_* or the drop
 *    of the last public reference) stores it under the lock and takes the
 *    task's waker; every later one is refused and frees what it was given.
 *    The task's poll reads `done` under the same lock, and registers its
 *    waker there when it is not set, so a completion from any thread
 *    either finds the waker or is seen by the poll: never lost.
 *  - A promise nobody can complete ends the task. Two counts: `ref_count`
 *    counts the public references (the start function's, and those its
 *    code took); when it reaches 0 without a result, the task ends with
 *    %WS_ERROR_FAILED. `n_holders` keeps the memory: 1 for all the public
 *    references together and 1 for the task, whose destroy notify drops
 *    it. So the memory outlives whichever of the task and the code ends
 *    last, and a completion after the task ended (cancelled, or shut down)
 *    is stored and freed with the promise.
 *  - The cancellable is the task's own (ws_context_get_cancellable), taken
 *    on the first poll, before the start function runs: cancelling the
 *    task, or shutting the runtime down, cancels it.
 *  - The task's destroy notify takes its waker out of the promise, so a
 *    promise that code keeps after the task ended holds no reference on
 *    the task.
 *  - Nothing here touches the global default main context: the start
 *    function's code that attaches a source there (the Timeout.add trap
 *    of doc/getting-started-vala.md) is not detected, as detecting it
 *    means acquiring or looking into a context wsrt does not own
 *    (doc/architecture.md, "Rules: main contexts").
 */

#include "config.h"

#include <stdatomic.h>

#include "ws-promise.h"
#include "ws-context.h"
#include "ws-error.h"
#include "ws-core-private.h"
#include "ws-refuse-private.h"

typedef enum
{
  RESULT_VALUE,
  RESULT_POINTER,
  RESULT_ERROR,
} ResultKind;

struct _WsPromise
{
  gatomicrefcount  ref_count;       /* public references */
  _Atomic gint     n_holders;       /* the public references (1), the task (1) */
  GCancellable    *cancellable;     /* the task's; set before any reference escapes */
  WsLock           lock;            /* guards what follows */
  gboolean         done;            /* a result was set: no other is taken */
  gboolean         taken;           /* the task moved the result out */
  ResultKind       kind;
  GValue           value;
  gpointer         pointer;
  GDestroyNotify   pointer_destroy;
  GError          *error;
  WsWaker         *waker;           /* the task's, while it waits */
};

/* The data of the task. */
typedef struct
{
  WsPromiseFunc   start;
  gpointer        user_data;
  GDestroyNotify  destroy;
  WsPromise      *promise;          /* a holder, from the first poll on */
} PromiseTask;

/**
 * WsPromise:
 *
 * The completing side of a task spawned with
 * [method@Ws.Runtime.spawn_promise]: code that runs outside the task's
 * polls (a Vala `async` method, GIO callbacks) ends the task with
 * [method@Ws.Promise.return_value] or [method@Ws.Promise.return_error],
 * from any thread. The [class@Ws.Task] is the other side: await it with
 * [method@Ws.Task.wait_async] on a main loop, [method@Ws.Task.poll] in
 * another task or [method@Ws.Task.wait] on a plain thread.
 *
 * ```vala
 * var task = rt.spawn_promise ((promise) => load.begin (promise, file));
 *
 * async void load (Ws.Promise promise, File file) {
 *     try {
 *         var bytes = yield file.load_bytes_async (promise.get_cancellable (), null);
 *         promise.return_value (bytes);
 *     } catch (Error e) {
 *         promise.return_error (e);
 *     }
 * }
 * ```
 *
 * The task stays pending, with no worker blocked, until the promise is
 * completed. A promise whose last reference is dropped before it is
 * completed ends the task with %WS_ERROR_FAILED, so a coroutine that
 * forgets to complete it does not leave the task hanging. Cancelling the
 * task cancels [method@Ws.Promise.get_cancellable]; the task then ends as
 * cancelled at once, and a result given later is dropped.
 */

G_DEFINE_BOXED_TYPE (WsPromise, ws_promise, ws_promise_ref, ws_promise_unref)

static WsPromise *
promise_new (GCancellable *cancellable)
{
  WsPromise *self = g_new0 (WsPromise, 1);

  g_atomic_ref_count_init (&self->ref_count);
  atomic_init (&self->n_holders, 2);
  self->cancellable = g_object_ref (cancellable);
  ws_lock_init (&self->lock);
  return self;
}

static void
clear_result (ResultKind      kind,
              GValue         *value,
              gpointer        pointer,
              GDestroyNotify  pointer_destroy,
              GError         *error)
{
  switch (kind)
    {
    case RESULT_VALUE:
      g_value_unset (value);
      break;
    case RESULT_POINTER:
      if (pointer_destroy != NULL)
        pointer_destroy (pointer);
      break;
    case RESULT_ERROR:
    default:
      g_clear_error (&error);
      break;
    }
}

static void
release_holder (WsPromise *self)
{
  /* AcqRel: the last holder sees every write the other made before it let
   * go (the result stored, the waker taken). */
  if (atomic_fetch_sub_explicit (&self->n_holders, 1, memory_order_acq_rel) != 1)
    return;

  g_assert (self->waker == NULL);
  if (self->done && !self->taken)
    clear_result (self->kind, &self->value, self->pointer, self->pointer_destroy, self->error);
  g_object_unref (self->cancellable);
  ws_lock_clear (&self->lock);
  g_free (self);
}

/* Stores the result and wakes the task, or refuses it (returns FALSE)
 * when the promise is already completed; takes what it is given either
 * way. */
static gboolean
complete (WsPromise      *self,
          ResultKind      kind,
          GValue         *value,
          gpointer        pointer,
          GDestroyNotify  pointer_destroy,
          GError         *error)
{
  WsWaker *waker = NULL;
  gboolean accepted = FALSE;

  ws_lock_lock (&self->lock);
  if (!self->done)
    {
      self->done = TRUE;
      self->kind = kind;
      if (kind == RESULT_VALUE)
        self->value = *value;       /* moved: the caller's copy is ours */
      self->pointer = pointer;
      self->pointer_destroy = pointer_destroy;
      self->error = error;
      waker = g_steal_pointer (&self->waker);
      accepted = TRUE;
    }
  ws_lock_unlock (&self->lock);

  if (!accepted)
    clear_result (kind, value, pointer, pointer_destroy, error);
  ws_waker_take_and_wake (waker);
  return accepted;
}

/**
 * ws_promise_ref:
 * @self: a #WsPromise
 *
 * Takes a reference on @self.
 *
 * Returns: (transfer full): @self
 */
WsPromise *
ws_promise_ref (WsPromise *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  g_atomic_ref_count_inc (&self->ref_count);
  return self;
}

/**
 * ws_promise_unref:
 * @self: (transfer full): a #WsPromise
 *
 * Releases a reference. Dropping the last one before the promise is
 * completed ends the task with %WS_ERROR_FAILED.
 */
void
ws_promise_unref (WsPromise *self)
{
  g_return_if_fail (self != NULL);

  /* A full barrier: the thread that drops the last reference sees what
   * the others did with the promise before they dropped theirs. */
  if (!g_atomic_ref_count_dec (&self->ref_count))
    return;

  /* Nobody else can complete it now: if it is not done, it never will
   * be. */
  if (!ws_promise_is_completed (self))
    complete (self, RESULT_ERROR, NULL, NULL, NULL,
              g_error_new_literal (WS_ERROR, WS_ERROR_FAILED,
                                   "The promise of the task was dropped without a result: "
                                   "the code it was given to must call "
                                   "ws_promise_return_value() or ws_promise_return_error() "
                                   "(Vala: promise.return_value ()) on every path"));
  release_holder (self);
}

/**
 * ws_promise_get_cancellable:
 * @self: a #WsPromise
 *
 * Gets the task's #GCancellable (as [method@Ws.Context.get_cancellable]
 * gives it to the task's polls): it is cancelled when the task is
 * cancelled by [method@Ws.Task.cancel], a task group or the runtime's
 * shutdown. Pass it to the GIO calls and the `_async` waits of wsrt that
 * the work makes, so that they stop with the task.
 *
 * Returns: (transfer none): the task's cancellable, valid as long as @self
 */
GCancellable *
ws_promise_get_cancellable (WsPromise *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return self->cancellable;
}

/**
 * ws_promise_is_completed:
 * @self: a #WsPromise
 *
 * Tells whether the promise has its result (it was completed, or it was
 * dropped). Other threads may complete it at any time.
 *
 * Returns: %TRUE once a result is set
 */
gboolean
ws_promise_is_completed (WsPromise *self)
{
  gboolean done;

  g_return_val_if_fail (self != NULL, FALSE);

  ws_lock_lock (&self->lock);
  done = self->done;
  ws_lock_unlock (&self->lock);
  return done;
}

static void
refuse_second (const char *strfunc)
{
  g_critical ("%s: the promise is completed already; complete it once, with "
              "ws_promise_return_value(), ws_promise_return_pointer() or "
              "ws_promise_return_error()", strfunc);
}

/**
 * ws_promise_return_value:
 * @self: a #WsPromise
 * @value: the result; copied
 *
 * Ends the task with a copy of @value, which waiters read with
 * [method@Ws.Task.get_value]. Any thread may call it, once.
 */
void
ws_promise_return_value (WsPromise    *self,
                         const GValue *value)
{
  GValue copy = G_VALUE_INIT;

  g_return_if_fail (self != NULL);
  g_return_if_fail (G_IS_VALUE (value));

  g_value_init (&copy, G_VALUE_TYPE (value));
  g_value_copy (value, &copy);
  if (!complete (self, RESULT_VALUE, &copy, NULL, NULL, NULL))
    refuse_second (G_STRFUNC);
}

/**
 * ws_promise_return_pointer:
 * @self: a #WsPromise
 * @result: (nullable) (transfer full): the result
 * @result_destroy: (nullable): frees @result if nobody takes it
 *
 * Ends the task with @result, which a waiter takes with
 * [method@Ws.Task.propagate_pointer]. Any thread may call it, once; a
 * refused call frees @result.
 */
void
ws_promise_return_pointer (WsPromise      *self,
                           gpointer        result,
                           GDestroyNotify  result_destroy)
{
  if (self == NULL)
    {
      if (result_destroy != NULL)
        result_destroy (result);
      g_return_if_fail (self != NULL);
    }

  if (!complete (self, RESULT_POINTER, NULL, result, result_destroy, NULL))
    refuse_second (G_STRFUNC);
}

/**
 * ws_promise_return_error:
 * @self: a #WsPromise
 * @error: (transfer full): the error
 *
 * Fails the task with @error, which it takes. Any thread may call it,
 * once. Waiters get a copy of @error.
 */
void
ws_promise_return_error (WsPromise *self,
                         GError    *error)
{
  if (self == NULL || error == NULL)
    {
      g_clear_error (&error);
      g_return_if_fail (self != NULL);
      g_return_if_fail (error != NULL);
    }

  if (!complete (self, RESULT_ERROR, NULL, NULL, NULL, error))
    refuse_second (G_STRFUNC);
}

/* ---- the task ----------------------------------------------------------- */

static WsPoll
promise_task_poll (WsContext *cx,
                   gpointer   data)
{
  PromiseTask *pt = data;
  WsPromise *self = pt->promise;
  WsWaker *old = NULL;
  ResultKind kind;
  GValue value = G_VALUE_INIT;
  gpointer pointer;
  GDestroyNotify pointer_destroy;
  GError *error;

  if (self == NULL)
    {
      /* The first poll: the start function gets the one public reference
       * and takes its own if it keeps the promise. */
      self = pt->promise = promise_new (ws_context_get_cancellable (cx));
      pt->start (self, pt->user_data);
      ws_promise_unref (self);
    }

  ws_lock_lock (&self->lock);
  if (!self->done)
    {
      old = ws_waker_slot_replace (&self->waker, cx);
      ws_lock_unlock (&self->lock);
      if (old != NULL)
        old->vtable->unref (old);
      return WS_POLL_PENDING;
    }
  /* Moved out: the result is the task's now. */
  self->taken = TRUE;
  kind = self->kind;
  value = self->value;
  self->value = (GValue) G_VALUE_INIT;
  pointer = self->pointer;
  pointer_destroy = self->pointer_destroy;
  error = self->error;
  self->error = NULL;
  ws_lock_unlock (&self->lock);

  switch (kind)
    {
    case RESULT_VALUE:
      ws_context_return_value (cx, &value);
      g_value_unset (&value);
      break;
    case RESULT_POINTER:
      ws_context_return_pointer (cx, pointer, pointer_destroy);
      break;
    case RESULT_ERROR:
    default:
      ws_context_return_error (cx, error);
      break;
    }
  return WS_POLL_READY;
}

static void
promise_task_free (gpointer data)
{
  PromiseTask *pt = data;
  WsPromise *self = pt->promise;

  if (pt->destroy != NULL)
    pt->destroy (pt->user_data);

  if (self != NULL)
    {
      WsWaker *waker;

      /* The task no longer waits. `done` stays as it is: a result the
       * task did not take is freed with the promise, and a completion
       * from now on is stored and freed the same way. */
      ws_lock_lock (&self->lock);
      waker = g_steal_pointer (&self->waker);
      ws_lock_unlock (&self->lock);
      if (waker != NULL)
        waker->vtable->unref (waker);
      release_holder (self);
    }
  g_free (pt);
}

/**
 * ws_runtime_spawn_promise: (skip)
 * @self: a #WsRuntime
 * @start: (scope notified) (closure user_data) (destroy destroy): starts
 *   the work
 * @user_data: data for @start
 * @destroy: (nullable): frees @user_data once the task has ended
 *
 * Spawns a task whose result comes from a [struct@Ws.Promise]: the way to
 * run a Vala `async` method, or any code that completes through callbacks,
 * as a task.
 *
 * @start runs once, on the task's first poll, on a worker thread whose
 * thread-default #GMainContext is the worker's own: the GIO calls and the
 * `_async` waits of wsrt ([method@Ws.Sleep.wait_async],
 * [method@Ws.Oneshot.receive_async], [method@Ws.Task.wait_async]...)
 * that the work starts there complete there, so a Vala coroutine resumes
 * after each `yield` on that worker. It must not block; it returns at
 * once, leaving the work to complete the promise later, from any thread.
 *
 * The task is pending, with no thread blocked, until the promise is
 * completed; it then ends with that result, or with %WS_ERROR_FAILED if
 * the last reference to the promise was dropped first. Cancelling the
 * task ends it as cancelled at once and cancels the promise's
 * cancellable. A task cancelled before its first poll never calls
 * @start.
 *
 * Do not use `Timeout.add ()` or `Idle.add ()` in that work: they attach
 * to the global default main context, not the worker's, and the
 * coroutine would resume on the main thread, or never if nothing
 * iterates it. wsrt does not detect this, as it never looks into a
 * context it does not own. Use [func@Ws.Sleep.for_async], or attach the
 * source to g_main_context_get_thread_default().
 *
 * Returns: (transfer full): the task; await it as any other
 */
WsTask *
ws_runtime_spawn_promise (WsRuntime      *self,
                          WsPromiseFunc   start,
                          gpointer        user_data,
                          GDestroyNotify  destroy)
{
  PromiseTask *pt;

  ws_return_val_if_fail_free (WS_IS_RUNTIME (self), destroy, user_data, NULL);
  ws_return_val_if_fail_free (start != NULL, destroy, user_data, NULL);

  pt = g_new0 (PromiseTask, 1);
  pt->start = start;
  pt->user_data = user_data;
  pt->destroy = destroy;
  return ws_runtime_spawn (self, promise_task_poll, pt, promise_task_free);
}
