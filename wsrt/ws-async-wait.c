/* ws-async-wait.c: batched delivery of async completions to main contexts
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A `_async()` callback runs on the thread-default context of its caller,
 * exactly once, never from inside the call, also when cancelled
 * (doc/architecture.md, "Rules: main contexts").
 * Completions bound for one context are batched through one GSource per
 * context (found again with g_main_context_find_source_by_funcs_user_data,
 * so the context owns it and nothing else keeps the context alive), not one
 * idle source per operation.
 *
 * A WsAsyncWait is at once the waker the core wakes, the GAsyncResult the
 * callback receives, and the queue entry: one allocation per wait.
 */

#include "config.h"

#include <stdatomic.h>

#include "ws-async-wait-private.h"
#include "ws-lock-private.h"
#include "ws-raw-task-private.h"

struct _WsAsyncWait
{
  GObject               parent_instance;
  WsWaker               waker;          /* woken by the core */
  GObject              *source_object;
  gpointer              source_tag;
  GCancellable         *cancellable;
  gulong                cancelled_id;   /* disconnected on the context */
  GAsyncReadyCallback   callback;
  gpointer              user_data;
  GMainContext         *context;
  _Atomic gint          state;          /* PENDING, QUEUED */
  gboolean              cancelled;      /* set before queueing */
  WsAsyncWait          *next;           /* in the delivery queue */
};

enum
{
  WAIT_PENDING,
  WAIT_QUEUED,
};

typedef struct
{
  GSource      parent;
  WsLock       lock;
  WsAsyncWait *head;
  WsAsyncWait *tail;
} DeliverySource;

