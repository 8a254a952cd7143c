/* ws-fiber-stack.c: the stacks fibers run on
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A fiber's stack is one anonymous private mapping: a guard of
 * WS_FIBER_STACK_GUARD_SIZE bytes at the bottom, mapped PROT_NONE, then
 * the usable stack, then this module's header (WsFiberStack) in the last
 * bytes of the top page, which the fiber's first frame touches anyway.
 * The mapping is MAP_NORESERVE: the kernel commits a page when it is
 * first touched, so a fiber that waits with a shallow stack costs the
 * pages it touched (doc/performance.md, "Fibers"), not its stack size.
 *
 * A stack overflow runs into the guard and the kernel sends SIGSEGV. The
 * signal cannot be handled on the overflowed stack, so without an
 * alternate signal stack the process dies of SIGSEGV; under ASan, whose
 * handler runs on its own alternate stack, ASan reports the overflow and
 * exits. A single frame larger than the guard can jump over it, as on
 * any thread's stack.
 *
 * Ownership: a stack belongs to one fiber from ws_fiber_stack_get () to
 * ws_fiber_stack_release (), which its poller calls once the fiber's
 * function has returned and the fiber will never be switched to again
 * (ws-fiber.c): no frame on it is live. Released stacks go to a cache of
 * the releasing thread (on a worker, the worker's pool of stacks), at
 * most WS_FIBER_STACK_CACHE_MAX of them; the next get of the same size on
 * that thread reuses one without a system call. Only the owning thread
 * touches its cache, so it needs no lock. A fiber often ends on another
 * worker than the one that gave it its stack (it was stolen, or woken
 * by a child that ran there), so one worker's cache fills while
 * another's runs dry: a full cache moves half of itself to a depot shared
 * by the process, and an empty one takes a batch from there before it
 * maps a new stack, under the depot's lock (one lock per
 * WS_FIBER_STACK_BATCH stacks). The depot keeps at most
 * WS_FIBER_STACK_DEPOT_MAX stacks and unmaps the rest. A cached stack
 * keeps the pages its last fiber touched. A thread's cache is unmapped
 * when the thread exits; the depot lives as long as the process.
 *
 * Tools: each stack is registered with valgrind (VALGRIND_STACK_REGISTER,
 * when <valgrind/valgrind.h> is there at build time), so that memcheck
 * takes a switch onto it for a stack switch; under ASan a released stack
 * is unpoisoned, since the last frame of its fiber never returned and
 * left its redzones poisoned.
 */

#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ws-fiber-stack-private.h"
#include "ws-lock-private.h"

#if defined(__has_include)
# if __has_include(<valgrind/valgrind.h>)
#  include <valgrind/valgrind.h>
#  define WS_HAVE_VALGRIND 1
# endif
#endif

#if defined(__SANITIZE_ADDRESS__)
# define WS_ASAN 1
#elif defined(__has_feature)
# if __has_feature(address_sanitizer)
#  define WS_ASAN 1
# endif
#endif
#ifdef WS_ASAN
# include <sanitizer/asan_interface.h>
#endif

#ifndef MAP_STACK
# define MAP_STACK 0
#endif
#ifndef MAP_NORESERVE
# define MAP_NORESERVE 0
#endif

#define WS_FIBER_STACK_CACHE_MAX 64
#define WS_FIBER_STACK_BATCH     (WS_FIBER_STACK_CACHE_MAX / 2)
#define WS_FIBER_STACK_DEPOT_MAX 1024

typedef struct
{
  WsFiberStack *head;
  guint         n;
} StackCache;

/* Statistics for tests and benchmarks. Relaxed: counters that order
 * nothing; a test reads them after joining what changed them. */
static _Atomic guint64 n_mapped;
static _Atomic guint64 n_unmapped;

static void cache_free (gpointer data);

/* The depot: stacks of any size, under its lock. Its count is written
 * under the lock and peeked at without it (relaxed: a hint, see
 * ws_fiber_stack_get), hence atomic. */
static WsLock depot_lock = WS_LOCK_INIT;
static WsFiberStack *depot;
static _Atomic guint n_depot;

static inline void
depot_count (gint delta)
{
  atomic_store_explicit (&n_depot,
                         atomic_load_explicit (&n_depot, memory_order_relaxed) + delta,
                         memory_order_relaxed);
}

static GPrivate cache_key = G_PRIVATE_INIT (cache_free);

static gsize
page_size (void)
{
  static _Atomic gsize size;
  /* Relaxed: every thread that races here stores the same value, and
   * nothing else is published with it. */
  gsize s = atomic_load_explicit (&size, memory_order_relaxed);

  if G_UNLIKELY (s == 0)
    {
      s = (gsize) sysconf (_SC_PAGESIZE);
      atomic_store_explicit (&size, s, memory_order_relaxed);
    }
  return s;
}

