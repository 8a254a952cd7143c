/* gtk-fractal.c: a Mandelbrot viewer that renders its tiles on the pool
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * What a GTK 4 application does with wsrt, in one file:
 *
 *  - the view is cut into 64×64 tiles and every tile is a task on the
 *    runtime's workers (ws_runtime_spawn(), which returns a WsTask);
 *  - a tile task computes a few rows per poll and then gives way with
 *    ws_context_yield(), so all tiles progress together and a tile that is
 *    no longer wanted stops at its next scheduling point;
 *  - each tile comes back to the main loop through ws_task_wait_async(),
 *    in the main thread, where it becomes a GdkTexture and is drawn at
 *    once; a progress bar counts the tiles;
 *  - zooming (scroll wheel) or panning (drag) starts a new view and cancels
 *    the tiles of the old one with ws_task_cancel(): they stop computing
 *    (the status line counts the rows that were never computed) and their
 *    waits call back with G_IO_ERROR_CANCELLED;
 *  - a status line shows, live, the polls and steals of every worker
 *    (ws_runtime_get_metrics()).
 *
 *   gtk-fractal [--workers=N]
 *   gtk-fractal --snapshot=FILE.png [--zooms=N] [--timeout=SECONDS]
 *
 * With --snapshot the program zooms N times (each zoom as soon as the
 * first tile of the current view has landed, so the rest of that view is
 * cancelled), waits for the last view to be complete, renders the view
 * widget to a texture with the window's GskRenderer and saves it as a PNG,
 * then quits. It exits with status 1 if the view did not complete in time
 * or a tile went wrong. The example's test checks the PNG.
 */

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <gtk/gtk.h>
#include <wsrt.h>

#define TILE_SIZE        64
#define ROWS_PER_POLL    8       /* rows a tile computes before it yields */
#define VIEW_WIDTH       640
#define VIEW_HEIGHT      480
#define BASE_ITERATIONS  256
#define MAX_ITERATIONS   4096
#define METRICS_INTERVAL_MS 250

/* Drawn where no tile has landed yet. The palette never produces it (its
 * channels are 0 or at least 0x20), so a snapshot can be checked for
 * holes. */
#define PLACEHOLDER_RGB  0x1a1a1a

/* Rows of tiles computed and rows that cancelled tiles never computed,
 * over the whole run. Written by the tile tasks (on workers) and read by
 * the main loop: atomics. */
static gint rows_computed;
static gint rows_skipped;

/* Tile waits that have not called back yet; main thread only. main()
 * iterates the main context until this is 0, so that no wait (nor the
 * tile it holds) is left behind when the application ends. */
static guint outstanding_waits;

/* The view: where in the complex plane, and how much of it. */
typedef struct
{
  double center_x;
  double center_y;
  double scale;      /* complex units per pixel */
  int    width;      /* pixels */
  int    height;
} View;

static double
view_x0 (const View *view)
{
  return view->center_x - view->width / 2.0 * view->scale;
}

static double
view_y0 (const View *view)
{
  return view->center_y + view->height / 2.0 * view->scale;
}

static guint
view_max_iterations (const View *view,
                     double      initial_scale)
{
  double zoom = initial_scale / view->scale;
  double iterations = BASE_ITERATIONS + 64 * MAX (0.0, log2 (zoom));

  return (guint) MIN (iterations, MAX_ITERATIONS);
}

/* The worker side: one tile task */

typedef struct
{
  double  x0;          /* the complex coordinates of the tile's pixel (0, 0) */
  double  y0;
  double  step;
  guint   width;
  guint   height;
  guint   max_iterations;
  guint   row;         /* the next row to compute */
  guint8 *pixels;      /* RGBA, width × height; NULL once handed over */
} TileJob;

static void
palette (double  t,
         guint8 *rgba)
{
  /* A cosine palette (blue to gold), each channel in 0x20..0xff. */
  static const double phase[3] = { 0.55, 0.35, 0.05 };

  for (guint c = 0; c < 3; c++)
    rgba[c] = (guint8) (0x20 + 0xdf * (0.5 + 0.5 * cos (2 * G_PI * (t + phase[c]))));
  rgba[3] = 0xff;
}

