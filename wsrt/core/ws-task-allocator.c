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
 * block is handed out for it without a look at the size. A thread that frees more than it
 * allocates hands full magazines to a shared depot; one that allocates
 * more takes them back: one lock per WS_TASK_MAGAZINE_SIZE tasks (the
 * magazine and depot scheme of Bonwick's slab allocator). The depot is
 * bounded; past it, tasks go back to malloc. A thread's cache goes to the
 * depot when the thread exits.
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

/* Full magazines, linked through the next_magazine of their first block. */
static WsLock       depot_lock = WS_LOCK_INIT;
static WsFreeBlock *depot;
static guint        n_depot;

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
depot_put (WsFreeBlock *magazine)
{
  ws_lock_lock (&depot_lock);
  if (n_depot < WS_TASK_DEPOT_MAX)
    {
      magazine->next_magazine = depot;
      depot = magazine;
      n_depot++;
      magazine = NULL;
    }
  ws_lock_unlock (&depot_lock);

  free_magazine (magazine);
}

static WsFreeBlock *
depot_get (void)
{
  WsFreeBlock *magazine;

  ws_lock_lock (&depot_lock);
  magazine = depot;
  if (magazine != NULL)
    {
      depot = magazine->next_magazine;
      magazine->next_magazine = NULL;
      n_depot--;
    }
  ws_lock_unlock (&depot_lock);

  return magazine;
}

/* Thread exit: the cache goes to the depot. The partial magazine is freed
 * (the depot holds full ones only). A task freed later on this thread, by
 * another destructor, goes straight back to malloc. */
static void
flush_thread_cache (gpointer data)
{
  ThreadCache *cache = data;

  cache->exit_state = EXITED;
  free_magazine (cache->current);
  cache->current = NULL;
  cache->n_current = 0;
  if (cache->full != NULL)
    depot_put (g_steal_pointer (&cache->full));
}

static GPrivate cache_key = G_PRIVATE_INIT (flush_thread_cache);

/* Before this thread's cache first holds a task: flush it when the thread
 * exits. FALSE once it has exited (then use malloc directly). */
static gboolean
cache_usable (ThreadCache *cache)
{
  if G_LIKELY (cache->exit_state == REGISTERED)
    return TRUE;
  if (cache->exit_state == EXITED)
    return FALSE;
  cache->exit_state = REGISTERED;
  g_private_set (&cache_key, cache);
  return TRUE;
}

gpointer
ws_task_allocator_alloc0 (gsize size)
{
  ThreadCache *cache = &ws_thread.task_cache;
  WsFreeBlock *block;

  if G_UNLIKELY (cache->current == NULL)
    {
      if (!cache_usable (cache))
        return g_malloc0 (size);
      if (cache->full != NULL)
        {
          cache->current = g_steal_pointer (&cache->full);
          cache->n_current = WS_TASK_MAGAZINE_SIZE;
        }
      else if ((cache->current = depot_get ()) != NULL)
        cache->n_current = WS_TASK_MAGAZINE_SIZE;
      else
        return g_malloc0 (size);
    }

  block = cache->current;
  cache->current = block->next;
  cache->n_current--;
  memset (block, 0, size);
  return block;
}

void
ws_task_allocator_free (gpointer data)
{
  ThreadCache *cache = &ws_thread.task_cache;
  WsFreeBlock *block = data;

  if G_UNLIKELY (!cache_usable (cache))
    {
      g_free (block);
      return;
    }

  if G_UNLIKELY (cache->n_current == WS_TASK_MAGAZINE_SIZE)
    {
      if (cache->full != NULL)
        depot_put (cache->full);
      cache->full = cache->current;
      cache->current = NULL;
      cache->n_current = 0;
    }

  block->next = cache->current;
  block->next_magazine = NULL;
  cache->current = block;
  cache->n_current++;
}

void
ws_task_allocator_get_n_cached (gsize *n_thread,
                                gsize *n_in_depot)
{
  ws_lock_lock (&depot_lock);
  *n_in_depot = (gsize) n_depot * WS_TASK_MAGAZINE_SIZE;
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

void
ws_task_allocator_get_n_cached (gsize *n_thread,
                                gsize *n_in_depot)
{
  *n_thread = 0;
  *n_in_depot = 0;
}

#endif /* WS_TASK_CACHE */
