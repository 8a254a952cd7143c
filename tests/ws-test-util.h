/* ws-test-util.h: shared test helpers: a watchdog on every test case
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A hang is a failure, not a CI timeout: each test case added with
 * ws_test_add_func() runs under a watchdog that aborts the process with a
 * message naming the test if it runs longer than WS_TEST_TIMEOUT seconds
 * (30 by default; the environment variable overrides it, for slow
 * sanitizer builds). After each case it checks the core's leak counters:
 * no task and no waker reference may outlive the test case (in builds
 * with meson's debug option, which have the counters; the others say
 * that they do not check).
 *
 * GLib alone: every program includes it, the core's and the public-API
 * ones too. The fixtures that programs share are in ws-test-fixture.h,
 * which includes this header.
 */

#pragma once

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <glib.h>

#ifdef WSRT_COMPILATION
/* Leak counters of the core (tests link the internal library). */
gint64 ws_raw_task_get_n_live        (void);
gint64 ws_waker_get_n_live           (void);
#endif

static _Atomic gint64 ws_test_deadline;
static const char *_Atomic ws_test_current;

static gpointer
ws_test_watchdog_thread (gpointer data)
{
  for (;;)
    {
      gint64 deadline = atomic_load (&ws_test_deadline);

      if (deadline > 0 && g_get_monotonic_time () > deadline)
        {
          fprintf (stderr, "Bail out! watchdog: test %s hung\n", atomic_load (&ws_test_current));
          fflush (stderr);
          fflush (stdout);
          abort ();
        }
      g_usleep (50 * 1000);
    }
  return NULL;
}

/* The watchdog's time, in microseconds. Also the timeout of a timed call
 * that must succeed (ws_runtime_shutdown): it cannot run out before the
 * watchdog fires, so a slow machine never fails it, and a call that does
 * not return is a hang the watchdog reports. */
static inline gint64
ws_test_timeout_usec (void)
{
  const char *env = g_getenv ("WS_TEST_TIMEOUT");
  gint64 secs = env ? g_ascii_strtoll (env, NULL, 10) : 30;

  return (secs > 0 ? secs : 30) * G_USEC_PER_SEC;
}

typedef struct
{
  const char    *path;
  GTestFunc      func;
  GTestDataFunc  data_func;
  gconstpointer  data;
} WsTestCase;

/* Sleeps 100 us at a time until @cond holds. A condition that never comes
 * is a hang, which the watchdog reports. */
#define ws_test_wait_until(cond) \
  G_STMT_START { while (!(cond)) g_usleep (100); } G_STMT_END

/* Like ws_test_wait_until(), for at most @usec microseconds; evaluates to
 * whether @cond holds. For the tests that must tell "late" from "never". */
#define ws_test_wait_until_for(cond, usec) \
  ({ \
    gint64 ws_until_ = g_get_monotonic_time () + (usec); \
    gboolean ws_held_; \
    while (!(ws_held_ = !!(cond)) && g_get_monotonic_time () < ws_until_) \
      g_usleep (100); \
    ws_held_; \
  })

/* How many refusals the test case expected (WS_TEST_REFUSED). */
G_GNUC_UNUSED static guint ws_test_n_refusals;

/* @call must log exactly one critical naming @func (a refused call of
 * the public API), and counts it. */
