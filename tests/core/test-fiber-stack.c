/* test-fiber-stack.c: the stacks fibers run on (ws-fiber-stack)
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Against the module alone, with no runtime and no fiber: a stack without
 * a pool is mapped and unmapped; a pool reuses a released stack of the
 * same size and maps one of another size; a stack that goes to the pool
 * is trimmed down to its top page (MADV_DONTNEED: the pages read as zero
 * again and are no longer resident); a worker's cache keeps stacks
 * untrimmed until the worker parks, and gives them to the pool when it is
 * flushed; the cap refuses a get past max-fiber-stacks with an error
 * naming it, after it has unmapped what the pool kept. ws-fiber-stack.c's
 * opening comment states each of these.
 *
 * The counters of the module are per process: each case compares them
 * with what it read before, and every case runs on one thread at a time.
 */

#include "config.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../ws-test-util.h"
#include "ws-fiber-stack-private.h"
#include "ws-thread-private.h"

#define SIZE  WS_FIBER_STACK_MIN_SIZE
#define SIZE2 (2 * WS_FIBER_STACK_MIN_SIZE)

static gsize
page (void)
{
  return (gsize) sysconf (_SC_PAGESIZE);
}

/* Pages of [@from, @to) resident now, by mincore (2). */
static gsize
n_resident (gpointer from,
            gpointer to)
{
  gsize n_pages = ((guint8 *) to - (guint8 *) from) / page ();
  g_autofree guchar *vec = g_malloc (n_pages);
  gsize n = 0;

  g_assert_cmpint (mincore (from, (guint8 *) to - (guint8 *) from, vec), ==, 0);
  for (gsize i = 0; i < n_pages; i++)
    n += vec[i] & 1;
  return n;
}

/* Writes @byte to every page of @stack's usable bytes. */
static void
touch_all (WsFiberStack *stack,
           guint8        byte)
{
  guint8 *bottom = ws_fiber_stack_bottom (stack);
  guint8 *top = ws_fiber_stack_top (stack);

  for (guint8 *p = bottom; p < top; p += page ())
    *p = byte;
}

/* No pool: a fresh mapping of the size asked for (rounded to pages),
 * guard below, usable and writable from bottom to top; a release unmaps
 * it and the mapped bytes go back to what they were. */
static void
test_no_pool (void)
{
  gint64 bytes = ws_fiber_stack_get_mapped_bytes ();
  guint64 mapped = ws_fiber_stack_get_n_mapped ();
  guint64 unmapped = ws_fiber_stack_get_n_unmapped ();
  g_autoptr (GError) error = NULL;
  WsFiberStack *s;

  s = ws_fiber_stack_get (NULL, SIZE + 1, &error);
  g_assert_no_error (error);
  g_assert_nonnull (s);
  g_assert_cmpuint (s->size, ==, SIZE + page ());
  g_assert_null (s->pool);
  g_assert_true (s->dirty);
  g_assert_cmpuint (ws_fiber_stack_get_n_mapped (), ==, mapped + 1);
  g_assert_cmpint (ws_fiber_stack_get_mapped_bytes (), ==, bytes + (gint64) s->map_size);
  g_assert_true ((guint8 *) ws_fiber_stack_bottom (s) == s->map + WS_FIBER_STACK_GUARD_SIZE);
  g_assert_cmpuint (GPOINTER_TO_SIZE (ws_fiber_stack_top (s)) % 16, ==, 0);
  g_assert_cmpuint ((guint8 *) ws_fiber_stack_top (s) - (guint8 *) ws_fiber_stack_bottom (s),
                    >=, s->size);
  /* The header is above the top, inside the mapping. */
  g_assert_true ((guint8 *) s >= (guint8 *) ws_fiber_stack_top (s));
  g_assert_true ((guint8 *) (s + 1) <= s->map + s->map_size);
  touch_all (s, 0xa5);
  ((guint8 *) ws_fiber_stack_top (s))[-1] = 0x5a;

  ws_fiber_stack_release (NULL, s);
  g_assert_cmpuint (ws_fiber_stack_get_n_unmapped (), ==, unmapped + 1);
  g_assert_cmpint (ws_fiber_stack_get_mapped_bytes (), ==, bytes);
}

/* A thread that is no worker has no cache: a release goes to the pool,
 * trimmed, and the next get of that size takes the same stack back
 * without a mapping; a get of another size maps a new one. Freeing the
 * pool unmaps what it keeps. */
