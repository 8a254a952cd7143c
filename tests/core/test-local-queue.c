/* test-local-queue.c: the per-worker run queue: capacity, overflow into
 * the injection queue, stealing half
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "../ws-test-fixture.h"
#include "ws-local-queue-private.h"
#include "ws-inject-queue-private.h"

#define CAP WS_LOCAL_QUEUE_CAPACITY

static void
test_capacity_and_overflow (void)
{
  WsLocalQueue *q = g_new0 (WsLocalQueue, 1);
  WsInjectQueue inject;
  WsRawTask **tasks = g_new0 (WsRawTask *, CAP + 1);
  guint overflows = 0;
  gsize n;
  WsRawTask *batch[CAP];

  ws_local_queue_init (q);
  ws_inject_queue_init (&inject);

  for (guint i = 0; i < CAP; i++)
    {
      tasks[i] = ws_test_fake_task (i);
      overflows += ws_local_queue_push_back_or_overflow (q, tasks[i], &inject);
    }
  g_assert_cmpuint (overflows, ==, 0);
  g_assert_cmpuint (ws_local_queue_len (q), ==, CAP);
  g_assert_cmpuint (ws_inject_queue_len (&inject), ==, 0);

  /* The next push overflows once: half the queue plus the new task move to
   * the injection queue in one batch, oldest first. */
  tasks[CAP] = ws_test_fake_task (CAP);
  overflows += ws_local_queue_push_back_or_overflow (q, tasks[CAP], &inject);
  g_assert_cmpuint (overflows, ==, 1);
  g_assert_cmpuint (ws_local_queue_len (q), ==, CAP / 2);
  g_assert_cmpuint (ws_inject_queue_len (&inject), ==, CAP / 2 + 1);

  n = ws_inject_queue_pop_batch (&inject, batch, G_N_ELEMENTS (batch));
  g_assert_cmpuint (n, ==, CAP / 2 + 1);
  for (guint i = 0; i < n; i++)
    g_assert_true (batch[i] == (i < CAP / 2 ? tasks[i] : tasks[CAP]));
  g_assert_cmpuint (ws_inject_queue_len (&inject), ==, 0);

  /* The rest pops in FIFO order. */
  for (guint i = CAP / 2; i < CAP; i++)
    g_assert_true (ws_local_queue_pop (q) == tasks[i]);
  g_assert_null (ws_local_queue_pop (q));

  ws_inject_queue_clear (&inject);
  g_free (tasks);
  g_free (q);
}

static void
test_steal_half (void)
{
  WsLocalQueue *src = g_new0 (WsLocalQueue, 1);
  WsLocalQueue *dst = g_new0 (WsLocalQueue, 1);
  WsInjectQueue inject;
  guint n_tasks = MIN (10, CAP);
  guint expect = n_tasks - n_tasks / 2;
  guint n_stolen;
  WsRawTask *t;

  ws_local_queue_init (src);
  ws_local_queue_init (dst);
  ws_inject_queue_init (&inject);

  for (guint i = 0; i < n_tasks; i++)
    ws_local_queue_push_back_or_overflow (src, ws_test_fake_task (i), &inject);

  t = ws_local_queue_steal_into (src, dst, &n_stolen);
  g_assert_nonnull (t);
  g_assert_cmpuint (n_stolen, ==, expect);
  /* One is returned to run now; the others wait in the thief's queue. */
  g_assert_cmpuint (ws_local_queue_len (dst), ==, expect - 1);
  g_assert_cmpuint (ws_local_queue_len (src), ==, n_tasks - expect);

  while (ws_local_queue_pop (src) != NULL)
    ;
  while (ws_local_queue_pop (dst) != NULL)
    ;

  /* Nothing to steal from an empty queue. */
  g_assert_null (ws_local_queue_steal_into (src, dst, &n_stolen));
  g_assert_cmpuint (n_stolen, ==, 0);

  ws_inject_queue_clear (&inject);
  g_free (src);
  g_free (dst);
}

