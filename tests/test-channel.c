/* test-channel.c: WsChannel, the bounded multi-producer multi-consumer
 * channel
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "ws-test-fixture.h"

#include <sys/syscall.h>
#include <unistd.h>

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

/* ---- channels of values ------------------------------------------------ */

/* A boxed type that counts its live copies: every copy a channel makes
 * must be freed exactly once (a second free fails the assertion in
 * test_item_free, a missing one leaves n_items_live above 0). */
typedef struct
{
  guint id;
} TestItem;

static _Atomic gint n_items_live;

GType test_item_get_type (void);

static TestItem *
test_item_new (guint id)
{
  TestItem *it = g_new (TestItem, 1);

  it->id = id;
  atomic_fetch_add (&n_items_live, 1);
  return it;
}

static TestItem *
test_item_copy (TestItem *it)
{
  return test_item_new (it->id);
}

static void
test_item_free (TestItem *it)
{
  g_assert_cmpint (atomic_fetch_sub (&n_items_live, 1), >, 0);
  g_free (it);
}

G_DEFINE_BOXED_TYPE (TestItem, test_item, test_item_copy, test_item_free)

/* A value holding a new item @id (the value owns it). */
static void
item_value_init (GValue *v,
                 guint   id)
{
  g_value_init (v, test_item_get_type ());
  g_value_take_boxed (v, test_item_new (id));
}

/* Frees a received value. */
static void
value_free (GValue *v)
{
  g_boxed_free (G_TYPE_VALUE, v);
}

static guint
item_value_id (const GValue *v)
{
  g_assert_true (G_VALUE_HOLDS (v, test_item_get_type ()));
  return ((TestItem *) g_value_get_boxed (v))->id;
}

typedef struct
{
  ChannelTest *t;
  guint        next;
  guint        end;
  GValue       value;          /* the item being sent, kept across polls */
} ValueProducer;

/* Sends items next + 1 up to end, each a TestItem that the producer owns
 * and unsets once sent (the channel sent a copy). */
static WsPoll
value_producer_func (WsContext *cx,
                     gpointer   data)
{
  ValueProducer *p = data;

  while (p->next < p->end)
    {
      g_autoptr(GError) error = NULL;

      if (!G_IS_VALUE (&p->value))
        item_value_init (&p->value, p->next + 1);
      if (ws_channel_poll_send_value (p->t->ch, cx, &p->value, &error) == WS_POLL_PENDING)
        return WS_POLL_PENDING;
      g_assert_no_error (error);
      g_value_unset (&p->value);
      p->next++;
    }
  return WS_POLL_READY;
}

static WsPoll
value_consumer_func (WsContext *cx,
                     gpointer   data)
{
  ChannelTest *t = data;

  for (;;)
    {
      g_autoptr(GError) error = NULL;
      GValue *v = GINT_TO_POINTER (1);

      if (ws_channel_poll_receive_value (t->ch, cx, &v, &error) == WS_POLL_PENDING)
        {
          g_assert_null (v);
          return WS_POLL_PENDING;
        }
      if (error != NULL)
        {
          g_assert_error (error, WS_ERROR, WS_ERROR_CLOSED);
          g_assert_null (v);
          return WS_POLL_READY;
        }
      atomic_fetch_add (&t->seen[item_value_id (v) - 1], 1);
      atomic_fetch_add (&t->received, 1);
      value_free (v);
    }
}

#define N_VALUES 20000

/* Typed items through tasks on two workers: each received once, every
 * copy freed once. */
