/* ws-fiber-join.c: a fiber awaits several tasks: all of them, or the first to succeed
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Both are one loop of ws_task_poll () over the tasks not yet ended,
 * which lists the fiber's waker on each (once per task however often it
 * is polled), and a suspend while none decides: the task's end wakes the
 * fiber, which looks again. What decides, in the order the fiber sees the
 * ends (a wake may bring several): for all, the first failure, or every
 * task succeeded; for any, the first success, or every task failed. The
 * tasks still running then are cancelled: nobody waits for them any
 * more. A cancel of the fiber itself cancels every task it waits for,
 * then waits for their ends without suspending (a cancelled fiber can
 * no longer suspend: ws-fiber.c, "Children"), so that a cancelled fiber
 * knows its children have cleaned up; the call then fails with
 * G_IO_ERROR_CANCELLED. On a worker that wait is a ws_block_in_place ()
 * (the worker's queue goes on on another thread); on a local fiber's
 * thread it iterates that thread's context: the local executor's source
 * recurses (ws-local-executor.c, "Recursion"), so the local children run
 * nested in the dispatch that runs the waiting fiber, and GIO callbacks
 * and timers come too.
 * The loop reads each task's outcome once it has ended, and never twice
 * (`seen`), so an array of n tasks costs n polls per wake.
 */

#include "config.h"

#include "ws-fiber-join.h"
#include "ws-fiber.h"
#include "ws-runtime.h"
#include "ws-task-private.h"
#include "ws-error.h"

static void
cancel_unfinished (WsTask * const *tasks,
                   guint           n_tasks)
{
  for (guint i = 0; i < n_tasks; i++)
    if (!ws_task_is_finished (tasks[i]))
      ws_task_cancel (tasks[i]);
}

static gboolean
check_args (WsContext      *cx,
            WsTask * const *tasks,
            guint           n_tasks,
            const char     *strfunc)
{
  if G_UNLIKELY (cx == NULL || !ws_context_is_fiber (cx))
    {
      char label[WS_RAW_TASK_LABEL_SIZE];

      g_critical ("%s: called outside a fiber, by task %s; from a poll function, await "
                  "each task with ws_task_poll(), or from a main loop use a WsTaskGroup",
                  strfunc, ws_context_label (cx, label));
      return FALSE;
    }
  g_return_val_if_fail (tasks != NULL || n_tasks == 0, FALSE);
  for (guint i = 0; i < n_tasks; i++)
    g_return_val_if_fail (WS_IS_TASK (tasks[i]), FALSE);
  return TRUE;
}

typedef struct
{
  WsTask * const *tasks;
  guint           n_tasks;
} Tasks;

/* Blocks until every task has ended (see the top): off the workers, or
 * on a local fiber's thread, whose own context it iterates when the task
 * is one of that context's (ws_task_wait refuses there). */
static void
wait_ended (gpointer data)
{
  Tasks *t = data;
  g_autoptr(GMainContext) own = g_main_context_ref_thread_default ();

  for (guint i = 0; i < t->n_tasks; i++)
    {
      g_autoptr(GError) error = NULL;

      if (ws_task_is_finished (t->tasks[i])
          || ws_task_wait (t->tasks[i], NULL, &error)
          || !g_error_matches (error, WS_ERROR, WS_ERROR_WOULD_BLOCK))
        continue;
      /* Inside the dispatch that runs this context's local tasks (the
       * waiting fiber is one): the source recurses, so the local children
       * run nested in it. */
      while (!ws_task_is_finished (t->tasks[i]))
        if (!g_main_context_iteration (own, FALSE))
          g_usleep (100);
    }
}

/* Waits until @decide says so; the index it chose, -1 if every task
 * ended without a decision, -2 if the fiber was cancelled. */
typedef gboolean (*Decide) (gboolean ok);

