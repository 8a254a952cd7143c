/* ws-owed.c: completions that GIO owes to a context
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A GIO `_async ()` call made by a task completes on the thread-default
 * context of the thread that made it. A runtime-owned context (a worker
 * core's, a blocking thread's, the private one of a thread that left
 * ws_block_in_place ()) must therefore be iterated until GIO has
 * delivered every such completion; one that is let go earlier strands the
 * callback, and with it the operation, the task's waker, the task and
 * the runtime the task holds.
 *
 * The count: an operation that wsrt starts for a task (WsAsyncOp, and
 * WsIoOp on top of it) acquires the count of its context before the GIO
 * call and releases it once the completion has been delivered (or
 * discarded). The count lives in a small GSource attached to the
 * context, found like the timer driver (one per context, never ready),
 * so the context owns it and nothing keeps the context alive.
 *
 * Draining: before a runtime thread lets go of a context it owns (a
 * blocking thread that retires, a thread that left ws_block_in_place ()
 * and is not adopted) and when shutdown dispatches the workers' contexts
 * for the last time, ws_owed_drain () iterates the context while the
 * count is above zero, up to a deadline. The tasks behind those
 * operations have been cancelled, or can still be woken: a cancelled
 * task's operation cancels its GIO call (its cancellable is linked to the
 * task's), so GIO completes it promptly.
 *
 * A release wakes the context, so a drain sleeping in its poll re-reads
 * the count. Only wsrt's own operations are counted: a GIO call that a
 * task makes directly, with a callback of its own, is the caller's to
 * await (doc/async-gtk.md).
 */

#include "config.h"

#include <stdatomic.h>

#include "ws-owed-private.h"
#include "ws-lock-private.h"

struct _WsOwed
{
  GSource       source;
  _Atomic gint  count;
};

/* Serialises finding and making the count of a context. */
static WsLock owed_lock = WS_LOCK_INIT;

static gboolean
owed_dispatch (GSource     *source,
               GSourceFunc  callback,
               gpointer     user_data)
{
  /* Never ready. */
  return G_SOURCE_CONTINUE;
}

static GSourceFuncs owed_funcs = {
  NULL, NULL, owed_dispatch, NULL, NULL, NULL,
};

/* Wakes the drain's iteration at its deadline; removed by the drain. */
static GSourceFuncs deadline_funcs = {
  NULL, NULL, owed_dispatch, NULL, NULL, NULL,
};

static gboolean
owed_marker (gpointer data)
{
  return G_SOURCE_CONTINUE;
}

/* The count of @context, made if @create; a new reference, or NULL. */
static WsOwed *
ref_for_context (GMainContext *context,
                 gboolean      create)
{
  GSource *source;

  ws_lock_lock (&owed_lock);
  source = g_main_context_find_source_by_funcs_user_data (context, &owed_funcs, &owed_funcs);
  if (source != NULL)
    g_source_ref (source);
  else if (create)
    {
      source = g_source_new (&owed_funcs, sizeof (WsOwed));
      atomic_init (&((WsOwed *) source)->count, 0);
      g_source_set_callback (source, owed_marker, &owed_funcs, NULL);
      g_source_set_static_name (source, "[wsrt] owed completions");
      g_source_attach (source, context);
    }
  ws_lock_unlock (&owed_lock);
  return (WsOwed *) source;
}

/* The last context a thread acquired a count on, and its count (a
 * reference on the source, not the context): a GIO call per file must
 * not walk the context's sources under a global lock each time. A hit
 * needs the same context and a source not destroyed: a context's
 * finalize destroys its sources before its address can be reused, so a
 * live cached source means a live, identical context (as the delivery
 * source's cache in ws-delivery.c). */
typedef struct
{
  GMainContext *context;      /* compared only */
  WsOwed       *owed;         /* a reference */
} OwedCache;

static void
owed_cache_free (gpointer data)
{
  OwedCache *cache = data;

  if (cache->owed != NULL)
    g_source_unref (&cache->owed->source);
  g_free (cache);
}

static GPrivate owed_cache = G_PRIVATE_INIT (owed_cache_free);

static WsOwed *
ref_cached (GMainContext *context)
{
  OwedCache *cache = g_private_get (&owed_cache);
  WsOwed *old;

  if G_LIKELY (cache != NULL && cache->context == context
               && !g_source_is_destroyed (&cache->owed->source))
    {
      g_source_ref (&cache->owed->source);
      return cache->owed;
    }
  if (cache == NULL)
    {
      cache = g_new0 (OwedCache, 1);
      g_private_set (&owed_cache, cache);
    }
  old = cache->owed;
  cache->owed = ref_for_context (context, TRUE);
  cache->context = context;
  /* Last: this may finalize a source of a context that is gone. */
  if (old != NULL)
    g_source_unref (&old->source);
  g_source_ref (&cache->owed->source);
  return cache->owed;
}

/* One more completion owed to @context. Returns what to release. */
WsOwed *
ws_owed_acquire (GMainContext *context)
{
  WsOwed *self = ref_cached (context);

  /* Relaxed: a count; the drain reads it after the completion's own
   * synchronisation (the context's lock) or after a wakeup. */
  atomic_fetch_add_explicit (&self->count, 1, memory_order_relaxed);
  return self;
}

/* One more completion owed to the context of @self, on which the caller
 * holds a count: no lookup, so any thread may call it (the lookup's
 * per-thread cache reads the state of a source that the context's
 * thread writes). The count cannot reach 0 before it, since the
 * caller's is held. */
WsOwed *
ws_owed_acquire_more (WsOwed *self)
{
  g_source_ref (&self->source);
  atomic_fetch_add_explicit (&self->count, 1, memory_order_relaxed);
  return self;
}

/* The completion was delivered (or can never be). Any thread. */
void
ws_owed_release (WsOwed *self)
{
  GMainContext *context = g_source_get_context (&self->source);

  /* Release: a drain that reads 0 (acquire) sees what the delivery did. */
  if (atomic_fetch_sub_explicit (&self->count, 1, memory_order_release) == 1
      && context != NULL)
    g_main_context_wakeup (context);
  g_source_unref (&self->source);
}

static gboolean
nothing_owed (WsOwed *self)
{
  return self == NULL || atomic_load_explicit (&self->count, memory_order_acquire) == 0;
}

/**
 * ws_owed_drain:
 * @context: a context the calling thread owns or can acquire
 * @deadline: monotonic time to give up at, or -1 for none
 *
 * Iterates @context until nothing is owed to it, or @deadline; then
 * dispatches what is ready once more.
 *
 * Returns: %TRUE if nothing is owed any more
 */
gboolean
ws_owed_drain (GMainContext *context,
               gint64        deadline)
{
  WsOwed *self = ref_for_context (context, FALSE);
  GSource *timeout = NULL;
  gboolean done;

  if (!g_main_context_acquire (context))
    {
      if (self != NULL)
        g_source_unref (&self->source);
      return FALSE;
    }

  if (!nothing_owed (self) && deadline >= 0)
    {
      timeout = g_source_new (&deadline_funcs, sizeof (GSource));
      g_source_set_ready_time (timeout, deadline);
      g_source_attach (timeout, context);
    }
  while (!nothing_owed (self)
         && (deadline < 0 || g_get_monotonic_time () < deadline))
    g_main_context_iteration (context, TRUE);
  while (g_main_context_iteration (context, FALSE))
    ;
  done = nothing_owed (self);

  if (timeout != NULL)
    {
      g_source_destroy (timeout);
      g_source_unref (timeout);
    }
  g_main_context_release (context);
  if (self != NULL)
    g_source_unref (&self->source);
  return done;
}
