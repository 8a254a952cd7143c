/* ws-error.c: the WS_ERROR domain
 *
 * The codes are in the public ws-error.h; the core sets them (a refused
 * ws_block_in_place, a thread that could not start), so the domain lives
 * here, in plain GLib.
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <stdatomic.h>

#include "ws-error.h"

/**
 * ws_error_quark:
 *
 * Gets the quark of the %WS_ERROR error domain.
 *
 * Returns: the %WS_ERROR domain
 */
GQuark
ws_error_quark (void)
{
  /* Not G_DEFINE_QUARK: its unsynchronised cache is a (benign) data race
   * that ThreadSanitizer reports when workers fail tasks at once. Acquire
   * and release make it a plain publication. */
  static _Atomic GQuark quark;
  GQuark q = atomic_load_explicit (&quark, memory_order_acquire);

  if G_UNLIKELY (q == 0)
    {
      q = g_quark_from_static_string ("ws-error-quark");
      atomic_store_explicit (&quark, q, memory_order_release);
    }
  return q;
}
