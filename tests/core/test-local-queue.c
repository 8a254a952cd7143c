/* test-local-queue.c: the per-worker run queue: capacity, overflow into
 * the injection queue, stealing half, the owner's take-back of its newest
 * task
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

/* The take-back takes only the newest task, leaves the rest in FIFO
 * order, and keeps working while the head's 16-bit indices wrap (2^16
 * pops) and its generation counts on. */
static void
test_take_back (void)
{
  WsLocalQueue *q = g_new0 (WsLocalQueue, 1);
  WsLocalQueue *thief = g_new0 (WsLocalQueue, 1);
  WsInjectQueue inject;
  guint n_stolen;

  ws_local_queue_init (q);
  ws_local_queue_init (thief);
  ws_inject_queue_init (&inject);

  g_assert_false (ws_local_queue_take_back (q, ws_test_fake_task (0)));

  for (guint i = 0; i < 3; i++)
    ws_local_queue_push_back_or_overflow (q, ws_test_fake_task (i), &inject);
  /* Not the newest: refused, nothing moves. */
  g_assert_false (ws_local_queue_take_back (q, ws_test_fake_task (0)));
  g_assert_false (ws_local_queue_take_back (q, ws_test_fake_task (1)));
  g_assert_cmpuint (ws_local_queue_len (q), ==, 3);
  /* The newest, then the one below it. */
  g_assert_true (ws_local_queue_take_back (q, ws_test_fake_task (2)));
  g_assert_true (ws_local_queue_take_back (q, ws_test_fake_task (1)));
  g_assert_false (ws_local_queue_take_back (q, ws_test_fake_task (1)));
  g_assert_cmpuint (ws_local_queue_len (q), ==, 1);
  g_assert_true (ws_local_queue_pop (q) == ws_test_fake_task (0));
  g_assert_null (ws_local_queue_pop (q));

  /* Through 2^24 + 1000 pushes (the indices wrap 128 times) with a
   * take-back of every other one and a steal now and then, the queue
   * keeps its length and order. */
  for (guint i = 0; i < (1u << 24) + 1000; i++)
    {
      WsRawTask *t = ws_test_fake_task (i % 1000);

      ws_local_queue_push_back_or_overflow (q, t, &inject);
      if (i % 2 == 1)
        g_assert_true (ws_local_queue_take_back (q, t));
      else if (ws_local_queue_len (q) > CAP / 2)
        {
          g_assert_true (ws_local_queue_pop (q) != NULL);
          if (i % 1024 == 0)
            {
              g_assert_nonnull (ws_local_queue_steal_into (q, thief, &n_stolen));
              while (ws_local_queue_pop (thief) != NULL)
                ;
            }
        }
      g_assert_cmpuint (ws_local_queue_len (q), <=, CAP / 2 + 1);
    }
  g_assert_cmpuint (ws_inject_queue_len (&inject), ==, 0);
  while (ws_local_queue_pop (q) != NULL)
    ;
  g_assert_cmpuint (ws_local_queue_len (q), ==, 0);
  g_assert_cmpuint (ws_local_queue_remaining (q), ==, CAP);

  ws_inject_queue_clear (&inject);
  g_free (q);
  g_free (thief);
}

/* The owner pushes, takes back its newest task and pops while two
 * thieves steal: every task comes out exactly once
 * (models/local-queue.pml is the exhaustive form). */
#ifdef WS_ENABLE_CHAOS
/* Every queue operation passes chaos points that yield or sleep. */
# define TAKE_BACK_N 20000
#else
# define TAKE_BACK_N 1000000
#endif

typedef struct
{
  WsLocalQueue    *src;
  _Atomic guint8  *seen;
  _Atomic gboolean done;
  _Atomic guint64  stolen;
} TakeBackData;

static void
take_back_record (TakeBackData *d,
                  WsRawTask    *t)
{
  guint i = ws_test_fake_task_index (t);

  g_assert_cmpuint (i, <, TAKE_BACK_N);
  if (atomic_fetch_add (&d->seen[i], 1) != 0)
    g_error ("task %u taken twice", i);
}