static void
test_pool_reuse (void)
{
  gint64 bytes = ws_fiber_stack_get_mapped_bytes ();
  guint64 mapped = ws_fiber_stack_get_n_mapped ();
  guint64 unmapped = ws_fiber_stack_get_n_unmapped ();
  guint64 trims = ws_fiber_stack_get_n_trims ();
  WsFiberStackPool *pool = ws_fiber_stack_pool_new (G_MAXUINT);
  WsFiberStack *a, *b, *c;

  g_assert_null (ws_thread.worker);
  a = ws_fiber_stack_get (pool, SIZE, NULL);
  g_assert_nonnull (a);
  g_assert_true (a->pool == pool);
  g_assert_cmpuint (ws_fiber_stack_get_n_mapped (), ==, mapped + 1);

  ws_fiber_stack_release (pool, a);
  g_assert_cmpuint (ws_fiber_stack_get_n_trims (), ==, trims + 1);
  g_assert_false (a->dirty);
  g_assert_cmpuint (ws_fiber_stack_get_n_unmapped (), ==, unmapped);

  b = ws_fiber_stack_get (pool, SIZE, NULL);
  g_assert_true (b == a);
  g_assert_true (b->dirty);
  g_assert_cmpuint (ws_fiber_stack_get_n_mapped (), ==, mapped + 1);

  /* The pool keeps only b's size: another size is a new mapping. */
  ws_fiber_stack_release (pool, b);
  c = ws_fiber_stack_get (pool, SIZE2, NULL);
  g_assert_true (c != a);
  g_assert_cmpuint (c->size, ==, SIZE2);
  g_assert_cmpuint (ws_fiber_stack_get_n_mapped (), ==, mapped + 2);
  ws_fiber_stack_release (pool, c);

  /* Each of the three releases trimmed a dirty stack. */
  g_assert_cmpuint (ws_fiber_stack_get_n_trims (), ==, trims + 3);

  ws_fiber_stack_pool_free (pool);
  g_assert_cmpuint (ws_fiber_stack_get_n_unmapped (), ==, unmapped + 2);
  g_assert_cmpint (ws_fiber_stack_get_mapped_bytes (), ==, bytes);
}

/* A stack that goes to the pool keeps its top page only: every usable
 * page below it reads zero again and is no longer resident; the page
 * with the header keeps what was written there. */
static void
test_trim_bound (void)
{
  WsFiberStackPool *pool = ws_fiber_stack_pool_new (G_MAXUINT);
  WsFiberStack *s = ws_fiber_stack_get (pool, SIZE2, NULL);
  guint8 *bottom = ws_fiber_stack_bottom (s);
  guint8 *top_page = s->map + s->map_size - page ();
  gsize n_pages = (top_page - bottom) / page ();

  touch_all (s, 0xa5);
  g_assert_cmpuint (n_resident (bottom, top_page), ==, n_pages);
  ((guint8 *) ws_fiber_stack_top (s))[-1] = 0x5a;

  ws_fiber_stack_release (pool, s);
  g_assert_cmpuint (n_resident (bottom, top_page), ==, 0);
  g_assert_cmpuint (n_resident (top_page, top_page + page ()), ==, 1);

  s = ws_fiber_stack_get (pool, SIZE2, NULL);
  g_assert_true (s->map + WS_FIBER_STACK_GUARD_SIZE == bottom);
  for (guint8 *p = bottom; p < top_page; p += page ())
    g_assert_cmpuint (*p, ==, 0);
  if ((guint8 *) ws_fiber_stack_top (s) - 1 >= top_page)
    g_assert_cmpuint (((guint8 *) ws_fiber_stack_top (s))[-1], ==, 0x5a);
  ws_fiber_stack_release (pool, s);
  ws_fiber_stack_pool_free (pool);
}

/* A worker's cache (a thread whose ws_thread.worker is set): releases
 * stay there untrimmed and a get takes them back; a trim before a park
 * trims them all and keeps 4, giving the rest to the pool; a flush gives
 * the pool every one. */
typedef struct
{
  WsFiberStackPool *pool;
  WsFiberStack     *stacks[8];
} CacheCase;

