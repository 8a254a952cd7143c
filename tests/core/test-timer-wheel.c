/* test-timer-wheel.c: the hierarchical timing wheel (ws-timer-wheel)
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Entries expire at their tick, never before and never after the first
 * poll at or past it, on every level and across level boundaries; removed
 * entries never expire; the next expiration is never later than the
 * earliest entry; deadlines past the horizon are placed at it; and a long
 * random run of inserts, removes, re-inserts and polls agrees with a
 * plain list model.
 */

#include "config.h"

#include "../ws-test-fixture.h"
#include "ws-timer-wheel-private.h"

typedef struct
{
  WsTimerEntry entry;
  guint64      deadline;             /* what the model says */
  gboolean     linked;               /* in the model */
  gboolean     expired;
} Item;

static Item *
item_of (WsTimerEntry *entry)
{
  return (Item *) ((guint8 *) entry - G_STRUCT_OFFSET (Item, entry));
}

/* Polls @wheel at @now; checks that exactly the model's items with a
 * deadline at or before @now expire, each once. */
static guint
poll_and_check (WsTimerWheel *wheel,
                Item         *items,
                guint         n_items,
                guint64       now)
{
  WsTimerEntry *entry;
  guint n = 0;

  while ((entry = ws_timer_wheel_poll (wheel, now)) != NULL)
    {
      Item *it = item_of (entry);

      g_assert_true (it->linked);
      g_assert_false (it->expired);
      g_assert_cmpuint (it->deadline, <=, now);
      g_assert_false (ws_timer_entry_is_linked (entry));
      it->expired = TRUE;
      it->linked = FALSE;
      n++;
    }
  for (guint i = 0; i < n_items; i++)
    if (items[i].linked)
      g_assert_cmpuint (items[i].deadline, >, now);
  return n;
}

static void
test_levels (void)
{
  /* One entry on each level, and ones that sit just either side of a
   * slot and a level boundary. */
  const guint64 deadlines[] = {
    1, 2, 63, 64, 65, 127, 128, 4095, 4096, 4097, 262143, 262144, 262145,
    16777215, 16777216, G_GUINT64_CONSTANT (1) << 30, (G_GUINT64_CONSTANT (1) << 35) + 7,
  };
  const guint n = G_N_ELEMENTS (deadlines);
  g_autofree Item *items = g_new0 (Item, n);
  g_autofree WsTimerWheel *wheel = g_new (WsTimerWheel, 1);
  guint64 now = 0;
  guint expired = 0;

  ws_timer_wheel_init (wheel, 0);
  for (guint i = 0; i < n; i++)
    {
      ws_timer_entry_init (&items[i].entry);
      items[i].deadline = deadlines[i];
      items[i].linked = TRUE;
      g_assert_true (ws_timer_wheel_insert (wheel, &items[i].entry, deadlines[i]));
    }
  g_assert_cmpuint (ws_timer_wheel_get_n_entries (wheel), ==, n);

  /* Step to each next expiration: it is never after the earliest pending
   * deadline, and polling there expires exactly the due ones. */
  while (expired < n)
    {
      guint64 next = ws_timer_wheel_next_expiration (wheel);
      guint64 earliest = G_MAXUINT64;

      for (guint i = 0; i < n; i++)
        if (items[i].linked)
          earliest = MIN (earliest, items[i].deadline);
      g_assert_cmpuint (next, <=, earliest);
      g_assert_cmpuint (next, >=, now);
      now = next;
      expired += poll_and_check (wheel, items, n, now);
    }
  g_assert_cmpuint (ws_timer_wheel_get_n_entries (wheel), ==, 0);
  g_assert_cmpuint (ws_timer_wheel_next_expiration (wheel), ==, G_MAXUINT64);
}

static void
test_past_and_horizon (void)
{
  g_autofree WsTimerWheel *wheel = g_new (WsTimerWheel, 1);
  WsTimerEntry a, b;

  ws_timer_wheel_init (wheel, 1000);
  ws_timer_entry_init (&a);
  ws_timer_entry_init (&b);

  /* At or before elapsed: refused, left unlinked. */
  g_assert_false (ws_timer_wheel_insert (wheel, &a, 1000));
  g_assert_false (ws_timer_wheel_insert (wheel, &a, 3));
  g_assert_false (ws_timer_entry_is_linked (&a));

  /* Past the horizon: placed at it, so it expires there (its owner
   * re-inserts it). */
  g_assert_true (ws_timer_wheel_insert (wheel, &a, G_GUINT64_CONSTANT (1) << 47));
  g_assert_cmpuint (a.when, ==, 1000 + WS_TIMER_WHEEL_MAX_TICKS - 1);
  g_assert_true (ws_timer_wheel_insert (wheel, &b, 2000));
  g_assert_true (ws_timer_wheel_poll (wheel, 1999) == NULL);
  g_assert_true (ws_timer_wheel_poll (wheel, 2000) == &b);
  g_assert_true (ws_timer_wheel_poll (wheel, a.when - 1) == NULL);
  g_assert_true (ws_timer_entry_is_linked (&a));
  g_assert_true (ws_timer_wheel_poll (wheel, a.when) == &a);
  g_assert_true (ws_timer_wheel_poll (wheel, a.when) == NULL);
}

static void
test_random_against_model (void)
{
  const guint n = 4096;
  g_autofree Item *items = g_new0 (Item, n);
  g_autofree WsTimerWheel *wheel = g_new (WsTimerWheel, 1);
  g_autoptr(GRand) rand = g_rand_new_with_seed (20261124);
  guint64 now = 0;

  ws_timer_wheel_init (wheel, 0);
  for (guint i = 0; i < n; i++)
    ws_timer_entry_init (&items[i].entry);

  for (guint round = 0; round < 200000; round++)
    {
      Item *it = &items[g_rand_int_range (rand, 0, n)];
      guint op = g_rand_int_range (rand, 0, 10);

      if (op < 5)
        {
          /* Insert or move: distances on every scale. */
          guint64 span = G_GUINT64_CONSTANT (1) << g_rand_int_range (rand, 0, 26);
          guint64 when = now + 1 + (guint64) g_rand_double_range (rand, 0, (gdouble) span);

          if (it->linked)
            ws_timer_wheel_remove (wheel, &it->entry);
          g_assert_true (ws_timer_wheel_insert (wheel, &it->entry, when));
          it->deadline = when;
          it->linked = TRUE;
          it->expired = FALSE;
        }
      else if (op < 7)
        {
          if (it->linked)
            {
              ws_timer_wheel_remove (wheel, &it->entry);
              it->linked = FALSE;
            }
        }
      else
        {
          /* Advance: mostly a little, sometimes to the next expiration,
           * sometimes far. */
          guint64 next = ws_timer_wheel_next_expiration (wheel);

          if (op == 7 && next != G_MAXUINT64)
            now = MAX (now, next);
          else if (op == 8)
            now += g_rand_int_range (rand, 0, 100);
          else
            now += g_rand_int_range (rand, 0, 1 << 20);
          poll_and_check (wheel, items, n, now);
        }
    }

  /* Drain: everything left expires at its deadline. */
  while (ws_timer_wheel_get_n_entries (wheel) > 0)
    {
      now = ws_timer_wheel_next_expiration (wheel);
      poll_and_check (wheel, items, n, now);
    }
  for (guint i = 0; i < n; i++)
    g_assert_false (items[i].linked);
}

WS_TEST_MAIN ({ "/timer-wheel/levels", test_levels },
              { "/timer-wheel/past-and-horizon", test_past_and_horizon },
              { "/timer-wheel/random-against-model", test_random_against_model })
