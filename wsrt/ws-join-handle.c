/* ws-join-handle.c: a join handle that costs no more than the task
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A WsJoinHandle is the task itself, seen through its join reference
 * (the JOIN_INTEREST bit of the state word and the reference it carries,
 * doc/architecture.md, "The task and its state word"): no allocation, no
 * GObject, no lock. Awaiting it registers the awaiting task's own waker
 * as the task's join waker, so the child's completion wakes the parent
 * directly. The outcome stays in the task until the handle takes it.
 *
 * One owner: only the task or thread that holds a handle awaits,
 * cancels or ends it, and it is taken (finished, turned into a WsTask, or
 * freed) once. A WsTask is the handle to use where several waiters,
 * other threads, a GObject or a main-loop callback are needed. The core
 * counts on the one owner: an awaited child that the owner runs nested
 * (work-first) takes RUNNING and COMPLETE by stores when the word shows
 * no other holder (ws-task-state-private.h), which a cancel from another
 * thread through the same handle would race.
 */

#include "config.h"

#include "ws-join-handle.h"
#include "ws-error.h"
#include "ws-core-private.h"
#include "ws-context-private.h"
#include "ws-refuse-private.h"
#include "ws-task-private.h"
#include "ws-fiber-private.h"

#define RAW(h) ((WsRawTask *) (h))

/* A handle used after it ended: a programmer error, reported where it can
 * be seen (ws_raw_task_has_join_handle ()), before anything touches the
 * task. */
#define return_val_if_ended(self, val) \
  G_STMT_START \
  { \
    if G_UNLIKELY (!ws_raw_task_has_join_handle (RAW (self))) \
      { \
        handle_ended (G_STRFUNC); \
        return val; \
      } \
  } \
  G_STMT_END

static void
handle_ended (const char *strfunc)
{
  g_critical ("%s: join handle already finished: a handle is ended once, by "
              "ws_join_handle_finish(), ws_join_handle_finish_uint64(), "
              "ws_join_handle_into_task() or ws_join_handle_free(), and not "
              "used after that", strfunc);
}

/**
 * WsJoinHandle:
 *
 * The join handle of a task, for C and Vala code that spawns and awaits
 * tasks inside the runtime (fork-join, pipelines, fan-out).
 *
 * A #WsJoinHandle costs nothing beyond the task: it is not a GObject and
 * takes no allocation, where a [class@Ws.Task] is a GObject per task.
 * Spawn with [method@Ws.Context.spawn] from a task (or
 * [method@Ws.Runtime.spawn_joinable] from anywhere), await with
 * [method@Ws.JoinHandle.poll], and take the result with
 * [method@Ws.JoinHandle.finish] or [method@Ws.JoinHandle.finish_uint64],
 * which also free the handle.
 *
 * A handle has one owner, the task or thread that holds it, which may
 * hand it on: only the owner awaits it, cancels it or ends it, one call
 * at a time, and it is ended once, by a finish function,
 * [method@Ws.JoinHandle.into_task] or [method@Ws.JoinHandle.free]. Use a
 * [class@Ws.Task] (turn the handle into one with
 * [method@Ws.JoinHandle.into_task]) for several waiters, to cancel from
 * other threads, for `ws_task_wait_async()` on a main loop, and for
 * bindings: GJS gets [class@Ws.Task] only.
 */

/**
 * ws_context_spawn: (skip)
 * @context: the context of the task that spawns
 * @func: (scope notified) (closure user_data) (destroy destroy): the task
 * @user_data: data for @func
 * @destroy: (nullable): frees @user_data after the last poll
 *
 * Spawns a task on the workers of the runtime that polls @context, and
 * returns its join handle. From a worker the task goes to that worker's
 * LIFO slot, so a parent that awaits it right away often finds it done.
 *
 * This needs no [class@Ws.Handle] and takes no reference on the runtime:
 * the spawning task already runs on it.
 *
 * After a shutdown has begun the task is refused: its destroy notify has
 * run when this returns, and the handle finishes as cancelled.
 *
 * Returns: (transfer full): the join handle of the task
 */