static gpointer
cache_thread (gpointer data)
{
  CacheCase *c = data;
  guint64 trims = ws_fiber_stack_get_n_trims ();
  guint64 mapped = ws_fiber_stack_get_n_mapped ();

  /* Never dereferenced by this module: only compared with NULL. */
  ws_thread.worker = (struct _WsWorker *) c;

  for (guint i = 0; i < 8; i++)
    {
      c->stacks[i] = ws_fiber_stack_get (c->pool, SIZE, NULL);
      touch_all (c->stacks[i], 1);
    }
  g_assert_cmpuint (ws_fiber_stack_get_n_mapped (), ==, mapped + 8);
  for (guint i = 0; i < 8; i++)
    ws_fiber_stack_release (c->pool, c->stacks[i]);
  g_assert_cmpuint (ws_fiber_stack_get_n_trims (), ==, trims);
  for (guint i = 0; i < 8; i++)
    g_assert_true (c->stacks[i]->dirty);

  /* From the cache, last in first out, still untrimmed. */
  {
    WsFiberStack *s = ws_fiber_stack_get (c->pool, SIZE, NULL);

    g_assert_true (s == c->stacks[7]);
    g_assert_cmpuint (ws_fiber_stack_get_n_mapped (), ==, mapped + 8);
    ws_fiber_stack_release (c->pool, s);
  }

  /* About to park: all trimmed, four kept here, four to the pool. */
  ws_fiber_stack_trim_cache ();
  g_assert_cmpuint (ws_fiber_stack_get_n_trims (), ==, trims + 8);
  for (guint i = 0; i < 8; i++)
    g_assert_false (c->stacks[i]->dirty);
  ws_fiber_stack_trim_cache ();
  g_assert_cmpuint (ws_fiber_stack_get_n_trims (), ==, trims + 8);

  ws_fiber_stack_flush_cache ();
  ws_thread.worker = NULL;
  return NULL;
}

static void
test_worker_cache (void)
{
  guint64 unmapped = ws_fiber_stack_get_n_unmapped ();
  gint64 bytes = ws_fiber_stack_get_mapped_bytes ();
  CacheCase c = { ws_fiber_stack_pool_new (G_MAXUINT), { NULL, } };
  WsFiberStack *got[8];
  guint64 mapped;

  g_thread_join (g_thread_new ("worker", cache_thread, &c));
  mapped = ws_fiber_stack_get_n_mapped ();

  /* The flush gave every stack to the pool: this thread (no worker)
   * takes all eight from it without a mapping. */
  for (guint i = 0; i < 8; i++)
    {
      gboolean found = FALSE;

      got[i] = ws_fiber_stack_get (c.pool, SIZE, NULL);
      for (guint j = 0; j < 8; j++)
        if (c.stacks[j] == got[i])
          {
            found = TRUE;
            c.stacks[j] = NULL;
          }
      g_assert_true (found);
    }
  g_assert_cmpuint (ws_fiber_stack_get_n_mapped (), ==, mapped);
  g_assert_cmpuint (ws_fiber_stack_get_n_unmapped (), ==, unmapped);
  for (guint i = 0; i < 8; i++)
    ws_fiber_stack_release (c.pool, got[i]);
  ws_fiber_stack_pool_free (c.pool);
  g_assert_cmpint (ws_fiber_stack_get_mapped_bytes (), ==, bytes);
}

/* The cap: with max 2, a third get while two are out is refused with an
 * error naming max-fiber-stacks, and maps nothing; a stack the pool
 * keeps, of another size, is unmapped to make room for a new one; a
 * stack taken from the pool is no new mapping and needs no room. */
