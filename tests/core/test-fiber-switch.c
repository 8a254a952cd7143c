/* test-fiber-switch.c: the bare switch between a poller's stack and a
 * fiber's (ws-fiber-switch)
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * In the shape of Boost.Context's test_fcontext: a thousand switches back
 * and forth, each side checking what the other handed it; floating-point
 * values live on each side across switches; each side keeps its own
 * rounding mode, and on x86_64 its own MXCSR control bits and x87 control
 * word, which the System V ABI makes callee-saved; snprintf of doubles on
 * the fiber's stack. Every case runs twice: with the switch this build
 * chose (the hand-written one, or ucontext in a -Dfiber_switch=ucontext
 * build or where shadow stacks are enforced), then with the ucontext
 * switch forced, as the shadow-stack fallback uses it (ws-fiber-switch.c,
 * "Shadow stacks"). The forced cases come last: the choice sticks for the
 * process.
 */

#include "config.h"

#include <fenv.h>
#include <stdio.h>
#include <string.h>

#include "../ws-test-fixture.h"
#include "ws-fiber-stack-private.h"
#include "ws-fiber-switch-private.h"

#define N_SWITCHES 1000

/* One fiber and what the two sides hand each other. */
typedef struct
{
  WsFiberCtx    ctx;
  WsFiberStack *stack;
  guint         to_fiber;            /* written by the poller before a resume */
  guint         to_poller;           /* written by the fiber before a suspend */
  gboolean      fiber_ok;            /* every check on the fiber's side held */
  gboolean      done;
  char          text[64];            /* the fiber's snprintf output */
} Bare;

static void
bare_start (Bare         *b,
            WsFiberEntry  entry)
{
  memset (b, 0, sizeof *b);
  b->stack = ws_fiber_stack_get (NULL, 256 * 1024, NULL);
  g_assert_nonnull (b->stack);
  b->fiber_ok = TRUE;
  ws_fiber_ctx_init (&b->ctx, b->stack, entry, b);
}

static void
bare_finish (Bare *b)
{
  g_assert_true (b->done);
  ws_fiber_ctx_clear (&b->ctx);
  ws_fiber_stack_release (NULL, b->stack);
}

/* Chooses the switch of the cases of this run; FALSE if the build has
 * none to force (the case is skipped). */
static gboolean
use_switch (gboolean force_ucontext)
{
  if (force_ucontext && !ws_fiber_switch_force_ucontext ())
    {
      g_test_skip ("this build has no ucontext switch");
      return FALSE;
    }
  if (force_ucontext)
    g_assert_cmpstr (ws_fiber_switch_get_kind (), ==, "ucontext");
  g_test_message ("switch: %s", ws_fiber_switch_get_kind ());
  return TRUE;
}

/* ---- a thousand switches ------------------------------------------------- */

static void
ping_pong_entry (gpointer arg)
{
  Bare *b = arg;

  for (guint i = 0; i < N_SWITCHES; i++)
    {
      /* The poller handed i; hand back i * 2 + 1. */
      if (b->to_fiber != i)
        b->fiber_ok = FALSE;
      b->to_poller = i * 2 + 1;
      ws_fiber_ctx_suspend (&b->ctx);
    }
  b->done = TRUE;
  ws_fiber_ctx_exit (&b->ctx);
}

static void
ping_pong (gboolean force_ucontext)
{
  Bare b;

  if (!use_switch (force_ucontext))
    return;
  bare_start (&b, ping_pong_entry);
  for (guint i = 0; i < N_SWITCHES; i++)
    {
      b.to_fiber = i;
      ws_fiber_ctx_resume (&b.ctx);
      g_assert_cmpuint (b.to_poller, ==, i * 2 + 1);
      g_assert_false (b.done);
    }
  ws_fiber_ctx_resume (&b.ctx);
  g_assert_true (b.fiber_ok);
  bare_finish (&b);
}

/* ---- floating point and the rounding mode ------------------------------- */

/* 1/3 rounded by the mode in force: the operands are volatile so that the
 * division happens at run time, in SSE (double) and in x87 (long double
 * on x86_64). */
static volatile double one = 1.0;
static volatile double three = 3.0;

static double
third (void)
{
  return one / three;
}

static long double
third_long (void)
{
  return (long double) one / (long double) three;
}

#ifdef __x86_64__
/* The control bits that the ABI makes callee-saved: MXCSR but its status
 * flags (bits 0-5), and the whole x87 control word. */
# define MXCSR_CONTROL 0xffc0u

static guint32
get_mxcsr (void)
{
  guint32 v;

  __asm__ __volatile__ ("stmxcsr %0" : "=m" (v));
  return v;
}

static void
set_mxcsr (guint32 v)
{
  __asm__ __volatile__ ("ldmxcsr %0" : : "m" (v));
}