WsJoinHandle *
ws_context_spawn (WsContext      *context,
                  WsTaskFunc      func,
                  gpointer        user_data,
                  GDestroyNotify  destroy)
{
  WsRuntimeCore *core = ws_runtime_core_get_current ();

  if G_UNLIKELY (context == NULL || context->task == NULL)
    {
      /* A refused call still frees what it was given (ws-refuse-private.h);
       * the misuse message is the context's own. */
      if (destroy != NULL)
        destroy (user_data);
      ws_context_return_val_if_not_in_poll (context, NULL);
    }
  ws_return_val_if_fail_free (func != NULL, destroy, user_data, NULL);
  ws_return_val_if_fail_free (core != NULL, destroy, user_data, NULL);

  return (WsJoinHandle *) ws_runtime_core_spawn (core, func, user_data, destroy, TRUE);
}

/**
 * ws_context_spawn_with_state: (skip)
 * @context: the context of the task that spawns
 * @func: the task; its `user_data` is the task's copy of @state
 * @state: (not nullable): the task's state, copied into the task
 * @state_size: the size of @state in bytes, more than 0 (and at most
 *   %G_MAXINT32)
 * @clear_func: (nullable): clears the copy's members after the last poll
 *
 * Spawns a task as [method@Ws.Context.spawn] does, with its state kept in
 * the task's own memory, as a Rust runtime keeps a task's future: the
 * @state_size bytes at @state are copied into the task when this is
 * called, and @func gets a pointer to that copy, the same one at every
 * poll, which the task may change. The copy is aligned for any type and
 * lives until the task's memory goes; @clear_func runs on it once, after
 * the last poll, to free what its members own (not the copy itself,
 * which wsrt frees with the task).
 *
 * A task and its state then take one allocation from wsrt's per-thread
 * caches, where `g_new` and g_free() would take a second from malloc,
 * often freed on another worker. A state of up to 288 bytes shares a
 * block of those caches with its task; a larger one is allocated with
 * the task by malloc.
 *
 * The members @state hands over belong to the task from this call on: if
 * the spawn is refused (the runtime is shutting down, or the call is a
 * programmer error), @clear_func has run on the copy (or on @state) when
 * this returns.
 *
 * ```c
 * typedef struct { guint n; WsJoinHandle *left, *right; } Fib;
 *
 * Fib child = { n - 1, NULL, NULL };
 * WsJoinHandle *h = ws_context_spawn_with_state (cx, fib_poll, &child,
 *                                                sizeof child, NULL);
 * ```
 *
 * Returns: (transfer full): the join handle of the task
 */
WsJoinHandle *
ws_context_spawn_with_state (WsContext      *context,
                             WsTaskFunc      func,
                             gconstpointer   state,
                             gsize           state_size,
                             GDestroyNotify  clear_func)
{
  WsRuntimeCore *core = ws_runtime_core_get_current ();

  /* A refused call still frees what it was given (ws-refuse-private.h):
   * the members @state hands over, through @clear_func on @state. */
  if G_UNLIKELY (context == NULL || context->task == NULL)
    {
      if (clear_func != NULL && state != NULL)
        clear_func ((gpointer) state);
      ws_context_return_val_if_not_in_poll (context, NULL);
    }
  ws_return_val_if_fail_free (state != NULL, NULL, NULL, NULL);
  ws_return_val_if_fail_free (state_size > 0, clear_func, (gpointer) state, NULL);
  ws_return_val_if_fail_free (state_size <= G_MAXINT32, clear_func, (gpointer) state, NULL);
  ws_return_val_if_fail_free (func != NULL, clear_func, (gpointer) state, NULL);
  ws_return_val_if_fail_free (core != NULL, clear_func, (gpointer) state, NULL);

  return (WsJoinHandle *) ws_runtime_core_spawn_with_state (core, func, state, state_size,
                                                            state_size, clear_func, TRUE);
}

