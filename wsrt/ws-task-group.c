/* ws-task-group.c: wait for all of many tasks, or for the first
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Each member gets a small waker that knows its index; a task wakes its
 * waiters exactly once, when it ends, so counting those wakes counts the
 * finished members without scanning them. The waiters of the group (on
 * all, on any) are two WsWakerList (ws-waker-private.h), woken outside
 * the group's lock.
 */

#include "config.h"

#include <stdatomic.h>

#include "ws-task-group.h"
#include "ws-context.h"
#include "ws-async-wait-private.h"
#include "ws-core-private.h"
#include "ws-context-private.h"
#include "ws-task-private.h"

struct _WsTaskGroup
{
  GObject     parent_instance;
  WsLock      lock;           /* guards what follows */
  GPtrArray  *tasks;          /* WsTask * */
  guint       n_finished;
  gint        first;          /* index of the first to finish, or -1 */
  WsWakerList all_waiters;
  WsWakerList any_waiters;
};

/**
 * WsTaskGroup:
 *
 * A set of tasks to wait for together: all of them
 * ([method@Ws.TaskGroup.poll_all], [method@Ws.TaskGroup.wait_all_async]),
 * or the first to end ([method@Ws.TaskGroup.poll_any],
 * [method@Ws.TaskGroup.wait_any_async]), after which
 * [method@Ws.TaskGroup.cancel_all] stops the rest.
 *
 * Usable from a task, from a main loop, and from GJS and Vala.
 */

G_DEFINE_FINAL_TYPE (WsTaskGroup, ws_task_group, G_TYPE_OBJECT)

typedef struct
{
  WsWaker       base;
  _Atomic gint  ref_count;
  WsTaskGroup  *group;        /* strong */
  guint         index;
} Member;

static void
member_ref (WsWaker *w)
{
  atomic_fetch_add_explicit (&((Member *) w)->ref_count, 1, memory_order_relaxed);
}

static void
member_unref (WsWaker *w)
{
  Member *m = (Member *) w;

  if (atomic_fetch_sub_explicit (&m->ref_count, 1, memory_order_acq_rel) == 1)
    {
      g_object_unref (m->group);
      g_free (m);
    }
}

/* A member task ended. */
static void
member_wake (WsWaker *w)
{
  Member *m = (Member *) w;
  WsTaskGroup *self = m->group;
  WsWakerList all = WS_WAKER_LIST_INIT;
  WsWakerList any = WS_WAKER_LIST_INIT;

  ws_lock_lock (&self->lock);
  self->n_finished++;
  if (self->first < 0)
    {
      self->first = m->index;
      any = ws_waker_list_take (&self->any_waiters);
    }
  if (self->n_finished == self->tasks->len)
    all = ws_waker_list_take (&self->all_waiters);
  ws_lock_unlock (&self->lock);

  ws_waker_list_wake_all (&any);
  ws_waker_list_wake_all (&all);
}

static const WsWakerVTable member_vtable = {
  member_wake,
  member_ref,
  member_unref,
};

static void
ws_task_group_finalize (GObject *object)
{
  WsTaskGroup *self = WS_TASK_GROUP (object);

  g_ptr_array_unref (self->tasks);
  ws_waker_list_wake_all (&self->all_waiters);   /* nobody can be waiting any more */
  ws_waker_list_wake_all (&self->any_waiters);
  ws_lock_clear (&self->lock);

  G_OBJECT_CLASS (ws_task_group_parent_class)->finalize (object);
}

static void
ws_task_group_class_init (WsTaskGroupClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = ws_task_group_finalize;
}

static void
ws_task_group_init (WsTaskGroup *self)
{
  ws_lock_init (&self->lock);
  self->tasks = g_ptr_array_new_with_free_func (g_object_unref);
  self->first = -1;
  ws_waker_list_init (&self->all_waiters);
  ws_waker_list_init (&self->any_waiters);
}

/**
 * ws_task_group_new:
 *
 * Creates an empty task group. Add tasks with
 * [method@Ws.TaskGroup.add], then wait for all of them or for the first
 * to end.
 *
 * Returns: (transfer full): an empty group
 */
WsTaskGroup *
ws_task_group_new (void)
{
  return g_object_new (WS_TYPE_TASK_GROUP, NULL);
}

/**
 * ws_task_group_add:
 * @self: a #WsTaskGroup
 * @task: a task; the group keeps a reference
 *
 * Adds @task to the group.
 */
void
ws_task_group_add (WsTaskGroup *self,
                   WsTask      *task)
{
  Member *m;

  g_return_if_fail (WS_IS_TASK_GROUP (self));
  g_return_if_fail (WS_IS_TASK (task));

  m = g_new0 (Member, 1);
  m->base.vtable = &member_vtable;
  atomic_init (&m->ref_count, 1);
  m->group = g_object_ref (self);

  ws_lock_lock (&self->lock);
  m->index = self->tasks->len;
  g_ptr_array_add (self->tasks, g_object_ref (task));
  ws_lock_unlock (&self->lock);

  /* Wakes at once if the task has already ended. */
  ws_task_add_waiter (task, &m->base);
  member_unref (&m->base);
}

