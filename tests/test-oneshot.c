/* test-oneshot.c: WsOneshot, a single value from one side to the other
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A task awaits the item or the close. receive_async calls back on the
 * caller's context, never from inside the call, with the item sent from
 * another thread, or WS_ERROR_CLOSED; a cancelled receive ends with
 * G_IO_ERROR_CANCELLED and leaves the item for the next receive, and an
 * item nobody received is freed with the oneshot. Races of a send with a
 * send or a close while a task awaits, and of two receivers, on two
 * workers: one claim wins and the item is received once.
 */

#include "config.h"

#include "ws-test-fixture.h"

typedef struct
{
  WsOneshot *shot;
  gpointer   item;
  GError    *error;
} ShotWait;

static WsPoll
shot_func (WsContext *cx,
           gpointer   data)
{
  ShotWait *s = data;

  return ws_oneshot_poll (s->shot, cx, &s->item, &s->error);
}

/* A send reaches the awaiting task, a second send is refused and its item
 * freed; a close ends the other's wait with WS_ERROR_CLOSED. */
static void
test_send_and_close (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  ShotWait a = { ws_oneshot_new (ws_test_count_destroy) };
  ShotWait b = { ws_oneshot_new (ws_test_count_destroy) };
  g_autoptr(WsTask) ta = ws_runtime_spawn (rt, shot_func, &a, NULL);
  g_autoptr(WsTask) tb = ws_runtime_spawn (rt, shot_func, &b, NULL);

  ws_test_reset_counters ();
  g_usleep (5000);
  g_assert_true (ws_oneshot_send (a.shot, GUINT_TO_POINTER (7)));
  g_assert_false (ws_oneshot_send (a.shot, GUINT_TO_POINTER (8)));   /* refused, freed */
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 1);
  ws_oneshot_close (b.shot);

  g_assert_true (ws_task_wait (ta, NULL, NULL));
  g_assert_true (ws_task_wait (tb, NULL, NULL));
  g_assert_cmpuint (GPOINTER_TO_UINT (a.item), ==, 7);
  g_assert_no_error (a.error);
  g_assert_null (b.item);
  g_assert_error (b.error, WS_ERROR, WS_ERROR_CLOSED);

  g_clear_error (&b.error);
  ws_oneshot_unref (a.shot);
  ws_oneshot_unref (b.shot);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

typedef struct
{
  guint     calls;
  gpointer  item;
  GError   *error;
  GThread  *thread;
} ReceiveResult;

static void
receive_cb (GObject      *object,
            GAsyncResult *result,
            gpointer      data)
{
  ReceiveResult *r = data;

  r->calls++;
  r->thread = g_thread_self ();
  g_clear_error (&r->error);
  r->item = ws_oneshot_receive_finish (r->item, result, &r->error);
}

/* r->item holds the oneshot until the callback replaces it with the
 * item: the callback needs the oneshot for the finish. */
static void
receive (WsOneshot     *shot,
         GCancellable  *cancellable,
         ReceiveResult *r)
{
  r->item = shot;
  ws_oneshot_receive_async (shot, cancellable, receive_cb, r);
}

static gpointer
send_later (gpointer data)
{
  g_usleep (10000);
  g_assert_true (ws_oneshot_send (data, g_strdup ("seven")));
  return NULL;
}

/* The item sent from another thread reaches the callback, on this
 * thread's context; a receive that finds the item or the close already
 * there still calls back from the context. */