static void
test_cap (void)
{
  WsFiberStackPool *pool = ws_fiber_stack_pool_new (2);
  guint64 mapped = ws_fiber_stack_get_n_mapped ();
  guint64 unmapped = ws_fiber_stack_get_n_unmapped ();
  g_autoptr (GError) error = NULL;
  WsFiberStack *a, *b, *c;

  a = ws_fiber_stack_get (pool, SIZE, NULL);
  b = ws_fiber_stack_get (pool, SIZE, NULL);
  g_assert_nonnull (a);
  g_assert_nonnull (b);

  c = ws_fiber_stack_get (pool, SIZE, &error);
  g_assert_null (c);
  g_assert_nonnull (error);
  g_assert_nonnull (strstr (error->message, "max-fiber-stacks"));
  g_assert_nonnull (strstr (error->message, " 2 "));
  g_clear_error (&error);
  g_assert_cmpuint (ws_fiber_stack_get_n_mapped (), ==, mapped + 2);

  /* a is kept by the pool; a get of its size takes it back. */
  ws_fiber_stack_release (pool, a);
  c = ws_fiber_stack_get (pool, SIZE, &error);
  g_assert_no_error (error);
  g_assert_true (c == a);
  g_assert_cmpuint (ws_fiber_stack_get_n_mapped (), ==, mapped + 2);

  /* Another size: a is unmapped to make room. */
  ws_fiber_stack_release (pool, c);
  c = ws_fiber_stack_get (pool, SIZE2, &error);
  g_assert_no_error (error);
  g_assert_nonnull (c);
  g_assert_cmpuint (c->size, ==, SIZE2);
  g_assert_cmpuint (ws_fiber_stack_get_n_unmapped (), ==, unmapped + 1);
  g_assert_cmpuint (ws_fiber_stack_get_n_mapped (), ==, mapped + 3);

  /* Two out, the pool empty: refused again. */
  g_assert_null (ws_fiber_stack_get (pool, SIZE, &error));
  g_assert_nonnull (error);
  g_clear_error (&error);

  /* Unmapping one out (not through the pool) uncounts it. */
  ws_fiber_stack_free (b);
  b = ws_fiber_stack_get (pool, SIZE, &error);
  g_assert_no_error (error);
  g_assert_nonnull (b);

  ws_fiber_stack_release (pool, b);
  ws_fiber_stack_release (pool, c);
  ws_fiber_stack_pool_free (pool);
}

/* The default cap is a quarter of vm.max_map_count, when the kernel
 * states it. */
static void
test_default_cap (void)
{
  g_autofree char *contents = NULL;
  guint max = ws_fiber_stack_get_default_max_mapped ();

  g_assert_cmpuint (max, >=, 1);
  if (g_file_get_contents ("/proc/sys/vm/max_map_count", &contents, NULL, NULL))
    g_assert_cmpuint (max, ==, MAX (g_ascii_strtoull (contents, NULL, 10) / 4, 1));
  else
    g_assert_cmpuint (max, ==, G_MAXUINT);
}

/* A running worker's full cache spills a batch to the pool untrimmed
 * (the pool is under its watermark): no system call on the way from one
 * worker's cache to another's. A park trims everything: the cache's, the
 * spilled batch in the pool, and what the park gives the pool. */
#define N_SPILL 65                   /* one past a full cache */

static gpointer
spill_thread (gpointer data)
{
  WsFiberStackPool *pool = data;
  WsFiberStack *stacks[N_SPILL];
  guint64 trims = ws_fiber_stack_get_n_trims ();

  ws_thread.worker = (struct _WsWorker *) pool;  /* only compared with NULL */
  for (guint i = 0; i < N_SPILL; i++)
    {
      stacks[i] = ws_fiber_stack_get (pool, SIZE, NULL);
      touch_all (stacks[i], 1);
    }
  for (guint i = 0; i < N_SPILL; i++)
    ws_fiber_stack_release (pool, stacks[i]);
  /* The 65th release spilled half the cache: untrimmed. */
  g_assert_cmpuint (ws_fiber_stack_get_n_trims (), ==, trims);
  for (guint i = 0; i < N_SPILL; i++)
    g_assert_true (stacks[i]->dirty);

  ws_fiber_stack_trim_cache ();
  g_assert_cmpuint (ws_fiber_stack_get_n_trims (), ==, trims + N_SPILL);
  for (guint i = 0; i < N_SPILL; i++)
    g_assert_false (stacks[i]->dirty);

  ws_fiber_stack_flush_cache ();
  ws_thread.worker = NULL;
  return NULL;
}

static void
test_spill_untrimmed (void)
{
  WsFiberStackPool *pool = ws_fiber_stack_pool_new (G_MAXUINT);

  g_thread_join (g_thread_new ("worker", spill_thread, pool));
  ws_fiber_stack_pool_free (pool);
}

WS_TEST_MAIN ({ "/fiber-stack/no-pool", test_no_pool },
              { "/fiber-stack/pool-reuse", test_pool_reuse },
              { "/fiber-stack/trim-bound", test_trim_bound },
              { "/fiber-stack/worker-cache", test_worker_cache },
              { "/fiber-stack/spill-untrimmed", test_spill_untrimmed },
              { "/fiber-stack/cap", test_cap },
              { "/fiber-stack/default-cap", test_default_cap })
