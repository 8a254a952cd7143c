/* ws-task.c: the join handle of a task
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "ws-task-private.h"
#include "ws-error.h"
#include "ws-context.h"
#include "ws-core-private.h"
#include "ws-context-private.h"
#include "ws-async-wait-private.h"
#include "ws-delivery-private.h"
#include "ws-completion-private.h"
#include "ws-sleep.h"

/**
 * WsTask:
 *
 * The join handle of a task spawned on a [class@Ws.Runtime].
 *
 * The task itself is a plain structure inside the runtime; a `WsTask` is
 * made only when a caller asks for a handle. Through it you wait for the
 * task (from a task with [method@Ws.Task.poll], from a main loop with
 * [method@Ws.Task.wait_async], from a plain thread with
 * [method@Ws.Task.wait]), read its result and cancel it.
 *
 * Dropping the last reference to a `WsTask` detaches the task: it still
 * runs to its end.
 *
 * A task ends exactly once: it completes (with a result or a #GError), or
 * it is cancelled, and then waiters see `G_IO_ERROR_CANCELLED`.
 */

/* The ws_task_wait_async() without a GCancellable: one at a time per task,
 * embedded here as a WsCompletion in its custom form (ws-completion.c),
 * and the task itself is its GAsyncResult (GTask is its own result too),
 * so such a wait makes no object and no allocation. Its states, under the
 * task's lock: IDLE; LISTED, waiting for the end of the task
 * (face_waker_wake claims and queues it); QUEUED, from the claim to the
 * end of its callback, after which the completion is reset. Meanwhile the
 * wait holds a reference on the task and one on the context. A second
 * wait, or one with a GCancellable, makes a WsAsyncWait. */
enum
{
  OWN_WAIT_IDLE,
  OWN_WAIT_LISTED,
  OWN_WAIT_QUEUED,
};

struct _WsTask
{
  GObject              parent_instance;

  WsRawTask           *raw;               /* holds the join reference */
  WsWaker              face_waker;        /* registered with the core: wakes us */
  WsCompletion         own_wait;          /* the wait without a GCancellable: custom form */

  WsLock               lock;              /* guards what follows */
  WsCond               cond;
  guint8               registered;
  guint8               finished;
  guint8               own_wait_state;
  WsResult             result;
  WsWakerList          waiters;           /* woken when the task ends */
  GAsyncReadyCallback  own_wait_callback;
  gpointer             own_wait_user_data;
  GMainContext        *own_wait_context;
  /* A local task's context (a reference), read at creation: once the task
   * has ended its host may be gone (ws-raw-task.c, "Stale wakers"). */
  GMainContext        *local_context;
};

