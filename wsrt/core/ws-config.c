/* ws-config.c: the settings of one runtime, and its hooks
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * See ws-config-private.h for who reads what, and when.
 */

#include "config.h"

#include <string.h>

#include "ws-config-private.h"

/* Copies the scalar settings of @settings (not its hooks: those are set
 * one by one, each with its own destroy notify). */
void
ws_config_init_from (WsConfig       *self,
                     const WsConfig *settings)
{
  *self = *settings;
  memset (self->hooks, 0, sizeof self->hooks);
  if (self->n_workers == 0)
    self->n_workers = g_get_num_processors ();
  self->thread_name_prefix = g_strdup (settings->thread_name_prefix != NULL
                                       ? settings->thread_name_prefix : "ws");
}

/* Moves the hooks out, for the caller to release outside its lock. */
void
ws_config_take_hooks (WsConfig *self,
                      WsHook    out[WS_N_HOOKS])
{
  memcpy (out, self->hooks, sizeof self->hooks);
  memset (self->hooks, 0, sizeof self->hooks);
}

void
ws_hooks_release (WsHook hooks[WS_N_HOOKS])
{
  for (guint i = 0; i < WS_N_HOOKS; i++)
    if (hooks[i].destroy != NULL)
      hooks[i].destroy (hooks[i].data);
}

void
ws_config_clear (WsConfig *self)
{
  WsHook hooks[WS_N_HOOKS];

  ws_config_take_hooks (self, hooks);
  ws_hooks_release (hooks);
  g_clear_pointer (&self->thread_name_prefix, g_free);
}
