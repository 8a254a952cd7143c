/* test-context-source.c: one GSource of a kind per context (ws-context-source)
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Threads that look up one context at the same time get one source, set
 * up once; a thread's cache answers with the source it found; a source
 * that its owner destroyed is never answered again; and a thread's cache
 * keeps the context of the source it holds until it has dropped the
 * source, so that no g_source_unref () meets the context's finalize on
 * another thread: ws-context-source-private.h.
 */

#include "config.h"

#include <stdatomic.h>

#include "../ws-test-fixture.h"
#include "ws-context-source-private.h"

#define N_THREADS 8

typedef struct
{
  GSource source;
} Probe;

static _Atomic guint n_setups;

static gboolean
probe_dispatch (GSource     *source,
                GSourceFunc  callback,
                gpointer     user_data)
{
  return G_SOURCE_CONTINUE;
}

static GSourceFuncs probe_funcs = {
  NULL, NULL, probe_dispatch, NULL, NULL, NULL,
};

static void
probe_setup (GSource *source)
{
  atomic_fetch_add (&n_setups, 1);
  g_source_set_static_name (source, "[test] probe");
}

static WsContextSourceKind probe_kind =
  WS_CONTEXT_SOURCE_KIND_INIT (&probe_funcs, sizeof (Probe), probe_setup);

typedef struct
{
  GMainContext *context;
  _Atomic gint  started;
  _Atomic gint  go;
  GSource      *found[N_THREADS];
  GSource      *cached[N_THREADS];
} Race;

typedef struct
{
  Race *race;
  guint index;
} Racer;

static gpointer
racer_thread (gpointer data)
{
  Racer *r = data;

  atomic_fetch_add (&r->race->started, 1);
  while (!atomic_load (&r->race->go))
    g_thread_yield ();
  /* Half the threads go through their caches, half straight to the lock. */
  if (r->index % 2 == 0)
    r->race->found[r->index] = ws_context_source_ref (&probe_kind, r->race->context);
  else
    r->race->cached[r->index] = ws_context_source_get_cached (&probe_kind, r->race->context);
  return NULL;
}

/* N threads released at once on a fresh context: one source, made once,
 * attached to that context, and the one a later find answers. */
static void
test_one_per_context (void)
{
  Race race = { 0 };
  Racer racers[N_THREADS];
  GThread *threads[N_THREADS];
  GSource *one = NULL;
  GSource *found;
  guint setups_before = atomic_load (&n_setups);
  guint i;

  race.context = g_main_context_new ();
  g_assert_null (ws_context_source_find (&probe_kind, race.context));
  for (i = 0; i < N_THREADS; i++)
    {
      racers[i].race = &race;
      racers[i].index = i;
      threads[i] = g_thread_new ("racer", racer_thread, &racers[i]);
    }
  while (atomic_load (&race.started) < N_THREADS)
    g_thread_yield ();
  atomic_store (&race.go, 1);
  for (i = 0; i < N_THREADS; i++)
    g_thread_join (threads[i]);

  for (i = 0; i < N_THREADS; i++)
    {
      GSource *s = i % 2 == 0 ? race.found[i] : race.cached[i];

      g_assert_nonnull (s);
      if (one == NULL)
        one = s;
      g_assert_true (s == one);
    }
  g_assert_cmpuint (atomic_load (&n_setups) - setups_before, ==, 1);
  g_assert_true (g_source_get_context (one) == race.context);
  found = ws_context_source_find (&probe_kind, race.context);
  g_assert_true (found == one);
  g_source_unref (found);

  for (i = 0; i < N_THREADS; i += 2)
    g_source_unref (race.found[i]);
  g_main_context_unref (race.context);
}

/* The cache answers with the source the lock finds, again and again,
 * and follows the thread to another context and back. */
static void
test_cache_hit (void)
{
  GMainContext *a = g_main_context_new ();
  GMainContext *b = g_main_context_new ();
  GSource *sa = ws_context_source_ref (&probe_kind, a);
  GSource *sb = ws_context_source_ref (&probe_kind, b);
  guint setups_before;

  g_assert_true (sa != sb);
  setups_before = atomic_load (&n_setups);
  g_assert_true (ws_context_source_get_cached (&probe_kind, a) == sa);
  g_assert_true (ws_context_source_get_cached (&probe_kind, a) == sa);
  g_assert_true (ws_context_source_get_cached (&probe_kind, b) == sb);
  g_assert_true (ws_context_source_get_cached (&probe_kind, a) == sa);
  g_assert_cmpuint (atomic_load (&n_setups), ==, setups_before);

  g_source_unref (sa);
  g_source_unref (sb);
  g_main_context_unref (a);
  g_main_context_unref (b);
}

/* A destroyed source is not answered: destroyed by its owner on a live
 * context, the next lookup makes a new one there. A context whose owner
 * lets go while the thread's cache holds its source lives on until the
 * cache moves to another context, which finalizes it. */
static void
test_destroyed_not_returned (void)
{
  GMainContext *context = g_main_context_new ();
  GMainContext *other = g_main_context_new ();
  GSource *first = ws_context_source_get_cached (&probe_kind, context);
  GSource *second;
  GSource *held;

  g_source_ref (first);
  g_source_destroy (first);
  second = ws_context_source_get_cached (&probe_kind, context);
  g_assert_true (second != first);
  g_assert_false (g_source_is_destroyed (second));
  g_assert_true (g_source_get_context (second) == context);
  g_source_unref (first);

  /* The thread's cache still holds @second when its owner lets go. */
  held = g_source_ref (second);
  g_main_context_unref (context);
  g_assert_false (g_source_is_destroyed (held));
  g_assert_true (g_source_get_context (held) == context);
  second = ws_context_source_get_cached (&probe_kind, other);
  g_assert_true (g_source_is_destroyed (held));
  g_assert_true (second != held);
  g_assert_false (g_source_is_destroyed (second));
  g_assert_true (g_source_get_context (second) == other);
  g_source_unref (held);
  g_main_context_unref (other);
}

static gpointer
unref_context_thread (gpointer data)
{
  g_main_context_unref (data);
  return NULL;
}

/* The owner's last reference goes on another thread while this thread's
 * cache moves on from the context's source. GLib's g_source_unref ()
 * reads and locks the source's context, and the context's finalize
 * clears that field under the lock: were the context not kept until
 * the source's unref, the two would race (TSan reports it; elsewhere
 * the unref could lock a freed context). Either thread may finalize the
 * context; either way the source ends destroyed. */
#define N_HANDOVERS 200

static void
test_cache_keeps_context (void)
{
  for (guint i = 0; i < N_HANDOVERS; i++)
    {
      GMainContext *context = g_main_context_new ();
      GMainContext *next = g_main_context_new ();
      GSource *held = g_source_ref (ws_context_source_get_cached (&probe_kind, context));
      GThread *owner = g_thread_new ("owner", unref_context_thread, context);

      (void) ws_context_source_get_cached (&probe_kind, next);
      g_thread_join (owner);
      g_assert_true (g_source_is_destroyed (held));
      g_source_unref (held);
      /* The cache holds @next until the next round's lookup. */
      g_main_context_unref (next);
    }
}

WS_TEST_MAIN ({ "/context-source/one-per-context", test_one_per_context },
              { "/context-source/cache-hit", test_cache_hit },
              { "/context-source/destroyed-not-returned", test_destroyed_not_returned },
              { "/context-source/cache-keeps-context", test_cache_keeps_context })
