/* ws-fiber.c: fibers, tasks whose body is a C function on its own stack
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A fiber is a task like any other: the core polls fiber_poll (), and the
 * task's destroy notify is fiber_destroy (). Everything that works on a
 * task (join handles, WsTask, groups, limiters, cancellation, metrics,
 * shutdown, every awaitable) works on a fiber unchanged. The fiber's
 * function runs on a stack of its own (ws-fiber-stack.c), switched to
 * and from with ws-fiber-switch.c.
 *
 * The suspend/resume protocol. A fiber is in one of four states:
 *
 *   NEW        spawned, never polled: no stack yet;
 *   RUNNING    its function runs on its stack, switched to by a poller
 *              that holds the task's RUNNING bit;
 *   SUSPENDED  its function called ws_fiber_suspend (), which switched
 *              back to the poller, whose fiber_poll () returned PENDING;
 *   DONE       its function returned; the stack has no live frame.
 *
 *  - Only a holder of the task's RUNNING bit switches to a fiber: the
 *    core's poller (fiber_poll) or whoever destroys the task's future,
 *    which the core does only with RUNNING held (ws-raw-task.c,
 *    cancel_task and drop_stage). So one thread at a time runs a fiber,
 *    and the state and the WsFiber fields are touched only under RUNNING,
 *    whose acquire and release (the state word's) order them between
 *    pollers: no field here needs an atomic.
 *  - A suspend is a PENDING: the fiber suspends only after whatever it
 *    waits on holds its waker (the awaited _poll function registered it),
 *    or after a yield (ws_context_yield () or a spent budget, which the
 *    fiber's context records and fiber_poll () hands to the poller's, whose
 *    transition to idle wakes the task), exactly as a poll function
 *    returns PENDING; the wake's protocol is the task's.
 *  - Who owns the stack: the fiber from its first resume until its
 *    function returns; then the poller that saw it return, which
 *    releases it to the runtime's pool (through its worker's cache,
 *    ws-fiber-stack.c). A stack is never released or
 *    reused while it holds a live frame. Every fiber has a stack of its
 *    own, also an awaited child that runs nested in its parent's await
 *    (work-first, ws-worker.c): the child may suspend, its frames cannot
 *    move and other threads may use its locals meanwhile (a buffer a
 *    read fills), and its parent must be able to run before the child
 *    ends (a wait raced against a deadline, a cancel), so the two need
 *    stacks apart (doc/performance.md,
 *    "Why an awaited child fiber keeps a stack of its own").
 *  - Cancellation: ws_fiber_suspend () returns FALSE once the task is
 *    cancelled; it reads CANCELLED in the state word before it switches,
 *    and returns FALSE at once without a switch from then on. A task
 *    cancelled while its fiber is SUSPENDED is never polled again: the
 *    core destroys its future (cancel_task), which is fiber_destroy (),
 *    and fiber_destroy () resumes the fiber with its cancelled flag set,
 *    so the suspend it is in returns FALSE and its code unwinds; every
 *    later suspend returns FALSE without switching, so that one resume
 *    runs the function to its return. Only then is the stack released and
 *    the user's destroy notify run. A fiber whose function returned after
 *    it saw the cancellation ends as cancelled, whatever result it set.
 *  - Children. A cancel of a fiber reaches the children it spawned and
 *    has neither awaited nor let go of: a fiber holds a child by its
 *    join handle (ws_context_spawn, ws_context_spawn_fiber), and a handle
 *    that a cancelled fiber lets go of while it unwinds cancels its task
 *    (ws_join_handle_free asks ws_fiber_running_is_cancelled, which reads
 *    the fiber this thread resumed: `running_fiber`, set and restored by
 *    resume () on the poller's stack, never kept across a switch). One
 *    the fiber awaited is finished and gone; one it let go of before the
 *    cancel goes on. A cancelled fiber that must know its children have
 *    cleaned up awaits them with ws_fiber_await_all (), which, once the
 *    fiber is cancelled, cancels them and waits for their ends without
 *    suspending (ws-fiber-join.c), as a thread job's wait does below.
 *  - Shutdown reaches a fiber as it reaches any task (ws-task-registry.c,
 *    ws-runtime-core.c): a queued or idle pending task is cancelled and
 *    its future destroyed by the shutdown sweep or the queue drains,
 *    which for a fiber is the resume above. So a fiber's stack is never
 *    abandoned with live frames, and the fiber's output and user data are
 *    dropped after its function returned (models/fiber.pml).
 *  - Migration: a suspended fiber may be resumed by any poller, on any
 *    worker (a steal, a wake from another thread) or, when cancelled, by
 *    whoever ends the cancelled task: a worker that picks it up, or the
 *    thread that shuts the runtime down. Pinning a
 *    fiber to its first worker would take a queue of its own per worker
 *    and lose the work stealing that makes fork-join scale. The cost is
 *    the thread-local storage rule: no code may keep the address of a
 *    thread-local variable across a suspend. wsrt's own path keeps it
 *    (ws-fiber-switch.c); the rule for users is in
 *    doc/getting-started-c.md.
 *  - Local fibers (ws_runtime_spawn_local_fiber) do not migrate: their
 *    task's host is a local executor (ws-local-executor.c), which polls
 *    its tasks and destroys their futures only on the thread that owns
 *    its GMainContext, for a cancel from any thread and for shutdown
 *    alike (a shutdown elsewhere queues the cancellation for the owner
 *    and waits for it; one on the owner's thread runs it). Every resume
 *    of such a fiber is fiber_poll () or fiber_destroy () under RUNNING
 *    held by that thread, so the fiber runs, suspends, unwinds and has
 *    its destroy notify run on that thread alone (models/fiber.pml,
 *    LOCAL). Between resumes the executor's dispatch has returned, so
 *    the main loop runs while the fiber waits. "That thread" is the
 *    context's owner at the time: a context that one thread releases
 *    and another acquires takes its local fibers with it, as it takes
 *    its local tasks.
 *  - A thread job (ws_fiber_run_in_thread) is the one wait that the
 *    cancellation does not end: the job's function may use the fiber's
 *    stack until it returns, so the fiber's frames must stay until then.
 *    While the task is not cancelled the fiber suspends as for any await
 *    (the job's end wakes it). Once it is, its suspends no longer switch
 *    out, so the thread that resumed it to unwind it (fiber_destroy (),
 *    or a poll that saw the cancellation) blocks until the job's
 *    function returned, after it cancelled the function's cancellable
 *    (the task's, which the core cancels too, but a local task's only
 *    at its cancel_task (), and a poll may see CANCELLED first). On a
 *    worker that wait is a ws_block_in_place (): the worker's queue
 *    moves to a new thread and its other tasks go on; the thread of a
 *    local fiber cannot hand its context off and waits itself, as does
 *    a thread that shuts the runtime down. The job's end is its destroy
 *    notify, which the blocking pool runs also for a job it refuses or
 *    cancels at shutdown, so the wait always ends (models/fiber.pml,
 *    THREAD_JOB).
 *
 * The fiber's context: the WsContext a fiber's function gets is the
 * fiber's own (WsFiber.cx), valid for the fiber's life, not the poller's,
 * which lives on the poller's stack for one poll. Each resume copies the
 * poll's budget in and the budget and yield flag back; the result stays
 * in the fiber's context until the function returns. Its worker is NULL:
 * a migrated fiber must not reach into the worker that polled it before.
 * (The work-first run of an awaited task, ws-worker.c, takes the worker
 * of the thread the fiber runs on at that moment.)
 *
 * No suspend inside a dispatch the fiber runs. A fiber may iterate a
 * GMainContext itself (a library's synchronous mode does), but a suspend
 * inside one of that context's callbacks would switch away in the middle
 * of g_main_dispatch (): GLib's per-thread dispatch record (its depth,
 * the current source) would stay set on the poller's thread, where the
 * next task polled sees itself inside a dispatch (ws_block_in_place is
 * refused there, doc/architecture.md "Rules: blocking"), and the fiber
 * could resume on another thread, which would run the rest of GLib's
 * dispatch against the first thread's record. So resume () notes the
 * poller's own g_main_depth () (0 on a worker, which polls outside any
 * dispatch; 1 or more where a main loop polls), and a suspend from a
 * deeper depth is refused as ws_block_in_place is: a critical naming
 * the fix, and FALSE, the result code already treats as "stop" (an
 * await's FALSE). The task is not cancelled: a later await outside the
 * dispatch suspends as usual.
 */

