/* test-run-meter.c: the blocking pool's run meter (ws-run-meter) and the
 * CPUs it counts
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A cgroup v2 cpu.max gives the CPUs its quota allows, rounded up, or no
 * limit ("max", or text that is not a cpu.max); the limit of a cgroup is
 * the smallest of its own and its ancestors', up to the given root; the
 * pool's slots are never more than the affinity allows, nor fewer than
 * one. A thread that computes is busy to the meter; one that sleeps is
 * blocked after two looks.
 */

#include "config.h"

#include <glib/gstdio.h>

#include "../ws-test-fixture.h"
#include "ws-run-meter-private.h"

static void
test_cpu_max_parse (void)
{
  g_assert_cmpuint (ws_cpu_max_parse ("max 100000\n"), ==, 0);
  g_assert_cmpuint (ws_cpu_max_parse ("max 100000"), ==, 0);
  g_assert_cmpuint (ws_cpu_max_parse ("200000 100000\n"), ==, 2);
  g_assert_cmpuint (ws_cpu_max_parse ("150000 100000\n"), ==, 2);
  g_assert_cmpuint (ws_cpu_max_parse ("100000 100000"), ==, 1);
  g_assert_cmpuint (ws_cpu_max_parse ("1000 100000\n"), ==, 1);
  g_assert_cmpuint (ws_cpu_max_parse ("6400000 100000\n"), ==, 64);
  /* Not a cpu.max: no limit, so the caller keeps its own count. */
  g_assert_cmpuint (ws_cpu_max_parse (""), ==, 0);
  g_assert_cmpuint (ws_cpu_max_parse ("garbage"), ==, 0);
  g_assert_cmpuint (ws_cpu_max_parse ("200000"), ==, 0);
  g_assert_cmpuint (ws_cpu_max_parse ("200000 0"), ==, 0);
  g_assert_cmpuint (ws_cpu_max_parse ("0 100000"), ==, 0);
  g_assert_cmpuint (ws_cpu_max_parse ("200000 100000x"), ==, 0);
  g_assert_cmpuint (ws_cpu_max_parse ("-200000 100000"), ==, 0);
  g_assert_cmpuint (ws_cpu_max_parse (NULL), ==, 0);
}

static void
write_cpu_max (const char *root,
               const char *path,
               const char *text)
{
  g_autofree gchar *dir = g_build_filename (root, path, NULL);
  g_autofree gchar *file = g_build_filename (dir, "cpu.max", NULL);
  g_autoptr(GError) error = NULL;

  g_assert_cmpint (g_mkdir_with_parents (dir, 0700), ==, 0);
  if (text != NULL)
    {
      g_file_set_contents (file, text, -1, &error);
      g_assert_no_error (error);
    }
}

