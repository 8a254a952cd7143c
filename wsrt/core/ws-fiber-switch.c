/* ws-fiber-switch.c: switching between a poller's stack and a fiber's
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A fiber (ws-fiber.c) runs on its own stack (ws-fiber-stack.c). Two
 * sides take turns: the poller, a thread inside the fiber task's poll
 * function (or inside the task's destroy notify, at cancellation), and the
 * fiber. The protocol:
 *
 *  - ws_fiber_ctx_resume () is called by the poller, which holds the
 *    task's RUNNING bit, so no two threads resume one fiber at once. It
 *    returns when the fiber calls ws_fiber_ctx_suspend () or
 *    ws_fiber_ctx_exit ();
 *  - ws_fiber_ctx_suspend () is called on the fiber and returns when a
 *    poller resumes it, maybe on another thread: a suspended fiber may
 *    migrate (ws-fiber.c says why);
 *  - ws_fiber_ctx_exit () is the fiber's last switch: its entry function
 *    has returned into it, no frame on the stack is live any more, and
 *    the poller then owns the stack and releases it.
 *
 * The switch: x86_64 and aarch64 have a hand-written switch that saves the
 * callee-saved registers (and on x86_64 the MXCSR and x87 control words,
 * which the ABI also counts as callee-saved) on the current stack, stores
 * the stack pointer, loads the other side's and pops its registers: no
 * system call, unlike glibc's swapcontext (), which saves and restores the
 * signal mask with rt_sigprocmask (doc/performance.md, "The peer table", has
 * both measured). Elsewhere, or with -Dfiber_switch=ucontext, ucontext
 * is the fallback.
 *
 * Shadow stacks (x86_64 CET). The hand-written switch moves the stack
 * pointer but not the shadow stack pointer, so on a thread whose shadow
 * stack is enforced the first return after a switch would fault (#CP):
 * the shadow stack still holds the other side's return addresses. So:
 *
 *  - this file is compiled with -fcf-protection=branch where the compiler
 *    takes it (wsrt/core/meson.build): its object carries IBT in its
 *    .note.gnu.property, never SHSTK, and since the linker keeps a
 *    feature only if every object has it, libwsrt is never marked
 *    shadow-stack compatible, whatever CFLAGS the rest was built with
 *    (tests/check-cet-notes checks it). glibc then does not enable
 *    shadow stacks in a process that links it, and by default refuses
 *    to dlopen it into one that has them (glibc.cpu.x86_shstk=permissive
 *    turns them off instead);
 *  - shadow stacks can still be forced on (glibc.cpu.x86_shstk=on), so
 *    the first fiber checks whether they are enforced on its thread (the
 *    state is the process's: glibc enables them at startup, before any
 *    thread, and locks them): rdsspq, which reads 0 where they are off
 *    and is a no-op on CPUs without them, or ARCH_SHSTK_STATUS (Linux
 *    6.6, the first with user shadow stacks; its failure means none).
 *    If they are, every fiber switches with glibc's swapcontext (), which
 *    switches the shadow stack too (glibc 2.28 and later built with
 *    --enable-cet; with the kernel's interface since 2.39): makecontext ()
 *    maps a shadow stack per fiber (map_shadow_stack) and glibc never
 *    unmaps it, so ws_fiber_ctx_clear () does, from the base and size
 *    that makecontext () left in the fiber's ucontext (__ssp[1], __ssp[2]).
 *    That last part is read from glibc's source (x86_64 makecontext.c,
 *    swapcontext.S), not run: no machine here enforces shadow stacks.
 *
 * aarch64's Guarded Control Stack has the same shape; the aarch64 switch
 * does not handle it either, and no toolchain here marks objects for it.
 *
 * Returns. A switch moves to another stack, and the CPU's return-address
 * predictor (a stack of the calls made) then holds the other side's
 * returns: every ret after it is mispredicted until the predictor's
 * stack is back in step. So the switch itself returns by pop and jump,
 * which leaves the predictor alone, and a fiber whose entry returns
 * exits from its trampoline, with its own calls all returned: the
 * predictor then holds the poller's returns exactly, starting with the
 * one into ws_fiber_ctx_resume (), so the last switch returns with a
 * ret, and every ret of the poller after it is predicted. A fiber that
 * exits with ws_fiber_ctx_exit () from deeper in its stack works too,
 * with the poller's returns mispredicted for a while.
 *
 * Thread-local storage across a switch: a suspend may return on another
 * thread, and a compiler may keep the address of a thread-local variable
 * (errno's, through the const __errno_location (), or a __thread
 * variable's) in a register across a call. The switch is an opaque
 * assembly function, and ws_fiber_ctx_suspend () is noinline and touches
 * no thread-local variable of its own after the switch: the sanitizer
 * calls it makes are calls, which read their thread-local state afresh,
 * and a compiler barrier follows the switch. Its callers in ws-fiber.c
 * read nothing thread-local across it either. The rule for user code is
 * in doc/getting-started-c.md ("Fibers and thread-local storage").
 *
 * Sanitizers: under ASan each switch is announced with
 * __sanitizer_start_switch_fiber () and completed on the other side with
 * __sanitizer_finish_switch_fiber (), which tells ASan whose stack it is
 * on; the fiber side learns the poller's stack bounds there, each time,
 * since its poller may be another thread. The last switch passes no fake
 * stack to keep, so ASan frees the fiber's. Under TSan each fiber is a
 * TSan fiber (__tsan_create_fiber), switched to with
 * __tsan_switch_to_fiber (), which also orders the two sides (the
 * default flags synchronise); the poller side is the thread's current
 * fiber, read before each resume.
 */

