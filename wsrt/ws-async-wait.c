/* ws-async-wait.c: batched delivery of async completions to main contexts
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A `_async()` callback runs on the thread-default context of its caller,
 * exactly once, never from inside the call, also when cancelled
 * (doc/architecture.md, "Rules: main contexts").
 * Completions bound for one context are batched through one GSource per
 * context (found with g_main_context_find_source_by_funcs_user_data, so
 * the context owns it and nothing else keeps the context alive), not one
 * idle source per operation.
 *
 * The source queues plain items (WsDeliveryItem: a link and a class with
 * deliver and discard), embedded in what is delivered: no GObject per
 * item. Three kinds are queued:
 *
 *  - a WsAsyncWait, the GObject that is at once the waker the core wakes,
 *    the GAsyncResult and the item: for waits with a GCancellable and for
 *    the task-group waits;
 *  - the wait a WsTask embeds for a ws_task_wait_async() without a
 *    GCancellable, whose GAsyncResult is the task itself (ws-task.c);
 *  - a Completion (below), the tail of a task spawned with
 *    ws_runtime_spawn_with_callback(), in the task's own memory: the
 *    task's join waker and the item, so the task itself is what is queued.
 *
 * Lifetime. Every queued item holds a reference on its context, dropped
 * only once it is delivered (or discarded). So while an item is queued
 * its context lives, and with it the source, which stays attached until
 * the context is finalized: a pusher needs no reference of its own on the
 * source. After its unlock, a pusher touches the source only if the queue
 * was empty, to set the ready time; its item cannot be dispatched before
 * that call takes the context lock (the dispatch clears the ready time
 * before it takes the batch, and nobody else arms it while the item is
 * queued), so the item's reference still keeps the context alive there.
 *
 * Finding the source: a per-thread cache of the last context looked up
 * and its source (holding a reference on the source, not the context).
 * A hit needs the same context pointer and a source not destroyed: a
 * context's finalize destroys its sources before its memory can be reused
 * by another context at the same address, so a live cached source means
 * a live, identical context. A miss takes the registry lock and GLib's
 * lookup, which walks the context's sources.
 */

#include "config.h"

#include <stdatomic.h>

#include "ws-async-wait-private.h"
#include "ws-error.h"
#include "ws-core-private.h"

/* ---- the delivery source ------------------------------------------------ */

struct _WsDelivery
{
  GSource         parent;
  WsLock          lock;
  WsDeliveryItem *head;           /* pushed, under the lock */
  WsDeliveryItem *tail;
  /* Taken from the queue and not yet delivered: only the thread that
   * dispatches the context reads or writes it, so it needs no lock. A
   * callback that iterates the context again (a nested main loop)
   * continues from here. */
  WsDeliveryItem *batch;
};

/* Serialises finding-or-creating the delivery source of a context. */
static WsLock registry_lock = WS_LOCK_INIT;

/* Recursion: the source can recurse (g_source_set_can_recurse), so a
 * callback that runs a nested main loop on this context still gets the
 * completions queued after it. The batch taken from the queue lives in
 * the source, not on the dispatching stack: a nested dispatch delivers
 * the rest of it first, in order, then takes what was pushed since.
 * prepare and check report a batch left by an outer dispatch, which
 * GLib's ready time alone would not (it was cleared before the take). */
static gboolean
delivery_prepare (GSource *source,
                  gint    *timeout)
{
  *timeout = -1;
  return ((WsDelivery *) source)->batch != NULL;
}

static gboolean
delivery_check (GSource *source)
{
  return ((WsDelivery *) source)->batch != NULL;
}

static gboolean
delivery_dispatch (GSource     *source,
                   GSourceFunc  callback,
                   gpointer     user_data)
{
  WsDelivery *self = (WsDelivery *) source;

  /* Before taking the queue: a push that finds the queue empty after the
   * take arms the source again. */
  g_source_set_ready_time (source, -1);

  ws_lock_lock (&self->lock);
  if (self->head != NULL)
    {
      /* Append to what an outer dispatch left, keeping the order. */
      WsDeliveryItem **end = &self->batch;

      while (*end != NULL)
        end = &(*end)->next;
      *end = self->head;
      self->head = self->tail = NULL;
    }
  ws_lock_unlock (&self->lock);

  while (self->batch != NULL)
    {
      WsDeliveryItem *item = self->batch;

      self->batch = item->next;
      item->next = NULL;
      item->klass->deliver (item);
    }

  return G_SOURCE_CONTINUE;
}