static void
mandelbrot_pixel (double  cx,
                  double  cy,
                  guint   max_iterations,
                  guint8 *rgba)
{
  double zx = 0, zy = 0, zx2 = 0, zy2 = 0;
  double q = (cx - 0.25) * (cx - 0.25) + cy * cy;
  guint i;

  /* Inside the main cardioid or the period-2 bulb: no need to iterate. */
  if (q * (q + (cx - 0.25)) <= 0.25 * cy * cy ||
      (cx + 1) * (cx + 1) + cy * cy <= 1.0 / 16)
    i = max_iterations;
  else
    for (i = 0; i < max_iterations && zx2 + zy2 <= 256.0; i++)
      {
        zy = 2 * zx * zy + cy;
        zx = zx2 - zy2 + cx;
        zx2 = zx * zx;
        zy2 = zy * zy;
      }

  if (i >= max_iterations)
    {
      rgba[0] = rgba[1] = rgba[2] = 0;
      rgba[3] = 0xff;
      return;
    }

  /* Smooth colouring: a fractional escape count. */
  palette ((i + 1 - log2 (log (sqrt (zx2 + zy2)))) / 48.0, rgba);
}

static void
tile_job_free (gpointer data)
{
  TileJob *job = data;

  /* A tile that never finished was cancelled: count what it saved. */
  if (job->pixels != NULL)
    g_atomic_int_add (&rows_skipped, job->height - job->row);
  g_free (job->pixels);
  g_free (job);
}

/* Runs on a worker. */
static WsPoll
tile_poll (WsContext *cx,
           gpointer   user_data)
{
  TileJob *job = user_data;
  guint end = MIN (job->row + ROWS_PER_POLL, job->height);
  guint first = job->row;
  GBytes *bytes;

  for (; job->row < end; job->row++)
    {
      double cy = job->y0 - job->row * job->step;
      guint8 *p = job->pixels + (gsize) job->row * job->width * 4;

      for (guint x = 0; x < job->width; x++, p += 4)
        mandelbrot_pixel (job->x0 + x * job->step, cy, job->max_iterations, p);
    }
  g_atomic_int_add (&rows_computed, job->row - first);

  /* Give way to the other tiles; a cancelled tile ends here. */
  if (job->row < job->height)
    return ws_context_yield (cx);

  bytes = g_bytes_new_take (g_steal_pointer (&job->pixels),
                            (gsize) job->width * job->height * 4);
  ws_context_return_pointer (cx, bytes, (GDestroyNotify) g_bytes_unref);
  return WS_POLL_READY;
}

/* The main-loop side: the view widget */

#define FRACTAL_TYPE_VIEW (fractal_view_get_type ())
G_DECLARE_FINAL_TYPE (FractalView, fractal_view, FRACTAL, VIEW, GtkWidget)

/* One tile of a view, on the main thread. Shared (GRcBox) by the view's
 * tile array and the wait for its task. */
typedef struct
{
  FractalView *view;     /* a reference, held while the wait is on */
  guint        generation;
  int          x;        /* where, in the view's pixels */
  int          y;
  int          width;
  int          height;
  WsTask      *task;     /* until the wait calls back */
  GdkTexture  *texture;  /* once it has landed */
} Tile;

struct _FractalView
{
  GtkWidget  parent_instance;

  WsRuntime *runtime;
  View       view;
  double     initial_scale;
  guint      generation;
  gint64     start_time;

  GPtrArray *tiles;         /* Tile, of the current view */
  guint      n_landed;      /* tiles of the current view that have landed */

  /* The tiles that had landed when the previous view was left, drawn
   * (moved and scaled to where they are now) until they are covered. */
  GPtrArray *old_tiles;
  View       old_view;

  double     drag_x;        /* the pan in progress, in pixels */
  double     drag_y;

