/* test-inject-queue.c: the injection queue, the runtime's global FIFO
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Order (FIFO, across its blocks, for single and batch pushes and pops),
 * the length, the seal of shutdown's last sweep (pop until empty and seal
 * with both locks held; later pushes are refused), the count of remote
 * pushes, and several producer threads against a consumer, against two
 * consumers at once and against the seal. Tasks are
 * fake pointers: the queue never looks inside one.
 */

#include "config.h"

#include "../ws-test-fixture.h"
#include "ws-inject-queue-private.h"

static void
test_push_pop_order (void)
{
  WsInjectQueue q;

  ws_inject_queue_init (&q);
  g_assert_true (ws_inject_queue_is_empty (&q));
  g_assert_null (ws_inject_queue_pop (&q));

  for (guint i = 0; i < 10; i++)
    {
      g_assert_true (ws_inject_queue_push (&q, ws_test_fake_task (i)));
      g_assert_cmpuint (ws_inject_queue_len (&q), ==, i + 1);
      g_assert_false (ws_inject_queue_is_empty (&q));
    }
  for (guint i = 0; i < 10; i++)
    {
      g_assert_true (ws_inject_queue_pop (&q) == ws_test_fake_task (i));
      g_assert_cmpuint (ws_inject_queue_len (&q), ==, 10 - i - 1);
    }
  g_assert_true (ws_inject_queue_is_empty (&q));
  g_assert_null (ws_inject_queue_pop (&q));

  /* Interleaved: still the oldest first. */
  ws_inject_queue_push (&q, ws_test_fake_task (20));
  ws_inject_queue_push (&q, ws_test_fake_task (21));
  g_assert_true (ws_inject_queue_pop (&q) == ws_test_fake_task (20));
  ws_inject_queue_push (&q, ws_test_fake_task (22));
  g_assert_true (ws_inject_queue_pop (&q) == ws_test_fake_task (21));
  g_assert_true (ws_inject_queue_pop (&q) == ws_test_fake_task (22));
  g_assert_true (ws_inject_queue_is_empty (&q));

  ws_inject_queue_clear (&q);
}

/* pop_batch takes at most @max, the oldest first; push_batch keeps the
 * order of its array; a batch longer than a block comes out whole. */
static void
test_batches (void)
{
  enum { BIG = 3 * WS_INJECT_BLOCK_SLOTS + 1 };
  WsInjectQueue q;
  WsRawTask *in[BIG];
  WsRawTask *out[BIG + 1];

  for (guint i = 0; i < BIG; i++)
    in[i] = ws_test_fake_task (i);
  ws_inject_queue_init (&q);

  g_assert_true (ws_inject_queue_push_batch (&q, in, 5));
  g_assert_true (ws_inject_queue_push_batch (&q, in, 0));
  g_assert_cmpuint (ws_inject_queue_len (&q), ==, 5);
  g_assert_cmpuint (ws_inject_queue_pop_batch (&q, out, 0), ==, 0);
  g_assert_cmpuint (ws_inject_queue_len (&q), ==, 5);

  g_assert_cmpuint (ws_inject_queue_pop_batch (&q, out, 3), ==, 3);
  for (guint i = 0; i < 3; i++)
    g_assert_true (out[i] == in[i]);
  g_assert_cmpuint (ws_inject_queue_len (&q), ==, 2);

  g_assert_true (ws_inject_queue_push (&q, in[5]));
  /* Asking for more than there is takes what there is. */
  g_assert_cmpuint (ws_inject_queue_pop_batch (&q, out, 10), ==, 3);
  for (guint i = 0; i < 3; i++)
    g_assert_true (out[i] == in[3 + i]);
  g_assert_true (ws_inject_queue_is_empty (&q));
  g_assert_cmpuint (ws_inject_queue_pop_batch (&q, out, 10), ==, 0);

  g_assert_true (ws_inject_queue_push_batch (&q, in, BIG));
  g_assert_cmpuint (ws_inject_queue_len (&q), ==, BIG);
  g_assert_cmpuint (ws_inject_queue_pop_batch (&q, out, BIG + 1), ==, BIG);
  for (guint i = 0; i < BIG; i++)
    g_assert_true (out[i] == in[i]);
  g_assert_true (ws_inject_queue_is_empty (&q));
  /* Drained: back to one block. */
  g_assert_true (q.head_block == q.tail_block);

  ws_inject_queue_clear (&q);
}

