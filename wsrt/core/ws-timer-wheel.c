/* ws-timer-wheel.c: a hierarchical timing wheel
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The invariants W1-W3 are in ws-timer-wheel-private.h. Polling takes the
 * next occupied slot whose start has passed: on level 0 a slot's entries
 * all expire at its start and go to the expired list; on a higher level
 * elapsed moves to the slot's start and its entries are placed again,
 * each on a lower level (W2), some of them on the expired list. Each
 * entry moves down at most five times in its life, so a poll is O(1)
 * amortised per entry.
 */

#include "config.h"

#include "ws-timer-wheel-private.h"

#define SLOT_MASK ((guint64) WS_TIMER_WHEEL_SLOTS - 1)

static inline void
list_init (WsTimerEntry *head)
{
  head->prev = head->next = head;
  head->level = WS_TIMER_ENTRY_UNLINKED;
}

static inline gboolean
list_is_empty (const WsTimerEntry *head)
{
  return head->next == head;
}

static inline void
list_push (WsTimerEntry *head,
           WsTimerEntry *entry)
{
  entry->prev = head->prev;
  entry->next = head;
  head->prev->next = entry;
  head->prev = entry;
}

static inline void
list_unlink (WsTimerEntry *entry)
{
  entry->prev->next = entry->next;
  entry->next->prev = entry->prev;
  entry->prev = entry->next = NULL;
}

void
ws_timer_wheel_init (WsTimerWheel *self,
                     guint64       elapsed)
{
  self->elapsed = elapsed;
  self->n_entries = 0;
  for (guint level = 0; level < WS_TIMER_WHEEL_LEVELS; level++)
    {
      self->occupied[level] = 0;
      for (guint slot = 0; slot < WS_TIMER_WHEEL_SLOTS; slot++)
        list_init (&self->slots[level][slot]);
    }
  list_init (&self->expired);
}

/* The level of a tick @when > @elapsed: the six-bit group of the highest
 * bit in which the two differ (W2). */
static inline guint
level_for (guint64 elapsed,
           guint64 when)
{
  guint64 masked = (elapsed ^ when) | SLOT_MASK;

  if (masked >= WS_TIMER_WHEEL_MAX_TICKS)
    masked = WS_TIMER_WHEEL_MAX_TICKS - 1;
  return (63 - __builtin_clzll (masked)) / WS_TIMER_WHEEL_SLOT_BITS;
}

/* Places @entry (unlinked) by its when; FALSE if that is not after
 * elapsed. */
static gboolean
place (WsTimerWheel *self,
       WsTimerEntry *entry)
{
  guint level, slot;

  if (entry->when <= self->elapsed)
    return FALSE;

  level = level_for (self->elapsed, entry->when);
  slot = (entry->when >> (level * WS_TIMER_WHEEL_SLOT_BITS)) & SLOT_MASK;
  entry->level = level;
  entry->slot = slot;
  list_push (&self->slots[level][slot], entry);
  self->occupied[level] |= G_GUINT64_CONSTANT (1) << slot;
  return TRUE;
}

/**
 * ws_timer_wheel_insert:
 * @self: a wheel
 * @entry: an unlinked entry
 * @when: the tick at which it expires
 *
 * Links @entry to expire at @when, or at the wheel's horizon
 * (WS_TIMER_WHEEL_MAX_TICKS from elapsed) if @when is farther.
 *
 * Returns: %FALSE, leaving @entry unlinked, if @when is not after the
 *   tick the wheel was last polled for: it has expired already
 */
gboolean
ws_timer_wheel_insert (WsTimerWheel *self,
                       WsTimerEntry *entry,
                       guint64       when)
{
  g_assert (!ws_timer_entry_is_linked (entry));

  if (when - self->elapsed >= WS_TIMER_WHEEL_MAX_TICKS && when > self->elapsed)
    when = self->elapsed + WS_TIMER_WHEEL_MAX_TICKS - 1;
  entry->when = when;
  if (!place (self, entry))
    return FALSE;
  self->n_entries++;
  return TRUE;
}

/**
 * ws_timer_wheel_remove:
 * @self: a wheel
 * @entry: an entry linked to @self (in a slot or on the expired list)
 *
 * Unlinks @entry.
 */
void
ws_timer_wheel_remove (WsTimerWheel *self,
                       WsTimerEntry *entry)
{
  guint level = entry->level;
  guint slot = entry->slot;

  g_assert (ws_timer_entry_is_linked (entry));

  list_unlink (entry);
  entry->level = WS_TIMER_ENTRY_UNLINKED;
  self->n_entries--;
  if (level < WS_TIMER_WHEEL_LEVELS && list_is_empty (&self->slots[level][slot]))
    self->occupied[level] &= ~(G_GUINT64_CONSTANT (1) << slot);
}