  /* Over the whole run. */
  guint      n_cancelled;   /* stale tiles whose tasks were cancelled */
  guint      n_late;        /* stale tiles that had finished anyway */
  guint      n_failed;      /* tiles that ended with an error: a bug */
};

G_DEFINE_FINAL_TYPE (FractalView, fractal_view, GTK_TYPE_WIDGET)

enum
{
  SIGNAL_TILE_LANDED,
  SIGNAL_VIEW_COMPLETE,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

static void
tile_clear (gpointer data)
{
  Tile *tile = data;

  g_clear_object (&tile->task);
  g_clear_object (&tile->texture);
  g_clear_object (&tile->view);
}

static void
tile_release (gpointer data)
{
  g_rc_box_release_full (data, tile_clear);
}

/* Runs on the main loop, once per tile, also for cancelled tiles. */
static void
tile_landed_cb (GObject      *source,
                GAsyncResult *result,
                gpointer      user_data)
{
  Tile *tile = user_data;
  g_autoptr(FractalView) self = g_steal_pointer (&tile->view);
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) bytes = NULL;
  gboolean current = tile->generation == self->generation;   /* not stale */

  outstanding_waits--;
  if (ws_task_wait_finish (WS_TASK (source), result, &error))
    bytes = ws_task_propagate_pointer (WS_TASK (source), &error);
  g_clear_object (&tile->task);

  if (bytes != NULL && current)
    {
      tile->texture = gdk_memory_texture_new (tile->width, tile->height,
                                              GDK_MEMORY_R8G8B8A8, bytes,
                                              tile->width * 4);
      self->n_landed++;
      gtk_widget_queue_draw (GTK_WIDGET (self));
      g_signal_emit (self, signals[SIGNAL_TILE_LANDED], 0);
      if (self->n_landed == self->tiles->len)
        g_signal_emit (self, signals[SIGNAL_VIEW_COMPLETE], 0);
    }
  else if (bytes != NULL)
    self->n_late++;           /* finished before the cancel reached it */
  else if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED) && !current)
    self->n_cancelled++;
  else
    {
      g_warning ("tile at %d,%d: %s", tile->x, tile->y,
                 error != NULL ? error->message : "no result");
      self->n_failed++;
    }

  g_rc_box_release_full (tile, tile_clear);
}

static int
compare_distance_to_center (gconstpointer a,
                            gconstpointer b,
                            gpointer      user_data)
{
  const Tile *ta = *(Tile **) a, *tb = *(Tile **) b;
  const View *view = user_data;
  double dax = ta->x + ta->width / 2.0 - view->width / 2.0;
  double day = ta->y + ta->height / 2.0 - view->height / 2.0;
  double dbx = tb->x + tb->width / 2.0 - view->width / 2.0;
  double dby = tb->y + tb->height / 2.0 - view->height / 2.0;
  double da = dax * dax + day * day, db = dbx * dbx + dby * dby;

  return (da > db) - (da < db);
}

/* Leaves the current view: cancels its tiles that are still being
 * computed, keeps those that have landed for drawing under the new ones. */
static void
fractal_view_leave (FractalView *self)
{
  if (self->tiles == NULL)
    return;

  for (guint i = 0; i < self->tiles->len; i++)
    {
      Tile *tile = g_ptr_array_index (self->tiles, i);

      if (tile->task != NULL)
        {
          tile->generation = 0;   /* stale: no view has generation 0 */
          ws_task_cancel (tile->task);
        }
    }

  /* Keep the older picture if this view had nothing to show yet. */
  if (self->n_landed > 0)
    {
      g_clear_pointer (&self->old_tiles, g_ptr_array_unref);
      self->old_tiles = g_steal_pointer (&self->tiles);
      self->old_view = self->view;
    }
  g_clear_pointer (&self->tiles, g_ptr_array_unref);
  self->n_landed = 0;
}

