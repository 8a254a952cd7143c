/* async-macros-misuse.c: what the coroutine macros must refuse to compile
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Compiled by tools/check-async-macros, never linked. Without a macro it
 * is a coroutine that keeps its locals where ws-async.h says (before
 * WS_ASYNC_BEGIN, in a block without an await, after the last await) and
 * must compile; with one of the MISUSE_* macros defined it declares a
 * local whose initialization a resume would jump over, and must fail:
 * the resume would free or read garbage (doc/async-gtk.md, "Reading the
 * coroutine macros").
 */

#include <wsrt.h>

typedef struct
{
  WS_ASYNC_STATE;
  WsSleep *nap;
  guint    i;
} Job;

WsPoll job_func (WsContext *cx,
                 gpointer   user_data);

WsPoll
job_func (WsContext *cx,
          gpointer   user_data)
{
  Job *s = user_data;
  g_autoptr(GError) error = NULL;

  WS_ASYNC_BEGIN (s);

#if defined(MISUSE_AUTOFREE)
  g_autofree char *text = g_strdup ("freed after the resume: garbage");
#elif defined(MISUSE_AUTOPTR)
  g_autoptr(GString) text = g_string_new ("freed after the resume: garbage");
#endif

  WS_AWAIT (s, ws_sleep_poll (s->nap, cx));

#if defined(MISUSE_LOOP_COUNTER)
  for (guint i = 0; i < 3; i++)
    WS_AWAIT (s, ws_sleep_poll (s->nap, cx));
#else
  for (s->i = 0; s->i < 3; s->i++)
    WS_AWAIT (s, ws_sleep_poll (s->nap, cx));
#endif

  {
    g_autofree char *between = g_strdup_printf ("%u", s->i);

    g_debug ("%s", between);
  }
  WS_ASYNC_YIELD (s, cx);

  if (error != NULL)
    WS_ASYNC_RETURN_ERROR (s, cx, g_steal_pointer (&error));

  g_autofree char *tail = g_strdup ("after the last await: fine");
  g_debug ("%s", tail);

  WS_ASYNC_END (s);
}