/* The injection queue keeps FIFO order across its blocks, whatever the
 * sizes of the pushes and pops, and reuses drained blocks. */
static void
test_fifo_across_blocks (void)
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
      /* Empty: the poppers stand where the pushers do, and a block they
       * left is kept for the pushers' next one. */
      g_assert_true (inject.head_block == inject.tail_block);
      g_assert_cmpuint (inject.head_index, ==, inject.tail_index);
      g_assert_nonnull (atomic_load (&inject.spare));
    }
  ws_inject_queue_clear (&inject);
}

/* Shutdown's last sweep pops until empty and seals in the same critical
 * section; a later push is refused and leaves the task to the caller. */
static void
test_sealed (void)
{
  WsInjectQueue inject;
  WsRawTask *a = ws_test_fake_task (0);
  WsRawTask *b = ws_test_fake_task (1);
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
}

/* pop_or_seal does not seal a queue that still has tasks; once sealed, a
 * batch push is refused as a whole and the queue stays empty. */
static void
test_seal_refuses_batch (void)
{
  WsInjectQueue q;
  WsRawTask *batch[3] = { ws_test_fake_task (1), ws_test_fake_task (2), ws_test_fake_task (3) };
  WsRawTask *t;

  ws_inject_queue_init (&q);
  g_assert_true (ws_inject_queue_push_batch (&q, batch, 2));
  g_assert_true (ws_inject_queue_pop_or_seal (&q) == batch[0]);
  g_assert_false (ws_inject_queue_is_sealed (&q));
  /* Not sealed yet: pushes still land, behind what is there. */
  g_assert_true (ws_inject_queue_push (&q, batch[2]));
  g_assert_true (ws_inject_queue_pop_or_seal (&q) == batch[1]);
  g_assert_true (ws_inject_queue_pop_or_seal (&q) == batch[2]);
  g_assert_false (ws_inject_queue_is_sealed (&q));

  g_assert_null (ws_inject_queue_pop_or_seal (&q));
  g_assert_true (ws_inject_queue_is_sealed (&q));
  g_assert_false (ws_inject_queue_push_batch (&q, batch, 3));
  g_assert_cmpuint (ws_inject_queue_len (&q), ==, 0);
  g_assert_true (ws_inject_queue_is_empty (&q));
  g_assert_null (ws_inject_queue_pop (&q));
  g_assert_cmpuint (ws_inject_queue_pop_batch (&q, &t, 1), ==, 0);
  /* Sealing again is harmless. */
  g_assert_null (ws_inject_queue_pop_or_seal (&q));

  ws_inject_queue_clear (&q);
}

/* Producers on their own threads, single pushes and batches of up to 8,
 * against one consumer taking batches: every task comes out once, and
 * each producer's tasks in the order it pushed them. */
#define N_PRODUCERS  4
#define PER_PRODUCER 50000

typedef struct
{
  WsInjectQueue *q;
  guint          id;
  guint          limit;       /* pushes to try */
  guint          pause;       /* spins between pushes, up to */
  _Atomic guint  accepted;    /* pushes that landed */
  gboolean       refused;     /* the push that came back FALSE, if any */
  WsTestGate    *gate;        /* waited at once `gate_at` pushes landed */
  guint          gate_at;
} Producer;

