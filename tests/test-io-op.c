/* test-io-op.c: WsIoOp, GIO operations as awaitables
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A task awaits each kind of operation with one WS_AWAIT: files (load,
 * replace, query, enumerate), streams (read to the end, write all), a
 * subprocess's output and exit check, a D-Bus call over a peer-to-peer
 * connection made here (no system or session bus). Errors arrive as the
 * GErrors GIO gives; the call is linked to the task's cancellable, and
 * cancelling the task while a call is in flight cancels the call itself.
 * ws_runtime_spawn_io runs an operation on the workers for a caller that
 * takes the result on its own thread, the way JavaScript does.
 */

#include "config.h"

#include <unistd.h>
#include <glib/gstdio.h>

#include <sys/socket.h>
#include <glib/gstdio.h>

#include "ws-test-fixture.h"

/* ---- fixtures ------------------------------------------------------------ */

/* A temporary directory, removed with what the test wrote in it. */
typedef struct
{
  char  *dir;
  GFile *file;
} TempFile;

static void
temp_file_init (TempFile   *t,
                const char *contents)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *path = NULL;

  t->dir = g_dir_make_tmp ("test-io-op-XXXXXX", &error);
  g_assert_no_error (error);
  path = g_build_filename (t->dir, "data", NULL);
  if (contents != NULL)
    {
      g_file_set_contents (path, contents, -1, &error);
      g_assert_no_error (error);
    }
  t->file = g_file_new_for_path (path);
}

/* Removes the directory and every file in it (no subdirectories). */
static void
temp_file_clear (TempFile *t)
{
  g_autoptr(GDir) dir = g_dir_open (t->dir, 0, NULL);
  const char *name;

  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *path = g_build_filename (t->dir, name, NULL);

      g_remove (path);
    }
  g_rmdir (t->dir);
  g_clear_object (&t->file);
  g_clear_pointer (&t->dir, g_free);
}

/* A task that awaits one operation, then takes its result with the
 * finish function the test gives: one WS_AWAIT. */
typedef struct _Await Await;
typedef gboolean (*AwaitFinish) (Await   *s,
                                 GError **error);

struct _Await
{
  WS_ASYNC_STATE;
  WsIoOp       *op;
  AwaitFinish   finish;
  gboolean      cancel_first;
  _Atomic guint polls;
  gboolean      ok;
  GBytes       *bytes;
  GBytes       *bytes2;
  GFileInfo    *info;
  GPtrArray    *infos;
  GVariant     *variant;
};

static void
await_clear (Await *s)
{
  g_clear_pointer (&s->op, ws_io_op_unref);
  g_clear_pointer (&s->bytes, g_bytes_unref);
  g_clear_pointer (&s->bytes2, g_bytes_unref);
  g_clear_object (&s->info);
  g_clear_pointer (&s->infos, g_ptr_array_unref);
  g_clear_pointer (&s->variant, g_variant_unref);
  /* Ready for another task: its coroutine starts from the beginning. */
  memset (s, 0, sizeof *s);
}

static gboolean
finish_plain (Await   *s,
              GError **error)
{
  return ws_io_op_finish (s->op, error);
}

static gboolean
finish_bytes (Await   *s,
              GError **error)
{
  s->bytes = ws_io_op_finish_bytes (s->op, error);
  return s->bytes != NULL;
}

static gboolean
finish_infos (Await   *s,
              GError **error)
{
  s->infos = ws_io_op_finish_infos (s->op, error);
  return s->infos != NULL;
}

static gboolean
finish_variant (Await   *s,
                GError **error)
{
  s->variant = ws_io_op_finish_variant (s->op, error);
  return s->variant != NULL;
}

static gboolean
finish_communicate (Await   *s,
                    GError **error)
{
  return ws_io_op_finish_communicate (s->op, &s->bytes, &s->bytes2, error);
}

static WsPoll
await_func (WsContext *cx,
            gpointer   data)
{
  Await *s = data;
  g_autoptr(GError) error = NULL;

  atomic_fetch_add (&s->polls, 1);
  WS_ASYNC_BEGIN (s);

  if (s->cancel_first)
    g_cancellable_cancel (ws_context_get_cancellable (cx));
  WS_AWAIT (s, ws_io_op_poll (s->op, cx));
  s->ok = s->finish (s, &error);
  if (!s->ok)
    WS_ASYNC_RETURN_ERROR (s, cx, g_steal_pointer (&error));

  WS_ASYNC_END (s);
}

/* Runs @op (taken) in a task on @rt, finished with @finish; returns
 * whether the task succeeded. */
static gboolean
await_op (WsRuntime    *rt,
          Await        *s,
          WsIoOp       *op,
          AwaitFinish   finish,
          GError      **error)
{
  g_autoptr(WsTask) task = NULL;

  s->op = op;
  s->finish = finish;
  task = ws_runtime_spawn (rt, await_func, s, NULL);
  return ws_task_wait (task, NULL, error);
}

static void
assert_bytes (GBytes     *bytes,
              const char *expected)
{
  g_assert_nonnull (bytes);
  g_assert_cmpmem (g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes),
                   expected, strlen (expected));
}

static GSubprocess *
subprocess_new (GSubprocessFlags    flags,
                const char * const *argv)
{
  g_autoptr(GError) error = NULL;
  GSubprocess *subprocess = g_subprocess_newv (argv, flags, &error);

  g_assert_no_error (error);
  return subprocess;
}

/* ---- files --------------------------------------------------------------- */

