/* ws-digest.c: file digests on the wsrt pool, for GJS
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The whole of a native library that hands work to JavaScript: one
 * introspected function that starts a job on the runtime's blocking pool
 * and returns the WsTask. The job reads the file with plain blocking
 * calls (it has a thread of its own) and checks the task's cancellable
 * between reads, so `task.cancel()` in the script stops it within one
 * read. Its result is a string, which GJS reads with `task.get_value()`.
 */

#include "ws-digest.h"

#define READ_SIZE (64 * 1024)

typedef struct
{
  GFile         *file;
  GChecksumType  type;
} DigestJob;

static void
digest_job_free (gpointer data)
{
  DigestJob *job = data;

  g_object_unref (job->file);
  g_free (job);
}

static WsPoll
digest_job_run (WsContext *cx,
                gpointer   user_data)
{
  DigestJob *job = user_data;
  GCancellable *cancellable = ws_context_get_cancellable (cx);
  g_autoptr(GFileInputStream) stream = NULL;
  g_autoptr(GChecksum) checksum = g_checksum_new (job->type);
  g_autofree guint8 *buffer = g_malloc (READ_SIZE);
  GValue value = G_VALUE_INIT;
  GError *error = NULL;
  gssize n;

  stream = g_file_read (job->file, cancellable, &error);
  if (stream == NULL)
    {
      ws_context_return_error (cx, error);
      return WS_POLL_READY;
    }

  while ((n = g_input_stream_read (G_INPUT_STREAM (stream), buffer, READ_SIZE,
                                   cancellable, &error)) > 0)
    g_checksum_update (checksum, buffer, n);

  if (n < 0)
    {
      ws_context_return_error (cx, error);
      return WS_POLL_READY;
    }

  g_value_init (&value, G_TYPE_STRING);
  g_value_set_string (&value, g_checksum_get_string (checksum));
  ws_context_return_value (cx, &value);
  g_value_unset (&value);
  return WS_POLL_READY;
}

/**
 * ws_digest_hash_file:
 * @runtime: the runtime whose blocking pool reads the file
 * @file: the file to digest
 * @type: the checksum to compute
 *
 * Starts computing the digest of @file on the blocking pool of @runtime.
 * Cancelling the task stops the reading.
 *
 * Returns: (transfer full): the task; its value is the digest, a
 *   lower-case hexadecimal string, or it fails with the GIO error of the
 *   read (G_IO_ERROR_CANCELLED when cancelled)
 */
WsTask *
ws_digest_hash_file (WsRuntime     *runtime,
                GFile         *file,
                GChecksumType  type)
{
  DigestJob *job;

  g_return_val_if_fail (WS_IS_RUNTIME (runtime), NULL);
  g_return_val_if_fail (G_IS_FILE (file), NULL);
  g_return_val_if_fail (g_checksum_type_get_length (type) > 0, NULL);

  job = g_new0 (DigestJob, 1);
  job->file = g_object_ref (file);
  job->type = type;
  return ws_runtime_spawn_blocking (runtime, digest_job_run, job, digest_job_free);
}