/* Pushes tasks id * PER_PRODUCER + 0, 1, 2... until @limit or a refusal. */
static gpointer
producer_thread (gpointer data)
{
  Producer *p = data;
  WsRawTask *batch[8];
  guint next = 0;

  while (next < p->limit)
    {
      guint k = MIN (next % 3 == 0 ? 1 + next % 8 : 1, p->limit - next);
      gboolean ok;

      if (p->gate != NULL && next >= p->gate_at)
        {
          ws_test_gate_wait (p->gate);
          p->gate = NULL;
        }
      for (guint i = 0; i < k; i++)
        batch[i] = ws_test_fake_task (p->id * PER_PRODUCER + next + i);
      ok = k == 1 ? ws_inject_queue_push (p->q, batch[0])
                  : ws_inject_queue_push_batch (p->q, batch, k);
      if (!ok)
        {
          p->refused = TRUE;
          break;
        }
      next += k;
      atomic_store (&p->accepted, next);
      if (p->pause > 0)
        for (volatile guint spin = g_random_int_range (0, p->pause); spin > 0; spin--)
          ;
    }
  return NULL;
}

/* The queue, its producers, and what the consumer has seen of each. */
typedef struct
{
  WsInjectQueue  q;
  Producer       producers[N_PRODUCERS];
  GThread       *threads[N_PRODUCERS];
  guint          next_of[N_PRODUCERS];   /* the index expected next from each */
} Run;

static void
run_start (Run        *r,
           guint       limit,
           guint       pause,
           WsTestGate *gate,
           guint       gate_at)
{
  ws_inject_queue_init (&r->q);
  for (guint i = 0; i < N_PRODUCERS; i++)
    {
      r->producers[i] = (Producer) { .q = &r->q, .id = i, .limit = limit, .pause = pause,
                                     .gate = gate, .gate_at = gate_at };
      r->next_of[i] = 0;
      r->threads[i] = g_thread_new ("producer", producer_thread, &r->producers[i]);
    }
}

/* A popped task: the next of its producer, in the order it pushed. */
static void
run_consume (Run       *r,
             WsRawTask *task)
{
  guint index = ws_test_fake_task_index (task);
  guint producer = index / PER_PRODUCER;

  g_assert_cmpuint (producer, <, N_PRODUCERS);
  g_assert_cmpuint (index % PER_PRODUCER, ==, r->next_of[producer]);
  r->next_of[producer]++;
}

/* Joins the producers: what each got accepted was consumed, all of it.
 * Returns how many tasks were accepted; the queue is left empty, and
 * cleared. */
static guint
run_finish (Run *r)
{
  guint accepted = 0;

  for (guint i = 0; i < N_PRODUCERS; i++)
    {
      g_thread_join (r->threads[i]);
      g_assert_cmpuint (r->next_of[i], ==, atomic_load (&r->producers[i].accepted));
      accepted += r->next_of[i];
    }
  g_assert_true (ws_inject_queue_is_empty (&r->q));
  g_assert_null (ws_inject_queue_pop (&r->q));
  ws_inject_queue_clear (&r->q);
  return accepted;
}

static void
test_concurrent_producers (void)
{
  Run r;
  guint received = 0;
  guint max_batch = 0;

  run_start (&r, PER_PRODUCER, 0, NULL, 0);
  while (received < N_PRODUCERS * PER_PRODUCER)
    {
      WsRawTask *out[32];
      gsize n = ws_inject_queue_pop_batch (&r.q, out, G_N_ELEMENTS (out));

      for (gsize i = 0; i < n; i++)
        run_consume (&r, out[i]);
      received += n;
      max_batch = MAX (max_batch, n);
    }
  g_assert_cmpuint (run_finish (&r), ==, N_PRODUCERS * PER_PRODUCER);
  for (guint i = 0; i < N_PRODUCERS; i++)
    g_assert_false (r.producers[i].refused);
  g_test_message ("largest batch popped: %u", max_batch);
}