/**
 * ws_task_group_get_size:
 * @self: a #WsTaskGroup
 *
 * Counts the tasks added to the group.
 *
 * Returns: the number of tasks in the group
 */
guint
ws_task_group_get_size (WsTaskGroup *self)
{
  guint n;

  g_return_val_if_fail (WS_IS_TASK_GROUP (self), 0);

  ws_lock_lock (&self->lock);
  n = self->tasks->len;
  ws_lock_unlock (&self->lock);
  return n;
}

/**
 * ws_task_group_get_n_finished:
 * @self: a #WsTaskGroup
 *
 * Counts the tasks of the group that have ended (completed, failed or
 * cancelled).
 *
 * Returns: how many tasks of the group have ended
 */
guint
ws_task_group_get_n_finished (WsTaskGroup *self)
{
  guint n;

  g_return_val_if_fail (WS_IS_TASK_GROUP (self), 0);

  ws_lock_lock (&self->lock);
  n = self->n_finished;
  ws_lock_unlock (&self->lock);
  return n;
}

/**
 * ws_task_group_get_task:
 * @self: a #WsTaskGroup
 * @index: a position, in the order tasks were added
 *
 * Gets the task added at @index, in the order of
 * [method@Ws.TaskGroup.add].
 *
 * Returns: (transfer none): the task at @index
 */
WsTask *
ws_task_group_get_task (WsTaskGroup *self,
                        guint        index)
{
  WsTask *task;

  g_return_val_if_fail (WS_IS_TASK_GROUP (self), NULL);

  ws_lock_lock (&self->lock);
  task = index < self->tasks->len ? self->tasks->pdata[index] : NULL;
  ws_lock_unlock (&self->lock);
  g_return_val_if_fail (task != NULL, NULL);
  return task;
}

/**
 * ws_task_group_cancel_all:
 * @self: a #WsTaskGroup
 *
 * Cancels every task of the group that has not ended.
 */
void
ws_task_group_cancel_all (WsTaskGroup *self)
{
  g_autoptr(GPtrArray) tasks = NULL;

  g_return_if_fail (WS_IS_TASK_GROUP (self));

  ws_lock_lock (&self->lock);
  tasks = g_ptr_array_copy (self->tasks, (GCopyFunc) (void (*) (void)) g_object_ref, NULL);
  g_ptr_array_set_free_func (tasks, g_object_unref);
  ws_lock_unlock (&self->lock);

  for (guint i = 0; i < tasks->len; i++)
    ws_task_cancel (tasks->pdata[i]);
}

/**
 * ws_task_group_poll_all:
 * @self: a #WsTaskGroup
 * @context: the context of the awaiting task
 *
 * Awaits every task of the group. Consumes one unit of the cooperative
 * budget.
 *
 * Returns: %WS_POLL_READY once all have ended
 */
WsPoll
ws_task_group_poll_all (WsTaskGroup *self,
                        WsContext   *context)
{
  WsPoll ret = WS_POLL_READY;

  g_return_val_if_fail (WS_IS_TASK_GROUP (self), WS_POLL_READY);
  ws_context_return_val_if_not_in_poll (context, WS_POLL_READY);
  ws_context_note_await (context, G_STRFUNC);

  if (!ws_context_poll_proceed (context))
    return WS_POLL_PENDING;

  ws_lock_lock (&self->lock);
  if (self->n_finished < self->tasks->len)
    {
      ws_waker_list_add (&self->all_waiters, &context->task->waker);
      ret = WS_POLL_PENDING;
    }
  ws_lock_unlock (&self->lock);
  return ret;
}

/**
 * ws_task_group_poll_any:
 * @self: a #WsTaskGroup
 * @context: the context of the awaiting task
 * @first: (out) (transfer none) (optional): the first task that ended
 *
 * Awaits the first task of the group to end. Consumes one unit of the
 * cooperative budget.
 *
 * Returns: %WS_POLL_READY once one has ended
 */
WsPoll
ws_task_group_poll_any (WsTaskGroup  *self,
                        WsContext    *context,
                        WsTask      **first)
{
  WsPoll ret = WS_POLL_READY;

  g_return_val_if_fail (WS_IS_TASK_GROUP (self), WS_POLL_READY);
  ws_context_return_val_if_not_in_poll (context, WS_POLL_READY);
  ws_context_note_await (context, G_STRFUNC);

  if (first != NULL)
    *first = NULL;
  if (!ws_context_poll_proceed (context))
    return WS_POLL_PENDING;

  ws_lock_lock (&self->lock);
  if (self->first < 0)
    {
      ws_waker_list_add (&self->any_waiters, &context->task->waker);
      ret = WS_POLL_PENDING;
    }
  else if (first != NULL)
    *first = self->tasks->pdata[self->first];
  ws_lock_unlock (&self->lock);
  return ret;
}