#include "config.h"

#include <stdatomic.h>
#include <string.h>

#include "ws-fiber-switch-private.h"
#include "ws-fiber-overflow-private.h"
#include "ws-thread-private.h"

#ifdef WS_FIBER_SWITCH_UCONTEXT
# define WS_HAVE_UCONTEXT 1
#elif defined(__x86_64__) && defined(__GLIBC__)
/* The switch when shadow stacks are enforced (see the top). */
# define WS_HAVE_UCONTEXT 1
# define WS_HAVE_SHSTK_FALLBACK 1
# include <sys/mman.h>
# include <sys/syscall.h>
# include <unistd.h>
#endif

#ifdef WS_HAVE_UCONTEXT
# include <ucontext.h>

struct _WsFiberUcontexts
{
  ucontext_t fiber;
  ucontext_t poller;
};
typedef struct _WsFiberUcontexts WsFiberUcontexts;
#endif

#if defined(__SANITIZE_ADDRESS__)
# define WS_ASAN 1
#elif defined(__has_feature)
# if __has_feature(address_sanitizer)
#  define WS_ASAN 1
# endif
#endif
#if defined(__SANITIZE_THREAD__)
# define WS_TSAN 1
#elif defined(__has_feature)
# if __has_feature(thread_sanitizer)
#  define WS_TSAN 1
# endif
#endif

#ifdef WS_ASAN
# include <sanitizer/common_interface_defs.h>
#endif
#ifdef WS_TSAN
# include <sanitizer/tsan_interface.h>
#endif

/* Orders the compiler's memory accesses around a switch. */
#define WS_COMPILER_BARRIER() __asm__ __volatile__ ("" ::: "memory")

/* ---- the switch ---------------------------------------------------------- */

#ifndef WS_FIBER_SWITCH_UCONTEXT

/* Saves the callee-saved state on the current stack and its stack pointer
 * in *@save, switches to the stack pointer @to and restores what is saved
 * there. Returns on the other side; @arg is passed through (the first
 * argument of the entry trampoline on a fiber's first switch). */
void *ws_fiber_switch_raw (void  **save,
                           void   *to,
                           void   *arg);
/* Where a fresh fiber's first switch returns to: calls the function in a
 * callee-saved register with the argument the switch passed; when it
 * returns, with the address of the poller's saved stack pointer,
 * switches there for the last time. Its unwind information marks the
 * return address undefined, so a debugger's backtrace ends there. */