/* Starts rendering the view in self->view: one task per tile. */
static void
fractal_view_render (FractalView *self)
{
  View *view = &self->view;
  guint max_iterations;

  fractal_view_leave (self);
  if (view->width <= 0 || view->height <= 0)
    return;

  self->generation++;
  self->start_time = g_get_monotonic_time ();
  self->tiles = g_ptr_array_new_with_free_func (tile_release);
  max_iterations = view_max_iterations (view, self->initial_scale);

  for (int y = 0; y < view->height; y += TILE_SIZE)
    for (int x = 0; x < view->width; x += TILE_SIZE)
      {
        Tile *tile = g_rc_box_new0 (Tile);

        tile->generation = self->generation;
        tile->x = x;
        tile->y = y;
        tile->width = MIN (TILE_SIZE, view->width - x);
        tile->height = MIN (TILE_SIZE, view->height - y);
        g_ptr_array_add (self->tiles, tile);
      }

  /* The middle of the view first. */
  g_ptr_array_sort_with_data (self->tiles, compare_distance_to_center, view);

  for (guint i = 0; i < self->tiles->len; i++)
    {
      Tile *tile = g_ptr_array_index (self->tiles, i);
      TileJob *job = g_new0 (TileJob, 1);

      job->step = view->scale;
      job->x0 = view_x0 (view) + tile->x * view->scale;
      job->y0 = view_y0 (view) - tile->y * view->scale;
      job->width = tile->width;
      job->height = tile->height;
      job->max_iterations = max_iterations;
      job->pixels = g_malloc ((gsize) tile->width * tile->height * 4);

      tile->task = ws_runtime_spawn (self->runtime, tile_poll, job, tile_job_free);
      tile->view = g_object_ref (self);
      outstanding_waits++;
      ws_task_wait_async (tile->task, NULL, tile_landed_cb, g_rc_box_acquire (tile));
    }

  gtk_widget_queue_draw (GTK_WIDGET (self));
}

/* Zooms by @factor (> 1: in) keeping the point under (@px, @py) in place. */
static void
fractal_view_zoom (FractalView *self,
                   double       factor,
                   double       px,
                   double       py)
{
  View *view = &self->view;
  double cx = view_x0 (view) + px * view->scale;
  double cy = view_y0 (view) - py * view->scale;

  view->scale /= factor;
  view->center_x = cx + (view->center_x - cx) / factor;
  view->center_y = cy + (view->center_y - cy) / factor;
  fractal_view_render (self);
}

static void
fractal_view_pan (FractalView *self,
                  double       dx,
                  double       dy)
{
  self->view.center_x -= dx * self->view.scale;
  self->view.center_y += dy * self->view.scale;
  fractal_view_render (self);
}

static void
append_tiles (GtkSnapshot *snapshot,
              GPtrArray   *tiles,
              const View  *from,
              const View  *to)
{
  /* Where pixel (0, 0) of @from is in @to, and how big a pixel is. */
  double ratio = from->scale / to->scale;
  double ox = (view_x0 (from) - view_x0 (to)) / to->scale;
  double oy = (view_y0 (to) - view_y0 (from)) / to->scale;

  for (guint i = 0; i < tiles->len; i++)
    {
      Tile *tile = g_ptr_array_index (tiles, i);

      if (tile->texture != NULL)
        gtk_snapshot_append_texture (snapshot, tile->texture,
                                     &GRAPHENE_RECT_INIT (ox + tile->x * ratio,
                                                          oy + tile->y * ratio,
                                                          tile->width * ratio,
                                                          tile->height * ratio));
    }
}

