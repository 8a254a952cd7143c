/* ws-context-source-private.h: one GSource of a kind per GMainContext
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The timer driver (ws-timer-driver.c), the completions' source
 * (ws-delivery.c) and the count of owed completions (ws-owed.c) each
 * keep one GSource per context. A kind is a static WsContextSourceKind,
 * as a GContextSpecificGroup is GIO's (gio/gcontextspecificgroup.c: one
 * object of a type per context, under the group's lock); this module
 * finds a context's source of that kind, and makes and attaches it if
 * there is none. Unlike GIO's group it keeps no table: the context's own
 * list of sources is the table, so a finalized context leaves nothing to
 * remove.
 *
 * One per context: finding and making are done under the kind's lock, so
 * two threads that look up the same context concurrently get the same
 * source. The source is found with g_main_context_find_source_by_funcs_user_data
 * (its funcs, and a marker callback whose data is the same funcs), so the
 * context owns it: it stays attached until the context is finalized (or
 * its owner destroys it), and nothing of this module keeps the context
 * alive but a thread's cache, for a bounded time (below).
 *
 * The per-thread cache (ws_context_source_get_cached): the last context
 * the calling thread looked up with that kind and its source, so that a
 * caller on a hot path does not walk the context's sources under a
 * global lock each time. It holds a reference on the source and one on
 * the context, and drops the source's first: GLib's g_source_unref ()
 * reads the source's context without a lock and then locks it, so a
 * context finalized on another thread at that moment (its owner's last
 * unref, a GTask's finalize on a worker) would be read and locked after
 * it was freed; the count of owed completions drops its references in
 * the same order for the same reason (ws-owed.c). So the last context a
 * thread looked up with a kind lives until that thread looks up another
 * one or exits, a bounded delay of the context's finalize (one context
 * per thread and kind). A hit needs the same context pointer and a
 * source not destroyed (its owner may destroy it). A miss takes the
 * lock, and drops the old references last, since that may finalize the
 * old context. The thread's cache is freed, and its references dropped,
 * when the thread exits.
 *
 * What a kind's module adds stays with it: what lives in the source and
 * its protocol (the module's header comment), whether a lookup makes a
 * source (ws_context_source_find does not), and any cache of its own
 * (the timer driver's worker core keeps its driver, borrowed).
 */

#pragma once

#include <glib.h>

#include "ws-lock-private.h"

G_BEGIN_DECLS

typedef struct _WsContextSourceKind WsContextSourceKind;

struct _WsContextSourceKind
{
  /*< private: filled by WS_CONTEXT_SOURCE_KIND_INIT >*/
  GSourceFuncs *funcs;                    /* identifies the kind */
  gsize         struct_size;              /* of the source, for g_source_new */
  /* Sets up a new source (its fields, name, priority, recursion) before
   * it is attached, under the lock. */
  void        (*setup) (GSource *source);
  WsLock        lock;                     /* serialises find-or-make */
  GPrivate      cache;                    /* the per-thread cache */
};

/* The cache's destructor, run at a thread's exit; public only for the
 * initializer below. */
void ws_context_source_cache_free (gpointer data);

/* A static WsContextSourceKind of sources made by g_source_new (@funcs,
 * @struct_size) and set up by @setup. */
#define WS_CONTEXT_SOURCE_KIND_INIT(funcs, struct_size, setup) \
  { (funcs), (struct_size), (setup), WS_LOCK_INIT, G_PRIVATE_INIT (ws_context_source_cache_free) }

GSource *ws_context_source_find       (WsContextSourceKind *kind,
                                       GMainContext        *context);
GSource *ws_context_source_ref        (WsContextSourceKind *kind,
                                       GMainContext        *context);
GSource *ws_context_source_get_cached (WsContextSourceKind *kind,
                                       GMainContext        *context);

G_END_DECLS
