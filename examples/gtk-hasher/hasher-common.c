/* hasher-common.c: the window, the walk, the hashing and the report
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Threads: hasher_walk() and hasher_hash_file() run on the backend's
 * threads; hasher_file_done() on any thread (an atomic counter); all the
 * rest on the main thread. The progress bar and the list of files shown
 * are redrawn by a timeout every PROGRESS_INTERVAL_MS, never once per
 * file: hasher_show_file() only records the file, so that what a file
 * costs the main loop is the backend's own round trip, the same in
 * every backend.
 */

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "hasher-common.h"

#define PROGRESS_INTERVAL_MS 33        /* about 30 updates a second */
#define READ_CHUNK           (64 * 1024)

struct _Hasher
{
  const HasherBackend *backend;
  gpointer             backend_data;
  const char          *dir;

  /* Files found by the walk (0 while it runs), and files hashed: written
   * by the backend's threads with g_atomic_int_inc(), read by the progress
   * tick. */
  guint                n_files;
  gint                 n_done;

  /* hasher_show_file(): how many files it was given, and the last
   * HASHER_SHOWN_ROWS of them, a ring whose newest is at
   * shown[(n_shown - 1) % HASHER_SHOWN_ROWS]. Main thread. */
  guint                n_shown;
  const HasherEntry   *shown[HASHER_SHOWN_ROWS];
  guint                n_shown_drawn;    /* n_shown when the list was drawn */

  gint64               start_time;
  gint64               cancel_time;     /* 0 until Cancel is pressed */
  gboolean             running;
  gboolean             quit_when_done;
  gboolean             failed;
  guint                progress_id;
  /* --measure-gap: a 1 ms timer on the main loop and the longest time
   * between two of its callbacks, in microseconds. */
  guint                gap_id;
  gint64               gap_last;
  gint64               gap_max;
  guint                cancel_id;       /* --cancel-after-ms */
  guint                timeout_id;      /* the watchdog */

  /* NULL in headless mode. */
  GtkWindow           *window;
  GtkProgressBar      *progress;
  GtkLabel            *result;
  GtkLabel            *list;            /* the files shown, newest first */
  GtkButton           *cancel;
  GMainLoop           *loop;            /* headless mode */
};

gpointer
hasher_get_data (Hasher *hasher)
{
  return hasher->backend_data;
}

void
hasher_set_data (Hasher   *hasher,
                 gpointer  data)
{
  hasher->backend_data = data;
}

void
hasher_set_n_files (Hasher *hasher,
                    guint   n_files)
{
  g_atomic_int_set (&hasher->n_files, n_files);
}

void
hasher_file_done (Hasher *hasher)
{
  g_atomic_int_inc (&hasher->n_done);
}

void
hasher_show_file (Hasher            *hasher,
                  const HasherEntry *entry)
{
  g_return_if_fail (hasher->running);

  hasher_file_done (hasher);
  hasher->shown[hasher->n_shown % HASHER_SHOWN_ROWS] = entry;
  hasher->n_shown++;
}

/* --- the walk and the hashing (any thread) -------------------------------- */

static void
hasher_entry_free (gpointer data)
{
  HasherEntry *entry = data;

  g_free (entry->path);
  g_free (entry);
}

static int
compare_entries (gconstpointer a,
                 gconstpointer b)
{
  const HasherEntry *ea = *(HasherEntry * const *) a;
  const HasherEntry *eb = *(HasherEntry * const *) b;

  /* Byte order, as `LC_ALL=C sort` and the test's sha256sum pipeline. */
  return strcmp (ea->name, eb->name);
}