static void
fractal_view_snapshot (GtkWidget   *widget,
                       GtkSnapshot *snapshot)
{
  FractalView *self = FRACTAL_VIEW (widget);
  int width = gtk_widget_get_width (widget);
  int height = gtk_widget_get_height (widget);
  GdkRGBA placeholder = {
    ((PLACEHOLDER_RGB >> 16) & 0xff) / 255.f,
    ((PLACEHOLDER_RGB >> 8) & 0xff) / 255.f,
    (PLACEHOLDER_RGB & 0xff) / 255.f,
    1.f,
  };

  gtk_snapshot_push_clip (snapshot, &GRAPHENE_RECT_INIT (0, 0, width, height));
  gtk_snapshot_append_color (snapshot, &placeholder,
                             &GRAPHENE_RECT_INIT (0, 0, width, height));
  gtk_snapshot_translate (snapshot, &GRAPHENE_POINT_INIT (self->drag_x, self->drag_y));
  if (self->old_tiles != NULL)
    append_tiles (snapshot, self->old_tiles, &self->old_view, &self->view);
  if (self->tiles != NULL)
    append_tiles (snapshot, self->tiles, &self->view, &self->view);
  gtk_snapshot_pop (snapshot);
}

static void
fractal_view_measure (GtkWidget      *widget,
                      GtkOrientation  orientation,
                      int             for_size,
                      int            *minimum,
                      int            *natural,
                      int            *minimum_baseline,
                      int            *natural_baseline)
{
  *minimum = TILE_SIZE;
  *natural = orientation == GTK_ORIENTATION_HORIZONTAL ? VIEW_WIDTH : VIEW_HEIGHT;
}

static void
fractal_view_size_allocate (GtkWidget *widget,
                            int        width,
                            int        height,
                            int        baseline)
{
  FractalView *self = FRACTAL_VIEW (widget);

  if (width == self->view.width && height == self->view.height)
    return;

  /* Show the same part of the plane at the new size. */
  if (self->view.width > 0)
    self->view.scale *= MAX ((double) self->view.width / width,
                             (double) self->view.height / height);
  else
    self->initial_scale = self->view.scale = 3.2 / MIN (width, height * 4.0 / 3);
  self->view.width = width;
  self->view.height = height;
  fractal_view_render (self);
}

static void
fractal_view_unroot (GtkWidget *widget)
{
  /* Off screen: stop computing. */
  fractal_view_leave (FRACTAL_VIEW (widget));
  GTK_WIDGET_CLASS (fractal_view_parent_class)->unroot (widget);
}

static gboolean
on_scroll (GtkEventControllerScroll *controller,
           double                    dx,
           double                    dy,
           FractalView              *self)
{
  GdkEvent *event = gtk_event_controller_get_current_event (GTK_EVENT_CONTROLLER (controller));
  double x = self->view.width / 2.0, y = self->view.height / 2.0;

  if (event != NULL)
    gdk_event_get_position (event, &x, &y);
  fractal_view_zoom (self, pow (1.25, -dy), x, y);
  return TRUE;
}

