/* demo-gthreadpool.h: wsrt-demo's workloads on a GThreadPool
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "wsrt-demo-workloads.h"

G_BEGIN_DECLS

gdouble demo_gthreadpool_run (DemoWorkloads  *workloads,
                              guint           n_threads,
                              GError        **error);

G_END_DECLS
