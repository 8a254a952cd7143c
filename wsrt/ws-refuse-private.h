/* ws-refuse-private.h: a refused call frees what it was given
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The rule (doc/architecture.md, "Rules: errors"): a call that takes
 * ownership of something (user data with its destroy notify, a result,
 * an item) and refuses on a programmer error still frees it, once, and
 * logs the critical that g_return_val_if_fail () would. One spelling of
 * it, as g_return_val_if_fail () is one spelling of its rule:
 *
 *   ws_return_val_if_fail_free (func != NULL, destroy, user_data, NULL);
 *
 * Several in a row check several conditions; the first that fails frees
 * and returns, so @destroy runs at most once. Unlike
 * g_return_val_if_fail (), G_DISABLE_CHECKS does not compile the check
 * out: what was given is freed in every build.
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Frees @data with @destroy (if any) and logs g_return_if_fail ()'s
 * critical for @expr in @strfunc: the body of the macros below, and of a
 * helper that refuses for its callers (and names them in @strfunc). */
static inline void
ws_refused_free (GDestroyNotify  destroy,
                 gpointer        data,
                 const char     *strfunc,
                 const char     *expr)
{
  if (destroy != NULL)
    destroy (data);
  g_return_if_fail_warning (G_LOG_DOMAIN, strfunc, expr);
}

#define ws_return_val_if_fail_free(expr, destroy, data, val) \
  G_STMT_START \
    { \
      if G_LIKELY (expr) \
        { } \
      else \
        { \
          ws_refused_free ((destroy), (data), G_STRFUNC, #expr); \
          return (val); \
        } \
    } \
  G_STMT_END

#define ws_return_if_fail_free(expr, destroy, data) \
  G_STMT_START \
    { \
      if G_LIKELY (expr) \
        { } \
      else \
        { \
          ws_refused_free ((destroy), (data), G_STRFUNC, #expr); \
          return; \
        } \
    } \
  G_STMT_END

G_END_DECLS
