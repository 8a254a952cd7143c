/* ws-error.c
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "ws-error.h"

G_DEFINE_QUARK (ws-error-quark, ws_error)