static void
delivery_finalize (GSource *source)
{
  WsDelivery *self = (WsDelivery *) source;

  /* Only a source destroyed by someone else can get here with items
   * queued (each holds the context): drop them. */
  while (self->batch != NULL)
    {
      WsDeliveryItem *item = self->batch;

      self->batch = item->next;
      item->next = NULL;
      item->klass->discard (item);
    }
  while (self->head != NULL)
    {
      WsDeliveryItem *item = self->head;

      self->head = item->next;
      item->next = NULL;
      item->klass->discard (item);
    }
  ws_lock_clear (&self->lock);
}

static GSourceFuncs delivery_funcs = {
  delivery_prepare, delivery_check, delivery_dispatch, delivery_finalize, NULL, NULL,
};

static gboolean
delivery_no_callback (gpointer data)
{
  return G_SOURCE_CONTINUE;
}

/* A new reference to the delivery source of @context, made if needed. */
static GSource *
lookup_delivery_source (GMainContext *context)
{
  GSource *source;

  ws_lock_lock (&registry_lock);
  source = g_main_context_find_source_by_funcs_user_data (context, &delivery_funcs, NULL);
  if (source != NULL)
    g_source_ref (source);
  else
    {
      WsDelivery *self;

      source = g_source_new (&delivery_funcs, sizeof (WsDelivery));
      self = (WsDelivery *) source;
      ws_lock_init (&self->lock);
      /* find_source_by_funcs_user_data() matches on callback data. */
      g_source_set_callback (source, delivery_no_callback, NULL, NULL);
      g_source_set_static_name (source, "[wsrt] completions");
      g_source_set_priority (source, G_PRIORITY_DEFAULT);
      g_source_set_can_recurse (source, TRUE);
      g_source_attach (source, context);
    }
  ws_lock_unlock (&registry_lock);

  return source;
}

typedef struct
{
  GMainContext *context;      /* not a reference: compared only */
  GSource      *source;       /* a reference */
} DeliveryCache;

static void
delivery_cache_free (gpointer data)
{
  DeliveryCache *cache = data;

  g_clear_pointer (&cache->source, g_source_unref);
  g_free (cache);
}

static GPrivate delivery_cache = G_PRIVATE_INIT (delivery_cache_free);

WsDelivery *
ws_delivery_get (GMainContext *context)
{
  DeliveryCache *cache = g_private_get (&delivery_cache);
  GSource *old;

  /* The argument for a hit is at the top of this file. */
  if G_LIKELY (cache != NULL && cache->context == context
               && !g_source_is_destroyed (cache->source))
    return (WsDelivery *) cache->source;

  if (cache == NULL)
    {
      cache = g_new0 (DeliveryCache, 1);
      g_private_set (&delivery_cache, cache);
    }
  old = cache->source;
  cache->source = lookup_delivery_source (context);
  cache->context = context;
  /* Last: this may finalize a source of a context that is gone. */
  if (old != NULL)
    g_source_unref (old);

  return (WsDelivery *) cache->source;
}

void
ws_delivery_push (WsDelivery     *self,
                  WsDeliveryItem *item)
{
  gboolean was_empty;

  item->next = NULL;
  ws_lock_lock (&self->lock);
  was_empty = self->head == NULL;
  if (self->tail != NULL)
    self->tail->next = item;
  else
    self->head = item;
  self->tail = item;
  ws_lock_unlock (&self->lock);

  /* Safe without a reference of ours: see the top of this file. */
  if (was_empty)
    g_source_set_ready_time (&self->parent, 0);
}

/* ---- WsAsyncWait: a GAsyncResult for waits with a GCancellable --------- */

struct _WsAsyncWait
{
  GObject               parent_instance;
  WsWaker               waker;          /* woken by the core */
  WsDeliveryItem        item;           /* in the delivery queue */
  GObject              *source_object;
  gpointer              source_tag;
  GCancellable         *cancellable;
  gulong                cancelled_id;   /* disconnected on the context */
  GAsyncReadyCallback   callback;
  gpointer              user_data;
  GMainContext         *context;
  WsDelivery           *delivery;       /* the context's; valid while we hold it */
  _Atomic gint          state;          /* PENDING, QUEUED */
  _Atomic guint         n_waker_refs;   /* references held as a waker */
  gint                  outcome;        /* set by the winner, before queueing */
};

enum
{
  WAIT_PENDING,
  WAIT_QUEUED,
};