static void
test_receive_async (void)
{
  GMainContext *ctx = g_main_context_new ();
  WsOneshot *shot = ws_oneshot_new (g_free);
  WsOneshot *ready = ws_oneshot_new (g_free);
  WsOneshot *closed = ws_oneshot_new (g_free);
  g_autoptr(GThread) sender = NULL;
  ReceiveResult a = { 0 }, b = { 0 }, c = { 0 };

  g_main_context_push_thread_default (ctx);
  receive (shot, NULL, &a);
  sender = g_thread_new ("sender", send_later, shot);
  g_assert_true (ws_oneshot_send (ready, g_strdup ("now")));
  receive (ready, NULL, &b);
  ws_oneshot_close (closed);
  receive (closed, NULL, &c);
  g_assert_cmpuint (a.calls + b.calls + c.calls, ==, 0);
  ws_test_iterate_until (ctx, a.calls == 1 && b.calls == 1 && c.calls == 1);
  g_assert_no_error (a.error);
  g_assert_cmpstr (a.item, ==, "seven");
  g_assert_true (a.thread == g_thread_self ());
  g_assert_no_error (b.error);
  g_assert_cmpstr (b.item, ==, "now");
  g_assert_null (c.item);
  g_assert_error (c.error, WS_ERROR, WS_ERROR_CLOSED);

  g_thread_join (g_steal_pointer (&sender));
  g_free (a.item);
  g_free (b.item);
  g_clear_error (&c.error);
  ws_oneshot_unref (shot);
  ws_oneshot_unref (ready);
  ws_oneshot_unref (closed);
  g_main_context_pop_thread_default (ctx);
  g_main_context_unref (ctx);
}

/* A cancelled receive ends with G_IO_ERROR_CANCELLED and takes nothing:
 * the item sent afterwards goes to the next receive; an item never
 * received is freed with the last reference. */
static void
test_receive_async_cancelled (void)
{
  GMainContext *ctx = g_main_context_new ();
  WsOneshot *shot = ws_oneshot_new (ws_test_count_destroy);
  WsOneshot *unread = ws_oneshot_new (ws_test_count_destroy);
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  ReceiveResult a = { 0 }, b = { 0 }, c = { 0 };

  g_main_context_push_thread_default (ctx);
  ws_test_reset_counters ();
  receive (shot, cancellable, &a);
  g_cancellable_cancel (cancellable);
  ws_test_iterate_until (ctx, a.calls == 1);
  g_assert_null (a.item);
  g_assert_error (a.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);

  g_assert_true (ws_oneshot_send (shot, GUINT_TO_POINTER (5)));
  receive (shot, NULL, &b);
  ws_test_iterate_until (ctx, b.calls == 1);
  g_assert_no_error (b.error);
  g_assert_cmpuint (GPOINTER_TO_UINT (b.item), ==, 5);

  /* Cancelled while the item waits in the oneshot: it stays there. */
  g_assert_true (ws_oneshot_send (unread, GUINT_TO_POINTER (6)));
  g_cancellable_reset (cancellable);
  receive (unread, cancellable, &c);
  g_cancellable_cancel (cancellable);
  ws_test_iterate_until (ctx, c.calls == 1);
  if (c.error != NULL)
    g_assert_error (c.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  else
    g_assert_cmpuint (GPOINTER_TO_UINT (c.item), ==, 6);

  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 0);
  ws_oneshot_unref (shot);
  ws_oneshot_unref (unread);
  /* The item of `unread` was freed if the cancel won, not if it was
   * received. */
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, c.error != NULL ? 1 : 0);
  g_clear_error (&a.error);
  g_clear_error (&c.error);
  g_main_context_pop_thread_default (ctx);
  g_main_context_unref (ctx);
}

/* A pending receive ends, never hangs, when it loses its waker slot: to a
 * second receive, to a task's poll, or to the oneshot's last unref. It
 * ends with WS_ERROR_FAILED and takes nothing; with a cancellable too (a
 * wait that has one must still be delivered before it is freed). */
static void
on_dropped (GObject      *object,
            GAsyncResult *result,
            gpointer      data)
{
  guint *calls = data;

  /* The oneshot may be gone: only the result is read. */
  g_assert_true (G_IS_ASYNC_RESULT (result));
  (*calls)++;
}

