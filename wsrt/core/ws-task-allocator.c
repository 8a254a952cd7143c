/* ws-task-allocator.c: per-thread caches of task memory
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Every spawn allocates a task and every completion frees one, often on
 * another worker: malloc and free were about 30% of the instructions of
 * the spawn benchmarks, and the free of a chunk that another thread
 * allocated goes back to that thread's arena under its lock. Tasks are
 * all one size, so each thread keeps the ones it frees in a cache of two
 * magazines (lists of WS_TASK_MAGAZINE_SIZE blocks, linked through the
 * first word of each free block, a WsFreeBlock) and allocates from it.
 * Every call passes the same size, a task's (ws_raw_task_new); a cached
 * block is handed out for it without a look at the size. Three more
 * classes have caches and a depot of their own. Tailed blocks, of
 * WS_TASK_ALLOCATOR_TAILED bytes, and large ones, of
 * WS_TASK_ALLOCATOR_LARGE, serve tasks that carry a tail of the
 * spawner's in the same allocation (ws_raw_task_new_with_tail: a state
 * copied into the task, a completion's delivery, a fiber), the smallest
 * class the tail fits. Small blocks, of WS_TASK_ALLOCATOR_SMALL bytes,
 * serve the face's small objects that are made and dropped with tasks,
 * on whichever threads run them (a WsOneshot, ws-oneshot.c). malloc
 * would serve each of them past glibc's per-thread cache and free it
 * into the allocating thread's arena under its lock when another worker
 * ends it. A zeroed tail is zeroed by the allocation; a copied one only
 * copied (ws_task_allocator_alloc_large's @n_zero). A thread that frees more
 * than it allocates hands full magazines to a shared depot; one that
 * allocates more takes them back: one lock per WS_TASK_MAGAZINE_SIZE
 * tasks (the magazine and depot scheme of Bonwick's slab allocator). The
 * depot is bounded; past it, tasks go back to malloc. A thread's cache
 * goes to the depot when the thread exits. Each of a thread's two
 * magazines counts the blocks at its bottom that came from the depot
 * (n_remote, n_remote_full): those were freed on another thread, so
 * each is zeroed by memset and fetches the lines of the one under it
 * ahead (alloc0 ()); the others, in this CPU's cache, by plain stores
 * (zero_block ()).
 *
 * AddressSanitizer builds bypass the caches, so that a use of a freed
 * task is still reported; every other build (release, TSan, chaos,
 * valgrind) runs them.
 */

#include "config.h"

#include <string.h>

#include "ws-task-allocator-private.h"
#include "ws-thread-private.h"
#include "ws-lock-private.h"

#if defined(__SANITIZE_ADDRESS__)
# define WS_TASK_CACHE 0
#elif defined(__has_feature)
# if __has_feature(address_sanitizer)
#  define WS_TASK_CACHE 0
# endif
#endif
#ifndef WS_TASK_CACHE
# define WS_TASK_CACHE 1
#endif

#define WS_TASK_MAGAZINE_SIZE 64
/* Magazines: 16,384 tasks, 1.5 MiB. A thread that spawns bursts of
 * 10,000 tasks that the workers free (a main loop's fan-out) found a
 * quarter of the size too small: the rest went back to malloc on the
 * workers and came from calloc on the spawner (doc/performance.md). */
#define WS_TASK_DEPOT_MAX     256
/* Large blocks: 4 magazines, 4 x 64 x 416 bytes, 104 KiB. The depot
 * outlives every runtime, and a larger one kept a burst's fibers after
 * the runtime was gone (bench-memory fiber-burst); the flow between two
 * workers that spawn and end fibers needs only a few. */
#define WS_TASK_DEPOT_MAX_LARGE 4
/* Small blocks: 16 magazines, 16 x 64 x 64 bytes, 64 KiB, for the same
 * reason: a flow between threads, not a store. */
#define WS_TASK_DEPOT_MAX_SMALL 16
/* Tailed tasks: 64 magazines, 64 x 64 x 192 bytes, 768 KiB. They come in
 * the same bursts as plain tasks (a task that spawns a thousand stateful
 * children), a quarter of the plain depot's count at 1.6 times the size. */
#define WS_TASK_DEPOT_MAX_TAILED 64

/* The classes: a task's blocks, large ones, small ones and tailed tasks'. */
enum
{
  CLASS_TASK,
  CLASS_LARGE,
  CLASS_SMALL,
  CLASS_TAILED,
  N_CLASSES,
};