static void async_result_iface_init (GAsyncResultIface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (WsTask, ws_task, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (G_TYPE_ASYNC_RESULT, async_result_iface_init))

#define TASK_FROM_WAKER(w) ((WsTask *) ((guint8 *) (w) - G_STRUCT_OFFSET (WsTask, face_waker)))
#define TASK_FROM_ITEM(i) ((WsTask *) ((guint8 *) (i) - G_STRUCT_OFFSET (WsTask, own_wait.item)))

/* Keeps the outcome of the ended task. A plain integer result is kept as
 * a G_TYPE_UINT64 value, which is what bindings read. */
static void
take_outcome_locked (WsTask   *self,
                     WsResult *r)
{
  if (r->kind == WS_RESULT_UINT64)
    {
      GValue value = G_VALUE_INIT;

      g_value_init (&value, G_TYPE_UINT64);
      g_value_set_uint64 (&value, r->u.uint64);
      ws_result_set_value (&self->result, &value);
    }
  else
    self->result = *r;
  self->finished = TRUE;
}

static void
finish_locked (WsTask *self)
{
  WsResult r;

  if (self->finished)
    return;
  if (ws_raw_task_try_read_output (self->raw, NULL, &r))
    take_outcome_locked (self, &r);
}

static void
register_locked (WsTask *self)
{
  WsResult r;

  if (self->finished || self->registered)
    return;
  if (ws_raw_task_try_read_output (self->raw, &self->face_waker, &r))
    take_outcome_locked (self, &r);
  else
    self->registered = TRUE;
}

/* Under the lock: TRUE if the task has ended; otherwise @waker is listed
 * (with a reference of its own, once however often it is added) and woken
 * when the task ends. */
static gboolean
finished_or_listed_locked (WsTask  *self,
                           WsWaker *waker)
{
  finish_locked (self);
  if (!self->finished)
    register_locked (self);
  if (self->finished)
    return TRUE;
  ws_waker_list_add (&self->waiters, waker);
  return FALSE;
}

/* The core wakes us once, right after the task completed. */
static void
face_waker_wake (WsWaker *waker)
{
  WsTask *self = TASK_FROM_WAKER (waker);
  WsWakerList waiters;
  gboolean queue_own_wait = FALSE;

  ws_lock_lock (&self->lock);
  finish_locked (self);
  g_assert (self->finished);
  waiters = ws_waker_list_take (&self->waiters);
  if (self->own_wait_state == OWN_WAIT_LISTED)
    {
      self->own_wait_state = OWN_WAIT_QUEUED;
      queue_own_wait = TRUE;
    }
  ws_cond_broadcast (&self->cond);
  ws_lock_unlock (&self->lock);

  ws_waker_list_wake_all (&waiters);
  /* The wait holds a reference on us and one on its context. */
  if (queue_own_wait && ws_completion_claim (&self->own_wait))
    ws_completion_return (&self->own_wait, NULL);
}

static void
face_waker_ref (WsWaker *waker)
{
  g_object_ref (TASK_FROM_WAKER (waker));
}

static void
face_waker_unref (WsWaker *waker)
{
  g_object_unref (TASK_FROM_WAKER (waker));
}

static const WsWakerVTable face_waker_vtable = {
  face_waker_wake,
  face_waker_ref,
  face_waker_unref,
};

/* On the wait's context, from the delivery source's dispatch. */
static void
own_wait_deliver (WsDeliveryItem *item)
{
  WsTask *self = TASK_FROM_ITEM (item);
  GAsyncReadyCallback callback = self->own_wait_callback;
  GMainContext *context = self->own_wait_context;

  /* The fields were written before the wait was queued; the queue's lock
   * orders them before this read. Still QUEUED during the callback, so a
   * wait it starts makes a WsAsyncWait and leaves our user data alone. */
  if (callback != NULL)
    callback (G_OBJECT (self), G_ASYNC_RESULT (self), self->own_wait_user_data);

  ws_lock_lock (&self->lock);
  self->own_wait_state = OWN_WAIT_IDLE;
  self->own_wait_context = NULL;
  ws_completion_reset (&self->own_wait);
  ws_lock_unlock (&self->lock);

  g_main_context_unref (context);
  g_object_unref (self);                  /* the wait's reference */
}

static void
own_wait_discard (WsDeliveryItem *item)
{
  WsTask *self = TASK_FROM_ITEM (item);

  g_main_context_unref (self->own_wait_context);
  g_object_unref (self);
}

static const WsDeliveryItemVTable own_wait_vtable = {
  own_wait_deliver,
  own_wait_discard,
};

static GObject *
get_source_object (GAsyncResult *result)
{
  return g_object_ref (G_OBJECT (result));
}

static gpointer
get_user_data (GAsyncResult *result)
{
  WsTask *self = WS_TASK (result);
  gpointer user_data;

  ws_lock_lock (&self->lock);
  user_data = self->own_wait_user_data;
  ws_lock_unlock (&self->lock);
  return user_data;
}

static gboolean
is_tagged (GAsyncResult *result,
           gpointer      source_tag)
{
  return source_tag == ws_task_wait_async;
}

static void
async_result_iface_init (GAsyncResultIface *iface)
{
  iface->get_source_object = get_source_object;
  iface->get_user_data = get_user_data;
  iface->is_tagged = is_tagged;
}

WsTask *
ws_task_new_for_raw (WsRawTask *raw)
{
  WsTask *self = g_object_new (WS_TYPE_TASK, NULL);
  GMainContext *local_context = ws_core_task_local_context (raw);

  self->raw = raw;
  self->local_context = local_context != NULL ? g_main_context_ref (local_context) : NULL;
  return self;
}

static void
ws_task_finalize (GObject *object)
{
  WsTask *self = WS_TASK (object);

  /* The last unref may come from a worker (the core dropping our waker).
   * Taking the lock orders this against every locked access on other
   * threads, which GObject's reference count alone does not show to
   * ThreadSanitizer. */
  ws_lock_lock (&self->lock);
  if (self->raw != NULL)
    ws_raw_task_drop_join_handle (self->raw);
  ws_result_clear (&self->result);
  ws_lock_unlock (&self->lock);
  ws_waker_list_clear (&self->waiters);
  ws_lock_clear (&self->lock);
  ws_cond_clear (&self->cond);
  g_clear_pointer (&self->local_context, g_main_context_unref);

  G_OBJECT_CLASS (ws_task_parent_class)->finalize (object);
}

static void
ws_task_class_init (WsTaskClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->finalize = ws_task_finalize;
}

static void
ws_task_init (WsTask *self)
{
  self->face_waker.vtable = &face_waker_vtable;
  ws_lock_init (&self->lock);
  ws_cond_init (&self->cond);
}

/* The outcome as a boolean + GError, for the wait functions. Locked. */
static gboolean
outcome_locked (WsTask  *self,
                GError **error)
{
  g_assert (self->finished);

  switch (self->result.kind)
    {
    case WS_RESULT_ERROR:
      if (error != NULL)
        *error = g_error_copy (self->result.u.error);
      return FALSE;
    case WS_RESULT_CANCELLED:
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_CANCELLED,
                           "The task was cancelled");
      return FALSE;
    case WS_RESULT_NONE:
    case WS_RESULT_POINTER:
    case WS_RESULT_PAYLOAD:
    case WS_RESULT_UINT64:
    default:
      return TRUE;
    }
}

