/* test-version.c: the version macros and functions
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Public API only, built against the installed-style wsrt_dep: the
 * macros of ws-version.h agree with the library's functions,
 * WS_CHECK_VERSION() accepts the current and older versions and refuses
 * newer ones, in C and in the preprocessor, and ws_check_version() returns
 * NULL or a message.
 */

#include <string.h>

#include <wsrt.h>

#include "ws-test-util.h"

/* WS_CHECK_VERSION() works in #if, as GLIB_CHECK_VERSION() does. */
#if !WS_CHECK_VERSION (WS_MAJOR_VERSION, WS_MINOR_VERSION, WS_MICRO_VERSION)
# error "WS_CHECK_VERSION refuses the version of its own headers"
#endif
#if !WS_CHECK_VERSION (0, 0, 0)
# error "WS_CHECK_VERSION refuses 0.0.0"
#endif
#if WS_CHECK_VERSION (WS_MAJOR_VERSION + 1, 0, 0)
# error "WS_CHECK_VERSION accepts the next major version"
#endif
#if WS_CHECK_VERSION (WS_MAJOR_VERSION, WS_MINOR_VERSION + 1, 0)
# error "WS_CHECK_VERSION accepts the next minor version"
#endif
#if WS_CHECK_VERSION (WS_MAJOR_VERSION, WS_MINOR_VERSION, WS_MICRO_VERSION + 1)
# error "WS_CHECK_VERSION accepts the next micro version"
#endif

static void
test_macros_match_functions (void)
{
  g_autofree char *version = NULL;

  g_test_message ("headers %s, library %u.%u.%u", WS_VERSION_S,
                  ws_get_major_version (), ws_get_minor_version (),
                  ws_get_micro_version ());

  g_assert_cmpuint (ws_get_major_version (), ==, WS_MAJOR_VERSION);
  g_assert_cmpuint (ws_get_minor_version (), ==, WS_MINOR_VERSION);
  g_assert_cmpuint (ws_get_micro_version (), ==, WS_MICRO_VERSION);

  version = g_strdup_printf ("%u.%u.%u", ws_get_major_version (),
                             ws_get_minor_version (), ws_get_micro_version ());
  g_assert_cmpstr (WS_VERSION_S, ==, version);

  /* By default a program may use the whole API of its headers. */
  g_assert_cmpint (WS_VERSION_MIN_REQUIRED, ==,
                   G_ENCODE_VERSION (WS_MAJOR_VERSION, WS_MINOR_VERSION));
  g_assert_cmpint (WS_VERSION_MAX_ALLOWED, ==,
                   G_ENCODE_VERSION (WS_MAJOR_VERSION, WS_MINOR_VERSION));
  g_assert_cmpint (WS_VERSION_MIN_REQUIRED, >=, WS_VERSION_0_1);
}

static void
test_check_version_macro (void)
{
  /* Signed, as the literals a program passes are: with unsigned operands
   * "WS_MAJOR_VERSION > (major)" is a comparison of an unsigned value with
   * 0 while the major version is 0, which -Wtype-limits reports. */
  int major = WS_MAJOR_VERSION;
  int minor = WS_MINOR_VERSION;
  int micro = WS_MICRO_VERSION;

  /* The current version and older ones. */
  g_assert_true (WS_CHECK_VERSION (major, minor, micro));
  g_assert_true (WS_CHECK_VERSION (major, minor, 0));
  g_assert_true (WS_CHECK_VERSION (major, 0, 0));
  g_assert_true (WS_CHECK_VERSION (0, 0, 0));
  if (micro > 0)
    g_assert_true (WS_CHECK_VERSION (major, minor, micro - 1));
  if (minor > 0)
    g_assert_true (WS_CHECK_VERSION (major, minor - 1, micro + 100));
  if (major > 0)
    g_assert_true (WS_CHECK_VERSION (major - 1, minor + 100, micro + 100));

  /* Newer ones. */
  g_assert_false (WS_CHECK_VERSION (major, minor, micro + 1));
  g_assert_false (WS_CHECK_VERSION (major, minor + 1, 0));
  g_assert_false (WS_CHECK_VERSION (major + 1, 0, 0));
}

static void
test_check_version_function (void)
{
  guint major = ws_get_major_version ();
  guint minor = ws_get_minor_version ();
  guint micro = ws_get_micro_version ();

  /* Compatible: the same major version, not newer than the library. */
  g_assert_null (ws_check_version (WS_MAJOR_VERSION, WS_MINOR_VERSION, WS_MICRO_VERSION));
  g_assert_null (ws_check_version (major, minor, micro));
  g_assert_null (ws_check_version (major, minor, 0));
  g_assert_null (ws_check_version (major, 0, 0));
  if (minor > 0)
    g_assert_null (ws_check_version (major, minor - 1, micro + 100));

  /* Too new for the library. */
  g_assert_nonnull (ws_check_version (major, minor, micro + 1));
  g_assert_nonnull (strstr (ws_check_version (major, minor, micro + 1), "too old"));
  g_assert_nonnull (ws_check_version (major, minor + 1, 0));
  g_assert_nonnull (strstr (ws_check_version (major, minor + 1, 0), "too old"));
  g_assert_nonnull (ws_check_version (major + 1, 0, 0));
  g_assert_nonnull (strstr (ws_check_version (major + 1, 0, 0), "major mismatch"));

  /* An older major version is incompatible too. */
  if (major > 0)
    {
      g_assert_nonnull (ws_check_version (major - 1, 0, 0));
      g_assert_nonnull (strstr (ws_check_version (major - 1, 0, 0), "too new"));
    }
}

int
main (int   argc,
      char *argv[])
{
  ws_test_init (&argc, &argv);

  ws_test_add_func ("/version/macros-match-functions", test_macros_match_functions);
  ws_test_add_func ("/version/check-version-macro", test_check_version_macro);
  ws_test_add_func ("/version/check-version-function", test_check_version_function);

  return g_test_run ();
}
