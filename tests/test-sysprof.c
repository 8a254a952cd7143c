/* test-sysprof.c: Sysprof marks and counters, read back from a capture
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The test records a child process as Sysprof does: libsysprof's control
 * source gives the child SYSPROF_CONTROL_FD, answers each of its threads'
 * requests for a ring buffer and copies what they write into a capture
 * file. The child (this program again, with WS_TEST_SYSPROF_CHILD set)
 * runs tasks of every kind; the parent reads the capture back with
 * SysprofCaptureReader and checks the marks and counters that
 * doc/profiling.md lists. Without sysprof-capture-4 at build time there
 * is nothing to record, and the program exits 77 (skipped).
 */

#include "config.h"

#include "ws-test-fixture.h"

#ifdef WS_ENABLE_SYSPROF

#include <glib/gstdio.h>
#include <sysprof.h>

#include "ws-core-private.h"

/* ---- the recorded child ------------------------------------------------ */

static WsPoll
ready_poll (WsContext *cx,
            gpointer   data)
{
  return WS_POLL_READY;
}

/* A task that names itself: its span carries the name. */
static WsPoll
named_poll (WsContext *cx,
            gpointer   data)
{
  ws_context_set_task_name (cx, "named span");
  return WS_POLL_READY;
}

/* A blocking job that takes at least 20 ms, so its span does too. */
static WsPoll
sleep_job (WsContext *cx,
           gpointer   data)
{
  g_usleep (20 * 1000);
  return WS_POLL_READY;
}

static void
nothing (gpointer data)
{
}

static WsPoll
block_in_place_poll (WsContext *cx,
                     gpointer   data)
{
  g_autoptr(GError) error = NULL;

  g_assert_true (ws_block_in_place (nothing, NULL, &error));
  g_assert_no_error (error);
  return WS_POLL_READY;
}

/* A fiber that suspends once, on a 2 ms sleep. */
static void
sleeping_fiber (WsContext *cx,
                gpointer   data)
{
  g_autoptr(WsSleep) nap = ws_sleep_new (2000);

  g_assert_true (WS_FIBER_AWAIT (cx, ws_sleep_poll (nap, cx)));
}

static void
waited (GObject      *source,
        GAsyncResult *result,
        gpointer      data)
{
  g_assert_true (ws_task_wait_finish (WS_TASK (source), result, NULL));
  *(gboolean *) data = TRUE;
}

static void
wait_task (WsTask *task)
{
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_object_unref (task);
}

static guint64
total_parks (WsRuntime *rt)
{
  g_autoptr(WsMetrics) m = ws_runtime_get_metrics (rt);
  guint64 n = 0;

  for (guint i = 0; i < ws_metrics_get_n_workers (m); i++)
    n += ws_metrics_get_worker_park_count (m, i);
  return n;
}

static int
run_child (void)
{
  WsRuntime *rt = ws_runtime_new (2);
  GMainContext *ctx = g_main_context_new ();
  WsTask *task;
  gboolean done = FALSE;
  guint64 n_samples;

  /* Recorded: the runtime switched tracing on when it was created. */
  g_assert_true (ws_trace_active ());
  n_samples = ws_trace_get_n_samples ();

  /* Three tasks one after the other: each spawned once the last ended. */
  for (guint i = 0; i < 3; i++)
    wait_task (ws_runtime_spawn (rt, ready_poll, NULL, NULL));

  wait_task (ws_runtime_spawn_blocking (rt, sleep_job, NULL, NULL));
  wait_task (ws_runtime_spawn (rt, block_in_place_poll, NULL, NULL));
  wait_task (ws_runtime_spawn_fiber (rt, sleeping_fiber, NULL, NULL));
  wait_task (ws_runtime_spawn (rt, named_poll, NULL, NULL));

  /* A local task, dispatched by our context; then a completion delivered
   * to it. */
  g_main_context_push_thread_default (ctx);
  task = ws_runtime_spawn_local (rt, ctx, ready_poll, NULL, NULL);
  ws_task_wait_async (task, NULL, waited, &done);
  ws_test_iterate_until (ctx, done);
  g_object_unref (task);
  g_main_context_pop_thread_default (ctx);

  /* A worker parked (there is nothing left to run), and the counters were
   * sampled since the start. */
  ws_test_wait_until (total_parks (rt) > 0);
  ws_test_wait_until (ws_trace_get_n_samples () > n_samples);

  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
  g_object_unref (rt);
  g_main_context_unref (ctx);
  return 0;
}