/**
 * ws_task_poll:
 * @self: a #WsTask
 * @context: the context of the task that awaits @self
 *
 * Awaits @self from inside another task. Returns %WS_POLL_READY once @self
 * has ended; otherwise registers the waker of @context, which is woken when
 * @self ends, and returns %WS_POLL_PENDING.
 *
 * Each call consumes one unit of the cooperative budget of the poll; when
 * it runs out the call returns %WS_POLL_PENDING and reschedules the caller,
 * so a task that awaits many finished tasks still lets others run.
 *
 * After %WS_POLL_READY, read the outcome with [method@Ws.Task.get_value] or
 * [method@Ws.Task.propagate_pointer].
 *
 * Returns: %WS_POLL_READY if @self has ended, %WS_POLL_PENDING otherwise
 */
WsPoll
ws_task_poll (WsTask    *self,
              WsContext *context)
{
  WsWaker *waker;
  gboolean finished;

  g_return_val_if_fail (WS_IS_TASK (self), WS_POLL_READY);
  ws_context_return_val_if_not_in_poll (context, WS_POLL_READY);
  ws_context_note_await (context, G_STRFUNC);

  if (!ws_context_poll_proceed (context))
    return WS_POLL_PENDING;

  waker = &context->task->waker;

  ws_lock_lock (&self->lock);
  finished = finished_or_listed_locked (self, waker);
  ws_lock_unlock (&self->lock);

  return finished ? WS_POLL_READY : WS_POLL_PENDING;
}

/**
 * ws_task_cancel:
 * @self: a #WsTask
 *
 * Cancels the task. A task that waits is destroyed at its next scheduling
 * point (its destroy notify runs then, on its own thread for local tasks);
 * a task being polled is destroyed right after that poll, never during it.
 * Cancelling a task that has ended does nothing; if cancellation races
 * completion, exactly one of them wins.
 *
 * Waiters of a cancelled task see `G_IO_ERROR_CANCELLED`.
 */
void
ws_task_cancel (WsTask *self)
{
  g_return_if_fail (WS_IS_TASK (self));

  ws_raw_task_cancel (self->raw);
}

/**
 * ws_task_set_name:
 * @self: a #WsTask
 * @name: (nullable): a human-readable name for the task, or %NULL to clear it
 *
 * Sets the task's name, used in debugging and profiling, as
 * g_task_set_name() does for a #GTask. The name should say in a few words
 * what the task does, such as “load thumbnails” or “sync mailbox”.
 *
 * wsrt shows the name in the criticals and warnings that concern the
 * task, in the error of a task whose poll function returned an invalid
 * value, and in the diagnostics that `WS_DEBUG` switches on
 * (doc/getting-started-c.md, “Debugging stuck work”). The metrics
 * ([struct@Ws.Metrics]) are totals over all tasks and hold no names.
 *
 * The task runs from its spawn on, so its first polls may happen before
 * this call; to have the name from the first poll on, name the task from
 * inside with [method@Ws.Context.set_task_name]. It may be called at any
 * time, from any thread; the last call wins. The string is copied once
 * per distinct name and kept for the life of the process (it is
 * interned, as g_intern_string() does), so use names from a small set,
 * not one per item.
 */
void
ws_task_set_name (WsTask     *self,
                  const char *name)
{
  g_return_if_fail (WS_IS_TASK (self));

  ws_raw_task_set_name (self->raw, name);
}

/**
 * ws_task_get_name:
 * @self: a #WsTask
 *
 * Gets the task's name, set by [method@Ws.Task.set_name],
 * [method@Ws.JoinHandle.set_name] or [method@Ws.Context.set_task_name].
 *
 * Returns: (nullable): the task's name, or %NULL if it has none. The
 *   string is owned by wsrt and never freed.
 */