#include "config.h"

#include "ws-fiber.h"
#include "ws-fiber-private.h"
#include "ws-error.h"
#include "ws-runtime-private.h"
#include "ws-task-private.h"
#include "ws-core-private.h"
#include "ws-context-private.h"
#include "ws-refuse-private.h"

typedef enum
{
  FIBER_NEW,
  FIBER_RUNNING,
  FIBER_SUSPENDED,
  FIBER_DONE,
} FiberState;

/* A fiber lives in its task's tail (ws_runtime_core_spawn_with_state):
 * one allocation for both, which the task's last reference frees. The
 * spawner writes the fields before `gio` and copies them into the tail;
 * the rest is set by the first poll, before anything reads it. A local
 * fiber, whose executor has no tails, is allocated on its own and freed
 * by fiber_destroy (). */
typedef struct _WsFiber WsFiber;
struct _WsFiber
{
  /* Set at the spawn. */
  WsFiberFunc     func;
  gpointer        data;
  GDestroyNotify  destroy;
  WsRuntimeCore  *core;              /* its runtime: the task holds it */
  WsFiberStackPool *stacks;          /* the runtime's; outlives the task */
  gsize           stack_size;
  WsFiberStack   *stack;             /* from the first poll until DONE */
  FiberState      state;
  gboolean        cancelled;         /* a suspend returned, or will return, FALSE */
  gboolean        own_block;         /* a local fiber's: fiber_destroy () frees it */
  /* Set at the first poll. */
  gpointer        gio;               /* the GIO await's slot (ws-fiber-gio.c) */
  gint            poll_depth;        /* g_main_depth () of the poller, at the resume */
  WsContext       cx;                /* the fiber's context (see the top) */
  WsFiberCtx      ctx;               /* the switch's */
};