static void async_result_iface_init (GAsyncResultIface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (WsAsyncWait, ws_async_wait, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (G_TYPE_ASYNC_RESULT, async_result_iface_init))

/* Serialises finding-or-creating the delivery source of a context. */
static WsLock registry_lock = { PTHREAD_MUTEX_INITIALIZER };

static gboolean
delivery_dispatch (GSource     *source,
                   GSourceFunc  callback,
                   gpointer     user_data)
{
  DeliverySource *ds = (DeliverySource *) source;
  WsAsyncWait *batch;

  g_source_set_ready_time (source, -1);

  ws_lock_lock (&ds->lock);
  batch = ds->head;
  ds->head = ds->tail = NULL;
  ws_lock_unlock (&ds->lock);

  while (batch != NULL)
    {
      WsAsyncWait *w = batch;

      batch = w->next;
      w->next = NULL;

      /* Outside the cancelled handler, so disconnecting is safe. */
      if (w->cancelled_id != 0)
        {
          g_cancellable_disconnect (w->cancellable, w->cancelled_id);
          w->cancelled_id = 0;
        }
      if (w->callback != NULL)
        w->callback (w->source_object, G_ASYNC_RESULT (w), w->user_data);
      g_object_unref (w);        /* the queue's reference */
    }

  return G_SOURCE_CONTINUE;
}

static void
delivery_finalize (GSource *source)
{
  DeliverySource *ds = (DeliverySource *) source;

  /* The context went away with completions queued: drop them. */
  while (ds->head != NULL)
    {
      WsAsyncWait *w = ds->head;

      ds->head = w->next;
      g_object_unref (w);
    }
  ws_lock_clear (&ds->lock);
}

static GSourceFuncs delivery_funcs = {
  NULL, NULL, delivery_dispatch, delivery_finalize, NULL, NULL,
};

static gboolean
delivery_no_callback (gpointer data)
{
  return G_SOURCE_CONTINUE;
}

static GSource *
get_delivery_source (GMainContext *context)
{
  GSource *source;

  ws_lock_lock (&registry_lock);
  source = g_main_context_find_source_by_funcs_user_data (context, &delivery_funcs, NULL);
  if (source != NULL)
    g_source_ref (source);
  else
    {
      source = g_source_new (&delivery_funcs, sizeof (DeliverySource));
      ws_lock_init (&((DeliverySource *) source)->lock);
      /* find_source_by_funcs_user_data() matches on callback data. */
      g_source_set_callback (source, delivery_no_callback, NULL, NULL);
      g_source_set_static_name (source, "[wsrt] completions");
      g_source_set_priority (source, G_PRIORITY_DEFAULT);
      g_source_attach (source, context);
    }
  ws_lock_unlock (&registry_lock);

  return source;
}

/* Queues @self for its callback; exactly once. Any thread. */
static void
queue_delivery (WsAsyncWait *self,
                gboolean     cancelled)
{
  gint expected = WAIT_PENDING;
  GSource *source;
  DeliverySource *ds;
  gboolean was_empty;

  /* AcqRel: the winner's write of `cancelled` is published to the
   * dispatcher through the queue lock below. */
  if (!atomic_compare_exchange_strong_explicit (&self->state, &expected, WAIT_QUEUED,
                                                memory_order_acq_rel,
                                                memory_order_relaxed))
    return;

  self->cancelled = cancelled;
  g_object_ref (self);

  source = get_delivery_source (self->context);
  ds = (DeliverySource *) source;
  ws_lock_lock (&ds->lock);
  was_empty = ds->head == NULL;
  if (ds->tail != NULL)
    ds->tail->next = self;
  else
    ds->head = self;
  ds->tail = self;
  ws_lock_unlock (&ds->lock);

  if (was_empty)
    g_source_set_ready_time (source, 0);
  g_source_unref (source);
}

static void
waker_wake (WsWaker *waker)
{
  WsAsyncWait *self = (WsAsyncWait *) ((guint8 *) waker - G_STRUCT_OFFSET (WsAsyncWait, waker));

  queue_delivery (self, FALSE);
}

static void
waker_ref (WsWaker *waker)
{
  g_object_ref ((guint8 *) waker - G_STRUCT_OFFSET (WsAsyncWait, waker));
}

static void
waker_unref (WsWaker *waker)
{
  g_object_unref ((guint8 *) waker - G_STRUCT_OFFSET (WsAsyncWait, waker));
}

static const WsWakerVTable wait_waker_vtable = {
  waker_wake,
  waker_ref,
  waker_unref,
};

static void
on_cancelled (GCancellable *cancellable,
              gpointer      data)
{
  queue_delivery (data, TRUE);
}

static GObject *
get_source_object (GAsyncResult *result)
{
  WsAsyncWait *self = WS_ASYNC_WAIT (result);

  return self->source_object ? g_object_ref (self->source_object) : NULL;
}

static gpointer
get_user_data (GAsyncResult *result)
{
  return WS_ASYNC_WAIT (result)->user_data;
}

static gboolean
is_tagged (GAsyncResult *result,
           gpointer      source_tag)
{
  return WS_ASYNC_WAIT (result)->source_tag == source_tag;
}

static void
async_result_iface_init (GAsyncResultIface *iface)
{
  iface->get_source_object = get_source_object;
  iface->get_user_data = get_user_data;
  iface->is_tagged = is_tagged;
}

static void
ws_async_wait_finalize (GObject *object)
{
  WsAsyncWait *self = WS_ASYNC_WAIT (object);

  g_assert (self->cancelled_id == 0);
  g_clear_object (&self->cancellable);
  g_clear_object (&self->source_object);
  g_main_context_unref (self->context);

  G_OBJECT_CLASS (ws_async_wait_parent_class)->finalize (object);
}

static void
ws_async_wait_class_init (WsAsyncWaitClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = ws_async_wait_finalize;
}

static void
ws_async_wait_init (WsAsyncWait *self)
{
  self->waker.vtable = &wait_waker_vtable;
  atomic_init (&self->state, WAIT_PENDING);
}

WsAsyncWait *
ws_async_wait_new (GObject             *source_object,
                   gpointer             source_tag,
                   GCancellable        *cancellable,
                   GAsyncReadyCallback  callback,
                   gpointer             user_data)
{
  WsAsyncWait *self = g_object_new (WS_TYPE_ASYNC_WAIT, NULL);

  self->source_object = source_object ? g_object_ref (source_object) : NULL;
  self->source_tag = source_tag;
  self->callback = callback;
  self->user_data = user_data;
  self->context = g_main_context_ref_thread_default ();
  if (cancellable != NULL)
    {
      self->cancellable = g_object_ref (cancellable);
      /* If already cancelled, this queues the delivery right away; it
       * still runs from the context, never from inside the caller. */
      self->cancelled_id = g_cancellable_connect (cancellable, G_CALLBACK (on_cancelled),
                                                  self, NULL);
    }
  return self;
}

WsWaker *
ws_async_wait_get_waker (WsAsyncWait *self)
{
  return &self->waker;
}

/* The awaited thing is done: deliver (unless cancelled first). */
void
ws_async_wait_complete (WsAsyncWait *self)
{
  queue_delivery (self, FALSE);
}

gboolean
ws_async_wait_is_valid (GAsyncResult *result,
                        gpointer      source_object,
                        gpointer      source_tag)
{
  return WS_IS_ASYNC_WAIT (result)
         && WS_ASYNC_WAIT (result)->source_object == source_object
         && WS_ASYNC_WAIT (result)->source_tag == source_tag;
}

gboolean
ws_async_wait_was_cancelled (WsAsyncWait *self)
{
  return self->cancelled;
}