static guint16
get_x87_cw (void)
{
  guint16 v;

  __asm__ __volatile__ ("fnstcw %0" : "=m" (v));
  return v;
}

static void
set_x87_cw (guint16 v)
{
  __asm__ __volatile__ ("fldcw %0" : : "m" (v));
}
#endif

/* Valgrind computes in round-to-nearest whatever the mode, and ignores
 * flush-to-zero, denormals-are-zero and the x87 precision (it warns): it
 * keeps only the rounding fields of MXCSR and the x87 control word. Under
 * it (the valgrind test setup sets WS_TEST_VALGRIND) a side checks those
 * fields alone. */
static gboolean
under_valgrind (void)
{
  return g_getenv ("WS_TEST_VALGRIND") != NULL;
}

/* What one side expects of its own floating-point state. */
typedef struct
{
  int         round;                 /* fesetround's */
  double      third;                 /* 1/3 under it */
  long double third_long;
#ifdef __x86_64__
  guint32     mxcsr;                 /* control bits */
  guint16     x87_cw;
#endif
} FpSide;

/* Sets @side's rounding mode (and, on x86_64, its other control bits:
 * flush-to-zero and denormals-are-zero for @odd, and an x87 precision of
 * 53 bits), then records what it computes under it. */
static void
fp_side_enter (FpSide   *side,
               int       round,
               gboolean  odd)
{
  g_assert_cmpint (fesetround (round), ==, 0);
#ifdef __x86_64__
  if (odd && !under_valgrind ())
    {
      set_mxcsr (get_mxcsr () | 0x8040u);                 /* FTZ, DAZ */
      set_x87_cw ((guint16) ((get_x87_cw () & ~0x0300u) | 0x0200u));   /* 53 bits */
    }
  side->mxcsr = get_mxcsr () & MXCSR_CONTROL;
  side->x87_cw = get_x87_cw ();
#endif
  side->round = round;
  side->third = third ();
  side->third_long = third_long ();
}

/* Whether the state in force is still @side's. */
static gboolean
fp_side_holds (const FpSide *side)
{
#ifdef __x86_64__
  guint32 mxcsr_mask = under_valgrind () ? 0x6000u : MXCSR_CONTROL;   /* RC */
  guint16 cw_mask = under_valgrind () ? 0x0c00u : 0xffffu;             /* RC */
#endif

  if (fegetround () != side->round)
    return FALSE;
  if (!under_valgrind ()
      && (third () != side->third || third_long () != side->third_long))
    return FALSE;
#ifdef __x86_64__
  if ((get_mxcsr () & mxcsr_mask) != (side->mxcsr & mxcsr_mask)
      || (get_x87_cw () & cw_mask) != (side->x87_cw & cw_mask))
    return FALSE;
#endif
  return TRUE;
}

static void
fp_entry (gpointer arg)
{
  Bare *b = arg;
  FpSide mine;
  double x = 7.34;                   /* Boost's value */
  double acc = 0.0;

  fp_side_enter (&mine, FE_UPWARD, TRUE);
  for (guint i = 0; i < N_SWITCHES; i++)
    {
      acc += x;
      ws_fiber_ctx_suspend (&b->ctx);
      if (!fp_side_holds (&mine) || x != 7.34)
        b->fiber_ok = FALSE;
    }
  /* The sum of exact additions of 7.34, under the fiber's rounding: the
   * same loop without switches, on this side. */
  {
    double check = 0.0;

    for (guint i = 0; i < N_SWITCHES; i++)
      check += x;
    if (check != acc)
      b->fiber_ok = FALSE;
  }
  fesetround (FE_TONEAREST);
  b->done = TRUE;
  ws_fiber_ctx_exit (&b->ctx);
}

static void
floating_point (gboolean force_ucontext)
{
  Bare b;
  FpSide mine;
  FpSide before;
  double y = 3.25;

  if (!use_switch (force_ucontext))
    return;
  fp_side_enter (&before, FE_TONEAREST, FALSE);
  fp_side_enter (&mine, FE_DOWNWARD, FALSE);
  /* The modes tell apart: 1/3 rounds down here, up on the fiber. */
  g_assert_cmpint (FE_DOWNWARD, !=, FE_UPWARD);
  bare_start (&b, fp_entry);
  for (guint i = 0; i <= N_SWITCHES; i++)
    {
      ws_fiber_ctx_resume (&b.ctx);
      g_assert_true (fp_side_holds (&mine));
      g_assert_cmpfloat (y, ==, 3.25);
    }
  g_assert_true (b.done);
  g_assert_true (b.fiber_ok);
  bare_finish (&b);

  /* The other side's mode rounded the other way, or the test would pass
   * with one mode for both. */
  fesetround (FE_UPWARD);
  if (!under_valgrind ())
    g_assert_cmpfloat (third (), >, mine.third);
  fesetround (FE_TONEAREST);
#ifdef __x86_64__
  set_mxcsr ((get_mxcsr () & ~MXCSR_CONTROL) | before.mxcsr);
  set_x87_cw (before.x87_cw);
#endif
}