const char *
ws_task_get_name (WsTask *self)
{
  g_return_val_if_fail (WS_IS_TASK (self), NULL);

  return ws_raw_task_get_name (self->raw);
}

/**
 * ws_task_is_finished:
 * @self: a #WsTask
 *
 * Whether the task has ended (completed, failed or cancelled). When this
 * returns %TRUE the task's destroy notify has run.
 *
 * Returns: %TRUE if the task has ended
 */
gboolean
ws_task_is_finished (WsTask *self)
{
  gboolean finished;

  g_return_val_if_fail (WS_IS_TASK (self), FALSE);

  ws_lock_lock (&self->lock);
  finish_locked (self);
  finished = self->finished;
  ws_lock_unlock (&self->lock);

  return finished;
}

static void
on_wait_cancelled (GCancellable *cancellable,
                   gpointer      data)
{
  WsTask *self = data;

  ws_lock_lock (&self->lock);
  ws_cond_broadcast (&self->cond);
  ws_lock_unlock (&self->lock);
}

static void
on_iterate_cancelled (GCancellable *cancellable,
                      gpointer      data)
{
  g_main_context_wakeup (data);
}

/* A local task whose context no thread owns (the global default one in
 * main () before the main loop runs, a context that a worker thread of
 * the application has not started iterating): the waiting thread takes
 * the context and iterates it until the task ends, or the wait is
 * cancelled, as a sync-over-async helper would. Nothing else would poll
 * the task. A context that another thread owns is left to it: the wait
 * then blocks. */
static void
iterate_local_context (WsTask       *self,
                       GMainContext *context,
                       GCancellable *cancellable)
{
  gulong handler = 0;

  if (!g_main_context_acquire (context))
    return;

  if (cancellable != NULL)
    handler = g_cancellable_connect (cancellable, G_CALLBACK (on_iterate_cancelled),
                                     g_main_context_ref (context),
                                     (GDestroyNotify) g_main_context_unref);
  while (!ws_task_is_finished (self) && !g_cancellable_is_cancelled (cancellable))
    g_main_context_iteration (context, TRUE);
  if (handler != 0)
    g_cancellable_disconnect (cancellable, handler);
  g_main_context_release (context);
}

/**
 * ws_task_wait:
 * @self: a #WsTask
 * @cancellable: (nullable): stops the wait (not the task)
 * @error: return location for a #GError
 *
 * Blocks the calling thread until the task ends.
 *
 * This must not be called on a runtime worker thread, where it would stall
 * every task queued behind the caller: there it fails at once with
 * %WS_ERROR_WOULD_BLOCK. From a task, await with [method@Ws.Task.poll]
 * instead; a blocking call that cannot be avoided belongs in
 * `ws_block_in_place()` or [method@Ws.Runtime.spawn_blocking].
 *
 * Nor can it wait for a local task (see [method@Ws.Runtime.spawn_local])
 * on the thread that owns the task's #GMainContext, which would wait
 * forever: only an iteration of the context polls the task, and only its
 * owner can iterate it. The owner is the thread that pushed the context as
 * its thread-default context, that runs its main loop (in any callback of
 * that loop), or that called g_main_context_acquire(). There the call
 * fails at once with %WS_ERROR_WOULD_BLOCK, whether the task has ended or
 * not: wait with [method@Ws.Task.wait_async], or iterate the context until
 * [method@Ws.Task.is_finished] returns %TRUE. A context that no thread owns
 * (the global default one in `main()` before the main loop runs) is taken
 * by the calling thread and iterated until the task ends, so other sources
 * of that context may be dispatched during the call, as in any
 * synchronous wrapper of an async call; a context that another thread
 * owns is left to that thread, and the call blocks.
 *
 * Returns: %TRUE if the task completed successfully; %FALSE with the task's
 *   error, with `G_IO_ERROR_CANCELLED` if the task or the wait was
 *   cancelled, or with %WS_ERROR_WOULD_BLOCK
 */
