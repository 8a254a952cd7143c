/* ws-timer-wheel-private.h: a hierarchical timing wheel
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Time is counted in ticks from the wheel's start. Six levels of 64
 * slots: a slot of level L spans 64^L ticks, the whole of level L spans
 * 64^(L+1) ticks, so the wheel covers 2^36 ticks (about 2.2 years at
 * 1 ms a tick). Insert, remove and reset are O(1): an entry is in one
 * doubly linked slot list, and a 64-bit mask per level says which slots
 * are occupied.
 *
 * Invariants, with `elapsed` the tick the wheel has been advanced to:
 *  W1 every linked entry has when > elapsed, or is on the expired list;
 *  W2 an entry of level L agrees with elapsed on every bit above the
 *     level's six (its level is given by the highest bit in which `when`
 *     and `elapsed` differ), so every entry of a lower level expires
 *     before every entry of a higher one, and the first occupied slot at
 *     or after elapsed's position in the lowest occupied level holds the
 *     next expiration;
 *  W3 elapsed only moves to the start of the next occupied slot (whose
 *     entries are then expired or moved down a level) or, when no slot
 *     starts before it, to the time polled for; so W2 keeps holding.
 *
 * The wheel is a plain data structure: its owner provides the lock.
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define WS_TIMER_WHEEL_LEVELS    6
#define WS_TIMER_WHEEL_SLOT_BITS 6
#define WS_TIMER_WHEEL_SLOTS     (1u << WS_TIMER_WHEEL_SLOT_BITS)
/* The farthest an entry can be placed from elapsed; later deadlines are
 * placed at this distance and expire early, for their owner to re-insert. */
#define WS_TIMER_WHEEL_MAX_TICKS \
  (G_GUINT64_CONSTANT (1) << (WS_TIMER_WHEEL_LEVELS * WS_TIMER_WHEEL_SLOT_BITS))

/* Where an entry is: a level, the expired list, or nowhere. An entry of
 * an expired level-0 slot is on the expired list with level 0. */
#define WS_TIMER_ENTRY_UNLINKED 0xff
#define WS_TIMER_ENTRY_EXPIRED  0xfe

/* 24 bytes, embedded in its owner. */
typedef struct _WsTimerEntry WsTimerEntry;
struct _WsTimerEntry
{
  WsTimerEntry *prev;
  WsTimerEntry *next;
  guint64       when  : 48;          /* tick it expires at */
  guint64       level : 8;           /* or one of WS_TIMER_ENTRY_* */
  guint64       slot  : 8;
};

typedef struct
{
  guint64      elapsed;
  guint64      occupied[WS_TIMER_WHEEL_LEVELS];
  /* Circular lists: each head is a sentinel whose when/level are unused. */
  WsTimerEntry slots[WS_TIMER_WHEEL_LEVELS][WS_TIMER_WHEEL_SLOTS];
  WsTimerEntry expired;
  gsize        n_entries;
} WsTimerWheel;

void          ws_timer_wheel_init            (WsTimerWheel *self,
                                              guint64       elapsed);
gboolean      ws_timer_wheel_insert          (WsTimerWheel *self,
                                              WsTimerEntry *entry,
                                              guint64       when);
void          ws_timer_wheel_remove          (WsTimerWheel *self,
                                              WsTimerEntry *entry);
guint64       ws_timer_wheel_next_expiration (WsTimerWheel *self);
WsTimerEntry *ws_timer_wheel_poll            (WsTimerWheel *self,
                                              guint64       now);

static inline void
ws_timer_entry_init (WsTimerEntry *entry)
{
  entry->prev = entry->next = NULL;
  entry->when = 0;
  entry->level = WS_TIMER_ENTRY_UNLINKED;
  entry->slot = 0;
}

static inline gboolean
ws_timer_entry_is_linked (const WsTimerEntry *entry)
{
  return entry->level != WS_TIMER_ENTRY_UNLINKED;
}

static inline gsize
ws_timer_wheel_get_n_entries (const WsTimerWheel *self)
{
  return self->n_entries;
}

G_END_DECLS
