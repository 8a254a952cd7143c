/* test-local-queue.c: the per-worker run queue and the injection queue
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "ws-test-util.h"
#include "ws-local-queue-private.h"
#include "ws-inject-queue-private.h"

#define CAP WS_LOCAL_QUEUE_CAPACITY

static WsRawTask *
new_fake_task (void)
{
  return g_new0 (WsRawTask, 1);
}

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
      tasks[i] = new_fake_task ();
      overflows += ws_local_queue_push_back_or_overflow (q, tasks[i], &inject);
    }
  g_assert_cmpuint (overflows, ==, 0);
  g_assert_cmpuint (ws_local_queue_len (q), ==, CAP);
  g_assert_cmpuint (ws_inject_queue_len (&inject), ==, 0);

  /* The next push overflows once: half the queue plus the new task move to
   * the injection queue in one batch, oldest first. */
  tasks[CAP] = new_fake_task ();
  overflows += ws_local_queue_push_back_or_overflow (q, tasks[CAP], &inject);
  g_assert_cmpuint (overflows, ==, 1);
  g_assert_cmpuint (ws_local_queue_len (q), ==, CAP / 2);
  g_assert_cmpuint (ws_inject_queue_len (&inject), ==, CAP / 2 + 1);

  n = ws_inject_queue_pop_batch (&inject, batch, G_N_ELEMENTS (batch));
  g_assert_cmpuint (n, ==, CAP / 2 + 1);
  for (guint i = 0; i < n; i++)
    {
      g_assert_true (batch[i] == (i < CAP / 2 ? tasks[i] : tasks[CAP]));
      g_free (batch[i]);
    }
  g_assert_cmpuint (ws_inject_queue_len (&inject), ==, 0);

  /* The rest pops in FIFO order. */
  for (guint i = CAP / 2; i < CAP; i++)
    {
      WsRawTask *t = ws_local_queue_pop (q);

      g_assert_true (t == tasks[i]);
      g_free (t);
    }
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
    ws_local_queue_push_back_or_overflow (src, new_fake_task (), &inject);

  t = ws_local_queue_steal_into (src, dst, &n_stolen);
  g_assert_nonnull (t);
  g_assert_cmpuint (n_stolen, ==, expect);
  /* One is returned to run now; the others wait in the thief's queue. */
  g_assert_cmpuint (ws_local_queue_len (dst), ==, expect - 1);
  g_assert_cmpuint (ws_local_queue_len (src), ==, n_tasks - expect);
  g_free (t);

  while ((t = ws_local_queue_pop (src)) != NULL)
    g_free (t);
  while ((t = ws_local_queue_pop (dst)) != NULL)
    g_free (t);

  /* Nothing to steal from an empty queue. */
  g_assert_null (ws_local_queue_steal_into (src, dst, &n_stolen));
  g_assert_cmpuint (n_stolen, ==, 0);

  ws_inject_queue_clear (&inject);
  g_free (src);
  g_free (dst);
}

/* 1,000,000 pushes and pops by the owner against a concurrent thief:
 * every task comes out exactly once. Tasks are fake pointers (index + 1,
 * shifted); the owner never pushes into a full queue, so the overflow path,
 * which would link them, is not taken here. */
#define STRESS_N 1000000

typedef struct
{
  WsLocalQueue   *src;
  WsLocalQueue   *thief_queue;
  _Atomic guint8 *seen;
  _Atomic gboolean done;
  guint64         stolen;
} StressData;

static inline WsRawTask *
fake (guint i)
{
  return (WsRawTask *) GSIZE_TO_POINTER (((gsize) i + 1) << 4);
}

