/* ws-run-meter.c: is a thread using a CPU, or blocked?
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The blocking pool gives a thread company only when the threads running
 * jobs are blocked (ws-blocking-pool.c, "How many run at once"), so it
 * needs to tell a job that waits (on a disk, a socket, a lock, a sleep)
 * from one that computes. A meter answers that for one thread, asked
 * from another: the thread is busy if it was runnable for at least half
 * of the last window of at least WS_RUN_METER_WINDOW_USEC.
 *
 * Runnable means running or waiting for a CPU. On Linux the thread's
 * schedstat (/proc/thread-self/schedstat: time on a CPU, time waiting in
 * a run queue) gives both, so a job that computes counts as busy however
 * loaded the machine is: on a CPU or queued for one, it is not blocked.
 * Without it, the thread's CPU clock gives the time on a CPU only, so on
 * a loaded machine a computing thread that gets under half a CPU counts
 * as blocked (the pool then grows as if it were). Without either, every
 * thread counts as blocked: the pool grows while jobs are queued, to
 * max-blocking-threads.
 *
 * A meter is written only under the pool's lock (its owner opens it
 * before it is listed anywhere), so no atomics. A window starts when a
 * thread takes a job (ws_run_meter_restart): a job that has not been
 * watched for a whole window yet counts as busy, so a burst of jobs that
 * compute never finds a thread it would have to share a CPU with.
 */

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "ws-run-meter-private.h"

/* On the thread to be measured. */
void
ws_run_meter_init (WsRunMeter *self)
{
  self->fd = -1;
  self->has_clock = FALSE;
#ifdef __linux__
  self->fd = open ("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
#endif
#if defined(_POSIX_THREAD_CPUTIME) && _POSIX_THREAD_CPUTIME >= 0
  if (self->fd < 0)
    self->has_clock = pthread_getcpuclockid (pthread_self (), &self->cpu_clock) == 0;
#endif
  ws_run_meter_restart (self);
}

void
ws_run_meter_clear (WsRunMeter *self)
{
  if (self->fd >= 0)
    close (self->fd);
  self->fd = -1;
  self->has_clock = FALSE;
}

void
ws_run_meter_restart (WsRunMeter *self)
{
  self->since = 0;
  self->busy = TRUE;
}

/* The thread's runnable time in ns, or -1 if it cannot be known. */
static gint64
read_runnable_ns (WsRunMeter *self)
{
  if (self->fd >= 0)
    {
      char buf[96];
      ssize_t n;
      guint64 on_cpu;
      guint64 queued;
      char *end;

      do
        n = pread (self->fd, buf, sizeof buf - 1, 0);
      while (n < 0 && errno == EINTR);
      if (n <= 0)
        return -1;
      buf[n] = '\0';
      on_cpu = g_ascii_strtoull (buf, &end, 10);
      queued = g_ascii_strtoull (end, NULL, 10);
      return (gint64) MIN (on_cpu + queued, (guint64) G_MAXINT64);
    }

  if (self->has_clock)
    {
      struct timespec ts;

      if (clock_gettime (self->cpu_clock, &ts) == 0)
        return (gint64) ts.tv_sec * G_GINT64_CONSTANT (1000000000) + ts.tv_nsec;
    }

  return -1;
}

/* Whether the thread was runnable for at least half of its last whole
 * window; a new window starts when the current one is at least
 * WS_RUN_METER_WINDOW_USEC long. @now is g_get_monotonic_time (). */
gboolean
ws_run_meter_is_busy (WsRunMeter *self,
                      gint64      now)
{
  gint64 runnable;

  if (self->since != 0 && now - self->since < WS_RUN_METER_WINDOW_USEC)
    return self->busy;

  runnable = read_runnable_ns (self);
  if (runnable < 0)
    self->busy = FALSE;
  else if (self->since != 0)
    self->busy = (runnable - self->runnable_since) * 2 >= (now - self->since) * 1000;
  /* else: the first look; the job stays presumed busy for a window. */
  self->since = now;
  self->runnable_since = runnable;
  return self->busy;
}
