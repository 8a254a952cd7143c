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
 * pages it touched (doc/performance.md, "The peer table"), not its stack size.
 *
 * A stack overflow runs into the guard and the kernel sends SIGSEGV.
 * wsrt's handler, on an alternate signal stack, writes a line naming the
 * fiber and its stack size, and the process then dies of SIGSEGV as it
 * would have (ws-fiber-overflow.c); under ASan, whose handler runs on its
 * own alternate stack, ASan reports the overflow and exits. A single
 * frame larger than the guard can jump over it, as on any thread's
 * stack.
 *
 * Ownership: a stack belongs to one fiber from ws_fiber_stack_get () to
 * ws_fiber_stack_release (), which its poller calls once the fiber's
 * function has returned and the fiber will never be switched to again
 * (ws-fiber.c): no frame on it is live.
 *
 * The pool: released stacks are kept for reuse by the runtime the fiber
 * ran on, not by the process. Each runtime core has a WsFiberStackPool
 * (its depot), created with the core and emptied (every stack unmapped)
 * when the core is freed, at the runtime's last unref: a program that
 * creates a runtime, runs a burst of fibers and lets the runtime go gets
 * its memory back. Runtime ownership, not a byte bound for the process:
 * a byte bound either keeps memory after the last runtime is gone or
 * unmaps stacks that a busy runtime is about to reuse (fork-join with
 * fibers holds about a thousand stacks at its peak, and mapping them anew
 * each time costs a system call and page faults per fiber); the runtime
 * knows when its stacks can no longer be used. Every fiber's task holds
 * its runtime core (through its host) until it is freed, and a stack is
 * released before that, so the pool outlives every get and release.
 *
 * A worker thread keeps a cache of its own in front of the pool, at most
 * WS_FIBER_STACK_CACHE_MAX stacks; the next get of the same size on that
 * worker reuses one without a lock or a system call. Only the owning
 * thread touches its cache. A fiber often ends on another worker than
 * the one that gave it its stack (it was stolen, or woken by a child that
 * ran there), so one worker's cache fills while another's runs dry: a
 * full cache moves half of itself to the pool, and an empty one takes a
 * batch from there before it maps a new stack, under the pool's lock (one
 * lock per WS_FIBER_STACK_BATCH stacks). The pool keeps at most
 * WS_FIBER_STACK_POOL_MAX stacks and unmaps the rest. A thread that is no
 * worker (a shutdown, a wait that runs a task on its caller's thread)
 * has no cache and uses the pool directly. A worker's thread gives its
 * cache to the pool when it stops being that worker
 * (ws_fiber_stack_flush_cache (), ws-worker.c), before it lets go of the
 * runtime; a thread's cache left at its exit is unmapped.
 *
 * Giving pages back. A stack whose fiber went deep keeps the pages it
 * touched. A trim (MADV_DONTNEED) drops every page of a stack but the top
 * one (the header, and the first frames a shallow fiber touches anyway),
 * so a trimmed stack costs one page until the next fiber touches more. A
 * stack is dirty from its get until it is trimmed. Stacks are trimmed:
 *
 *  - when they go to the pool flushed, or released by a thread with no
 *    cache, outside the pool's lock;
 *  - when a running worker's full cache spills a batch to the pool, only
 *    past the pool's watermark: the pool takes up to
 *    WS_FIBER_STACK_POOL_DIRTY_MAX untrimmed stacks (a racy peek at its
 *    count, so two spills at once may each add a batch past it), and the
 *    spill trims the rest. Stacks go from one worker's cache to another's
 *    through the pool whenever fibers end on another worker than the one
 *    that started them, and a trim there cost a system call, a TLB
 *    shootdown on the other CPUs running the process, and page faults
 *    when the next fiber touches the pages again;
 *  - when a worker is parked WS_FIBER_STACK_TRIM_DELAY_USEC after its
 *    stacks first had pages to give (ws_fiber_stack_trim_cache (),
 *    ws-worker.c): its idle cache is trimmed, and so is every untrimmed
 *    stack of the pool, so after a burst of deep fibers an idle runtime
 *    keeps one page per stack it keeps. Only running workers put
 *    untrimmed stacks in the pool, and each trims the pool once it has
 *    been idle that long: once every worker has, the pool holds only
 *    trimmed stacks. The parked worker also gives all but
 *    WS_FIBER_STACK_IDLE_KEEP of its stacks to the pool: a busy worker
 *    that finds the pool empty maps a new stack, though a sleeping
 *    worker's cache may hold dozens.
 *
 * Why a delay: a trim at every park cost fork-join with fibers a third
 * of its time. A worker parks at every gap in its work (the end of a
 * fork-join, a main loop between bursts), for microseconds; each trim
 * is a system call and a TLB shootdown on every other CPU running the
 * process (an IPI, which a virtual machine pays in exits), and the next
 * fiber faults the pages in again. Memory goes back once the runtime
 * has been idle for the delay, not at each pause. The worker stays
 * announced as parked while it trims; a wake that comes meanwhile is
 * kept by its parker and answered when the trim is done
 * (doc/architecture.md, "Parking on the worker's GMainContext"). The
 * deadline is kept across parks from the first one with stacks to trim,
 * so a worker woken more often than the delay trims at its first park
 * past it.
 *
 * The watermark while workers run: at most CACHE_MAX stacks per worker
 * and about POOL_DIRTY_MAX in the pool keep the pages their last fibers
 * touched, until the workers have been parked for the delay. The trims
 * cost a system call per dirty stack, after that delay or past the
 * watermark, never on a get or a release that stays in the cache.
 *
 * The cap. Each stack takes two memory mappings (the guard and the
 * stack: the mprotect of the guard splits the one mmap), and the kernel
 * bounds the mappings of a process (vm.max_map_count, 65530 by
 * default). Past that bound not only does the next fiber's mmap fail:
 * every malloc that needs a new mapping fails too, in any library of
 * the process. So a pool caps the stacks mapped for it at once (those of
 * the fibers that started and have not returned, and those its caches
 * and the pool keep) at its runtime's max-fiber-stacks, by default a
 * quarter of vm.max_map_count (half the mappings, the rest for the rest
 * of the process). A get that would map a stack past the cap first
 * unmaps one the pool keeps (of another size, or it would have taken
 * it), and is refused with an error naming the cap if the pool keeps
 * none. The count changes only where a stack is mapped or unmapped,
 * never on a get or release that reuses one, so the fast path has no
 * shared write: a relaxed atomic, whose compare-and-swap keeps it at
 * most the cap; it orders nothing. Stacks that idle workers keep in
 * their caches count too, so up to 64 per worker fewer fibers than the
 * cap may run; a stack knows its pool and uncounts itself when it is
 * unmapped, except from a cache left at a thread's exit, whose pool may
 * be gone (and whose worker flushed it into the pool first, normally).
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
#include "ws-error.h"
#include "ws-lock-private.h"
#include "ws-thread-private.h"

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
#define WS_FIBER_STACK_IDLE_KEEP 4
#define WS_FIBER_STACK_POOL_MAX  1024
/* Untrimmed stacks the pool takes from running workers' spills before a
 * spill trims what it gives ("Giving pages back"). */
#define WS_FIBER_STACK_POOL_DIRTY_MAX WS_FIBER_STACK_CACHE_MAX

/* A runtime's depot of stacks, any size, under its lock; untrimmed ones
 * only from running workers' spills, n_dirty of them. Its counts are
 * written under the lock and peeked at without it (relaxed: hints, see
 * ws_fiber_stack_get and spill), hence atomic. */
struct _WsFiberStackPool
{
  WsLock         lock;
  WsFiberStack  *head;
  _Atomic guint  n;
  _Atomic guint  n_dirty;
  /* Stacks mapped for it ("The cap"). */
  _Atomic guint  n_mapped;
  guint          max_mapped;
};

/* A worker thread's cache, for the pool of that worker's runtime: in the
 * thread's WsThread (one load off the thread pointer on every get and
 * release), with a GPrivate whose destructor unmaps what it holds at
 * the thread's exit, set at its first use. */
typedef WsThreadStackCache StackCache;

enum
{
  NOT_REGISTERED,
  REGISTERED,                         /* the exit destructor is set */
  EXITED,                             /* unmapped: no cache any more */
};

/* Statistics for tests and benchmarks. Relaxed: counters that order
 * nothing; a test reads them after joining what changed them. */
static _Atomic guint64 n_mapped;
static _Atomic guint64 n_unmapped;
static _Atomic guint64 n_trims;
/* Bytes of the stack mappings that exist now: in use, cached or pooled. */
static _Atomic gint64  mapped_bytes;

static void cache_free (gpointer data);

static GPrivate cache_key = G_PRIVATE_INIT (cache_free);

/* Under the pool's lock: one stack, @s, more (@delta 1) or fewer (-1). */
static inline void
pool_count (WsFiberStackPool *pool,
            WsFiberStack     *s,
            gint              delta)
{
  atomic_store_explicit (&pool->n,
                         atomic_load_explicit (&pool->n, memory_order_relaxed) + delta,
                         memory_order_relaxed);
  if (s->dirty)
    atomic_store_explicit (&pool->n_dirty,
                           atomic_load_explicit (&pool->n_dirty, memory_order_relaxed) + delta,
                           memory_order_relaxed);
}

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
  stack->dirty = FALSE;
  stack->pool = NULL;
#ifdef WS_HAVE_VALGRIND
  stack->valgrind_id = VALGRIND_STACK_REGISTER (ws_fiber_stack_bottom (stack),
                                                ws_fiber_stack_top (stack));
#endif
  atomic_fetch_add_explicit (&n_mapped, 1, memory_order_relaxed);
  atomic_fetch_add_explicit (&mapped_bytes, (gint64) map_size, memory_order_relaxed);
  return stack;
}