void ws_fiber_trampoline (void);

# if defined(__CET__)
#  define WS_ENDBR "endbr64\n"
#  define WS_NOTRACK "notrack "
# else
#  define WS_ENDBR ""
#  define WS_NOTRACK ""
# endif

# if defined(__x86_64__)

__asm__ (
  ".text\n"
  ".globl ws_fiber_switch_raw\n"
  ".hidden ws_fiber_switch_raw\n"
  ".type ws_fiber_switch_raw,@function\n"
  ".p2align 4\n"
  "ws_fiber_switch_raw:\n"
  ".cfi_startproc\n"
  WS_ENDBR
  "  pushq %rbp\n"
  "  pushq %rbx\n"
  "  pushq %r12\n"
  "  pushq %r13\n"
  "  pushq %r14\n"
  "  pushq %r15\n"
  "  subq $8, %rsp\n"
  "  stmxcsr (%rsp)\n"
  "  fnstcw 4(%rsp)\n"
  "  movq %rsp, (%rdi)\n"
  "  movq %rsi, %rsp\n"
  "  ldmxcsr (%rsp)\n"
  "  fldcw 4(%rsp)\n"
  "  addq $8, %rsp\n"
  "  popq %r15\n"
  "  popq %r14\n"
  "  popq %r13\n"
  "  popq %r12\n"
  "  popq %rbx\n"
  "  popq %rbp\n"
  "  movq %rdx, %rax\n"
  "  movq %rdx, %rdi\n"
  /* Not ret: the return stack buffer predicts the caller on the stack
   * we left, and would mispredict every switch; an indirect jump is
   * predicted from where it went last (Boost.Context does the same). */
  "  popq %r8\n"
  "  " WS_NOTRACK "jmp *%r8\n"
  ".cfi_endproc\n"
  ".size ws_fiber_switch_raw, .-ws_fiber_switch_raw\n"
  "\n"
  ".globl ws_fiber_trampoline\n"
  ".hidden ws_fiber_trampoline\n"
  ".type ws_fiber_trampoline,@function\n"
  ".p2align 4\n"
  "ws_fiber_trampoline:\n"
  ".cfi_startproc\n"
  ".cfi_undefined rip\n"
  WS_ENDBR
  "  xorl %ebp, %ebp\n"
  "  callq *%rbx\n"
  /* The entry returned: %rax is where the poller's stack pointer is
   * saved. The fiber's last switch, with a ret (see "Returns" at the
   * top): the poller's side as ws_fiber_switch_raw restores it. */
  "  movq (%rax), %rsp\n"
  "  ldmxcsr (%rsp)\n"
  "  fldcw 4(%rsp)\n"
  "  addq $8, %rsp\n"
  "  popq %r15\n"
  "  popq %r14\n"
  "  popq %r13\n"
  "  popq %r12\n"
  "  popq %rbx\n"
  "  popq %rbp\n"
  "  ret\n"
  ".cfi_endproc\n"
  ".size ws_fiber_trampoline, .-ws_fiber_trampoline\n"
);

/* The saved frame, from the saved stack pointer up: MXCSR and x87 control
 * word (8 bytes), r15, r14, r13, r12, rbx, rbp, return address. */
#  define FRAME_WORDS 8

static gpointer
prepare_stack (gpointer top,
               gpointer start)
{
  /* After the ret, the stack pointer is @top - 16, 16-aligned, so that
   * the trampoline's call leaves it where the ABI expects at a function's
   * entry. */
  guint64 *sp = (guint64 *) top - 2 - FRAME_WORDS;

  /* MXCSR 0x1f80 (all exceptions masked) in the low half, the x87
   * control word's default 0x037f in the high one. */
  sp[0] = ((guint64) 0x037f << 32) | 0x1f80;
  sp[1] = sp[2] = sp[3] = sp[4] = 0;         /* r15, r14, r13, r12 */
  sp[5] = (guint64) (guintptr) start;        /* rbx */
  sp[6] = 0;                                 /* rbp */
  sp[7] = (guint64) (guintptr) ws_fiber_trampoline;
  sp[8] = sp[9] = 0;
  return sp;
}

