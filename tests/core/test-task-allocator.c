/* test-task-allocator.c: the per-thread caches of task memory
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "../ws-test-fixture.h"
#include "ws-task-allocator-private.h"

/* A thread's freed tasks are reused by that thread,
 * its full magazines reach the shared depot when it exits, and another
 * thread allocates from there. ASan builds bypass the caches (so that a
 * use after free is reported): nothing is ever cached there. */
#define ALLOC_N 200

typedef struct
{
  gsize thread;
  gsize depot;
} Cached;

/* Empties the depot: allocates until this thread's cache and the depot are
 * empty, and frees past the caches. */
static gpointer
drain_depot_thread (gpointer data)
{
  GPtrArray *tasks = g_ptr_array_new_with_free_func (g_free);
  gsize in_thread, in_depot;

  for (;;)
    {
      ws_task_allocator_get_n_cached (&in_thread, &in_depot);
      if (in_thread + in_depot == 0)
        break;
      g_ptr_array_add (tasks, ws_task_allocator_alloc0 (sizeof (WsRawTask)));
    }
  g_ptr_array_unref (tasks);
  return NULL;
}

/* Every byte of @block's first @n is zero. */
static void
assert_zeroed (gconstpointer block,
               gsize         n)
{
  for (gsize i = 0; i < n; i++)
    g_assert_cmpuint (((const guint8 *) block)[i], ==, 0);
}

G_GNUC_UNUSED static gpointer
alloc_one_thread (gpointer data)
{
  Cached *cached = data;
  WsRawTask *t = ws_task_allocator_alloc0 (sizeof (WsRawTask));

  /* From a magazine another thread filled, with blocks it had dirtied:
   * cleared all the same. */
  assert_zeroed (t, sizeof (WsRawTask));
  ws_task_allocator_get_n_cached (&cached->thread, &cached->depot);
  g_free (t);               /* not back to the cache: the counts stay */
  return NULL;
}

static gpointer
alloc_free_thread (gpointer data)
{
  WsRawTask *tasks[ALLOC_N];
  Cached *cached = data;

  for (guint i = 0; i < ALLOC_N; i++)
    tasks[i] = ws_task_allocator_alloc0 (sizeof (WsRawTask));
  for (guint i = 0; i < ALLOC_N; i++)
    {
      memset (tasks[i], 0xa5, sizeof (WsRawTask));  /* dirty it: alloc0 must clear it */
      ws_task_allocator_free (tasks[i]);
    }
  ws_task_allocator_get_n_cached (&cached->thread, &cached->depot);

  /* The most recently freed task comes back first, cleared. */
  tasks[0] = ws_task_allocator_alloc0 (sizeof (WsRawTask));
  g_assert_true (cached->thread == 0 || tasks[0] == tasks[ALLOC_N - 1]);
  assert_zeroed (tasks[0], sizeof (WsRawTask));
  ws_task_allocator_free (tasks[0]);
  return NULL;
}

static void
test_allocator_caches (void)
{
  Cached before, in_thread, after, taken;

  g_thread_join (g_thread_new ("drain", drain_depot_thread, NULL));
  ws_task_allocator_get_n_cached (&before.thread, &before.depot);
  g_assert_cmpuint (before.depot, ==, 0);
  g_thread_join (g_thread_new ("alloc-free", alloc_free_thread, &in_thread));
  ws_task_allocator_get_n_cached (&after.thread, &after.depot);

#if defined(__SANITIZE_ADDRESS__)
  g_assert_cmpuint (in_thread.thread + in_thread.depot, ==, 0);
  g_assert_cmpuint (after.thread + after.depot, ==, 0);
  (void) taken;
#else
  /* 200 frees: one full magazine of 64 and 8 tasks kept by the thread,
   * two magazines to the depot. */
  g_assert_cmpuint (in_thread.thread, ==, 64 + 8);
  g_assert_cmpuint (in_thread.depot, ==, 2 * 64);
  /* At exit the full magazine went to the depot, the partial one back to
   * malloc. */
  g_assert_cmpuint (after.depot, ==, 3 * 64);
  g_assert_cmpuint (after.thread, ==, before.thread);

  /* A thread with an empty cache allocates from the depot: one magazine
   * leaves it, 63 tasks stay in that thread's cache. */
  g_thread_join (g_thread_new ("alloc", alloc_one_thread, &taken));
  g_assert_cmpuint (taken.depot, ==, after.depot - 64);
  g_assert_cmpuint (taken.thread, ==, 63);
#endif
}

