/* test-channel.c: WsChannel, the bounded multi-producer multi-consumer
 * channel
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "ws-test-fixture.h"

#define N_MESSAGES 100000
#define N_SIDES    4

typedef struct
{
  WsChannel      *ch;
  _Atomic guint8 *seen;
  _Atomic guint   received;
} ChannelTest;

typedef struct
{
  ChannelTest *t;
  guint        next;
  guint        end;
} Producer;

/* Sends next + 1 up to end. */
static WsPoll
producer_func (WsContext *cx,
               gpointer   data)
{
  Producer *p = data;

  while (p->next < p->end)
    {
      g_autoptr(GError) error = NULL;

      if (ws_channel_poll_send (p->t->ch, cx, GUINT_TO_POINTER (p->next + 1), &error) == WS_POLL_PENDING)
        return WS_POLL_PENDING;
      g_assert_no_error (error);
      p->next++;
    }
  return WS_POLL_READY;
}

/* Receives until the channel is closed, marking each message seen. */
static WsPoll
consumer_func (WsContext *cx,
               gpointer   data)
{
  ChannelTest *t = data;

  for (;;)
    {
      g_autoptr(GError) error = NULL;
      gpointer item;

      if (ws_channel_poll_receive (t->ch, cx, &item, &error) == WS_POLL_PENDING)
        return WS_POLL_PENDING;
      if (error != NULL)
        {
          g_assert_error (error, WS_ERROR, WS_ERROR_CLOSED);
          return WS_POLL_READY;
        }
      atomic_fetch_add (&t->seen[GPOINTER_TO_UINT (item) - 1], 1);
      atomic_fetch_add (&t->received, 1);
    }
}

static void
test_mpmc (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  ChannelTest t = { 0 };
  Producer producers[N_SIDES];
  WsTask *prod[N_SIDES];
  WsTask *cons[N_SIDES];

  t.ch = ws_channel_new (64, NULL);
  t.seen = g_new0 (_Atomic guint8, N_MESSAGES);
  for (guint i = 0; i < N_SIDES; i++)
    {
      producers[i] = (Producer) { &t, i * (N_MESSAGES / N_SIDES), (i + 1) * (N_MESSAGES / N_SIDES) };
      prod[i] = ws_runtime_spawn (rt, producer_func, &producers[i], NULL);
      cons[i] = ws_runtime_spawn (rt, consumer_func, &t, NULL);
    }
  ws_test_wait_all (prod, N_SIDES);
  ws_channel_close (t.ch);
  ws_test_wait_all (cons, N_SIDES);

  g_assert_cmpuint (atomic_load (&t.received), ==, N_MESSAGES);
  for (guint i = 0; i < N_MESSAGES; i++)
    if (atomic_load (&t.seen[i]) != 1)
      g_error ("message %u received %u times", i, (guint) atomic_load (&t.seen[i]));

  g_free ((gpointer) t.seen);
  ws_channel_unref (t.ch);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static void
test_back_pressure_and_close (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  ChannelTest t = { 0 };
  Producer p;
  g_autoptr(WsTask) prod = NULL;
  WsTask *waiters[3];
  gpointer item;
  g_autoptr(GError) error = NULL;

  t.ch = ws_channel_new (2, NULL);
  t.seen = g_new0 (_Atomic guint8, 8);
  p = (Producer) { &t, 0, 5 };
  prod = ws_runtime_spawn (rt, producer_func, &p, NULL);

  /* The producer fills the channel and is held there. */
  ws_test_wait_until (ws_channel_get_length (t.ch) >= 2);
  g_usleep (20000);
  g_assert_cmpuint (ws_channel_get_length (t.ch), ==, 2);
  g_assert_false (ws_task_is_finished (prod));

  /* Taking items lets it go on, in order. */
  for (guint i = 1; i <= 5; i++)
    {
      ws_test_wait_until (ws_channel_try_receive (t.ch, &item, NULL));
      g_assert_cmpuint (GPOINTER_TO_UINT (item), ==, i);
    }
  g_assert_true (ws_task_wait (prod, NULL, NULL));
  g_assert_false (ws_channel_try_receive (t.ch, &item, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK);
  g_clear_error (&error);

  /* Closing wakes every waiting receiver. */
  for (guint i = 0; i < 3; i++)
    waiters[i] = ws_runtime_spawn (rt, consumer_func, &t, NULL);
  g_usleep (10000);
  ws_channel_close (t.ch);
  ws_test_wait_all (waiters, 3);
  g_assert_false (ws_channel_try_send (t.ch, GUINT_TO_POINTER (9), &error));
  g_assert_error (error, WS_ERROR, WS_ERROR_CLOSED);

  g_free ((gpointer) t.seen);
  ws_channel_unref (t.ch);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

WS_TEST_MAIN ({ "/channel/mpmc", test_mpmc },
              { "/channel/back-pressure-and-close", test_back_pressure_and_close })
