/* ws-example.c: native tasks for the GJS example
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include <stdatomic.h>

#include "ws-example.h"

/* Numbers a task tests in one poll before it yields: a few hundred
 * microseconds of work, so a cancelled task stops soon. */
#define NUMBERS_PER_POLL 4096

/* Every number tested by every task of the process. A statistic that
 * orders nothing: relaxed atomics. */
static _Atomic guint64 numbers_tested;

typedef struct
{
  guint64 next;
  guint64 end;
  guint64 count;
} CountPrimes;

static gboolean
is_prime (guint64 n)
{
  if (n < 2)
    return FALSE;
  if (n < 4)
    return TRUE;
  if (n % 2 == 0 || n % 3 == 0)
    return FALSE;
  for (guint64 d = 5; d * d <= n; d += 6)
    if (n % d == 0 || n % (d + 2) == 0)
      return FALSE;
  return TRUE;
}

/* Runs on a worker. */
static WsPoll
count_primes_poll (WsContext *cx,
                   gpointer   user_data)
{
  CountPrimes *self = user_data;
  guint64 stop = MIN (self->end, self->next + NUMBERS_PER_POLL);
  GValue value = G_VALUE_INIT;

  atomic_fetch_add_explicit (&numbers_tested, stop - self->next, memory_order_relaxed);
  for (; self->next < stop; self->next++)
    self->count += is_prime (self->next);

  /* Give way; a cancelled task ends here, at its next scheduling point. */
  if (self->next < self->end)
    return ws_context_yield (cx);

  g_value_init (&value, G_TYPE_UINT64);
  g_value_set_uint64 (&value, self->count);
  ws_context_return_value (cx, &value);
  return WS_POLL_READY;
}

/**
 * ws_example_count_primes:
 * @runtime: the runtime to run on
 * @start: the first number to test
 * @end: the number after the last one to test
 *
 * Starts counting the primes in [@start, @end) on the workers of
 * @runtime. The task tests a few thousand numbers per poll and yields in
 * between, so that ws_task_cancel() stops it within a poll.
 *
 * Returns: (transfer full): the task; its value is the count, a guint64
 */
WsTask *
ws_example_count_primes (WsRuntime *runtime,
                         guint64    start,
                         guint64    end)
{
  CountPrimes *self;

  g_return_val_if_fail (WS_IS_RUNTIME (runtime), NULL);

  self = g_new0 (CountPrimes, 1);
  self->next = start;
  self->end = MAX (start, end);
  return ws_runtime_spawn (runtime, count_primes_poll, self, g_free);
}

/**
 * ws_example_get_numbers_tested:
 *
 * How many numbers the tasks of ws_example_count_primes() have tested so
 * far, over the whole process: it stops growing once every task has
 * ended, completed or cancelled.
 *
 * Returns: the count
 */
guint64
ws_example_get_numbers_tested (void)
{
  return atomic_load_explicit (&numbers_tested, memory_order_relaxed);
}