#  define WS_FIBER_SWITCH_KIND "x86_64"

# elif defined(__aarch64__)

__asm__ (
  ".text\n"
  ".globl ws_fiber_switch_raw\n"
  ".hidden ws_fiber_switch_raw\n"
  ".type ws_fiber_switch_raw,%function\n"
  ".p2align 4\n"
  "ws_fiber_switch_raw:\n"
  ".cfi_startproc\n"
  "  sub sp, sp, #160\n"
  "  stp d8, d9, [sp, #0]\n"
  "  stp d10, d11, [sp, #16]\n"
  "  stp d12, d13, [sp, #32]\n"
  "  stp d14, d15, [sp, #48]\n"
  "  stp x19, x20, [sp, #64]\n"
  "  stp x21, x22, [sp, #80]\n"
  "  stp x23, x24, [sp, #96]\n"
  "  stp x25, x26, [sp, #112]\n"
  "  stp x27, x28, [sp, #128]\n"
  "  stp x29, x30, [sp, #144]\n"
  "  mov x9, sp\n"
  "  str x9, [x0]\n"
  "  mov sp, x1\n"
  "  ldp d8, d9, [sp, #0]\n"
  "  ldp d10, d11, [sp, #16]\n"
  "  ldp d12, d13, [sp, #32]\n"
  "  ldp d14, d15, [sp, #48]\n"
  "  ldp x19, x20, [sp, #64]\n"
  "  ldp x21, x22, [sp, #80]\n"
  "  ldp x23, x24, [sp, #96]\n"
  "  ldp x25, x26, [sp, #112]\n"
  "  ldp x27, x28, [sp, #128]\n"
  "  ldp x29, x30, [sp, #144]\n"
  "  add sp, sp, #160\n"
  "  mov x0, x2\n"
  "  ret\n"
  ".cfi_endproc\n"
  ".size ws_fiber_switch_raw, .-ws_fiber_switch_raw\n"
  "\n"
  ".globl ws_fiber_trampoline\n"
  ".hidden ws_fiber_trampoline\n"
  ".type ws_fiber_trampoline,%function\n"
  ".p2align 4\n"
  "ws_fiber_trampoline:\n"
  ".cfi_startproc\n"
  ".cfi_undefined x30\n"
  "  mov x29, #0\n"
  "  blr x19\n"
  /* The entry returned: x0 is where the poller's stack pointer is saved;
   * the last switch, as ws_fiber_switch_raw restores that side. */
  "  ldr x9, [x0]\n"
  "  mov sp, x9\n"
  "  ldp d8, d9, [sp, #0]\n"
  "  ldp d10, d11, [sp, #16]\n"
  "  ldp d12, d13, [sp, #32]\n"
  "  ldp d14, d15, [sp, #48]\n"
  "  ldp x19, x20, [sp, #64]\n"
  "  ldp x21, x22, [sp, #80]\n"
  "  ldp x23, x24, [sp, #96]\n"
  "  ldp x25, x26, [sp, #112]\n"
  "  ldp x27, x28, [sp, #128]\n"
  "  ldp x29, x30, [sp, #144]\n"
  "  add sp, sp, #160\n"
  "  ret\n"
  ".cfi_endproc\n"
  ".size ws_fiber_trampoline, .-ws_fiber_trampoline\n"
);

/* The saved frame, from the saved stack pointer up: d8-d15, x19-x28,
 * x29, x30 (the return address). */
#  define FRAME_WORDS 20

static gpointer
prepare_stack (gpointer top,
               gpointer start)
{
  guint64 *sp = (guint64 *) top - FRAME_WORDS;

  memset (sp, 0, FRAME_WORDS * sizeof (guint64));
  sp[8] = (guint64) (guintptr) start;        /* x19 */
  sp[19] = (guint64) (guintptr) ws_fiber_trampoline;  /* x30 */
  return sp;
}

