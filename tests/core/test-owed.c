/* test-owed.c: completions GIO owes a context (ws-owed)
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A drain returns once the count is 0; a release from another thread
 * wakes a drain asleep in its context's poll; and a release never
 * touches the context after a drain that read 0 has let go of it (the
 * last reference): "Release and wake" in ws-owed.c. The last case needs
 * the release's window, between its decrement and its wake, to be
 * reached: the chaos build yields there now and then, and ASan reports
 * the use of the freed context.
 */

#include "config.h"

#include <stdatomic.h>

#include "../ws-test-fixture.h"
#include "ws-owed-private.h"

typedef struct
{
  GMainContext *context;
  WsOwed       *owed;
  gboolean      busy;           /* keep the drain awake: an idle source */
  _Atomic gint  draining;
  _Atomic gint  releasing;      /* the release has begun */
  gboolean      drained;
} Drain;

/* Keeps the drain iterating without sleeping until the release begins,
 * so that it reads the count again as soon as it can, and goes (a
 * source that stayed ready would keep the drain's last dispatch going). */
static gboolean
stay_awake (gpointer data)
{
  Drain *d = data;

  return atomic_load (&d->releasing) ? G_SOURCE_REMOVE : G_SOURCE_CONTINUE;
}

/* Owns @d's context, drains it with no deadline, then lets go of it:
 * the last reference, as a blocking thread that retires does. */
static gpointer
drain_thread (gpointer data)
{
  Drain *d = data;
  GSource *idle = NULL;

  g_main_context_push_thread_default (d->context);
  if (d->busy)
    {
      idle = g_idle_source_new ();
      g_source_set_callback (idle, stay_awake, d, NULL);
      g_source_attach (idle, d->context);
    }
  atomic_store (&d->draining, 1);
  d->drained = ws_owed_drain (d->context, -1);
  if (idle != NULL)
    {
      g_source_destroy (idle);
      g_source_unref (idle);
    }
  g_main_context_pop_thread_default (d->context);
  g_main_context_unref (g_steal_pointer (&d->context));
  return NULL;
}

/* One drain, released from this thread; returns once the drain has let
 * go of the context. */
static void
drain_once (gboolean busy)
{
  Drain d = { g_main_context_new (), NULL, busy, 0, 0, FALSE };
  GThread *t;

  d.owed = ws_owed_acquire (d.context);
  t = g_thread_new ("drain", drain_thread, &d);
  ws_test_wait_until (atomic_load (&d.draining));
  atomic_store (&d.releasing, 1);
  ws_owed_release (g_steal_pointer (&d.owed));
  g_thread_join (t);
  g_assert_true (d.drained);
}

/* A drain asleep in its poll: the release's wake ends it (a lost wake is
 * a hang, which the watchdog reports). */
static void
test_release_wakes_drain (void)
{
  for (guint i = 0; i < 50; i++)
    drain_once (FALSE);
}

/* A drain that is awake anyway reads 0 right after the release's
 * decrement and drops the context: the release's wake must not touch it
 * then (ASan, and the chaos build's yield in that window). */
static void
test_release_after_drain_let_go (void)
{
  for (guint i = 0; i < 2000; i++)
    drain_once (TRUE);
}

/* Nothing owed: a drain returns at once, TRUE; with a count that is never
 * released, a drain with a deadline returns FALSE at it. */
static void
test_drain_deadline (void)
{
  GMainContext *context = g_main_context_new ();
  WsOwed *owed;

  g_main_context_push_thread_default (context);
  g_assert_true (ws_owed_drain (context, -1));
  owed = ws_owed_acquire (context);
  g_assert_false (ws_owed_drain (context, g_get_monotonic_time () + 1000));
  g_assert_false (ws_owed_drain (context, 0));
  ws_owed_release (owed);
  g_assert_true (ws_owed_drain (context, 0));
  g_main_context_pop_thread_default (context);
  g_main_context_unref (context);
}

WS_TEST_MAIN ({ "/owed/release-wakes-drain", test_release_wakes_drain },
              { "/owed/release-after-drain-let-go", test_release_after_drain_let_go },
              { "/owed/drain-deadline", test_drain_deadline })