/* 1,000,000 pushes and pops by the owner against a concurrent thief:
 * every task comes out exactly once. Tasks are fake pointers; the owner
 * never pushes into a full queue, so nothing overflows here. */
#define STRESS_N 1000000

typedef struct
{
  WsLocalQueue   *src;
  WsLocalQueue   *thief_queue;
  _Atomic guint8 *seen;
  _Atomic gboolean done;
  guint64         stolen;
  _Atomic gboolean has_stolen;    /* the thief took something */
} StressData;

static inline void
record (StressData *d,
        WsRawTask  *t)
{
  guint i = ws_test_fake_task_index (t);

  g_assert_cmpuint (i, <, STRESS_N);
  atomic_fetch_add (&d->seen[i], 1);
}

static gpointer
stealer_thread (gpointer data)
{
  StressData *d = data;

  for (;;)
    {
      gboolean done = atomic_load (&d->done);
      guint n;
      WsRawTask *t = ws_local_queue_steal_into (d->src, d->thief_queue, &n);

      if (t != NULL)
        {
          d->stolen += n;
          atomic_store (&d->has_stolen, TRUE);
          record (d, t);
          while ((t = ws_local_queue_pop (d->thief_queue)) != NULL)
            record (d, t);
        }
      else if (done)
        break;
    }
  return NULL;
}

static void
test_stress_concurrent_steal (void)
{
  StressData d = { 0, };
  WsInjectQueue inject;
  GThread *thread;
  WsRawTask *t;
  guint64 popped = 0;

  d.src = g_new0 (WsLocalQueue, 1);
  d.thief_queue = g_new0 (WsLocalQueue, 1);
  d.seen = g_new0 (_Atomic guint8, STRESS_N);
  ws_local_queue_init (d.src);
  ws_local_queue_init (d.thief_queue);
  ws_inject_queue_init (&inject);

  thread = g_thread_new ("stealer", stealer_thread, &d);

  for (guint i = 0; i < STRESS_N; i++)
    {
      while (ws_local_queue_remaining (d.src) == 0)
        if ((t = ws_local_queue_pop (d.src)) != NULL)
          {
            record (&d, t);
            popped++;
          }
      g_assert_false (ws_local_queue_push_back_or_overflow (d.src, ws_test_fake_task (i), &inject));
      /* Once, with tasks in the queue and the owner not popping: the
       * thief takes part however the threads are scheduled. */
      if (i == 128)
        ws_test_wait_until (atomic_load (&d.has_stolen));
      if (i % 3 == 0 && (t = ws_local_queue_pop (d.src)) != NULL)
        {
          record (&d, t);
          popped++;
        }
    }
  while ((t = ws_local_queue_pop (d.src)) != NULL)
    {
      record (&d, t);
      popped++;
    }

  atomic_store (&d.done, TRUE);
  g_thread_join (thread);

  g_assert_cmpuint (ws_inject_queue_len (&inject), ==, 0);
  for (guint i = 0; i < STRESS_N; i++)
    if (atomic_load (&d.seen[i]) != 1)
      g_error ("task %u seen %u times", i, (guint) atomic_load (&d.seen[i]));
  g_assert_cmpuint (popped + d.stolen, ==, STRESS_N);
  /* The thief did take part. */
  g_assert_cmpuint (d.stolen, >, 0);
  g_test_message ("owner popped %" G_GUINT64_FORMAT ", thief stole %" G_GUINT64_FORMAT,
                  popped, d.stolen);

  ws_inject_queue_clear (&inject);
  g_free ((gpointer) d.seen);
  g_free (d.src);
  g_free (d.thief_queue);
}

WS_TEST_MAIN ({ "/local-queue/capacity-and-overflow", test_capacity_and_overflow },
              { "/local-queue/steal-half", test_steal_half },
              { "/local-queue/stress-concurrent-steal", test_stress_concurrent_steal })
