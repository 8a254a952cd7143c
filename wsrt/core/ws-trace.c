/* ws-trace.c: Sysprof marks and counters, when the process is recorded
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * See ws-trace-private.h for what is recorded and what it costs when the
 * process is not. Sysprof's collector (sysprof-collector.h) writes each
 * thread's marks into a ring buffer of its own, shared with the Sysprof
 * process that started this one (SYSPROF_CONTROL_FD, which sysprof-cli
 * and Sysprof set for the program they launch); a thread's first call
 * asks Sysprof for its buffer. The counters all belong to one thread,
 * the sampler below: the collector numbers counters per thread, so
 * counters defined on two threads could be given the same id.
 */

#include "config.h"

#include "ws-trace-private.h"

#ifdef WS_ENABLE_SYSPROF

#include <string.h>

#include <sysprof-capture.h>

/* Counters are sampled this often: often enough to see a burst in the
 * timeline, rarely enough that the sampler costs nothing measurable. */
#define WS_TRACE_SAMPLE_HZ 20

_Atomic gboolean ws_trace_on;

static const struct
{
  const char *group;
  const char *name;
} kinds[WS_TRACE_N_KINDS] = {
  [WS_TRACE_TASK]           = { "wsrt task", "task" },
  [WS_TRACE_BLOCKING_JOB]   = { "wsrt blocking", "blocking job" },
  [WS_TRACE_LOCAL_TASK]     = { "wsrt local", "local task" },
  [WS_TRACE_LOCAL_SLICE]    = { "wsrt dispatch", "local tasks" },
  [WS_TRACE_DELIVERY_SLICE] = { "wsrt dispatch", "completions" },
  [WS_TRACE_BLOCK_IN_PLACE] = { "wsrt worker", "block_in_place" },
  [WS_TRACE_PARK]           = { "wsrt worker", "park" },
};

/* Switches tracing on for good if the process is recorded. Called when a
 * runtime is created, before any of its tasks or threads exist. */
void
ws_trace_init (void)
{
  static gsize once;

  if (g_once_init_enter (&once))
    {
      /* Without the control socket the collector has nowhere to write;
       * with it, is_active () tells whether Sysprof answered. */
      gboolean on = g_getenv ("SYSPROF_CONTROL_FD") != NULL && sysprof_collector_is_active ();

      /* Relaxed: see the top of ws-trace-private.h; g_once_init_leave ()
       * publishes it to the later callers of this function as well. */
      atomic_store_explicit (&ws_trace_on, on, memory_order_relaxed);
      g_once_init_leave (&once, 1);
    }
}

/* Sysprof's clock (CLOCK_MONOTONIC, as g_get_monotonic_time ()), in ns. */
gint64
ws_trace_now (void)
{
  return SYSPROF_CAPTURE_CURRENT_TIME;
}

void
ws_trace_end_real (gint64      begin,
                   WsTraceKind kind,
                   guint       n_items)
{
  gint64 duration = ws_trace_now () - begin;

  if (n_items > 0)
    sysprof_collector_mark_printf (begin, duration, kinds[kind].group, kinds[kind].name,
                                   "%u", n_items);
  else
    sysprof_collector_mark (begin, duration, kinds[kind].group, kinds[kind].name, NULL);
}

void
ws_trace_task_end_real (gint64       begin,
                        WsTraceKind  kind,
                        const char  *name,
                        const char  *outcome)
{
  sysprof_collector_mark (begin, ws_trace_now () - begin, kinds[kind].group,
                          name != NULL ? name : kinds[kind].name, outcome);
}

/* ---- counters ------------------------------------------------------ */

enum
{
  COUNTER_BUSY_WORKERS,
  COUNTER_QUEUED_TASKS,
  COUNTER_BLOCKING_THREADS,
  COUNTER_BLOCKING_QUEUED,
  N_RUNTIME_COUNTERS
};

typedef struct
{
  guint             id;
  guint             number;          /* the runtime's, 1-based, for the counters' names */
  guint             first_counter;   /* 0 until defined */
  WsTraceSampleFunc func;
  gpointer          data;
} Sampler;

/* Fibers suspended now, process-wide: changed at suspend and resume, and
 * only while recording. Relaxed: a count that orders nothing. */
static _Atomic gint fibers_waiting;

/* Rounds of sampling done, for tests (ws_trace_get_n_samples). Relaxed: a
 * count; the counters it covers went to Sysprof before the increment, on
 * this thread. */
static _Atomic guint64 n_samples;

/* Guards what follows; the sampler holds it while it samples. */
static GMutex   lock;
static GCond    cond;
static GArray  *samplers;           /* of Sampler */
static guint    next_id = 1;
static guint    n_runtimes;
static GThread *sampler_thread;

void
ws_trace_fibers_add (gint delta)
{
  atomic_fetch_add_explicit (&fibers_waiting, delta, memory_order_relaxed);
}

static void
set_counter (SysprofCaptureCounter *c,
             guint                  id,
             const char            *name,
             const char            *description,
             guint                  number,
             gboolean               is_double)
{
  memset (c, 0, sizeof *c);
  g_strlcpy (c->category, "wsrt", sizeof c->category);
  if (number > 1)
    g_snprintf (c->name, sizeof c->name, "%s (runtime %u)", name, number);
  else
    g_strlcpy (c->name, name, sizeof c->name);
  g_strlcpy (c->description, description, sizeof c->description);
  c->id = id;
  c->type = is_double ? SYSPROF_CAPTURE_COUNTER_DOUBLE : SYSPROF_CAPTURE_COUNTER_INT64;
}

