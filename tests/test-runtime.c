/* test-runtime.c: WsRuntime: spawning and joining, shutdown, the
 * workers' GMainContexts, the default runtime
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "ws-test-fixture.h"
#include "ws-raw-task-private.h"

static void
test_spawn_join_many (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  WsTask **tasks = g_new0 (WsTask *, 10000);

  ws_test_reset_counters ();
  for (guint i = 0; i < 10000; i++)
    tasks[i] = ws_runtime_spawn (rt, ws_test_return_index, GUINT_TO_POINTER (i), ws_test_count_destroy);
  for (guint i = 0; i < 10000; i++)
    {
      g_assert_true (ws_task_wait (tasks[i], NULL, NULL));
      g_assert_cmpuint (g_value_get_uint (ws_task_get_value (tasks[i])), ==, i);
      g_object_unref (tasks[i]);
    }
  g_free (tasks);
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, 10000);
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 10000);

  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_clear_object (&rt);
  ws_test_assert_n_live (0);
}

static void
test_shutdown_with_pending_tasks (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsMetrics) before = NULL;
  g_autoptr(WsMetrics) after = NULL;

  ws_test_reset_counters ();
  for (guint i = 0; i < 10000; i++)
    ws_runtime_spawn_detached (rt, ws_test_pending_forever, NULL, ws_test_count_destroy);
  /* Let some be polled; others are still queued when shutdown comes. */
  ws_test_wait_until (atomic_load (&ws_test_n_polled) >= 100);

  before = ws_runtime_get_metrics (rt);
  g_assert_cmpuint (ws_metrics_get_alive_tasks (before), >, 0);

  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 10000);

  after = ws_runtime_get_metrics (rt);
  g_assert_cmpuint (ws_metrics_get_alive_tasks (after), ==, 0);

  /* Shutting down again is harmless. */
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 10000);
  g_clear_object (&rt);
  ws_test_assert_n_live (0);
}

static void
test_spawn_after_shutdown (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(WsTask) task = NULL;
  g_autoptr(GError) error = NULL;

  ws_test_reset_counters ();
  g_assert_true (ws_runtime_shutdown (rt, -1));

  task = ws_runtime_spawn (rt, ws_test_return_index, NULL, ws_test_count_destroy);
  g_assert_nonnull (task);
  /* Already cancelled, and its data already freed. */
  g_assert_true (ws_task_is_finished (task));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 1);
  g_assert_false (ws_task_wait (task, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, 0);

  ws_runtime_spawn_detached (rt, ws_test_return_index, NULL, ws_test_count_destroy);
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 2);

  g_clear_object (&task);
  task = ws_runtime_spawn_blocking (rt, ws_test_return_index, NULL, ws_test_count_destroy);
  g_assert_true (ws_task_is_finished (task));
  g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, 3);
  g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, 0);
}

/* The last reference to a runtime released on one of its own workers. */
typedef struct
{
  WsRuntime  *rt;
  WsTestGate  returned;
} SelfRelease;

static WsPoll
release_runtime_func (WsContext *cx,
                      gpointer   data)
{
  SelfRelease *s = data;

  g_object_unref (s->rt);       /* the last reference: disposes, shuts down */
  ws_test_gate_open (&s->returned);
  return WS_POLL_READY;
}

static void
test_release_runtime_from_worker (void)
{
  SelfRelease s = { 0, };

  ws_test_reset_counters ();
  ws_test_gate_init (&s.returned);
  s.rt = ws_runtime_new (2);
  ws_runtime_spawn_detached (s.rt, release_runtime_func, &s, ws_test_count_destroy);
  ws_test_gate_wait (&s.returned);

  /* The worker threads wind down by themselves: the task's destroy
   * notify runs, and then the task is freed. */
  ws_test_wait_until (atomic_load (&ws_test_n_destroyed) == 1);
  if (ws_test_have_leak_counters ())
    ws_test_wait_until (ws_raw_task_get_n_live () == 0);
  else
    ws_test_skip_leak_check ();
  ws_test_gate_clear (&s.returned);
}

/* g_file_load_contents_async started in a task completes on that worker's
 * context and wakes the task. */
typedef struct
{
  GFile        *file;
  GThread      *poll_thread;
  GMainContext *poll_context;
  GThread      *callback_thread;
  GMainContext *callback_context;
  WsWaker      *waker;
  gchar        *contents;
  gsize         length;
  GError       *error;
  _Atomic gboolean loaded;
  guint         polls;
} LoadData;