static void
on_drag_update (GtkGestureDrag *gesture,
                double          dx,
                double          dy,
                FractalView    *self)
{
  /* Move what is drawn; render when the drag ends. */
  self->drag_x = dx;
  self->drag_y = dy;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

static void
on_drag_end (GtkGestureDrag *gesture,
             double          dx,
             double          dy,
             FractalView    *self)
{
  self->drag_x = self->drag_y = 0;
  if (dx != 0 || dy != 0)
    fractal_view_pan (self, dx, dy);
}

static void
fractal_view_dispose (GObject *object)
{
  FractalView *self = FRACTAL_VIEW (object);

  fractal_view_leave (self);
  g_clear_pointer (&self->old_tiles, g_ptr_array_unref);
  g_clear_object (&self->runtime);

  G_OBJECT_CLASS (fractal_view_parent_class)->dispose (object);
}

static void
fractal_view_class_init (FractalViewClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = fractal_view_dispose;
  widget_class->snapshot = fractal_view_snapshot;
  widget_class->measure = fractal_view_measure;
  widget_class->size_allocate = fractal_view_size_allocate;
  widget_class->unroot = fractal_view_unroot;

  signals[SIGNAL_TILE_LANDED] =
    g_signal_new ("tile-landed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL, G_TYPE_NONE, 0);
  signals[SIGNAL_VIEW_COMPLETE] =
    g_signal_new ("view-complete", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                  0, NULL, NULL, NULL, G_TYPE_NONE, 0);
}

static void
fractal_view_init (FractalView *self)
{
  GtkEventController *scroll;
  GtkGesture *drag;

  self->view.center_x = -0.6;
  self->view.center_y = 0.0;

  scroll = gtk_event_controller_scroll_new (GTK_EVENT_CONTROLLER_SCROLL_VERTICAL);
  g_signal_connect (scroll, "scroll", G_CALLBACK (on_scroll), self);
  gtk_widget_add_controller (GTK_WIDGET (self), scroll);

  drag = gtk_gesture_drag_new ();
  g_signal_connect (drag, "drag-update", G_CALLBACK (on_drag_update), self);
  g_signal_connect (drag, "drag-end", G_CALLBACK (on_drag_end), self);
  gtk_widget_add_controller (GTK_WIDGET (self), GTK_EVENT_CONTROLLER (drag));
}

static FractalView *
fractal_view_new (WsRuntime *runtime)
{
  FractalView *self = g_object_new (FRACTAL_TYPE_VIEW, NULL);

  self->runtime = g_object_ref (runtime);
  return self;
}

/* The application */

typedef struct
{
  WsRuntime      *runtime;
  GtkWindow      *window;
  FractalView    *view;
  GtkProgressBar *progress;
  GtkLabel       *status;
  GtkLabel       *workers;
  guint           metrics_id;

  /* --snapshot */
  const char     *snapshot_path;
  int             zooms_left;
  guint           timeout_id;
  gboolean        failed;
} App;

/* "worker 0: 1234 polls, 56 steals · worker 1: ..." */
static char *
format_workers (WsRuntime *runtime)
{
  g_autoptr(WsMetrics) metrics = ws_runtime_get_metrics (runtime);
  GString *line = g_string_new (NULL);

  for (guint i = 0; i < ws_metrics_get_n_workers (metrics); i++)
    g_string_append_printf (line, "%sworker %u: %" G_GUINT64_FORMAT " polls, %"
                            G_GUINT64_FORMAT " steals",
                            i > 0 ? " · " : "", i,
                            ws_metrics_get_worker_poll_count (metrics, i),
                            ws_metrics_get_worker_steal_count (metrics, i));
  return g_string_free (line, FALSE);
}

static char *
format_status (FractalView *view)
{
  return g_strdup_printf ("view %u: %u / %u tiles · stale tiles cancelled: %u "
                          "(finished before the cancel: %u) · rows computed: %d, "
                          "skipped: %d",
                          view->generation, view->n_landed,
                          view->tiles != NULL ? view->tiles->len : 0,
                          view->n_cancelled, view->n_late,
                          g_atomic_int_get (&rows_computed),
                          g_atomic_int_get (&rows_skipped));
}

static void
update_labels (App *app)
{
  g_autofree char *status = format_status (app->view);
  g_autofree char *workers = format_workers (app->runtime);

  gtk_label_set_text (app->status, status);
  gtk_label_set_text (app->workers, workers);
}

static gboolean
on_metrics_tick (gpointer user_data)
{
  update_labels (user_data);
  return G_SOURCE_CONTINUE;
}

static void
on_tile_landed (FractalView *view,
                App         *app)
{
  guint total = view->tiles->len;
  g_autofree char *text = g_strdup_printf ("%u / %u tiles", view->n_landed, total);

  gtk_progress_bar_set_fraction (app->progress, (double) view->n_landed / total);
  gtk_progress_bar_set_text (app->progress, text);

  /* --snapshot: leave this view as soon as it has begun to land. */
  if (app->snapshot_path != NULL && app->zooms_left > 0 && view->n_landed == 1)
    {
      app->zooms_left--;
      /* Into the valley between the cardioid and the period-2 bulb. */
      fractal_view_zoom (view, 4.0,
                         (-0.7453 - view_x0 (&view->view)) / view->view.scale,
                         (view_y0 (&view->view) - 0.1127) / view->view.scale);
    }
}

static gboolean
save_snapshot (GtkWidget   *widget,
               const char  *path,
               GError     **error)
{
  int width = gtk_widget_get_width (widget);
  int height = gtk_widget_get_height (widget);
  GtkSnapshot *snapshot = gtk_snapshot_new ();
  g_autoptr(GskRenderNode) node = NULL;
  g_autoptr(GdkTexture) texture = NULL;
  GskRenderer *renderer;

  /* What the widget draws on screen, rendered off screen by the window's
   * renderer. */
  GTK_WIDGET_GET_CLASS (widget)->snapshot (widget, snapshot);
  node = gtk_snapshot_free_to_node (snapshot);
  if (node == NULL)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_FAILED, "the view drew nothing");
      return FALSE;
    }

  renderer = gtk_native_get_renderer (gtk_widget_get_native (widget));
  texture = gsk_renderer_render_texture (renderer, node,
                                         &GRAPHENE_RECT_INIT (0, 0, width, height));
  if (!gdk_texture_save_to_png (texture, path))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "cannot write %s", path);
      return FALSE;
    }

  printf ("snapshot: %s, %d×%d, rendered by %s\n", path, width, height,
          G_OBJECT_TYPE_NAME (renderer));
  return TRUE;
}