/**
 * ws_join_handle_poll:
 * @self: a #WsJoinHandle
 * @context: the context of the task that awaits @self
 *
 * Awaits the task of @self from another task. Returns %WS_POLL_READY once
 * the task has ended; otherwise arranges for the awaiting task to be
 * woken when it ends and returns %WS_POLL_PENDING, which the awaiting task
 * returns in turn. A join handle has one waiter: a second task that
 * awaits it is a programmer error (a critical; the first is woken, not
 * left waiting); several waiters await a [class@Ws.Task] made with
 * [method@Ws.JoinHandle.into_task]. Then take the outcome with
 * [method@Ws.JoinHandle.finish] or [method@Ws.JoinHandle.finish_uint64].
 *
 * On a worker, if the task is the next one that worker would run (the
 * last task it spawned or woke, or the newest one queued), this call runs
 * it first, nested in the awaiting task's poll, and returns
 * %WS_POLL_READY if it ended there (work-first, as TBB's
 * `task_group::wait` does): a parent that awaits the children it just
 * spawned is then not woken and polled again. Other code therefore runs
 * inside this call: the awaited task, the tasks it awaits in turn, their
 * destroy notifies. Across it, hold no lock the awaited task takes (a
 * recursive one would let it in), leave shared data as consistent as at a
 * return of %WS_POLL_PENDING, and do not count on the thread's
 * thread-default main context or thread-local variables being left as
 * they were. A nested task that calls ws_block_in_place() moves the
 * awaiting task off the worker too. On a fiber, the nested task runs on
 * the fiber's stack.
 *
 * Returns: %WS_POLL_READY if the task has ended
 */
WsPoll
ws_join_handle_poll (WsJoinHandle *self,
                     WsContext    *context)
{
  gboolean replaced_other = FALSE;
  gboolean ready;

  g_return_val_if_fail (self != NULL, WS_POLL_READY);
  ws_context_return_val_if_not_in_poll (context, WS_POLL_READY);
  return_val_if_ended (self, WS_POLL_READY);
  ws_context_note_await (context, G_STRFUNC);

  /* Work-first: a task queued to run next on this worker runs now,
   * nested, instead of after this task has returned PENDING. */
  if ((context->worker != NULL || context->fiber != NULL)
      && !ws_raw_task_is_complete (RAW (self)))
    ws_core_run_awaited (context, RAW (self));

  ready = ws_raw_task_try_read_output_full (RAW (self), &context->task->waker, NULL,
                                            &replaced_other);
  if G_UNLIKELY (replaced_other)
    {
      char label[WS_RAW_TASK_LABEL_SIZE];

      g_critical ("%s: another task is awaiting the join handle of task %s; a join "
                  "handle has one waiter: for several, turn it into a WsTask with "
                  "ws_join_handle_into_task () and await that", G_STRFUNC,
                  ws_raw_task_label (RAW (self), label));
    }
  return ready ? WS_POLL_READY : WS_POLL_PENDING;
}

/**
 * ws_join_handle_set_name:
 * @self: a #WsJoinHandle
 * @name: (nullable): a human-readable name for the task, or %NULL to clear it
 *
 * Sets the name of the task of @self, as [method@Ws.Task.set_name] does.
 */
void
ws_join_handle_set_name (WsJoinHandle *self,
                         const char   *name)
{
  g_return_if_fail (self != NULL);
  return_val_if_ended (self, );

  ws_raw_task_set_name (RAW (self), name);
}

/**
 * ws_join_handle_get_name:
 * @self: a #WsJoinHandle
 *
 * Gets the name of the task of @self (see [method@Ws.Task.set_name]).
 *
 * Returns: (nullable): the task's name, or %NULL if it has none. The
 *   string is owned by wsrt and never freed.
 */
const char *
ws_join_handle_get_name (WsJoinHandle *self)
{
  g_return_val_if_fail (self != NULL, NULL);
  return_val_if_ended (self, NULL);

  return ws_raw_task_get_name (RAW (self));
}

/**
 * ws_join_handle_is_finished:
 * @self: a #WsJoinHandle
 *
 * Tells whether the task of @self has ended, without waiting and without
 * taking the outcome. Once it returns %TRUE, a finish function takes the
 * outcome.
 *
 * Returns: %TRUE if the task of @self has ended
 */
gboolean
ws_join_handle_is_finished (WsJoinHandle *self)
{
  g_return_val_if_fail (self != NULL, FALSE);
  return_val_if_ended (self, TRUE);

  return ws_raw_task_is_complete (RAW (self));
}

/* A waker for a thread that blocks. It lives on the waiting thread's
 * stack, so the waiter may return only once the task has let go of it:
 * the task's completion wakes its join waker and then drops its
 * reference, and only that last drop signals, so the waiter sleeps once
 * and returns when the frame is safe to leave. */
typedef struct
{
  WsWaker waker;
  WsLock  lock;
  WsCond  cond;
  guint   refs;
} ThreadWaker;

static void
thread_waker_wake (WsWaker *waker)
{
  /* The release that follows is what the waiter waits for. */
}