static gboolean
walk_dir (const char    *path,
          gsize          root_len,
          GPtrArray     *entries,
          GCancellable  *cancellable,
          GError       **error)
{
  g_autoptr(GDir) dir = NULL;
  g_autoptr(GError) local_error = NULL;
  const char *name;

  if (g_cancellable_set_error_if_cancelled (cancellable, error))
    return FALSE;

  dir = g_dir_open (path, 0, &local_error);
  if (dir == NULL)
    {
      /* An unreadable directory below the top one is skipped, as `find`
       * would report and skip it. */
      if (root_len >= strlen (path))
        {
          g_propagate_error (error, g_steal_pointer (&local_error));
          return FALSE;
        }
      g_printerr ("%s\n", local_error->message);
      return TRUE;
    }

  while ((name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *child = g_build_filename (path, name, NULL);
      GStatBuf st;

      if (g_lstat (child, &st) != 0)
        continue;
      if (S_ISDIR (st.st_mode))
        {
          if (!walk_dir (child, root_len, entries, cancellable, error))
            return FALSE;
        }
      else if (S_ISREG (st.st_mode))
        {
          HasherEntry *entry = g_new0 (HasherEntry, 1);

          entry->path = g_steal_pointer (&child);
          entry->name = entry->path + root_len;
          g_ptr_array_add (entries, entry);
        }
    }
  return TRUE;
}

GPtrArray *
hasher_walk (const char    *dir,
             GCancellable  *cancellable,
             GError       **error)
{
  g_autoptr(GPtrArray) entries = g_ptr_array_new_with_free_func (hasher_entry_free);
  gsize root_len = strlen (dir);

  /* Names are relative to @dir: skip "DIR/" in every path. */
  if (root_len > 0 && dir[root_len - 1] != G_DIR_SEPARATOR)
    root_len++;
  if (!walk_dir (dir, root_len, entries, cancellable, error))
    return NULL;
  g_ptr_array_sort (entries, compare_entries);
  return g_steal_pointer (&entries);
}

gboolean
hasher_hash_file (HasherEntry   *entry,
                  GCancellable  *cancellable,
                  GError       **error)
{
  g_autoptr(GChecksum) checksum = g_checksum_new (G_CHECKSUM_SHA256);
  guint8 buffer[READ_CHUNK];
  gboolean ok = TRUE;
  int fd;

  entry->hex[0] = '\0';
  if (g_cancellable_set_error_if_cancelled (cancellable, error))
    return FALSE;

  fd = g_open (entry->path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0)
    {
      int saved_errno = errno;

      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (saved_errno),
                   "%s: %s", entry->path, g_strerror (saved_errno));
      return FALSE;
    }

  for (;;)
    {
      gssize n = read (fd, buffer, sizeof buffer);

      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        {
          int saved_errno = errno;

          g_set_error (error, G_IO_ERROR, g_io_error_from_errno (saved_errno),
                       "%s: %s", entry->path, g_strerror (saved_errno));
          ok = FALSE;
          break;
        }
      if (n == 0)
        break;
      g_checksum_update (checksum, buffer, n);
      /* A large file stops within a chunk of Cancel. */
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        {
          ok = FALSE;
          break;
        }
    }
  close (fd);

  if (ok)
    g_strlcpy (entry->hex, g_checksum_get_string (checksum), sizeof entry->hex);
  return ok;
}

/* --- the report and the window (main thread) ------------------------------ */

static double
seconds_since (gint64 start)
{
  return (g_get_monotonic_time () - start) / (double) G_USEC_PER_SEC;
}

/* The digest of the whole directory: SHA-256 over the lines
 * "DIGEST  NAME\n" (sha256sum's format) in byte order of the names;
 * unreadable files are left out. */
static char *
total_digest (GPtrArray *entries,
              guint     *n_unreadable)
{
  g_autoptr(GChecksum) checksum = g_checksum_new (G_CHECKSUM_SHA256);

  *n_unreadable = 0;
  for (guint i = 0; i < entries->len; i++)
    {
      const HasherEntry *entry = entries->pdata[i];

      if (entry->hex[0] == '\0')
        {
          (*n_unreadable)++;
          continue;
        }
      g_checksum_update (checksum, (const guchar *) entry->hex, -1);
      g_checksum_update (checksum, (const guchar *) "  ", 2);
      g_checksum_update (checksum, (const guchar *) entry->name, -1);
      g_checksum_update (checksum, (const guchar *) "\n", 1);
    }
  return g_strdup (g_checksum_get_string (checksum));
}

/* The list: the last files shown, newest first, one "DIGEST…  NAME"
 * line each (an unreadable file has no digest). */
static void
draw_list (Hasher *hasher)
{
  g_autoptr(GString) text = g_string_new (NULL);
  guint n_rows = MIN (hasher->n_shown, HASHER_SHOWN_ROWS);

  if (hasher->list == NULL || hasher->n_shown_drawn == hasher->n_shown)
    return;
  hasher->n_shown_drawn = hasher->n_shown;
  for (guint i = 1; i <= n_rows; i++)
    {
      const HasherEntry *entry = hasher->shown[(hasher->n_shown - i) % HASHER_SHOWN_ROWS];

      g_string_append_printf (text, "%s%.16s%s  %s", i > 1 ? "\n" : "",
                              entry->hex[0] != '\0' ? entry->hex : "(unreadable)",
                              entry->hex[0] != '\0' ? "…" : "", entry->name);
    }
  gtk_label_set_text (hasher->list, text->str);
}