/* What a spawn writes: the fields before `gio`. */
#define FIBER_HEAD_SIZE G_STRUCT_OFFSET (WsFiber, gio)

/* The fiber this thread runs now, innermost first ("Children" at the top):
 * kept here, not in the core's WsThread, since only the face's fibers
 * have it. */
static _Thread_local WsFiber *running_fiber WS_TLS_INITIAL_EXEC;

static void
fiber_main (gpointer arg)
{
  WsFiber *f = arg;

  f->func (&f->cx, f->data);
  /* Its last GIO result, and a call it never awaited (which is cancelled). */
  g_clear_pointer (&f->gio, ws_fiber_gio_free);
  f->state = FIBER_DONE;
  /* Returning exits the fiber (ws-fiber-switch.c, "Returns"). */
}

/* Whether @address is on @f's stack. */
static gboolean
is_on_stack (WsFiber  *f,
             gpointer  address)
{
  return f->stack != NULL
         && (guint8 *) address >= (guint8 *) ws_fiber_stack_bottom (f->stack)
         && (guint8 *) address < (guint8 *) ws_fiber_stack_top (f->stack);
}

/* With RUNNING held: runs the fiber until it suspends or returns. */
static void
resume (WsFiber *f,
        guint    budget)
{
  WsFiber *outer = running_fiber;

  f->cx.budget = budget;
  f->cx.yielded = FALSE;
  f->poll_depth = g_main_depth ();
  f->state = FIBER_RUNNING;
  /* Set and restored on the poller's stack, around the switch: a fiber
   * resumed on another thread finds that thread's value ("Children"). */
  running_fiber = f;
  ws_fiber_ctx_resume (&f->ctx);
  running_fiber = outer;
}

/* The fiber's function returned: its stack is ours to give back. On the
 * poller's stack, never the fiber's. */
static void
release_stack (WsFiber *f)
{
  ws_fiber_ctx_clear (&f->ctx);
  ws_fiber_stack_release (f->stacks, g_steal_pointer (&f->stack));
}

static WsPoll
fiber_poll (WsContext *cx,
            gpointer   user_data)
{
  WsFiber *f = user_data;

  if G_UNLIKELY (f->state == FIBER_NEW)
    {
      GError *error = NULL;

      /* Refused past the runtime's max-fiber-stacks, or when the kernel has no
       * mapping left: the fiber ends with the error, its function never
       * runs. */
      f->stack = ws_fiber_stack_get (f->stacks, f->stack_size, &error);
      if (f->stack == NULL)
        {
          f->state = FIBER_DONE;
          ws_context_return_error (cx, error);
          return WS_POLL_READY;
        }
      f->gio = NULL;
      memset (&f->cx, 0, sizeof f->cx);
      f->cx.fiber = f;
      ws_fiber_ctx_init (&f->ctx, f->stack, fiber_main, f);
      /* What a stack overflow's message names (ws-fiber-overflow.c). */
      f->ctx.task = cx->task;
      f->ctx.func = (gconstpointer) f->func;
    }

  f->cx.task = cx->task;
  resume (f, cx->budget);
  cx->budget = f->cx.budget;
  /* A yield on the fiber's stack is this poll's: without it here the
   * task's transition to idle would not wake it, and a fiber that only
   * yielded would never run again. */
  cx->yielded = f->cx.yielded;

  if (f->state != FIBER_DONE)
    return WS_POLL_PENDING;

  release_stack (f);
  cx->result = f->cx.result;
  f->cx.result.kind = WS_RESULT_NONE;
  if (f->cancelled)
    {
      /* It saw the cancellation: it ends as cancelled. */
      ws_result_clear (&cx->result);
      cx->result.kind = WS_RESULT_CANCELLED;
    }
  return WS_POLL_READY;
}

/* The task's future is destroyed: after its last poll (DONE), at a refused
 * spawn (NEW), or when the task was cancelled (SUSPENDED: see the top). */
static void
fiber_destroy (gpointer user_data)
{
  WsFiber *f = user_data;
  gboolean own_block;

  if (f->state == FIBER_SUSPENDED)
    {
      f->cancelled = TRUE;
      resume (f, G_MAXUINT);
      /* Every suspend after the cancellation returns without switching,
       * so one resume runs the function to its return. */
      g_assert (f->state == FIBER_DONE);
      ws_result_clear (&f->cx.result);
      release_stack (f);
    }
  g_assert (f->stack == NULL);
  /* A local fiber's block is freed here; one in its task's tail lives
   * until the task's memory goes (the caller holds a reference to it
   * across this notify). */
  own_block = f->own_block;
  if (f->destroy != NULL)
    f->destroy (f->data);
  if (own_block)
    g_free (f);
}

/* A new fiber's head (the fields a spawn sets) in @f. */
static void
fiber_init (WsFiber        *f,
            WsRuntimeCore  *core,
            gsize           stack_size,
            WsFiberFunc     func,
            gpointer        user_data,
            GDestroyNotify  destroy)
{
  f->func = func;
  f->data = user_data;
  f->destroy = destroy;
  f->core = core;
  f->stacks = ws_runtime_core_get_fiber_stacks (core);
  f->stack_size = MAX (stack_size, WS_FIBER_STACK_MIN_SIZE);
  f->stack = NULL;
  f->state = FIBER_NEW;
  f->cancelled = FALSE;
  f->own_block = FALSE;
}