#  define WS_FIBER_SWITCH_KIND "aarch64"

# endif

#endif /* !WS_FIBER_SWITCH_UCONTEXT */

/* ---- the sides ----------------------------------------------------------- */

/* The first code a fiber runs: completes the switch for the sanitizers,
 * then runs the entry. If the entry returns, the fiber exits: from here
 * through ws_fiber_ctx_exit () under the sanitizers (whose bookkeeping of
 * the switch must come last on the fiber's side) and with ucontext;
 * otherwise by returning the address of the poller's saved stack
 * pointer to the trampoline, which switches there ("Returns" at the
 * top). */
static gpointer *
fiber_start (WsFiberCtx *ctx)
{
#ifdef WS_ASAN
  __sanitizer_finish_switch_fiber (NULL, &ctx->poller.stack_bottom, &ctx->poller.stack_size);
#endif
  ctx->entry (ctx->entry_arg);
#if defined(WS_ASAN) || defined(WS_TSAN) || defined(WS_FIBER_SWITCH_UCONTEXT)
  ws_fiber_ctx_exit (ctx);
#else
# ifdef WS_HAVE_UCONTEXT
  if (ctx->uc != NULL)
    ws_fiber_ctx_exit (ctx);
# endif
  return &ctx->poller.sp;
#endif
}

#ifdef WS_HAVE_UCONTEXT

/* makecontext () passes ints: the pointer comes in two halves. */
static void
ucontext_start (unsigned int hi,
                unsigned int lo)
{
  guintptr p = ((guintptr) hi << 16 << 16) | (guintptr) lo;

  fiber_start ((WsFiberCtx *) p);
  g_assert_not_reached ();
}

#endif

#ifdef WS_FIBER_SWITCH_UCONTEXT
# define WS_FIBER_SWITCH_KIND "ucontext"
#endif

/* ---- which switch -------------------------------------------------------- */

#ifdef WS_HAVE_SHSTK_FALLBACK

# define WS_ARCH_SHSTK_STATUS 0x5005 /* arch_prctl: the enabled features */
# define WS_ARCH_SHSTK_SHSTK  1      /* of which: the shadow stack */

enum
{
  SWITCH_UNKNOWN,
  SWITCH_RAW,
  SWITCH_UCONTEXT,
};

/* Relaxed: every thread that decides stores the same answer (the state
 * is the process's, see the top), and nothing is published with it. */
static _Atomic int switch_mode;

/* Whether the calling thread's shadow stack is enforced (see the top). */
static gboolean
shadow_stack_enforced (void)
{
  guint64 ssp = 0;
  unsigned long features = 0;

  __asm__ __volatile__ ("rdsspq %0" : "+r" (ssp));
  if (ssp != 0)
    return TRUE;
  return syscall (SYS_arch_prctl, WS_ARCH_SHSTK_STATUS, &features) == 0
         && (features & WS_ARCH_SHSTK_SHSTK) != 0;
}

static gboolean
uses_ucontext (void)
{
  int mode = atomic_load_explicit (&switch_mode, memory_order_relaxed);

  if G_UNLIKELY (mode == SWITCH_UNKNOWN)
    {
      int expected = SWITCH_UNKNOWN;

      mode = shadow_stack_enforced () ? SWITCH_UCONTEXT : SWITCH_RAW;
      if (!atomic_compare_exchange_strong_explicit (&switch_mode, &expected, mode,
                                                    memory_order_relaxed,
                                                    memory_order_relaxed))
        mode = expected;
    }
  return mode == SWITCH_UCONTEXT;
}

/* The shadow stack that makecontext () mapped for a fiber that has
 * exited or never ran (see the top): glibc leaves it mapped. */
static void
unmap_shadow_stack (ucontext_t *uc)
{
# if __GLIBC_PREREQ (2, 28)
  if (uc->__ssp[1] != 0 && uc->__ssp[2] != 0 && shadow_stack_enforced ())
    munmap ((gpointer) (guintptr) uc->__ssp[1], uc->__ssp[2]);
# endif
}

