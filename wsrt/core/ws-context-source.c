/* ws-context-source.c: one GSource of a kind per GMainContext
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The argument (one per context, who owns the source, when the
 * per-thread cache may answer) is in ws-context-source-private.h.
 */

#include "config.h"

#include "ws-context-source-private.h"

/* Only marks the source, so that g_main_context_find_source_by_funcs_user_data ()
 * finds it: none of the kinds' dispatches calls its callback. */
static gboolean
context_source_marker (gpointer data)
{
  g_assert_not_reached ();
  return G_SOURCE_CONTINUE;
}

/* The source of @kind on @context, a new reference; made if @make,
 * else NULL when it has none. */
static GSource *
lookup (WsContextSourceKind *kind,
        GMainContext        *context,
        gboolean             make)
{
  GSource *source;

  ws_lock_lock (&kind->lock);
  source = g_main_context_find_source_by_funcs_user_data (context, kind->funcs, kind->funcs);
  if (source != NULL)
    g_source_ref (source);
  else if (make)
    {
      source = g_source_new (kind->funcs, kind->struct_size);
      kind->setup (source);
      g_source_set_callback (source, context_source_marker, kind->funcs, NULL);
      g_source_attach (source, context);
    }
  ws_lock_unlock (&kind->lock);
  return source;
}

/**
 * ws_context_source_find:
 * @kind: a kind
 * @context: a live context
 *
 * The source of @kind attached to @context, if it has one; none is made.
 *
 * Returns: (transfer full) (nullable): the source
 */
GSource *
ws_context_source_find (WsContextSourceKind *kind,
                        GMainContext        *context)
{
  return lookup (kind, context, FALSE);
}

/**
 * ws_context_source_ref:
 * @kind: a kind
 * @context: a live context
 *
 * The source of @kind attached to @context, made, set up and attached if
 * it has none.
 *
 * Returns: (transfer full): the source
 */
GSource *
ws_context_source_ref (WsContextSourceKind *kind,
                       GMainContext        *context)
{
  return lookup (kind, context, TRUE);
}

typedef struct
{
  GMainContext *context;      /* a reference, dropped after the source's */
  GSource      *source;       /* a reference */
} ContextSourceCache;

/* Drops a source and then its context: g_source_unref () reads the
 * source's context, which the context reference keeps from being
 * finalized meanwhile on another thread. */
static void
unref_source_then_context (GSource      *source,
                           GMainContext *context)
{
  if (source != NULL)
    g_source_unref (source);
  if (context != NULL)
    g_main_context_unref (context);
}

void
ws_context_source_cache_free (gpointer data)
{
  ContextSourceCache *cache = data;

  unref_source_then_context (g_steal_pointer (&cache->source),
                             g_steal_pointer (&cache->context));
  g_free (cache);
}

/**
 * ws_context_source_get_cached:
 * @kind: a kind
 * @context: a context the caller knows alive
 *
 * As ws_context_source_ref (), through the calling thread's cache of the
 * last context it looked up with @kind.
 *
 * Returns: (transfer none): the source, which the thread's cache holds
 *   until the thread looks up another context with @kind or exits
 */
GSource *
ws_context_source_get_cached (WsContextSourceKind *kind,
                              GMainContext        *context)
{
  ContextSourceCache *cache = g_private_get (&kind->cache);
  GMainContext *old_context;
  GSource *old_source;

  /* The argument for a hit is in ws-context-source-private.h. */
  if G_LIKELY (cache != NULL && cache->context == context
               && !g_source_is_destroyed (cache->source))
    return cache->source;

  if (cache == NULL)
    {
      cache = g_new0 (ContextSourceCache, 1);
      g_private_set (&kind->cache, cache);
    }
  old_source = cache->source;
  old_context = cache->context;
  cache->source = ws_context_source_ref (kind, context);
  cache->context = g_main_context_ref (context);
  /* Last: this may finalize the old context, and its sources. */
  unref_source_then_context (old_source, old_context);
  return cache->source;
}