#if WS_TASK_CACHE

enum
{
  NOT_REGISTERED,
  REGISTERED,                         /* the exit destructor is set */
  EXITED,                             /* flushed: free straight to malloc */
};

/* A thread's magazines are ws_thread.task_cache (ws-thread-private.h);
 * exit_state is NOT_REGISTERED, REGISTERED or EXITED. */
typedef WsThreadTaskCache ThreadCache;

/* Full magazines of each class, linked through the next_magazine of
 * their first block. */
static WsLock       depot_lock = WS_LOCK_INIT;
static WsFreeBlock *depot[N_CLASSES];
static guint        n_depot[N_CLASSES];
static const guint  depot_max[N_CLASSES] = {
  WS_TASK_DEPOT_MAX, WS_TASK_DEPOT_MAX_LARGE, WS_TASK_DEPOT_MAX_SMALL,
  WS_TASK_DEPOT_MAX_TAILED
};

static void
free_magazine (WsFreeBlock *magazine)
{
  while (magazine != NULL)
    {
      WsFreeBlock *next = magazine->next;

      g_free (magazine);
      magazine = next;
    }
}

/* Gives a full magazine to the depot, or back to malloc if it is full. */
static void
depot_put (guint        klass,
           WsFreeBlock *magazine)
{
  ws_lock_lock (&depot_lock);
  if (n_depot[klass] < depot_max[klass])
    {
      magazine->next_magazine = depot[klass];
      depot[klass] = magazine;
      n_depot[klass]++;
      magazine = NULL;
    }
  ws_lock_unlock (&depot_lock);

  free_magazine (magazine);
}

static WsFreeBlock *
depot_get (guint klass)
{
  WsFreeBlock *magazine;

  ws_lock_lock (&depot_lock);
  magazine = depot[klass];
  if (magazine != NULL)
    {
      depot[klass] = magazine->next_magazine;
      magazine->next_magazine = NULL;
      n_depot[klass]--;
    }
  ws_lock_unlock (&depot_lock);

  return magazine;
}

static void
flush_class (guint        klass,
             ThreadCache *cache)
{
  free_magazine (cache->current);
  cache->current = NULL;
  cache->n_current = cache->n_remote = cache->n_remote_full = 0;
  if (cache->full != NULL)
    depot_put (klass, g_steal_pointer (&cache->full));
}

/* Thread exit: the caches go to the depot. The partial magazines are
 * freed (the depot holds full ones only). A block freed later on this
 * thread, by another destructor, goes straight back to malloc. The
 * key's value is the task class's cache, which holds the exit state of
 * all four. */
static void
flush_thread_cache (gpointer data)
{
  ThreadCache *cache = data;

  cache->exit_state = EXITED;
  flush_class (CLASS_TASK, cache);
  flush_class (CLASS_LARGE, &ws_thread.task_cache_large);
  flush_class (CLASS_SMALL, &ws_thread.task_cache_small);
  flush_class (CLASS_TAILED, &ws_thread.task_cache_tailed);
}

static GPrivate cache_key = G_PRIVATE_INIT (flush_thread_cache);

/* Before this thread's caches first hold a block: flush them when the
 * thread exits. FALSE once it has exited (then use malloc directly). */
static G_GNUC_NO_INLINE gboolean
cache_register (ThreadCache *cache)
{
  if (cache->exit_state == EXITED)
    return FALSE;
  cache->exit_state = REGISTERED;
  g_private_set (&cache_key, cache);
  return TRUE;
}

static inline gboolean
cache_usable (void)
{
  ThreadCache *cache = &ws_thread.task_cache;

  if G_LIKELY (cache->exit_state == REGISTERED)
    return TRUE;
  return cache_register (cache);
}

/* Zeroes the first @n bytes of @block. @remote: the block came in a
 * magazine from the depot, so its free, and its link, were written on
 * another thread, whose cache holds its lines; otherwise this thread
 * freed it, and the lines are likely in this CPU's cache. A task's size
 * is a constant here once the spawn inlines its allocation, and GCC
 * expands a memset of it into `rep stosq`, whose start-up costs more
 * than the stores where the block is in this cache, and less where it is
 * not (doc/performance.md, 668d122). So plain stores for a block of this
 * thread's, written out rather than as a loop, which GCC would turn back
 * into the memset; memset for the rest, and for a size not known when
 * compiling. */
