/* test-fiber-io.c: the fibers' syscall offload (ws_fiber_pread, ...)
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Each case runs twice: on the backend the kernel allows (io_uring where
 * it works, "/fiber-io/auto/...") and on the offload's own threads
 * ("/fiber-io/threads/...", as WS_IO_URING=0 chooses). Reads and writes
 * are compared byte for byte with what the test wrote or reads back
 * itself; a cancelled read of a pipe waits for the write that ends it;
 * 200 fibers read at once; reads of a cached file, which io_uring ends
 * within the submission, run among reads of pipes that wait, and a loop
 * of them still lets the worker's other tasks run; the thread backend never holds more threads
 * than the most calls in flight at once, nor than max-blocking-threads,
 * and keeps one once the calls are over.
 */

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "ws-test-fixture.h"
#include "ws-runtime-private.h"

static WsOffload *
offload_of (WsRuntime *rt)
{
  return ws_runtime_core_get_offload (ws_runtime_get_core (rt));
}

/* Sets the backend of the runtimes made from now on. */
static void
choose_backend (gconstpointer data)
{
  ws_offload_set_force_threads (GPOINTER_TO_INT (data));
}

static GBytes *
pattern (gsize size,
         guint seed)
{
  guint8 *data = g_malloc (size);

  for (gsize i = 0; i < size; i++)
    data[i] = (guint8) ((i * 2654435761u) >> 13) ^ (guint8) seed;
  return g_bytes_new_take (data, size);
}

static char *
scratch_file (GBytes *contents)
{
  g_autoptr(GError) error = NULL;
  char *path = NULL;
  int fd = g_file_open_tmp ("test-fiber-io-XXXXXX", &path, &error);

  g_assert_no_error (error);
  close (fd);
  if (contents != NULL)
    {
      g_file_set_contents (path, g_bytes_get_data (contents, NULL), g_bytes_get_size (contents),
                           &error);
      g_assert_no_error (error);
    }
  return path;
}

/* ---- read a file the test wrote ------------------------------------ */

#define READ_SIZE (256 * 1024 + 123)
#define READ_CHUNK (64 * 1024)

typedef struct
{
  const char *path;
  GBytes     *expected;
  guint8     *got;
  GError     *error;
  gboolean    closed;
} ReadFile;

static void
read_file_fiber (WsContext *cx,
                 gpointer   user_data)
{
  ReadFile *r = user_data;
  gsize size = g_bytes_get_size (r->expected);
  gsize n_chunks = (size + READ_CHUNK - 1) / READ_CHUNK;
  int fd = ws_fiber_openat (cx, AT_FDCWD, r->path, O_RDONLY | O_CLOEXEC, 0, &r->error);

  if (fd < 0)
    return;
  /* Back to front: each pread says where it reads. */
  for (gsize i = n_chunks; i-- > 0;)
    {
      gsize offset = i * READ_CHUNK;
      gsize count = MIN (READ_CHUNK, size - offset);  /* the buffer's room */
      gssize n = ws_fiber_pread (cx, fd, r->got + offset, count, offset, &r->error);

      if (n < 0)
        break;
      g_assert_cmpint (n, ==, count);
    }
  /* At the end: 0. */
  if (r->error == NULL)
    {
      guint8 byte;

      g_assert_cmpint (ws_fiber_pread (cx, fd, &byte, 1, size, &r->error), ==, 0);
    }
  r->closed = ws_fiber_close (cx, fd, r->error != NULL ? NULL : &r->error);
}

