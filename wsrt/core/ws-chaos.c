/* ws-chaos.c: schedule perturbation for -Dchaos=true builds
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * WS_CHAOS_SEED (environment) sets the seed; it is printed once so that a
 * failing run can be replayed.
 */

#include "config.h"

#include "ws-chaos-private.h"
#include "ws-thread-private.h"

#ifdef WS_ENABLE_CHAOS

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static guint64 chaos_seed;
static _Atomic guint64 thread_counter;

void
ws_chaos_point (void)
{
  static gsize once;

  if (g_once_init_enter (&once))
    {
      const char *env = g_getenv ("WS_CHAOS_SEED");

      chaos_seed = env ? g_ascii_strtoull (env, NULL, 10) : (guint64) g_get_real_time ();
      fprintf (stderr, "wsrt chaos: WS_CHAOS_SEED=%" G_GUINT64_FORMAT "\n", chaos_seed);
      g_once_init_leave (&once, 1);
    }

  if (ws_thread.chaos_rng == 0)
    {
      guint64 n = atomic_fetch_add_explicit (&thread_counter, 1, memory_order_relaxed) + 1;

      ws_thread.chaos_rng = (chaos_seed ^ (0x9e3779b97f4a7c15ull * n)) | 1;
    }

  ws_thread.chaos_rng ^= ws_thread.chaos_rng << 13;
  ws_thread.chaos_rng ^= ws_thread.chaos_rng >> 7;
  ws_thread.chaos_rng ^= ws_thread.chaos_rng << 17;

  switch (ws_thread.chaos_rng % 16)
    {
    case 0:
      sched_yield ();
      break;
    case 1:
      for (volatile int i = 0; i < (int) (ws_thread.chaos_rng >> 58); i++)
        ;
      break;
    default:
      break;
    }
}

#endif
