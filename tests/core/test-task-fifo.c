/* test-task-fifo.c: the FIFO of tasks linked through queue_next
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * What ws-task-fifo-private.h says must hold: first in, first out; head
 * is NULL exactly when tail is, and len is 0 then; tail's queue_next is
 * NULL; a popped task has its link cleared; take_all moves everything and
 * leaves the FIFO empty. The tasks are zeroed structs that only the links
 * are read of: nothing here polls them.
 */

#include "config.h"

#include "../ws-test-fixture.h"
#include "ws-task-fifo-private.h"

#define N_TASKS 5

/* The FIFO's own invariants, whatever it holds. */
static void
assert_consistent (const WsTaskFifo *fifo)
{
  gsize n = 0;

  g_assert_true ((fifo->head == NULL) == (fifo->tail == NULL));
  g_assert_true (ws_task_fifo_is_empty (fifo) == (fifo->head == NULL));
  for (WsRawTask *t = fifo->head; t != NULL; t = t->queue_next)
    {
      n++;
      if (t->queue_next == NULL)
        g_assert_true (t == fifo->tail);
    }
  g_assert_cmpuint (n, ==, ws_task_fifo_len (fifo));
}

static void
test_empty (void)
{
  WsTaskFifo fifo = WS_TASK_FIFO_INIT;
  WsTaskFifo taken;

  assert_consistent (&fifo);
  g_assert_true (ws_task_fifo_is_empty (&fifo));
  g_assert_cmpuint (ws_task_fifo_len (&fifo), ==, 0);
  g_assert_null (ws_task_fifo_pop (&fifo));

  taken = ws_task_fifo_take_all (&fifo);
  assert_consistent (&taken);
  g_assert_true (ws_task_fifo_is_empty (&taken));
  assert_consistent (&fifo);
}

/* Pushes come out in order, each with its link cleared; a stale link a
 * pushed task carried is overwritten. */
static void
test_order (void)
{
  WsRawTask *tasks = g_new0 (WsRawTask, N_TASKS);
  WsTaskFifo fifo;

  ws_task_fifo_init (&fifo);
  for (guint i = 0; i < N_TASKS; i++)
    {
      tasks[i].queue_next = &tasks[(i + 1) % N_TASKS];   /* stale */
      ws_task_fifo_push (&fifo, &tasks[i]);
      g_assert_true (fifo.tail == &tasks[i]);
      g_assert_cmpuint (ws_task_fifo_len (&fifo), ==, i + 1);
      assert_consistent (&fifo);
    }
  for (guint i = 0; i < N_TASKS; i++)
    {
      WsRawTask *t = ws_task_fifo_pop (&fifo);

      g_assert_true (t == &tasks[i]);
      g_assert_null (tasks[i].queue_next);
      g_assert_cmpuint (ws_task_fifo_len (&fifo), ==, N_TASKS - 1 - i);
      assert_consistent (&fifo);
    }
  g_assert_null (ws_task_fifo_pop (&fifo));
  g_free (tasks);
}

/* Pushes and pops interleaved: the FIFO empties and refills through the
 * head == tail == NULL state without losing order. */
static void
test_interleaved (void)
{
  WsRawTask *tasks = g_new0 (WsRawTask, N_TASKS);
  WsTaskFifo fifo = WS_TASK_FIFO_INIT;

  ws_task_fifo_push (&fifo, &tasks[0]);
  ws_task_fifo_push (&fifo, &tasks[1]);
  g_assert_true (ws_task_fifo_pop (&fifo) == &tasks[0]);
  ws_task_fifo_push (&fifo, &tasks[2]);
  g_assert_true (ws_task_fifo_pop (&fifo) == &tasks[1]);
  g_assert_true (ws_task_fifo_pop (&fifo) == &tasks[2]);
  assert_consistent (&fifo);
  g_assert_true (ws_task_fifo_is_empty (&fifo));

  /* Refilled after it was empty: the tail is set again. */
  ws_task_fifo_push (&fifo, &tasks[3]);
  ws_task_fifo_push (&fifo, &tasks[4]);
  assert_consistent (&fifo);
  g_assert_true (ws_task_fifo_pop (&fifo) == &tasks[3]);
  g_assert_true (ws_task_fifo_pop (&fifo) == &tasks[4]);
  assert_consistent (&fifo);
  g_free (tasks);
}

/* take_all moves every task, in order, and leaves the FIFO empty and
 * usable. */
static void
test_take_all (void)
{
  WsRawTask *tasks = g_new0 (WsRawTask, N_TASKS);
  WsTaskFifo fifo = WS_TASK_FIFO_INIT;
  WsTaskFifo taken;

  for (guint i = 0; i < 3; i++)
    ws_task_fifo_push (&fifo, &tasks[i]);
  taken = ws_task_fifo_take_all (&fifo);
  assert_consistent (&fifo);
  assert_consistent (&taken);
  g_assert_true (ws_task_fifo_is_empty (&fifo));
  g_assert_cmpuint (ws_task_fifo_len (&taken), ==, 3);

  ws_task_fifo_push (&fifo, &tasks[3]);
  for (guint i = 0; i < 3; i++)
    g_assert_true (ws_task_fifo_pop (&taken) == &tasks[i]);
  g_assert_true (ws_task_fifo_pop (&fifo) == &tasks[3]);
  g_assert_true (ws_task_fifo_is_empty (&taken));
  g_free (tasks);
}

WS_TEST_MAIN ({ "/task-fifo/empty", test_empty },
              { "/task-fifo/order", test_order },
              { "/task-fifo/interleaved", test_interleaved },
              { "/task-fifo/take-all", test_take_all })