static WsFiberStack *
map_stack (gsize size)
{
  gsize page = page_size ();
  gsize usable = (size + page - 1) & ~(page - 1);
  gsize map_size = WS_FIBER_STACK_GUARD_SIZE + usable + page;
  guint8 *map;
  WsFiberStack *stack;

  map = mmap (NULL, map_size, PROT_READ | PROT_WRITE,
              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (map == MAP_FAILED)
    return NULL;
  if (mprotect (map, WS_FIBER_STACK_GUARD_SIZE, PROT_NONE) != 0)
    {
      munmap (map, map_size);
      return NULL;
    }

  /* The header in the last bytes of the top page; the stack starts right
   * under it. */
  stack = (WsFiberStack *) (map + map_size - sizeof (WsFiberStack));
  stack = (WsFiberStack *) ((guintptr) stack & ~(guintptr) 63);
  stack->map = map;
  stack->map_size = map_size;
  stack->size = usable;
  stack->next = NULL;
  stack->valgrind_id = 0;
#ifdef WS_HAVE_VALGRIND
  stack->valgrind_id = VALGRIND_STACK_REGISTER (ws_fiber_stack_bottom (stack),
                                                ws_fiber_stack_top (stack));
#endif
  atomic_fetch_add_explicit (&n_mapped, 1, memory_order_relaxed);
  return stack;
}

/**
 * ws_fiber_stack_free:
 * @stack: a stack no fiber runs on
 *
 * Unmaps @stack at once, bypassing the cache.
 */
void
ws_fiber_stack_free (WsFiberStack *stack)
{
#ifdef WS_HAVE_VALGRIND
  VALGRIND_STACK_DEREGISTER (stack->valgrind_id);
#endif
  atomic_fetch_add_explicit (&n_unmapped, 1, memory_order_relaxed);
  munmap (stack->map, stack->map_size);
}

static void
cache_free (gpointer data)
{
  StackCache *cache = data;

  while (cache->head != NULL)
    {
      WsFiberStack *s = cache->head;

      cache->head = s->next;
      ws_fiber_stack_free (s);
    }
  g_free (cache);
}

static StackCache *
get_cache (void)
{
  StackCache *cache = g_private_get (&cache_key);

  if G_UNLIKELY (cache == NULL)
    {
      cache = g_new0 (StackCache, 1);
      g_private_set (&cache_key, cache);
    }
  return cache;
}

/**
 * ws_fiber_stack_get:
 * @size: the usable size, at least WS_FIBER_STACK_MIN_SIZE
 *
 * A stack of @size usable bytes (rounded up to pages): one from the
 * calling thread's cache, or a new mapping.
 *
 * Returns: the stack, or NULL with errno set if the mapping failed
 */
/* Moves up to @max stacks of @usable bytes from the depot to @cache. */
static void
refill (StackCache *cache,
        gsize       usable,
        guint       max)
{
  WsFiberStack **link;

  ws_lock_lock (&depot_lock);
  for (link = &depot; *link != NULL && max > 0;)
    {
      WsFiberStack *s = *link;

      if (s->size != usable)
        {
          link = &s->next;
          continue;
        }
      *link = s->next;
      depot_count (-1);
      s->next = cache->head;
      cache->head = s;
      cache->n++;
      max--;
    }
  ws_lock_unlock (&depot_lock);
}

/* Takes a stack of @usable bytes from @cache, or NULL. */
static WsFiberStack *
take (StackCache *cache,
      gsize       usable)
{
  for (WsFiberStack **link = &cache->head; *link != NULL; link = &(*link)->next)
    {
      WsFiberStack *s = *link;

      if (s->size == usable)
        {
          *link = s->next;
          s->next = NULL;
          cache->n--;
          return s;
        }
    }
  return NULL;
}

WsFiberStack *
ws_fiber_stack_get (gsize size)
{
  StackCache *cache = get_cache ();
  gsize page = page_size ();
  gsize usable = (size + page - 1) & ~(page - 1);
  WsFiberStack *s = take (cache, usable);

  if G_LIKELY (s != NULL)
    return s;
  /* A racy peek: an empty depot is not worth the lock, and a stack that
   * lands there just after is found by the next get. */
  if (atomic_load_explicit (&n_depot, memory_order_relaxed) > 0)
    {
      refill (cache, usable, WS_FIBER_STACK_BATCH);
      s = take (cache, usable);
      if (s != NULL)
        return s;
    }
  return map_stack (size);
}

/* Moves half of a full @cache to the depot; what the depot has no room
 * for is unmapped, outside the lock. */
static void
spill (StackCache *cache)
{
  WsFiberStack *excess = NULL;

  ws_lock_lock (&depot_lock);
  for (guint i = 0; i < WS_FIBER_STACK_BATCH && cache->head != NULL; i++)
    {
      WsFiberStack *s = cache->head;

      cache->head = s->next;
      cache->n--;
      if (atomic_load_explicit (&n_depot, memory_order_relaxed) < WS_FIBER_STACK_DEPOT_MAX)
        {
          s->next = depot;
          depot = s;
          depot_count (1);
        }
      else
        {
          s->next = excess;
          excess = s;
        }
    }
  ws_lock_unlock (&depot_lock);

  while (excess != NULL)
    {
      WsFiberStack *s = excess;

      excess = s->next;
      ws_fiber_stack_free (s);
    }
}

/**
 * ws_fiber_stack_release:
 * @stack: a stack with no live frame
 *
 * Gives @stack back: to the calling thread's cache, or unmapped if the
 * cache is full.
 */
void
ws_fiber_stack_release (WsFiberStack *stack)
{
  StackCache *cache = get_cache ();

#ifdef WS_ASAN
  /* The fiber's last frame never returned: its redzones are still
   * poisoned, and the next fiber's frames will land on them. */
  ASAN_UNPOISON_MEMORY_REGION (ws_fiber_stack_bottom (stack),
                               (guint8 *) ws_fiber_stack_top (stack)
                               - (guint8 *) ws_fiber_stack_bottom (stack));
#endif
  if G_UNLIKELY (cache->n >= WS_FIBER_STACK_CACHE_MAX)
    spill (cache);
  stack->next = cache->head;
  cache->head = stack;
  cache->n++;
}

guint64
ws_fiber_stack_get_n_mapped (void)
{
  return atomic_load_explicit (&n_mapped, memory_order_relaxed);
}

guint64
ws_fiber_stack_get_n_unmapped (void)
{
  return atomic_load_explicit (&n_unmapped, memory_order_relaxed);
}

guint
ws_fiber_stack_get_n_cached (void)
{
  return get_cache ()->n;
}