typedef guint64 WsZero16 __attribute__ ((vector_size (16), aligned (8))) G_GNUC_MAY_ALIAS;
typedef guint64 WsZero8 G_GNUC_MAY_ALIAS;

G_ALWAYS_INLINE static inline void
zero_16_at (guint8 *p,
            gsize   n,
            gsize   offset)
{
  if (offset + 16 <= n)
    *(WsZero16 *) (p + offset) = (WsZero16) { 0, 0 };
}

G_ALWAYS_INLINE static inline void
zero_block (gpointer block,
            gsize    n,
            gboolean remote)
{
  if (__builtin_constant_p (n) && n <= 128 && n % 8 == 0 && !remote)
    {
      guint8 *p = block;

      zero_16_at (p, n, 0);
      zero_16_at (p, n, 16);
      zero_16_at (p, n, 32);
      zero_16_at (p, n, 48);
      zero_16_at (p, n, 64);
      zero_16_at (p, n, 80);
      zero_16_at (p, n, 96);
      zero_16_at (p, n, 112);
      if (n % 16 != 0)
        *(WsZero8 *) (p + n - 8) = 0;
    }
  else
    memset (block, 0, n);
}

/* Gives @cache's empty current magazine a full one, its own or the
 * depot's; FALSE if neither has one (or the thread has exited), for the
 * caller to use malloc. Out of line: once per WS_TASK_MAGAZINE_SIZE
 * allocations, and the depot's lock would give every allocation a
 * stack frame. */
static G_GNUC_NO_INLINE gboolean
refill (guint        klass,
        ThreadCache *cache)
{
  if (!cache_usable ())
    return FALSE;
  if (cache->full != NULL)
    {
      cache->current = g_steal_pointer (&cache->full);
      cache->n_current = WS_TASK_MAGAZINE_SIZE;
      cache->n_remote = cache->n_remote_full;
      cache->n_remote_full = 0;
    }
  else if ((cache->current = depot_get (klass)) != NULL)
    cache->n_current = cache->n_remote = WS_TASK_MAGAZINE_SIZE;
  else
    return FALSE;
  return TRUE;
}

/* A block of @block_size bytes (malloc's, when no magazine has one), of
 * which at least the first @n_zero are zeroed. */
static inline gpointer
alloc0 (guint        klass,
        ThreadCache *cache,
        gsize        block_size,
        gsize        n_zero)
{
  WsFreeBlock *block;
  gboolean remote;

  if G_UNLIKELY (cache->current == NULL && !refill (klass, cache))
    return g_malloc0 (block_size);

  block = cache->current;
  cache->current = block->next;
  remote = cache->n_current <= cache->n_remote;
  cache->n_current--;
  if (remote)
    {
      /* The blocks under a depot block are the depot's too, on lines
       * another CPU wrote last. The next allocation loads the next
       * block's link and then fills the block in, and a spawn's notify
       * fence waits for those stores: ask now, for writing, for the
       * block's first two lines (a task's 128 bytes), so that they
       * arrive while this task is filled in. Not for this thread's own
       * blocks, whose lines are here already (doc/performance.md, "What
       * each optimisation bought"). */
      cache->n_remote = cache->n_current;
      if (cache->current != NULL)
        {
          __builtin_prefetch (cache->current, 1, 3);
          if (block_size > 64)
            __builtin_prefetch ((guint8 *) cache->current + 64, 1, 3);
        }
    }
  zero_block (block, n_zero, remote);
  return block;
}

/* The current magazine is full: it becomes the spare, and the spare goes
 * to the depot. Out of line, as refill (). */
static G_GNUC_NO_INLINE void
rotate (guint        klass,
        ThreadCache *cache)
{
  if (cache->full != NULL)
    depot_put (klass, cache->full);
  cache->full = cache->current;
  cache->n_remote_full = cache->n_remote;
  cache->current = NULL;
  cache->n_current = cache->n_remote = 0;
}

static inline void
free_block (guint        klass,
            ThreadCache *cache,
            gpointer     data)
{
  WsFreeBlock *block = data;

  if G_UNLIKELY (!cache_usable ())
    {
      g_free (block);
      return;
    }

  if G_UNLIKELY (cache->n_current == WS_TASK_MAGAZINE_SIZE)
    rotate (klass, cache);

  block->next = cache->current;
  block->next_magazine = NULL;
  cache->current = block;
  cache->n_current++;
}

