/* wsrt.h: the umbrella header of wsrt, the only one to include
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#define WSRT_INSIDE
# include "ws-version.h"
# include "ws-version-macros.h"
# include "ws-types.h"
# include "ws-error.h"
# include "ws-context.h"
# include "ws-task.h"
# include "ws-join-handle.h"
# include "ws-handle.h"
# include "ws-metrics.h"
# include "ws-runtime.h"
# include "ws-sleep.h"
# include "ws-async-op.h"
# include "ws-io-op.h"
# include "ws-channel.h"
# include "ws-oneshot.h"
# include "ws-promise.h"
# include "ws-task-group.h"
# include "ws-limiter.h"
# include "ws-async.h"
# include "ws-fiber.h"
# include "ws-fiber-gio.h"
# include "ws-fiber-join.h"
# include "ws-fiber-io.h"
# include "ws-enum-types.h"
#undef WSRT_INSIDE