/* Load, replace then load back, query: one await each, in one task. */
typedef struct
{
  WS_ASYNC_STATE;
  GFile     *file;
  WsIoOp    *op;
  GBytes    *reloaded;
  GFileInfo *info;
} Sequence;

static WsPoll
sequence_func (WsContext *cx,
               gpointer   data)
{
  Sequence *s = data;
  g_autoptr(GError) error = NULL;

  WS_ASYNC_BEGIN (s);

  {
    g_autoptr(GBytes) text = g_bytes_new_static ("replaced", 8);

    s->op = ws_file_replace_contents (s->file, text);
  }
  WS_AWAIT (s, ws_io_op_poll (s->op, cx));
  if (!ws_io_op_finish (s->op, &error))
    WS_ASYNC_RETURN_ERROR (s, cx, g_steal_pointer (&error));
  g_clear_pointer (&s->op, ws_io_op_unref);

  s->op = ws_file_load_contents (s->file);
  WS_AWAIT (s, ws_io_op_poll (s->op, cx));
  s->reloaded = ws_io_op_finish_bytes (s->op, &error);
  if (s->reloaded == NULL)
    WS_ASYNC_RETURN_ERROR (s, cx, g_steal_pointer (&error));
  g_clear_pointer (&s->op, ws_io_op_unref);

  s->op = ws_file_query_info (s->file, G_FILE_ATTRIBUTE_STANDARD_SIZE);
  WS_AWAIT (s, ws_io_op_poll (s->op, cx));
  s->info = ws_io_op_finish_info (s->op, &error);
  if (s->info == NULL)
    WS_ASYNC_RETURN_ERROR (s, cx, g_steal_pointer (&error));

  WS_ASYNC_END (s);
}

static void
test_load (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GError) error = NULL;
  Await s = { 0 };
  TempFile t;

  temp_file_init (&t, "hello, file");
  g_assert_true (await_op (rt, &s, ws_file_load_contents (t.file), finish_bytes, &error));
  g_assert_no_error (error);
  assert_bytes (s.bytes, "hello, file");

  await_clear (&s);
  temp_file_clear (&t);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static void
test_replace_and_query (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsTask) task = NULL;
  g_autoptr(GError) error = NULL;
  Sequence s = { 0 };
  TempFile t;

  temp_file_init (&t, "the old contents, longer");
  s.file = t.file;
  task = ws_runtime_spawn (rt, sequence_func, &s, NULL);
  g_assert_true (ws_task_wait (task, NULL, &error));
  g_assert_no_error (error);
  assert_bytes (s.reloaded, "replaced");
  g_assert_cmpint (g_file_info_get_size (s.info), ==, 8);

  g_clear_pointer (&s.op, ws_io_op_unref);
  g_clear_pointer (&s.reloaded, g_bytes_unref);
  g_clear_object (&s.info);
  temp_file_clear (&t);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static void