static gsize
core_stack_size (WsRuntimeCore *core)
{
  gsize size = ws_runtime_core_get_config (core)->fiber_stack_size;

  return size != 0 ? size : WS_FIBER_STACK_DEFAULT_SIZE;
}

static WsRawTask *
spawn (WsRuntimeCore  *core,
       gsize           stack_size,
       WsFiberFunc     func,
       gpointer        user_data,
       GDestroyNotify  destroy)
{
  WsFiber head;

  /* In the task's tail: a large block of the task allocator, whose
   * per-thread caches serve a fiber freed where its task ends, often on
   * another worker than its spawner's. */
  G_STATIC_ASSERT (WS_RAW_TASK_TAIL_OFFSET + sizeof (WsFiber) <= WS_TASK_ALLOCATOR_LARGE);
  fiber_init (&head, core, stack_size != 0 ? stack_size : core_stack_size (core),
              func, user_data, destroy);
  return ws_runtime_core_spawn_with_state (core, fiber_poll, &head, FIBER_HEAD_SIZE,
                                           sizeof (WsFiber), fiber_destroy, TRUE);
}

/**
 * ws_runtime_spawn_fiber: (skip)
 * @self: a #WsRuntime
 * @func: (scope notified) (closure user_data) (destroy destroy): the
 *   fiber's body
 * @user_data: data for @func
 * @destroy: (nullable): frees @user_data once @func has returned
 *
 * Spawns a fiber on the workers of @self: a task whose body @func is an
 * ordinary function on a stack of its own (of
 * [property@Ws.Runtime:fiber-stack-size] bytes), which waits where it
 * needs to with %WS_FIBER_AWAIT:
 *
 * ```c
 * static void
 * load (WsContext *cx, gpointer user_data)
 * {
 *   g_autoptr(WsSleep) nap = ws_sleep_new (10 * 1000);      // 10 ms
 *
 *   if (!WS_FIBER_AWAIT (cx, ws_sleep_poll (nap, cx)))
 *     return;                            // cancelled
 *   ws_context_return_uint64 (cx, 42);
 * }
 * ```
 *
 * The fiber is a task: it is spawned, scheduled, stolen, awaited,
 * cancelled and shut down as [method@Ws.Runtime.spawn]'s are. A waiting
 * fiber may be resumed on another worker than the one it waited on (see
 * the C guide on thread-local variables). A cancelled fiber is resumed
 * with its await returning %FALSE and is expected to return; shutdown
 * does the same to every fiber still waiting, and returns once their
 * functions have. @destroy runs exactly once, after @func has returned
 * (or at once if the fiber is refused or cancelled before it started).
 *
 * Returns: (transfer full): the fiber's task
 */
WsTask *
ws_runtime_spawn_fiber (WsRuntime      *self,
                        WsFiberFunc     func,
                        gpointer        user_data,
                        GDestroyNotify  destroy)
{
  ws_return_val_if_fail_free (WS_IS_RUNTIME (self), destroy, user_data, NULL);
  ws_return_val_if_fail_free (func != NULL, destroy, user_data, NULL);

  return ws_task_new_for_raw (spawn (ws_runtime_get_core (self), 0, func, user_data, destroy));
}

/**
 * ws_runtime_spawn_fiber_full: (skip)
 * @self: a #WsRuntime
 * @stack_size: the usable size of the fiber's stack in bytes; 0 for
 *   [property@Ws.Runtime:fiber-stack-size]; at most 1073741824 (1 GiB)
 * @func: (scope notified) (closure user_data) (destroy destroy): the
 *   fiber's body
 * @user_data: data for @func
 * @destroy: (nullable): frees @user_data once @func has returned
 *
 * Spawns a fiber as [method@Ws.Runtime.spawn_fiber] does, with a stack of
 * @stack_size bytes, and returns a [struct@Ws.JoinHandle]: no GObject per
 * fiber.
 *
 * The size is rounded up to pages. Its bounds are those of
 * [property@Ws.Runtime:fiber-stack-size]: a size from 1 to 16383 is raised
 * to 16384, and one above 1073741824 (1 GiB) is a programmer error (a
 * critical; the fiber is not spawned, @destroy runs at once and %NULL is
 * returned).
 *
 * Returns: (transfer full): the join handle of the fiber
 */
WsJoinHandle *
ws_runtime_spawn_fiber_full (WsRuntime      *self,
                             gsize           stack_size,
                             WsFiberFunc     func,
                             gpointer        user_data,
                             GDestroyNotify  destroy)
{
  ws_return_val_if_fail_free (WS_IS_RUNTIME (self), destroy, user_data, NULL);
  ws_return_val_if_fail_free (func != NULL, destroy, user_data, NULL);
  ws_return_val_if_fail_free (stack_size <= (1 << 30), destroy, user_data, NULL);

  return (WsJoinHandle *) spawn (ws_runtime_get_core (self), stack_size, func, user_data,
                                 destroy);
}

