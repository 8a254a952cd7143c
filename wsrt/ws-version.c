/* ws-version.c: the version of the library a program runs with
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "ws-version.h"

/**
 * ws_get_major_version:
 *
 * Gets the major version of the wsrt library the program runs with (0 in
 * 0.1.2).
 *
 * It can differ from %WS_MAJOR_VERSION, the version of the headers the
 * program was compiled against.
 *
 * Returns: the major version of the library
 */
guint
ws_get_major_version (void)
{
  return WS_MAJOR_VERSION;
}

/**
 * ws_get_minor_version:
 *
 * Gets the minor version of the wsrt library the program runs with (1 in
 * 0.1.2).
 *
 * It can differ from %WS_MINOR_VERSION, the version of the headers the
 * program was compiled against.
 *
 * Returns: the minor version of the library
 */
guint
ws_get_minor_version (void)
{
  return WS_MINOR_VERSION;
}

/**
 * ws_get_micro_version:
 *
 * Gets the micro version of the wsrt library the program runs with (2 in
 * 0.1.2).
 *
 * It can differ from %WS_MICRO_VERSION, the version of the headers the
 * program was compiled against.
 *
 * Returns: the micro version of the library
 */
guint
ws_get_micro_version (void)
{
  return WS_MICRO_VERSION;
}

/**
 * ws_check_version:
 * @required_major: the required major version
 * @required_minor: the required minor version
 * @required_micro: the required micro version
 *
 * Checks that the wsrt library the program runs with is compatible with
 * version @required_major.@required_minor.@required_micro: that it has the
 * same major version and is not older.
 *
 * Call it with %WS_MAJOR_VERSION, %WS_MINOR_VERSION and %WS_MICRO_VERSION
 * to check that the library is at least as new as the headers the program
 * was compiled against. For a check at compile time, see
 * `WS_CHECK_VERSION()`.
 *
 * Returns: (transfer none) (nullable): %NULL if the library is compatible,
 *   or else a message saying why not, owned by wsrt
 */
const char *
ws_check_version (guint required_major,
                  guint required_minor,
                  guint required_micro)
{
  /* No "required_major < WS_MAJOR_VERSION": with major 0 it is an unsigned
   * comparison with 0, which -Wtype-limits reports. */
  if (required_major != WS_MAJOR_VERSION)
    return required_major > WS_MAJOR_VERSION
           ? "wsrt version too old (major mismatch)"
           : "wsrt version too new (major mismatch)";
  if (required_minor > WS_MINOR_VERSION)
    return "wsrt version too old (minor mismatch)";
  if (required_minor == WS_MINOR_VERSION && required_micro > WS_MICRO_VERSION)
    return "wsrt version too old (micro mismatch)";
  return NULL;
}
