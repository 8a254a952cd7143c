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
 * context, never ready, one per context (ws-context-source-private.h:
 * the context owns it, and nothing keeps the context alive but a
 * thread's cache of the last context it looked up; a thread's acquire
 * finds it through that cache).
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
 *
 * Who drains, and for how long. Every runtime thread that lets go of a
 * context it owns drains it with no deadline first (a blocking thread, a
 * thread leaving ws_block_in_place (), the last worker-pool thread for
 * the workers' contexts), holding the runtime meanwhile: a GIO call that
 * ignores its cancellable keeps that thread, the context and the runtime
 * until it calls back, and never touches freed memory when it does. A
 * shutdown caller with a deadline never waits behind such a drain past
 * its deadline; it returns FALSE (ws-worker-pool.c, "Owed completions").
 * So while a unit is counted, a thread holds the context and will not
 * let go of it before it reads the count at 0: the context outlives
 * every count above zero. A call that never calls back keeps that thread
 * and the runtime for the life of the process; nothing else can deliver
 * its completion, and freeing the context under GIO's GTask would be a
 * use after free.
 *
 * Release and wake. The release decrements the count and, if it reached
 * zero, wakes the context, so that a drain sleeping in its poll re-reads
 * it. The decrement is what lets the drain go: a drain that is awake for
 * another reason may read 0 right after it, return, and drop the last
 * reference to the context, before the releasing thread's wake. So the
 * releaser takes a reference to the context before its decrement, while
 * its own unit keeps the context alive, and drops it after the wake.
 * Waking before the decrement would not do: the drain could wake, read
 * the count not yet decremented, and sleep again with no wake to come.
 * The releaser's unref of the count's source comes before its unref of
 * the context too: a source's unref reads its context, and a context
 * that the drain's thread finalizes at the same time is freed under it
 * (a hang on the freed context's lock, in tests/core/test-owed.c). With
 * the context held, the last unref of the context, wherever it comes,
 * runs after the releaser is done with the source.
 * A context being finalized has already detached the source (its context
 * reads NULL), and nothing drains it: no reference and no wake then.
 */

#include "config.h"

#include <stdatomic.h>

#include "ws-owed-private.h"
#include "ws-chaos-private.h"
#include "ws-context-source-private.h"

struct _WsOwed
{
  GSource       source;
  _Atomic gint  count;
};

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

static void
owed_setup (GSource *source)
{
  atomic_init (&((WsOwed *) source)->count, 0);
  g_source_set_static_name (source, "[wsrt] owed completions");
}

/* The counts, one per context. */
static WsContextSourceKind owed_kind =
  WS_CONTEXT_SOURCE_KIND_INIT (&owed_funcs, sizeof (WsOwed), owed_setup);

/* One more completion owed to @context. Returns what to release. */
WsOwed *
ws_owed_acquire (GMainContext *context)
{
  WsOwed *self;

  /* Through the thread's cache: a GIO call per file must not walk the
   * context's sources under a global lock each time. */
  self = (WsOwed *) ws_context_source_get_cached (&owed_kind, context);
  g_source_ref (&self->source);

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

/* The completion was delivered (or can never be). Any thread.
 * "Release and wake" at the top of this file says why the context
 * reference comes first. */
void
ws_owed_release (WsOwed *self)
{
  GMainContext *context = g_source_get_context (&self->source);

  /* While our unit is counted, the context is alive (see the top of this
   * file), so this reference is taken on a live one. */
  if (context != NULL)
    g_main_context_ref (context);

  /* Release: a drain that reads 0 (acquire) sees what the delivery did. */
  if (atomic_fetch_sub_explicit (&self->count, 1, memory_order_release) == 1
      && context != NULL)
    {
      /* A drain that read 0 may have let go of the context here. */
      WS_CHAOS_POINT ();
      g_main_context_wakeup (context);
    }
  /* The source before the context: an unref of a source reads its
   * context, which must not be finalized meanwhile on another thread. */
  g_source_unref (&self->source);
  if (context != NULL)
    g_main_context_unref (context);
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
  WsOwed *self = (WsOwed *) ws_context_source_find (&owed_kind, context);
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
  /* Before the last dispatch: once due, the deadline's source stays
   * ready, and the loop below would dispatch it for ever. */
  if (timeout != NULL)
    {
      g_source_destroy (timeout);
      g_source_unref (timeout);
    }
  while (g_main_context_iteration (context, FALSE))
    ;
  done = nothing_owed (self);

  g_main_context_release (context);
  if (self != NULL)
    g_source_unref (&self->source);
  return done;
}