/**
 * ws_fiber_stack_free:
 * @stack: a stack no fiber runs on
 *
 * Unmaps @stack at once, bypassing caches and pools.
 */
void
ws_fiber_stack_free (WsFiberStack *stack)
{
#ifdef WS_HAVE_VALGRIND
  VALGRIND_STACK_DEREGISTER (stack->valgrind_id);
#endif
  atomic_fetch_add_explicit (&n_unmapped, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit (&mapped_bytes, (gint64) stack->map_size, memory_order_relaxed);
  if (stack->pool != NULL)
    atomic_fetch_sub_explicit (&stack->pool->n_mapped, 1, memory_order_relaxed);
  munmap (stack->map, stack->map_size);
}

/* Gives back every page of a dirty @stack but its top one (see the top). */
static void
trim (WsFiberStack *stack)
{
  guint8 *from = stack->map + WS_FIBER_STACK_GUARD_SIZE;
  guint8 *to = stack->map + stack->map_size - page_size ();

  if (!stack->dirty)
    return;
  stack->dirty = FALSE;
  /* It cannot fail on a private anonymous mapping we own; if it did, the
   * pages would only stay resident. */
  (void) madvise (from, to - from, MADV_DONTNEED);
  atomic_fetch_add_explicit (&n_trims, 1, memory_order_relaxed);
}

/* Unmaps a list of stacks linked by next. */
static void
free_list (WsFiberStack *list)
{
  while (list != NULL)
    {
      WsFiberStack *s = list;

      list = s->next;
      ws_fiber_stack_free (s);
    }
}

/* Puts a list of stacks into @pool (untrimmed ones only from a running
 * worker: see "Giving pages back"); what it has no room for is unmapped,
 * outside the lock. */
static void
pool_put_list (WsFiberStackPool *pool,
               WsFiberStack     *list)
{
  WsFiberStack *excess = NULL;

  ws_lock_lock (&pool->lock);
  while (list != NULL)
    {
      WsFiberStack *s = list;

      list = s->next;
      if (atomic_load_explicit (&pool->n, memory_order_relaxed) < WS_FIBER_STACK_POOL_MAX)
        {
          s->next = pool->head;
          pool->head = s;
          pool_count (pool, s, 1);
        }
      else
        {
          s->next = excess;
          excess = s;
        }
    }
  ws_lock_unlock (&pool->lock);
  free_list (excess);
}

/**
 * ws_fiber_stack_pool_new:
 *
 * A runtime's pool of stacks, empty.
 *
 * Returns: the pool
 */
WsFiberStackPool *
ws_fiber_stack_pool_new (guint max_mapped)
{
  WsFiberStackPool *pool = g_new0 (WsFiberStackPool, 1);

  ws_lock_init (&pool->lock);
  atomic_init (&pool->n, 0);
  atomic_init (&pool->n_dirty, 0);
  atomic_init (&pool->n_mapped, 0);
  pool->max_mapped = max_mapped;
  return pool;
}

/* The kernel's bound on the mappings of a process, or 0 if unknown. */
static guint64
max_map_count (void)
{
  g_autofree char *contents = NULL;

  if (!g_file_get_contents ("/proc/sys/vm/max_map_count", &contents, NULL, NULL))
    return 0;
  return g_ascii_strtoull (contents, NULL, 10);
}

/**
 * ws_fiber_stack_get_default_max_mapped:
 *
 * The default of a runtime's max-fiber-stacks ("The cap"): a quarter of
 * vm.max_map_count, or no cap where the kernel states no bound.
 *
 * Returns: the cap, at least 1
 */
guint
ws_fiber_stack_get_default_max_mapped (void)
{
  guint64 max = max_map_count ();

  if (max == 0)
    return G_MAXUINT;
  return (guint) CLAMP (max / 4, 1, G_MAXUINT);
}

/**
 * ws_fiber_stack_pool_free:
 * @pool: a pool no thread gets from or releases to any more
 *
 * Unmaps every stack of @pool and frees it: at the runtime's last unref,
 * after every worker's thread has flushed its cache into it.
 */
void
ws_fiber_stack_pool_free (WsFiberStackPool *pool)
{
  free_list (g_steal_pointer (&pool->head));
  ws_lock_clear (&pool->lock);
  g_free (pool);
}

static void
cache_free (gpointer data)
{
  StackCache *cache = data;

  /* Not given to its pool, nor uncounted there: the pool may be gone
   * (ws_fiber_stack_flush_cache gave it everything while it was alive). */
  for (WsFiberStack *s = cache->head; s != NULL; s = s->next)
    s->pool = NULL;
  free_list (g_steal_pointer (&cache->head));
  cache->n = cache->n_dirty = 0;
  cache->pool = NULL;
  cache->exit_state = EXITED;
}

/* The calling thread's cache, for @pool's stacks, or NULL: a thread that
 * is no worker has none, and a worker's cache serves only its runtime. */
static StackCache *
get_cache (WsFiberStackPool *pool)
{
  StackCache *cache;

  if (ws_thread.worker == NULL)
    return NULL;
  cache = &ws_thread.stack_cache;
  if G_UNLIKELY (cache->exit_state != REGISTERED)
    {
      if (cache->exit_state == EXITED)
        return NULL;
      cache->exit_state = REGISTERED;
      g_private_set (&cache_key, cache);
    }
  if G_UNLIKELY (cache->pool != pool)
    {
      if (cache->pool != NULL)
        return NULL;
      cache->pool = pool;
    }
  return cache;
}

/* Takes any stack @pool keeps, or NULL. */
static WsFiberStack *
pool_take_any (WsFiberStackPool *pool)
{
  WsFiberStack *s;

  ws_lock_lock (&pool->lock);
  s = pool->head;
  if (s != NULL)
    {
      pool->head = s->next;
      pool_count (pool, s, -1);
      s->next = NULL;
    }
  ws_lock_unlock (&pool->lock);
  return s;
}

/* Counts one more stack mapped for @pool, if under its cap; at the cap,
 * unmaps one the pool keeps to make room ("The cap"). */
static gboolean
count_mapping (WsFiberStackPool *pool)
{
  for (;;)
    {
      guint n = atomic_load_explicit (&pool->n_mapped, memory_order_relaxed);
      WsFiberStack *kept;

      while (n < pool->max_mapped)
        {
          if (atomic_compare_exchange_weak_explicit (&pool->n_mapped, &n, n + 1,
                                                     memory_order_relaxed,
                                                     memory_order_relaxed))
            return TRUE;
        }
      kept = pool_take_any (pool);
      if (kept == NULL)
        return FALSE;
      ws_fiber_stack_free (kept);
    }
}

/* A new stack for @pool (or for none), under its cap. */
static WsFiberStack *
map_counted (WsFiberStackPool  *pool,
             gsize              size,
             GError           **error)
{
  WsFiberStack *s;
  int saved_errno;

  if (pool != NULL && !count_mapping (pool))
    {
      g_set_error (error, WS_ERROR, WS_ERROR_FAILED,
                   "A fiber could not start: its runtime has %u fiber stacks mapped "
                   "already, its max-fiber-stacks (the stacks of its fibers that "
                   "started and have not returned, and those it keeps for reuse). "
                   "Each stack takes two of the process's memory mappings, which "
                   "vm.max_map_count bounds for the whole process. Let fibers end "
                   "before more start, or raise the runtime's max-fiber-stacks",
                   pool->max_mapped);
      return NULL;
    }
  s = map_stack (size);
  if (s != NULL)
    {
      s->pool = pool;
      return s;
    }
  saved_errno = errno;
  if (pool != NULL)
    atomic_fetch_sub_explicit (&pool->n_mapped, 1, memory_order_relaxed);
  g_set_error (error, WS_ERROR, WS_ERROR_FAILED,
               "Could not map a fiber stack of %" G_GSIZE_FORMAT " bytes: %s. "
               "If the process reached vm.max_map_count (%" G_GUINT64_FORMAT
               " mappings; each fiber stack takes two), lower the runtimes' "
               "max-fiber-stacks", size, g_strerror (saved_errno), max_map_count ());
  return NULL;
}

/* Moves up to @max stacks of @usable bytes from @pool to @cache (if not
 * NULL), or takes one; returns the one taken, or NULL. */
static WsFiberStack *
refill (WsFiberStackPool *pool,
        StackCache       *cache,
        gsize             usable,
        guint             max)
{
  WsFiberStack *taken = NULL;
  WsFiberStack **link;

  ws_lock_lock (&pool->lock);
  for (link = &pool->head; *link != NULL && max > 0;)
    {
      WsFiberStack *s = *link;

      if (s->size != usable)
        {
          link = &s->next;
          continue;
        }
      *link = s->next;
      pool_count (pool, s, -1);
      max--;
      if (taken == NULL)
        {
          s->next = NULL;
          taken = s;
          continue;
        }
      s->next = cache->head;
      cache->head = s;
      cache->n++;
      if (s->dirty)
        cache->n_dirty++;
    }
  ws_lock_unlock (&pool->lock);
  return taken;
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
          if (s->dirty)
            cache->n_dirty--;
          return s;
        }
    }
  return NULL;
}

