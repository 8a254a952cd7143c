/* ws-error.h: the WS_ERROR domain
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#if !defined(WSRT_INSIDE) && !defined(WSRT_COMPILATION)
# error "Only <wsrt.h> can be included directly."
#endif

#include "ws-types.h"

G_BEGIN_DECLS

/**
 * WS_ERROR:
 *
 * The error domain of wsrt. Errors in it are [enum@Ws.Error] values.
 * Cancellation is reported with `G_IO_ERROR_CANCELLED` instead, as in GIO.
 */
#define WS_ERROR (ws_error_quark ())

/**
 * WsError:
 * @WS_ERROR_FAILED: a generic failure
 * @WS_ERROR_WOULD_BLOCK: a blocking call was made where it would stall
 *   or never return: on a runtime worker thread, where it would stall
 *   every task queued behind it, or, waiting for a local task, on the
 *   thread of the #GMainContext that polls that task
 * @WS_ERROR_CLOSED: the runtime has been shut down
 * @WS_ERROR_INVALID_CONFIG: a runtime property holds an invalid value
 * @WS_ERROR_THREAD: a runtime thread could not be started
 *
 * Error codes of the %WS_ERROR domain.
 */
typedef enum
{
  WS_ERROR_FAILED,
  WS_ERROR_WOULD_BLOCK,
  WS_ERROR_CLOSED,
  WS_ERROR_INVALID_CONFIG,
  WS_ERROR_THREAD,
} WsError;

WS_AVAILABLE_IN_ALL
GQuark ws_error_quark (void);

G_END_DECLS
