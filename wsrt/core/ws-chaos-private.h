/* ws-chaos-private.h: schedule perturbation points
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * WS_CHAOS_POINT() marks a state transition of the core. In a normal build
 * it is nothing. With -Dchaos=true it yields the thread now and then, so
 * that the interleavings tests see are more varied.
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

#ifdef WS_ENABLE_CHAOS
void ws_chaos_point (void);
# define WS_CHAOS_POINT() ws_chaos_point ()
#else
# define WS_CHAOS_POINT() G_STMT_START { } G_STMT_END
#endif

G_END_DECLS