static void
on_view_complete (FractalView *view,
                  App         *app)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *status = NULL;
  g_autofree char *workers = NULL;

  printf ("view %u complete: %u tiles in %.3f s\n", view->generation,
          view->tiles->len,
          (g_get_monotonic_time () - view->start_time) / (double) G_USEC_PER_SEC);
  if (app->snapshot_path == NULL || app->zooms_left > 0)
    return;

  if (!save_snapshot (GTK_WIDGET (view), app->snapshot_path, &error))
    {
      g_printerr ("gtk-fractal: %s\n", error->message);
      app->failed = TRUE;
    }
  status = format_status (view);
  workers = format_workers (app->runtime);
  printf ("%s\n%s\n", status, workers);
  if (view->n_failed > 0)
    app->failed = TRUE;
  gtk_window_destroy (app->window);
}

static gboolean
on_timeout (gpointer user_data)
{
  App *app = user_data;

  g_printerr ("gtk-fractal: the view did not complete in time\n");
  app->failed = TRUE;
  app->timeout_id = 0;
  gtk_window_destroy (app->window);
  return G_SOURCE_REMOVE;
}

static void
on_window_destroy (GtkWindow *window,
                   App       *app)
{
  g_clear_handle_id (&app->metrics_id, g_source_remove);
}

static void
on_activate (GtkApplication *application,
             App            *app)
{
  GtkWidget *box;

  app->window = GTK_WINDOW (gtk_application_window_new (application));
  gtk_window_set_title (app->window, "wsrt fractal");

  box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 6);
  app->view = fractal_view_new (app->runtime);
  gtk_widget_set_vexpand (GTK_WIDGET (app->view), TRUE);
  gtk_box_append (GTK_BOX (box), GTK_WIDGET (app->view));

  app->progress = GTK_PROGRESS_BAR (gtk_progress_bar_new ());
  gtk_progress_bar_set_show_text (app->progress, TRUE);
  gtk_box_append (GTK_BOX (box), GTK_WIDGET (app->progress));

  app->status = GTK_LABEL (gtk_label_new (NULL));
  app->workers = GTK_LABEL (gtk_label_new (NULL));
  gtk_label_set_xalign (app->status, 0);
  gtk_label_set_xalign (app->workers, 0);
  gtk_label_set_ellipsize (app->status, PANGO_ELLIPSIZE_END);
  gtk_label_set_ellipsize (app->workers, PANGO_ELLIPSIZE_END);
  /* Their text is long: let the view decide the window's width. */
  gtk_label_set_max_width_chars (app->status, 1);
  gtk_label_set_max_width_chars (app->workers, 1);
  gtk_box_append (GTK_BOX (box), GTK_WIDGET (app->status));
  gtk_box_append (GTK_BOX (box), GTK_WIDGET (app->workers));
  gtk_window_set_child (app->window, box);

  g_signal_connect (app->view, "tile-landed", G_CALLBACK (on_tile_landed), app);
  g_signal_connect (app->view, "view-complete", G_CALLBACK (on_view_complete), app);
  app->metrics_id = g_timeout_add (METRICS_INTERVAL_MS, on_metrics_tick, app);
  g_signal_connect (app->window, "destroy", G_CALLBACK (on_window_destroy), app);

  if (app->snapshot_path != NULL)
    {
      /* A fixed size, so that snapshots compare. */
      gtk_widget_set_size_request (GTK_WIDGET (app->view), VIEW_WIDTH, VIEW_HEIGHT);
      gtk_window_set_resizable (app->window, FALSE);
    }

  gtk_window_present (app->window);
}