/**
 * ws_context_spawn_fiber: (skip)
 * @context: the context of the running task or fiber
 * @func: (scope notified) (closure user_data) (destroy destroy): the
 *   fiber's body
 * @user_data: data for @func
 * @destroy: (nullable): frees @user_data once @func has returned
 *
 * Spawns a fiber on the runtime of the running task or fiber, as
 * [method@Ws.Context.spawn] spawns a task: from a worker, the new fiber
 * goes to that worker's LIFO slot. Fork-join reads as it does with
 * threads:
 *
 * ```c
 * g_autoptr(WsJoinHandle) a = ws_context_spawn_fiber (cx, fib, GUINT_TO_POINTER (n - 1), NULL);
 * g_autoptr(WsJoinHandle) b = ws_context_spawn_fiber (cx, fib, GUINT_TO_POINTER (n - 2), NULL);
 * guint64 x, y;
 *
 * if (!WS_FIBER_AWAIT (cx, ws_join_handle_poll (a, cx))
 *     || !WS_FIBER_AWAIT (cx, ws_join_handle_poll (b, cx)))
 *   return;
 * ws_join_handle_finish_uint64 (g_steal_pointer (&a), &x, NULL);
 * ws_join_handle_finish_uint64 (g_steal_pointer (&b), &y, NULL);
 * ws_context_return_uint64 (cx, x + y);
 * ```
 *
 * Returns: (transfer full): the join handle of the fiber
 */
WsJoinHandle *
ws_context_spawn_fiber (WsContext      *context,
                        WsFiberFunc     func,
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

  return (WsJoinHandle *) spawn (core, 0, func, user_data, destroy);
}

/**
 * ws_fiber_suspend: (skip)
 * @context: the context of the running fiber
 *
 * Suspends the running fiber until its task is polled again: the fiber's
 * equivalent of returning %WS_POLL_PENDING, so arrange for a wake first
 * (a `_poll` function that returned %WS_POLL_PENDING did; %WS_FIBER_AWAIT
 * wraps the two). The fiber may go on on another worker thread.
 *
 * Once the fiber's task has been cancelled this returns %FALSE, at once
 * from then on: the fiber cleans up and returns.
 *
 * Calling it outside a fiber is a programmer error (a critical; it
 * returns %FALSE). So is calling it inside a callback of a
 * `GMainContext` that the fiber itself iterates
 * (`g_main_context_iteration()` or a `GMainLoop` run by the fiber): the
 * fiber would stop in the middle of GLib's dispatch. It is refused with
 * a critical and returns %FALSE without suspending; the task is not
 * cancelled, and an await outside the iteration suspends as usual.
 * Await outside the iteration, or replace the synchronous call that
 * iterates with its `_async` form awaited with %WS_FIBER_AWAIT.
 *
 * Returns: %TRUE when the task was polled again, %FALSE once it was
 *   cancelled
 */
gboolean
ws_fiber_suspend (WsContext *context)
{
  WsFiber *f;

  g_return_val_if_fail (context != NULL, FALSE);
  if G_UNLIKELY (context->fiber == NULL)
    {
      /* A poll function's context: there is no stack to suspend. FALSE,
       * which WS_FIBER_AWAIT reads as a cancel; the critical says which
       * it was. */
      char label[WS_RAW_TASK_LABEL_SIZE];

      g_critical ("%s: called outside a fiber, by task %s (WS_FIBER_AWAIT in a poll "
                  "function?): only a fiber can wait in place. Spawn the function with "
                  "ws_runtime_spawn_fiber () or ws_runtime_spawn_local_fiber (), or return "
                  "WS_POLL_PENDING from the poll function; the await returns FALSE, "
                  "although the task was not cancelled", G_STRFUNC,
                  ws_context_label (context, label));
      return FALSE;
    }
  f = context->fiber;
  /* Called on that fiber's own stack: a fiber's context used from another
   * task or thread is refused. The frame address, not a local's, which
   * ASan may move to a fake stack. The stack was set before the fiber
   * first ran and is released only after it returned. */
  g_return_val_if_fail (is_on_stack (f, __builtin_frame_address (0)), FALSE);

  if (f->cancelled)
    return FALSE;
  /* Acquire: pairs with the canceller's release of CANCELLED; the flag is
   * all we read. A cancel after this load finds the task RUNNING and is
   * seen by the core when the poll returns PENDING (fiber_destroy). */
  if (ws_raw_task_get_state (f->cx.task) & WS_STATE_CANCELLED)
    {
      f->cancelled = TRUE;
      return FALSE;
    }
  /* Inside a dispatch of a context the fiber iterates (see the top). */
  if G_UNLIKELY (g_main_depth () > f->poll_depth)
    {
      char label[WS_RAW_TASK_LABEL_SIZE];

      g_critical ("ws_fiber_suspend: fiber %s awaited inside a main-context callback "
                  "that the fiber itself dispatches (g_main_context_iteration() or a "
                  "main loop run by the fiber); the await is refused and returns FALSE. "
                  "Do not await inside a main-loop callback that the fiber itself "
                  "dispatches: await outside g_main_context_iteration(), or use the "
                  "_async call with WS_FIBER_AWAIT", ws_raw_task_label (f->cx.task, label));
      return FALSE;
    }

  f->state = FIBER_SUSPENDED;
  ws_trace_fiber_waiting (1);
  ws_fiber_ctx_suspend (&f->ctx);
  ws_trace_fiber_waiting (-1);
  /* Resumed, maybe on another thread: read only the fiber's own fields
   * (the top of ws-fiber-switch.c). */
  return !f->cancelled;
}

