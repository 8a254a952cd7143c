/* ws-fiber-switch-private.h: switching between a poller's stack and a fiber's
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The protocol is at the top of ws-fiber-switch.c.
 */

#pragma once

#include <glib.h>

#include "ws-fiber-stack-private.h"

#if !defined(__x86_64__) && !defined(__aarch64__) && !defined(WS_FIBER_SWITCH_UCONTEXT)
# define WS_FIBER_SWITCH_UCONTEXT 1
#endif

G_BEGIN_DECLS

/* Runs on the fiber's stack; the fiber exits when it returns, or when it
 * calls ws_fiber_ctx_exit (). */
typedef void (*WsFiberEntry) (gpointer arg);

/* One side of a switch: where its stack pointer was saved, and what the
 * sanitizers need to know about it. */
typedef struct
{
  gpointer    sp;                    /* the hand-written switch's */
  gpointer    asan_fake_stack;       /* ASan: this side's fake stack while away */
  const void *stack_bottom;          /* ASan: this side's stack */
  gsize       stack_size;
  gpointer    tsan_fiber;            /* TSan: this side as a TSan fiber */
} WsFiberSide;

typedef struct _WsFiberCtx WsFiberCtx;
struct _WsFiberCtx
{
  WsFiberSide       fiber;
  WsFiberSide       poller;          /* whoever resumed the fiber last */
  WsFiberStack     *stack;
  WsFiberEntry      entry;
  gpointer          entry_arg;
  /* The two sides' ucontexts when this fiber switches with swapcontext
   * (ws-fiber-switch.c, "The switch"); NULL with the hand-written one. */
  struct _WsFiberUcontexts *uc;
  /* While it runs: the fiber the poller itself ran on, if any (a fiber
   * that resumes another inline), for the overflow handler. */
  const WsFiberCtx *outer;
  /* What the overflow message names (ws-fiber-overflow.c): set by the
   * owner after init, or NULL. */
  gconstpointer     task;
  gconstpointer     func;
};

void     ws_fiber_ctx_init    (WsFiberCtx   *ctx,
                               WsFiberStack *stack,
                               WsFiberEntry  entry,
                               gpointer      arg);
void     ws_fiber_ctx_clear   (WsFiberCtx   *ctx);
void     ws_fiber_ctx_resume  (WsFiberCtx   *ctx);
void     ws_fiber_ctx_suspend (WsFiberCtx   *ctx);
G_NORETURN
void     ws_fiber_ctx_exit    (WsFiberCtx   *ctx);

/* "ucontext" or the architecture of the hand-written switch: the one that
 * the fibers initialised from now on use. */
const char *ws_fiber_switch_get_kind (void);

/* Test hook: the fibers initialised from now on switch with ucontext, as
 * when shadow stacks are enforced. FALSE (and nothing changes) where this
 * build has no ucontext switch (aarch64). */
gboolean    ws_fiber_switch_force_ucontext (void);

G_END_DECLS
