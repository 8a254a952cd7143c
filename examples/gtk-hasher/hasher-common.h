/* hasher-common.h: what the two gtk-hasher programs share
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * gtk-hasher (wsrt) and gtk-hasher-gtask (GTask) are one application with
 * two ways of running its work: everything that is not scheduling lives
 * here, so that the two differ in nothing else. Here are the window (a
 * progress bar, a Cancel button, the result), the headless mode used for
 * timing (the same code without widgets), the directory walk, the hashing
 * of one file and the final report. A backend supplies start() and
 * cancel(), reports each hashed file with hasher_show_file() on the main
 * thread (or, from its threads, with hasher_file_done(), which only
 * counts it) and ends the work with hasher_finish(), exactly once, on the
 * main thread.
 */

#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

/* One regular file under the directory. */
typedef struct
{
  char       *path;      /* what to open */
  const char *name;      /* the path relative to the directory (inside path) */
  char        hex[65];   /* its SHA-256 in hex; empty if it could not be read */
} HasherEntry;

typedef struct _Hasher Hasher;

typedef struct
{
  const char *name;                                  /* "wsrt", "GTask" */
  /* Main thread. Start hashing the files under @dir. */
  void      (*start)   (Hasher     *hasher,
                        const char *dir);
  /* Main thread, once at most, before hasher_finish(). Stop soon. */
  void      (*cancel)  (Hasher     *hasher);
  /* Main thread, after the work ended (nullable): release everything.
   * Returns FALSE if it could not. */
  gboolean  (*cleanup) (Hasher     *hasher);
} HasherBackend;

int        hasher_main          (int                   argc,
                                 char                **argv,
                                 const HasherBackend  *backend);

/* For the backend: its own data. */
gpointer   hasher_get_data      (Hasher               *hasher);
void       hasher_set_data      (Hasher               *hasher,
                                 gpointer              data);

/* Any thread: the walk is over, @n_files files are to be hashed. */
void       hasher_set_n_files   (Hasher               *hasher,
                                 guint                 n_files);
/* Any thread: one more file hashed (or found unreadable). */
void       hasher_file_done     (Hasher               *hasher);
/* Main thread: @entry (transfer none, kept until hasher_finish()) was
 * just hashed or found unreadable. Counts it, as hasher_file_done(), and
 * shows it: the window lists the last HASHER_SHOWN_ROWS files shown,
 * newest first, redrawn with the progress bar; the report says how many
 * files were shown. Headless, it only counts. */
#define HASHER_SHOWN_ROWS 12
void       hasher_show_file     (Hasher               *hasher,
                                 const HasherEntry    *entry);
/* Main thread, once: the work ended. @entries (transfer none) holds every
 * file with its digest; @error is set instead if it was cancelled or
 * failed. */
void       hasher_finish        (Hasher               *hasher,
                                 GPtrArray            *entries,
                                 const GError         *error);

/* Blocking, any thread. Every regular file under @dir (symbolic links are
 * not followed), sorted by name: a GPtrArray of HasherEntry that frees
 * them. Fails with G_IO_ERROR_CANCELLED once @cancellable is cancelled. */
GPtrArray *hasher_walk          (const char           *dir,
                                 GCancellable         *cancellable,
                                 GError              **error);
/* Blocking, any thread. Reads and hashes @entry's file, fills entry->hex.
 * Checks @cancellable between chunks, so that a large file stops soon. */
gboolean   hasher_hash_file     (HasherEntry          *entry,
                                 GCancellable         *cancellable,
                                 GError              **error);

G_END_DECLS