static gint
await_first (WsContext      *cx,
             WsTask * const *tasks,
             guint           n_tasks,
             Decide          decide,
             GError        **error)
{
  g_autofree gboolean *seen = g_new0 (gboolean, n_tasks);
  GError *last_error = NULL;
  guint n_seen = 0;

  for (;;)
    {
      for (guint i = 0; i < n_tasks; i++)
        {
          GError *task_error = NULL;
          gboolean ok;

          if (seen[i] || ws_task_poll (tasks[i], cx) == WS_POLL_PENDING)
            continue;
          seen[i] = TRUE;
          n_seen++;
          ok = ws_task_get_outcome (tasks[i], &task_error);
          if (decide (ok))
            {
              cancel_unfinished (tasks, n_tasks);
              g_clear_error (&last_error);
              if (task_error != NULL)
                g_propagate_error (error, task_error);
              return (gint) i;
            }
          g_clear_error (&last_error);
          last_error = task_error;
        }
      if (n_seen == n_tasks)
        {
          if (last_error != NULL)
            g_propagate_error (error, last_error);
          return -1;
        }
      ws_context_note_await (cx, "ws_fiber_await_all/any");
      if (!ws_fiber_suspend (cx))
        {
          Tasks unfinished = { tasks, n_tasks };

          g_clear_error (&last_error);
          cancel_unfinished (tasks, n_tasks);
          if (!ws_block_in_place (wait_ended, &unfinished, NULL))
            wait_ended (&unfinished);
          g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_CANCELLED,
                               "The fiber was cancelled while it awaited its tasks");
          return -2;
        }
    }
}

static gboolean
decide_all (gboolean ok)
{
  return !ok;
}

static gboolean
decide_any (gboolean ok)
{
  return ok;
}

/**
 * ws_fiber_await_all: (skip)
 * @cx: the running fiber's context
 * @tasks: (array length=n_tasks): the tasks to await
 * @n_tasks: how many
 * @error: return location for a #GError
 *
 * Waits, inside a fiber, until every task in @tasks has completed
 * successfully, or one of them fails: then the tasks still running are
 * cancelled (nobody waits for them any more) and the call fails with that
 * task's error. The results stay in the tasks: read them with
 * [method@Ws.Task.get_value] or [method@Ws.Task.propagate_pointer].
 *
 * ```c
 * WsTask *parts[] = { a, b, c };
 *
 * if (!ws_fiber_await_all (cx, parts, G_N_ELEMENTS (parts), &error))
 *   return;                       // one failed: the others are cancelled
 * ```
 *
 * If the fiber's task is cancelled while it waits, every task in @tasks
 * is cancelled too and the call fails with %G_IO_ERROR_CANCELLED. A task
 * that a cancel ends fails with %G_IO_ERROR_CANCELLED, like any error.
 *
 * Returns: %TRUE if every task completed successfully
 */
gboolean
ws_fiber_await_all (WsContext      *cx,
                    WsTask * const *tasks,
                    guint           n_tasks,
                    GError        **error)
{
  if (!check_args (cx, tasks, n_tasks, G_STRFUNC))
    return FALSE;
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  /* -1: every task ended and none failed. */
  return await_first (cx, tasks, n_tasks, decide_all, error) == -1;
}

/**
 * ws_fiber_await_any: (skip)
 * @cx: the running fiber's context
 * @tasks: (array length=n_tasks): the tasks to await
 * @n_tasks: how many
 * @error: return location for a #GError
 *
 * Waits, inside a fiber, for the first task in @tasks to complete
 * successfully: it wins, the tasks still running are cancelled, and the
 * call returns its index. If every task fails, the call fails with the
 * error of the one that failed last (with no task, with
 * %G_IO_ERROR_NOT_FOUND). A fiber cancelled while it waits cancels every
 * task in @tasks and fails with %G_IO_ERROR_CANCELLED.
 *
 * ```c
 * WsTask *mirrors[] = { fetch_a, fetch_b };
 * gint winner = ws_fiber_await_any (cx, mirrors, 2, &error);
 * ```
 *
 * Returns: the index of the task that won, or -1 with @error set
 */
gint
ws_fiber_await_any (WsContext      *cx,
                    WsTask * const *tasks,
                    guint           n_tasks,
                    GError        **error)
{
  gint i;

  if (!check_args (cx, tasks, n_tasks, G_STRFUNC))
    return -1;
  g_return_val_if_fail (error == NULL || *error == NULL, -1);

  if (n_tasks == 0)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                           "ws_fiber_await_any() was given no task");
      return -1;
    }
  i = await_first (cx, tasks, n_tasks, decide_any, error);
  return i >= 0 ? i : -1;
}
