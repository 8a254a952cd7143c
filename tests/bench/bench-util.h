/* bench-util.h: small helpers shared by the benchmarks
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

static inline guint64
bench_now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (guint64) ts.tv_sec * 1000000000u + (guint64) ts.tv_nsec;
}

static inline int
bench_cmp_double (const void *a,
                  const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

/* The q-quantile (0..1) of v (sorted in place), nearest rank. */
static inline double
bench_quantile (double *v,
                guint   n,
                double  q)
{
  guint i;

  qsort (v, n, sizeof *v, bench_cmp_double);
  i = (guint) (q * n);
  return v[MIN (i, n - 1)];
}

static inline double
bench_median (double *v,
              guint   n)
{
  qsort (v, n, sizeof *v, bench_cmp_double);
  return (n % 2) ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* Spins for about @ns of CPU work without a system call. */
static inline void
bench_spin_ns (guint64 ns)
{
  guint64 start = bench_now_ns ();

  while (bench_now_ns () - start < ns)
    ;
}

/* The resident set size of this process, in bytes (0 if unknown). */
static inline long
bench_rss_bytes (void)
{
  long size = 0, resident = 0;
  FILE *f = fopen ("/proc/self/statm", "r");

  if (f == NULL)
    return 0;
  if (fscanf (f, "%ld %ld", &size, &resident) != 2)
    resident = 0;
  fclose (f);
  return resident * sysconf (_SC_PAGESIZE);
}
