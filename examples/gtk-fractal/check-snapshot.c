/* check-snapshot.c: checks that a PNG written by gtk-fractal shows a fractal
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   check-snapshot FILE.png WIDTH HEIGHT MIN-COLOURS MAX-SHARE-PERCENT HOLE-RRGGBB
 *
 * Fails (exit status 1) unless the image is WIDTH × HEIGHT, has at least
 * MIN-COLOURS distinct colours, no colour covers more than
 * MAX-SHARE-PERCENT of it, and no pixel has the colour HOLE-RRGGBB (what
 * the view draws where a tile has not landed).
 */

#include <stdio.h>
#include <stdlib.h>

#include <gtk/gtk.h>

int
main (int   argc,
      char *argv[])
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GdkTexture) texture = NULL;
  g_autoptr(GHashTable) colours = NULL;
  g_autofree guint32 *pixels = NULL;
  int width, height, want_width, want_height, min_colours;
  double max_share;
  guint32 hole, top_colour = 0;
  guint top_count = 0, holes = 0;
  gsize n_pixels;
  gboolean ok = TRUE;

  if (argc != 7)
    {
      g_printerr ("usage: %s FILE.png WIDTH HEIGHT MIN-COLOURS MAX-SHARE-PERCENT HOLE-RRGGBB\n",
                  argv[0]);
      return 2;
    }
  want_width = atoi (argv[2]);
  want_height = atoi (argv[3]);
  min_colours = atoi (argv[4]);
  max_share = g_ascii_strtod (argv[5], NULL);
  hole = (guint32) strtoul (argv[6], NULL, 16);

  texture = gdk_texture_new_from_filename (argv[1], &error);
  if (texture == NULL)
    {
      g_printerr ("check-snapshot: %s\n", error->message);
      return 1;
    }

  width = gdk_texture_get_width (texture);
  height = gdk_texture_get_height (texture);
  n_pixels = (gsize) width * height;
  /* CAIRO_FORMAT_ARGB32: one native-endian 0xAARRGGBB word per pixel. */
  pixels = g_new (guint32, n_pixels);
  gdk_texture_download (texture, (guchar *) pixels, width * 4);

  colours = g_hash_table_new (NULL, NULL);
  for (gsize i = 0; i < n_pixels; i++)
    {
      guint32 rgb = pixels[i] & 0xffffff;
      guint count = GPOINTER_TO_UINT (g_hash_table_lookup (colours, GUINT_TO_POINTER (rgb))) + 1;

      g_hash_table_insert (colours, GUINT_TO_POINTER (rgb), GUINT_TO_POINTER (count));
      if (count > top_count)
        {
          top_count = count;
          top_colour = rgb;
        }
      holes += rgb == hole;
    }

  printf ("%s: %d×%d, %u distinct colours; the most common, #%06x, covers %.1f%%; "
          "%u pixels of the placeholder #%06x\n",
          argv[1], width, height, g_hash_table_size (colours), top_colour,
          100.0 * top_count / n_pixels, holes, hole);

  if (width != want_width || height != want_height)
    {
      g_printerr ("check-snapshot: expected %d×%d\n", want_width, want_height);
      ok = FALSE;
    }
  if (g_hash_table_size (colours) < (guint) min_colours)
    {
      g_printerr ("check-snapshot: expected at least %d colours\n", min_colours);
      ok = FALSE;
    }
  if (100.0 * top_count / n_pixels > max_share)
    {
      g_printerr ("check-snapshot: one colour covers more than %.0f%%\n", max_share);
      ok = FALSE;
    }
  if (holes > 0)
    {
      g_printerr ("check-snapshot: tiles are missing\n");
      ok = FALSE;
    }

  return ok ? 0 : 1;
}
