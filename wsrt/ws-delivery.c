/* ws-delivery.c: batched delivery of async completions to main contexts
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A `_async()` callback runs on the thread-default context of its caller,
 * exactly once, never from inside the call, also when cancelled
 * (doc/architecture.md, "Rules: main contexts").
 * Completions bound for one context are batched through one GSource per
 * context (ws-context-source-private.h: the context owns it and nothing
 * else keeps the context alive), not one idle source per operation.
 *
 * The source queues plain items (WsDeliveryItem: a link and a vtable with
 * deliver and discard), embedded in what is delivered: no GObject per
 * item. Three kinds are queued:
 *
 *  - a WsCompletion (ws-completion.c), the once-only end of every
 *    `_async ()` wait: a channel's, a limiter's, a sleep's, a task's,
 *    a group's, a oneshot's; it returns the wait's GTask here;
 *  - the same, in its custom form, for the wait a WsTask embeds for a
 *    ws_task_wait_async() without a GCancellable, whose GAsyncResult is
 *    the task itself (ws-task.c);
 *  - a Completion (ws-join-handle-delivery.c), the tail of a task spawned
 *    with ws_runtime_spawn_with_callback(), in the task's own memory: the
 *    task's join waker and the item, so the task itself is what is queued.
 *
 * Arming. The source is armed while a dispatch that takes the queue is
 * due: `armed`, under the lock, says so, and while it is set only the
 * dispatching thread changes the ready time. A push that finds the
 * source unarmed arms it, and after its unlock sets the ready time to 0
 * (a wake of the context); a push that finds it armed only appends. The
 * dispatch that takes the queue then:
 *
 *  - took more than one item (a burst: completions came faster than the
 *    loop took them): stays armed, is `cooling`, and sets the ready time
 *    WS_DELIVERY_COOLDOWN_USEC ahead, so that a sleeping loop takes the
 *    next ones then, not at the next push. The burst's pushers wake
 *    nobody: one wake of the context carries the completions of the
 *    cooldown, not one or two. A loop that iterates anyway (another
 *    source, a flush with g_main_context_iteration (ctx, FALSE)) takes
 *    them at once: while cooling, prepare and check report a non-empty
 *    queue too (under the lock; GLib calls them without its context
 *    lock, and nothing here calls into GLib under ours, so the two are
 *    never nested). A completion waits at most the cooldown (GLib's poll
 *    timeout has a millisecond's grain, so up to a millisecond when
 *    nothing else wakes the loop); none is stranded, as the ready time
 *    is set;
 *  - took one item or none (a lone completion, or the end of a burst):
 *    sets the ready time to -1 first, then, under the lock, disarms if
 *    the queue is still empty, or else sets the ready time to 0 again
 *    for what came since (a push in between found the source armed and
 *    left the wake to this dispatch). Clearing before disarming is the
 *    point: a push after the disarm sets 0, and no later -1 of the
 *    dispatch's can undo it (models/delivery.pml, -DBROKEN_DISARM_FIRST).
 *
 * A chain of awaits, where each completion starts the next operation,
 * queues one item per dispatch and never waits for the cooldown.
 *
 * Lifetime. Every queued item holds a reference on its context, dropped
 * only once it is delivered (or discarded). So while an item is queued
 * its context lives, and with it the source, which stays attached until
 * the context is finalized: a pusher needs no reference of its own on the
 * source. After its unlock, a pusher touches the source only if it armed
 * it, to set the ready time; its item cannot be dispatched before that
 * call takes the context lock, so the item's reference still keeps the
 * context alive there. The invariant: whatever makes the source ready
 * (a batch, a non-empty queue while cooling, a ready time other than -1,
 * or GLib's ready flag, which a prepare or check that found one of these
 * may leave set for a later iteration when a nested iteration drops the
 * dispatch it was for) implies that the source is armed and that no
 * pusher that armed it has yet to make its call. A batch that a callback
 * or a later iteration can see is a burst's take's, which stays armed
 * (a single item leaves the batch before its callback runs); cooling is
 * armed; an unarmed source's ready time is -1 (the dispatch cleared it
 * before it disarmed), so nothing but the arming pusher's call makes it
 * due; and that state lasts until the next take. Each item leaves the batch
 * before it is delivered, so a callback's nested iteration never sees
 * the batch of a take that is about to disarm. models/delivery.pml
 * checks it: a burst's take that disarmed (-DBROKEN_COOLDOWN_UNARMED), a
 * prepare that looked at the queue when not cooling
 * (-DBROKEN_PEEK_ALWAYS) or an item delivered before it leaves the batch
 * (-DBROKEN_DELIVER_BEFORE_POP) would take an item before its pusher's
 * call.
 *
 * Order. A dispatch that finds a batch (an earlier slice's, or an outer
 * dispatch's rest) delivers from it only and leaves the ready time as it
 * is: what was queued since comes after the batch, in push order.
 *
 * Finding the source: through the calling thread's cache of the last
 * context it looked up (ws-context-source-private.h says when a hit is
 * right); a miss takes the lock and GLib's lookup, which walks the
 * context's sources.
 */

#include "config.h"

#include "ws-delivery-private.h"
#include "ws-core-private.h"

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
  gboolean        backlogged;     /* the dispatching thread's, as batch */
  gboolean        armed;          /* under the lock; see the top */
  gboolean        cooling;        /* the dispatching thread's: a burst's
                                   * take set the cooldown */
};

/* How long the next take waits after a dispatch took a burst (see the
 * top): short against a frame (16 ms) and against the 1 ms slice, long
 * against a completion's delivery (well under a microsecond), so one wake
 * carries the burst's completions of that time. */