gboolean
ws_task_wait (WsTask        *self,
              GCancellable  *cancellable,
              GError       **error)
{
  GMainContext *local_context;
  gulong handler = 0;
  gboolean ret;

  g_return_val_if_fail (WS_IS_TASK (self), FALSE);
  g_return_val_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (ws_core_on_worker ())
    {
      g_set_error_literal (error, WS_ERROR, WS_ERROR_WOULD_BLOCK,
                           "ws_task_wait() would block a runtime worker thread "
                           "and every task queued behind it; await the task "
                           "with ws_task_poll() from your task, or move the "
                           "blocking wait into ws_block_in_place()");
      return FALSE;
    }

  /* The owner of the context of a local task (it pushed the context as its
   * thread default, or runs a dispatch of it, or acquired it) is the only
   * thread that can iterate it, and only an iteration polls the task: it
   * would wait forever. Refused whether the task has ended or not, so that
   * the mistake shows on the first run rather than when the timing
   * changes. */
  local_context = self->local_context;
  if (local_context != NULL && g_main_context_is_owner (local_context))
    {
      g_set_error_literal (error, WS_ERROR, WS_ERROR_WOULD_BLOCK,
                           "ws_task_wait() on the thread of the GMainContext of a "
                           "local task would wait forever: only an iteration of "
                           "that context polls the task; wait with "
                           "ws_task_wait_async(), or iterate the context until "
                           "ws_task_is_finished() returns TRUE");
      return FALSE;
    }

  if (local_context != NULL)
    iterate_local_context (self, local_context, cancellable);

  if (cancellable != NULL)
    handler = g_cancellable_connect (cancellable, G_CALLBACK (on_wait_cancelled), self, NULL);

  ws_lock_lock (&self->lock);
  for (;;)
    {
      finish_locked (self);
      if (!self->finished)
        register_locked (self);
      if (self->finished)
        break;
      if (g_cancellable_is_cancelled (cancellable))
        break;
      ws_cond_wait (&self->cond, &self->lock);
    }

  if (self->finished)
    ret = outcome_locked (self, error);
  else
    ret = !g_cancellable_set_error_if_cancelled (cancellable, error);
  ws_lock_unlock (&self->lock);

  if (handler != 0)
    g_cancellable_disconnect (cancellable, handler);

  return ret;
}

/**
 * ws_task_wait_async:
 * @self: a #WsTask
 * @cancellable: (nullable): stops the wait (not the task)
 * @callback: (scope async): called when the task has ended or the wait
 *   was cancelled
 * @user_data: data for @callback
 *
 * Waits for the task without blocking. @callback runs exactly once, on the
 * thread-default main context of the caller, never from inside this call,
 * also when @cancellable is cancelled. Call [method@Ws.Task.wait_finish]
 * from it.
 *
 * Without @cancellable, the #GAsyncResult that @callback gets is @self
 * itself (as a #GTask is its own result), so the wait allocates nothing;
 * a wait with a #GCancellable, or a second wait while one is pending, gets
 * a result object of its own. C code that needs no #WsTask at all can
 * spawn with [method@Ws.Runtime.spawn_with_callback] instead.
 */
void
ws_task_wait_async (WsTask              *self,
                    GCancellable        *cancellable,
                    GAsyncReadyCallback  callback,
                    gpointer             user_data)
{
  WsAsyncWait *wait;
  gboolean finished;

  g_return_if_fail (WS_IS_TASK (self));
  g_return_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable));

  if (cancellable == NULL)
    {
      GMainContext *context = g_main_context_ref_thread_default ();
      WsDelivery *delivery = ws_delivery_get (context);

      /* The wait's reference, taken before the wait can be delivered. */
      g_object_ref (self);
      ws_lock_lock (&self->lock);
      if (self->own_wait_state == OWN_WAIT_IDLE)
        {
          /* The task's own wait: no object, no allocation. */
          self->own_wait_callback = callback;
          self->own_wait_user_data = user_data;
          self->own_wait_context = context;
          ws_completion_init_custom (&self->own_wait, delivery, &own_wait_vtable);
          finish_locked (self);
          if (!self->finished)
            register_locked (self);
          finished = self->finished;
          self->own_wait_state = finished ? OWN_WAIT_QUEUED : OWN_WAIT_LISTED;
          ws_lock_unlock (&self->lock);

          /* Delivered from the caller's context, never from here; if the
           * task has not ended, its end queues the wait (face_waker_wake). */
          if (finished && ws_completion_claim (&self->own_wait))
            ws_completion_return (&self->own_wait, NULL);
          return;
        }
      ws_lock_unlock (&self->lock);
      g_object_unref (self);
      g_main_context_unref (context);
    }

  wait = ws_async_wait_new (self, ws_task_wait_async, "the task", cancellable, callback,
                            user_data);

  ws_lock_lock (&self->lock);
  finished = finished_or_listed_locked (self, ws_async_wait_get_waker (wait));
  ws_lock_unlock (&self->lock);

  /* Delivered from the caller's context, not from here; if the task has
   * not ended, the list holds a reference of its own and its end wakes
   * the wait. */
  if (finished)
    ws_async_wait_complete (wait);
  ws_async_wait_unref (wait);
}