gpointer
ws_task_allocator_alloc0 (gsize size)
{
  return alloc0 (CLASS_TASK, &ws_thread.task_cache, size, size);
}

void
ws_task_allocator_free (gpointer data)
{
  free_block (CLASS_TASK, &ws_thread.task_cache, data);
}

/* A large block is always allocated whole (malloc's fallback too), so
 * that any large block may be cached when it is freed; its first
 * @n_zero bytes are zeroed. */
gpointer
ws_task_allocator_alloc_large (gsize size,
                               gsize n_zero)
{
  g_return_val_if_fail (size <= WS_TASK_ALLOCATOR_LARGE && n_zero <= size, NULL);

  return alloc0 (CLASS_LARGE, &ws_thread.task_cache_large, WS_TASK_ALLOCATOR_LARGE, n_zero);
}

void
ws_task_allocator_free_large (gpointer data)
{
  free_block (CLASS_LARGE, &ws_thread.task_cache_large, data);
}

/* As large blocks, small ones are allocated whole. */
gpointer
ws_task_allocator_alloc0_small (gsize size)
{
  g_return_val_if_fail (size <= WS_TASK_ALLOCATOR_SMALL, NULL);

  return alloc0 (CLASS_SMALL, &ws_thread.task_cache_small, WS_TASK_ALLOCATOR_SMALL, size);
}

void
ws_task_allocator_free_small (gpointer data)
{
  free_block (CLASS_SMALL, &ws_thread.task_cache_small, data);
}

/* As large blocks, tailed ones are allocated whole. */
gpointer
ws_task_allocator_alloc_tailed (gsize size,
                                gsize n_zero)
{
  g_return_val_if_fail (size <= WS_TASK_ALLOCATOR_TAILED && n_zero <= size, NULL);

  return alloc0 (CLASS_TAILED, &ws_thread.task_cache_tailed, WS_TASK_ALLOCATOR_TAILED, n_zero);
}

void
ws_task_allocator_free_tailed (gpointer data)
{
  free_block (CLASS_TAILED, &ws_thread.task_cache_tailed, data);
}

void
ws_task_allocator_get_n_cached (gsize *n_thread,
                                gsize *n_in_depot)
{
  ws_lock_lock (&depot_lock);
  *n_in_depot = (gsize) n_depot[CLASS_TASK] * WS_TASK_MAGAZINE_SIZE;
  ws_lock_unlock (&depot_lock);

  *n_thread = ws_thread.task_cache.n_current
              + (ws_thread.task_cache.full != NULL ? WS_TASK_MAGAZINE_SIZE : 0);
}

#else /* !WS_TASK_CACHE */

gpointer
ws_task_allocator_alloc0 (gsize size)
{
  return g_malloc0 (size);
}

void
ws_task_allocator_free (gpointer block)
{
  g_free (block);
}

/* Exactly @size bytes, so that AddressSanitizer sees a use past them. */
static gpointer
alloc_exact (gsize size,
             gsize n_zero)
{
  gpointer block = g_malloc (size);

  memset (block, 0, n_zero);
  return block;
}

gpointer
ws_task_allocator_alloc_large (gsize size,
                               gsize n_zero)
{
  g_return_val_if_fail (size <= WS_TASK_ALLOCATOR_LARGE && n_zero <= size, NULL);

  return alloc_exact (size, n_zero);
}

void
ws_task_allocator_free_large (gpointer block)
{
  g_free (block);
}

gpointer
ws_task_allocator_alloc0_small (gsize size)
{
  g_return_val_if_fail (size <= WS_TASK_ALLOCATOR_SMALL, NULL);

  return g_malloc0 (size);
}

void
ws_task_allocator_free_small (gpointer block)
{
  g_free (block);
}

gpointer
ws_task_allocator_alloc_tailed (gsize size,
                                gsize n_zero)
{
  g_return_val_if_fail (size <= WS_TASK_ALLOCATOR_TAILED && n_zero <= size, NULL);

  return alloc_exact (size, n_zero);
}

void
ws_task_allocator_free_tailed (gpointer block)
{
  g_free (block);
}

void
ws_task_allocator_get_n_cached (gsize *n_thread,
                                gsize *n_in_depot)
{
  *n_thread = 0;
  *n_in_depot = 0;
}

#endif /* WS_TASK_CACHE */