static void async_result_iface_init (GAsyncResultIface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (WsAsyncWait, ws_async_wait, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (G_TYPE_ASYNC_RESULT, async_result_iface_init))

#define WAIT_FROM_ITEM(i) \
  ((WsAsyncWait *) ((guint8 *) (i) - G_STRUCT_OFFSET (WsAsyncWait, item)))
#define WAIT_FROM_WAKER(w) \
  ((WsAsyncWait *) ((guint8 *) (w) - G_STRUCT_OFFSET (WsAsyncWait, waker)))

static void
wait_deliver (WsDeliveryItem *item)
{
  WsAsyncWait *self = WAIT_FROM_ITEM (item);

  /* Outside the cancelled handler, so disconnecting is safe. */
  if (self->cancelled_id != 0)
    {
      g_cancellable_disconnect (self->cancellable, self->cancelled_id);
      self->cancelled_id = 0;
    }
  if (self->callback != NULL)
    self->callback (self->source_object, G_ASYNC_RESULT (self), self->user_data);
  g_object_unref (self);        /* the queue's reference */
}

static void
wait_discard (WsDeliveryItem *item)
{
  g_object_unref (WAIT_FROM_ITEM (item));
}

static const WsDeliveryItemClass wait_item_class = {
  wait_deliver,
  wait_discard,
};

/* How a wait ended. A wait whose last waker reference is dropped before
 * anything woke it (its slot was given to another waiter, the awaitable
 * was freed) ends DROPPED: it is delivered with an error, never left
 * pending. */
enum
{
  OUTCOME_WOKEN,
  OUTCOME_CANCELLED,
  OUTCOME_DROPPED,
};

/* Queues @self for its callback; exactly once. Any thread. */
static void
queue_delivery (WsAsyncWait *self,
                gint         outcome)
{
  gint expected = WAIT_PENDING;

  /* AcqRel: the winner's write of `outcome` is published to the
   * dispatcher through the queue lock below. */
  if (!atomic_compare_exchange_strong_explicit (&self->state, &expected, WAIT_QUEUED,
                                                memory_order_acq_rel,
                                                memory_order_relaxed))
    return;

  self->outcome = outcome;
  g_object_ref (self);          /* the queue's, with the context we hold */
  ws_delivery_push (self->delivery, &self->item);
}

static void
waker_wake (WsWaker *waker)
{
  queue_delivery (WAIT_FROM_WAKER (waker), OUTCOME_WOKEN);
}

static void
waker_ref (WsWaker *waker)
{
  WsAsyncWait *self = WAIT_FROM_WAKER (waker);

  /* Relaxed: a count; the awaitable's lock orders a ref and its unref. */
  atomic_fetch_add_explicit (&self->n_waker_refs, 1, memory_order_relaxed);
  g_object_ref (self);
}

/* The last waker reference going without a wake: nothing can wake the
 * wait any more, so it ends now (DROPPED). A wake that came first queued
 * it already, and the CAS in queue_delivery keeps that outcome. */
static void
waker_unref (WsWaker *waker)
{
  WsAsyncWait *self = WAIT_FROM_WAKER (waker);

  /* AcqRel: the last unref sees every other holder's wake or drop. */
  if (atomic_fetch_sub_explicit (&self->n_waker_refs, 1, memory_order_acq_rel) == 1)
    queue_delivery (self, OUTCOME_DROPPED);
  g_object_unref (self);
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
  queue_delivery (data, OUTCOME_CANCELLED);
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
  self->item.klass = &wait_item_class;
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
  self->delivery = ws_delivery_get (self->context);
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
  queue_delivery (self, OUTCOME_WOKEN);
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
ws_async_wait_propagate_error (WsAsyncWait  *self,
                               const char   *what,
                               GError      **error)
{
  switch (self->outcome)
    {
    case OUTCOME_CANCELLED:
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED, "The wait for %s was cancelled", what);
      return TRUE;
    case OUTCOME_DROPPED:
      g_set_error (error, WS_ERROR, WS_ERROR_FAILED,
                   "The wait for %s ended unanswered: another wait or poll replaced it "
                   "(one waiter at a time), or the last reference to what it waited on "
                   "was released", what);
      return TRUE;
    case OUTCOME_WOKEN:
    default:
      return FALSE;
    }
}

/* ---- Completion: a join handle delivered to a callback ----------------- */

/* The tail of a task spawned with ws_runtime_spawn_with_callback(), in the
 * task's own allocation (ws_raw_task_new_with_tail): the task's join waker
 * and its delivery item, so the completion costs no allocation. The
 * waker's references are references on the task; the join reference,
 * held from the spawn, keeps the task (and this) alive while queued, and
 * is the callback's once it runs. */
typedef struct
{
  WsWaker           waker;              /* the task's join waker */
  WsDeliveryItem    item;
  WsCompletionFunc  callback;
  gpointer          user_data;
  GMainContext     *context;            /* held until delivered */
  WsDelivery       *delivery;
} Completion;

#define COMPLETION_FROM_ITEM(i) \
  ((Completion *) ((guint8 *) (i) - G_STRUCT_OFFSET (Completion, item)))

gsize
ws_join_handle_tail_size (void)
{
  return sizeof (Completion);
}

static void
completion_deliver (WsDeliveryItem *item)
{
  Completion *self = COMPLETION_FROM_ITEM (item);
  WsCompletionFunc callback = self->callback;
  gpointer user_data = self->user_data;
  GMainContext *context = self->context;

  /* The handle, its outcome ready, is the callback's: it may free the
   * task, and this tail with it. */
  callback ((WsJoinHandle *) ws_raw_task_from_tail (self), user_data);
  g_main_context_unref (context);
}

static void
completion_discard (WsDeliveryItem *item)
{
  Completion *self = COMPLETION_FROM_ITEM (item);
  GMainContext *context = self->context;

  ws_raw_task_drop_join_handle (ws_raw_task_from_tail (self));
  g_main_context_unref (context);
}

static const WsDeliveryItemClass completion_item_class = {
  completion_deliver,
  completion_discard,
};

static void
completion_waker_wake (WsWaker *waker)
{
  Completion *self = (Completion *) waker;

  /* The completer wakes the join waker once, after COMPLETE. */
  ws_delivery_push (self->delivery, &self->item);
}

static void
completion_waker_ref (WsWaker *waker)
{
  ws_raw_task_ref (ws_raw_task_from_tail (waker));
}

static void
completion_waker_unref (WsWaker *waker)
{
  ws_raw_task_unref (ws_raw_task_from_tail (waker));
}

static const WsWakerVTable completion_waker_vtable = {
  completion_waker_wake,
  completion_waker_ref,
  completion_waker_unref,
};

void
ws_join_handle_deliver (WsRawTask        *task,
                        WsCompletionFunc  callback,
                        gpointer          user_data)
{
  Completion *self = ws_raw_task_get_tail (task);

  self->waker.vtable = &completion_waker_vtable;
  self->item.klass = &completion_item_class;
  self->item.next = NULL;
  self->callback = callback;
  self->user_data = user_data;
  self->context = g_main_context_ref_thread_default ();
  self->delivery = ws_delivery_get (self->context);

  /* Registers our waker as the join waker (published by the core's
   * acq_rel CAS, so the completer sees the fields above), or tells that
   * the task has ended already: then we queue it ourselves. Either way
   * the callback runs from the context's dispatch, never from here. */
  if (ws_raw_task_try_read_output (task, &self->waker, NULL))
    ws_delivery_push (self->delivery, &self->item);
}

/* The cancel link (ws-async-wait-private.h). Connect, store the id, then
 * look at the cancellable again: a cancel that ran the handler before
 * the id was stored found nothing to disconnect, and is seen here, which
 * runs the handler again (the wait decides once, so the second run does
 * nothing) and disconnects. A cancel after the store finds the id. The
 * handler's closure holds what @data_notify drops until it is
 * disconnected. */
gpointer
ws_cancel_link_task_ref (GTask *task)
{
  return g_object_ref (task);
}

void
ws_cancel_link_task_unref (gpointer  data,
                           GClosure *closure)
{
  g_object_unref (data);
}

void
ws_cancel_link_connect (WsCancelLink    *link,
                        GCancellable    *cancellable,
                        WsCancelledFunc  func,
                        gpointer         data,
                        GClosureNotify   data_notify)
{
  gulong id;

  link->cancellable = cancellable;
  id = g_signal_connect_data (cancellable, "cancelled", G_CALLBACK (func), data, data_notify, 0);
  /* seq_cst store, then the cancellable's flag: see above. */
  atomic_store_explicit (&link->id, id, memory_order_seq_cst);
  if (g_cancellable_is_cancelled (cancellable))
    {
      func (cancellable, data);
      ws_cancel_link_disconnect (link);
    }
}

void
ws_cancel_link_disconnect (WsCancelLink *link)
{
  /* seq_cst: the exchange decides who disconnects; it pairs with the
   * store in connect. g_signal_handler_disconnect (unlike
   * g_cancellable_disconnect) never waits for a running handler, so it
   * is safe inside the handler. */
  gulong id = atomic_exchange_explicit (&link->id, 0, memory_order_seq_cst);

  if (id != 0)
    g_signal_handler_disconnect (link->cancellable, id);
}