/* ---- the recorder ------------------------------------------------------ */

static void
child_exited (GObject      *source,
              GAsyncResult *result,
              gpointer      data)
{
  g_autoptr(GError) error = NULL;

  g_assert_true (g_subprocess_wait_finish (G_SUBPROCESS (source), result, &error));
  g_assert_no_error (error);
  *(gboolean *) data = TRUE;
}

/* Runs this program as a child recorded into @path, as Sysprof would. */
static void
record_child (const char *path)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(SysprofCaptureWriter) writer = sysprof_capture_writer_new (path, 0);
  g_autoptr(SysprofSource) source = SYSPROF_SOURCE (sysprof_control_source_new ());
  g_autoptr(SysprofSpawnable) spawnable = sysprof_spawnable_new ();
  g_autoptr(GSubprocess) child = NULL;
  g_auto(GStrv) env = g_get_environ ();
  g_autofree char *exe = g_file_read_link ("/proc/self/exe", &error);
  gboolean exited = FALSE;

  g_assert_no_error (error);
  g_assert_nonnull (writer);
  env = g_environ_setenv (env, "WS_TEST_SYSPROF_CHILD", "1", TRUE);
  env = g_environ_unsetenv (env, "SYSPROF_CONTROL_FD");
  sysprof_spawnable_set_environ (spawnable, (const char * const *) env);
  sysprof_spawnable_append_argv (spawnable, exe);
  sysprof_source_set_writer (source, writer);
  sysprof_source_modify_spawn (source, spawnable);

  child = sysprof_spawnable_spawn (spawnable, &error);
  g_assert_no_error (error);
  g_subprocess_wait_async (child, NULL, child_exited, &exited);
  ws_test_iterate_until (NULL, exited);
  g_assert_true (g_subprocess_get_if_exited (child));
  g_assert_cmpint (g_subprocess_get_exit_status (child), ==, 0);

  /* What the child wrote last is still in its rings: drain them. */
  while (g_main_context_iteration (NULL, FALSE))
    ;
  sysprof_source_stop (source);
  g_assert_true (sysprof_capture_writer_flush (writer));
}

typedef struct
{
  char   group[24];
  char   name[40];
  char  *message;
  gint64 begin;
  gint64 end;
} Mark;

static void
mark_free (gpointer data)
{
  Mark *m = data;

  g_free (m->message);
  g_free (m);
}

typedef struct
{
  GPtrArray  *marks;                 /* of Mark, in capture order */
  GHashTable *counter_ids;           /* name -> id (GUINT_TO_POINTER) */
  GHashTable *counters_set;          /* ids that had a value set */
} Capture;