/**
 * ws_fiber_stack_get:
 * @pool: (nullable): the pool of the fiber's runtime; %NULL for a fresh
 *   mapping
 * @size: the usable size, at least WS_FIBER_STACK_MIN_SIZE
 *
 * A stack of @size usable bytes (rounded up to pages): one from the
 * calling worker's cache or from @pool, or a new mapping.
 *
 * With @pool, the stack counts against its cap until it is released
 * ("The cap").
 *
 * Returns: the stack, or NULL with @error set at the cap or if the
 *   mapping failed
 */
WsFiberStack *
ws_fiber_stack_get (WsFiberStackPool  *pool,
                    gsize              size,
                    GError           **error)
{
  StackCache *cache = pool != NULL ? get_cache (pool) : NULL;
  gsize page = page_size ();
  gsize usable = (size + page - 1) & ~(page - 1);
  WsFiberStack *s = NULL;

  if G_LIKELY (cache != NULL)
    s = take (cache, usable);
  /* A racy peek: an empty pool is not worth the lock, and a stack that
   * lands there just after is found by the next get. */
  if (s == NULL && pool != NULL && atomic_load_explicit (&pool->n, memory_order_relaxed) > 0)
    s = refill (pool, cache, usable, cache != NULL ? WS_FIBER_STACK_BATCH : 1);
  if (s == NULL)
    s = map_counted (pool, size, error);
  if (s != NULL)
    s->dirty = TRUE;
  return s;
}

