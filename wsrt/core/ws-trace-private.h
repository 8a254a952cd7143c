/* ws-trace-private.h: Sysprof marks and counters, when the process is recorded
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The one module that calls Sysprof's collector (sysprof-capture-4). The
 * rest of the core calls the inline functions below, one line per call
 * site; with -Dsysprof=disabled (or without the library) they are empty
 * and the compiler drops them.
 *
 * Cost when the process is not recorded (doc/profiling.md): tracing is
 * switched on or off once, when the first runtime is created
 * (ws_trace_init), and never changes afterwards. A call site reads one
 * global flag, relaxed, and branches on it; nothing else. Relaxed is
 * enough: the flag goes from FALSE to TRUE at most once, before any
 * runtime exists, so every thread that runs a call site (a thread of a
 * runtime, or a thread that got the runtime from the creating thread)
 * reads it after a happens-before edge from that store; and a stale
 * FALSE would only lose marks, since a mark's end is written only for a
 * begin that was recorded (begin != 0). The branch is marked unlikely, so
 * the untraced path stays straight-line code.
 *
 * What is recorded (doc/profiling.md lists the groups and names):
 *
 *  - a span per task, from its spawn to its end, named after the task,
 *    in the group of its host (ws_trace_task_end);
 *  - a mark per slice of a local executor's dispatch and of a
 *    completions' dispatch, per ws_block_in_place and per worker park
 *    (ws_trace_begin and ws_trace_end around it);
 *  - counters, sampled at WS_TRACE_SAMPLE_HZ by one thread of the
 *    module's own: each runtime registers a sampler
 *    (ws_trace_add_sampler) that reads what it already counts; fibers
 *    waiting are counted here, at suspend and resume, and only while
 *    recording.
 */

#pragma once

#include <stdatomic.h>

#include <glib.h>

G_BEGIN_DECLS

/* What a mark is of: its Sysprof group and its default name. */
typedef enum
{
  WS_TRACE_TASK,                     /* a task on the worker pool */
  WS_TRACE_BLOCKING_JOB,             /* a task on the blocking pool */
  WS_TRACE_LOCAL_TASK,               /* a local task on a GMainContext */
  WS_TRACE_LOCAL_SLICE,              /* a slice of a local executor's dispatch */
  WS_TRACE_DELIVERY_SLICE,           /* a slice of a completions' dispatch */
  WS_TRACE_BLOCK_IN_PLACE,           /* a ws_block_in_place () */
  WS_TRACE_PARK,                     /* a worker asleep */
  WS_TRACE_N_KINDS
} WsTraceKind;

/* The values a runtime's sampler reports (see ws_trace_add_sampler). */
typedef struct
{
  gdouble busy_workers;              /* workers busy, averaged since the last sample */
  gint64  queued_tasks;              /* injection queue and local run queues */
  gint64  blocking_threads;          /* threads of the blocking pool */
  gint64  blocking_queued;           /* jobs waiting for a blocking thread */
} WsTraceSample;

/* Called on the sampling thread, under the module's lock, so that
 * ws_trace_remove_sampler () returns only once no call runs. */
typedef void (*WsTraceSampleFunc) (gpointer       data,
                                   WsTraceSample *sample);

#ifdef WS_ENABLE_SYSPROF

extern _Atomic gboolean ws_trace_on;

void     ws_trace_init           (void);
gint64   ws_trace_now            (void);
void     ws_trace_end_real       (gint64         begin,
                                  WsTraceKind    kind,
                                  guint          n_items);
void     ws_trace_task_end_real  (gint64         begin,
                                  WsTraceKind    kind,
                                  const char    *name,
                                  const char    *outcome);
void     ws_trace_fibers_add     (gint           delta);
guint    ws_trace_add_sampler    (WsTraceSampleFunc func,
                                  gpointer          data);
void     ws_trace_remove_sampler (guint          id);
guint64  ws_trace_get_n_samples  (void);

/* Whether the process is recorded (see the top for the relaxed read). */
static inline gboolean
ws_trace_active (void)
{
  return G_UNLIKELY (atomic_load_explicit (&ws_trace_on, memory_order_relaxed));
}

/* The begin of a mark: its time when recording, 0 otherwise. */
static inline gint64
ws_trace_begin (void)
{
  return ws_trace_active () ? ws_trace_now () : 0;
}

/* Ends the mark that began at @begin (a ws_trace_begin ()), with
 * @n_items (polls, deliveries) in its message when non-zero. */
static inline void
ws_trace_end (gint64      begin,
              WsTraceKind kind,
              guint       n_items)
{
  if (G_UNLIKELY (begin != 0))
    ws_trace_end_real (begin, kind, n_items);
}

/* A task's span: from @begin (its spawn's ws_trace_begin ()) to now.
 * @name is the task's name, or NULL for the kind's. */
static inline void
ws_trace_task_end (gint64       begin,
                   WsTraceKind  kind,
                   const char  *name,
                   const char  *outcome)
{
  if (G_UNLIKELY (begin != 0))
    ws_trace_task_end_real (begin, kind, name, outcome);
}

/* A fiber suspends (+1) or resumes (-1): counted only while recording. */
static inline void
ws_trace_fiber_waiting (gint delta)
{
  if (ws_trace_active ())
    ws_trace_fibers_add (delta);
}

#else /* !WS_ENABLE_SYSPROF */

static inline void     ws_trace_init           (void) {}
static inline gboolean ws_trace_active         (void) { return FALSE; }
static inline gint64   ws_trace_begin          (void) { return 0; }
static inline void     ws_trace_end            (gint64 begin, WsTraceKind kind, guint n_items) {}
static inline void     ws_trace_task_end       (gint64 begin, WsTraceKind kind, const char *name,
                                                const char *outcome) {}
static inline void     ws_trace_fiber_waiting  (gint delta) {}
static inline guint    ws_trace_add_sampler    (WsTraceSampleFunc func, gpointer data) { return 0; }
static inline void     ws_trace_remove_sampler (guint id) {}
static inline guint64  ws_trace_get_n_samples  (void) { return 0; }

#endif /* WS_ENABLE_SYSPROF */

G_END_DECLS
