/* ws-test-helper.h: native tasks for the GJS and Vala tests
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A small introspected library (namespace WsTest), the way a GNOME app with
 * a C core and a JavaScript UI hands native tasks to its scripts.
 */

#pragma once

#include <wsrt.h>

G_BEGIN_DECLS

WsTask  *ws_test_spawn_sum        (WsRuntime *runtime,
                                   guint      n);
WsTask  *ws_test_spawn_failing    (WsRuntime  *runtime,
                                   const char *message);
WsTask  *ws_test_spawn_pending    (WsRuntime *runtime);

G_END_DECLS
