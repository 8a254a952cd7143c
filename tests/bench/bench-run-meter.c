/* bench-run-meter.c: what a look of the blocking pool's run meter costs
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The pool looks at a running job's thread at most once per window
 * (ws-run-meter.c): one pread of /proc/thread-self/stat through the fd
 * the thread keeps open. Measured here, from one thread, looking at N
 * other threads that compute (runnable) or sleep, in rounds of a look at
 * each: the cost per look of
 *   - the meter's look (ws_run_meter_sample on the kept fd),
 *   - the same with an open and a close per look (what keeping no fd
 *     open would cost),
 *   - the thread's CPU clock (the meter's fallback without /proc), as an
 *     anchor.
 * Medians of 15 rounds of 200 looks at each thread, in ns per look.
 */

#include "config.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#include "bench-util.h"
#include "ws-run-meter-private.h"

#define N_ROUNDS 15
#define N_LOOKS  200

typedef struct
{
  WsRunMeter        meter;
  pid_t             tid;
  _Atomic gboolean  ready;
  _Atomic gboolean *stop;
  gboolean          compute;
} Target;

static gpointer
target_main (gpointer data)
{
  Target *t = data;

  ws_run_meter_init (&t->meter);
  t->tid = (pid_t) syscall (SYS_gettid);
  atomic_store (&t->ready, TRUE);
  while (!atomic_load_explicit (t->stop, memory_order_relaxed))
    {
      if (t->compute)
        bench_spin_ns (100000);
      else
        g_usleep (1000);
    }
  return NULL;
}

typedef enum { LOOK_KEPT_FD, LOOK_OPEN_CLOSE, LOOK_CPU_CLOCK } LookKind;

static double
measure (Target  *targets,
         guint    n,
         LookKind kind)
{
  double rounds[N_ROUNDS];

  for (guint r = 0; r < N_ROUNDS; r++)
    {
      guint64 start = bench_now_ns ();

      for (guint l = 0; l < N_LOOKS; l++)
        for (guint i = 0; i < n; i++)
          {
            WsRunSample sample;

            switch (kind)
              {
              case LOOK_KEPT_FD:
                ws_run_meter_sample (targets[i].meter.fd, FALSE, 0, &sample);
                break;
              case LOOK_OPEN_CLOSE:
                {
                  char path[64];
                  gint fd;

                  g_snprintf (path, sizeof path, "/proc/self/task/%d/stat", (int) targets[i].tid);
                  fd = open (path, O_RDONLY | O_CLOEXEC);
                  ws_run_meter_sample (fd, FALSE, 0, &sample);
                  close (fd);
                }
                break;
              case LOOK_CPU_CLOCK:
                {
                  clockid_t clock;

                  pthread_getcpuclockid (pthread_self (), &clock);
                  ws_run_meter_sample (-1, TRUE, clock, &sample);
                }
                break;
              }
          }
      rounds[r] = (double) (bench_now_ns () - start) / (N_LOOKS * n);
    }
  return bench_median (rounds, N_ROUNDS);
}

int
main (int    argc,
      char **argv)
{
  static const guint counts[] = { 1, 16, 64 };

  printf ("# run meter: ns per look, medians of %d rounds (load average: see uptime)\n", N_ROUNDS);
  printf ("%-8s %-9s %12s %14s %12s\n", "threads", "they", "kept fd", "open+close", "cpu clock");
  for (guint c = 0; c < G_N_ELEMENTS (counts); c++)
    for (gint compute = 1; compute >= 0; compute--)
      {
        guint n = counts[c];
        _Atomic gboolean stop = FALSE;
        g_autofree Target *targets = g_new0 (Target, n);
        g_autofree GThread **threads = g_new (GThread *, n);
        double kept, reopen, clock;

        for (guint i = 0; i < n; i++)
          {
            targets[i].stop = &stop;
            targets[i].compute = compute;
            threads[i] = g_thread_new ("target", target_main, &targets[i]);
          }
        for (guint i = 0; i < n; i++)
          while (!atomic_load (&targets[i].ready))
            g_usleep (100);

        kept = measure (targets, n, LOOK_KEPT_FD);
        reopen = measure (targets, n, LOOK_OPEN_CLOSE);
        clock = measure (targets, n, LOOK_CPU_CLOCK);
        printf ("%-8u %-9s %12.0f %14.0f %12.0f\n", n, compute ? "compute" : "sleep",
                kept, reopen, clock);

        atomic_store (&stop, TRUE);
        for (guint i = 0; i < n; i++)
          {
            g_thread_join (threads[i]);
            ws_run_meter_clear (&targets[i].meter);
          }
      }
  return 0;
}