/* The first occupied slot of the lowest occupied level, and the tick it
 * starts at; FALSE if the wheel has no entry in a slot. */
static gboolean
next_slot (WsTimerWheel *self,
           guint        *level_out,
           guint        *slot_out,
           guint64      *start_out)
{
  for (guint level = 0; level < WS_TIMER_WHEEL_LEVELS; level++)
    {
      guint shift = level * WS_TIMER_WHEEL_SLOT_BITS;
      guint64 occupied = self->occupied[level];
      guint pos, slot;
      guint64 slot_span, level_span, start;

      if (occupied == 0)
        continue;

      /* Rotate so that elapsed's own slot is bit 0: the first set bit is
       * then the first occupied slot at or after it (W2 says none is
       * before it). */
      pos = (self->elapsed >> shift) & SLOT_MASK;
      if (pos != 0)
        occupied = (occupied >> pos) | (occupied << (WS_TIMER_WHEEL_SLOTS - pos));
      slot = (pos + __builtin_ctzll (occupied)) & SLOT_MASK;

      slot_span = G_GUINT64_CONSTANT (1) << shift;
      level_span = slot_span << WS_TIMER_WHEEL_SLOT_BITS;
      start = (self->elapsed & ~(level_span - 1)) + slot * slot_span;
      if (level > 0 && start <= self->elapsed)
        {
          /* The slot is in the next turn of this level. By W2 only an
           * entry placed at the horizon can be there (its when may pass
           * the top level's span); every other entry of a level > 0 is in
           * a slot after elapsed's own. */
          start += level_span;
        }
      *level_out = level;
      *slot_out = slot;
      *start_out = start;
      return TRUE;
    }
  return FALSE;
}

/**
 * ws_timer_wheel_next_expiration:
 * @self: a wheel
 *
 * The tick to poll at next: the start of the next occupied slot (an
 * entry of a higher level may expire later than that; polling then moves
 * it down), elapsed if entries have expired and wait on the expired list.
 *
 * Returns: a tick, or G_MAXUINT64 if the wheel is empty
 */
guint64
ws_timer_wheel_next_expiration (WsTimerWheel *self)
{
  guint level, slot;
  guint64 start;

  if (!list_is_empty (&self->expired))
    return self->elapsed;
  if (!next_slot (self, &level, &slot, &start))
    return G_MAXUINT64;
  return start;
}

/**
 * ws_timer_wheel_poll:
 * @self: a wheel
 * @now: the current tick
 *
 * Takes one entry whose when is at or before @now. Call until it returns
 * %NULL: the wheel has then advanced to @now.
 *
 * Returns: (nullable): an expired entry, now unlinked
 */
WsTimerEntry *
ws_timer_wheel_poll (WsTimerWheel *self,
                     guint64       now)
{
  for (;;)
    {
      WsTimerEntry *head = &self->expired;
      WsTimerEntry list;
      guint level, slot;
      guint64 start;

      if (!list_is_empty (head))
        {
          WsTimerEntry *entry = head->next;

          list_unlink (entry);
          entry->level = WS_TIMER_ENTRY_UNLINKED;
          self->n_entries--;
          return entry;
        }

      if (!next_slot (self, &level, &slot, &start) || start > now)
        {
          if (now > self->elapsed)
            self->elapsed = now;
          return NULL;
        }

      self->elapsed = start;
      head = &self->slots[level][slot];
      if (level == 0)
        {
          /* Every entry of a level-0 slot expires at its start: the whole
           * list moves to the expired list, without touching the entries
           * between its ends. They keep level 0 there; remove () then
           * only looks at a slot list that is empty already, or that
           * holds entries of a later turn and is left alone. */
          head->next->prev = self->expired.prev;
          self->expired.prev->next = head->next;
          head->prev->next = &self->expired;
          self->expired.prev = head->prev;
          list_init (head);
          self->occupied[0] &= ~(G_GUINT64_CONSTANT (1) << slot);
          continue;
        }

      /* Take the slot's whole list, then place each entry again from its
       * start (W3): it expires or moves to a lower level. */
      list.next = head->next;
      list.prev = head->prev;
      list.next->prev = &list;
      list.prev->next = &list;
      list_init (head);
      self->occupied[level] &= ~(G_GUINT64_CONSTANT (1) << slot);

      while (!list_is_empty (&list))
        {
          WsTimerEntry *entry = list.next;

          list_unlink (entry);
          if (!place (self, entry))
            {
              entry->level = WS_TIMER_ENTRY_EXPIRED;
              list_push (&self->expired, entry);
            }
        }
    }
}