/**
 * ws_task_wait_finish:
 * @self: a #WsTask
 * @result: the #GAsyncResult given to the callback
 * @error: return location for a #GError
 *
 * Finishes [method@Ws.Task.wait_async].
 *
 * Returns: %TRUE if the task completed successfully; %FALSE with the task's
 *   error, or with `G_IO_ERROR_CANCELLED` if the task or the wait was
 *   cancelled
 */
gboolean
ws_task_wait_finish (WsTask        *self,
                     GAsyncResult  *result,
                     GError       **error)
{
  gboolean ret;

  g_return_val_if_fail (WS_IS_TASK (self), FALSE);
  g_return_val_if_fail (result == (GAsyncResult *) self
                        || ws_async_wait_is_valid (result, self, ws_task_wait_async), FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  /* The task itself is the result of a wait without a GCancellable, which
   * cannot be cancelled. */
  if (result != (GAsyncResult *) self
      && ws_async_wait_propagate_error (result, error))
    return FALSE;

  ws_lock_lock (&self->lock);
  finish_locked (self);
  if G_UNLIKELY (!self->finished)
    {
      ws_lock_unlock (&self->lock);
      char label[WS_RAW_TASK_LABEL_SIZE];

      g_critical ("ws_task_wait_finish: task %s has not ended yet; call it from the "
                  "callback of ws_task_wait_async()", ws_raw_task_label (self->raw, label));
      return FALSE;
    }
  ret = outcome_locked (self, error);
  ws_lock_unlock (&self->lock);

  return ret;
}

/* ---- a wait with a timeout ------------------------------------------- */

/* The task's wait and a sleep race on the caller's context; both call
 * back there, on one thread, so the order of the callbacks decides with
 * no lock. The rule: G_IO_ERROR_TIMED_OUT only for a task that ended
 * cancelled after the deadline cancelled it. So the deadline does not end
 * the wait: it cancels the task and marks the wait timed out, and the
 * task's end decides. A task that completed first, or whose running poll
 * returned its result while the cancel was being made (a cancel never
 * interrupts a poll), reports its result; one that ended cancelled
 * reports TIMED_OUT (models/completion.pml). The caller's cancellable
 * ends the wait, not the task, at once. */
typedef struct
{
  GTask        *gtask;           /* the caller's; completed once */
  WsTask       *task;            /* a reference */
  GCancellable *wait_cancel;     /* cancelled only by the caller's cancellable */
  GCancellable *sleep_cancel;
  GCancellable *cancellable;     /* the caller's, or NULL */
  gulong        cancel_handler;
  guint         pending;         /* callbacks still to come */
  gboolean      timed_out;       /* the deadline cancelled the task */
} TimeoutWait;

static void
timeout_wait_unref (TimeoutWait *w)
{
  if (--w->pending > 0)
    return;
  if (w->cancel_handler != 0)
    g_cancellable_disconnect (w->cancellable, w->cancel_handler);
  g_clear_object (&w->cancellable);
  g_object_unref (w->wait_cancel);
  g_object_unref (w->sleep_cancel);
  g_object_unref (w->task);
  g_free (w);
}

/* The task's wait ended: it alone completes the caller's GTask. */
static void
on_timeout_task_done (GObject      *source,
                      GAsyncResult *result,
                      gpointer      data)
{
  TimeoutWait *w = data;
  GTask *gtask = g_steal_pointer (&w->gtask);
  GError *error = NULL;

  g_cancellable_cancel (w->sleep_cancel);
  if (ws_task_wait_finish (w->task, result, &error))
    g_task_return_boolean (gtask, TRUE);
  else if (w->timed_out && !g_cancellable_is_cancelled (w->wait_cancel)
           && g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      g_clear_error (&error);
      g_task_return_new_error (gtask, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                               "The task did not end within its timeout; it was cancelled");
    }
  else
    g_task_return_error (gtask, error);
  g_object_unref (gtask);
  timeout_wait_unref (w);
}

static void
on_timeout_sleep_done (GObject      *source,
                       GAsyncResult *result,
                       gpointer      data)
{
  TimeoutWait *w = data;

  /* The deadline, with the task's wait still pending and not cancelled
   * by the caller: cancel the task; its end decides. */
  if (ws_sleep_for_finish (result, NULL) && w->gtask != NULL
      && !g_cancellable_is_cancelled (w->wait_cancel))
    {
      w->timed_out = TRUE;
      ws_task_cancel (w->task);
    }
  timeout_wait_unref (w);
}

static void
on_timeout_caller_cancelled (GCancellable *cancellable,
                             gpointer      data)
{
  TimeoutWait *w = data;

  /* Any thread: both waits call back on the caller's context. */
  g_cancellable_cancel (w->wait_cancel);
  g_cancellable_cancel (w->sleep_cancel);
}

/**
 * ws_task_wait_timeout_async:
 * @self: a #WsTask
 * @timeout_usec: how long to wait, in microseconds (%G_MAXINT64: for ever)
 * @cancellable: (nullable): stops the wait (not the task)
 * @callback: (scope async): called when the task has ended, the timeout
 *   has passed, or the wait was cancelled
 * @user_data: data for @callback
 *
 * Waits for the task for at most @timeout_usec without blocking: "this,
 * or fail after N ms". If the timeout passes first, the task is cancelled
 * (its work stops, its cancellable fires) and the wait fails with
 * %G_IO_ERROR_TIMED_OUT. %G_IO_ERROR_TIMED_OUT always means that the task
 * ended cancelled, without its result: a task that completes while the
 * timeout passes reports its result. A cancel never interrupts a running
 * poll or blocking job: if the task is running when the timeout passes,
 * the wait ends when that poll returns (at once for a job that watches
 * its cancellable). @callback runs exactly once, on the
 * thread-default main context of the caller, never from inside this
 * call; finish with [method@Ws.Task.wait_timeout_finish], then read the
 * result as after [method@Ws.Task.wait_finish]. In Vala:
 *
 * ```vala
 * yield task.wait_timeout_async (500 * TimeSpan.MILLISECOND);
 * ```
 */
void
ws_task_wait_timeout_async (WsTask              *self,
                            gint64               timeout_usec,
                            GCancellable        *cancellable,
                            GAsyncReadyCallback  callback,
                            gpointer             user_data)
{
  TimeoutWait *w;

  g_return_if_fail (WS_IS_TASK (self));
  g_return_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable));

  w = g_new0 (TimeoutWait, 1);
  w->gtask = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (w->gtask, ws_task_wait_timeout_async);
  /* Decided by our callbacks, not by GTask's own look at the cancellable. */
  g_task_set_check_cancellable (w->gtask, FALSE);
  w->task = g_object_ref (self);
  w->wait_cancel = g_cancellable_new ();
  w->sleep_cancel = g_cancellable_new ();
  w->pending = 2;
  w->timed_out = FALSE;
  if (cancellable != NULL)
    {
      w->cancellable = g_object_ref (cancellable);
      w->cancel_handler = g_cancellable_connect (cancellable,
                                                 G_CALLBACK (on_timeout_caller_cancelled),
                                                 w, NULL);
    }

  ws_task_wait_async (self, w->wait_cancel, on_timeout_task_done, w);
  ws_sleep_for_async (timeout_usec, w->sleep_cancel, on_timeout_sleep_done, w);
}