static void
thread_waker_ref (WsWaker *waker)
{
  ThreadWaker *self = (ThreadWaker *) waker;

  ws_lock_lock (&self->lock);
  self->refs++;
  ws_lock_unlock (&self->lock);
}

static void
thread_waker_unref (WsWaker *waker)
{
  ThreadWaker *self = (ThreadWaker *) waker;

  ws_lock_lock (&self->lock);
  if (--self->refs == 1)
    ws_cond_signal (&self->cond);
  ws_lock_unlock (&self->lock);
}

static const WsWakerVTable thread_waker_vtable = {
  thread_waker_wake,
  thread_waker_ref,
  thread_waker_unref,
};

/* How long a blocking wait looks again before it sleeps, in us. */
#define WAIT_SPIN_USEC 4

/* A task queued behind a few others ends within microseconds, less than
 * a sleep and a wake cost (a futex wake and a context switch): a thread
 * that waits for a stream of them in turn would otherwise go at the pace
 * of its wakes, one sleep and one wake per task (doc/performance.md,
 * "What each optimisation bought", a28f7ca). TRUE if the task ended
 * within WAIT_SPIN_USEC. */
static gboolean
spin_until_complete (WsJoinHandle *self)
{
  gint64 until = g_get_monotonic_time () + WAIT_SPIN_USEC;

  for (guint i = 1;; i++)
    {
      if (ws_raw_task_is_complete (RAW (self)))
        return TRUE;
      /* One clock read per 16 looks. */
      if (i % 16 == 0 && g_get_monotonic_time () >= until)
        return FALSE;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause ();
#endif
    }
}

/**
 * ws_join_handle_wait:
 * @self: a #WsJoinHandle
 * @error: return location for a #GError
 *
 * Blocks the calling thread until the task of @self has ended. Then take
 * the outcome with [method@Ws.JoinHandle.finish] or
 * [method@Ws.JoinHandle.finish_uint64]. A task that has not ended is
 * looked at again for a few microseconds before the thread sleeps, so
 * that waiting for many short tasks in turn costs no sleep and wake per
 * task.
 *
 * As [method@Ws.Task.wait], this must not be called on a runtime worker
 * thread, where it would stall the worker's other tasks: there it fails
 * at once with %WS_ERROR_WOULD_BLOCK. From a task, await with
 * [method@Ws.JoinHandle.poll].
 *
 * Returns: %TRUE once the task has ended; %FALSE with
 *   %WS_ERROR_WOULD_BLOCK on a worker
 */
gboolean
ws_join_handle_wait (WsJoinHandle  *self,
                     GError       **error)
{
  ThreadWaker w = { { &thread_waker_vtable }, };

  g_return_val_if_fail (self != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  return_val_if_ended (self, TRUE);

  if (ws_raw_task_is_complete (RAW (self)))
    return TRUE;

  if (ws_core_on_worker ())
    {
      g_set_error_literal (error, WS_ERROR, WS_ERROR_WOULD_BLOCK,
                           "ws_join_handle_wait() would block a runtime worker thread; "
                           "await the handle with ws_join_handle_poll() from the task instead");
      return FALSE;
    }

  if (spin_until_complete (self))
    return TRUE;

  ws_lock_init (&w.lock);
  ws_cond_init (&w.cond);
  w.refs = 1;                   /* ours; a registered waker holds a second */
  (void) ws_raw_task_try_read_output (RAW (self), &w.waker, NULL);
  ws_lock_lock (&w.lock);
  while (w.refs > 1)
    ws_cond_wait (&w.cond, &w.lock);
  ws_lock_unlock (&w.lock);
  /* The only one who releases the join waker of a task whose handle we
   * hold is its completion, right after waking it. */
  g_assert (ws_raw_task_is_complete (RAW (self)));
  ws_lock_clear (&w.lock);
  ws_cond_clear (&w.cond);
  return TRUE;
}

/**
 * ws_join_handle_cancel:
 * @self: a #WsJoinHandle
 *
 * Cancels the task of @self, as [method@Ws.Task.cancel] does: a task that
 * has not ended is destroyed at its next scheduling point, and its handle
 * finishes with %G_IO_ERROR_CANCELLED. The handle stays the caller's.
 *
 * Like every call on a handle, this is for the handle's owner. To cancel
 * from another thread, turn the handle into a [class@Ws.Task] with
 * [method@Ws.JoinHandle.into_task], or have the task watch a
 * #GCancellable.
 */
void
ws_join_handle_cancel (WsJoinHandle *self)
{
  g_return_if_fail (self != NULL);
  return_val_if_ended (self, );

  ws_raw_task_cancel (RAW (self));
}

/* Takes the outcome of an ended task and frees the handle. FALSE with
 * @error set if the task failed or was cancelled. */
static gboolean
take_outcome (WsJoinHandle  *self,
              WsResult      *r,
              GError       **error)
{
  gboolean ok = TRUE;

  if (!ws_raw_task_try_read_output (RAW (self), NULL, r))
    {
      char label[WS_RAW_TASK_LABEL_SIZE];

      /* Before the drop, which may free the task. */
      ws_raw_task_label (RAW (self), label);
      ws_raw_task_drop_join_handle (RAW (self));
      g_critical ("ws_join_handle_finish: task %s has not ended yet; await it first "
                  "(ws_join_handle_poll() or ws_join_handle_wait()); the handle is freed",
                  label);
      return FALSE;
    }
  ws_raw_task_drop_join_handle (RAW (self));

  switch (r->kind)
    {
    case WS_RESULT_ERROR:
      g_propagate_error (error, g_steal_pointer (&r->u.error));
      ok = FALSE;
      break;
    case WS_RESULT_CANCELLED:
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_CANCELLED, "The task was cancelled");
      ok = FALSE;
      break;
    case WS_RESULT_NONE:
    case WS_RESULT_POINTER:
    case WS_RESULT_PAYLOAD:
    case WS_RESULT_UINT64:
    default:
      break;
    }
  return ok;
}