/* Two consumers on their own threads against the producers: the poppers'
 * lock and the pushers' are different (ws-inject-queue.c), so pops race
 * pushes, block links and block reuse. Every task comes out once, each
 * consumer sees each producer's tasks in the order they were pushed, and
 * the length never reads below zero (it would wrap to a huge count). Also
 * pushes from outside the pool count in n_remote, overflow pushes not. */
#define N_CONSUMERS 2

typedef struct
{
  WsInjectQueue *q;
  _Atomic guint *received;      /* by all consumers */
  guint          total;
  guint          next_of[N_PRODUCERS];
  _Atomic guint *seen;          /* shared: one flag per task, set once */
  guint          n_popped;
  gboolean       bad_order;
  gsize          max_len;
} Consumer;

static gpointer
consumer_thread (gpointer data)
{
  Consumer *c = data;
  guint32 rand = 0x9e3779b9u ^ GPOINTER_TO_UINT (data);

  while (atomic_load (c->received) < c->total)
    {
      WsRawTask *out[40];
      gsize n;
      gsize len;

      rand ^= rand << 13;
      rand ^= rand >> 17;
      rand ^= rand << 5;
      len = ws_inject_queue_len (c->q);
      c->max_len = MAX (c->max_len, len);
      n = ws_inject_queue_pop_batch (c->q, out, 1 + rand % G_N_ELEMENTS (out));
      for (gsize i = 0; i < n; i++)
        {
          guint index = ws_test_fake_task_index (out[i]);
          guint producer = index / PER_PRODUCER;

          g_assert_cmpuint (producer, <, N_PRODUCERS);
          /* Each task once, across both consumers. */
          g_assert_cmpuint (atomic_exchange (&c->seen[index], 1), ==, 0);
          if (index % PER_PRODUCER < c->next_of[producer])
            c->bad_order = TRUE;
          c->next_of[producer] = index % PER_PRODUCER + 1;
        }
      c->n_popped += n;
      atomic_fetch_add (c->received, (guint) n);
    }
  return NULL;
}

static void
test_concurrent_consumers (void)
{
  Run r;
  _Atomic guint received = 0;
  Consumer consumers[N_CONSUMERS];
  GThread *threads[N_CONSUMERS];
  _Atomic guint *seen = g_new0 (_Atomic guint, N_PRODUCERS * PER_PRODUCER);
  guint popped = 0;

  run_start (&r, PER_PRODUCER, 0, NULL, 0);
  for (guint i = 0; i < N_CONSUMERS; i++)
    {
      consumers[i] = (Consumer) { .q = &r.q, .received = &received,
                                  .total = N_PRODUCERS * PER_PRODUCER, .seen = seen };
      threads[i] = g_thread_new ("consumer", consumer_thread, &consumers[i]);
    }
  for (guint i = 0; i < N_CONSUMERS; i++)
    {
      g_thread_join (threads[i]);
      g_assert_false (consumers[i].bad_order);
      g_assert_cmpuint (consumers[i].max_len, <=, N_PRODUCERS * PER_PRODUCER);
      popped += consumers[i].n_popped;
      g_test_message ("consumer %u popped %u", i, consumers[i].n_popped);
    }
  g_assert_cmpuint (popped, ==, N_PRODUCERS * PER_PRODUCER);
  for (guint i = 0; i < N_PRODUCERS * PER_PRODUCER; i++)
    g_assert_cmpuint (atomic_load (&seen[i]), ==, 1);
  for (guint i = 0; i < N_PRODUCERS; i++)
    r.next_of[i] = atomic_load (&r.producers[i].accepted);
  g_assert_cmpuint (run_finish (&r), ==, N_PRODUCERS * PER_PRODUCER);
  g_free ((gpointer) seen);
}

/* Pushes from outside the pool are counted in n_remote, the pool's own
 * (overflow) pushes are not; a refused push counts nothing. */
