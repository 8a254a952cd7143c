/* ws-digest.h: file digests on the wsrt pool, for GJS
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <wsrt.h>

G_BEGIN_DECLS

WsTask *ws_digest_hash_file (WsRuntime     *runtime,
                        GFile         *file,
                        GChecksumType  type);

G_END_DECLS
