/* ws-fiber-stack-private.h: the stacks fibers run on
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The protocol is at the top of ws-fiber-stack.c.
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The default usable size of a fiber's stack, and the smallest a caller
 * may ask for. Virtual: only the pages a fiber touches are committed. */
#define WS_FIBER_STACK_DEFAULT_SIZE (256 * 1024)
#define WS_FIBER_STACK_MIN_SIZE     (16 * 1024)
/* Below the stack, never mapped readable or writable. */
#define WS_FIBER_STACK_GUARD_SIZE   (64 * 1024)

typedef struct _WsFiberStack WsFiberStack;
struct _WsFiberStack
{
  guint8       *map;                 /* the whole mapping, guard first */
  gsize         map_size;
  gsize         size;                /* usable bytes, as asked (rounded to pages) */
  WsFiberStack *next;                /* in a cache or a pool */
  struct _WsFiberStackPool *pool;    /* whose cap counts it, or NULL */
  guint         valgrind_id;         /* VALGRIND_STACK_REGISTER's, or 0 */
  gboolean      dirty;               /* used since its last trim */
};

/* A runtime's stacks (ws-fiber-stack.c, "The pool"). */
typedef struct _WsFiberStackPool WsFiberStackPool;

WsFiberStackPool *ws_fiber_stack_pool_new   (guint             max_mapped);
void              ws_fiber_stack_pool_free  (WsFiberStackPool *pool);
guint             ws_fiber_stack_get_default_max_mapped (void);

WsFiberStack     *ws_fiber_stack_get        (WsFiberStackPool *pool,
                                             gsize             size,
                                             GError          **error);
void              ws_fiber_stack_release    (WsFiberStackPool *pool,
                                             WsFiberStack     *stack);
void              ws_fiber_stack_free       (WsFiberStack     *stack);

/* How long a worker stays parked before it trims ("Giving pages back"). */
#define WS_FIBER_STACK_TRIM_DELAY_USEC (50 * 1000)

/* A worker parked for WS_FIBER_STACK_TRIM_DELAY_USEC (and whether a trim
 * would do anything); a worker's thread that stops being it. */
gboolean          ws_fiber_stack_cache_wants_trim (void);
void              ws_fiber_stack_trim_cache  (void);
void              ws_fiber_stack_flush_cache (void);

/* The lowest usable address (just above the guard). */
static inline gpointer
ws_fiber_stack_bottom (WsFiberStack *stack)
{
  return stack->map + WS_FIBER_STACK_GUARD_SIZE;
}

/* One past the highest usable address, 16-aligned: the stack grows down
 * from here (the header sits just above). */
static inline gpointer
ws_fiber_stack_top (WsFiberStack *stack)
{
  return (gpointer) ((guintptr) stack & ~(guintptr) 15);
}

/* Test and benchmark hooks: stacks mapped and unmapped so far by this
 * process, trims so far, and the bytes of the stack mappings that exist
 * now, in use, cached or pooled (0 once every runtime is gone and no
 * stack got without a pool is left). */
guint64 ws_fiber_stack_get_n_mapped     (void);
guint64 ws_fiber_stack_get_n_unmapped   (void);
guint64 ws_fiber_stack_get_n_trims      (void);
gint64  ws_fiber_stack_get_mapped_bytes (void);

G_END_DECLS