/**
 * ws_task_wait_timeout_finish:
 * @self: a #WsTask
 * @result: the #GAsyncResult given to the callback
 * @error: return location for a #GError
 *
 * Finishes [method@Ws.Task.wait_timeout_async].
 *
 * Returns: %TRUE if the task completed successfully in time; %FALSE with
 *   the task's error, with %G_IO_ERROR_TIMED_OUT if the timeout passed
 *   first (the task was then cancelled), or with %G_IO_ERROR_CANCELLED if
 *   the task or the wait was cancelled
 */
gboolean
ws_task_wait_timeout_finish (WsTask        *self,
                             GAsyncResult  *result,
                             GError       **error)
{
  g_return_val_if_fail (WS_IS_TASK (self), FALSE);
  g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
  g_return_val_if_fail (g_task_get_source_tag (G_TASK (result)) == ws_task_wait_timeout_async,
                        FALSE);

  return g_task_propagate_boolean (G_TASK (result), error);
}

/* The critical of an accessor called on a task that returned the other
 * kind of result: the task's code decides the kind, so asking for the
 * wrong one is a programmer error, like asking before the end. */
static void
wrong_result_kind (WsTask       *self,
                   const char   *strfunc,
                   WsResultKind  kind)
{
  char label[WS_RAW_TASK_LABEL_SIZE];

  if (kind == WS_RESULT_POINTER)
    g_critical ("%s: task %s returned a pointer (ws_context_return_pointer()), "
                "not a value; take it with ws_task_propagate_pointer()", strfunc,
                ws_raw_task_label (self->raw, label));
  else
    g_critical ("%s: task %s returned a value (ws_context_return_value() or "
                "ws_context_return_uint64()), not a pointer; read it with "
                "ws_task_get_value()", strfunc, ws_raw_task_label (self->raw, label));
}