#elif defined(WS_FIBER_SWITCH_UCONTEXT)
# define uses_ucontext() TRUE
# define unmap_shadow_stack(uc) ((void) (uc))
#else
# define uses_ucontext() FALSE
#endif

const char *
ws_fiber_switch_get_kind (void)
{
#ifdef WS_HAVE_SHSTK_FALLBACK
  if (uses_ucontext ())
    return "ucontext";
#endif
  return WS_FIBER_SWITCH_KIND;
}

gboolean
ws_fiber_switch_force_ucontext (void)
{
#ifdef WS_HAVE_SHSTK_FALLBACK
  atomic_store_explicit (&switch_mode, SWITCH_UCONTEXT, memory_order_relaxed);
  return TRUE;
#elif defined(WS_FIBER_SWITCH_UCONTEXT)
  return TRUE;
#else
  return FALSE;
#endif
}

/**
 * ws_fiber_ctx_init:
 * @ctx: the fiber's switch state
 * @stack: the stack it will run on, owned by the fiber until it exits
 * @entry: what its first resume runs; the fiber exits when it returns or
 *   calls ws_fiber_ctx_exit ()
 * @arg: @entry's argument
 */
void
ws_fiber_ctx_init (WsFiberCtx   *ctx,
                   WsFiberStack *stack,
                   WsFiberEntry  entry,
                   gpointer      arg)
{
  /* Every field, one store each: no memset, once per fiber. The poller's
   * side is written by each resume before it is read. */
  ctx->fiber.sp = NULL;
  ctx->fiber.asan_fake_stack = NULL;
  ctx->fiber.stack_bottom = ws_fiber_stack_bottom (stack);
  ctx->fiber.stack_size = (guint8 *) ws_fiber_stack_top (stack)
                          - (guint8 *) ws_fiber_stack_bottom (stack);
  ctx->fiber.tsan_fiber = NULL;
  ctx->poller.sp = NULL;
  ctx->poller.asan_fake_stack = NULL;
  ctx->poller.stack_bottom = NULL;
  ctx->poller.stack_size = 0;
  ctx->poller.tsan_fiber = NULL;
  ctx->stack = stack;
  ctx->entry = entry;
  ctx->entry_arg = arg;
  ctx->uc = NULL;
  ctx->outer = NULL;
  ctx->task = NULL;
  ctx->func = NULL;
#ifdef WS_HAVE_UCONTEXT
  if (uses_ucontext ())
    {
      guintptr p = (guintptr) ctx;
      WsFiberUcontexts *uc = g_new0 (WsFiberUcontexts, 1);

      ctx->uc = uc;
      getcontext (&uc->fiber);
      uc->fiber.uc_stack.ss_sp = (gpointer) ctx->fiber.stack_bottom;
      uc->fiber.uc_stack.ss_size = ctx->fiber.stack_size;
      uc->fiber.uc_link = NULL;
      makecontext (&uc->fiber, (void (*) (void)) ucontext_start, 2,
                   (unsigned int) (p >> 16 >> 16), (unsigned int) p);
    }
#endif
#ifndef WS_FIBER_SWITCH_UCONTEXT
  if (ctx->uc == NULL)
    ctx->fiber.sp = prepare_stack (ws_fiber_stack_top (stack), (gpointer) fiber_start);
#endif
#ifdef WS_TSAN
  ctx->fiber.tsan_fiber = __tsan_create_fiber (0);
#endif
}

/**
 * ws_fiber_ctx_clear:
 * @ctx: a fiber that has exited, or was never resumed
 *
 * Frees what the sanitizers kept for the fiber. The stack is the
 * caller's to release.
 */
void
ws_fiber_ctx_clear (WsFiberCtx *ctx)
{
#ifdef WS_TSAN
  if (ctx->fiber.tsan_fiber != NULL)
    __tsan_destroy_fiber (ctx->fiber.tsan_fiber);
#endif
  ctx->fiber.tsan_fiber = NULL;
#ifdef WS_HAVE_UCONTEXT
  if (ctx->uc != NULL)
    {
      unmap_shadow_stack (&ctx->uc->fiber);
      g_clear_pointer (&ctx->uc, g_free);
    }
#endif
  ctx->stack = NULL;
}

