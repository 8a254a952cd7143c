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
 * so that its looks stay a few per millisecond) answers what it saw. A
 * meter is written only under the pool's lock (its owner opens it before
 * it is listed anywhere), so no atomics; the read itself
 * (ws_run_meter_sample) takes the fd and clock by value and runs without
 * the lock, which the pool drops for it. A job counts as busy until its
 * first look (ws_run_meter_restart).
 *
 * The cost. A look is one pread of a procfs file that the kernel
 * formats for it (tests/bench/bench-run-meter measures it); a pool with
 * n running jobs makes at most about 8 looks per millisecond (the pool
 * widens each meter's window beyond 16 jobs). Each meter keeps its fd
 * open: one descriptor per blocking thread, up to max-blocking-threads,
 * since opening the file for each look would cost an open and a close
 * per look, more than the read itself (the benchmark measures both).
 *
 * How many CPUs. The pool's slots are ws_run_meter_cpu_slots (): the
 * CPUs of the process's affinity, or fewer if a cgroup v2 CPU quota
 * (cpu.max, quota / period, rounded up) in the process's cgroup or an
 * ancestor allows fewer: a container given 2 CPUs on a 64-CPU host runs
 * computing jobs on 2 threads, not 64.
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

/* Whether a look is due: none yet, or the last one is at least @window
 * (at least WS_RUN_METER_WINDOW_USEC) old. Under the pool's lock. */
gboolean
ws_run_meter_look_due (const WsRunMeter *self,
                       gint64            now,
                       gint64            window)
{
  window = MAX (window, WS_RUN_METER_WINDOW_USEC);
  return self->since == 0 || now - self->since >= window;
}

/* One look at a thread, by value: the meter's fd, has_clock and
 * cpu_clock, copied under the pool's lock, so that the read itself runs
 * without it. The fd stays open while the pool says a look may use it
 * (ws-blocking-pool.c, "The meter's reads"). */
void
ws_run_meter_sample (gint         fd,
                     gboolean     has_clock,
                     clockid_t    cpu_clock,
                     WsRunSample *sample)
{
  struct timespec ts;

  sample->state = 0;
  sample->cpu_ns = -1;
  if (fd >= 0)
    sample->state = read_state (fd);
  else if (has_clock && clock_gettime (cpu_clock, &ts) == 0)
    sample->cpu_ns = (gint64) ts.tv_sec * G_GINT64_CONSTANT (1000000000) + ts.tv_nsec;
}

/* Records a look made at @now and answers whether the thread is busy.
 * Under the pool's lock. */
gboolean
ws_run_meter_judge (WsRunMeter        *self,
                    gint64             now,
                    const WsRunSample *sample)
{
  if (self->fd >= 0)
    {
      /* Unknown reads as waiting: the pool then errs towards a thread. A
       * thread found waiting once may be between two bursts of work (a
       * page fault, a contended lock): blocked takes two looks in a row. */
      if (sample->state == 'R')
        self->n_waiting_looks = 0;
      else
        self->n_waiting_looks++;
      self->busy = self->n_waiting_looks < 2;
      self->since = now;
      return self->busy;
    }

  if (sample->cpu_ns < 0)
    self->busy = FALSE;
  else if (self->since != 0)
    self->busy = (sample->cpu_ns - self->runnable_since) * 2 >= (now - self->since) * 1000;
  /* else: the first look; the job stays presumed busy for a window. */
  self->since = now;
  self->runnable_since = sample->cpu_ns;
  return self->busy;
}

/* Whether the thread is runnable (see above), as seen at most once per
 * @window (at least WS_RUN_METER_WINDOW_USEC), reading it here if a look
 * is due. @now is g_get_monotonic_time (). */
gboolean
ws_run_meter_is_busy (WsRunMeter *self,
                      gint64      now,
                      gint64      window)
{
  WsRunSample sample;

  if (!ws_run_meter_look_due (self, now, window))
    return self->busy;
  ws_run_meter_sample (self->fd, self->has_clock, self->cpu_clock, &sample);
  return ws_run_meter_judge (self, now, &sample);
}

/* The CPUs a cgroup v2 cpu.max allows ("QUOTA PERIOD", both in µs, or
 * "max PERIOD"), rounded up: a quota of 1.5 CPUs lets 2 threads run, at
 * times. 0: no limit, or text that is not a cpu.max. */
guint
ws_cpu_max_parse (const char *text)
{
  guint64 quota;
  guint64 period;
  gchar *end;

  if (text == NULL)
    return 0;
  while (g_ascii_isspace (*text))
    text++;
  if (!g_ascii_isdigit (*text))
    return 0;                   /* "max", or garbage */
  quota = g_ascii_strtoull (text, &end, 10);
  if (end == text || *end != ' ')
    return 0;
  text = end + 1;
  if (!g_ascii_isdigit (*text))
    return 0;
  period = g_ascii_strtoull (text, &end, 10);
  if (end == text || (*end != '\0' && !g_ascii_isspace (*end)) || period == 0 || quota == 0)
    return 0;
  return (guint) MIN ((quota + period - 1) / period, (guint64) G_MAXUINT);
}

/* The CPUs the cgroup v2 CPU quota allows this process: the smallest
 * limit of cpu.max in its cgroup (the "0::PATH" line of @self_cgroup,
 * the text of /proc/self/cgroup) and each ancestor, up to @root (where
 * the hierarchy is mounted: /sys/fs/cgroup). 0: no limit found. Inside a
 * container with a cgroup namespace, PATH is "/" and @root's own cpu.max
 * is the container's. */
guint
ws_cgroup_cpu_limit (const char *root,
                     const char *self_cgroup)
{
  g_autofree gchar *path = NULL;
  const char *line;
  guint limit = 0;

  if (root == NULL || self_cgroup == NULL)
    return 0;
  for (line = self_cgroup; line != NULL && *line != '\0';)
    {
      const char *eol = strchr (line, '\n');

      if (g_str_has_prefix (line, "0::"))
        {
          path = eol != NULL ? g_strndup (line + 3, eol - line - 3) : g_strdup (line + 3);
          break;
        }
      line = eol != NULL ? eol + 1 : NULL;
    }
  if (path == NULL || path[0] != '/' || strstr (path, "/..") != NULL)
    return 0;

  for (;;)
    {
      g_autofree gchar *file = g_build_filename (root, path, "cpu.max", NULL);
      g_autofree gchar *text = NULL;
      gchar *slash;

      if (g_file_get_contents (file, &text, NULL, NULL))
        {
          guint n = ws_cpu_max_parse (text);

          if (n > 0 && (limit == 0 || n < limit))
            limit = n;
        }
      if (strcmp (path, "/") == 0)
        break;
      slash = strrchr (path, '/');
      if (slash == path)
        slash[1] = '\0';
      else
        *slash = '\0';
    }
  return limit;
}

/* The CPUs the blocking pool counts as slots: those of the process's
 * affinity (g_get_num_processors ()), fewer if a cgroup v2 CPU quota
 * allows fewer (rounded up), and at least 1. Read once per pool. */
guint
ws_run_meter_cpu_slots (void)
{
  guint n = MAX (g_get_num_processors (), 1);
#ifdef __linux__
  g_autofree gchar *self_cgroup = NULL;

  if (g_file_get_contents ("/proc/self/cgroup", &self_cgroup, NULL, NULL))
    {
      guint quota = ws_cgroup_cpu_limit ("/sys/fs/cgroup", self_cgroup);

      if (quota > 0)
        n = MIN (n, quota);
    }
#endif
  return n;
}