/* Large blocks have caches of their own: a thread's freed large block
 * comes back to its next large allocation, with the bytes asked for
 * zeroed, and never to a task's; a freed task never to a large one. */
static gpointer
large_thread (gpointer data)
{
  guint8 *a = ws_task_allocator_alloc_large (WS_TASK_ALLOCATOR_LARGE, WS_TASK_ALLOCATOR_LARGE);
  guint8 *b = ws_task_allocator_alloc_large (100, 100);
  gpointer task = ws_task_allocator_alloc0 (sizeof (WsRawTask));
  guint8 *again;
  gpointer task_again;

  for (guint i = 0; i < 100; i++)
    g_assert_cmpuint (b[i], ==, 0);
  memset (a, 0xa5, WS_TASK_ALLOCATOR_LARGE);  /* dirty: alloc0 must clear */
  memset (b, 0x5a, 100);
  ws_task_allocator_free_large (a);
  ws_task_allocator_free (task);
  ws_task_allocator_free_large (b);

  again = ws_task_allocator_alloc_large (200, 200);
  task_again = ws_task_allocator_alloc0 (sizeof (WsRawTask));
#if !defined(__SANITIZE_ADDRESS__)
  g_assert_true (again == b);
  g_assert_true (task_again == task);
#endif
  for (guint i = 0; i < 200; i++)
    g_assert_cmpuint (again[i], ==, 0);

  /* A task whose tail a state fills asks for its header zeroed only:
   * those bytes are zero in a dirty block taken back, and the block has
   * room for the whole size asked for. */
  memset (again, 0x3c, 200);
  ws_task_allocator_free_large (again);
  again = ws_task_allocator_alloc_large (300, 40);
#if !defined(__SANITIZE_ADDRESS__)
  g_assert_true (again == b);
#endif
  for (guint i = 0; i < 40; i++)
    g_assert_cmpuint (again[i], ==, 0);
  memset (again + 40, 0x11, 300 - 40);
  ws_task_allocator_free_large (again);
  ws_task_allocator_free (task_again);
  return NULL;
}

static void
test_allocator_large (void)
{
  g_thread_join (g_thread_new ("large", large_thread, NULL));
}

/* Small blocks likewise: a freed small block comes back to the next
 * small allocation, zeroed to the size asked for, never to a large one
 * or a task's; and one freed on another thread is cached there, for
 * that thread's next small allocation. */
typedef struct
{
  guint8 *block;
  guint8 *again;
} Handed;

static gpointer
small_free_elsewhere_thread (gpointer data)
{
  Handed *h = data;

  memset (h->block, 0x33, 48);
  ws_task_allocator_free_small (h->block);
  h->again = ws_task_allocator_alloc0_small (WS_TASK_ALLOCATOR_SMALL);
  for (guint i = 0; i < WS_TASK_ALLOCATOR_SMALL; i++)
    g_assert_cmpuint (h->again[i], ==, 0);
  ws_task_allocator_free_small (h->again);
  return NULL;
}