static inline void
record (StressData *d,
        WsRawTask  *t)
{
  gsize i = (GPOINTER_TO_SIZE (t) >> 4) - 1;

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
      g_assert_false (ws_local_queue_push_back_or_overflow (d.src, fake (i), &inject));
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

/* The injection queue keeps FIFO order across its blocks, whatever the
 * sizes of the pushes and pops, and reuses drained blocks. */
static void
test_inject_fifo_across_blocks (void)
{
  enum { N = 5 * WS_INJECT_BLOCK_SLOTS + 3 };
  static const gsize pops[] = { 1, 7, WS_INJECT_BLOCK_SLOTS, 2 * WS_INJECT_BLOCK_SLOTS + 5, 64 };
  WsInjectQueue inject;
  WsRawTask *tasks[N];
  WsRawTask *out[N];
  guint pushed = 0;
  guint popped = 0;

  ws_inject_queue_init (&inject);
  for (guint round = 0; round < 3; round++)
    {
      /* Pushes of 1, then batches of 50 and 200, in turn. */
      pushed = popped = 0;
      for (guint i = 0; i < N; i++)
        tasks[i] = GUINT_TO_POINTER ((round + 1) * 100000 + i);
      while (pushed < N)
        {
          gsize k = MIN ((gsize) (pushed % 3 == 0 ? 1 : pushed % 3 == 1 ? 50 : 200),
                         (gsize) (N - pushed));

          if (k == 1)
            ws_inject_queue_push (&inject, tasks[pushed]);
          else
            ws_inject_queue_push_batch (&inject, tasks + pushed, k);
          pushed += k;
          g_assert_cmpuint (ws_inject_queue_len (&inject), ==, pushed - popped);

          /* Pop some while pushing, so head and tail blocks differ. */
          if (pushed % 2 == 0)
            popped += ws_inject_queue_pop_batch (&inject, out + popped, 3);
        }
      for (guint p = 0; popped < N; p++)
        {
          gsize want = pops[p % G_N_ELEMENTS (pops)];
          gsize got = ws_inject_queue_pop_batch (&inject, out + popped, MIN (want, (gsize) (N - popped)));

          g_assert_cmpuint (got, ==, MIN (want, (gsize) (N - popped)));
          popped += got;
        }
      for (guint i = 0; i < N; i++)
        g_assert_true (out[i] == tasks[i]);
      g_assert_cmpuint (ws_inject_queue_len (&inject), ==, 0);
      g_assert_null (ws_inject_queue_pop (&inject));
      g_assert_true (inject.head_block == inject.tail_block);
      g_assert_cmpuint (inject.head_index, ==, 0);
    }
  ws_inject_queue_clear (&inject);
}

/* Shutdown's last sweep pops until empty and seals in the same critical
 * section; a later push is refused and leaves the task to the caller. */
static void
test_inject_sealed (void)
{
  WsInjectQueue inject;
  WsRawTask *a = new_fake_task ();
  WsRawTask *b = new_fake_task ();
  WsRawTask *t;

  ws_inject_queue_init (&inject);
  g_assert_true (ws_inject_queue_push (&inject, a));
  g_assert_true (ws_inject_queue_push (&inject, b));
  g_assert_false (ws_inject_queue_is_sealed (&inject));
  g_assert_true (ws_inject_queue_pop_or_seal (&inject) == a);
  g_assert_false (ws_inject_queue_is_sealed (&inject));
  g_assert_true (ws_inject_queue_pop_or_seal (&inject) == b);
  g_assert_null (ws_inject_queue_pop_or_seal (&inject));
  g_assert_true (ws_inject_queue_is_sealed (&inject));
  g_assert_false (ws_inject_queue_push (&inject, a));
  g_assert_cmpuint (ws_inject_queue_len (&inject), ==, 0);
  g_assert_cmpuint (ws_inject_queue_pop_batch (&inject, &t, 1), ==, 0);
  ws_inject_queue_clear (&inject);
  g_free (a);
  g_free (b);
}

int
main (int   argc,
      char *argv[])
{
  ws_test_init (&argc, &argv);

  ws_test_add_func ("/local-queue/capacity-and-overflow", test_capacity_and_overflow);
  ws_test_add_func ("/local-queue/steal-half", test_steal_half);
  ws_test_add_func ("/local-queue/stress-concurrent-steal", test_stress_concurrent_steal);
  ws_test_add_func ("/inject-queue/fifo-across-blocks", test_inject_fifo_across_blocks);
  ws_test_add_func ("/inject-queue/sealed", test_inject_sealed);

  return g_test_run ();
}
