/* ws-fiber-private.h: what the fiber's GIO await needs of a fiber
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "ws-fiber.h"
#include "ws-core-private.h"

G_BEGIN_DECLS

/* The running fiber's slot for its GIO await (ws-fiber-gio.c), NULL
 * until its first WS_GIO; NULL (no slot) unless @cx is the context of a
 * fiber that runs on its own stack now. The fiber frees what the slot
 * holds with ws_fiber_gio_free () once its function has returned. */
gpointer    *ws_fiber_get_gio_slot (WsContext *cx);
void         ws_fiber_gio_free     (gpointer   gio);

/* The runtime of the fiber whose context @cx is, when called on that
 * fiber's stack (its own code); NULL otherwise. */
WsRuntimeCore *ws_fiber_get_running_core (WsContext *cx);
/* Whether the running fiber of @cx saw its task cancelled, or sees it
 * now (then its later suspends return FALSE, as after a suspend that saw
 * it). */
gboolean     ws_fiber_check_cancelled (WsContext *cx);

/* Whether this thread runs a fiber that is unwinding after a cancel (a
 * suspend of it returned FALSE): a join handle it drops then cancels its
 * task (ws-fiber.c, "Children"). */
gboolean     ws_fiber_running_is_cancelled (void);

G_END_DECLS