static void
define_runtime_counters (Sampler *s)
{
  SysprofCaptureCounter c[N_RUNTIME_COUNTERS];
  guint first = sysprof_collector_request_counters (N_RUNTIME_COUNTERS);

  if (first == 0)
    return;
  set_counter (&c[COUNTER_BUSY_WORKERS], first + COUNTER_BUSY_WORKERS, "Busy workers",
               "Workers polling tasks, averaged", s->number, TRUE);
  set_counter (&c[COUNTER_QUEUED_TASKS], first + COUNTER_QUEUED_TASKS, "Queued tasks",
               "Injection queue and local run queues", s->number, FALSE);
  set_counter (&c[COUNTER_BLOCKING_THREADS], first + COUNTER_BLOCKING_THREADS,
               "Blocking threads", "Threads of the blocking pool", s->number, FALSE);
  set_counter (&c[COUNTER_BLOCKING_QUEUED], first + COUNTER_BLOCKING_QUEUED,
               "Queued blocking jobs", "Jobs waiting for a blocking thread", s->number, FALSE);
  sysprof_collector_define_counters (c, N_RUNTIME_COUNTERS);
  s->first_counter = first;
}

static void
sample (Sampler *s)
{
  WsTraceSample v = { 0, };
  SysprofCaptureCounterValue values[N_RUNTIME_COUNTERS];
  guint ids[N_RUNTIME_COUNTERS];

  if (s->first_counter == 0)
    define_runtime_counters (s);
  if (s->first_counter == 0)
    return;
  s->func (s->data, &v);
  values[COUNTER_BUSY_WORKERS].vdbl = v.busy_workers;
  values[COUNTER_QUEUED_TASKS].v64 = v.queued_tasks;
  values[COUNTER_BLOCKING_THREADS].v64 = v.blocking_threads;
  values[COUNTER_BLOCKING_QUEUED].v64 = v.blocking_queued;
  for (guint i = 0; i < N_RUNTIME_COUNTERS; i++)
    ids[i] = s->first_counter + i;
  sysprof_collector_set_counters (ids, values, N_RUNTIME_COUNTERS);
}

/* The sampling thread: started with the first sampler, never stopped
 * (it sleeps between samples, and exists only in a recorded process). */
static gpointer
sampler_main (gpointer data)
{
  guint fibers_id = 0;

  g_mutex_lock (&lock);
  for (;;)
    {
      gint64 next = g_get_monotonic_time () + G_USEC_PER_SEC / WS_TRACE_SAMPLE_HZ;

      if (fibers_id == 0)
        {
          SysprofCaptureCounter c;

          fibers_id = sysprof_collector_request_counters (1);
          set_counter (&c, fibers_id, "Waiting fibers", "Fibers suspended in an await", 1, FALSE);
          sysprof_collector_define_counters (&c, 1);
        }
      if (fibers_id != 0)
        {
          SysprofCaptureCounterValue v;

          v.v64 = atomic_load_explicit (&fibers_waiting, memory_order_relaxed);
          sysprof_collector_set_counters (&fibers_id, &v, 1);
        }

      for (guint i = 0; i < samplers->len; i++)
        sample (&g_array_index (samplers, Sampler, i));
      atomic_fetch_add_explicit (&n_samples, 1, memory_order_relaxed);

      while (g_get_monotonic_time () < next)
        g_cond_wait_until (&cond, &lock, next);
    }
  g_mutex_unlock (&lock);
  return NULL;
}

/* Samples @func (@data) from now on, while recording; returns an id for
 * ws_trace_remove_sampler (), 0 when not recording. */
guint
ws_trace_add_sampler (WsTraceSampleFunc func,
                      gpointer          data)
{
  Sampler s = { 0, };
  guint id;

  if (!ws_trace_active ())
    return 0;

  g_mutex_lock (&lock);
  if (samplers == NULL)
    samplers = g_array_new (FALSE, FALSE, sizeof (Sampler));
  s.id = id = next_id++;
  s.number = ++n_runtimes;
  s.func = func;
  s.data = data;
  g_array_append_val (samplers, s);
  if (sampler_thread == NULL)
    sampler_thread = g_thread_new ("wsrt-sysprof", sampler_main, NULL);
  g_mutex_unlock (&lock);
  return id;
}

/* Once this returns, the sampler of @id is not running and never runs
 * again. 0 does nothing. */
void
ws_trace_remove_sampler (guint id)
{
  if (id == 0)
    return;

  g_mutex_lock (&lock);
  for (guint i = 0; i < samplers->len; i++)
    if (g_array_index (samplers, Sampler, i).id == id)
      {
        g_array_remove_index (samplers, i);
        break;
      }
  g_mutex_unlock (&lock);
}

/* How many rounds of counters the sampler has written: a test waits for
 * one before its recorded process exits. */
guint64
ws_trace_get_n_samples (void)
{
  return atomic_load_explicit (&n_samples, memory_order_relaxed);
}

#endif /* WS_ENABLE_SYSPROF */