static void
read_capture (const char *path,
              Capture    *cap)
{
  SysprofCaptureReader *reader = sysprof_capture_reader_new (path);
  SysprofCaptureFrameType type;

  g_assert_nonnull (reader);
  cap->marks = g_ptr_array_new_with_free_func (mark_free);
  cap->counter_ids = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  cap->counters_set = g_hash_table_new (NULL, NULL);

  while (sysprof_capture_reader_peek_type (reader, &type))
    {
      if (type == SYSPROF_CAPTURE_FRAME_MARK)
        {
          const SysprofCaptureMark *fr = sysprof_capture_reader_read_mark (reader);
          Mark *m = g_new0 (Mark, 1);

          g_assert_nonnull (fr);
          g_strlcpy (m->group, fr->group, sizeof m->group);
          g_strlcpy (m->name, fr->name, sizeof m->name);
          m->message = g_strdup (fr->message);
          m->begin = fr->frame.time;
          m->end = fr->frame.time + fr->duration;
          g_ptr_array_add (cap->marks, m);
          if (g_test_verbose ())
            g_test_message ("mark %s / %s: %s, at %" G_GINT64_FORMAT " for %" G_GINT64_FORMAT " ns",
                            m->group, m->name, m->message, m->begin, m->end - m->begin);
        }
      else if (type == SYSPROF_CAPTURE_FRAME_CTRDEF)
        {
          const SysprofCaptureCounterDefine *fr = sysprof_capture_reader_read_counter_define (reader);

          g_assert_nonnull (fr);
          for (guint i = 0; i < fr->n_counters; i++)
            if (g_str_equal (fr->counters[i].category, "wsrt"))
              g_hash_table_insert (cap->counter_ids, g_strdup (fr->counters[i].name),
                                   GUINT_TO_POINTER (fr->counters[i].id));
        }
      else if (type == SYSPROF_CAPTURE_FRAME_CTRSET)
        {
          const SysprofCaptureCounterSet *fr = sysprof_capture_reader_read_counter_set (reader);

          g_assert_nonnull (fr);
          for (guint i = 0; i < fr->n_values; i++)
            for (guint j = 0; j < G_N_ELEMENTS (fr->values[i].ids); j++)
              if (fr->values[i].ids[j] != 0)
                g_hash_table_add (cap->counters_set, GUINT_TO_POINTER (fr->values[i].ids[j]));
        }
      else
        g_assert_true (sysprof_capture_reader_skip (reader));
    }
  sysprof_capture_reader_unref (reader);
}

static void
capture_clear (Capture *cap)
{
  g_ptr_array_unref (cap->marks);
  g_hash_table_unref (cap->counter_ids);
  g_hash_table_unref (cap->counters_set);
}

/* The marks of @group and @name, in capture order. */
static GPtrArray *
find_marks (Capture    *cap,
            const char *group,
            const char *name)
{
  GPtrArray *found = g_ptr_array_new ();

  for (guint i = 0; i < cap->marks->len; i++)
    {
      Mark *m = cap->marks->pdata[i];

      if (g_str_equal (m->group, group) && g_str_equal (m->name, name))
        g_ptr_array_add (found, m);
    }
  return found;
}