/* ---- snprintf on the fiber's stack --------------------------------------- */

static void
snprintf_entry (gpointer arg)
{
  Bare *b = arg;
  char buf[64];

  /* The fiber's mode rounds the printed digits (glibc follows it). */
  fesetround (FE_DOWNWARD);
  for (guint i = 0; i < 10; i++)
    {
      snprintf (buf, sizeof buf, "%.6f %g %.3Lf", 3.14159265, 0.5, (long double) 2.0005);
      ws_fiber_ctx_suspend (&b->ctx);
      if (fegetround () != FE_DOWNWARD)
        b->fiber_ok = FALSE;
    }
  memcpy (b->text, buf, sizeof buf);
  fesetround (FE_TONEAREST);
  b->done = TRUE;
  ws_fiber_ctx_exit (&b->ctx);
}

static void
printing (gboolean force_ucontext)
{
  Bare b;
  char buf[64];

  if (!use_switch (force_ucontext))
    return;
  fesetround (FE_UPWARD);
  bare_start (&b, snprintf_entry);
  for (guint i = 0; i <= 10; i++)
    {
      ws_fiber_ctx_resume (&b.ctx);
      snprintf (buf, sizeof buf, "%.6f", 3.14159265);
      g_assert_cmpstr (buf, ==, "3.141593");
    }
  fesetround (FE_TONEAREST);
  g_assert_true (b.fiber_ok);
  g_assert_cmpstr (b.text, ==, "3.141592 0.5 2.000");
  bare_finish (&b);
}

/* ---- an entry that returns ---------------------------------------------- */

/* The fiber exits by returning from its entry, after a few switches, with
 * its own rounding mode set: the poller's resume returns once more, with
 * the poller's callee-saved registers (its locals live across the
 * resumes), its rounding mode and its stack as they were. */
static void
returning_entry (gpointer arg)
{
  Bare *b = arg;

  fesetround (FE_UPWARD);
  for (guint i = 0; i < 3; i++)
    {
      b->to_poller = i + 1;
      ws_fiber_ctx_suspend (&b->ctx);
    }
  if (fegetround () != FE_UPWARD)
    b->fiber_ok = FALSE;
  b->done = TRUE;
}

static void
entry_returns (gboolean force_ucontext)
{
  volatile guint64 canary = 0x0123456789abcdefULL;
  /* Live across every resume: kept in callee-saved registers or spilled. */
  guint64 a = g_test_rand_int (), c = g_test_rand_int (), d = g_test_rand_int ();
  guint64 e = g_test_rand_int (), f = g_test_rand_int (), g = g_test_rand_int ();
  volatile guint64 sum = a * 3 + c * 5 + d * 7 + e * 11 + f * 13 + g * 17;
  Bare b;

  if (!use_switch (force_ucontext))
    return;
  fesetround (FE_DOWNWARD);
  bare_start (&b, returning_entry);
  for (guint i = 0; i < 3; i++)
    {
      ws_fiber_ctx_resume (&b.ctx);
      g_assert_cmpuint (b.to_poller, ==, i + 1);
      g_assert_false (b.done);
    }
  ws_fiber_ctx_resume (&b.ctx);
  g_assert_true (b.done);
  g_assert_cmpint (fegetround (), ==, FE_DOWNWARD);
  fesetround (FE_TONEAREST);
  g_assert_true (b.fiber_ok);
  g_assert_cmpuint (canary, ==, 0x0123456789abcdefULL);
  g_assert_cmpuint (a * 3 + c * 5 + d * 7 + e * 11 + f * 13 + g * 17, ==, sum);
  bare_finish (&b);
}

static void test_ping_pong (void) { ping_pong (FALSE); }
static void test_entry_returns (void) { entry_returns (FALSE); }
static void test_ucontext_entry_returns (void) { entry_returns (TRUE); }
static void test_floating_point (void) { floating_point (FALSE); }
static void test_printing (void) { printing (FALSE); }
static void test_ucontext_ping_pong (void) { ping_pong (TRUE); }
static void test_ucontext_floating_point (void) { floating_point (TRUE); }
static void test_ucontext_printing (void) { printing (TRUE); }

WS_TEST_MAIN ({ "/fiber-switch/ping-pong", test_ping_pong },
              { "/fiber-switch/floating-point", test_floating_point },
              { "/fiber-switch/snprintf", test_printing },
              { "/fiber-switch/entry-returns", test_entry_returns },
              { "/fiber-switch/ucontext/ping-pong", test_ucontext_ping_pong },
              { "/fiber-switch/ucontext/floating-point", test_ucontext_floating_point },
              { "/fiber-switch/ucontext/snprintf", test_ucontext_printing },
              { "/fiber-switch/ucontext/entry-returns", test_ucontext_entry_returns })
