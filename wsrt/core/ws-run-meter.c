/* ws-run-meter.c: is a thread using a CPU, or blocked?
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The blocking pool gives a thread company only when the threads running
 * jobs are blocked (ws-blocking-pool.c, "How many run at once"), so it
 * needs to tell a job that waits (on a disk, a socket, a lock, a sleep)
 * from one that computes. A meter answers that for one thread, asked
 * from another: the thread is busy if it is runnable (on a CPU or
 * waiting for one), blocked otherwise.
 *
 * On Linux the thread's state in /proc/thread-self/stat ('R' runnable,
 * 'S' or 'D' waiting; waiting at two looks in a row for blocked) is the
 * answer, the same however loaded the
 * machine is: a job that computes is runnable, whether it has a CPU or
 * queues for one. The scheduler's time counters would not do: a
 * thread's CPU time in schedstat advances only at a tick, and its run
 * queue wait only when it is given a CPU, so over a few milliseconds a
 * computing thread can look idle. Without /proc, the thread's CPU clock
 * (exact) over a window of WS_RUN_METER_WINDOW_USEC says busy when the
 * thread had at least half a CPU: on a loaded machine a computing thread
 * that gets less counts as blocked (the pool then grows as if it were).
 * Without either, every thread counts as blocked: the pool grows while
 * jobs are queued, to max-blocking-threads.
 *
 * One look per window at most: a meter asked again within its window (at
 * least WS_RUN_METER_WINDOW_USEC; the pool widens it when many jobs run,
 * so that its looks stay a few per millisecond) answers what it saw. A meter is written only
 * under the pool's lock (its owner opens it before it is listed
 * anywhere), so no atomics. A job counts as busy until its first look
 * (ws_run_meter_restart).
 */

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "ws-run-meter-private.h"

/* On the thread to be measured. */
void
ws_run_meter_init (WsRunMeter *self)
{
  self->fd = -1;
  self->has_clock = FALSE;
#ifdef __linux__
  self->fd = open ("/proc/thread-self/stat", O_RDONLY | O_CLOEXEC);
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
  self->n_waiting_looks = 0;
}

/* The state letter of /proc/thread-self/stat ("tid (comm) S ..."; comm
 * may hold spaces and parentheses, so after the last ')'), or 0. */
static char
read_state (gint fd)
{
  char buf[512];
  ssize_t n;
  char *paren;

  do
    n = pread (fd, buf, sizeof buf - 1, 0);
  while (n < 0 && errno == EINTR);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  paren = strrchr (buf, ')');
  return paren != NULL && paren[1] == ' ' ? paren[2] : 0;
}

/* The thread's CPU time in ns, or -1. */
static gint64
read_cpu_ns (WsRunMeter *self)
{
  struct timespec ts;

  if (!self->has_clock || clock_gettime (self->cpu_clock, &ts) != 0)
    return -1;
  return (gint64) ts.tv_sec * G_GINT64_CONSTANT (1000000000) + ts.tv_nsec;
}

/* Whether the thread is runnable (see above), as seen at most once per
 * @window (at least WS_RUN_METER_WINDOW_USEC). @now is
 * g_get_monotonic_time (). */
gboolean
ws_run_meter_is_busy (WsRunMeter *self,
                      gint64      now,
                      gint64      window)
{
  gint64 cpu;

  window = MAX (window, WS_RUN_METER_WINDOW_USEC);
  if (self->since != 0 && now - self->since < window)
    return self->busy;

  if (self->fd >= 0)
    {
      char state = read_state (self->fd);

      /* Unknown reads as waiting: the pool then errs towards a thread. A
       * thread found waiting once may be between two bursts of work (a
       * page fault, a contended lock): blocked takes two looks in a row. */
      if (state == 'R')
        self->n_waiting_looks = 0;
      else
        self->n_waiting_looks++;
      self->busy = self->n_waiting_looks < 2;
      self->since = now;
      return self->busy;
    }

  cpu = read_cpu_ns (self);
  if (cpu < 0)
    self->busy = FALSE;
  else if (self->since != 0)
    self->busy = (cpu - self->runnable_since) * 2 >= (now - self->since) * 1000;
  /* else: the first look; the job stays presumed busy for a window. */
  self->since = now;
  self->runnable_since = cpu;
  return self->busy;
}