/**
 * ws_fiber_yield: (skip)
 * @context: the context of the running fiber
 *
 * Lets the other tasks of the worker's queue run, then goes on: a
 * [method@Ws.Context.yield] and a [func@Ws.fiber_suspend].
 *
 * Returns: %TRUE, or %FALSE once the fiber's task was cancelled
 */
gboolean
ws_fiber_yield (WsContext *context)
{
  g_return_val_if_fail (context != NULL && context->fiber != NULL, FALSE);

  ws_context_yield (context);
  return ws_fiber_suspend (context);
}

/**
 * ws_context_is_fiber: (skip)
 * @context: a #WsContext
 *
 * Whether @context is a fiber's, where [func@Ws.fiber_suspend] may be
 * called.
 *
 * Returns: %TRUE inside a fiber
 */
gboolean
ws_context_is_fiber (WsContext *context)
{
  g_return_val_if_fail (context != NULL, FALSE);

  return context->fiber != NULL;
}

/**
 * ws_runtime_spawn_local_fiber: (skip)
 * @self: a #WsRuntime
 * @context: (nullable): the context whose thread runs the fiber; %NULL
 *   for the caller's thread-default context
 * @func: (scope notified) (closure user_data) (destroy destroy): the
 *   fiber's body
 * @user_data: data for @func
 * @destroy: (nullable): frees @user_data once @func has returned
 *
 * Spawns a fiber that runs only on the thread that iterates @context,
 * usually the GTK main loop, as a local task of
 * [method@Ws.Runtime.spawn_local] does. Code that waits reads top to
 * bottom, and the main loop runs (a GTK app draws, handles input) while
 * the fiber waits:
 *
 * ```c
 * static void
 * refresh (WsContext *cx, gpointer user_data)
 * {
 *   GtkLabel *label = user_data;
 *   g_autoptr(WsSleep) pause = ws_sleep_new (200 * 1000);   // 200 ms
 *   g_autoptr(GError) error = NULL;
 *   g_autofree char *count = NULL;
 *
 *   if (!WS_FIBER_AWAIT (cx, ws_sleep_poll (pause, cx)))
 *     return;                                    // cancelled
 *   count = ws_fiber_run_in_thread (cx, count_files, NULL, &error);
 *   gtk_label_set_text (label, count != NULL ? count : error->message);
 * }
 *
 * g_autoptr(WsTask) t = ws_runtime_spawn_local_fiber (rt, NULL, refresh,
 *                                                      g_object_ref (label),
 *                                                      g_object_unref);
 * ```
 *
 * Every resume of the fiber is a dispatch of @context on the thread that
 * owns it: the fiber does not move to another thread (unless the context
 * itself does, released by one thread and acquired by another), so
 * thread-local variables and thread-bound APIs (GTK) are safe across its
 * awaits. It awaits worker
 * tasks, fibers and blocking jobs, and is awaited by them, as any task
 * ([method@Ws.Task.poll], join handles). Its timers and the GIO calls it
 * makes live on @context; it starts no worker thread by itself.
 *
 * Cancellation and shutdown unwind it on @context's thread: its await
 * returns %FALSE there, and @destroy and the handlers of its cancellable
 * ([method@Ws.Context.get_cancellable]) run there too. A
 * [method@Ws.Runtime.shutdown] called on that thread runs the unwinding
 * itself; called elsewhere, it waits for that thread to dispatch
 * @context. A fiber on a context that no thread iterates is run by
 * [method@Ws.Task.wait], which iterates that context, as it does for a
 * local task.
 *
 * Returns: (transfer full): the fiber's task
 */
WsTask *
ws_runtime_spawn_local_fiber (WsRuntime      *self,
                              GMainContext   *context,
                              WsFiberFunc     func,
                              gpointer        user_data,
                              GDestroyNotify  destroy)
{
  g_autoptr(GMainContext) ctx = NULL;
  WsRuntimeCore *core;
  WsFiber *f;

  ws_return_val_if_fail_free (WS_IS_RUNTIME (self), destroy, user_data, NULL);
  ws_return_val_if_fail_free (func != NULL, destroy, user_data, NULL);

  core = ws_runtime_get_core (self);
  ctx = context != NULL ? g_main_context_ref (context) : g_main_context_ref_thread_default ();
  f = g_new (WsFiber, 1);
  fiber_init (f, core, core_stack_size (core), func, user_data, destroy);
  f->own_block = TRUE;
  return ws_task_new_for_raw (ws_runtime_core_spawn_local (core, ctx, fiber_poll, f,
                                                           fiber_destroy, TRUE));
}