static void
not_ended (WsTask     *self,
           const char *strfunc)
{
  char label[WS_RAW_TASK_LABEL_SIZE];

  g_critical ("%s: task %s has not ended yet; wait for it first "
              "(ws_task_wait_async(), ws_task_poll() or ws_task_wait())", strfunc,
              ws_raw_task_label (self->raw, label));
}

/**
 * ws_task_get_value:
 * @self: a #WsTask
 *
 * The result of a task that completed with [method@Ws.Context.return_value]
 * or [method@Ws.Context.return_uint64] (a value of type %G_TYPE_UINT64).
 *
 * The rules are those of [method@Ws.Task.propagate_pointer]. Calling this
 * before the task has ended is a programmer error (a critical, and %NULL):
 * wait for it first. So is calling it on a task that returned a pointer
 * with [method@Ws.Context.return_pointer] (a critical that names
 * [method@Ws.Task.propagate_pointer], and %NULL). A task that failed, was
 * cancelled or returned nothing gives %NULL without a critical; the
 * wait that saw it end reported the error.
 *
 * Returns: (nullable) (transfer none): the value, owned by @self; %NULL if
 *   the task failed, was cancelled or returned no value
 */
const GValue *
ws_task_get_value (WsTask *self)
{
  const GValue *value = NULL;
  WsResultKind kind;
  gboolean finished;

  g_return_val_if_fail (WS_IS_TASK (self), NULL);

  ws_lock_lock (&self->lock);
  finish_locked (self);
  finished = self->finished;
  kind = self->result.kind;
  if (finished && kind == WS_RESULT_PAYLOAD)
    value = self->result.u.pointer.data;
  ws_lock_unlock (&self->lock);

  if G_UNLIKELY (!finished)
    {
      not_ended (self, G_STRFUNC);
      return NULL;
    }
  if G_UNLIKELY (kind == WS_RESULT_POINTER)
    wrong_result_kind (self, G_STRFUNC, kind);

  return value;
}

/**
 * ws_task_propagate_pointer:
 * @self: a #WsTask
 * @error: return location for a #GError
 *
 * Takes the result of a task that ended, as set by
 * [method@Ws.Context.return_pointer]. The result is handed over once; a
 * second call returns %NULL without an error.
 *
 * The rules are those of [method@Ws.Task.get_value]. Calling this before
 * the task has ended is a programmer error (a critical, and %NULL): wait
 * for it first. So is calling it on a task that returned a value with
 * [method@Ws.Context.return_value] or [method@Ws.Context.return_uint64]
 * (a critical that names [method@Ws.Task.get_value], and %NULL with no
 * error). A task that failed or was cancelled gives %NULL with @error set;
 * one that returned nothing gives %NULL without an error.
 *
 * Returns: (nullable) (transfer full): the result; %NULL with @error set if
 *   the task failed or was cancelled
 */
gpointer
ws_task_propagate_pointer (WsTask  *self,
                           GError **error)
{
  gpointer ret = NULL;
  WsResultKind kind;

  g_return_val_if_fail (WS_IS_TASK (self), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  ws_lock_lock (&self->lock);
  finish_locked (self);
  if (!self->finished)
    {
      ws_lock_unlock (&self->lock);
      not_ended (self, G_STRFUNC);
      return NULL;
    }

  kind = self->result.kind;
  if (outcome_locked (self, error) && kind == WS_RESULT_POINTER)
    {
      ret = self->result.u.pointer.data;
      self->result.u.pointer.data = NULL;
      self->result.u.pointer.destroy = NULL;
    }
  ws_lock_unlock (&self->lock);

  /* A plain integer result is kept as a value (take_outcome_locked). */
  if G_UNLIKELY (kind == WS_RESULT_PAYLOAD)
    wrong_result_kind (self, G_STRFUNC, kind);

  return ret;
}

void
ws_task_add_waiter (WsTask  *self,
                    WsWaker *waker)
{
  gboolean finished;

  ws_lock_lock (&self->lock);
  finished = finished_or_listed_locked (self, waker);
  ws_lock_unlock (&self->lock);

  if (finished)
    waker->vtable->wake (waker);
}

gboolean
ws_task_get_outcome (WsTask  *self,
                     GError **error)
{
  gboolean ret;

  ws_lock_lock (&self->lock);
  finish_locked (self);
  g_return_val_if_fail (self->finished, (ws_lock_unlock (&self->lock), FALSE));
  ret = outcome_locked (self, error);
  ws_lock_unlock (&self->lock);
  return ret;
}