static void
test_remote_count (void)
{
  WsInjectQueue q;
  WsRawTask *batch[2] = { ws_test_fake_task (1), ws_test_fake_task (2) };

  ws_inject_queue_init (&q);
  g_assert_cmpuint (ws_inject_queue_n_remote (&q, memory_order_relaxed), ==, 0);
  g_assert_true (ws_inject_queue_push_remote (&q, ws_test_fake_task (0)));
  g_assert_true (ws_inject_queue_push_batch (&q, batch, 2));
  g_assert_true (ws_inject_queue_push (&q, ws_test_fake_task (3)));
  g_assert_true (ws_inject_queue_push_remote (&q, ws_test_fake_task (4)));
  g_assert_cmpuint (ws_inject_queue_n_remote (&q, memory_order_relaxed), ==, 2);
  g_assert_cmpuint (ws_inject_queue_len (&q), ==, 5);
  for (guint i = 0; i < 5; i++)
    g_assert_true (ws_inject_queue_pop (&q) == ws_test_fake_task (i));
  g_assert_null (ws_inject_queue_pop_or_seal (&q));
  g_assert_false (ws_inject_queue_push_remote (&q, ws_test_fake_task (5)));
  g_assert_cmpuint (ws_inject_queue_n_remote (&q, memory_order_relaxed), ==, 2);
  ws_inject_queue_clear (&q);
}

/* The seal races the producers: every push either lands before the seal,
 * and the sweep pops it, or is refused. Nothing is left behind, nothing
 * lost. The producers pause between pushes, so that the sweep often
 * finds the queue empty, and seals it, while they still push; how often
 * depends on the machine, so the rounds only count the refusals. One
 * round more holds every producer at a gate after some pushes, seals the
 * queue behind them, and then lets them push: each of those pushes must
 * be refused, on any machine. */
static void
test_seal_races_producers (void)
{
  guint refused = 0;
  Run r;
  WsTestGate gate;
  guint swept = 0;
  WsRawTask *t;

  for (guint round = 0; round < 200; round++)
    {
      guint start_after = g_test_rand_int_range (0, 64);

      swept = 0;
      run_start (&r, 5000, 400, NULL, 0);
      ws_test_wait_until (ws_inject_queue_len (&r.q) >= start_after);
      while ((t = ws_inject_queue_pop_or_seal (&r.q)) != NULL)
        {
          run_consume (&r, t);
          swept++;
        }
      g_assert_true (ws_inject_queue_is_sealed (&r.q));
      /* What the producers got accepted, the sweep popped. */
      g_assert_cmpuint (run_finish (&r), ==, swept);
      for (guint i = 0; i < N_PRODUCERS; i++)
        refused += r.producers[i].refused;
    }
  g_test_message ("%u producers refused in the racing rounds", refused);

  /* The seal lands while every producer still has pushes to make. */
  ws_test_gate_init (&gate);
  swept = 0;
  run_start (&r, 5000, 0, &gate, 100);
  ws_test_gate_wait_for_waiters (&gate, N_PRODUCERS);
  while ((t = ws_inject_queue_pop_or_seal (&r.q)) != NULL)
    {
      run_consume (&r, t);
      swept++;
    }
  g_assert_true (ws_inject_queue_is_sealed (&r.q));
  ws_test_gate_open (&gate);
  g_assert_cmpuint (run_finish (&r), ==, swept);
  for (guint i = 0; i < N_PRODUCERS; i++)
    g_assert_true (r.producers[i].refused);
  ws_test_gate_clear (&gate);
}

WS_TEST_MAIN ({ "/inject-queue/push-pop-order", test_push_pop_order },
              { "/inject-queue/batches", test_batches },
              { "/inject-queue/fifo-across-blocks", test_fifo_across_blocks },
              { "/inject-queue/sealed", test_sealed },
              { "/inject-queue/seal-refuses-batch", test_seal_refuses_batch },
              { "/inject-queue/concurrent-producers", test_concurrent_producers },
              { "/inject-queue/concurrent-consumers", test_concurrent_consumers },
              { "/inject-queue/remote-count", test_remote_count },
              { "/inject-queue/seal-races-producers", test_seal_races_producers })