test_missing_file (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GError) error = NULL;
  Await s = { 0 };
  TempFile t;

  temp_file_init (&t, NULL);
  g_assert_false (await_op (rt, &s, ws_file_load_contents (t.file), finish_bytes, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
  g_assert_null (s.bytes);

  await_clear (&s);
  temp_file_clear (&t);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* The call gets the task's cancellable: cancelled before the first poll
 * of the operation, the load fails with CANCELLED, and the task, which
 * nobody cancelled, is polled again to see it. */
static void
test_task_cancellable (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GError) error = NULL;
  Await s = { 0 };
  TempFile t;

  temp_file_init (&t, "never read");
  s.cancel_first = TRUE;
  g_assert_false (await_op (rt, &s, ws_file_load_contents (t.file), finish_bytes, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_null (s.bytes);
  g_assert_cmpuint (atomic_load (&s.polls), >=, 2);

  await_clear (&s);
  temp_file_clear (&t);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* More children than one batch of the enumerator (64), each with the
 * attributes asked for; a missing directory and a plain file fail. */
#define N_CHILDREN 150

static int
compare_names (gconstpointer a,
               gconstpointer b)
{
  return g_strcmp0 (g_file_info_get_name (*(GFileInfo **) a),
                    g_file_info_get_name (*(GFileInfo **) b));
}

static void
test_enumerate (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GError) error = NULL;
  g_autoptr(GFile) dir = NULL;
  g_autoptr(GFile) missing = NULL;
  Await s = { 0 };
  TempFile t;

  temp_file_init (&t, "the one with a size");
  for (guint i = 0; i < N_CHILDREN - 1; i++)
    {
      g_autofree char *path = g_strdup_printf ("%s/child-%03u", t.dir, i);

      g_file_set_contents (path, "", 0, &error);
      g_assert_no_error (error);
    }
  dir = g_file_new_for_path (t.dir);
  g_assert_true (await_op (rt, &s, ws_file_enumerate_children (dir, "standard::name,standard::size"),
                           finish_infos, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (s.infos->len, ==, N_CHILDREN);
  g_ptr_array_sort (s.infos, compare_names);
  for (guint i = 0; i < N_CHILDREN - 1; i++)
    {
      g_autofree char *name = g_strdup_printf ("child-%03u", i);
      GFileInfo *info = g_ptr_array_index (s.infos, i);

      g_assert_cmpstr (g_file_info_get_name (info), ==, name);
      g_assert_cmpint (g_file_info_get_size (info), ==, 0);
    }
  g_assert_cmpstr (g_file_info_get_name (g_ptr_array_index (s.infos, N_CHILDREN - 1)), ==, "data");
  g_assert_cmpint (g_file_info_get_size (g_ptr_array_index (s.infos, N_CHILDREN - 1)), ==, 19);
  /* The array holds the references: it outlives the operation. */
  g_clear_pointer (&s.op, ws_io_op_unref);
  g_assert_cmpstr (g_file_info_get_name (g_ptr_array_index (s.infos, 0)), ==, "child-000");
  await_clear (&s);

  missing = g_file_get_child (dir, "missing");
  g_assert_false (await_op (rt, &s, ws_file_enumerate_children (missing, "standard::name"),
                            finish_infos, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
  g_assert_null (s.infos);
  g_clear_error (&error);
  await_clear (&s);

  g_assert_false (await_op (rt, &s, ws_file_enumerate_children (t.file, "standard::name"),
                            finish_infos, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_DIRECTORY);
  await_clear (&s);

  temp_file_clear (&t);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ---- streams ------------------------------------------------------------- */

/* 300 KiB read in growing chunks, the last one short; an empty stream; a
 * closed one fails. */
static void
test_read_all (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) data = NULL;
  g_autoptr(GInputStream) stream = NULL;
  g_autoptr(GInputStream) empty = g_memory_input_stream_new ();
  g_autoptr(GInputStream) closed = g_memory_input_stream_new ();
  guint8 *buf = g_malloc (300 * 1024);
  Await s = { 0 };

  for (gsize i = 0; i < 300 * 1024; i++)
    buf[i] = (guint8) (i * 7 + i / 1024);
  data = g_bytes_new_take (buf, 300 * 1024);
  stream = g_memory_input_stream_new_from_bytes (data);
  g_assert_true (await_op (rt, &s, ws_input_stream_read_all (stream), finish_bytes, &error));
  g_assert_no_error (error);
  g_assert_true (g_bytes_equal (s.bytes, data));
  await_clear (&s);

  g_assert_true (await_op (rt, &s, ws_input_stream_read_all (empty), finish_bytes, &error));
  g_assert_cmpuint (g_bytes_get_size (s.bytes), ==, 0);
  await_clear (&s);

  g_input_stream_close (closed, NULL, NULL);
  g_assert_false (await_op (rt, &s, ws_input_stream_read_all (closed), finish_bytes, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CLOSED);
  await_clear (&s);

  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static void
test_write_all (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) data = g_bytes_new_take (g_strnfill (200 * 1024, 'w'), 200 * 1024);
  g_autoptr(GBytes) written = NULL;
  g_autoptr(GOutputStream) stream = g_memory_output_stream_new_resizable ();
  g_autoptr(GOutputStream) closed = g_memory_output_stream_new_resizable ();
  Await s = { 0 };

  g_assert_true (await_op (rt, &s, ws_output_stream_write_all (stream, data), finish_plain, &error));
  g_assert_no_error (error);
  g_assert_true (g_output_stream_close (stream, NULL, NULL));
  written = g_memory_output_stream_steal_as_bytes (G_MEMORY_OUTPUT_STREAM (stream));
  g_assert_true (g_bytes_equal (written, data));
  await_clear (&s);

  g_output_stream_close (closed, NULL, NULL);
  g_assert_false (await_op (rt, &s, ws_output_stream_write_all (closed, data), finish_plain, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CLOSED);
  await_clear (&s);

  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* A stream that cannot poll, so GIO reads it on a thread of its own; the
 * read waits at a gate, then fills the whole buffer it was given. That
 * thread may be one of GIO's pool that an earlier test started, which
 * gets the job through a GAsyncQueue, whose lock TSan cannot see: the
 * fields are atomic (set before the read is started). */
typedef struct
{
  GInputStream                 parent;
  WsTestGate *_Atomic          gate;
  _Atomic gboolean *_Atomic    finalized;
} GatedStream;

typedef GInputStreamClass GatedStreamClass;

GType gated_stream_get_type (void);

G_DEFINE_TYPE (GatedStream, gated_stream, G_TYPE_INPUT_STREAM)

static gssize
gated_stream_read (GInputStream  *stream,
                   void          *buffer,
                   gsize          count,
                   GCancellable  *cancellable,
                   GError       **error)
{
  GatedStream *self = (GatedStream *) stream;

  ws_test_gate_wait (atomic_load (&self->gate));
  memset (buffer, 'x', count);
  return 0;
}

static void
gated_stream_finalize (GObject *object)
{
  atomic_store (atomic_load (&((GatedStream *) object)->finalized), TRUE);
  G_OBJECT_CLASS (gated_stream_parent_class)->finalize (object);
}

static void
gated_stream_class_init (GatedStreamClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = gated_stream_finalize;
  klass->read_fn = gated_stream_read;
}

static void
gated_stream_init (GatedStream *self)
{
}

/* The task is cancelled and the operation released while GIO's thread
 * is inside the read: the buffer it writes to, once let go, must still be
 * there (ASan sees a use after free otherwise), and GIO's callback
 * still comes and releases the stream. */
static void
test_release_in_flight (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(WsTask) task = NULL;
  g_autoptr(GError) error = NULL;
  _Atomic gboolean finalized = FALSE;
  GatedStream *stream = g_object_new (gated_stream_get_type (), NULL);
  WsTestGate gate;
  Await s = { 0 };

  ws_test_gate_init (&gate);
  atomic_store (&stream->gate, &gate);
  atomic_store (&stream->finalized, &finalized);
  s.op = ws_input_stream_read_all (G_INPUT_STREAM (stream));
  s.finish = finish_bytes;
  task = ws_runtime_spawn (rt, await_func, &s, NULL);
  ws_test_gate_wait_for_waiters (&gate, 1);

  ws_task_cancel (task);
  g_assert_false (ws_task_wait (task, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  await_clear (&s);                   /* the last reference to the operation */
  g_object_unref (stream);
  ws_test_gate_open (&gate);
  ws_test_wait_until (atomic_load (&finalized));
  ws_test_wait_until (ws_test_gate_get_waiting (&gate) == 0);

  g_assert_true (ws_runtime_shutdown (rt, -1));
  ws_test_gate_clear (&gate);
}

/* ---- subprocesses -------------------------------------------------------- */

/* Standard input in, both outputs back; a status other than 0 fails
 * with G_SPAWN_EXIT_ERROR and keeps the output. */
static void
test_communicate (void)
{
  static const char * const cat[] = { "cat", NULL };
  static const char * const fails[] = { "sh", "-c", "echo out; echo err >&2; exit 3", NULL };
  static const char * const false_[] = { "false", NULL };
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) input = g_bytes_new_static ("through cat\n", 12);
  g_autoptr(GSubprocess) p1 = NULL;
  g_autoptr(GSubprocess) p2 = NULL;
  g_autoptr(GSubprocess) p3 = NULL;
  Await s = { 0 };

  p1 = subprocess_new (G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE, cat);
  g_assert_true (await_op (rt, &s, ws_subprocess_communicate (p1, input), finish_communicate,
                           &error));
  g_assert_no_error (error);
  assert_bytes (s.bytes, "through cat\n");
  g_assert_null (s.bytes2);                 /* stderr was no pipe */
  g_assert_true (g_subprocess_get_successful (p1));
  await_clear (&s);

  p2 = subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE, fails);
  g_assert_false (await_op (rt, &s, ws_subprocess_communicate (p2, NULL), finish_communicate,
                            &error));
  g_assert_error (error, G_SPAWN_EXIT_ERROR, 3);
  assert_bytes (s.bytes, "out\n");
  assert_bytes (s.bytes2, "err\n");
  g_clear_error (&error);
  await_clear (&s);

  p3 = subprocess_new (G_SUBPROCESS_FLAGS_NONE, false_);
  g_assert_false (await_op (rt, &s, ws_subprocess_communicate (p3, NULL), finish_plain, &error));
  g_assert_error (error, G_SPAWN_EXIT_ERROR, 1);
  await_clear (&s);

  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* Waits for the exit and checks it: `true` succeeds, `false` fails with
 * G_SPAWN_EXIT_ERROR and its status as the code. */
static void
test_wait_check (void)
{
  static const char * const true_[] = { "true", NULL };
  static const char * const false_[] = { "false", NULL };
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GError) error = NULL;
  g_autoptr(GSubprocess) p1 = subprocess_new (G_SUBPROCESS_FLAGS_NONE, true_);
  g_autoptr(GSubprocess) p2 = subprocess_new (G_SUBPROCESS_FLAGS_NONE, false_);
  g_autoptr(WsIoOp) spawned = NULL;
  g_autoptr(WsTask) task = NULL;
  Await s = { 0 };

  g_assert_true (await_op (rt, &s, ws_subprocess_wait_check (p1), finish_plain, &error));
  g_assert_no_error (error);
  g_assert_true (g_subprocess_get_successful (p1));
  await_clear (&s);

  g_assert_false (await_op (rt, &s, ws_subprocess_wait_check (p2), finish_plain, &error));
  g_assert_error (error, G_SPAWN_EXIT_ERROR, 1);
  g_clear_error (&error);
  await_clear (&s);

  /* The same through spawn_io: no value, the error of the check. */
  spawned = ws_subprocess_wait_check (p2);
  task = ws_runtime_spawn_io (rt, spawned);
  g_assert_false (ws_task_wait (task, NULL, &error));
  g_assert_error (error, G_SPAWN_EXIT_ERROR, 1);
  g_clear_error (&error);
  g_assert_false (ws_io_op_finish (spawned, &error));
  g_assert_error (error, G_SPAWN_EXIT_ERROR, 1);

  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* A process that tells, through @marker, that the communication has
 * started (it read the line the call writes to its standard input), then
 * sleeps for a minute, far beyond what the test waits for the call. */
static GSubprocess *
sleeper_new (const char *marker)
{
  const char * const argv[] = {
    "sh", "-c", "read line && echo \"$line\" > \"$0\" && exec sleep 60", marker, NULL
  };

  return subprocess_new (G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE, argv);
}

/* ws_task_cancel while the communication is in flight: the task ends
 * cancelled without another poll, and the GIO call itself was cancelled:
 * the same operation, awaited again by a new task, is ready at once with
 * G_IO_ERROR_CANCELLED (were the call only abandoned, it would wait for
 * the process, a minute). Through a task of one's own (WS_AWAIT) and
 * through ws_runtime_spawn_io. */
static void
check_cancel_in_flight (gboolean spawn_io)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsTask) task = NULL;
  g_autoptr(WsTask) again = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GSubprocess) sleeper = NULL;
  g_autoptr(GBytes) go = g_bytes_new_static ("go\n", 3);
  g_autoptr(GBytes) out = NULL;
  g_autofree char *marker = NULL;
  WsIoOp *op;
  Await s = { 0 };
  TempFile t;

  temp_file_init (&t, NULL);
  marker = g_file_get_path (t.file);
  sleeper = sleeper_new (marker);
  op = ws_subprocess_communicate (sleeper, go);
  if (spawn_io)
    task = ws_runtime_spawn_io (rt, op);
  else
    {
      s.op = ws_io_op_ref (op);
      s.finish = finish_communicate;
      task = ws_runtime_spawn (rt, await_func, &s, NULL);
    }
  ws_test_wait_until (g_file_test (marker, G_FILE_TEST_EXISTS));

  ws_task_cancel (task);
  g_assert_false (ws_task_wait (task, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&error);
  if (!spawn_io)
    g_assert_cmpuint (atomic_load (&s.polls), ==, 1);

  again = ws_runtime_spawn_io (rt, op);
  ws_test_wait_until (ws_task_is_finished (again));
  g_assert_false (ws_task_wait (again, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&error);
  g_assert_false (ws_io_op_finish_communicate (op, &out, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_null (out);

  g_subprocess_force_exit (sleeper);
  g_assert_true (g_subprocess_wait (sleeper, NULL, NULL));
  ws_io_op_unref (op);
  await_clear (&s);
  temp_file_clear (&t);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

static void
test_cancel_in_flight (void)
{
  check_cancel_in_flight (FALSE);
}

static void
test_cancel_in_flight_spawn_io (void)
{
  check_cancel_in_flight (TRUE);
}

/* ---- D-Bus ----------------------------------------------------------------- */

/* A peer-to-peer D-Bus connection over a socket pair: the server end,
 * which exports org.wsrt.Test at /org/wsrt/Test, runs on a thread of its
 * own with its own context; the client end is the test's. */
static const char peer_xml[] =
  "<node>"
  "  <interface name='org.wsrt.Test'>"
  "    <method name='Echo'>"
  "      <arg type='s' direction='in'/>"
  "      <arg type='s' direction='out'/>"
  "    </method>"
  "    <method name='Fail'/>"
  "  </interface>"
  "</node>";

typedef struct
{
  GThread         *thread;
  GIOStream       *server_stream;
  GMainContext    *context;
  GMainLoop       *loop;
  GDBusConnection *client;
  _Atomic gboolean ready;
} Peer;

static void
peer_method_call (GDBusConnection       *connection,
                  const char            *sender,
                  const char            *object_path,
                  const char            *interface_name,
                  const char            *method_name,
                  GVariant              *parameters,
                  GDBusMethodInvocation *invocation,
                  gpointer               data)
{
  if (g_strcmp0 (method_name, "Echo") == 0)
    {
      const char *text;

      g_variant_get (parameters, "(&s)", &text);
      g_dbus_method_invocation_return_value (invocation, g_variant_new ("(s)", text));
    }
  else
    g_dbus_method_invocation_return_dbus_error (invocation, "org.wsrt.Test.Error.Failed",
                                                "failed on purpose");
}

static gpointer
peer_server_thread (gpointer data)
{
  static const GDBusInterfaceVTable vtable = { peer_method_call, NULL, NULL, { 0 } };
  Peer *peer = data;
  g_autoptr(GError) error = NULL;
  g_autoptr(GDBusNodeInfo) node = g_dbus_node_info_new_for_xml (peer_xml, &error);
  g_autoptr(GDBusConnection) server = NULL;
  g_autofree char *guid = g_dbus_generate_guid ();
  guint id;

  g_assert_no_error (error);
  g_main_context_push_thread_default (peer->context);
  server = g_dbus_connection_new_sync (peer->server_stream, guid,
                                       G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_SERVER,
                                       NULL, NULL, &error);
  g_assert_no_error (error);
  id = g_dbus_connection_register_object (server, "/org/wsrt/Test", node->interfaces[0],
                                          &vtable, NULL, NULL, &error);
  g_assert_no_error (error);
  atomic_store (&peer->ready, TRUE);
  g_main_loop_run (peer->loop);

  g_dbus_connection_unregister_object (server, id);
  g_dbus_connection_close_sync (server, NULL, NULL);
  g_main_context_pop_thread_default (peer->context);
  return NULL;
}

static GIOStream *
stream_for_fd (int fd)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GSocket) socket = g_socket_new_from_fd (fd, &error);

  g_assert_no_error (error);
  return G_IO_STREAM (g_socket_connection_factory_create_connection (socket));
}

static void
peer_init (Peer *peer)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GIOStream) client_stream = NULL;
  int fds[2];

  g_assert_cmpint (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), ==, 0);
  peer->server_stream = stream_for_fd (fds[0]);
  client_stream = stream_for_fd (fds[1]);
  peer->context = g_main_context_new ();
  peer->loop = g_main_loop_new (peer->context, FALSE);
  atomic_init (&peer->ready, FALSE);
  peer->thread = g_thread_new ("dbus-peer", peer_server_thread, peer);
  /* The two ends authenticate each other: the server on its thread. */
  peer->client = g_dbus_connection_new_sync (client_stream, NULL,
                                             G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT,
                                             NULL, NULL, &error);
  g_assert_no_error (error);
  ws_test_wait_until (atomic_load (&peer->ready));
}

static void
peer_clear (Peer *peer)
{
  g_dbus_connection_close_sync (peer->client, NULL, NULL);
  g_clear_object (&peer->client);
  g_main_loop_quit (peer->loop);
  g_thread_join (peer->thread);
  g_clear_pointer (&peer->loop, g_main_loop_unref);
  g_clear_pointer (&peer->context, g_main_context_unref);
  g_clear_object (&peer->server_stream);
}

static WsIoOp *
peer_call (Peer               *peer,
           const char         *method,
           GVariant           *parameters,
           const GVariantType *reply_type)
{
  return ws_dbus_connection_call (peer->client, NULL, "/org/wsrt/Test", "org.wsrt.Test", method,
                                  parameters, reply_type, G_DBUS_CALL_FLAGS_NONE, -1);
}

/* A reply; an error the peer returns; a reply of another type. */
static void
test_dbus (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GError) error = NULL;
  g_autofree char *remote = NULL;
  const char *text;
  Await s = { 0 };
  Peer peer = { 0 };

  peer_init (&peer);
  g_assert_true (await_op (rt, &s, peer_call (&peer, "Echo", g_variant_new ("(s)", "over d-bus"),
                                              G_VARIANT_TYPE ("(s)")),
                           finish_variant, &error));
  g_assert_no_error (error);
  g_variant_get (s.variant, "(&s)", &text);
  g_assert_cmpstr (text, ==, "over d-bus");
  await_clear (&s);

  g_assert_false (await_op (rt, &s, peer_call (&peer, "Fail", NULL, NULL), finish_variant,
                            &error));
  g_assert_true (g_dbus_error_is_remote_error (error));
  remote = g_dbus_error_get_remote_error (error);
  g_assert_cmpstr (remote, ==, "org.wsrt.Test.Error.Failed");
  g_clear_error (&error);
  await_clear (&s);

  g_assert_false (await_op (rt, &s, peer_call (&peer, "Echo", g_variant_new ("(s)", "x"),
                                               G_VARIANT_TYPE ("(i)")),
                            finish_variant, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
  await_clear (&s);

  g_assert_true (ws_runtime_shutdown (rt, -1));
  peer_clear (&peer);
}

/* ---- ws_runtime_spawn_io ------------------------------------------------- */

/* From the main thread, the way JavaScript uses it: the task runs the
 * operation on a worker; once it ended, the finish function gives the
 * result here. Its value is the result when that is one object. */
static void
test_spawn_io (void)
{
  static const char * const fails[] = { "sh", "-c", "echo bad input >&2; exit 2", NULL };
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(GError) error = NULL;
  g_autoptr(GFile) dir = NULL;
  g_autoptr(WsIoOp) enumerate = NULL;
  g_autoptr(WsIoOp) communicate = NULL;
  g_autoptr(WsIoOp) call = NULL;
  g_autoptr(WsTask) t1 = NULL;
  g_autoptr(WsTask) t2 = NULL;
  g_autoptr(WsTask) t3 = NULL;
  g_autoptr(GPtrArray) infos = NULL;
  g_autoptr(GBytes) err = NULL;
  g_autoptr(GVariant) reply = NULL;
  g_autoptr(GSubprocess) failing = NULL;
  const GValue *value;
  Peer peer = { 0 };
  TempFile t;

  temp_file_init (&t, "listed");
  dir = g_file_new_for_path (t.dir);
  enumerate = ws_file_enumerate_children (dir, G_FILE_ATTRIBUTE_STANDARD_NAME);
  t1 = ws_runtime_spawn_io (rt, enumerate);
  g_assert_true (ws_task_wait (t1, NULL, &error));
  g_assert_no_error (error);
  g_assert_null (ws_task_get_value (t1));
  infos = ws_io_op_finish_infos (enumerate, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (infos->len, ==, 1);
  g_assert_cmpstr (g_file_info_get_name (g_ptr_array_index (infos, 0)), ==, "data");

  failing = subprocess_new (G_SUBPROCESS_FLAGS_STDERR_PIPE, fails);
  communicate = ws_subprocess_communicate (failing, NULL);
  t2 = ws_runtime_spawn_io (rt, communicate);
  g_assert_false (ws_task_wait (t2, NULL, &error));
  g_assert_error (error, G_SPAWN_EXIT_ERROR, 2);
  g_clear_error (&error);
  g_assert_false (ws_io_op_finish_communicate (communicate, NULL, &err, &error));
  g_assert_error (error, G_SPAWN_EXIT_ERROR, 2);
  g_clear_error (&error);
  assert_bytes (err, "bad input\n");

  peer_init (&peer);
  call = peer_call (&peer, "Echo", g_variant_new ("(s)", "value"), NULL);
  t3 = ws_runtime_spawn_io (rt, call);
  g_assert_true (ws_task_wait (t3, NULL, &error));
  value = ws_task_get_value (t3);
  g_assert_true (G_VALUE_HOLDS_VARIANT (value));
  g_assert_cmpstr (g_variant_get_type_string (g_value_get_variant (value)), ==, "(s)");
  reply = ws_io_op_finish_variant (call, &error);
  g_assert_no_error (error);
  g_assert_true (reply == g_value_get_variant (value));

  temp_file_clear (&t);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  peer_clear (&peer);
}

/* For bindings: a task whose value is a GBytes. */
static void
test_runtime_load_file (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  g_autoptr(WsTask) task = NULL;
  g_autoptr(WsTask) missing = NULL;
  g_autoptr(GError) error = NULL;
  const GValue *value;
  TempFile t;
  TempFile none;

  temp_file_init (&t, "bytes for JS");
  task = ws_runtime_load_file (rt, t.file);
  g_assert_true (ws_task_wait (task, NULL, &error));
  g_assert_no_error (error);
  value = ws_task_get_value (task);
  g_assert_nonnull (value);
  g_assert_true (G_VALUE_HOLDS (value, G_TYPE_BYTES));
  assert_bytes (g_value_get_boxed (value), "bytes for JS");

  temp_file_init (&none, NULL);
  missing = ws_runtime_load_file (rt, none.file);
  g_assert_false (ws_task_wait (missing, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);

  temp_file_clear (&none);
  temp_file_clear (&t);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* ---- refusals -------------------------------------------------------------- */

/* A finish function of another kind names the right one. */
#define WRONG_FINISH(right, call) \
  G_STMT_START { \
    g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL, "*" right "()*"); \
    call; \
    g_test_assert_expected_messages (); \
    ws_test_n_refusals++; \
  } G_STMT_END

/* ws_file_query_info_full: NOFOLLOW_SYMLINKS queries the link itself;
 * ws_file_query_info follows it. */
typedef struct
{
  GFile     *link;
  GFileType  followed;
  GFileType  not_followed;
} LinkQuery;

static void
query_link_fiber (WsContext *cx,
                  gpointer   user_data)
{
  LinkQuery *q = user_data;
  g_autoptr(WsIoOp) follow = ws_file_query_info (q->link, G_FILE_ATTRIBUTE_STANDARD_TYPE);
  g_autoptr(WsIoOp) nofollow = ws_file_query_info_full (q->link, G_FILE_ATTRIBUTE_STANDARD_TYPE,
                                                        G_FILE_QUERY_INFO_NOFOLLOW_SYMLINKS);
  g_autoptr(GFileInfo) a = NULL;
  g_autoptr(GFileInfo) b = NULL;

  if (!WS_FIBER_AWAIT (cx, ws_io_op_poll (follow, cx))
      || !WS_FIBER_AWAIT (cx, ws_io_op_poll (nofollow, cx)))
    return;
  a = ws_io_op_finish_info (follow, NULL);
  b = ws_io_op_finish_info (nofollow, NULL);
  q->followed = a != NULL ? g_file_info_get_file_type (a) : G_FILE_TYPE_UNKNOWN;
  q->not_followed = b != NULL ? g_file_info_get_file_type (b) : G_FILE_TYPE_UNKNOWN;
}

static void
test_query_nofollow (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autofree char *dir = g_dir_make_tmp ("wsrt-io-op-XXXXXX", NULL);
  g_autofree char *target = g_build_filename (dir, "target", NULL);
  g_autofree char *link = g_build_filename (dir, "link", NULL);
  g_autoptr(WsTask) task = NULL;
  LinkQuery q = { NULL, G_FILE_TYPE_UNKNOWN, G_FILE_TYPE_UNKNOWN };

  g_assert_true (g_file_set_contents (target, "x", 1, NULL));
  g_assert_cmpint (symlink (target, link), ==, 0);
  q.link = g_file_new_for_path (link);
  task = ws_runtime_spawn_fiber (rt, query_link_fiber, &q, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_cmpint (q.followed, ==, G_FILE_TYPE_REGULAR);
  g_assert_cmpint (q.not_followed, ==, G_FILE_TYPE_SYMBOLIC_LINK);
  g_object_unref (q.link);
  g_unlink (link);
  g_unlink (target);
  g_rmdir (dir);
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
}

static void
test_bad_input (void)
{
  static const char * const true_[] = { "true", NULL };
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  g_autoptr(GFile) file = g_file_new_for_path ("/nonexistent");
  g_autoptr(GBytes) bytes = g_bytes_new_static ("x", 1);
  g_autoptr(GInputStream) in = g_memory_input_stream_new ();
  g_autoptr(GOutputStream) out = g_memory_output_stream_new_resizable ();
  g_autoptr(GSubprocess) no_stdin = subprocess_new (G_SUBPROCESS_FLAGS_NONE, true_);
  g_autoptr(WsIoOp) load = ws_file_load_contents (file);
  g_autoptr(WsIoOp) query = ws_file_query_info (file, "standard::size");
  g_autoptr(WsIoOp) communicate = ws_subprocess_communicate (no_stdin, NULL);
  g_autoptr(GBytes) got = NULL;
  GError *error = NULL;

  ws_test_n_refusals = 0;
  WS_TEST_REFUSED (ws_file_load_contents, g_assert_null (ws_file_load_contents (NULL)));
  WS_TEST_REFUSED (ws_file_replace_contents, g_assert_null (ws_file_replace_contents (NULL, bytes)));
  WS_TEST_REFUSED (ws_file_replace_contents, g_assert_null (ws_file_replace_contents (file, NULL)));
  WS_TEST_REFUSED (ws_file_query_info, g_assert_null (ws_file_query_info (NULL, "standard::size")));
  WS_TEST_REFUSED (ws_file_query_info, g_assert_null (ws_file_query_info (file, NULL)));
  WS_TEST_REFUSED (ws_file_query_info_full,
                   g_assert_null (ws_file_query_info_full (NULL, "standard::type",
                                                           G_FILE_QUERY_INFO_NONE)));
  WS_TEST_REFUSED (ws_file_enumerate_children, g_assert_null (ws_file_enumerate_children (NULL, "*")));
  WS_TEST_REFUSED (ws_file_enumerate_children, g_assert_null (ws_file_enumerate_children (file, NULL)));
  WS_TEST_REFUSED (ws_input_stream_read_all, g_assert_null (ws_input_stream_read_all (NULL)));
  WS_TEST_REFUSED (ws_output_stream_write_all, g_assert_null (ws_output_stream_write_all (NULL, bytes)));
  WS_TEST_REFUSED (ws_output_stream_write_all, g_assert_null (ws_output_stream_write_all (out, NULL)));
  WS_TEST_REFUSED (ws_subprocess_communicate, g_assert_null (ws_subprocess_communicate (NULL, NULL)));
  WS_TEST_REFUSED (ws_subprocess_wait_check, g_assert_null (ws_subprocess_wait_check (NULL)));
  /* Standard input for a process that has no pipe for it. */
  WS_TEST_REFUSED (ws_subprocess_communicate,
                   g_assert_null (ws_subprocess_communicate (no_stdin, bytes)));
  WS_TEST_REFUSED (ws_dbus_connection_call,
                   g_assert_null (ws_dbus_connection_call (NULL, NULL, "/a", "a.b", "C", NULL, NULL,
                                                           G_DBUS_CALL_FLAGS_NONE, -1)));
  WS_TEST_REFUSED (ws_io_op_ref, g_assert_null (ws_io_op_ref (NULL)));
  WS_TEST_REFUSED (ws_io_op_unref, ws_io_op_unref (NULL));
  WS_TEST_REFUSED (ws_io_op_poll, g_assert_cmpint (ws_io_op_poll (NULL, NULL), ==, WS_POLL_READY));
  WS_TEST_REFUSED (ws_io_op_poll, g_assert_cmpint (ws_io_op_poll (load, NULL), ==, WS_POLL_READY));
  /* Not ready yet. */
  WS_TEST_REFUSED (ws_io_op_finish, g_assert_false (ws_io_op_finish (NULL, &error)));
  WS_TEST_REFUSED (ws_io_op_finish, g_assert_false (ws_io_op_finish (load, &error)));
  WS_TEST_REFUSED (ws_io_op_finish_bytes, g_assert_null (ws_io_op_finish_bytes (load, &error)));
  WS_TEST_REFUSED (ws_io_op_finish_info, g_assert_null (ws_io_op_finish_info (query, &error)));
  /* Finished as another kind: the critical names the right function. */
  WRONG_FINISH ("ws_io_op_finish_info", g_assert_null (ws_io_op_finish_bytes (query, &error)));
  WRONG_FINISH ("ws_io_op_finish_bytes", g_assert_null (ws_io_op_finish_info (load, &error)));
  WRONG_FINISH ("ws_io_op_finish_bytes", g_assert_null (ws_io_op_finish_infos (load, &error)));
  WRONG_FINISH ("ws_io_op_finish_communicate",
                g_assert_null (ws_io_op_finish_variant (communicate, &error)));
  WRONG_FINISH ("ws_io_op_finish_info",
                g_assert_false (ws_io_op_finish_communicate (query, &got, NULL, &error)));
  g_assert_null (got);
  g_assert_no_error (error);
  WS_TEST_REFUSED (ws_runtime_spawn_io, g_assert_null (ws_runtime_spawn_io (NULL, load)));
  WS_TEST_REFUSED (ws_runtime_spawn_io, g_assert_null (ws_runtime_spawn_io (rt, NULL)));
  WS_TEST_REFUSED (ws_runtime_load_file, g_assert_null (ws_runtime_load_file (NULL, file)));
  WS_TEST_REFUSED (ws_runtime_load_file, g_assert_null (ws_runtime_load_file (rt, NULL)));
  g_test_message ("io ops: %u refusals checked", ws_test_n_refusals);
  g_assert_true (g_subprocess_wait (no_stdin, NULL, NULL));
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* A refused D-Bus call still releases the floating parameters it was
 * given (ASan's leak check sees it if not), and checks what
 * g_dbus_connection_call () would refuse on the worker. */
static void
test_bad_dbus_call (void)
{
  Peer peer = { 0 };

  peer_init (&peer);
  ws_test_n_refusals = 0;
  WS_TEST_REFUSED (ws_dbus_connection_call,
                   g_assert_null (ws_dbus_connection_call (peer.client, NULL, "no path", "a.b", "C",
                                                           g_variant_new ("(s)", "leaked?"), NULL,
                                                           G_DBUS_CALL_FLAGS_NONE, -1)));
  WS_TEST_REFUSED (ws_dbus_connection_call,
                   g_assert_null (ws_dbus_connection_call (peer.client, NULL, "/a", "nodots", "C",
                                                           NULL, NULL, G_DBUS_CALL_FLAGS_NONE, -1)));
  WS_TEST_REFUSED (ws_dbus_connection_call,
                   g_assert_null (ws_dbus_connection_call (peer.client, NULL, "/a", "a.b", "C",
                                                           g_variant_new_string ("no tuple"), NULL,
                                                           G_DBUS_CALL_FLAGS_NONE, -1)));
  WS_TEST_REFUSED (ws_dbus_connection_call,
                   g_assert_null (ws_dbus_connection_call (peer.client, NULL, "/a", "a.b", "C",
                                                           NULL, NULL, G_DBUS_CALL_FLAGS_NONE, -2)));
  peer_clear (&peer);
}

WS_TEST_MAIN ({ "/io-op/load", test_load },
              { "/io-op/replace-and-query", test_replace_and_query },
              { "/io-op/query-nofollow", test_query_nofollow },
              { "/io-op/missing", test_missing_file },
              { "/io-op/task-cancellable", test_task_cancellable },
              { "/io-op/enumerate", test_enumerate },
              { "/io-op/read-all", test_read_all },
              { "/io-op/write-all", test_write_all },
              { "/io-op/release-in-flight", test_release_in_flight },
              { "/io-op/communicate", test_communicate },
              { "/io-op/wait-check", test_wait_check },
              { "/io-op/cancel-in-flight", test_cancel_in_flight },
              { "/io-op/cancel-in-flight-spawn-io", test_cancel_in_flight_spawn_io },
              { "/io-op/dbus", test_dbus },
              { "/io-op/spawn-io", test_spawn_io },
              { "/io-op/runtime-load-file", test_runtime_load_file },
              { "/io-op/bad-input", test_bad_input },
              { "/io-op/bad-dbus-call", test_bad_dbus_call })