static void
load_cb (GObject      *object,
         GAsyncResult *result,
         gpointer      data)
{
  LoadData *d = data;

  d->callback_thread = g_thread_self ();
  d->callback_context = g_main_context_get_thread_default ();
  g_file_load_contents_finish (G_FILE (object), result, &d->contents, &d->length, NULL, &d->error);
  atomic_store (&d->loaded, TRUE);
  ws_test_wake_and_unref (g_steal_pointer (&d->waker));
}

static WsPoll
load_func (WsContext *cx,
           gpointer   data)
{
  LoadData *d = data;

  d->polls++;
  if (d->polls == 1)
    {
      d->poll_thread = g_thread_self ();
      d->poll_context = g_main_context_get_thread_default ();
      d->waker = ws_context_get_waker (cx);
      g_file_load_contents_async (d->file, NULL, load_cb, d);
      return WS_POLL_PENDING;
    }

  if (!atomic_load (&d->loaded))
    return WS_POLL_PENDING;
  return WS_POLL_READY;
}

static void
test_gio_in_task (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autofree gchar *path = g_test_build_filename (G_TEST_DIST, "test-runtime.c", NULL);
  LoadData d = { 0, };
  g_autoptr(WsTask) task = NULL;

  d.file = g_file_new_for_path (path);
  task = ws_runtime_spawn (rt, load_func, &d, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));

  g_assert_no_error (d.error);
  g_assert_nonnull (d.contents);
  g_assert_nonnull (strstr (d.contents, "g_file_load_contents_async started in a task"));
  /* Each worker has its own context, the thread default while it works. */
  g_assert_nonnull (d.poll_context);
  g_assert_true (d.poll_context != g_main_context_default ());
  g_assert_true (d.callback_context == d.poll_context);
  g_assert_true (d.callback_thread == d.poll_thread);
  g_assert_cmpuint (d.polls, ==, 2);

  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_free (d.contents);
  g_object_unref (d.file);
}