#define WS_TEST_REFUSED(func, call) \
  G_STMT_START { \
    g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*" #func "*"); \
    call; \
    g_test_assert_expected_messages (); \
    ws_test_n_refusals++; \
  } G_STMT_END

/* Whether the core counts live tasks and waker references: builds with
 * meson's debug option (WS_ENABLE_LEAK_COUNTERS). Without them
 * (buildtype release and plain) both counters read -1, and a check that
 * needs them says so with ws_test_skip_leak_check () and checks what it
 * can otherwise. */
static inline gboolean
ws_test_have_leak_counters (void)
{
#ifdef WSRT_COMPILATION
  return ws_raw_task_get_n_live () >= 0;
#else
  return FALSE;
#endif
}

/* Says, once per test program, that the leak checks are not made in
 * this build. */
static inline void
ws_test_skip_leak_check (void)
{
  static gboolean said;

  if (said)
    return;
  said = TRUE;
  g_test_message ("no leak counters in this build (meson option debug=false): live tasks and"
                  " waker references are not checked; builds with debug=true check them");
}

/* The core counts @expected live tasks: asserted where it counts them. */
#define ws_test_assert_n_live(expected) \
  G_STMT_START { \
    if (ws_test_have_leak_counters ()) \
      g_assert_cmpint (ws_raw_task_get_n_live (), ==, (expected)); \
    else \
      ws_test_skip_leak_check (); \
  } G_STMT_END

/* Every test case ends with no live task and no live waker reference: a
 * leak is a failure of the case that made it. Threads the test no longer
 * waits for (a worker dropping its last reference after the waiter woke)
 * get up to 5 seconds (WS_TEST_LEAK_WAIT_MS) to finish; waiting longer is
 * no failure of the test (the counts are read again after the wait).
 * Both counters exist in debug builds only (ws_test_have_leak_counters). */
static inline void
ws_test_assert_no_leaks (void)
{
#ifdef WSRT_COMPILATION
  const char *env = g_getenv ("WS_TEST_LEAK_WAIT_MS");
  gint64 start = g_get_monotonic_time ();

  if (!ws_test_have_leak_counters ())
    {
      ws_test_skip_leak_check ();
      return;
    }
  (void) ws_test_wait_until_for (ws_raw_task_get_n_live () == 0
                                 && ws_waker_get_n_live () == 0,
                                 env ? g_ascii_strtoll (env, NULL, 10) * 1000 : 5 * G_USEC_PER_SEC);
  if (g_get_monotonic_time () - start > 100000)
    g_test_message ("leak check: waited %" G_GINT64_FORMAT " ms for tasks %" G_GINT64_FORMAT
                    ", wakers %" G_GINT64_FORMAT,
                    (g_get_monotonic_time () - start) / 1000,
                    ws_raw_task_get_n_live (), ws_waker_get_n_live ());
  g_assert_cmpint (ws_raw_task_get_n_live (), ==, 0);
  g_assert_cmpint (ws_waker_get_n_live (), ==, 0);
#endif
}

/* @n, divided by WS_STRESS_DIVISOR when it is set (sanitizer and valgrind
 * runs); at least 1. */
static inline guint
ws_test_scaled (guint n)
{
  const char *env = g_getenv ("WS_STRESS_DIVISOR");
  guint64 div = env ? g_ascii_strtoull (env, NULL, 10) : 1;

  if (div <= 1)
    return n;
  return MAX (1, n / div);
}

/* When a loop whose length is free should stop: a third of the
 * watchdog's time from now. A loop bounded by it does as much as the
 * machine allows and leaves the watchdog for hangs. */
static inline gint64
ws_test_budget_end (void)
{
  return g_get_monotonic_time () + ws_test_timeout_usec () / 3;
}

/* A test that chose to wait @usec (a spread of deadlines it derived from
 * what it observed) moves its watchdog by that much: the watchdog catches
 * hangs, not waits a test planned. Not under a watchdog: nothing. */
static inline void
ws_test_watchdog_extend (gint64 usec)
{
  gint64 deadline = atomic_load (&ws_test_deadline);

  if (deadline > 0 && usec > 0)
    atomic_store (&ws_test_deadline, deadline + usec);
}

static void
ws_test_run_case (gconstpointer data)
{
  const WsTestCase *tc = data;

  atomic_store (&ws_test_current, tc->path);
  atomic_store (&ws_test_deadline, g_get_monotonic_time () + ws_test_timeout_usec ());
  if (tc->data_func != NULL)
    tc->data_func (tc->data);
  else
    tc->func ();
  ws_test_assert_no_leaks ();
  atomic_store (&ws_test_deadline, 0);
}

static inline void
ws_test_init (int    *argc,
              char ***argv)
{
  g_test_init (argc, argv, NULL);
  g_thread_unref (g_thread_new ("watchdog", ws_test_watchdog_thread, NULL));
}

static inline void
ws_test_add_func (const char *path,
                  GTestFunc   func)
{
  WsTestCase *tc = g_new0 (WsTestCase, 1);

  tc->path = path;
  tc->func = func;
  g_test_add_data_func_full (path, tc, ws_test_run_case, g_free);
}

/* Like ws_test_add_func(), for table-driven tests: @path is copied. */
static inline void
ws_test_add_data_func (const char    *path,
                       gconstpointer  data,
                       GTestDataFunc  func)
{
  WsTestCase *tc = g_new0 (WsTestCase, 1);

  tc->path = g_intern_string (path);
  tc->data_func = func;
  tc->data = data;
  g_test_add_data_func_full (tc->path, tc, ws_test_run_case, g_free);
}

/* One test case of a table: its path and its function. */
typedef struct
{
  const char *path;
  GTestFunc   func;
} WsTestDef;

/* Adds every case of @defs with ws_test_add_func () and runs them. */
static inline int
ws_test_run_all (int             *argc,
                 char          ***argv,
                 const WsTestDef *defs,
                 gsize            n_defs)
{
  ws_test_init (argc, argv);
  for (gsize i = 0; i < n_defs; i++)
    ws_test_add_func (defs[i].path, defs[i].func);
  return g_test_run ();
}

/* The main () of a test program whose cases need nothing but the
 * watchdog: WS_TEST_MAIN ({ "/subject/case", test_case }, ...). */
#define WS_TEST_MAIN(...) \
  int \
  main (int   argc, \
        char *argv[]) \
  { \
    static const WsTestDef ws_test_defs[] = { __VA_ARGS__ }; \
    return ws_test_run_all (&argc, &argv, ws_test_defs, G_N_ELEMENTS (ws_test_defs)); \
  }

/* Runs @ctx until @cond is TRUE. */
#define ws_test_iterate_until(ctx, cond) \
  G_STMT_START { while (!(cond)) g_main_context_iteration ((ctx), TRUE); } G_STMT_END