static void
test_receive_async_replaced (void)
{
  g_autoptr(GMainContext) ctx = g_main_context_new ();
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  WsOneshot *shot = ws_oneshot_new (g_free);
  ReceiveResult a = { 0 }, b = { 0 };
  ShotWait poller = { shot, NULL, NULL };
  g_autoptr(WsTask) task = NULL;
  guint dropped = 0;

  g_main_context_push_thread_default (ctx);

  /* A second receive replaces the first. */
  receive (shot, cancellable, &a);
  receive (shot, NULL, &b);
  ws_test_iterate_until (ctx, a.calls == 1);
  g_assert_null (a.item);
  g_assert_error (a.error, WS_ERROR, WS_ERROR_FAILED);
  g_assert_cmpuint (b.calls, ==, 0);

  /* A task's poll replaces the second; the task gets the item. */
  task = ws_runtime_spawn (rt, shot_func, &poller, NULL);
  ws_test_iterate_until (ctx, b.calls == 1);
  g_assert_error (b.error, WS_ERROR, WS_ERROR_FAILED);
  g_assert_true (ws_oneshot_send (shot, g_strdup ("to the task")));
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_cmpstr (poller.item, ==, "to the task");
  g_free (poller.item);
  ws_oneshot_unref (shot);

  /* The last unref of a oneshot with a pending receive. */
  shot = ws_oneshot_new (g_free);
  ws_oneshot_receive_async (shot, cancellable, on_dropped, &dropped);
  ws_oneshot_unref (shot);
  ws_test_iterate_until (ctx, dropped == 1);

  g_clear_error (&a.error);
  g_clear_error (&b.error);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_main_context_pop_thread_default (ctx);
}

/* Races between the sides, each round on a fresh oneshot: a task that
 * awaits the item while a task and this thread both send (or this thread
 * closes), on two workers. Exactly one claim wins; the receiver gets the
 * winner's item, or WS_ERROR_CLOSED if a close won; every other item is
 * freed at once. The leak checks after the test see every waker
 * reference dropped. */
#define RACE_ROUNDS 3000

typedef struct
{
  WsOneshot *shot;
  guint      item;
  gboolean   sent;
} RaceSend;

static WsPoll
race_send (WsContext *cx,
           gpointer   data)
{
  RaceSend *r = data;

  r->sent = ws_oneshot_send (r->shot, GUINT_TO_POINTER (r->item));
  return WS_POLL_READY;
}

static void
test_race_send_close_poll (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);

  for (guint i = 0; i < RACE_ROUNDS; i++)
    {
      ShotWait rx = { ws_oneshot_new (ws_test_count_destroy) };
      RaceSend tx = { rx.shot, 2 * i + 1, FALSE };
      gboolean close = i % 3 == 0;
      gboolean main_won;
      WsJoinHandle *r, *t;

      ws_test_reset_counters ();
      r = ws_runtime_spawn_joinable (rt, shot_func, &rx, NULL);
      t = ws_runtime_spawn_joinable (rt, race_send, &tx, NULL);
      if (close)
        {
          ws_oneshot_close (rx.shot);
          main_won = FALSE;
        }
      else
        main_won = ws_oneshot_send (rx.shot, GUINT_TO_POINTER (2 * i + 2));
      g_assert_true (ws_join_handle_wait (r, NULL));
      g_assert_true (ws_join_handle_wait (t, NULL));
      ws_join_handle_free (r);
      ws_join_handle_free (t);

      if (close && !tx.sent)
        {
          g_assert_error (rx.error, WS_ERROR, WS_ERROR_CLOSED);
          g_assert_null (rx.item);
          g_clear_error (&rx.error);
        }
      else
        {
          g_assert_true (main_won != tx.sent);
          g_assert_no_error (rx.error);
          g_assert_cmpuint (GPOINTER_TO_UINT (rx.item), ==, main_won ? 2 * i + 2 : 2 * i + 1);
        }
      /* The losing send's item; a close frees nothing of its own. */
      g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, close ? (tx.sent ? 0 : 1) : 1);
      ws_oneshot_unref (rx.shot);
      g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, close ? (tx.sent ? 0 : 1) : 1);
    }
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* A close or a send returns with the oneshot complete, also when it lost
 * to a send still in progress on another worker: a task spawned after it
 * finds the outcome at its first poll. */