static gpointer
take_back_thief (gpointer data)
{
  TakeBackData *d = data;
  WsLocalQueue *mine = g_new0 (WsLocalQueue, 1);

  ws_local_queue_init (mine);
  for (;;)
    {
      gboolean done = atomic_load (&d->done);
      guint n;
      WsRawTask *t = ws_local_queue_steal_into (d->src, mine, &n);

      if (t != NULL)
        {
          atomic_fetch_add (&d->stolen, n);
          take_back_record (d, t);
          while ((t = ws_local_queue_pop (mine)) != NULL)
            take_back_record (d, t);
        }
      else if (done)
        break;
    }
  g_free (mine);
  return NULL;
}

static void
test_stress_take_back (void)
{
  TakeBackData d = { 0, };
  WsInjectQueue inject;
  GThread *thieves[2];
  guint64 taken_back = 0, refused = 0, popped = 0;
  WsRawTask *t;

  d.src = g_new0 (WsLocalQueue, 1);
  d.seen = g_new0 (_Atomic guint8, TAKE_BACK_N);
  ws_local_queue_init (d.src);
  ws_inject_queue_init (&inject);
  for (guint i = 0; i < G_N_ELEMENTS (thieves); i++)
    thieves[i] = g_thread_new ("thief", take_back_thief, &d);

  for (guint i = 0; i < TAKE_BACK_N;)
    {
      /* A burst of 1-4 pushes, then take-backs of each, newest first, as
       * nested parents that await their newest child do; what a thief
       * claimed meanwhile is refused, and what is left waits for a pop. */
      guint burst = MIN (i % 4 + 1, TAKE_BACK_N - i);

      while (ws_local_queue_remaining (d.src) < burst)
        if ((t = ws_local_queue_pop (d.src)) != NULL)
          {
            take_back_record (&d, t);
            popped++;
          }
      for (guint k = 0; k < burst; k++)
        g_assert_false (ws_local_queue_push_back_or_overflow (d.src, ws_test_fake_task (i + k),
                                                              &inject));
      for (guint k = burst; k-- > 0;)
        {
          if (i % 5 == 0)
            break;
          t = ws_test_fake_task (i + k);
          if (ws_local_queue_take_back (d.src, t))
            {
              take_back_record (&d, t);
              taken_back++;
            }
          else
            refused++;
        }
      if (i % 7 == 0 && (t = ws_local_queue_pop (d.src)) != NULL)
        {
          take_back_record (&d, t);
          popped++;
        }
      i += burst;
    }
  while ((t = ws_local_queue_pop (d.src)) != NULL)
    {
      take_back_record (&d, t);
      popped++;
    }
  atomic_store (&d.done, TRUE);
  for (guint i = 0; i < G_N_ELEMENTS (thieves); i++)
    g_thread_join (thieves[i]);

  for (guint i = 0; i < TAKE_BACK_N; i++)
    if (atomic_load (&d.seen[i]) != 1)
      g_error ("task %u taken %u times", i, (guint) atomic_load (&d.seen[i]));
  g_assert_cmpuint (popped + taken_back + atomic_load (&d.stolen), ==, TAKE_BACK_N);
  g_assert_cmpuint (ws_inject_queue_len (&inject), ==, 0);
  g_test_message ("taken back %" G_GUINT64_FORMAT " (refused %" G_GUINT64_FORMAT
                  "), popped %" G_GUINT64_FORMAT ", stolen %" G_GUINT64_FORMAT,
                  taken_back, refused, popped, (guint64) atomic_load (&d.stolen));

  ws_inject_queue_clear (&inject);
  g_free ((gpointer) d.seen);
  g_free (d.src);
}

WS_TEST_MAIN ({ "/local-queue/capacity-and-overflow", test_capacity_and_overflow },
              { "/local-queue/steal-half", test_steal_half },
              { "/local-queue/stress-concurrent-steal", test_stress_concurrent_steal },
              { "/local-queue/take-back", test_take_back },
              { "/local-queue/stress-take-back", test_stress_take_back })
