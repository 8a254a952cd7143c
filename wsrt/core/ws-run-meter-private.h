/* ws-run-meter-private.h: is a thread using a CPU, or blocked?
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <time.h>

#include <glib.h>

G_BEGIN_DECLS

/* The shortest window a judgement is made over (see ws-run-meter.c). */
#define WS_RUN_METER_WINDOW_USEC 2000

typedef struct
{
  gint      fd;              /* the thread's schedstat, or -1 */
  clockid_t cpu_clock;       /* the thread's CPU clock, if has_clock */
  gboolean  has_clock;
  gint64    since;           /* start of the current window, 0: none yet */
  gint64    runnable_since;  /* CPU time at its start, in ns (no /proc) */
  gboolean  busy;
  guint     n_waiting_looks; /* looks in a row that found it waiting */
} WsRunMeter;

/* What one look saw (ws_run_meter_sample): a state letter of /proc, or
 * the thread's CPU time. */
typedef struct
{
  char   state;              /* 'R', 'S', ...; 0: unknown */
  gint64 cpu_ns;             /* -1: unknown */
} WsRunSample;

void     ws_run_meter_init    (WsRunMeter *self);
void     ws_run_meter_clear   (WsRunMeter *self);
void     ws_run_meter_restart (WsRunMeter *self);
gboolean ws_run_meter_look_due (const WsRunMeter *self,
                                gint64            now,
                                gint64            window);
void     ws_run_meter_sample  (gint               fd,
                               gboolean           has_clock,
                               clockid_t          cpu_clock,
                               WsRunSample       *sample);
gboolean ws_run_meter_judge   (WsRunMeter        *self,
                               gint64             now,
                               const WsRunSample *sample);
gboolean ws_run_meter_is_busy (WsRunMeter *self,
                               gint64      now,
                               gint64      window);

guint    ws_cpu_max_parse     (const char *text);
guint    ws_cgroup_cpu_limit  (const char *root,
                               const char *self_cgroup);
guint    ws_run_meter_cpu_slots (void);

G_END_DECLS