static WsPoll
poll_once (WsContext *cx,
           gpointer   data)
{
  ShotWait *s = data;

  /* READY at once, or the test fails: the task never polls again. */
  g_assert_cmpint (ws_oneshot_poll (s->shot, cx, &s->item, &s->error), ==, WS_POLL_READY);
  return WS_POLL_READY;
}

static void
test_race_outcome_in_place (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);

  for (guint i = 0; i < RACE_ROUNDS; i++)
    {
      ShotWait rx = { ws_oneshot_new (ws_test_count_destroy) };
      RaceSend tx = { rx.shot, 1, FALSE };
      WsJoinHandle *t = ws_runtime_spawn_joinable (rt, race_send, &tx, NULL);
      WsJoinHandle *r;
      gboolean sent = FALSE;

      if (i % 2 == 0)
        ws_oneshot_close (rx.shot);
      else
        sent = ws_oneshot_send (rx.shot, GUINT_TO_POINTER (2));
      r = ws_runtime_spawn_joinable (rt, poll_once, &rx, NULL);
      g_assert_true (ws_join_handle_wait (r, NULL));
      g_assert_true (ws_join_handle_wait (t, NULL));
      ws_join_handle_free (r);
      ws_join_handle_free (t);

      if (tx.sent || sent)
        g_assert_cmpuint (GPOINTER_TO_UINT (rx.item), ==, tx.sent ? 1 : 2);
      else
        g_assert_error (rx.error, WS_ERROR, WS_ERROR_CLOSED);
      g_clear_error (&rx.error);
      ws_oneshot_unref (rx.shot);
    }
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Two tasks poll one oneshot at once, each polling again as soon as it
 * can (each poll replaces the other's waker), while this thread sends:
 * one of them gets the item, the other WS_ERROR_CLOSED, never both the
 * item. */
typedef struct
{
  WsOneshot *shot;
  gpointer   item;
  GError    *error;
} Repoll;

static WsPoll
repoll (WsContext *cx,
        gpointer   data)
{
  Repoll *p = data;

  if (ws_oneshot_poll (p->shot, cx, &p->item, &p->error) == WS_POLL_READY)
    return WS_POLL_READY;
  return ws_context_yield (cx);
}

static void
test_race_two_receivers (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);

  for (guint i = 0; i < RACE_ROUNDS; i++)
    {
      WsOneshot *shot = ws_oneshot_new (ws_test_count_destroy);
      Repoll a = { shot }, b = { shot };
      WsJoinHandle *ha = ws_runtime_spawn_joinable (rt, repoll, &a, NULL);
      WsJoinHandle *hb = ws_runtime_spawn_joinable (rt, repoll, &b, NULL);

      ws_test_reset_counters ();
      g_assert_true (ws_oneshot_send (shot, GUINT_TO_POINTER (i + 1)));
      g_assert_true (ws_join_handle_wait (ha, NULL));
      g_assert_true (ws_join_handle_wait (hb, NULL));
      ws_join_handle_free (ha);
      ws_join_handle_free (hb);

      Repoll *got = a.item != NULL ? &a : &b, *other = a.item != NULL ? &b : &a;

      g_assert_cmpuint (GPOINTER_TO_UINT (got->item), ==, i + 1);
      g_assert_no_error (got->error);
      g_assert_null (other->item);
      g_assert_error (other->error, WS_ERROR, WS_ERROR_CLOSED);
      g_clear_error (&a.error);
      g_clear_error (&b.error);
      ws_oneshot_unref (shot);
      g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 0);
    }
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

WS_TEST_MAIN ({ "/oneshot/send-and-close", test_send_and_close },
              { "/oneshot/receive-async", test_receive_async },
              { "/oneshot/receive-async-cancelled", test_receive_async_cancelled },
              { "/oneshot/receive-async-replaced", test_receive_async_replaced },
              { "/oneshot/race-send-close-poll", test_race_send_close_poll },
              { "/oneshot/race-outcome-in-place", test_race_outcome_in_place },
              { "/oneshot/race-two-receivers", test_race_two_receivers })