static void
wait_async (WsTaskGroup         *self,
            gboolean             all,
            gpointer             tag,
            GCancellable        *cancellable,
            GAsyncReadyCallback  callback,
            gpointer             user_data)
{
  WsAsyncWait *wait = ws_async_wait_new (self, tag, "the group", cancellable, callback,
                                         user_data);
  gboolean done;

  ws_lock_lock (&self->lock);
  done = all ? self->n_finished == self->tasks->len : self->first >= 0;
  if (!done)
    ws_waker_list_add (all ? &self->all_waiters : &self->any_waiters,
                       ws_async_wait_get_waker (wait));
  ws_lock_unlock (&self->lock);

  if (done)
    ws_async_wait_complete (wait);
  ws_async_wait_unref (wait);
}

/**
 * ws_task_group_wait_all_async:
 * @self: a #WsTaskGroup
 * @cancellable: (nullable): stops the wait (not the tasks)
 * @callback: (scope async): called when every task has ended
 * @user_data: data for @callback
 *
 * Waits for every task of the group without blocking. @callback runs once,
 * on the caller's thread-default main context.
 */
void
ws_task_group_wait_all_async (WsTaskGroup         *self,
                              GCancellable        *cancellable,
                              GAsyncReadyCallback  callback,
                              gpointer             user_data)
{
  g_return_if_fail (WS_IS_TASK_GROUP (self));

  wait_async (self, TRUE, ws_task_group_wait_all_async, cancellable, callback, user_data);
}

/**
 * ws_task_group_wait_all_finish:
 * @self: a #WsTaskGroup
 * @result: the result given to the callback
 * @error: return location for a #GError
 *
 * Finishes [method@Ws.TaskGroup.wait_all_async].
 *
 * Returns: %TRUE if every task completed successfully; otherwise %FALSE
 *   with the error of the first task (in group order) that failed or was
 *   cancelled, or `G_IO_ERROR_CANCELLED` if the wait was cancelled
 */
gboolean
ws_task_group_wait_all_finish (WsTaskGroup   *self,
                               GAsyncResult  *result,
                               GError       **error)
{
  g_autoptr(GPtrArray) tasks = NULL;

  g_return_val_if_fail (WS_IS_TASK_GROUP (self), FALSE);
  g_return_val_if_fail (ws_async_wait_is_valid (result, self, ws_task_group_wait_all_async), FALSE);

  if (ws_async_wait_propagate_error (result, error))
    return FALSE;

  ws_lock_lock (&self->lock);
  tasks = g_ptr_array_copy (self->tasks, (GCopyFunc) (void (*) (void)) g_object_ref, NULL);
  g_ptr_array_set_free_func (tasks, g_object_unref);
  ws_lock_unlock (&self->lock);

  for (guint i = 0; i < tasks->len; i++)
    if (!ws_task_get_outcome (tasks->pdata[i], error))
      return FALSE;
  return TRUE;
}

/**
 * ws_task_group_wait_any_async:
 * @self: a #WsTaskGroup
 * @cancellable: (nullable): stops the wait (not the tasks)
 * @callback: (scope async): called when the first task has ended
 * @user_data: data for @callback
 *
 * Waits for the first task of the group to end, without blocking.
 */
void
ws_task_group_wait_any_async (WsTaskGroup         *self,
                              GCancellable        *cancellable,
                              GAsyncReadyCallback  callback,
                              gpointer             user_data)
{
  g_return_if_fail (WS_IS_TASK_GROUP (self));

  wait_async (self, FALSE, ws_task_group_wait_any_async, cancellable, callback, user_data);
}

/**
 * ws_task_group_wait_any_finish:
 * @self: a #WsTaskGroup
 * @result: the result given to the callback
 * @error: return location for a #GError
 *
 * Finishes [method@Ws.TaskGroup.wait_any_async].
 *
 * Returns: (transfer full) (nullable): the first task that ended, or %NULL
 *   with `G_IO_ERROR_CANCELLED` if the wait was cancelled
 */
WsTask *
ws_task_group_wait_any_finish (WsTaskGroup   *self,
                               GAsyncResult  *result,
                               GError       **error)
{
  WsTask *task;

  g_return_val_if_fail (WS_IS_TASK_GROUP (self), NULL);
  g_return_val_if_fail (ws_async_wait_is_valid (result, self, ws_task_group_wait_any_async), NULL);

  if (ws_async_wait_propagate_error (result, error))
    return NULL;

  ws_lock_lock (&self->lock);
  task = g_object_ref (self->tasks->pdata[self->first]);
  ws_lock_unlock (&self->lock);
  return task;
}