/* The critical of a finish function called on a task that returned
 * another kind of result: the task's code decides the kind, so asking for
 * the wrong one is a programmer error (as for WsTask's accessors). The
 * result is still freed with the handle. The task may be gone: @name was
 * read before the handle was freed, and @task is only printed. */
static void
wrong_result_kind (gconstpointer  task,
                   const char    *name,
                   const char    *strfunc,
                   WsResultKind   kind)
{
  char label[WS_RAW_TASK_LABEL_SIZE];

  ws_raw_task_label_for_name (task, name, label);
  switch (kind)
    {
    case WS_RESULT_POINTER:
      g_critical ("%s: task %s returned a pointer (ws_context_return_pointer()); "
                  "take it with ws_join_handle_finish()", strfunc, label);
      break;
    case WS_RESULT_UINT64:
      g_critical ("%s: task %s returned an integer (ws_context_return_uint64()); "
                  "take it with ws_join_handle_finish_uint64()", strfunc, label);
      break;
    case WS_RESULT_PAYLOAD:
    case WS_RESULT_NONE:
    case WS_RESULT_ERROR:
    case WS_RESULT_CANCELLED:
    default:
      g_critical ("%s: task %s returned a value (ws_context_return_value()); "
                  "read it through ws_join_handle_into_task() and ws_task_get_value()",
                  strfunc, label);
      break;
    }
}

/**
 * ws_join_handle_finish:
 * @self: (transfer full): a #WsJoinHandle whose task has ended
 * @error: return location for a #GError
 *
 * Takes the outcome of the task of @self and frees the handle. Call it
 * once [method@Ws.JoinHandle.poll] returned %WS_POLL_READY (or
 * [method@Ws.JoinHandle.wait] returned); on a task that has not ended it
 * is a programmer error (a critical), and the handle is freed all the
 * same. So is calling it on a task that returned an integer or a value
 * (a critical naming the function that takes it; the result is freed).
 *
 * A handle is ended once. Using it after it ended (finishing it twice,
 * say) is a programmer error, reported by a critical ("join handle
 * already finished") while the task's memory has not been reused: always
 * in an ASan build while the memory is in ASan's quarantine. In other
 * builds the memory goes to a per-thread cache of the thread that freed
 * the task, which may be the worker that completed it, not the caller,
 * and from there to any spawn on any thread: no call of the caller's
 * bounds how long the critical stays possible, and a use after the end may
 * read another task's memory at any time. After that reuse nothing can
 * tell, as for any pointer used after it was freed; in particular a
 * handle turned into a [class@Ws.Task]
 * with [method@Ws.JoinHandle.into_task] looks alive as long as the
 * #WsTask is.
 *
 * Returns: (transfer full) (nullable): the pointer the task returned with
 *   [method@Ws.Context.return_pointer], now the caller's (its destroy
 *   notify does not run); %NULL if it returned no result (or another
 *   kind), and %NULL with @error set if it failed, or with
 *   %G_IO_ERROR_CANCELLED if it was cancelled
 */