static void
test_default_runtime (void)
{
  WsRuntime *rt = ws_runtime_get_default ();
  g_autoptr(WsTask) task = NULL;

  g_assert_true (rt == ws_runtime_get_default ());
  g_assert_cmpuint (ws_runtime_get_n_workers (rt), ==, g_get_num_processors ());
  task = ws_runtime_spawn (rt, ws_test_return_index, GUINT_TO_POINTER (7), NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_cmpuint (g_value_get_uint (ws_task_get_value (task)), ==, 7);
}

/* A task that a shutdown cancelled while it waited on a channel and a
 * oneshot leaves its waker in both (nothing takes a waiter out until the
 * next send or close): that must not keep the runtime, whose worker
 * contexts go when the last reference to it does, while the channel and
 * the oneshot live on. A source attached to the task's worker context
 * tells when that context is freed. */
typedef struct
{
  WsChannel *channel;
  WsOneshot *shot;
  gint       waiting;        /* atomic */
  gint       context_freed;  /* atomic */
} StaleWaiter;

static gboolean
never_dispatched (gpointer data)
{
  g_assert_not_reached ();
  return G_SOURCE_CONTINUE;
}

static void
note_context_freed (gpointer data)
{
  g_atomic_int_set (&((StaleWaiter *) data)->context_freed, TRUE);
}

static WsPoll
wait_on_both (WsContext *cx,
              gpointer   data)
{
  StaleWaiter *w = data;
  gpointer item = NULL;

  if (ws_channel_poll_receive (w->channel, cx, &item, NULL) == WS_POLL_READY
      || ws_oneshot_poll (w->shot, cx, &item, NULL) == WS_POLL_READY)
    return WS_POLL_READY;
  if (!g_atomic_int_get (&w->waiting))
    {
      GSource *marker = g_timeout_source_new_seconds (3600);

      g_source_set_callback (marker, never_dispatched, w, note_context_freed);
      g_source_attach (marker, g_main_context_get_thread_default ());
      g_source_unref (marker);
      g_atomic_int_set (&w->waiting, TRUE);
    }
  return WS_POLL_PENDING;
}

static void
test_stale_waker_does_not_pin (void)
{
  StaleWaiter w = { ws_channel_new (1, NULL), ws_oneshot_new (NULL), FALSE, FALSE };
  WsRuntime *rt = ws_runtime_new (1);

  ws_runtime_spawn_detached (rt, wait_on_both, &w, NULL);
  ws_test_wait_until (g_atomic_int_get (&w.waiting));
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_object_unref (rt);

  /* The cancelled task's wakers are still in the channel and the
   * oneshot; the runtime, and its worker's context, are gone all the
   * same. */
  ws_test_wait_until (g_atomic_int_get (&w.context_freed));

  ws_channel_unref (w.channel);
  ws_oneshot_unref (w.shot);
}

static gint
compare_lines (gconstpointer a,
               gconstpointer b)
{
  return g_strcmp0 (*(char * const *) a, *(char * const *) b);
}

/* The threads of this process, its entries in /proc/self/task, in
 * order: their IDs, and with @names their names too ("?" for a thread
 * that exits meanwhile). A new thread may not have its name yet, so
 * lists are compared without names. */
static char *
list_threads (gboolean names)
{
  g_autoptr(GDir) dir = g_dir_open ("/proc/self/task", 0, NULL);
  g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func (g_free);
  GString *list = g_string_new (NULL);
  const char *tid;

  g_assert_nonnull (dir);
  while ((tid = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *path = g_strdup_printf ("/proc/self/task/%s/comm", tid);
      g_autofree char *name = NULL;

      if (names)
        (void) g_file_get_contents (path, &name, NULL, NULL);
      g_ptr_array_add (lines, g_strdup_printf ("%s %s", tid,
                                               !names ? "" : name != NULL ? g_strchomp (name) : "?"));
    }
  g_ptr_array_sort (lines, compare_lines);
  for (guint i = 0; i < lines->len; i++)
    g_string_append_printf (list, "%s\n", (char *) lines->pdata[i]);
  return g_string_free (list, FALSE);
}

static gboolean
threads_are (const char *expected)
{
  g_autofree char *now = list_threads (FALSE);

  return g_str_equal (now, expected);
}

/* A process that makes a runtime, runs tasks and a blocking job on it,
 * shuts it down and drops it has the threads it had before: wsrt starts
 * no thread that outlives the runtime, GLib's own worker thread (`gmain`,
 * which registering GTask's type starts) included. A thread that has
 * been joined may stay listed until the kernel has reaped it, so the
 * list is awaited (a third of the watchdog's time), then asserted. In a
 * subprocess: what the other cases did (a GTask made, so `gmain`
 * started) is not in its list. */
static void
test_threads_released_subprocess (void)
{
  g_autofree char *before = list_threads (FALSE);
  WsRuntime *rt = ws_runtime_new (2);
  WsTask *tasks[3];

  tasks[0] = ws_runtime_spawn (rt, ws_test_return_index, GUINT_TO_POINTER (1), NULL);
  tasks[1] = ws_runtime_spawn (rt, ws_test_return_index, GUINT_TO_POINTER (2), NULL);
  tasks[2] = ws_runtime_spawn_blocking (rt, ws_test_return_index, GUINT_TO_POINTER (3), NULL);
  for (guint i = 0; i < G_N_ELEMENTS (tasks); i++)
    {
      g_assert_true (ws_task_wait (tasks[i], NULL, NULL));
      g_assert_cmpuint (g_value_get_uint (ws_task_get_value (tasks[i])), ==, i + 1);
      g_object_unref (tasks[i]);
    }
  g_assert_false (threads_are (before));
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_object_unref (rt);

  if (!ws_test_wait_until_for (threads_are (before), ws_test_timeout_usec () / 3))
    {
      g_autofree char *after = list_threads (TRUE);

      g_error ("threads before the runtime:\n%sand after it:\n%s", before, after);
    }
}

static void
test_threads_released (void)
{
  g_test_trap_subprocess ("/runtime/threads-released/subprocess", 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
}

int
main (int   argc,
      char *argv[])
{
  static const WsTestDef defs[] = {
    { "/runtime/spawn-join-many", test_spawn_join_many },
    { "/runtime/shutdown-with-pending-tasks", test_shutdown_with_pending_tasks },
    { "/runtime/spawn-after-shutdown", test_spawn_after_shutdown },
    { "/runtime/release-from-worker", test_release_runtime_from_worker },
    { "/runtime/gio-in-task", test_gio_in_task },
    { "/runtime/default", test_default_runtime },
    { "/runtime/stale-waker-does-not-pin", test_stale_waker_does_not_pin },
    { "/runtime/threads-released", test_threads_released },
  };
  /* Static: the parent skips it, and a skipped case's data is never
   * freed; for that reason the subprocess adds no other case. */
  static WsTestCase threads_case = { "/runtime/threads-released/subprocess",
                                     test_threads_released_subprocess, };

  ws_test_init (&argc, &argv);
  for (gsize i = 0; i < G_N_ELEMENTS (defs) && !g_test_subprocess (); i++)
    ws_test_add_func (defs[i].path, defs[i].func);
  g_test_add_data_func (threads_case.path, &threads_case, ws_test_run_case);
  return g_test_run ();
}