/* From the poller to the fiber (@to_fiber) or back; returns when
 * something switches back. */
static inline void
switch_sides (WsFiberCtx *ctx,
              gboolean    to_fiber)
{
#ifdef WS_HAVE_UCONTEXT
  if (ctx->uc != NULL)
    {
      if (to_fiber)
        swapcontext (&ctx->uc->poller, &ctx->uc->fiber);
      else
        swapcontext (&ctx->uc->fiber, &ctx->uc->poller);
      WS_COMPILER_BARRIER ();
      return;
    }
#endif
#ifndef WS_FIBER_SWITCH_UCONTEXT
  if (to_fiber)
    ws_fiber_switch_raw (&ctx->poller.sp, ctx->fiber.sp, ctx);
  else
    ws_fiber_switch_raw (&ctx->fiber.sp, ctx->poller.sp, ctx);
#endif
  WS_COMPILER_BARRIER ();
}

/**
 * ws_fiber_ctx_resume:
 * @ctx: a fiber, suspended or never run
 *
 * Runs the fiber on the calling thread until it suspends or exits. The
 * caller holds the fiber's task RUNNING (ws-fiber.c).
 */
G_GNUC_NO_INLINE void
ws_fiber_ctx_resume (WsFiberCtx *ctx)
{
  /* The poller's side: this thread, before and after the switch. */
  ws_fiber_overflow_prepare_thread ();
  ctx->outer = ws_thread.fiber;
  ws_thread.fiber = ctx;
#ifdef WS_TSAN
  ctx->poller.tsan_fiber = __tsan_get_current_fiber ();
  __tsan_switch_to_fiber (ctx->fiber.tsan_fiber, 0);
#endif
#ifdef WS_ASAN
  __sanitizer_start_switch_fiber (&ctx->poller.asan_fake_stack, ctx->fiber.stack_bottom,
                                  ctx->fiber.stack_size);
#endif
  switch_sides (ctx, TRUE);
#ifdef WS_ASAN
  __sanitizer_finish_switch_fiber (ctx->poller.asan_fake_stack, NULL, NULL);
#endif
  ws_thread.fiber = ctx->outer;
}

/**
 * ws_fiber_ctx_suspend:
 * @ctx: the fiber the caller runs on
 *
 * Switches back to the poller that resumed the fiber; returns when a
 * poller, maybe on another thread, resumes it.
 */
G_GNUC_NO_INLINE void
ws_fiber_ctx_suspend (WsFiberCtx *ctx)
{
#ifdef WS_TSAN
  __tsan_switch_to_fiber (ctx->poller.tsan_fiber, 0);
#endif
#ifdef WS_ASAN
  __sanitizer_start_switch_fiber (&ctx->fiber.asan_fake_stack, ctx->poller.stack_bottom,
                                  ctx->poller.stack_size);
#endif
  switch_sides (ctx, FALSE);
#ifdef WS_ASAN
  __sanitizer_finish_switch_fiber (ctx->fiber.asan_fake_stack, &ctx->poller.stack_bottom,
                                   &ctx->poller.stack_size);
#endif
}

/**
 * ws_fiber_ctx_exit:
 * @ctx: the fiber the caller runs on, whose entry is done
 *
 * The fiber's last switch: back to its poller, for good.
 */
void
ws_fiber_ctx_exit (WsFiberCtx *ctx)
{
#ifdef WS_TSAN
  __tsan_switch_to_fiber (ctx->poller.tsan_fiber, 0);
#endif
#ifdef WS_ASAN
  /* No fake stack to keep: ASan frees the fiber's. */
  __sanitizer_start_switch_fiber (NULL, ctx->poller.stack_bottom, ctx->poller.stack_size);
#endif
  switch_sides (ctx, FALSE);
  g_assert_not_reached ();
}