static gint
by_begin (gconstpointer a,
          gconstpointer b)
{
  const Mark *x = *(Mark *const *) a;
  const Mark *y = *(Mark *const *) b;

  return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static Mark *
find_one_mark (Capture    *cap,
               const char *group,
               const char *name)
{
  g_autoptr(GPtrArray) found = find_marks (cap, group, name);

  if (found->len == 0)
    g_error ("no mark %s / %s in the capture", group, name);
  return found->pdata[0];
}

static void
assert_counter_set (Capture    *cap,
                    const char *name)
{
  gpointer id;

  if (!g_hash_table_lookup_extended (cap->counter_ids, name, NULL, &id))
    g_error ("no counter \"%s\" defined in the capture", name);
  g_assert_true (g_hash_table_contains (cap->counters_set, id));
}

/* A recorded child's tasks, blocking job, local dispatch, completion,
 * block_in_place and park each leave their mark, and the counters are
 * defined and set. */
static void
test_capture (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *path = NULL;
  g_autoptr(GPtrArray) tasks = NULL;
  g_autoptr(GPtrArray) slices = NULL;
  gboolean polled_one;
  Capture cap;
  Mark *m;
  int fd;

  fd = g_file_open_tmp ("wsrt-sysprof-XXXXXX.syscap", &path, &error);
  g_assert_no_error (error);
  close (fd);

  record_child (path);
  read_capture (path, &cap);

  /* Worker-pool tasks: the three in a row, block_in_place's and the
   * fiber's at least; every span is its task's spawn to its end, and
   * each of the three (the first spawned) began after the one before had
   * ended. Each thread's marks reach the capture in its own order, so
   * they are sorted by time. */
  /* A named task's span has its name (ws_context_set_task_name). */
  {
    g_autoptr(GPtrArray) named = find_marks (&cap, "wsrt task", "named span");

    g_assert_cmpuint (named->len, ==, 1);
    g_assert_cmpstr (((Mark *) named->pdata[0])->message, ==, "ready");
  }

  tasks = find_marks (&cap, "wsrt task", "task");
  g_ptr_array_sort (tasks, by_begin);
  g_assert_cmpuint (tasks->len, >=, 5);
  for (guint i = 0; i < tasks->len; i++)
    {
      m = tasks->pdata[i];
      g_assert_cmpint (m->begin, >, 0);
      g_assert_cmpint (m->end, >, m->begin);
      g_assert_cmpstr (m->message, ==, "ready");
    }
  for (guint i = 1; i < 3; i++)
    {
      Mark *prev = tasks->pdata[i - 1];

      m = tasks->pdata[i];
      g_assert_cmpint (m->begin, >=, prev->end);
    }

  /* The blocking job slept 20 ms between its spawn and its end. */
  m = find_one_mark (&cap, "wsrt blocking", "blocking job");
  g_assert_cmpint (m->end - m->begin, >=, 20 * 1000 * 1000);
  g_assert_cmpstr (m->message, ==, "ready");

  m = find_one_mark (&cap, "wsrt local", "local task");
  g_assert_cmpint (m->end, >, m->begin);

  /* The local task's dispatch polled it; the completion's dispatch
   * delivered the wait's result, after the task's end. */
  slices = find_marks (&cap, "wsrt dispatch", "local tasks");
  polled_one = FALSE;
  for (guint i = 0; i < slices->len; i++)
    {
      m = slices->pdata[i];
      g_assert_cmpint (m->end, >, m->begin);
      polled_one |= g_strcmp0 (m->message, "1") == 0;
    }
  g_assert_true (polled_one);
  m = find_one_mark (&cap, "wsrt dispatch", "completions");
  g_assert_cmpint (m->end, >, m->begin);
  g_assert_cmpint (m->begin, >=, find_one_mark (&cap, "wsrt local", "local task")->end);

  m = find_one_mark (&cap, "wsrt worker", "block_in_place");
  g_assert_cmpint (m->end, >, m->begin);
  m = find_one_mark (&cap, "wsrt worker", "park");
  g_assert_cmpint (m->end, >, m->begin);

  assert_counter_set (&cap, "Busy workers");
  assert_counter_set (&cap, "Queued tasks");
  assert_counter_set (&cap, "Blocking threads");
  assert_counter_set (&cap, "Queued blocking jobs");
  assert_counter_set (&cap, "Waiting fibers");

  capture_clear (&cap);
  if (g_getenv ("WS_TEST_KEEP_CAPTURE") == NULL)
    g_unlink (path);
  else
    g_test_message ("capture kept: %s", path);
}

/* Not recorded: a runtime leaves tracing off, and starts no sampler. */
static void
test_inactive (void)
{
  g_autoptr(WsRuntime) rt = NULL;

  if (g_getenv ("SYSPROF_CONTROL_FD") != NULL)
    {
      g_test_skip ("this test program is itself recorded by Sysprof");
      return;
    }
  rt = ws_runtime_new (1);
  wait_task (ws_runtime_spawn (rt, ready_poll, NULL, NULL));
  g_assert_false (ws_trace_active ());
  g_assert_cmpuint (ws_trace_get_n_samples (), ==, 0);
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
}

int
main (int   argc,
      char *argv[])
{
  if (g_getenv ("WS_TEST_SYSPROF_CHILD") != NULL)
    return run_child ();

  ws_test_init (&argc, &argv);
  ws_test_add_func ("/sysprof/capture", test_capture);
  ws_test_add_func ("/sysprof/inactive", test_inactive);
  return g_test_run ();
}

#else /* !WS_ENABLE_SYSPROF */

int
main (int   argc,
      char *argv[])
{
  g_print ("skipped: wsrt was built without sysprof-capture-4\n");
  return 77;
}

#endif /* WS_ENABLE_SYSPROF */