static gboolean
on_progress_tick (gpointer user_data)
{
  Hasher *hasher = user_data;
  guint done = g_atomic_int_get (&hasher->n_done);
  guint n_files = g_atomic_int_get (&hasher->n_files);
  g_autofree char *text = NULL;

  draw_list (hasher);
  if (hasher->progress == NULL || hasher->cancel_time != 0)
    return G_SOURCE_CONTINUE;
  if (n_files == 0)
    {
      gtk_progress_bar_pulse (hasher->progress);
      gtk_progress_bar_set_text (hasher->progress, "Looking for files…");
      return G_SOURCE_CONTINUE;
    }
  text = g_strdup_printf ("%u / %u files", done, n_files);
  gtk_progress_bar_set_fraction (hasher->progress, (double) done / n_files);
  gtk_progress_bar_set_text (hasher->progress, text);
  return G_SOURCE_CONTINUE;
}

static void
quit (Hasher *hasher)
{
  if (hasher->window != NULL)
    gtk_window_destroy (hasher->window);
  else if (hasher->loop != NULL)
    g_main_loop_quit (hasher->loop);
}

static gboolean
on_gap_tick (gpointer user_data)
{
  Hasher *hasher = user_data;
  gint64 now = g_get_monotonic_time ();

  hasher->gap_max = MAX (hasher->gap_max, now - hasher->gap_last);
  hasher->gap_last = now;
  return G_SOURCE_CONTINUE;
}

void
hasher_finish (Hasher       *hasher,
               GPtrArray    *entries,
               const GError *error)
{
  g_autofree char *summary = NULL;
  g_autofree char *total = NULL;
  double elapsed = seconds_since (hasher->start_time);

  g_return_if_fail (hasher->running);

  hasher->running = FALSE;
  if (hasher->gap_id != 0)
    {
      on_gap_tick (hasher);
      g_clear_handle_id (&hasher->gap_id, g_source_remove);
      printf ("longest main-loop gap: %.1f ms\n", hasher->gap_max / 1000.0);
    }
  g_clear_handle_id (&hasher->progress_id, g_source_remove);
  g_clear_handle_id (&hasher->cancel_id, g_source_remove);
  draw_list (hasher);
  /* The list's last draw read the entries: they may go now. */
  memset (hasher->shown, 0, sizeof hasher->shown);

  if (error == NULL)
    {
      guint n_unreadable;

      total = total_digest (entries, &n_unreadable);
      summary = g_strdup_printf ("%u files, %u unreadable, %.3f s",
                                 entries->len, n_unreadable, elapsed);
    }
  else if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      summary = g_strdup_printf ("cancelled after %d of %u files, %.3f s "
                                 "(stopped %.0f ms after Cancel)",
                                 g_atomic_int_get (&hasher->n_done), hasher->n_files,
                                 elapsed,
                                 hasher->cancel_time != 0
                                 ? seconds_since (hasher->cancel_time) * 1000 : 0.0);
    }
  else
    {
      summary = g_strdup_printf ("failed: %s", error->message);
      hasher->failed = TRUE;
    }

  /* The last line is the same for both programs on the same files. */
  printf ("shown as they came: %u files\n", hasher->n_shown);
  printf ("%s (%s): %s\n", g_get_prgname (), hasher->backend->name, summary);
  if (total != NULL)
    printf ("total: %s\n", total);
  fflush (stdout);

  if (hasher->window != NULL)
    {
      g_autofree char *text = g_strdup_printf ("%s%s%s", summary,
                                               total != NULL ? "\ntotal: " : "",
                                               total != NULL ? total : "");

      gtk_label_set_text (hasher->result, text);
      gtk_widget_set_sensitive (GTK_WIDGET (hasher->cancel), FALSE);
      if (error == NULL)
        {
          gtk_progress_bar_set_fraction (hasher->progress, 1.0);
          gtk_progress_bar_set_text (hasher->progress, "Done");
        }
      else
        gtk_progress_bar_set_text (hasher->progress, "Cancelled");
    }

  if (hasher->quit_when_done)
    quit (hasher);
}

