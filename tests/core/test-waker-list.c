/* test-waker-list.c: WsWakerList, the one list of wakers of the awaitables
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * What ws-waker-private.h says must hold: one entry per waker (a second
 * add takes no reference); an add takes a reference, a remove hands it to
 * the caller, wake_all wakes every listed waker once and drops its
 * reference, clear drops them without waking; take moves the list out and
 * leaves an empty one. The wakers are counting fakes: no task is made.
 */

#include "config.h"

#include "../ws-test-fixture.h"
#include "ws-waker-private.h"

typedef struct
{
  WsWaker waker;
  guint   refs;
  guint   wakes;
  guint   refs_at_wake;       /* what a wake by reference still sees */
} CountingWaker;

static void
counting_wake (WsWaker *waker)
{
  CountingWaker *w = (CountingWaker *) waker;

  w->wakes++;
  w->refs_at_wake = w->refs;
}

static void
counting_ref (WsWaker *waker)
{
  ((CountingWaker *) waker)->refs++;
}

static void
counting_unref (WsWaker *waker)
{
  CountingWaker *w = (CountingWaker *) waker;

  g_assert_cmpuint (w->refs, >, 0);
  w->refs--;
}

static const WsWakerVTable counting_vtable = {
  .wake = counting_wake,
  .ref = counting_ref,
  .unref = counting_unref,
};

/* More than the list's first allocation (4), so that it grows. */
#define N_WAKERS 9

static void
counting_init (CountingWaker *w,
               guint          n)
{
  for (guint i = 0; i < n; i++)
    w[i] = (CountingWaker) { .waker = { &counting_vtable } };
}

/* One entry per waker; each add of a new waker takes one reference. */
static void
test_add_once (void)
{
  CountingWaker w[N_WAKERS];
  WsWakerList list = WS_WAKER_LIST_INIT;

  counting_init (w, N_WAKERS);
  for (guint i = 0; i < N_WAKERS; i++)
    {
      g_assert_true (ws_waker_list_add (&list, &w[i].waker));
      g_assert_cmpuint (w[i].refs, ==, 1);
      g_assert_cmpuint (list.len, ==, i + 1);
    }
  for (guint i = 0; i < N_WAKERS; i++)
    {
      g_assert_false (ws_waker_list_add (&list, &w[i].waker));
      g_assert_cmpuint (w[i].refs, ==, 1);
    }
  g_assert_cmpuint (list.len, ==, N_WAKERS);

  ws_waker_list_clear (&list);
  for (guint i = 0; i < N_WAKERS; i++)
    {
      g_assert_cmpuint (w[i].refs, ==, 0);
      g_assert_cmpuint (w[i].wakes, ==, 0);
    }
  g_assert_cmpuint (list.len, ==, 0);
  g_assert_null (list.wakers);
}

/* wake_all wakes each listed waker exactly once, by reference (the
 * reference is still held during the wake), then drops it; the list is
 * empty and usable afterwards. */
static void
test_wake_all (void)
{
  CountingWaker w[N_WAKERS];
  WsWakerList list;

  counting_init (w, N_WAKERS);
  ws_waker_list_init (&list);
  for (guint i = 0; i < N_WAKERS; i++)
    ws_waker_list_add (&list, &w[i].waker);
  ws_waker_list_wake_all (&list);
  for (guint i = 0; i < N_WAKERS; i++)
    {
      g_assert_cmpuint (w[i].wakes, ==, 1);
      g_assert_cmpuint (w[i].refs_at_wake, ==, 1);
      g_assert_cmpuint (w[i].refs, ==, 0);
    }
  g_assert_cmpuint (list.len, ==, 0);

  /* Empty: nothing to wake. */
  ws_waker_list_wake_all (&list);
  g_assert_true (ws_waker_list_add (&list, &w[0].waker));
  ws_waker_list_wake_all (&list);
  g_assert_cmpuint (w[0].wakes, ==, 2);
  g_assert_cmpuint (w[0].refs, ==, 0);
}

/* remove takes out a listed waker and hands its reference to the caller;
 * one that is not listed is refused. The others stay and are woken. */
static void
test_remove (void)
{
  CountingWaker w[3];
  WsWakerList list = WS_WAKER_LIST_INIT;

  counting_init (w, 3);
  for (guint i = 0; i < 3; i++)
    ws_waker_list_add (&list, &w[i].waker);

  g_assert_true (ws_waker_list_remove (&list, &w[0].waker));
  g_assert_cmpuint (w[0].refs, ==, 1);           /* the caller's now */
  g_assert_false (ws_waker_list_remove (&list, &w[0].waker));
  g_assert_cmpuint (list.len, ==, 2);
  w[0].waker.vtable->unref (&w[0].waker);

  ws_waker_list_wake_all (&list);
  g_assert_cmpuint (w[0].wakes, ==, 0);
  g_assert_cmpuint (w[1].wakes, ==, 1);
  g_assert_cmpuint (w[2].wakes, ==, 1);
  g_assert_cmpuint (w[1].refs + w[2].refs, ==, 0);
}

/* take moves the wakers out under the owner's lock; the owner's list is
 * empty at once and takes new waiters, while the taken one is woken. */
static void
test_take (void)
{
  CountingWaker w[2];
  WsWakerList list = WS_WAKER_LIST_INIT;
  WsWakerList taken;

  counting_init (w, 2);
  ws_waker_list_add (&list, &w[0].waker);
  taken = ws_waker_list_take (&list);
  g_assert_cmpuint (list.len, ==, 0);
  g_assert_null (list.wakers);
  g_assert_cmpuint (taken.len, ==, 1);

  /* The same waker registers again before the taken list is woken. */
  g_assert_true (ws_waker_list_add (&list, &w[0].waker));
  ws_waker_list_add (&list, &w[1].waker);
  g_assert_cmpuint (w[0].refs, ==, 2);

  ws_waker_list_wake_all (&taken);
  g_assert_cmpuint (w[0].wakes, ==, 1);
  g_assert_cmpuint (w[0].refs, ==, 1);
  ws_waker_list_clear (&list);
  g_assert_cmpuint (w[0].refs + w[1].refs, ==, 0);
  g_assert_cmpuint (w[1].wakes, ==, 0);
}

WS_TEST_MAIN ({ "/waker-list/add-once", test_add_once },
              { "/waker-list/wake-all", test_wake_all },
              { "/waker-list/remove", test_remove },
              { "/waker-list/take", test_take })