#define WS_DELIVERY_COOLDOWN_USEC 250

/* Recursion: the source can recurse (g_source_set_can_recurse), so a
 * callback that runs a nested main loop on this context still gets the
 * completions queued after it. The batch taken from the queue lives in
 * the source, not on the dispatching stack: a nested dispatch delivers
 * the rest of it first, in order; what was pushed since is taken by a
 * later dispatch, once the batch is empty (the ready time, or the queue
 * while cooling, says when). prepare and check report a batch left by an
 * outer dispatch, which GLib's ready time alone need not (a burst's take
 * moved it a cooldown ahead).
 *
 * Slices. A dispatch delivers items until the frame budget is spent
 * (ws-frame-slice-private.h: the rule and the budget the local executors
 * use) and returns with the rest still in the batch, in order: prepare and
 * check report it, so the source stays ready, and the main loop dispatches
 * its other sources (and draws: a backlog runs below GTK's redraw
 * priority) between slices. The next dispatch, or a nested one, delivers
 * the rest of the batch before anything queued since. The source is
 * shared by every runtime that delivers to its context, so it takes the
 * default budget, not a runtime's local-slice. */
static gboolean
delivery_ready (WsDelivery *self)
{
  gboolean queued;

  if (self->batch != NULL)
    return TRUE;
  if (!self->cooling)
    return FALSE;

  /* In the cooldown no pusher touches the source after its unlock (see
   * the top), so an iteration that runs anyway may take the queue now. */
  ws_lock_lock (&self->lock);
  queued = self->head != NULL;
  ws_lock_unlock (&self->lock);

  return queued;
}

static gboolean
delivery_prepare (GSource *source,
                  gint    *timeout)
{
  *timeout = -1;
  return delivery_ready ((WsDelivery *) source);
}

static gboolean
delivery_check (GSource *source)
{
  return delivery_ready ((WsDelivery *) source);
}

/* Takes the queue into the batch; TRUE if it held more than one item. */
static gboolean
delivery_take (WsDelivery *self)
{
  ws_lock_lock (&self->lock);
  self->batch = self->head;
  self->head = self->tail = NULL;
  ws_lock_unlock (&self->lock);

  return self->batch != NULL && self->batch->next != NULL;
}

/* After a take of one item or none: clear the ready time, then disarm
 * unless a push came since (see the top). */
static void
delivery_disarm (WsDelivery *self)
{
  gboolean rearm;

  g_source_set_ready_time (&self->parent, -1);

  ws_lock_lock (&self->lock);
  rearm = self->head != NULL;
  if (!rearm)
    self->armed = FALSE;
  ws_lock_unlock (&self->lock);

  if (rearm)
    g_source_set_ready_time (&self->parent, 0);
}

static gboolean
delivery_dispatch (GSource     *source,
                   GSourceFunc  callback,
                   gpointer     user_data)
{
  WsDelivery *self = (WsDelivery *) source;
  gint64 trace_begin = ws_trace_begin ();
  WsFrameSlice slice;

  /* With a batch left, deliver from it only (see the top). */
  if (self->batch == NULL)
    {
      self->cooling = delivery_take (self);
      if (self->cooling)
        g_source_set_ready_time (source, g_source_get_time (source) + WS_DELIVERY_COOLDOWN_USEC);
      else
        delivery_disarm (self);
    }

  ws_frame_slice_begin (&slice, WS_FRAME_SLICE_USEC, WS_FRAME_SLICE_MAX_ITEMS);
  while (self->batch != NULL)
    {
      WsDeliveryItem *item = self->batch;

      self->batch = item->next;
      item->next = NULL;
      item->vtable->deliver (item);
      if (ws_frame_slice_item_done (&slice))
        break;
    }
  ws_frame_slice_note_backlog (source, &self->backlogged, self->batch != NULL);
  ws_trace_end (trace_begin, WS_TRACE_DELIVERY_SLICE, slice.items);

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
      item->vtable->discard (item);
    }
  while (self->head != NULL)
    {
      WsDeliveryItem *item = self->head;

      self->head = item->next;
      item->next = NULL;
      item->vtable->discard (item);
    }
  ws_lock_clear (&self->lock);
}

static GSourceFuncs delivery_funcs = {
  delivery_prepare, delivery_check, delivery_dispatch, delivery_finalize, NULL, NULL,
};

static void
delivery_setup (GSource *source)
{
  ws_lock_init (&((WsDelivery *) source)->lock);
  g_source_set_static_name (source, "[wsrt] completions");
  g_source_set_priority (source, WS_FRAME_PRIORITY);
  g_source_set_can_recurse (source, TRUE);
}

/* The completions' sources, one per context. */
static WsContextSourceKind delivery_kind =
  WS_CONTEXT_SOURCE_KIND_INIT (&delivery_funcs, sizeof (WsDelivery), delivery_setup);

WsDelivery *
ws_delivery_get (GMainContext *context)
{
  return (WsDelivery *) ws_context_source_get_cached (&delivery_kind, context);
}

void
ws_delivery_push (WsDelivery     *self,
                  WsDeliveryItem *item)
{
  gboolean arm;

  item->next = NULL;
  ws_lock_lock (&self->lock);
  arm = !self->armed;
  self->armed = TRUE;
  if (self->tail != NULL)
    self->tail->next = item;
  else
    self->head = item;
  self->tail = item;
  ws_lock_unlock (&self->lock);

  /* Safe without a reference of ours: see the top of this file. */
  if (arm)
    g_source_set_ready_time (&self->parent, 0);
}