/* Moves @n stacks of @cache (all if @n is 0) to its pool: trimmed with
 * @trim_all, else untrimmed while the pool holds fewer than
 * WS_FIBER_STACK_POOL_DIRTY_MAX untrimmed ones (a racy peek: two spills at
 * once may each add a batch past it). */
static void
spill (StackCache *cache,
       guint       n,
       gboolean    trim_all)
{
  WsFiberStackPool *pool = cache->pool;
  WsFiberStack *list = NULL;
  guint n_dirty = trim_all ? G_MAXUINT
                           : atomic_load_explicit (&pool->n_dirty, memory_order_relaxed);

  for (guint i = 0; (n == 0 || i < n) && cache->head != NULL; i++)
    {
      WsFiberStack *s = cache->head;

      cache->head = s->next;
      cache->n--;
      if (s->dirty)
        {
          cache->n_dirty--;
          if (n_dirty >= WS_FIBER_STACK_POOL_DIRTY_MAX)
            trim (s);
          else
            n_dirty++;
        }
      s->next = list;
      list = s;
    }
  pool_put_list (pool, list);
}

/* Trims the untrimmed stacks of @pool: takes them out under the lock,
 * trims them outside it, and puts them back. */
static void
trim_pool (WsFiberStackPool *pool)
{
  WsFiberStack *list = NULL;

  if (atomic_load_explicit (&pool->n_dirty, memory_order_relaxed) == 0)
    return;
  ws_lock_lock (&pool->lock);
  for (WsFiberStack **link = &pool->head; *link != NULL;)
    {
      WsFiberStack *s = *link;

      if (!s->dirty)
        {
          link = &s->next;
          continue;
        }
      *link = s->next;
      pool_count (pool, s, -1);
      s->next = list;
      list = s;
    }
  ws_lock_unlock (&pool->lock);
  for (WsFiberStack *s = list; s != NULL; s = s->next)
    trim (s);
  pool_put_list (pool, list);
}

