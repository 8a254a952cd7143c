/* ws-fiber-overflow.c: a message naming the fiber whose stack overflowed
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A fiber that overflows its stack runs into the guard below it
 * (ws-fiber-stack.c) and the kernel sends SIGSEGV. Without help the
 * process dies with "Segmentation fault" and nothing that says which
 * fiber, or that a stack size is the fix. So wsrt installs a SIGSEGV
 * handler that runs on an alternate signal stack (a handler cannot run on
 * the stack that overflowed) and, when the fault address is in the guard
 * of a fiber that the faulting thread runs, writes one line to stderr
 * naming the fiber's task and function and its stack size, then lets the
 * process die as it would have.
 *
 * The rules, so that an application's own handling is unchanged:
 *
 *  - Installed once per process, when the first fiber is first resumed
 *    (ws_fiber_ctx_resume); a process without fibers never sees it. The
 *    handler that was there before is kept and called for every SIGSEGV
 *    that is not a fiber's overflow, with the arguments the kernel gave
 *    (with SA_SIGINFO or without), on the alternate stack; a default or
 *    ignored action is put back and the signal is raised again, so the
 *    process dies as it would have. A handler the application installs
 *    after ours replaces ours, as any handler does.
 *  - On an overflow, after the message, the previous action is put back
 *    and the handler returns: the faulting instruction runs again and
 *    faults under that action, which is the default's death by SIGSEGV
 *    (with a core dump) unless the application had a handler of its own.
 *  - The handler is async-signal-safe: it reads the faulting thread's
 *    running fiber from the core's initial-exec thread-local struct
 *    (ws_thread.fiber, one load), formats into a buffer on the alternate
 *    stack and calls write (2) and sigaction (2). No malloc, no stdio.
 *  - Every thread that resumes a fiber (a worker, a main loop's thread
 *    running local fibers, a thread that waits for or shuts down a
 *    runtime) gets an alternate signal stack before its first resume,
 *    unless it has one already (the application's, or a sanitizer's),
 *    which is then used. Ours is unmapped when the thread exits (a
 *    GPrivate destructor: the core's ws_thread struct has none of its
 *    own), after it is switched off, if it is still the thread's.
 *  - AddressSanitizer installs its own SIGSEGV handler on its own
 *    alternate stack and reports a stack overflow itself; under ASan
 *    wsrt installs nothing. Under ThreadSanitizer, which intercepts
 *    sigaction, wsrt's handler runs, and putting the previous action back
 *    hands the second fault to TSan's own handler, which reports it.
 *
 * The message names the task by its address (a WsJoinHandle is that
 * address) and the fiber's function by its address (gdb's "info symbol"
 * names it): looking a symbol up is not safe in a signal handler.
 */

#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ws-fiber-overflow-private.h"
#include "ws-fiber-switch-private.h"
#include "ws-thread-private.h"

#if defined(__SANITIZE_ADDRESS__)
# define WS_ASAN 1
#elif defined(__has_feature)
# if __has_feature(address_sanitizer)
#  define WS_ASAN 1
# endif
#endif

/* The alternate stack: the handler needs about a page, and a chained
 * handler (a crash reporter) more; the kernel's signal frame with AVX-512
 * state is about 3.5 KiB. Reserved, not committed. */
#define ALTSTACK_SIZE (64 * 1024)

enum
{
  ALTSTACK_NONE,                     /* not set up on this thread yet */
  ALTSTACK_OURS,
  ALTSTACK_THEIRS,                   /* the thread had one, or mmap failed */
};

/* The action before ours; written once, before ours is installed, and
 * read by the handler only after (sigaction orders them). */
static struct sigaction previous;
/* Relaxed: a test hook's flag; the install itself is under g_once. */
static _Atomic gboolean installed;

/* ---- the handler --------------------------------------------------------- */

typedef struct
{
  char  buf[512];
  gsize len;
} Line;

static void
line_add (Line       *line,
          const char *s)
{
  gsize n = strlen (s);

  if (n > sizeof line->buf - line->len)
    n = sizeof line->buf - line->len;
  memcpy (line->buf + line->len, s, n);
  line->len += n;
}

static void
line_add_hex (Line      *line,
              guintptr   value)
{
  char digits[2 + 2 * sizeof (guintptr) + 1];
  char *p = digits + sizeof digits - 1;

  *p = '\0';
  do
    {
      *--p = "0123456789abcdef"[value & 15];
      value >>= 4;
    }
  while (value != 0);
  *--p = 'x';
  *--p = '0';
  line_add (line, p);
}

static void
line_add_uint (Line  *line,
               gsize  value)
{
  char digits[24];
  char *p = digits + sizeof digits - 1;

  *p = '\0';
  do
    {
      *--p = (char) ('0' + value % 10);
      value /= 10;
    }
  while (value != 0);
  line_add (line, p);
}

static void
report (const WsFiberCtx *ctx,
        gpointer          address)
{
  Line line = { .len = 0 };
  gsize done = 0;

  line_add (&line, "wsrt: a fiber overflowed its stack: task ");
  line_add_hex (&line, (guintptr) ctx->task);
  line_add (&line, ", function ");
  line_add_hex (&line, (guintptr) ctx->func);
  line_add (&line, "; its stack of ");
  line_add_uint (&line, ctx->stack->size);
  line_add (&line, " bytes is full (the fault at ");
  line_add_hex (&line, (guintptr) address);
  line_add (&line, " is in the guard below it). Give the fiber a larger stack "
                   "(the runtime's fiber-stack-size, or ws_runtime_spawn_fiber_full()) "
                   "or move large buffers to the heap.\n");
  while (done < line.len)
    {
      gssize n = write (STDERR_FILENO, line.buf + done, line.len - done);

      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      done += (gsize) n;
    }
}

