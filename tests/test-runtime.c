/* test-runtime.c: WsRuntime: spawning and joining, shutdown, the
 * workers' GMainContexts, the default runtime
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <sys/prctl.h>

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

/* Lazy start: the workers start with the first task spawned onto them
 * (wsrt/core/ws-worker-pool.c, "Lazy start"). The threads a runtime
 * starts are counted by its start hook, which runs on each of them and
 * tells a worker (PREFIX-N) from a blocking thread (PREFIX-blk) by the
 * thread's name, set before the hook runs. */
typedef struct
{
  _Atomic gint workers;
  _Atomic gint blocking;
} ThreadCount;

static void
count_thread_start (gpointer data)
{
  ThreadCount *c = data;
  char name[17] = "";

  g_assert_cmpint (prctl (PR_GET_NAME, name), ==, 0);
  if (g_str_has_suffix (name, "-blk"))
    atomic_fetch_add (&c->blocking, 1);
  else
    atomic_fetch_add (&c->workers, 1);
}

/* A runtime of @n_workers workers that counts its threads in @c. */
static WsRuntime *
lazy_runtime_new (guint        n_workers,
                  ThreadCount *c)
{
  WsRuntime *rt = ws_test_runtime_new ("n-workers", n_workers,
                                       "thread-name-prefix", "lazy", NULL);

  atomic_store (&c->workers, 0);
  atomic_store (&c->blocking, 0);
  ws_runtime_set_on_thread_start (rt, count_thread_start, c, NULL);
  return rt;
}

/* Spins @n rounds: moves a racing step a little. */
static void
spin (guint n)
{
  for (volatile guint i = 0; i < n; i++)
    ;
}

/* Waits for *@flag, spinning, and yielding once it has spun a while (a
 * loaded machine). */
static void
spin_until (_Atomic gint *flag)
{
  for (guint n = 0; !atomic_load (flag); n++)
    if (n > 100000)
      g_thread_yield ();
}

static gpointer
return_data (GCancellable  *cancellable,
             gpointer       data,
             GError       **error)
{
  return data;
}

/* A local fiber that runs a thread job (the shape of examples/gtk-hasher)
 * and returns what it gave back. */
static void
fiber_runs_in_thread (WsContext *cx,
                      gpointer   data)
{
  gpointer back = ws_fiber_run_in_thread (cx, return_data, data, NULL);

  ws_context_return_uint64 (cx, GPOINTER_TO_UINT (back));
}

/* A runtime that runs only blocking jobs, local tasks and local fibers
 * that await thread jobs starts no worker; WsMetrics reports the workers
 * it will start, with no poll. The first spawn onto the workers starts
 * them, once, and its task runs. */
static void
test_lazy_start_blocking_and_local_only (void)
{
  ThreadCount c;
  WsRuntime *rt = lazy_runtime_new (2, &c);
  g_autoptr(GMainContext) ctx = g_main_context_new ();
  g_autoptr(WsTask) job = NULL;
  g_autoptr(WsTask) local = NULL;
  g_autoptr(WsTask) fiber = NULL;
  g_autoptr(WsTask) first = NULL;
  g_autoptr(WsMetrics) m = NULL;

  g_main_context_push_thread_default (ctx);
  job = ws_runtime_spawn_blocking (rt, ws_test_return_index, GUINT_TO_POINTER (1), NULL);
  local = ws_runtime_spawn_local (rt, ctx, ws_test_return_index, GUINT_TO_POINTER (2), NULL);
  fiber = ws_runtime_spawn_local_fiber (rt, ctx, fiber_runs_in_thread, GUINT_TO_POINTER (3), NULL);
  ws_test_iterate_until (ctx, ws_task_is_finished (local) && ws_task_is_finished (fiber));
  g_assert_true (ws_task_wait (job, NULL, NULL));
  g_assert_cmpuint (g_value_get_uint (ws_task_get_value (job)), ==, 1);
  /* Finished: their values are there (a wait on their context's thread
   * is refused). */
  g_assert_cmpuint (g_value_get_uint (ws_task_get_value (local)), ==, 2);
  g_assert_cmpuint (g_value_get_uint64 (ws_task_get_value (fiber)), ==, 3);

  /* Every blocking thread that ran a job had run the hook first. */
  g_assert_cmpint (atomic_load (&c.blocking), >=, 1);
  g_assert_cmpint (atomic_load (&c.workers), ==, 0);
  m = ws_runtime_get_metrics (rt);
  g_assert_cmpuint (ws_metrics_get_n_workers (m), ==, 2);
  for (guint i = 0; i < 2; i++)
    g_assert_cmpuint (ws_metrics_get_worker_poll_count (m, i), ==, 0);

  first = ws_runtime_spawn (rt, ws_test_return_index, GUINT_TO_POINTER (4), NULL);
  g_assert_true (ws_task_wait (first, NULL, NULL));
  g_assert_cmpuint (g_value_get_uint (ws_task_get_value (first)), ==, 4);
  ws_test_wait_until (atomic_load (&c.workers) == 2);

  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
  g_object_unref (rt);
  /* Shutdown joined every worker: none started twice. */
  g_assert_cmpint (atomic_load (&c.workers), ==, 2);
  g_main_context_pop_thread_default (ctx);
}