/* ---- thread jobs (ws_fiber_run_in_thread) ------------------------------- */

/* One call of ws_fiber_run_in_thread (): shared by the fiber, which
 * waits, and the blocking job, which runs the function; each holds a
 * reference. `done` and the outcome are written by the job under `lock`
 * and read by the fiber under it. */
typedef struct
{
  gatomicrefcount  ref;
  WsThreadFunc     func;
  gpointer         data;
  GCancellable    *cancellable;      /* the fiber task's */
  WsWaker         *waker;            /* the fiber task's */
  WsLock           lock;
  WsCond           cond;
  gboolean         ran;              /* the job's thread only */
  gboolean         done;             /* func returned, or never will run */
  gpointer         result;
  GError          *error;
} ThreadJob;

static void
thread_job_unref (gpointer data)
{
  ThreadJob *job = data;

  if (!g_atomic_ref_count_dec (&job->ref))
    return;
  g_clear_object (&job->cancellable);
  g_assert (job->waker == NULL);
  ws_lock_clear (&job->lock);
  ws_cond_clear (&job->cond);
  g_free (job);
}

/* The blocking job's poll: one call of func, on a blocking-pool thread. */
static WsPoll
thread_job_run (WsContext *cx,
                gpointer   data)
{
  ThreadJob *job = data;
  GError *error = NULL;
  gpointer result;

  job->ran = TRUE;
  result = job->func (job->cancellable, job->data, &error);
  ws_lock_lock (&job->lock);
  job->result = result;
  job->error = error;
  ws_lock_unlock (&job->lock);
  return WS_POLL_READY;
}

/* The blocking job's destroy notify: after its one poll, or in its place
 * when the pool refused or cancelled the job (a shutdown) before func
 * ran. Either way func will not run any more: the fiber may go on. */
static void
thread_job_done (gpointer data)
{
  ThreadJob *job = data;
  WsWaker *waker;

  ws_lock_lock (&job->lock);
  if (!job->ran)
    job->error = g_error_new_literal (G_IO_ERROR, G_IO_ERROR_CANCELLED,
                                      "The runtime was shut down before the thread "
                                      "job of ws_fiber_run_in_thread() could start");
  job->done = TRUE;
  waker = g_steal_pointer (&job->waker);
  ws_cond_signal (&job->cond);
  ws_lock_unlock (&job->lock);

  /* After `done`: the fiber's poll that this wake brings finds it. */
  ws_waker_wake (waker);
  ws_waker_unref (waker);
  thread_job_unref (job);
}

/* Blocks until func has returned (or will never run). */
static void
thread_job_wait (gpointer data)
{
  ThreadJob *job = data;

  ws_lock_lock (&job->lock);
  while (!job->done)
    ws_cond_wait (&job->cond, &job->lock);
  ws_lock_unlock (&job->lock);
}

static gboolean
thread_job_is_done (ThreadJob *job)
{
  gboolean done;

  ws_lock_lock (&job->lock);
  done = job->done;
  ws_lock_unlock (&job->lock);
  return done;
}

/**
 * WsThreadFunc:
 * @cancellable: (nullable): cancelled when the awaiting fiber's task is
 *   cancelled
 * @user_data: the data given to [func@Ws.fiber_run_in_thread]
 * @error: return location for a #GError
 *
 * A function run on a thread of the blocking pool by
 * [func@Ws.fiber_run_in_thread]: the shape of the body of a
 * `GTaskThreadFunc` that ends with g_task_return_pointer() or
 * g_task_return_error(), which ports unchanged.
 *
 * Returns: (nullable) (transfer full): the result, handed to the fiber
 *   as it is
 */

/**
 * ws_fiber_run_in_thread: (skip)
 * @cx: the context of the running fiber
 * @func: (scope call) (closure user_data): the function to run on the
 *   blocking pool
 * @user_data: data for @func
 * @error: return location for a #GError
 *
 * Runs @func on a thread of the blocking pool of the fiber's runtime
 * ([method@Ws.Runtime.spawn_blocking]) and waits for it: the fiber
 * suspends, the worker or main loop that ran it goes on with other work,
 * and the call returns @func's result and error as @func gave them. It is
 * g_task_run_in_thread() with its callback written as the next line:
 *
 * ```c
 * static gpointer
 * checksum_file (GCancellable *cancellable, gpointer user_data, GError **error)
 * {
 *   return checksum_path (user_data, cancellable, error);   // blocking I/O
 * }
 *
 * g_autofree char *sum = ws_fiber_run_in_thread (cx, checksum_file, path, &error);
 * ```
 *
 * The call never returns before @func has, also once the fiber's task is
 * cancelled, so @func may use the fiber's stack (@user_data may point at
 * a local variable of the fiber). @cancellable is the fiber task's
 * ([method@Ws.Context.get_cancellable]), cancelled when the task is:
 * @func should check it and return soon, since the thread that unwinds
 * the cancelled fiber (a worker, or the thread of a local fiber's main
 * context) waits for @func to return. If the task was cancelled before
 * the call, @func is not run and the call fails with
 * %G_IO_ERROR_CANCELLED; so it does if the runtime was shut down before
 * @func could start.
 *
 * Calling it outside a fiber (from a poll function, or with a context
 * that is not the running fiber's) is a programmer error: a critical,
 * and %NULL.
 *
 * Returns: (nullable) (transfer full): what @func returned
 */