/* The running fiber of this thread (or one it runs inside) whose guard
 * holds @address, or NULL. */
static const WsFiberCtx *
find_overflowed (gpointer address)
{
  for (const WsFiberCtx *ctx = ws_thread.fiber; ctx != NULL; ctx = ctx->outer)
    {
      const guint8 *guard = ctx->stack->map;

      if ((const guint8 *) address >= guard
          && (const guint8 *) address < guard + WS_FIBER_STACK_GUARD_SIZE)
        return ctx;
    }
  return NULL;
}

/* Puts the default action back; a signal that no fault will send again
 * (raise, kill) is raised again, and is delivered when the handler
 * returns (it is blocked until then). */
static void
die_by_default (int        sig,
                siginfo_t *info)
{
  struct sigaction dfl;

  memset (&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset (&dfl.sa_mask);
  sigaction (sig, &dfl, NULL);
  if (info->si_code <= 0)
    raise (sig);
}

/* Not an overflow of ours: what the previous action would have done. */
static void
chain (int        sig,
       siginfo_t *info,
       void      *uctx)
{
  if (previous.sa_handler == SIG_IGN)
    {
      /* An ignored SIGSEGV that a fault sent kills all the same. */
      if (info->si_code > 0)
        die_by_default (sig, info);
      return;
    }
  if (previous.sa_handler == SIG_DFL)
    {
      die_by_default (sig, info);
      return;
    }
  if (previous.sa_flags & SA_SIGINFO)
    previous.sa_sigaction (sig, info, uctx);
  else
    previous.sa_handler (sig);
}

static void
on_segv (int        sig,
         siginfo_t *info,
         void      *uctx)
{
  int saved_errno = errno;
  const WsFiberCtx *ctx = NULL;

  /* Only a fault's address means anything (si_code > 0: the kernel's). */
  if (info != NULL && info->si_code > 0)
    ctx = find_overflowed (info->si_addr);
  if (ctx != NULL)
    {
      report (ctx, info->si_addr);
      /* The instruction faults again under the previous action. */
      if (previous.sa_handler == SIG_IGN)
        die_by_default (sig, info);
      else
        sigaction (sig, &previous, NULL);
    }
  else
    chain (sig, info, uctx);
  errno = saved_errno;
}

/* ---- installing it ------------------------------------------------------- */

static void
install (void)
{
  struct sigaction action;

  memset (&action, 0, sizeof action);
  action.sa_sigaction = on_segv;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset (&action.sa_mask);
  if (sigaction (SIGSEGV, NULL, &previous) != 0)
    return;
  if (sigaction (SIGSEGV, &action, NULL) != 0)
    return;
  atomic_store_explicit (&installed, TRUE, memory_order_relaxed);
}

static void
altstack_free (gpointer data)
{
  stack_t current;

  /* Switched off only if it is still ours, and not in use. */
  if (sigaltstack (NULL, &current) == 0 && current.ss_sp == data
      && !(current.ss_flags & SS_ONSTACK))
    {
      stack_t off;

      memset (&off, 0, sizeof off);
      off.ss_flags = SS_DISABLE;
      if (sigaltstack (&off, NULL) != 0)
        return;
    }
  else if (current.ss_sp == data)
    return;
  munmap (data, ALTSTACK_SIZE);
}

static GPrivate altstack_key = G_PRIVATE_INIT (altstack_free);

static void
set_up_altstack (void)
{
  stack_t current;
  stack_t ours;
  gpointer map;

  ws_thread.altstack = ALTSTACK_THEIRS;
  if (sigaltstack (NULL, &current) != 0 || !(current.ss_flags & SS_DISABLE))
    return;
  map = mmap (NULL, ALTSTACK_SIZE, PROT_READ | PROT_WRITE,
              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (map == MAP_FAILED)
    return;
  memset (&ours, 0, sizeof ours);
  ours.ss_sp = map;
  ours.ss_size = ALTSTACK_SIZE;
  if (sigaltstack (&ours, NULL) != 0)
    {
      munmap (map, ALTSTACK_SIZE);
      return;
    }
  ws_thread.altstack = ALTSTACK_OURS;
  g_private_set (&altstack_key, map);
}

/**
 * ws_fiber_overflow_prepare_thread:
 *
 * Called on a thread before it resumes a fiber (see the top).
 */
void
ws_fiber_overflow_prepare_thread (void)
{
#ifdef WS_ASAN
  /* Not installed under ASan, which reports the overflow itself. */
  (void) install;
  (void) set_up_altstack;
#else
  static gsize once;

  if G_LIKELY (ws_thread.altstack != ALTSTACK_NONE)
    return;
  if (g_once_init_enter (&once))
    {
      install ();
      g_once_init_leave (&once, 1);
    }
  set_up_altstack ();
#endif
}

gboolean
ws_fiber_overflow_is_installed (void)
{
  return atomic_load_explicit (&installed, memory_order_relaxed);
}
