/* bench-util.h: small helpers shared by the benchmarks
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

/* Runs @measure (@arg, @out) in a forked child and copies the @size bytes
 * it wrote to @out back into the parent's @out: one process per round, so
 * that no pool's threads, caches or heap of an earlier round are
 * counted. The parent must not have started threads. FALSE (and @out
 * untouched) if the child failed. */
static inline gboolean
bench_run_in_child (void     (*measure) (gint arg, gpointer out),
                    gint       arg,
                    gpointer   out,
                    gsize      size)
{
  g_autofree guint8 *buf = g_malloc (size);
  gboolean ok;
  int fds[2];
  pid_t pid;
  int status;

  if (pipe (fds) != 0)
    g_error ("pipe failed");
  fflush (stdout);
  pid = fork ();
  if (pid < 0)
    g_error ("fork failed");
  if (pid == 0)
    {
      close (fds[0]);
      measure (arg, buf);
      _exit (write (fds[1], buf, size) == (ssize_t) size ? 0 : 1);
    }
  close (fds[1]);
  ok = read (fds[0], buf, size) == (ssize_t) size;
  close (fds[0]);
  waitpid (pid, &status, 0);
  if (ok)
    memcpy (out, buf, size);
  return ok;
}

/* A flag the main thread waits for, raised by the task that finishes a
 * round (static: zero-initialised GMutex and GCond need no init). */
typedef struct
{
  GMutex   mutex;
  GCond    cond;
  gboolean raised;
} BenchDone;

static inline void
bench_done_raise (BenchDone *self)
{
  g_mutex_lock (&self->mutex);
  self->raised = TRUE;
  g_cond_signal (&self->cond);
  g_mutex_unlock (&self->mutex);
}

/* Waits until the flag is raised, and lowers it for the next round. */
static inline void
bench_done_wait (BenchDone *self)
{
  g_mutex_lock (&self->mutex);
  while (!self->raised)
    g_cond_wait (&self->cond, &self->mutex);
  self->raised = FALSE;
  g_mutex_unlock (&self->mutex);
}