/* The Cancel button's handler (also what --cancel-after-ms presses). */
static void
on_cancel_clicked (GtkButton *button,
                   Hasher    *hasher)
{
  if (!hasher->running || hasher->cancel_time != 0)
    return;
  hasher->cancel_time = g_get_monotonic_time ();
  if (hasher->window != NULL)
    {
      gtk_widget_set_sensitive (GTK_WIDGET (hasher->cancel), FALSE);
      gtk_progress_bar_set_text (hasher->progress, "Cancelling…");
    }
  hasher->backend->cancel (hasher);
}

static gboolean
on_cancel_after (gpointer user_data)
{
  Hasher *hasher = user_data;

  hasher->cancel_id = 0;
  if (hasher->cancel != NULL)
    gtk_widget_activate (GTK_WIDGET (hasher->cancel));    /* emits "clicked" */
  else
    on_cancel_clicked (NULL, hasher);
  return G_SOURCE_REMOVE;
}

static gboolean
on_hard_timeout (gpointer user_data)
{
  g_printerr ("%s: the work did not stop after Cancel; exiting\n", g_get_prgname ());
  exit (1);
}

static gboolean
on_timeout (gpointer user_data)
{
  Hasher *hasher = user_data;

  hasher->timeout_id = 0;
  g_printerr ("%s: the work did not end in time; cancelling it\n", g_get_prgname ());
  hasher->failed = TRUE;
  hasher->quit_when_done = TRUE;
  if (hasher->running)
    {
      on_cancel_clicked (NULL, hasher);
      g_timeout_add_seconds (10, on_hard_timeout, hasher);
    }
  else
    quit (hasher);
  return G_SOURCE_REMOVE;
}

static void
start (Hasher   *hasher,
       int       cancel_after_ms,
       gboolean  measure_gap)
{
  hasher->running = TRUE;
  hasher->start_time = g_get_monotonic_time ();
  if (measure_gap)
    {
      hasher->gap_last = hasher->start_time;
      hasher->gap_id = g_timeout_add (1, on_gap_tick, hasher);
    }
  hasher->progress_id = g_timeout_add (PROGRESS_INTERVAL_MS, on_progress_tick, hasher);
  if (cancel_after_ms >= 0)
    hasher->cancel_id = g_timeout_add (cancel_after_ms, on_cancel_after, hasher);
  hasher->backend->start (hasher, hasher->dir);
}

static void
on_window_destroy (GtkWindow *window,
                   Hasher    *hasher)
{
  /* Closing the window cancels the work; main() waits for its end. */
  hasher->window = NULL;
  hasher->progress = NULL;
  hasher->result = NULL;
  hasher->list = NULL;
  hasher->cancel = NULL;
  on_cancel_clicked (NULL, hasher);
}

typedef struct
{
  Hasher   *hasher;
  int       cancel_after_ms;
  gboolean  measure_gap;
} Activation;

static void
on_activate (GtkApplication *application,
             Activation     *activation)
{
  Hasher *hasher = activation->hasher;
  g_autofree char *title = g_strdup_printf ("Hashing %s (%s)", hasher->dir,
                                            hasher->backend->name);
  GtkWidget *box;

  hasher->window = GTK_WINDOW (gtk_application_window_new (application));
  gtk_window_set_title (hasher->window, title);
  gtk_window_set_default_size (hasher->window, 640, 420);

  box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 12);
  gtk_widget_set_margin_top (box, 12);
  gtk_widget_set_margin_bottom (box, 12);
  gtk_widget_set_margin_start (box, 12);
  gtk_widget_set_margin_end (box, 12);

  hasher->progress = GTK_PROGRESS_BAR (gtk_progress_bar_new ());
  gtk_progress_bar_set_show_text (hasher->progress, TRUE);
  gtk_box_append (GTK_BOX (box), GTK_WIDGET (hasher->progress));

  hasher->result = GTK_LABEL (gtk_label_new (NULL));
  gtk_label_set_selectable (hasher->result, TRUE);
  gtk_label_set_wrap (hasher->result, TRUE);
  gtk_label_set_xalign (hasher->result, 0);
  gtk_box_append (GTK_BOX (box), GTK_WIDGET (hasher->result));

  hasher->list = GTK_LABEL (gtk_label_new (NULL));
  gtk_label_set_xalign (hasher->list, 0);
  gtk_label_set_yalign (hasher->list, 0);
  gtk_label_set_lines (hasher->list, HASHER_SHOWN_ROWS);
  gtk_label_set_ellipsize (hasher->list, PANGO_ELLIPSIZE_MIDDLE);
  gtk_widget_add_css_class (GTK_WIDGET (hasher->list), "monospace");
  gtk_widget_set_vexpand (GTK_WIDGET (hasher->list), TRUE);
  gtk_box_append (GTK_BOX (box), GTK_WIDGET (hasher->list));

  hasher->cancel = GTK_BUTTON (gtk_button_new_with_mnemonic ("_Cancel"));
  gtk_widget_set_halign (GTK_WIDGET (hasher->cancel), GTK_ALIGN_END);
  g_signal_connect (hasher->cancel, "clicked", G_CALLBACK (on_cancel_clicked), hasher);
  gtk_box_append (GTK_BOX (box), GTK_WIDGET (hasher->cancel));

  gtk_window_set_child (hasher->window, box);
  g_signal_connect (hasher->window, "destroy", G_CALLBACK (on_window_destroy), hasher);
  gtk_window_present (hasher->window);

  start (hasher, activation->cancel_after_ms, activation->measure_gap);
}