static gpointer
small_thread (gpointer data)
{
  guint8 *a = ws_task_allocator_alloc0_small (WS_TASK_ALLOCATOR_SMALL);
  guint8 *b = ws_task_allocator_alloc0_small (40);
  guint8 *large = ws_task_allocator_alloc_large (WS_TASK_ALLOCATOR_LARGE, WS_TASK_ALLOCATOR_LARGE);
  guint8 *again, *large_again;
  Handed handed;

  for (guint i = 0; i < 40; i++)
    g_assert_cmpuint (b[i], ==, 0);
  memset (a, 0xa5, WS_TASK_ALLOCATOR_SMALL);  /* dirty: alloc0 must clear */
  memset (b, 0x5a, 40);
  ws_task_allocator_free_small (a);
  ws_task_allocator_free_large (large);
  ws_task_allocator_free_small (b);

  again = ws_task_allocator_alloc0_small (48);
  large_again = ws_task_allocator_alloc_large (WS_TASK_ALLOCATOR_LARGE, WS_TASK_ALLOCATOR_LARGE);
#if !defined(__SANITIZE_ADDRESS__)
  g_assert_true (again == b);
  g_assert_true (large_again == large);
#endif
  for (guint i = 0; i < 48; i++)
    g_assert_cmpuint (again[i], ==, 0);
  ws_task_allocator_free_large (large_again);

  handed.block = again;
  g_thread_join (g_thread_new ("small-elsewhere", small_free_elsewhere_thread, &handed));
#if !defined(__SANITIZE_ADDRESS__)
  g_assert_true (handed.again == handed.block);
#endif
  ws_task_allocator_free_small (ws_task_allocator_alloc0_small (1));
  return NULL;
}

static void
test_allocator_small (void)
{
  g_thread_join (g_thread_new ("small", small_thread, NULL));
}

/* Tailed tasks' blocks likewise: a freed one comes back to the next
 * tailed allocation, zeroed to the size asked for, never to a plain
 * task's or a small block's; and a tail starts 16-byte aligned with room
 * for 64 bytes. */
static gpointer
tailed_thread (gpointer data)
{
  guint8 *a = ws_task_allocator_alloc_tailed (WS_TASK_ALLOCATOR_TAILED, WS_TASK_ALLOCATOR_TAILED);
  gpointer task = ws_task_allocator_alloc0 (sizeof (WsRawTask));
  gpointer small = ws_task_allocator_alloc0_small (WS_TASK_ALLOCATOR_SMALL);
  guint8 *again;
  gpointer task_again, small_again;

  g_assert_cmpuint (WS_RAW_TASK_TAIL_OFFSET % 16, ==, 0);
  g_assert_cmpuint (WS_RAW_TASK_TAIL_OFFSET, >=, sizeof (WsRawTask));
  g_assert_cmpuint (WS_RAW_TASK_TAIL_OFFSET + 64, <=, WS_TASK_ALLOCATOR_TAILED);
  for (guint i = 0; i < WS_TASK_ALLOCATOR_TAILED; i++)
    g_assert_cmpuint (a[i], ==, 0);
  memset (a, 0xa5, WS_TASK_ALLOCATOR_TAILED);  /* dirty: alloc0 must clear */
  ws_task_allocator_free_tailed (a);
  ws_task_allocator_free (task);
  ws_task_allocator_free_small (small);

  task_again = ws_task_allocator_alloc0 (sizeof (WsRawTask));
  small_again = ws_task_allocator_alloc0_small (WS_TASK_ALLOCATOR_SMALL);
  again = ws_task_allocator_alloc_tailed (150, 150);
#if !defined(__SANITIZE_ADDRESS__)
  g_assert_true (again == a);
  g_assert_true (task_again == task);
  g_assert_true (small_again == small);
#endif
  for (guint i = 0; i < 150; i++)
    g_assert_cmpuint (again[i], ==, 0);
  ws_task_allocator_free_tailed (again);
  ws_task_allocator_free (task_again);
  ws_task_allocator_free_small (small_again);
  return NULL;
}

static void
test_allocator_tailed (void)
{
  g_thread_join (g_thread_new ("tailed", tailed_thread, NULL));
}

WS_TEST_MAIN ({ "/task-allocator/caches", test_allocator_caches },
              { "/task-allocator/large", test_allocator_large },
              { "/task-allocator/small", test_allocator_small },
              { "/task-allocator/tailed", test_allocator_tailed })