static void
remove_tree (const char *path)
{
  g_autoptr(GDir) dir = g_dir_open (path, 0, NULL);
  const char *name;

  if (dir == NULL)
    {
      g_remove (path);
      return;
    }
  while ((name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree gchar *child = g_build_filename (path, name, NULL);

      remove_tree (child);
    }
  g_rmdir (path);
}

/* A hierarchy under a temporary root: the smallest limit on the way up
 * wins; a cgroup without cpu.max, or with "max", sets none. */
static void
test_cgroup_cpu_limit (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree gchar *root = g_dir_make_tmp ("wsrt-cgroup-XXXXXX", &error);

  g_assert_no_error (error);
  write_cpu_max (root, "a", "max 100000\n");
  write_cpu_max (root, "a/b", "400000 100000\n");
  write_cpu_max (root, "a/b/c", NULL);
  write_cpu_max (root, "a/b/c/d", "150000 100000\n");
  write_cpu_max (root, "e", "max 100000\n");

  g_assert_cmpuint (ws_cgroup_cpu_limit (root, "0::/a/b/c/d\n"), ==, 2);
  g_assert_cmpuint (ws_cgroup_cpu_limit (root, "0::/a/b/c\n"), ==, 4);
  g_assert_cmpuint (ws_cgroup_cpu_limit (root, "0::/a/b\n"), ==, 4);
  g_assert_cmpuint (ws_cgroup_cpu_limit (root, "0::/a\n"), ==, 0);
  g_assert_cmpuint (ws_cgroup_cpu_limit (root, "0::/e\n"), ==, 0);
  /* The v2 line among v1 ones, wherever it is. */
  g_assert_cmpuint (ws_cgroup_cpu_limit (root, "4:memory:/x\n0::/a/b/c/d\n1:cpu:/\n"), ==, 2);
  /* No v2 line, a cgroup that is not there, a path that climbs out. */
  g_assert_cmpuint (ws_cgroup_cpu_limit (root, "4:memory:/x\n1:cpu:/\n"), ==, 0);
  g_assert_cmpuint (ws_cgroup_cpu_limit (root, "0::/nowhere\n"), ==, 0);
  g_assert_cmpuint (ws_cgroup_cpu_limit (root, "0::/a/../e\n"), ==, 0);
  g_assert_cmpuint (ws_cgroup_cpu_limit (root, ""), ==, 0);

  /* A container's own root (cgroup namespace: "0::/"). */
  write_cpu_max (root, "", "300000 100000\n");
  g_assert_cmpuint (ws_cgroup_cpu_limit (root, "0::/\n"), ==, 3);
  g_assert_cmpuint (ws_cgroup_cpu_limit (root, "0::/a/b\n"), ==, 3);

  remove_tree (root);
}

/* The slots: at least one, at most the affinity's CPUs. */
static void
test_cpu_slots (void)
{
  guint n = ws_run_meter_cpu_slots ();

  g_test_message ("%u slots, %u CPUs in the affinity", n, g_get_num_processors ());
  g_assert_cmpuint (n, >=, 1);
  g_assert_cmpuint (n, <=, MAX (g_get_num_processors (), 1));
}

/* A meter on a thread that sleeps at a gate: busy after one look,
 * blocked after more, at most one look per window. */
typedef struct
{
  WsTestGate  gate;
  WsRunMeter  meter;
  WsLock      lock;
  gboolean    ready;
} Sleeper;

static gpointer
sleeper_main (gpointer data)
{
  Sleeper *s = data;

  ws_lock_lock (&s->lock);
  ws_run_meter_init (&s->meter);
  s->ready = TRUE;
  ws_lock_unlock (&s->lock);
  ws_test_gate_wait (&s->gate);
  ws_lock_lock (&s->lock);
  ws_run_meter_clear (&s->meter);
  ws_lock_unlock (&s->lock);
  return NULL;
}

static void
test_sleeping_thread_is_blocked (void)
{
  Sleeper s = { 0, };
  GThread *thread;
  gint64 now;
  gint64 n_looks;
  gboolean ready;

  ws_test_gate_init (&s.gate);
  ws_lock_init (&s.lock);
  thread = g_thread_new ("sleeper", sleeper_main, &s);
  ws_test_gate_wait_for_waiters (&s.gate, 1);
  ws_lock_lock (&s.lock);
  ready = s.ready;
  ws_lock_unlock (&s.lock);
  g_assert_true (ready);

  /* Presumed busy until a look, and still busy after one: blocked
   * takes two looks in a row that find it waiting. A thread at the gate
   * waits ('S'; it may still be on its way into the futex at first), and
   * a futex wait does not end by itself, so the looks find it blocked in
   * the end; one look per window at most. */
  ws_lock_lock (&s.lock);
  g_assert_true (s.meter.busy);
  now = g_get_monotonic_time ();
  g_assert_true (ws_run_meter_is_busy (&s.meter, now, WS_RUN_METER_WINDOW_USEC));
  g_assert_false (ws_run_meter_look_due (&s.meter, now + 1, WS_RUN_METER_WINDOW_USEC));
  g_assert_true (ws_run_meter_is_busy (&s.meter, now + 1, WS_RUN_METER_WINDOW_USEC));
  for (n_looks = 1; ws_run_meter_is_busy (&s.meter, now + n_looks * WS_RUN_METER_WINDOW_USEC,
                                          WS_RUN_METER_WINDOW_USEC); n_looks++)
    {
      ws_lock_unlock (&s.lock);
      g_usleep (1000);
      ws_lock_lock (&s.lock);
    }
  g_assert_cmpint (n_looks, >=, 1);
  ws_lock_unlock (&s.lock);

  ws_test_gate_open (&s.gate);
  g_thread_join (thread);
  ws_test_gate_clear (&s.gate);
  ws_lock_clear (&s.lock);
}

WS_TEST_MAIN ({ "/run-meter/cpu-max-parse", test_cpu_max_parse },
              { "/run-meter/cgroup-cpu-limit", test_cgroup_cpu_limit },
              { "/run-meter/cpu-slots", test_cpu_slots },
              { "/run-meter/sleeping-thread-is-blocked", test_sleeping_thread_is_blocked })