int
main (int   argc,
      char *argv[])
{
  int opt_workers = 0;
  int opt_zooms = 3;
  int opt_timeout = 60;
  g_autofree char *opt_snapshot = NULL;
  const GOptionEntry entries[] = {
    { "workers", 'w', 0, G_OPTION_ARG_INT, &opt_workers,
      "Worker threads (default: 0, one per CPU)", "N" },
    { "snapshot", 's', 0, G_OPTION_ARG_FILENAME, &opt_snapshot,
      "Render, save the view as a PNG and quit", "FILE" },
    { "zooms", 'z', 0, G_OPTION_ARG_INT, &opt_zooms,
      "With --snapshot: zoom this many times first (default: 3)", "N" },
    { "timeout", 't', 0, G_OPTION_ARG_INT, &opt_timeout,
      "With --snapshot: give up after this many seconds (default: 60)", "SECONDS" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr(GOptionContext) option_context = NULL;
  g_autoptr(GtkApplication) application = NULL;
  g_autoptr(GError) error = NULL;
  App app = { 0, };
  int status;

  setlocale (LC_ALL, "");
  option_context = g_option_context_new ("- a Mandelbrot viewer rendered on a wsrt runtime");
  g_option_context_add_main_entries (option_context, entries, NULL);
  if (!g_option_context_parse (option_context, &argc, &argv, &error))
    {
      g_printerr ("gtk-fractal: %s\n", error->message);
      return 2;
    }
  if (opt_workers < 0 || opt_zooms < 0 || opt_timeout < 1)
    {
      g_printerr ("gtk-fractal: --workers and --zooms must be positive or 0, "
                  "--timeout at least 1\n");
      return 2;
    }

  app.runtime = g_initable_new (WS_TYPE_RUNTIME, NULL, &error,
                                "n-workers", (guint) opt_workers,
                                "thread-name-prefix", "tiles",
                                NULL);
  if (app.runtime == NULL)
    {
      g_printerr ("gtk-fractal: cannot start the runtime: %s\n", error->message);
      return 1;
    }
  app.snapshot_path = opt_snapshot;
  app.zooms_left = opt_zooms;
  if (opt_snapshot != NULL)
    app.timeout_id = g_timeout_add_seconds (opt_timeout, on_timeout, &app);

  application = gtk_application_new ("org.wsrt.Fractal", G_APPLICATION_NON_UNIQUE);
  g_signal_connect (application, "activate", G_CALLBACK (on_activate), &app);
  status = g_application_run (G_APPLICATION (application), 1, argv);
  g_clear_handle_id (&app.timeout_id, g_source_remove);

  /* Every tile wait calls back, cancelled or not; let them, so that
   * nothing is left behind. */
  while (outstanding_waits > 0)
    g_main_context_iteration (NULL, TRUE);

  if (!ws_runtime_shutdown (app.runtime, -1))
    {
      g_printerr ("gtk-fractal: the runtime did not shut down cleanly\n");
      app.failed = TRUE;
    }
  g_object_unref (app.runtime);

  return status != 0 ? status : app.failed ? 1 : 0;
}