static void
test_typed_mpmc (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  ChannelTest t = { 0 };
  ValueProducer producers[N_SIDES];
  WsTask *prod[N_SIDES];
  WsTask *cons[N_SIDES];

  atomic_store (&n_items_live, 0);
  t.ch = ws_channel_new_for_type (16, test_item_get_type ());
  g_assert_true (ws_channel_get_item_type (t.ch) == test_item_get_type ());
  t.seen = g_new0 (_Atomic guint8, N_VALUES);
  for (guint i = 0; i < N_SIDES; i++)
    {
      producers[i] = (ValueProducer) { &t, i * (N_VALUES / N_SIDES), (i + 1) * (N_VALUES / N_SIDES), G_VALUE_INIT };
      prod[i] = ws_runtime_spawn (rt, value_producer_func, &producers[i], NULL);
      cons[i] = ws_runtime_spawn (rt, value_consumer_func, &t, NULL);
    }
  ws_test_wait_all (prod, N_SIDES);
  ws_channel_close (t.ch);
  ws_test_wait_all (cons, N_SIDES);

  g_assert_cmpuint (atomic_load (&t.received), ==, N_VALUES);
  for (guint i = 0; i < N_VALUES; i++)
    if (atomic_load (&t.seen[i]) != 1)
      g_error ("item %u received %u times", i + 1, (guint) atomic_load (&t.seen[i]));
  g_assert_cmpint (atomic_load (&n_items_live), ==, 0);

  g_free ((gpointer) t.seen);
  ws_channel_unref (t.ch);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* try_send_value / try_receive_value: full, empty, closed; the caller's
 * value is never taken; a subtype goes in as the item type. */
static void
test_typed_try (void)
{
  g_autoptr(WsChannel) ch = ws_channel_new_for_type (2, G_TYPE_STRING);
  g_autoptr(WsChannel) objects = ws_channel_new_for_type (1, G_TYPE_OBJECT);
  g_autoptr(GCancellable) object = g_cancellable_new ();
  g_auto(GValue) a = G_VALUE_INIT;
  g_auto(GValue) b = G_VALUE_INIT;
  GValue *out;
  g_autoptr(GError) error = NULL;

  g_assert_true (ws_channel_get_item_type (ch) == G_TYPE_STRING);
  g_assert_null (ws_channel_try_receive_value (ch, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK);
  g_clear_error (&error);

  g_value_init (&a, G_TYPE_STRING);
  g_value_set_string (&a, "first");
  g_value_init (&b, G_TYPE_STRING);
  g_value_set_static_string (&b, "second");
  g_assert_true (ws_channel_try_send_value (ch, &a, &error));
  g_assert_no_error (error);
  g_assert_true (ws_channel_try_send_value (ch, &b, &error));
  g_assert_false (ws_channel_try_send_value (ch, &a, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK);
  g_clear_error (&error);
  g_assert_cmpuint (ws_channel_get_length (ch), ==, 2);
  /* The caller's values are still the caller's, unchanged. */
  g_assert_cmpstr (g_value_get_string (&a), ==, "first");
  g_assert_cmpstr (g_value_get_string (&b), ==, "second");

  out = ws_channel_try_receive_value (ch, &error);
  g_assert_no_error (error);
  g_assert_true (G_VALUE_TYPE (out) == G_TYPE_STRING);
  g_assert_cmpstr (g_value_get_string (out), ==, "first");
  g_assert_true (g_value_get_string (out) != g_value_get_string (&a));
  value_free (out);

  /* Closed: sends fail, what is inside still comes out, then CLOSED. */
  ws_channel_close (ch);
  g_assert_false (ws_channel_try_send_value (ch, &a, &error));
  g_assert_error (error, WS_ERROR, WS_ERROR_CLOSED);
  g_clear_error (&error);
  out = ws_channel_try_receive_value (ch, NULL);
  g_assert_cmpstr (g_value_get_string (out), ==, "second");
  value_free (out);
  g_assert_null (ws_channel_try_receive_value (ch, &error));
  g_assert_error (error, WS_ERROR, WS_ERROR_CLOSED);
  g_clear_error (&error);

  /* A GCancellable into a channel of GObject: received as G_TYPE_OBJECT,
   * the same object, and the channel's reference is the receiver's. */
  g_value_unset (&a);
  g_value_init (&a, G_TYPE_CANCELLABLE);
  g_value_set_object (&a, object);
  g_assert_true (ws_channel_try_send_value (objects, &a, NULL));
  g_value_unset (&a);
  g_assert_cmpuint (G_OBJECT (object)->ref_count, ==, 2);
  out = ws_channel_try_receive_value (objects, NULL);
  g_assert_true (G_VALUE_TYPE (out) == G_TYPE_OBJECT);
  g_assert_true (g_value_get_object (out) == (gpointer) object);
  value_free (out);
  g_assert_cmpuint (G_OBJECT (object)->ref_count, ==, 1);
}

/* Every copy of an item is freed once: received ones by the receiver,
 * queued ones by the last unref, refused ones at once. */
static void
test_typed_items_freed_once (void)
{
  WsChannel *ch;
  g_auto(GValue) v = G_VALUE_INIT;
  GValue *out;

  atomic_store (&n_items_live, 0);
  item_value_init (&v, 1);

  /* Queued items at the last unref. */
  ch = ws_channel_new_for_type (4, test_item_get_type ());
  for (guint i = 0; i < 4; i++)
    g_assert_true (ws_channel_try_send_value (ch, &v, NULL));
  g_assert_cmpint (atomic_load (&n_items_live), ==, 5);
  /* Full: the copy made for the refused send is dropped at once. */
  g_assert_false (ws_channel_try_send_value (ch, &v, NULL));
  g_assert_cmpint (atomic_load (&n_items_live), ==, 5);
  out = ws_channel_try_receive_value (ch, NULL);
  g_assert_cmpuint (item_value_id (out), ==, 1);
  value_free (out);
  g_assert_cmpint (atomic_load (&n_items_live), ==, 4);
  ws_channel_unref (ch);
  g_assert_cmpint (atomic_load (&n_items_live), ==, 1);

  /* Closed with items inside, some received after the close. */
  ch = ws_channel_new_for_type (3, test_item_get_type ());
  for (guint i = 0; i < 3; i++)
    g_assert_true (ws_channel_try_send_value (ch, &v, NULL));
  ws_channel_close (ch);
  g_assert_false (ws_channel_try_send_value (ch, &v, NULL));
  out = ws_channel_try_receive_value (ch, NULL);
  g_assert_nonnull (out);
  value_free (out);
  g_assert_cmpint (atomic_load (&n_items_live), ==, 3);
  ws_channel_unref (ch);
  g_assert_cmpint (atomic_load (&n_items_live), ==, 1);

  g_value_unset (&v);
  g_assert_cmpint (atomic_load (&n_items_live), ==, 0);
}

/* What an async send or receive callback got. */
typedef struct
{
  WsChannel *ch;
  guint      calls;
  gboolean   finish;          /* FALSE: drop the result without finishing */
  gboolean   ok;
  GValue    *value;           /* a receive's item */
  GError    *error;
} Done;

static void
done_clear (Done *d)
{
  if (d->value != NULL)
    g_boxed_free (G_TYPE_VALUE, g_steal_pointer (&d->value));
  g_clear_error (&d->error);
}

static void
sent_cb (GObject      *source,
         GAsyncResult *result,
         gpointer      data)
{
  Done *d = data;

  g_assert_null (source);
  d->calls++;
  if (d->finish)
    d->ok = ws_channel_send_finish (d->ch, result, &d->error);
}

static void
received_cb (GObject      *source,
             GAsyncResult *result,
             gpointer      data)
{
  Done *d = data;

  g_assert_null (source);
  d->calls++;
  if (d->finish)
    {
      d->value = ws_channel_receive_finish (d->ch, result, &d->error);
      d->ok = d->value != NULL;
      g_assert_true (d->ok == (d->error == NULL));
    }
}

static void
send_int_async (WsChannel    *ch,
                gint          i,
                GCancellable *cancellable,
                Done         *d)
{
  g_auto(GValue) v = G_VALUE_INIT;

  g_value_init (&v, G_TYPE_INT);
  g_value_set_int (&v, i);
  /* The value is copied: unset right after the call. */
  ws_channel_send_async (ch, &v, cancellable, sent_cb, d);
}

static void
iterate_a_few (GMainContext *ctx)
{
  for (guint i = 0; i < 5; i++)
    g_main_context_iteration (ctx, FALSE);
}

/* On a main loop: sends wait while the channel is full and receives while
 * it is empty, in order; callbacks never run inside the call. */
static void
test_async_back_pressure (void)
{
  WsTestOnContext f;
  g_autoptr(WsChannel) ch = ws_channel_new_for_type (2, G_TYPE_INT);
  Done s[4] = { { ch, 0, TRUE }, { ch, 0, TRUE }, { ch, 0, TRUE }, { ch, 0, TRUE } };
  Done r = { ch, 0, TRUE };

  ws_test_on_context_init (&f, 1);

  for (guint i = 0; i < 4; i++)
    send_int_async (ch, (gint) i + 1, NULL, &s[i]);
  /* The first two went in at once, but call back later. */
  g_assert_cmpuint (ws_channel_get_length (ch), ==, 2);
  g_assert_cmpuint (s[0].calls + s[1].calls, ==, 0);
  ws_test_iterate_until (f.ctx, s[0].calls == 1 && s[1].calls == 1);
  g_assert_true (s[0].ok && s[1].ok);
  iterate_a_few (f.ctx);
  g_assert_cmpuint (s[2].calls + s[3].calls, ==, 0);

  /* Each receive lets one more send in, in order. */
  for (gint i = 1; i <= 4; i++)
    {
      r.calls = 0;
      ws_channel_receive_async (ch, NULL, received_cb, &r);
      g_assert_cmpuint (r.calls, ==, 0);
      ws_test_iterate_until (f.ctx, r.calls == 1);
      g_assert_no_error (r.error);
      g_assert_cmpint (g_value_get_int (r.value), ==, i);
      done_clear (&r);
      if (i <= 2)
        {
          ws_test_iterate_until (f.ctx, s[i + 1].calls == 1);
          g_assert_true (s[i + 1].ok);
        }
    }
  g_assert_cmpuint (ws_channel_get_length (ch), ==, 0);

  /* A receive waits for the next send. */
  r.calls = 0;
  ws_channel_receive_async (ch, NULL, received_cb, &r);
  iterate_a_few (f.ctx);
  g_assert_cmpuint (r.calls, ==, 0);
  s[0].calls = 0;
  send_int_async (ch, 5, NULL, &s[0]);
  ws_test_iterate_until (f.ctx, r.calls == 1 && s[0].calls == 1);
  g_assert_cmpint (g_value_get_int (r.value), ==, 5);
  g_assert_cmpuint (ws_channel_get_length (ch), ==, 0);
  done_clear (&r);

  for (guint i = 0; i < 4; i++)
    {
      g_assert_no_error (s[i].error);
      done_clear (&s[i]);
    }
  ws_test_on_context_clear (&f);
}

/* A cancelled send never half-sends: the item is not in the channel and
 * its copy is freed; a send the channel took before the cancellation is
 * reported sent. */
static void
test_async_cancel_send (void)
{
  WsTestOnContext f;
  g_autoptr(WsChannel) ch = ws_channel_new_for_type (1, test_item_get_type ());
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  g_autoptr(GCancellable) cancelled = g_cancellable_new ();
  g_autoptr(GCancellable) late = g_cancellable_new ();
  g_auto(GValue) v = G_VALUE_INIT;
  GValue *out;
  Done a = { ch, 0, TRUE }, b = a, c = a;

  ws_test_on_context_init (&f, 1);
  atomic_store (&n_items_live, 0);

  item_value_init (&v, 1);
  g_assert_true (ws_channel_try_send_value (ch, &v, NULL));
  g_value_unset (&v);

  /* Full: item 2 waits, then is cancelled. */
  item_value_init (&v, 2);
  ws_channel_send_async (ch, &v, cancellable, sent_cb, &a);
  g_value_unset (&v);
  iterate_a_few (f.ctx);
  g_assert_cmpuint (a.calls, ==, 0);
  g_assert_cmpint (atomic_load (&n_items_live), ==, 2);     /* queued 1, waiting 2 */
  g_cancellable_cancel (cancellable);
  ws_test_iterate_until (f.ctx, a.calls == 1);
  g_assert_false (a.ok);
  g_assert_error (a.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpint (atomic_load (&n_items_live), ==, 1);     /* the copy of 2 went with the cancel */

  /* Only item 1 was ever in the channel. */
  out = ws_channel_try_receive_value (ch, NULL);
  g_assert_cmpuint (item_value_id (out), ==, 1);
  value_free (out);
  g_assert_null (ws_channel_try_receive_value (ch, NULL));

  /* Already cancelled: nothing is sent. */
  g_cancellable_cancel (cancelled);
  item_value_init (&v, 3);
  ws_channel_send_async (ch, &v, cancelled, sent_cb, &b);
  g_value_unset (&v);
  ws_test_iterate_until (f.ctx, b.calls == 1);
  g_assert_error (b.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpuint (ws_channel_get_length (ch), ==, 0);

  /* Taken by the channel, then cancelled before the callback: sent. */
  item_value_init (&v, 4);
  ws_channel_send_async (ch, &v, late, sent_cb, &c);
  g_value_unset (&v);
  g_cancellable_cancel (late);
  ws_test_iterate_until (f.ctx, c.calls == 1);
  g_assert_no_error (c.error);
  g_assert_true (c.ok);
  out = ws_channel_try_receive_value (ch, NULL);
  g_assert_cmpuint (item_value_id (out), ==, 4);
  value_free (out);

  done_clear (&a);
  done_clear (&b);
  done_clear (&c);
  g_assert_cmpint (atomic_load (&n_items_live), ==, 0);
  ws_test_on_context_clear (&f);
}

/* A cancelled receive takes nothing; a receive that got its item before
 * the cancellation still gives it; an item received but never finished
 * is freed with the result. */
static void
test_async_cancel_receive (void)
{
  WsTestOnContext f;
  g_autoptr(WsChannel) ch = ws_channel_new_for_type (2, test_item_get_type ());
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  g_autoptr(GCancellable) late = g_cancellable_new ();
  g_auto(GValue) v = G_VALUE_INIT;
  Done a = { ch, 0, TRUE }, b = a, c = a;

  ws_test_on_context_init (&f, 1);
  atomic_store (&n_items_live, 0);

  ws_channel_receive_async (ch, cancellable, received_cb, &a);
  iterate_a_few (f.ctx);
  g_cancellable_cancel (cancellable);
  ws_test_iterate_until (f.ctx, a.calls == 1);
  g_assert_error (a.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_null (a.value);

  /* The cancelled receiver does not take the next item. */
  item_value_init (&v, 1);
  g_assert_true (ws_channel_try_send_value (ch, &v, NULL));
  g_value_unset (&v);
  iterate_a_few (f.ctx);
  g_assert_cmpuint (ws_channel_get_length (ch), ==, 1);

  /* Received, then cancelled before the callback: the item is given. */
  ws_channel_receive_async (ch, late, received_cb, &b);
  g_cancellable_cancel (late);
  ws_test_iterate_until (f.ctx, b.calls == 1);
  g_assert_no_error (b.error);
  g_assert_cmpuint (item_value_id (b.value), ==, 1);
  done_clear (&b);
  g_assert_cmpint (atomic_load (&n_items_live), ==, 0);

  /* Received and dropped without finish: freed with the result. */
  item_value_init (&v, 2);
  g_assert_true (ws_channel_try_send_value (ch, &v, NULL));
  g_value_unset (&v);
  c.finish = FALSE;
  ws_channel_receive_async (ch, NULL, received_cb, &c);
  ws_test_iterate_until (f.ctx, c.calls == 1);
  iterate_a_few (f.ctx);
  g_assert_cmpint (atomic_load (&n_items_live), ==, 0);

  done_clear (&a);
  ws_test_on_context_clear (&f);
}

/* Closing completes every waiting async receive and send with CLOSED; a
 * waiting send's copy is freed, and what is inside still comes out. */
static void
test_async_close_while_waiting (void)
{
  WsTestOnContext f;
  g_autoptr(WsChannel) empty = ws_channel_new_for_type (1, G_TYPE_INT);
  g_autoptr(WsChannel) full = ws_channel_new_for_type (1, test_item_get_type ());
  g_auto(GValue) v = G_VALUE_INIT;
  Done r[3] = { { empty, 0, TRUE }, { empty, 0, TRUE }, { empty, 0, TRUE } };
  Done s = { full, 0, TRUE }, drain = s, last = s;

  ws_test_on_context_init (&f, 1);
  atomic_store (&n_items_live, 0);

  for (guint i = 0; i < 3; i++)
    ws_channel_receive_async (empty, NULL, received_cb, &r[i]);
  iterate_a_few (f.ctx);
  ws_channel_close (empty);
  ws_test_iterate_until (f.ctx, r[0].calls + r[1].calls + r[2].calls == 3);
  for (guint i = 0; i < 3; i++)
    {
      g_assert_error (r[i].error, WS_ERROR, WS_ERROR_CLOSED);
      g_assert_null (r[i].value);
      done_clear (&r[i]);
    }

  item_value_init (&v, 1);
  g_assert_true (ws_channel_try_send_value (full, &v, NULL));
  g_value_unset (&v);
  item_value_init (&v, 2);
  ws_channel_send_async (full, &v, NULL, sent_cb, &s);
  g_value_unset (&v);
  iterate_a_few (f.ctx);
  g_assert_cmpint (atomic_load (&n_items_live), ==, 2);
  ws_channel_close (full);
  ws_test_iterate_until (f.ctx, s.calls == 1);
  g_assert_false (s.ok);
  g_assert_error (s.error, WS_ERROR, WS_ERROR_CLOSED);
  iterate_a_few (f.ctx);
  g_assert_cmpint (atomic_load (&n_items_live), ==, 1);

  ws_channel_receive_async (full, NULL, received_cb, &drain);
  ws_test_iterate_until (f.ctx, drain.calls == 1);
  g_assert_cmpuint (item_value_id (drain.value), ==, 1);
  ws_channel_receive_async (full, NULL, received_cb, &last);
  ws_test_iterate_until (f.ctx, last.calls == 1);
  g_assert_error (last.error, WS_ERROR, WS_ERROR_CLOSED);

  done_clear (&s);
  done_clear (&drain);
  done_clear (&last);
  g_assert_cmpint (atomic_load (&n_items_live), ==, 0);
  ws_test_on_context_clear (&f);
}

typedef struct
{
  WsChannel *ch;
  guint      next;
  guint      end;
} UintProducer;

/* Sends the uints next + 1 up to end. */
static WsPoll
uint_producer_func (WsContext *cx,
                    gpointer   data)
{
  UintProducer *p = data;

  while (p->next < p->end)
    {
      g_autoptr(GError) error = NULL;
      g_auto(GValue) v = G_VALUE_INIT;

      g_value_init (&v, G_TYPE_UINT);
      g_value_set_uint (&v, p->next + 1);
      if (ws_channel_poll_send_value (p->ch, cx, &v, &error) == WS_POLL_PENDING)
        return WS_POLL_PENDING;
      g_assert_no_error (error);
      p->next++;
    }
  return WS_POLL_READY;
}

/* Receives uints until closed, adding them up. */
typedef struct
{
  WsChannel *ch;
  guint64    sum;
} UintConsumer;

static WsPoll
uint_consumer_func (WsContext *cx,
                    gpointer   data)
{
  UintConsumer *c = data;

  for (;;)
    {
      g_autoptr(GError) error = NULL;
      GValue *v;

      if (ws_channel_poll_receive_value (c->ch, cx, &v, &error) == WS_POLL_PENDING)
        return WS_POLL_PENDING;
      if (error != NULL)
        {
          g_assert_error (error, WS_ERROR, WS_ERROR_CLOSED);
          return WS_POLL_READY;
        }
      c->sum += g_value_get_uint (v);
      value_free (v);
    }
}

#define N_ASYNC 2000

/* A main loop and tasks on the workers, both ways round: the wakes cross
 * threads (a worker's send completes the main loop's receive, the main
 * loop's receive lets a worker's send in, and the other way). */
static void
test_async_with_tasks (void)
{
  WsTestOnContext f;
  g_autoptr(WsChannel) up = ws_channel_new_for_type (4, G_TYPE_UINT);
  g_autoptr(WsChannel) down = ws_channel_new_for_type (4, G_TYPE_UINT);
  UintProducer p[2] = { { up, 0, N_ASYNC / 2 }, { up, N_ASYNC / 2, N_ASYNC } };
  UintConsumer c = { down, 0 };
  WsTask *prod[2];
  g_autoptr(WsTask) cons = NULL;
  guint64 sum = 0;
  guint n = 0;
  Done r = { up, 0, TRUE };
  Done s = { down, 0, TRUE };

  ws_test_on_context_init (&f, 2);
  prod[0] = ws_runtime_spawn (f.rt, uint_producer_func, &p[0], NULL);
  prod[1] = ws_runtime_spawn (f.rt, uint_producer_func, &p[1], NULL);
  cons = ws_runtime_spawn (f.rt, uint_consumer_func, &c, NULL);

  /* Tasks to the main loop. */
  while (n < N_ASYNC)
    {
      r.calls = 0;
      ws_channel_receive_async (up, NULL, received_cb, &r);
      ws_test_iterate_until (f.ctx, r.calls == 1);
      g_assert_no_error (r.error);
      sum += g_value_get_uint (r.value);
      done_clear (&r);
      n++;
    }
  ws_test_wait_all (prod, 2);
  g_assert_cmpuint (sum, ==, (guint64) N_ASYNC * (N_ASYNC + 1) / 2);

  /* The main loop to a task. */
  for (guint i = 1; i <= N_ASYNC; i++)
    {
      g_auto(GValue) v = G_VALUE_INIT;

      g_value_init (&v, G_TYPE_UINT);
      g_value_set_uint (&v, i);
      s.calls = 0;
      ws_channel_send_async (down, &v, NULL, sent_cb, &s);
      ws_test_iterate_until (f.ctx, s.calls == 1);
      g_assert_no_error (s.error);
      g_assert_true (s.ok);
    }
  ws_channel_close (down);
  g_assert_true (ws_task_wait (cons, NULL, NULL));
  g_assert_cmpuint (c.sum, ==, (guint64) N_ASYNC * (N_ASYNC + 1) / 2);

  ws_test_on_context_clear (&f);
}

/* The wrong kind of call, or a value of the wrong type: a critical, and
 * nothing sent or received. */
typedef struct
{
  WsChannel *pointers;
  WsChannel *ints;
  gboolean   polled;
} WrongKind;

static WsPoll
wrong_kind_poll (WsContext *cx,
                 gpointer   data)
{
  WrongKind *w = data;
  g_auto(GValue) str = G_VALUE_INIT;
  GValue *out = GINT_TO_POINTER (1);
  gpointer item = GINT_TO_POINTER (1);

  g_value_init (&str, G_TYPE_STRING);
  g_value_set_static_string (&str, "not an int");

  WS_TEST_REFUSED (ws_channel_poll_send_value,
                   g_assert_cmpint (ws_channel_poll_send_value (w->pointers, cx, &str, NULL), ==, WS_POLL_READY));
  WS_TEST_REFUSED (ws_channel_poll_receive_value,
                   g_assert_cmpint (ws_channel_poll_receive_value (w->pointers, cx, &out, NULL), ==, WS_POLL_READY));
  WS_TEST_REFUSED (ws_channel_poll_send,
                   g_assert_cmpint (ws_channel_poll_send (w->ints, cx, item, NULL), ==, WS_POLL_READY));
  WS_TEST_REFUSED (ws_channel_poll_receive,
                   g_assert_cmpint (ws_channel_poll_receive (w->ints, cx, &item, NULL), ==, WS_POLL_READY));
  g_assert_null (item);
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL,
                         "*ws_channel_poll_send_value*gchararray*channel of gint*");
  g_assert_cmpint (ws_channel_poll_send_value (w->ints, cx, &str, NULL), ==, WS_POLL_READY);
  g_test_assert_expected_messages ();
  {
    /* READY with nothing sent carries the error that says so. */
    g_autoptr(GError) error = NULL;

    g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL,
                           "*ws_channel_poll_send_value*gchararray*channel of gint*");
    g_assert_cmpint (ws_channel_poll_send_value (w->ints, cx, &str, &error), ==, WS_POLL_READY);
    g_test_assert_expected_messages ();
    g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
    g_assert_nonnull (strstr (error->message, "gchararray"));
  }
  g_assert_null (out);
  w->polled = TRUE;
  return WS_POLL_READY;
}

static void
test_wrong_kind (void)
{
  WsTestOnContext f;
  WrongKind w = { NULL, };
  g_autoptr(WsTask) local = NULL;
  g_auto(GValue) str = G_VALUE_INIT;
  g_auto(GValue) set = G_VALUE_INIT;
  GValue *out;
  gpointer item = NULL;
  /* The refused async calls call back (with an error that
   * /channel/async-refused-calls-back checks): counted, not finished. */
  Done d = { NULL, 0, FALSE };

  ws_test_on_context_init (&f, 1);
  w.pointers = ws_channel_new (1, NULL);
  w.ints = ws_channel_new_for_type (1, G_TYPE_INT);
  g_value_init (&str, G_TYPE_STRING);
  g_value_set_static_string (&str, "not an int");
  g_value_init (&set, G_TYPE_INT);

  WS_TEST_REFUSED (ws_channel_new_for_type, g_assert_null (ws_channel_new_for_type (1, G_TYPE_INVALID)));
  WS_TEST_REFUSED (ws_channel_new_for_type, g_assert_null (ws_channel_new_for_type (1, G_TYPE_NONE)));
  WS_TEST_REFUSED (ws_channel_new_for_type, g_assert_null (ws_channel_new_for_type (0, G_TYPE_INT)));
  g_assert_true (ws_channel_get_item_type (w.pointers) == G_TYPE_INVALID);

  /* The value API on a channel of pointers. */
  WS_TEST_REFUSED (ws_channel_try_send_value, g_assert_false (ws_channel_try_send_value (w.pointers, &set, NULL)));
  WS_TEST_REFUSED (ws_channel_try_receive_value, g_assert_null (ws_channel_try_receive_value (w.pointers, NULL)));
  WS_TEST_REFUSED (ws_channel_send_async, ws_channel_send_async (w.pointers, &set, NULL, sent_cb, &d));
  WS_TEST_REFUSED (ws_channel_receive_async, ws_channel_receive_async (w.pointers, NULL, received_cb, &d));
  {
    /* The blocking forms set an error too, for code that prints it. */
    g_autoptr(GError) error = NULL;

    WS_TEST_REFUSED (ws_channel_send_value, g_assert_false (ws_channel_send_value (w.pointers, &set, NULL, &error)));
    g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
    g_clear_error (&error);
    WS_TEST_REFUSED (ws_channel_receive_value, g_assert_null (ws_channel_receive_value (w.pointers, NULL, &error)));
    g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
  }
  g_assert_cmpuint (ws_channel_get_length (w.pointers), ==, 0);

  /* The pointer API on a channel of values. */
  WS_TEST_REFUSED (ws_channel_try_send, g_assert_false (ws_channel_try_send (w.ints, GINT_TO_POINTER (1), NULL)));
  item = GINT_TO_POINTER (1);
  WS_TEST_REFUSED (ws_channel_try_receive, g_assert_false (ws_channel_try_receive (w.ints, &item, NULL)));
  g_assert_null (item);
  {
    g_autoptr(GError) error = NULL;

    WS_TEST_REFUSED (ws_channel_send, g_assert_false (ws_channel_send (w.ints, GINT_TO_POINTER (1), NULL, &error)));
    g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
    g_clear_error (&error);
    WS_TEST_REFUSED (ws_channel_receive, g_assert_null (ws_channel_receive (w.ints, NULL, &error)));
    g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
    g_clear_error (&error);
    g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*ws_channel_send_value*gchararray*channel of gint*");
    g_assert_false (ws_channel_send_value (w.ints, &str, NULL, &error));
    g_test_assert_expected_messages ();
    g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
  }

  /* A value of the wrong type: the message names both, and so does the
   * error, for code that prints error->message after a FALSE. */
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*ws_channel_try_send_value*gchararray*channel of gint*");
  g_assert_false (ws_channel_try_send_value (w.ints, &str, NULL));
  g_test_assert_expected_messages ();
  {
    g_autoptr(GError) error = NULL;

    g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*ws_channel_try_send_value*gchararray*channel of gint*");
    g_assert_false (ws_channel_try_send_value (w.ints, &str, &error));
    g_test_assert_expected_messages ();
    g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
    g_assert_nonnull (strstr (error->message, "gchararray"));
    g_assert_nonnull (strstr (error->message, "gint"));
    g_clear_error (&error);
    /* The blocking send's error names them too. */
    g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*ws_channel_send_value*gchararray*channel of gint*");
    g_assert_false (ws_channel_send_value (w.ints, &str, NULL, &error));
    g_test_assert_expected_messages ();
    g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
    g_assert_nonnull (strstr (error->message, "gchararray"));
    g_assert_nonnull (strstr (error->message, "gint"));
  }
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*ws_channel_send_async*gchararray*channel of gint*");
  ws_channel_send_async (w.ints, &str, NULL, sent_cb, &d);
  g_test_assert_expected_messages ();
  WS_TEST_REFUSED (ws_channel_try_send_value, g_assert_false (ws_channel_try_send_value (w.ints, NULL, NULL)));
  g_assert_cmpuint (ws_channel_get_length (w.ints), ==, 0);

  /* The right kind and type still work. */
  g_assert_true (ws_channel_try_send_value (w.ints, &set, NULL));
  out = ws_channel_try_receive_value (w.ints, NULL);
  g_assert_cmpint (g_value_get_int (out), ==, 0);
  value_free (out);

  /* The poll calls, in a local task on this thread. */
  local = ws_runtime_spawn_local (f.rt, NULL, wrong_kind_poll, &w, NULL);
  /* Its assertions abort the program if they fail. */
  ws_test_iterate_until (f.ctx, ws_task_is_finished (local));
  g_assert_true (w.polled);

  ws_test_iterate_until (f.ctx, d.calls == 3);
  iterate_a_few (f.ctx);
  g_assert_cmpuint (d.calls, ==, 3);
  ws_channel_unref (w.pointers);
  ws_channel_unref (w.ints);
  ws_test_on_context_clear (&f);
}

/* An async receive cancelled from another thread ends once, cancelled,
 * and leaves nothing behind. */
static void
on_cross_cancel_received (GObject      *source,
                          GAsyncResult *result,
                          gpointer      data)
{
  WsTestCrossCancel *c = data;

  g_assert_null (ws_channel_receive_finish (c->awaitable, result, &c->error));
  ws_test_cross_cancel_done (c);
}

static void
start_receive (WsTestCrossCancel *c,
               GCancellable      *cancellable)
{
  ws_channel_receive_async (c->awaitable, cancellable, on_cross_cancel_received, c);
}

static void
test_receive_async_cancel_from_thread (void)
{
  g_autoptr(GMainContext) context = g_main_context_new ();
  WsChannel *channel = ws_channel_new_for_type (4, G_TYPE_INT);

  g_main_context_push_thread_default (context);
  ws_test_cancel_waits_from_thread (channel, start_receive, 200);
  g_main_context_pop_thread_default (context);
  ws_channel_unref (channel);
}

/* A refused async call still calls back, with an error: an await of a
 * send of the wrong type fails instead of hanging. */
static void
on_refused (GObject      *source,
            GAsyncResult *result,
            gpointer      data)
{
  WsTestCrossCancel *c = data;

  if (g_async_result_is_tagged (result, ws_channel_send_async))
    g_assert_false (ws_channel_send_finish (c->awaitable, result, &c->error));
  else
    g_assert_null (ws_channel_receive_finish (c->awaitable, result, &c->error));
  ws_test_cross_cancel_done (c);
}

static void
test_async_refused_calls_back (void)
{
  g_autoptr(GMainContext) context = g_main_context_new ();
  WsChannel *uints = ws_channel_new_for_type (4, G_TYPE_UINT);
  WsChannel *pointers = ws_channel_new (4, NULL);
  WsTestCrossCancel send = { uints, NULL, FALSE, FALSE };
  WsTestCrossCancel receive = { pointers, NULL, FALSE, FALSE };
  GValue v = G_VALUE_INIT;

  g_main_context_push_thread_default (context);
  g_value_init (&v, G_TYPE_STRING);
  g_value_set_static_string (&v, "not a uint");
  WS_TEST_REFUSED (ws_channel_send_async,
                   ws_channel_send_async (uints, &v, NULL, on_refused, &send));
  WS_TEST_REFUSED (ws_channel_receive_async,
                   ws_channel_receive_async (pointers, NULL, on_refused, &receive));
  /* Never from inside the call. */
  g_assert_false (send.done || receive.done);
  ws_test_iterate_until (context, send.done && receive.done);
  g_assert_error (send.error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
  g_assert_error (receive.error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
  g_clear_error (&send.error);
  g_clear_error (&receive.error);
  g_value_unset (&v);
  g_main_context_pop_thread_default (context);
  ws_channel_unref (uints);
  ws_channel_unref (pointers);
}

/* ---- blocking forms, for plain threads ------------------------------ */

#define N_BLOCKING 5000

/* Whether thread @tid of this process sleeps in the kernel (its state in
 * /proc is S): a thread blocked in ws_channel_send () or receive () does,
 * in its condition variable's wait. */
static gboolean
thread_sleeps (gint tid)
{
  g_autofree char *path = g_strdup_printf ("/proc/self/task/%d/stat", tid);
  g_autofree char *stat = NULL;
  const char *end;

  if (!g_file_get_contents (path, &stat, NULL, NULL))
    return FALSE;
  /* "tid (comm) S ...": the state follows the last ')'. */
  end = strrchr (stat, ')');
  return end != NULL && end[1] == ' ' && end[2] == 'S';
}

/* A plain thread that sends 1..N_BLOCKING with the blocking call. */
typedef struct
{
  WsChannel     *ch;
  guint          n;
  gboolean       values;    /* ws_channel_send_value () */
  gboolean       close;     /* closes the channel when done */
} BlockingSender;

static gpointer
blocking_sender_thread (gpointer data)
{
  BlockingSender *b = data;

  for (guint i = 1; i <= b->n; i++)
    {
      g_autoptr(GError) error = NULL;
      gboolean sent;

      if (b->values)
        {
          g_auto(GValue) v = G_VALUE_INIT;

          g_value_init (&v, G_TYPE_UINT);
          g_value_set_uint (&v, i);
          sent = ws_channel_send_value (b->ch, &v, NULL, &error);
        }
      else
        sent = ws_channel_send (b->ch, GUINT_TO_POINTER (i), NULL, &error);
      g_assert_no_error (error);
      g_assert_true (sent);
    }
  if (b->close)
    ws_channel_close (b->ch);
  return NULL;
}

/* A local task that receives pointers in order until the channel is
 * closed, checking each is the next. */
typedef struct
{
  WsChannel *ch;
  guint      n_received;
  gboolean   closed;
} InOrder;

static WsPoll
in_order_receive (WsContext *cx,
                  gpointer   data)
{
  InOrder *o = data;

  for (;;)
    {
      g_autoptr(GError) error = NULL;
      gpointer item;

      if (ws_channel_poll_receive (o->ch, cx, &item, &error) == WS_POLL_PENDING)
        return WS_POLL_PENDING;
      if (error != NULL)
        {
          g_assert_error (error, WS_ERROR, WS_ERROR_CLOSED);
          o->closed = TRUE;
          return WS_POLL_READY;
        }
      g_assert_cmpuint (GPOINTER_TO_UINT (item), ==, ++o->n_received);
    }
}

/* Sends 1..n with poll_send, from a task on a worker. */
static WsPoll
numbers_producer (WsContext *cx,
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
  ws_channel_close (p->t->ch);
  return WS_POLL_READY;
}

/* A plain thread streams items through a small channel to a local task
 * on this thread's main context, and to an async receive on it; a task
 * on a worker streams items to this thread's blocking receive. Every
 * item arrives once, in order: the blocked side was woken each time. */
static void
test_blocking_plain_thread (void)
{
  WsTestOnContext f;

  ws_test_on_context_init (&f, 2);

  /* Pointers, to a local task. */
  {
    g_autoptr(WsChannel) ch = ws_channel_new (2, NULL);
    BlockingSender b = { ch, N_BLOCKING, FALSE, TRUE };
    InOrder o = { ch, 0, FALSE };
    g_autoptr(WsTask) local = ws_runtime_spawn_local (f.rt, NULL, in_order_receive, &o, NULL);
    GThread *sender = g_thread_new ("blocking-sender", blocking_sender_thread, &b);

    ws_test_iterate_until (f.ctx, ws_task_is_finished (local));
    g_thread_join (sender);
    g_assert_true (o.closed);
    g_assert_cmpuint (o.n_received, ==, N_BLOCKING);
  }

  /* Values, to an async receive. */
  {
    g_autoptr(WsChannel) ch = ws_channel_new_for_type (2, G_TYPE_UINT);
    BlockingSender b = { ch, N_BLOCKING, TRUE, TRUE };
    GThread *sender = g_thread_new ("blocking-sender", blocking_sender_thread, &b);
    Done r = { ch, 0, TRUE };
    guint n = 0;

    for (;;)
      {
        r.calls = 0;
        ws_channel_receive_async (ch, NULL, received_cb, &r);
        ws_test_iterate_until (f.ctx, r.calls == 1);
        if (!r.ok)
          break;
        g_assert_cmpuint (g_value_get_uint (r.value), ==, ++n);
        done_clear (&r);
      }
    g_assert_error (r.error, WS_ERROR, WS_ERROR_CLOSED);
    done_clear (&r);
    g_thread_join (sender);
    g_assert_cmpuint (n, ==, N_BLOCKING);
  }

  /* From a task, to this thread's blocking receive. */
  {
    ChannelTest t = { ws_channel_new (2, NULL), };
    Producer p = { &t, 0, N_BLOCKING };
    g_autoptr(WsTask) prod = ws_runtime_spawn (f.rt, numbers_producer, &p, NULL);
    g_autoptr(GError) error = NULL;
    guint n = 0;
    gpointer item;

    while ((item = ws_channel_receive (t.ch, NULL, &error)) != NULL)
      g_assert_cmpuint (GPOINTER_TO_UINT (item), ==, ++n);
    g_assert_error (error, WS_ERROR, WS_ERROR_CLOSED);
    g_assert_cmpuint (n, ==, N_BLOCKING);
    g_assert_true (ws_task_wait (prod, NULL, NULL));
    ws_channel_unref (t.ch);
  }

  ws_test_on_context_clear (&f);
}

/* A blocking job sends values as it makes them; a fiber on a worker
 * takes them as they come, and another job takes the fiber's answers
 * with the blocking receive. */
typedef struct
{
  WsChannel *results;     /* job -> fiber */
  WsChannel *answers;     /* fiber -> job */
  guint64    fiber_sum;
  guint64    job_sum;
} Pipeline;

static WsPoll
sending_job (WsContext *cx,
             gpointer   data)
{
  Pipeline *p = data;

  for (guint i = 1; i <= N_BLOCKING; i++)
    {
      g_autoptr(GError) error = NULL;
      g_auto(GValue) v = G_VALUE_INIT;

      g_value_init (&v, G_TYPE_UINT);
      g_value_set_uint (&v, i);
      g_assert_true (ws_channel_send_value (p->results, &v, NULL, &error));
      g_assert_no_error (error);
    }
  ws_channel_close (p->results);
  return WS_POLL_READY;
}

static WsPoll
receiving_job (WsContext *cx,
               gpointer   data)
{
  Pipeline *p = data;
  g_autoptr(GError) error = NULL;
  GValue *v;

  while ((v = ws_channel_receive_value (p->answers, NULL, &error)) != NULL)
    {
      p->job_sum += g_value_get_uint (v);
      value_free (v);
    }
  g_assert_error (error, WS_ERROR, WS_ERROR_CLOSED);
  return WS_POLL_READY;
}

static void
taking_fiber (WsContext *cx,
              gpointer   data)
{
  Pipeline *p = data;

  for (;;)
    {
      g_autoptr(GError) error = NULL;
      GValue *v = NULL;

      g_assert_true (WS_FIBER_AWAIT (cx, ws_channel_poll_receive_value (p->results, cx, &v, &error)));
      if (v == NULL)
        {
          g_assert_error (error, WS_ERROR, WS_ERROR_CLOSED);
          break;
        }
      p->fiber_sum += g_value_get_uint (v);
      g_assert_true (WS_FIBER_AWAIT (cx, ws_channel_poll_send_value (p->answers, cx, v, &error)));
      g_assert_no_error (error);
      value_free (v);
    }
  ws_channel_close (p->answers);
}

static void
test_blocking_job_to_fiber (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  Pipeline p = { ws_channel_new_for_type (2, G_TYPE_UINT), ws_channel_new_for_type (2, G_TYPE_UINT), 0, 0 };
  WsTask *tasks[3];

  tasks[0] = ws_runtime_spawn_blocking (rt, receiving_job, &p, NULL);
  tasks[1] = ws_runtime_spawn_fiber (rt, taking_fiber, &p, NULL);
  tasks[2] = ws_runtime_spawn_blocking (rt, sending_job, &p, NULL);
  ws_test_wait_all (tasks, G_N_ELEMENTS (tasks));
  g_assert_cmpuint (p.fiber_sum, ==, (guint64) N_BLOCKING * (N_BLOCKING + 1) / 2);
  g_assert_cmpuint (p.job_sum, ==, p.fiber_sum);
  ws_channel_unref (p.results);
  ws_channel_unref (p.answers);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* One blocking call on another thread, to be cancelled or closed while
 * it sleeps. */
typedef struct
{
  WsChannel    *ch;
  gboolean      send;
  gboolean      values;
  GCancellable *cancellable;
  _Atomic gint  tid;
  gboolean      ok;
  GValue       *received;
  gpointer      received_item;
  GError       *error;
} Blocked;

static gpointer
blocked_thread (gpointer data)
{
  Blocked *b = data;

  atomic_store (&b->tid, (gint) syscall (SYS_gettid));
  if (b->send && b->values)
    {
      g_auto(GValue) v = G_VALUE_INIT;

      g_value_init (&v, G_TYPE_UINT);
      g_value_set_uint (&v, 7);
      b->ok = ws_channel_send_value (b->ch, &v, b->cancellable, &b->error);
    }
  else if (b->send)
    b->ok = ws_channel_send (b->ch, GUINT_TO_POINTER (7), b->cancellable, &b->error);
  else if (b->values)
    b->ok = (b->received = ws_channel_receive_value (b->ch, b->cancellable, &b->error)) != NULL;
  else
    b->ok = (b->received_item = ws_channel_receive (b->ch, b->cancellable, &b->error)) != NULL;
  return NULL;
}

/* Starts the call on a thread (the channel full for a send, empty for a
 * receive) and returns once that thread sleeps in it. */
static GThread *
start_blocked (Blocked *b)
{
  GThread *thread = g_thread_new ("blocked", blocked_thread, b);

  ws_test_wait_until (atomic_load (&b->tid) != 0 && thread_sleeps (atomic_load (&b->tid)));
  return thread;
}

/* For each of the four calls: a cancel while it sleeps ends it with
 * G_IO_ERROR_CANCELLED and leaves the channel as it was (a send's item
 * was not taken, nor freed: the channel's destroy notify never ran); a
 * close while it sleeps ends it with WS_ERROR_CLOSED the same way. Then
 * the channel still works for others. */
static void
test_blocking_cancel_and_close (void)
{
  for (guint kind = 0; kind < 4; kind++)
    for (guint by_close = 0; by_close < 2; by_close++)
      {
        gboolean send = kind < 2;
        gboolean values = kind % 2;
        g_autoptr(GCancellable) cancellable = g_cancellable_new ();
        WsChannel *ch;
        Blocked b = { NULL, };
        GThread *thread;

        ws_test_reset_counters ();
        ch = values ? ws_channel_new_for_type (1, G_TYPE_UINT) : ws_channel_new (1, ws_test_count_destroy);
        if (send)
          {
            /* Full: the send must wait. */
            if (values)
              {
                g_auto(GValue) v = G_VALUE_INIT;

                g_value_init (&v, G_TYPE_UINT);
                g_value_set_uint (&v, 1);
                g_assert_true (ws_channel_try_send_value (ch, &v, NULL));
              }
            else
              g_assert_true (ws_channel_try_send (ch, GUINT_TO_POINTER (1), NULL));
          }
        b = (Blocked) { ch, send, values, cancellable, 0, };
        thread = start_blocked (&b);
        if (by_close)
          ws_channel_close (ch);
        else
          g_cancellable_cancel (cancellable);
        g_thread_join (thread);

        g_assert_false (b.ok);
        g_assert_null (b.received);
        g_assert_null (b.received_item);
        if (by_close)
          g_assert_error (b.error, WS_ERROR, WS_ERROR_CLOSED);
        else
          g_assert_error (b.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
        g_clear_error (&b.error);
        /* The channel is as it was: the first item alone, for a send. */
        g_assert_cmpuint (ws_channel_get_length (ch), ==, send ? 1 : 0);
        g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 0);

        if (!by_close)
          {
            /* Still usable: a new call completes at once. */
            g_autoptr(GError) error = NULL;

            if (values)
              {
                g_auto(GValue) v = G_VALUE_INIT;
                GValue *out;

                g_value_init (&v, G_TYPE_UINT);
                g_value_set_uint (&v, 2);
                if (send)
                  {
                    out = ws_channel_receive_value (ch, NULL, &error);
                    g_assert_cmpuint (g_value_get_uint (out), ==, 1);
                    value_free (out);
                  }
                g_assert_true (ws_channel_send_value (ch, &v, NULL, &error));
                out = ws_channel_receive_value (ch, NULL, &error);
                g_assert_no_error (error);
                g_assert_cmpuint (g_value_get_uint (out), ==, 2);
                value_free (out);
              }
            else
              {
                if (send)
                  g_assert_cmpuint (GPOINTER_TO_UINT (ws_channel_receive (ch, NULL, &error)), ==, 1);
                g_assert_true (ws_channel_send (ch, GUINT_TO_POINTER (2), NULL, &error));
                g_assert_cmpuint (GPOINTER_TO_UINT (ws_channel_receive (ch, NULL, &error)), ==, 2);
                g_assert_no_error (error);
              }
          }
        else if (send)
          {
            /* Closed: what is inside is still received, then the end. */
            g_autoptr(GError) error = NULL;

            if (values)
              {
                GValue *out = ws_channel_receive_value (ch, NULL, &error);

                g_assert_cmpuint (g_value_get_uint (out), ==, 1);
                value_free (out);
                g_assert_null (ws_channel_receive_value (ch, NULL, &error));
              }
            else
              {
                g_assert_cmpuint (GPOINTER_TO_UINT (ws_channel_receive (ch, NULL, &error)), ==, 1);
                g_assert_null (ws_channel_receive (ch, NULL, &error));
              }
            g_assert_error (error, WS_ERROR, WS_ERROR_CLOSED);
          }
        ws_channel_unref (ch);
      }
}

/* A cancellable cancelled before the call: nothing is sent or received,
 * even where the call could complete at once. */
static void
test_blocking_cancelled_before (void)
{
  g_autoptr(WsChannel) ch = ws_channel_new (2, NULL);
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  g_autoptr(GError) error = NULL;

  g_assert_true (ws_channel_try_send (ch, GUINT_TO_POINTER (1), NULL));
  g_cancellable_cancel (cancellable);
  g_assert_false (ws_channel_send (ch, GUINT_TO_POINTER (2), cancellable, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&error);
  g_assert_null (ws_channel_receive (ch, cancellable, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpuint (ws_channel_get_length (ch), ==, 1);
}

/* On a worker the four calls are refused with WS_ERROR_WOULD_BLOCK, at
 * once, whether the channel could take or give an item or not: a send's
 * item is not taken, a receive takes nothing. In a poll function and in
 * a fiber (both run on a worker). */
typedef struct
{
  WsChannel *pointers;
  WsChannel *values;
  guint      n_refused;
} OnWorker;

static void
check_refused_on_worker (OnWorker *w)
{
  g_auto(GValue) v = G_VALUE_INIT;
  g_autoptr(GError) error = NULL;

  g_value_init (&v, G_TYPE_UINT);
  g_value_set_uint (&v, 9);
  g_assert_false (ws_channel_send (w->pointers, GUINT_TO_POINTER (9), NULL, &error));
  g_assert_error (error, WS_ERROR, WS_ERROR_WOULD_BLOCK);
  g_assert_nonnull (strstr (error->message, "ws_channel_poll_send"));
  g_clear_error (&error);
  g_assert_null (ws_channel_receive (w->pointers, NULL, &error));
  g_assert_error (error, WS_ERROR, WS_ERROR_WOULD_BLOCK);
  g_clear_error (&error);
  g_assert_false (ws_channel_send_value (w->values, &v, NULL, &error));
  g_assert_error (error, WS_ERROR, WS_ERROR_WOULD_BLOCK);
  g_clear_error (&error);
  g_assert_null (ws_channel_receive_value (w->values, NULL, &error));
  g_assert_error (error, WS_ERROR, WS_ERROR_WOULD_BLOCK);
  w->n_refused += 4;
}

static WsPoll
refused_in_poll (WsContext *cx,
                 gpointer   data)
{
  check_refused_on_worker (data);
  return WS_POLL_READY;
}

static void
refused_in_fiber (WsContext *cx,
                  gpointer   data)
{
  check_refused_on_worker (data);
}

static void
test_blocking_refused_on_worker (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  OnWorker w = { ws_channel_new (4, ws_test_count_destroy), ws_channel_new_for_type (4, G_TYPE_UINT), 0 };
  g_auto(GValue) v = G_VALUE_INIT;
  g_autoptr(WsTask) in_poll = NULL;
  g_autoptr(WsTask) in_fiber = NULL;

  ws_test_reset_counters ();
  /* A receive that could take an item is refused all the same. */
  g_value_init (&v, G_TYPE_UINT);
  g_value_set_uint (&v, 1);
  g_assert_true (ws_channel_try_send (w.pointers, GUINT_TO_POINTER (1), NULL));
  g_assert_true (ws_channel_try_send_value (w.values, &v, NULL));

  in_poll = ws_runtime_spawn (rt, refused_in_poll, &w, NULL);
  g_assert_true (ws_task_wait (in_poll, NULL, NULL));
  in_fiber = ws_runtime_spawn_fiber (rt, refused_in_fiber, &w, NULL);
  g_assert_true (ws_task_wait (in_fiber, NULL, NULL));
  g_assert_cmpuint (w.n_refused, ==, 8);
  g_assert_cmpuint (ws_channel_get_length (w.pointers), ==, 1);
  g_assert_cmpuint (ws_channel_get_length (w.values), ==, 1);
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 0);
  ws_channel_unref (w.pointers);
  ws_channel_unref (w.values);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

WS_TEST_MAIN ({ "/channel/mpmc", test_mpmc },
              { "/channel/receive-async-cancel-from-thread",
                test_receive_async_cancel_from_thread },
              { "/channel/async-refused-calls-back", test_async_refused_calls_back },
              { "/channel/back-pressure-and-close", test_back_pressure_and_close },
              { "/channel/typed-mpmc", test_typed_mpmc },
              { "/channel/typed-try", test_typed_try },
              { "/channel/typed-items-freed-once", test_typed_items_freed_once },
              { "/channel/async-back-pressure", test_async_back_pressure },
              { "/channel/async-cancel-send", test_async_cancel_send },
              { "/channel/async-cancel-receive", test_async_cancel_receive },
              { "/channel/async-close-while-waiting", test_async_close_while_waiting },
              { "/channel/async-with-tasks", test_async_with_tasks },
              { "/channel/wrong-kind", test_wrong_kind },
              { "/channel/blocking-plain-thread", test_blocking_plain_thread },
              { "/channel/blocking-job-to-fiber", test_blocking_job_to_fiber },
              { "/channel/blocking-cancel-and-close", test_blocking_cancel_and_close },
              { "/channel/blocking-cancelled-before", test_blocking_cancelled_before },
              { "/channel/blocking-refused-on-worker", test_blocking_refused_on_worker })
