/* ws-example.h: native tasks for the GJS example
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A small introspected library (namespace WsExample), the way a GNOME app
 * with a C core and a JavaScript UI hands native work to its scripts: C
 * functions that start work on the wsrt pool and return the WsTask.
 */

#pragma once

#include <wsrt.h>

G_BEGIN_DECLS

WsTask  *ws_example_count_primes         (WsRuntime *runtime,
                                          guint64    start,
                                          guint64    end);
guint64  ws_example_get_numbers_tested   (void);

G_END_DECLS
