/* ws-thread.c: everything the core keeps per thread, in one place
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "ws-thread-private.h"

_Thread_local WsThread ws_thread WS_TLS_INITIAL_EXEC;