/**
 * ws_fiber_stack_release:
 * @pool: (nullable): the pool @stack was got for; %NULL to unmap it
 * @stack: a stack with no live frame
 *
 * Gives @stack back: to the calling worker's cache, or trimmed to @pool.
 */
void
ws_fiber_stack_release (WsFiberStackPool *pool,
                        WsFiberStack     *stack)
{
  StackCache *cache;

#ifdef WS_ASAN
  /* The fiber's last frame never returned: its redzones are still
   * poisoned, and the next fiber's frames will land on them. */
  ASAN_UNPOISON_MEMORY_REGION (ws_fiber_stack_bottom (stack),
                               (guint8 *) ws_fiber_stack_top (stack)
                               - (guint8 *) ws_fiber_stack_bottom (stack));
#endif
  if G_UNLIKELY (pool == NULL)
    {
      ws_fiber_stack_free (stack);
      return;
    }
  cache = get_cache (pool);
  if G_UNLIKELY (cache == NULL)
    {
      trim (stack);
      stack->next = NULL;
      pool_put_list (pool, stack);
      return;
    }
  if G_UNLIKELY (cache->n >= WS_FIBER_STACK_CACHE_MAX)
    spill (cache, WS_FIBER_STACK_BATCH, FALSE);
  stack->next = cache->head;
  cache->head = stack;
  cache->n++;
  if (stack->dirty)
    cache->n_dirty++;
}