#define LAZY_SPAWNERS 8
#define LAZY_SPAWNS 200

typedef struct
{
  WsRuntime    *rt;
  _Atomic gint *go;
  WsTask       *tasks[LAZY_SPAWNS];
} Spawner;

static gpointer
spawn_many (gpointer data)
{
  Spawner *s = data;

  spin_until (s->go);
  for (guint i = 0; i < LAZY_SPAWNS; i++)
    s->tasks[i] = ws_runtime_spawn (s->rt, ws_test_return_index, GUINT_TO_POINTER (i), NULL);
  return NULL;
}

/* Threads released at once spawn onto a runtime whose workers have not
 * started: the workers start once, and every task runs. */
static void
test_lazy_start_many_spawners (void)
{
  ThreadCount c;
  WsRuntime *rt = lazy_runtime_new (3, &c);
  Spawner *s = g_new0 (Spawner, LAZY_SPAWNERS);
  GThread *threads[LAZY_SPAWNERS];
  _Atomic gint go = 0;

  for (guint i = 0; i < LAZY_SPAWNERS; i++)
    {
      s[i].rt = rt;
      s[i].go = &go;
      threads[i] = g_thread_new ("spawner", spawn_many, &s[i]);
    }
  atomic_store (&go, 1);
  for (guint i = 0; i < LAZY_SPAWNERS; i++)
    {
      g_thread_join (threads[i]);
      for (guint j = 0; j < LAZY_SPAWNS; j++)
        {
          g_assert_true (ws_task_wait (s[i].tasks[j], NULL, NULL));
          g_assert_cmpuint (g_value_get_uint (ws_task_get_value (s[i].tasks[j])), ==, j);
          g_object_unref (s[i].tasks[j]);
        }
    }
  g_free (s);

  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
  g_object_unref (rt);
  g_assert_cmpint (atomic_load (&c.workers), ==, 3);
  g_assert_cmpint (atomic_load (&c.blocking), ==, 0);
}

/* Shutdown of a runtime whose workers never started has nothing to wait
 * for: it returns TRUE with no time left (timeout 0). It starts no
 * worker, and nor does a spawn after it, which is refused. */