gpointer
ws_join_handle_finish (WsJoinHandle  *self,
                       GError       **error)
{
  WsResult r = { WS_RESULT_NONE, };
  gpointer ret = NULL;
  const char *name;

  g_return_val_if_fail (self != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);
  return_val_if_ended (self, NULL);

  /* For a critical after take_outcome (), which frees the handle. */
  name = ws_raw_task_get_name (RAW (self));
  if (take_outcome (self, &r, error))
    {
      if (r.kind == WS_RESULT_POINTER)
        {
          ret = r.u.pointer.data;
          r.u.pointer.data = NULL;
        }
      else if G_UNLIKELY (r.kind != WS_RESULT_NONE)
        wrong_result_kind (self, name, G_STRFUNC, r.kind);
    }
  ws_result_clear (&r);
  return ret;
}

/**
 * ws_join_handle_finish_uint64:
 * @self: (transfer full): a #WsJoinHandle whose task has ended
 * @value: (out) (optional): the integer the task returned with
 *   [method@Ws.Context.return_uint64]; 0 for another kind of result
 * @error: return location for a #GError
 *
 * Takes the integer result of the task of @self and frees the handle, as
 * [method@Ws.JoinHandle.finish] does for a pointer. Calling it on a task
 * that returned a pointer or a value is a programmer error: a critical
 * naming the function that takes that result, %FALSE, and the result is
 * freed with the handle.
 *
 * Returns: %TRUE if the task ended with an integer or no result; %FALSE
 *   with @error set if it failed or was cancelled
 */
gboolean
ws_join_handle_finish_uint64 (WsJoinHandle  *self,
                              guint64       *value,
                              GError       **error)
{
  WsResult r = { WS_RESULT_NONE, };
  gboolean ok;
  const char *name;

  if (value != NULL)
    *value = 0;
  g_return_val_if_fail (self != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  return_val_if_ended (self, FALSE);

  name = ws_raw_task_get_name (RAW (self));
  ok = take_outcome (self, &r, error);
  if (ok && r.kind == WS_RESULT_UINT64 && value != NULL)
    *value = r.u.uint64;
  else if G_UNLIKELY (ok && r.kind != WS_RESULT_UINT64 && r.kind != WS_RESULT_NONE)
    {
      wrong_result_kind (self, name, G_STRFUNC, r.kind);
      ok = FALSE;
    }
  ws_result_clear (&r);
  return ok;
}

/**
 * ws_join_handle_into_task:
 * @self: (transfer full): a #WsJoinHandle
 *
 * Turns @self into the [class@Ws.Task] of the same task, for code that
 * needs a GObject: several waiters, `ws_task_wait_async()` on a main
 * loop, bindings. The handle is consumed.
 *
 * Returns: (transfer full): the task
 */
WsTask *
ws_join_handle_into_task (WsJoinHandle *self)
{
  g_return_val_if_fail (self != NULL, NULL);
  return_val_if_ended (self, NULL);

  return ws_task_new_for_raw (RAW (self));
}

/**
 * ws_join_handle_free:
 * @self: (transfer full): a #WsJoinHandle
 *
 * Lets go of the handle without taking the outcome: the task goes on
 * (it is not cancelled; call [method@Ws.JoinHandle.cancel] first for
 * that), and its result is freed when it ends.
 *
 * One exception keeps a cancel structured: inside a fiber whose task was
 * cancelled (an await of it returned %FALSE), a handle it lets go of
 * while it unwinds (its `g_autoptr (WsJoinHandle)` variables) cancels
 * the task first: a child that the fiber had neither awaited nor let go
 * of when it was cancelled is cancelled with it. A fiber that wants a
 * child to outlive a cancel lets go of its handle before.
 */
void
ws_join_handle_free (WsJoinHandle *self)
{
  g_return_if_fail (self != NULL);
  return_val_if_ended (self, );

  /* A child of a cancelled fiber that it neither awaited nor detached
   * before the cancel (ws-fiber.c, "Children"). */
  if G_UNLIKELY (ws_fiber_running_is_cancelled ())
    ws_raw_task_cancel (RAW (self));
  ws_raw_task_drop_join_handle (RAW (self));
}