/**
 * ws_fiber_stack_cache_wants_trim:
 *
 * Whether ws_fiber_stack_trim_cache () would do anything now: the calling
 * thread's cache holds an untrimmed stack or more than it keeps idle, or
 * its pool holds untrimmed stacks (a relaxed peek: a hint, as in
 * trim_pool ()). A worker about to park asks it, to park with the trim's
 * deadline or without one.
 */
gboolean
ws_fiber_stack_cache_wants_trim (void)
{
  StackCache *cache = &ws_thread.stack_cache;

  if (cache->pool == NULL)
    return FALSE;
  return cache->n_dirty > 0 || cache->n > WS_FIBER_STACK_IDLE_KEEP
         || atomic_load_explicit (&cache->pool->n_dirty, memory_order_relaxed) > 0;
}

/**
 * ws_fiber_stack_trim_cache:
 *
 * A worker calls it once it has been parked for
 * WS_FIBER_STACK_TRIM_DELAY_USEC: gives back the pages of the calling
 * thread's cached stacks but their top ones, and gives the pool all of
 * them but WS_FIBER_STACK_IDLE_KEEP, which busy workers would otherwise
 * not find while this one sleeps.
 */
void
ws_fiber_stack_trim_cache (void)
{
  StackCache *cache = &ws_thread.stack_cache;

  if (cache->pool == NULL)
    return;
  if (cache->n > WS_FIBER_STACK_IDLE_KEEP)
    spill (cache, cache->n - WS_FIBER_STACK_IDLE_KEEP, TRUE);
  trim_pool (cache->pool);
  if (cache->n_dirty == 0)
    return;
  for (WsFiberStack *s = cache->head; s != NULL; s = s->next)
    trim (s);
  cache->n_dirty = 0;
}

/**
 * ws_fiber_stack_flush_cache:
 *
 * Gives the calling thread's cache to its pool, trimmed: a worker's
 * thread calls it when it stops being that worker, before it lets go of
 * the runtime.
 */
void
ws_fiber_stack_flush_cache (void)
{
  StackCache *cache = &ws_thread.stack_cache;

  if (cache->pool == NULL)
    return;
  spill (cache, 0, TRUE);
  cache->pool = NULL;
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

guint64
ws_fiber_stack_get_n_trims (void)
{
  return atomic_load_explicit (&n_trims, memory_order_relaxed);
}

gint64
ws_fiber_stack_get_mapped_bytes (void)
{
  return atomic_load_explicit (&mapped_bytes, memory_order_relaxed);
}