static void
test_lazy_start_shutdown_never_started (void)
{
  ThreadCount c;
  WsRuntime *rt = lazy_runtime_new (2, &c);
  g_autofree char *before = list_threads (FALSE);
  g_autoptr(WsTask) late = NULL;
  g_autoptr(GError) error = NULL;

  g_assert_true (ws_runtime_shutdown (rt, 0));
  late = ws_runtime_spawn (rt, ws_test_return_index, GUINT_TO_POINTER (1), NULL);
  g_assert_true (ws_task_is_finished (late));
  g_assert_false (ws_task_wait (late, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  /* A thread is listed from its creation on, before it runs. */
  g_assert_true (threads_are (before));
  g_object_unref (rt);
  g_assert_cmpint (atomic_load (&c.workers), ==, 0);
  g_assert_cmpint (atomic_load (&c.blocking), ==, 0);
}

/* The same after blocking jobs and local tasks ran: shutdown ends the
 * blocking pool and the local executor, and still starts no worker. */
static void
test_lazy_start_shutdown_after_blocking (void)
{
  ThreadCount c;
  WsRuntime *rt = lazy_runtime_new (2, &c);
  g_autoptr(GMainContext) ctx = g_main_context_new ();
  g_autoptr(WsTask) job = NULL;
  g_autoptr(WsTask) local = NULL;

  job = ws_runtime_spawn_blocking (rt, ws_test_return_index, GUINT_TO_POINTER (1), NULL);
  local = ws_runtime_spawn_local (rt, ctx, ws_test_pending_forever, NULL, NULL);
  g_assert_true (ws_task_wait (job, NULL, NULL));
  ws_test_iterate_until (ctx, atomic_load (&ws_test_n_polled) > 0);

  /* This thread owns ctx: shutdown runs the local task's cancellation
   * here. */
  g_assert_true (g_main_context_acquire (ctx));
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
  g_main_context_release (ctx);
  g_assert_true (ws_task_is_finished (local));
  g_object_unref (rt);
  g_assert_cmpint (atomic_load (&c.workers), ==, 0);
}

/* Spawns race a shutdown from another thread on a runtime whose workers
 * have not started: each spawn starts the workers or is refused, and
 * when shutdown returns TRUE every task that was not refused has ended
 * (its destroy notify ran: counted). The spawners' start is moved
 * against the shutdown's from one round to the next. */
typedef struct
{
  WsRuntime    *rt;
  _Atomic gint *go;
  guint         delay;
  WsTask       *task;
} RacingSpawn;

static gpointer
racing_spawn (gpointer data)
{
  RacingSpawn *r = data;

  spin_until (r->go);
  spin (r->delay);
  r->task = ws_runtime_spawn (r->rt, ws_test_count_poll, NULL, ws_test_count_destroy);
  return NULL;
}

static void
test_lazy_start_spawn_racing_shutdown (void)
{
  guint rounds = ws_test_scaled (400);

  for (guint round = 0; round < rounds; round++)
    {
      WsRuntime *rt = ws_runtime_new (2);
      RacingSpawn r[3];
      GThread *threads[G_N_ELEMENTS (r)];
      _Atomic gint go = 0;
      gint accepted = 0;

      ws_test_reset_counters ();
      for (guint i = 0; i < G_N_ELEMENTS (r); i++)
        {
          r[i] = (RacingSpawn) { rt, &go, (round * 7 + i * 131) % 2000, NULL };
          threads[i] = g_thread_new ("spawner", racing_spawn, &r[i]);
        }
      atomic_store (&go, 1);
      spin (round % 500);
      g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
      for (guint i = 0; i < G_N_ELEMENTS (r); i++)
        g_thread_join (threads[i]);

      /* A spawn after shutdown's close is refused, its destroy notify run
       * before it returned; one before it has ended by now. */
      for (guint i = 0; i < G_N_ELEMENTS (r); i++)
        {
          g_assert_true (ws_task_is_finished (r[i].task));
          accepted += ws_task_wait (r[i].task, NULL, NULL);
          g_object_unref (r[i].task);
        }
      g_assert_cmpint (atomic_load (&ws_test_n_destroyed), ==, G_N_ELEMENTS (r));
      g_assert_cmpint (atomic_load (&ws_test_n_polled), ==, accepted);
      g_object_unref (rt);
    }
}

/* The same with the shutdown called from a blocking job, which returns
 * at once and leaves the sweep to the pool's threads: a spawn that
 * passes the gate must find a worker started, or it would stay queued
 * with no thread to take or sweep it, a hang that the watchdog reports.
 * Each round moves the spawn against the shutdown. */
typedef struct
{
  WsRuntime    *rt;
  _Atomic gint *go;
  _Atomic gint  ready;
  guint         delay;
  gboolean      returned;
} RacingShutdown;

static WsPoll
shutdown_from_job (WsContext *cx,
                   gpointer   data)
{
  RacingShutdown *r = data;

  atomic_store (&r->ready, 1);
  spin_until (r->go);
  spin (r->delay);
  r->returned = ws_runtime_shutdown (r->rt, -1);
  return WS_POLL_READY;
}

static void
test_lazy_start_spawn_racing_shutdown_from_job (void)
{
  gint64 end = ws_test_budget_end ();
  guint rounds = ws_test_scaled (3000);
  guint round, ran = 0;

  for (round = 0; round < rounds && g_get_monotonic_time () < end; round++)
    {
      WsRuntime *rt = ws_runtime_new (2);
      _Atomic gint go = 0;
      RacingShutdown r = { rt, &go, 0, round % 97 * 10, TRUE };
      g_autoptr(WsTask) job = NULL;
      g_autoptr(WsTask) task = NULL;

      job = ws_runtime_spawn_blocking (rt, shutdown_from_job, &r, NULL);
      ws_test_wait_until (atomic_load (&r.ready));
      atomic_store (&go, 1);
      spin (round % 89 * 10);
      task = ws_runtime_spawn (rt, ws_test_ready, NULL, NULL);
      g_assert_true (ws_task_wait (job, NULL, NULL));
      g_assert_false (r.returned);

      /* Ran, or cancelled (refused, or swept by the workers). */
      ran += ws_task_wait (task, NULL, NULL);
      g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
      g_object_unref (rt);
    }
  g_test_message ("%u rounds, the task ran in %u", round, ran);
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
    { "/runtime/lazy-start/blocking-and-local-only", test_lazy_start_blocking_and_local_only },
    { "/runtime/lazy-start/many-spawners", test_lazy_start_many_spawners },
    { "/runtime/lazy-start/shutdown-never-started", test_lazy_start_shutdown_never_started },
    { "/runtime/lazy-start/shutdown-after-blocking", test_lazy_start_shutdown_after_blocking },
    { "/runtime/lazy-start/spawn-racing-shutdown", test_lazy_start_spawn_racing_shutdown },
    { "/runtime/lazy-start/spawn-racing-shutdown-from-job",
      test_lazy_start_spawn_racing_shutdown_from_job },
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