gpointer
ws_fiber_run_in_thread (WsContext     *cx,
                        WsThreadFunc   func,
                        gpointer       user_data,
                        GError       **error)
{
  ThreadJob *job;
  WsFiber *f;
  gpointer result;

  if G_UNLIKELY (cx == NULL || cx->fiber == NULL)
    {
      char label[WS_RAW_TASK_LABEL_SIZE];

      g_critical ("ws_fiber_run_in_thread: called outside a fiber, by task %s; from a "
                  "poll function, spawn the job with ws_runtime_spawn_blocking() and "
                  "await its task with ws_task_poll(), or make the task a fiber "
                  "(ws_runtime_spawn_fiber, ws_runtime_spawn_local_fiber)",
                  ws_context_label (cx, label));
      return NULL;
    }
  g_return_val_if_fail (func != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);
  f = cx->fiber;
  /* As ws_fiber_suspend (): on the fiber's own stack, from its own code. */
  g_return_val_if_fail (is_on_stack (f, __builtin_frame_address (0)), NULL);

  /* Acquire: the canceller's CANCELLED, as in ws_fiber_suspend (). */
  if (f->cancelled || (ws_raw_task_get_state (f->cx.task) & WS_STATE_CANCELLED))
    {
      f->cancelled = TRUE;
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_CANCELLED,
                           "The fiber's task was cancelled before ws_fiber_run_in_thread()");
      return NULL;
    }

  job = g_new0 (ThreadJob, 1);
  g_atomic_ref_count_init (&job->ref);
  g_atomic_ref_count_inc (&job->ref);              /* the blocking job's */
  job->func = func;
  job->data = user_data;
  job->cancellable = g_object_ref (ws_context_get_cancellable (cx));
  job->waker = ws_context_get_waker (cx);
  ws_lock_init (&job->lock);
  ws_cond_init (&job->cond);

  /* No join handle: thread_job_done () is the completion, and runs also
   * when the pool refuses or cancels the job, so the fiber is never left
   * waiting for a job that will not run. */
  ws_runtime_core_spawn_blocking (f->core, thread_job_run, job, thread_job_done, FALSE);

  /* The wait. Suspend while the job runs; thread_job_done () wakes the
   * task after `done`. Once the task is cancelled a suspend no longer
   * switches out (ws_fiber_suspend), and the fiber's frames must stay
   * while func may use them: the thread that unwinds the fiber waits
   * here for func to return (models/fiber.pml, THREAD_JOB). */
  while (!thread_job_is_done (job))
    {
      ws_context_note_await (cx, G_STRFUNC);
      if (!ws_fiber_suspend (cx))
        {
          /* The task is cancelled, but its cancellable may not be yet: a
           * local task's is cancelled only on its own thread, which is
           * this one, in a poll that may have seen CANCELLED before its
           * cancel_task (). func must see it before we wait for func. */
          g_cancellable_cancel (job->cancellable);
          /* On a worker the wait hands the worker's queue to another
           * thread first, so its other tasks do not wait with us; a main
           * context's thread cannot hand off, and waits itself. */
          if (!ws_block_in_place (thread_job_wait, job, NULL))
            thread_job_wait (job);
          break;
        }
    }

  ws_lock_lock (&job->lock);
  result = g_steal_pointer (&job->result);
  if (job->error != NULL)
    g_propagate_error (error, g_steal_pointer (&job->error));
  ws_lock_unlock (&job->lock);
  thread_job_unref (job);
  return result;
}

gpointer *
ws_fiber_get_gio_slot (WsContext *cx)
{
  WsFiber *f;

  if (cx == NULL || cx->fiber == NULL)
    return NULL;
  f = cx->fiber;
  /* The frame address, as in ws_fiber_suspend (): on the fiber's stack. */
  if (!is_on_stack (f, __builtin_frame_address (0)))
    return NULL;
  return &f->gio;
}

gboolean
ws_fiber_running_is_cancelled (void)
{
  WsFiber *f = running_fiber;

  return f != NULL && f->cancelled;
}

WsRuntimeCore *
ws_fiber_get_running_core (WsContext *cx)
{
  WsFiber *f;

  if (cx == NULL || cx->fiber == NULL)
    return NULL;
  f = cx->fiber;
  /* The frame address, as in ws_fiber_suspend (): on the fiber's stack. */
  if (!is_on_stack (f, __builtin_frame_address (0)))
    return NULL;
  return f->core;
}

gboolean
ws_fiber_check_cancelled (WsContext *cx)
{
  WsFiber *f = cx->fiber;

  /* Acquire: the canceller's CANCELLED, as in ws_fiber_suspend (). */
  if (!f->cancelled && (ws_raw_task_get_state (f->cx.task) & WS_STATE_CANCELLED))
    f->cancelled = TRUE;
  return f->cancelled;
}