static void
test_pread (gconstpointer data)
{
  g_autoptr(WsRuntime) rt = NULL;
  g_autoptr(GBytes) expected = pattern (READ_SIZE, 1);
  g_autofree char *path = scratch_file (expected);
  g_autofree guint8 *got = g_malloc0 (READ_SIZE);
  g_autoptr(WsTask) task = NULL;
  ReadFile r = { path, expected, got, NULL, FALSE };

  choose_backend (data);
  rt = ws_runtime_new (2);
  task = ws_runtime_spawn_fiber (rt, read_file_fiber, &r, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_no_error (r.error);
  g_assert_true (r.closed);
  g_assert_cmpmem (got, READ_SIZE, g_bytes_get_data (expected, NULL), READ_SIZE);
  g_test_message ("backend: %s", ws_offload_get_backend (offload_of (rt)));
  if (GPOINTER_TO_INT (data))
    g_assert_cmpstr (ws_offload_get_backend (offload_of (rt)), ==, "threads");
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
  g_unlink (path);
}

/* ---- write, fsync, read back --------------------------------------- */

typedef struct
{
  const char *path;
  GBytes     *contents;
  guint8     *read_back;
  GError     *error;
} WriteFile;

static void
write_file_fiber (WsContext *cx,
                  gpointer   user_data)
{
  WriteFile *w = user_data;
  gsize size;
  const guint8 *data = g_bytes_get_data (w->contents, &size);
  gsize half = size / 2;
  gsize done = 0;
  int fd = ws_fiber_openat (cx, AT_FDCWD, w->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600,
                            &w->error);

  if (fd < 0)
    return;
  /* The first half at the file position, the second at its offset. */
  while (done < half)
    {
      gssize n = ws_fiber_write (cx, fd, data + done, half - done, &w->error);

      if (n <= 0)
        goto out;
      done += n;
    }
  while (done < size)
    {
      gssize n = ws_fiber_pwrite (cx, fd, data + done, size - done, done, &w->error);

      if (n <= 0)
        goto out;
      done += n;
    }
  if (!ws_fiber_fsync (cx, fd, &w->error))
    goto out;
  for (done = 0; done < size;)
    {
      gssize n = ws_fiber_pread (cx, fd, w->read_back + done, size - done, done, &w->error);

      if (n <= 0)
        goto out;
      done += n;
    }
out:
  ws_fiber_close (cx, fd, w->error != NULL ? NULL : &w->error);
}

static void
test_write_fsync_read_back (gconstpointer data)
{
  g_autoptr(WsRuntime) rt = NULL;
  g_autoptr(GBytes) contents = pattern (300 * 1000, 2);
  g_autofree char *path = scratch_file (NULL);
  g_autofree guint8 *read_back = g_malloc0 (300 * 1000);
  g_autofree char *on_disk = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(WsTask) task = NULL;
  WriteFile w = { path, contents, read_back, NULL };
  gsize len;

  choose_backend (data);
  rt = ws_runtime_new (2);
  task = ws_runtime_spawn_fiber (rt, write_file_fiber, &w, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_no_error (w.error);
  g_assert_cmpmem (read_back, 300 * 1000, g_bytes_get_data (contents, NULL), 300 * 1000);
  /* And what the file holds, read by the test itself. */
  g_file_get_contents (path, &on_disk, &len, &error);
  g_assert_no_error (error);
  g_assert_cmpmem (on_disk, len, g_bytes_get_data (contents, NULL), 300 * 1000);
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
  g_unlink (path);
}

/* ---- errors -------------------------------------------------------- */

typedef struct
{
  const char *missing;
  GError     *open_error;
  int         open_result;
  GError     *read_error;
  GError     *close_error;
} Errors;

static void
errors_fiber (WsContext *cx,
              gpointer   user_data)
{
  Errors *e = user_data;
  int p[2];
  char byte;

  e->open_result = ws_fiber_openat (cx, AT_FDCWD, e->missing, O_RDONLY | O_CLOEXEC, 0,
                                    &e->open_error);
  /* A descriptor that is closed: pread fails with EBADF, as does a
   * second close. */
  g_assert_no_errno (pipe (p));
  close (p[0]);
  close (p[1]);
  g_assert_cmpint (ws_fiber_pread (cx, p[0], &byte, 1, 0, &e->read_error), ==, -1);
  g_assert_false (ws_fiber_close (cx, p[1], &e->close_error));
}

static void
test_errors (gconstpointer data)
{
  g_autoptr(WsRuntime) rt = NULL;
  g_autofree char *dir = g_dir_make_tmp ("test-fiber-io-XXXXXX", NULL);
  g_autofree char *missing = g_build_filename (dir, "missing", NULL);
  g_autoptr(WsTask) task = NULL;
  Errors e = { missing, NULL, 0, NULL, NULL };

  choose_backend (data);
  rt = ws_runtime_new (1);
  task = ws_runtime_spawn_fiber (rt, errors_fiber, &e, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_cmpint (e.open_result, ==, -1);
  g_assert_error (e.open_error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
  g_assert_nonnull (strstr (e.open_error->message, "openat()"));
  g_assert_nonnull (strstr (e.open_error->message, missing));
  g_assert_error (e.read_error, G_IO_ERROR, (gint) g_io_error_from_errno (EBADF));
  g_assert_nonnull (strstr (e.read_error->message, "pread()"));
  g_assert_error (e.close_error, G_IO_ERROR, (gint) g_io_error_from_errno (EBADF));
  g_assert_nonnull (strstr (e.close_error->message, "close()"));
  g_clear_error (&e.open_error);
  g_clear_error (&e.read_error);
  g_clear_error (&e.close_error);
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
  g_rmdir (dir);
}

/* ---- a cancel while a read of a pipe is in flight ------------------ */

typedef struct
{
  int        fd;
  char       byte;
  gssize     result;
  GError    *error;
  _Atomic gboolean returned;     /* the test reads it while the fiber runs */
} PipeRead;

static void
pipe_read_fiber (WsContext *cx,
                 gpointer   user_data)
{
  PipeRead *r = user_data;

  r->result = ws_fiber_read (cx, r->fd, &r->byte, 1, &r->error);
  atomic_store (&r->returned, TRUE);
}

static guint
n_threads_of (WsRuntime *rt)
{
  guint n_threads, n_in_flight, peak_threads, peak_in_flight;

  ws_offload_get_counts (offload_of (rt), &n_threads, &n_in_flight, &peak_threads,
                         &peak_in_flight);
  return n_threads;
}

static guint
in_flight (WsRuntime *rt)
{
  guint n_threads, n_in_flight, peak_threads, peak_in_flight;

  ws_offload_get_counts (offload_of (rt), &n_threads, &n_in_flight, &peak_threads,
                         &peak_in_flight);
  return n_in_flight;
}

/* The pipe holds nothing (the cancelled read took the byte). */
static void
assert_pipe_empty (int fd)
{
  char byte;

  g_assert_no_errno (fcntl (fd, F_SETFL, O_NONBLOCK));
  g_assert_cmpint (read (fd, &byte, 1), ==, -1);
  g_assert_cmpint (errno, ==, EAGAIN);
}

static void
test_cancel_during_read (gconstpointer data)
{
  g_autoptr(WsRuntime) rt = NULL;
  g_autoptr(WsTask) task = NULL;
  g_autoptr(GError) error = NULL;
  PipeRead r = { -1, 0, 0, NULL, FALSE };
  int p[2];

  choose_backend (data);
  rt = ws_runtime_new (2);
  g_assert_no_errno (pipe (p));
  r.fd = p[0];
  task = ws_runtime_spawn_fiber (rt, pipe_read_fiber, &r, NULL);
  ws_test_wait_until (ws_runtime_core_peek_offload (ws_runtime_get_core (rt)) != NULL && in_flight (rt) == 1);
  ws_task_cancel (task);
  /* The read has not ended, so neither has the fiber: its await waits
   * for the syscall, which writes into the fiber's variable. */
  g_assert_false (ws_test_wait_until_for (ws_task_is_finished (task), 50 * 1000));
  g_assert_false (atomic_load (&r.returned));
  g_assert_cmpint (write (p[1], "x", 1), ==, 1);
  g_assert_false (ws_task_wait (task, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_true (atomic_load (&r.returned));
  g_assert_cmpint (r.result, ==, -1);
  g_assert_error (r.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&r.error);
  /* The read ran to its end: it took the byte, into the fiber's frame. */
  g_assert_cmpint (r.byte, ==, 'x');
  assert_pipe_empty (p[0]);
  close (p[0]);
  close (p[1]);
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
}

/* The same on a local fiber, whose thread (this one) waits in place: the
 * write comes from another thread. */
static gpointer
write_byte (gpointer data)
{
  int fd = GPOINTER_TO_INT (data);

  g_assert_cmpint (write (fd, "y", 1), ==, 1);
  return NULL;
}

static void
test_cancel_during_read_local (gconstpointer data)
{
  WsTestOnContext f;
  g_autoptr(WsTask) task = NULL;
  PipeRead r = { -1, 0, 0, NULL, FALSE };
  GThread *writer;
  int p[2];

  choose_backend (data);
  ws_test_on_context_init (&f, 1);
  g_assert_no_errno (pipe (p));
  r.fd = p[0];
  task = ws_runtime_spawn_local_fiber (f.rt, NULL, pipe_read_fiber, &r, NULL);
  while (ws_runtime_core_peek_offload (ws_runtime_get_core (f.rt)) == NULL || in_flight (f.rt) == 0)
    g_main_context_iteration (f.ctx, FALSE);
  ws_task_cancel (task);
  writer = g_thread_new ("writer", write_byte, GINT_TO_POINTER (p[1]));
  /* The iteration that unwinds the fiber waits for the write. */
  ws_test_iterate_until (f.ctx, ws_task_is_finished (task));
  g_thread_join (writer);
  g_assert_true (atomic_load (&r.returned));
  g_assert_error (r.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&r.error);
  g_assert_cmpint (r.byte, ==, 'y');
  assert_pipe_empty (p[0]);
  close (p[0]);
  close (p[1]);
  ws_test_on_context_clear (&f);
}

/* ---- many fibers at once ------------------------------------------- */

#define N_READERS 200
#define BLOCK 4096

typedef struct
{
  int      fd;
  GBytes  *expected;
  guint    index;
  gboolean same;
  GError  *error;
} Reader;

static void
reader_fiber (WsContext *cx,
              gpointer   user_data)
{
  Reader *r = user_data;
  guint8 block[BLOCK];
  const guint8 *expected = g_bytes_get_data (r->expected, NULL);
  gssize n = ws_fiber_pread (cx, r->fd, block, BLOCK, (goffset) r->index * BLOCK, &r->error);

  r->same = n == BLOCK && memcmp (block, expected + (gsize) r->index * BLOCK, BLOCK) == 0;
}

static void
test_many_fibers (gconstpointer data)
{
  g_autoptr(WsRuntime) rt = NULL;
  g_autoptr(GBytes) expected = pattern (N_READERS * BLOCK, 3);
  g_autofree char *path = scratch_file (expected);
  Reader readers[N_READERS];
  WsTask *tasks[N_READERS];
  guint n_threads, n_in_flight, peak_threads, peak_in_flight;
  int fd = open (path, O_RDONLY | O_CLOEXEC);

  g_assert_no_errno (fd);
  choose_backend (data);
  rt = ws_runtime_new (2);
  for (guint i = 0; i < N_READERS; i++)
    {
      readers[i] = (Reader) { fd, expected, i, FALSE, NULL };
      tasks[i] = ws_runtime_spawn_fiber (rt, reader_fiber, &readers[i], NULL);
    }
  for (guint i = 0; i < N_READERS; i++)
    {
      g_assert_true (ws_task_wait (tasks[i], NULL, NULL));
      g_assert_no_error (readers[i].error);
      g_assert_true (readers[i].same);
      g_object_unref (tasks[i]);
    }
  /* The threads' bound: never more than the most calls in flight at
   * once; those beyond a standby leave once idle (a hang here is the
   * watchdog's). */
  ws_offload_get_counts (offload_of (rt), &n_threads, &n_in_flight, &peak_threads,
                         &peak_in_flight);
  if (g_str_equal (ws_offload_get_backend (offload_of (rt)), "threads"))
    {
      g_assert_cmpuint (peak_threads, <=, peak_in_flight);
      g_assert_cmpuint (peak_in_flight, <=, N_READERS);
      ws_test_wait_until (n_threads_of (rt) <= 1);
    }
  else
    g_assert_cmpuint (n_threads, ==, 1);         /* the reaper */
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
  close (fd);
  g_unlink (path);
}

/* ---- calls that end at once among calls that wait ------------------ */

/* Fibers on two workers read a cached file block by block (calls the
 * kernel ends within the submission: on io_uring their submitters take
 * the completions themselves) while other fibers' reads of pipes wait
 * until a thread writes to each, one by one (completions the reaper
 * takes, or a submitter that finds them first). Every block and byte
 * arrives, every fiber ends. */
#define N_FILE_READERS 16
#define FILE_READS     64
#define N_WAITING      8

typedef struct
{
  int         fd;
  GBytes     *expected;
  guint       index;
  guint       n_same;
  GError     *error;
} BlockReader;

static void
block_reader_fiber (WsContext *cx,
                    gpointer   user_data)
{
  BlockReader *r = user_data;
  const guint8 *expected = g_bytes_get_data (r->expected, NULL);
  gsize n_blocks = g_bytes_get_size (r->expected) / BLOCK;
  guint8 block[BLOCK];

  for (guint i = 0; i < FILE_READS && r->error == NULL; i++)
    {
      gsize b = (r->index * 7 + i * 13) % n_blocks;
      gssize n = ws_fiber_pread (cx, r->fd, block, BLOCK, (goffset) (b * BLOCK), &r->error);

      if (n == BLOCK && memcmp (block, expected + b * BLOCK, BLOCK) == 0)
        r->n_same++;
    }
}

static gpointer
write_each_pipe (gpointer data)
{
  int (*pipes)[2] = data;

  for (guint i = 0; i < N_WAITING; i++)
    {
      g_usleep (200);
      g_assert_cmpint (write (pipes[i][1], "p", 1), ==, 1);
    }
  return NULL;
}

static void
test_inline_and_waiting (gconstpointer data)
{
  g_autoptr(WsRuntime) rt = NULL;
  g_autoptr(GBytes) expected = pattern (64 * BLOCK, 5);
  g_autofree char *path = scratch_file (expected);
  BlockReader readers[N_FILE_READERS];
  WsTask *reader_tasks[N_FILE_READERS];
  PipeRead waits[N_WAITING];
  WsTask *wait_tasks[N_WAITING];
  int pipes[N_WAITING][2];
  GThread *writer;
  int fd = open (path, O_RDONLY | O_CLOEXEC);

  g_assert_no_errno (fd);
  choose_backend (data);
  rt = ws_runtime_new (2);
  for (guint i = 0; i < N_WAITING; i++)
    {
      g_assert_no_errno (pipe (pipes[i]));
      waits[i] = (PipeRead) { pipes[i][0], 0, 0, NULL, FALSE };
      wait_tasks[i] = ws_runtime_spawn_fiber (rt, pipe_read_fiber, &waits[i], NULL);
    }
  writer = g_thread_new ("writer", write_each_pipe, pipes);
  for (guint i = 0; i < N_FILE_READERS; i++)
    {
      readers[i] = (BlockReader) { fd, expected, i, 0, NULL };
      reader_tasks[i] = ws_runtime_spawn_fiber (rt, block_reader_fiber, &readers[i], NULL);
    }
  for (guint i = 0; i < N_FILE_READERS; i++)
    {
      g_assert_true (ws_task_wait (reader_tasks[i], NULL, NULL));
      g_assert_no_error (readers[i].error);
      g_assert_cmpuint (readers[i].n_same, ==, FILE_READS);
      g_object_unref (reader_tasks[i]);
    }
  for (guint i = 0; i < N_WAITING; i++)
    {
      g_assert_true (ws_task_wait (wait_tasks[i], NULL, NULL));
      g_assert_no_error (waits[i].error);
      g_assert_cmpint (waits[i].result, ==, 1);
      g_assert_cmpint (waits[i].byte, ==, 'p');
      g_object_unref (wait_tasks[i]);
    }
  g_thread_join (writer);
  for (guint i = 0; i < N_WAITING; i++)
    {
      close (pipes[i][0]);
      close (pipes[i][1]);
    }
  /* Whether the kernel ends a cached read within its submission, and
   * whether the submitter or the reaper then takes it, depends on the
   * kernel and the moment: reported, not asserted. */
  g_test_message ("%s: %" G_GUINT64_FORMAT " of %u calls ended by their submitter",
                  ws_offload_get_backend (offload_of (rt)),
                  ws_offload_get_n_ended_by_submitter (offload_of (rt)),
                  N_FILE_READERS * FILE_READS + N_WAITING);
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
  close (fd);
  g_unlink (path);
}

/* ---- a loop of calls still lets other tasks run -------------------- */

/* A fiber on one worker spawns a task, which waits in the worker's LIFO
 * slot behind the fiber's poll, then reads a cached block more times
 * than a poll's budget has units. Each read either suspends the fiber or,
 * ended within its submission (io_uring), spends a unit of the budget, so
 * the fiber's poll ends, and the task runs, before the loop does. */
#define LOOP_READS 1000

typedef struct
{
  int              fd;
  _Atomic gboolean other_ran;
  guint            reads_before_other;
  GError          *error;
} Looper;

static WsPoll
note_other_ran (WsContext *cx,
                gpointer   data)
{
  atomic_store (&((Looper *) data)->other_ran, TRUE);
  return WS_POLL_READY;
}

static void
looping_reader_fiber (WsContext *cx,
                      gpointer   user_data)
{
  Looper *l = user_data;
  guint8 block[BLOCK];
  guint i;

  ws_join_handle_free (ws_context_spawn (cx, note_other_ran, l, NULL));
  for (i = 0; i < LOOP_READS && !atomic_load (&l->other_ran); i++)
    if (ws_fiber_pread (cx, l->fd, block, BLOCK, 0, &l->error) != BLOCK)
      break;
  l->reads_before_other = i;
}

static void
test_loop_lets_others_run (gconstpointer data)
{
  g_autoptr(WsRuntime) rt = NULL;
  g_autoptr(GBytes) contents = pattern (BLOCK, 9);
  g_autofree char *path = scratch_file (contents);
  g_autoptr(WsTask) task = NULL;
  Looper l = { -1, FALSE, 0, NULL };

  l.fd = open (path, O_RDONLY | O_CLOEXEC);
  g_assert_no_errno (l.fd);
  choose_backend (data);
  rt = ws_runtime_new (1);
  task = ws_runtime_spawn_fiber (rt, looping_reader_fiber, &l, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_no_error (l.error);
  g_assert_true (atomic_load (&l.other_ran));
  g_assert_cmpuint (l.reads_before_other, <, LOOP_READS);
  g_test_message ("%s: the other task ran after %u reads",
                  ws_offload_get_backend (offload_of (rt)), l.reads_before_other);
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
  close (l.fd);
  g_unlink (path);
}

/* ---- the thread backend's cap -------------------------------------- */

#define N_PIPES 8

static void
test_threads_capped (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(WsRuntime) rt = NULL;
  PipeRead reads[N_PIPES];
  WsTask *tasks[N_PIPES];
  int pipes[N_PIPES][2];
  guint n_threads, n_in_flight, peak_threads, peak_in_flight;

  ws_offload_set_force_threads (TRUE);
  rt = g_initable_new (WS_TYPE_RUNTIME, NULL, &error, "n-workers", 2,
                       "max-blocking-threads", 3, NULL);
  g_assert_no_error (error);
  for (guint i = 0; i < N_PIPES; i++)
    {
      g_assert_no_errno (pipe (pipes[i]));
      reads[i] = (PipeRead) { pipes[i][0], 0, 0, NULL, FALSE };
      tasks[i] = ws_runtime_spawn_fiber (rt, pipe_read_fiber, &reads[i], NULL);
    }
  /* Eight reads that block: three run, five wait for a thread. */
  ws_test_wait_until (ws_runtime_core_peek_offload (ws_runtime_get_core (rt)) != NULL && in_flight (rt) == N_PIPES);
  ws_offload_get_counts (offload_of (rt), &n_threads, &n_in_flight, &peak_threads,
                         &peak_in_flight);
  g_assert_cmpuint (n_threads, ==, 3);
  /* Each write ends one read, in any order: the queued ones get a
   * thread as the running ones end. */
  for (guint i = N_PIPES; i-- > 0;)
    g_assert_cmpint (write (pipes[i][1], "z", 1), ==, 1);
  for (guint i = 0; i < N_PIPES; i++)
    {
      g_assert_true (ws_task_wait (tasks[i], NULL, NULL));
      g_assert_cmpint (reads[i].result, ==, 1);
      g_assert_cmpint (reads[i].byte, ==, 'z');
      g_object_unref (tasks[i]);
      close (pipes[i][0]);
      close (pipes[i][1]);
    }
  ws_offload_get_counts (offload_of (rt), &n_threads, &n_in_flight, &peak_threads,
                         &peak_in_flight);
  g_assert_cmpuint (peak_threads, ==, 3);
  ws_test_wait_until (n_threads_of (rt) <= 1);
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
}

/* ---- the runtime's last reference dropped by the offload ----------- */

/* The runtime is dropped while a fiber's read is in flight: its dispose
 * shuts it down, which cancels the fiber and waits for the read; the
 * write comes as the runtime is dropped. The offload's thread then
 * drops the task's last waker, and with it, in some runs, the runtime's
 * last reference, so the offload is freed from its own thread. */
static void
last_reference_fiber (WsContext *cx,
                      gpointer   user_data)
{
  int fd = GPOINTER_TO_INT (user_data);
  char byte;
  GError *error = NULL;

  /* The shutdown's cancel may reach the fiber after the write. */
  if (ws_fiber_read (cx, fd, &byte, 1, &error) != 1)
    g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&error);
}

/* Set just before the test drops the runtime. */
static _Atomic gboolean dropping;

static gpointer
write_once_dropping (gpointer data)
{
  int fd = GPOINTER_TO_INT (data);

  ws_test_wait_until (atomic_load (&dropping));
  g_assert_cmpint (write (fd, "w", 1), ==, 1);
  return NULL;
}

static void
test_last_reference (gconstpointer data)
{
  WsRuntime *rt;
  WsTask *task;
  GThread *writer;
  int p[2];

  choose_backend (data);
  rt = ws_runtime_new (1);
  g_assert_no_errno (pipe (p));
  task = ws_runtime_spawn_fiber (rt, last_reference_fiber, GINT_TO_POINTER (p[0]), NULL);
  ws_test_wait_until (ws_runtime_core_peek_offload (ws_runtime_get_core (rt)) != NULL && in_flight (rt) == 1);
  atomic_store (&dropping, FALSE);
  writer = g_thread_new ("writer", write_once_dropping, GINT_TO_POINTER (p[1]));
  g_object_unref (task);
  atomic_store (&dropping, TRUE);
  /* Its dispose shuts it down, which waits for the fiber, which waits
   * for the write. */
  g_object_unref (rt);
  g_thread_join (writer);
  close (p[0]);
  close (p[1]);
}

int
main (int   argc,
      char *argv[])
{
  static const struct
  {
    const char   *name;
    GTestDataFunc func;
  } cases[] = {
    { "pread", test_pread },
    { "write-fsync-read-back", test_write_fsync_read_back },
    { "errors", test_errors },
    { "cancel-during-read", test_cancel_during_read },
    { "cancel-during-read-local", test_cancel_during_read_local },
    { "many-fibers", test_many_fibers },
    { "inline-and-waiting", test_inline_and_waiting },
    { "loop-lets-others-run", test_loop_lets_others_run },
    { "last-reference", test_last_reference },
  };

  ws_test_init (&argc, &argv);
  for (guint backend = 0; backend < 2; backend++)
    for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
      {
        g_autofree char *path = g_strdup_printf ("/fiber-io/%s/%s",
                                                 backend ? "threads" : "auto", cases[i].name);

        ws_test_add_data_func (path, GINT_TO_POINTER (backend), cases[i].func);
      }
  ws_test_add_func ("/fiber-io/threads/capped", test_threads_capped);
  return g_test_run ();
}
