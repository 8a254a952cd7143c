/* ws-frame-slice-private.h: one dispatch's share of an application's frame
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The rule (doc/architecture.md, "Rules: main contexts"): a wsrt source on
 * a context that an application draws from (the local executor's, the
 * completions' delivery source) runs its work in slices. A dispatch stops
 * after the frame budget or a number of items, whichever comes first,
 * leaves the rest queued and returns, staying ready, so the main loop
 * dispatches its other sources between slices. While a slice ends with
 * work left the source runs at WS_FRAME_BACKLOG_PRIORITY, below GTK's
 * redraw (G_PRIORITY_HIGH_IDLE + 20): GLib dispatches only the highest
 * ready priority, so a source that stayed ready at G_PRIORITY_DEFAULT
 * would starve the frame clock however short each slice is. It goes back
 * to WS_FRAME_PRIORITY once a slice empties it.
 *
 * The clock is read after each item: an item that runs past the budget
 * ends the slice, whatever the machine's speed (a slower or busier
 * machine only makes slices hold fewer items).
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The frame budget of one dispatch, by default (a runtime's local-slice
 * property sets its local executors'). */
#define WS_FRAME_SLICE_USEC       1000
/* The most items one slice runs. */
#define WS_FRAME_SLICE_MAX_ITEMS  256

#define WS_FRAME_PRIORITY         G_PRIORITY_DEFAULT
#define WS_FRAME_BACKLOG_PRIORITY G_PRIORITY_DEFAULT_IDLE

typedef struct
{
  gint64 start;
  gint64 budget_usec;       /* < 0: no time limit */
  guint  items;
  guint  max_items;
} WsFrameSlice;

static inline void
ws_frame_slice_begin (WsFrameSlice *self,
                      gint64        budget_usec,
                      guint         max_items)
{
  self->start = g_get_monotonic_time ();
  self->budget_usec = budget_usec;
  self->items = 0;
  self->max_items = max_items;
}

/* Counts one item run; TRUE when the slice is over. */
static inline gboolean
ws_frame_slice_item_done (WsFrameSlice *self)
{
  self->items++;
  return self->items >= self->max_items
         || (self->budget_usec >= 0
             && g_get_monotonic_time () - self->start >= self->budget_usec);
}

/* After a slice of @source: @more is whether work is left. Moves the
 * source between the two priorities; @backlogged is the source's own
 * record of which it has (touched by the dispatching thread only). */
static inline void
ws_frame_slice_note_backlog (GSource  *source,
                             gboolean *backlogged,
                             gboolean  more)
{
  if (more == *backlogged)
    return;
  *backlogged = more;
  g_source_set_priority (source, more ? WS_FRAME_BACKLOG_PRIORITY : WS_FRAME_PRIORITY);
}

G_END_DECLS