int
hasher_main (int                   argc,
             char                **argv,
             const HasherBackend  *backend)
{
  gboolean opt_headless = FALSE;
  gboolean opt_quit = FALSE;
  gboolean opt_measure_gap = FALSE;
  int opt_cancel_after_ms = -1;
  int opt_timeout = 60;
  g_auto(GStrv) opt_dirs = NULL;
  const GOptionEntry entries[] = {
    { "headless", 0, 0, G_OPTION_ARG_NONE, &opt_headless,
      "No window: the same work on a plain main loop, then quit (for timing)", NULL },
    { "quit", 'q', 0, G_OPTION_ARG_NONE, &opt_quit,
      "Close the window when the work ends", NULL },
    { "cancel-after-ms", 0, 0, G_OPTION_ARG_INT, &opt_cancel_after_ms,
      "Press Cancel this many milliseconds after the start", "MS" },
    { "measure-gap", 0, 0, G_OPTION_ARG_NONE, &opt_measure_gap,
      "Print the longest gap between the callbacks of a 1 ms main-loop timer", NULL },
    { "timeout", 't', 0, G_OPTION_ARG_INT, &opt_timeout,
      "Give up after this many seconds (default: 60)", "SECONDS" },
    { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &opt_dirs, NULL, "DIR" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr(GOptionContext) option_context = NULL;
  g_autoptr(GError) error = NULL;
  Hasher hasher = { 0, };
  int status = 0;

  setlocale (LC_ALL, "");
  option_context = g_option_context_new ("DIR - hash every file under DIR");
  g_option_context_add_main_entries (option_context, entries, NULL);
  if (!g_option_context_parse (option_context, &argc, &argv, &error))
    {
      g_printerr ("%s: %s\n", g_get_prgname (), error->message);
      return 2;
    }
  if (opt_dirs == NULL || g_strv_length (opt_dirs) != 1 || opt_timeout < 1)
    {
      g_printerr ("usage: %s [--headless] [--quit] [--cancel-after-ms=MS] "
                  "[--timeout=SECONDS] DIR\n", g_get_prgname ());
      return 2;
    }

  hasher.backend = backend;
  hasher.dir = opt_dirs[0];
  hasher.quit_when_done = opt_headless || opt_quit;
  hasher.timeout_id = g_timeout_add_seconds (opt_timeout, on_timeout, &hasher);

  if (opt_headless)
    {
      hasher.loop = g_main_loop_new (NULL, FALSE);
      start (&hasher, opt_cancel_after_ms, opt_measure_gap);
      g_main_loop_run (hasher.loop);
      g_clear_pointer (&hasher.loop, g_main_loop_unref);
    }
  else
    {
      g_autoptr(GtkApplication) application = NULL;
      Activation activation = { &hasher, opt_cancel_after_ms, opt_measure_gap };

      application = gtk_application_new (NULL, G_APPLICATION_NON_UNIQUE);
      g_signal_connect (application, "activate", G_CALLBACK (on_activate), &activation);
      status = g_application_run (G_APPLICATION (application), 1, argv);
    }

  /* The window was closed while the work ran: it was cancelled; let it
   * end, so that nothing is left behind. */
  while (hasher.running)
    g_main_context_iteration (NULL, TRUE);
  g_clear_handle_id (&hasher.timeout_id, g_source_remove);

  if (backend->cleanup != NULL && !backend->cleanup (&hasher))
    hasher.failed = TRUE;

  return status != 0 ? status : hasher.failed ? 1 : 0;
}
