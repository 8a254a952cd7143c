/* ws-thread-private.h: everything the core keeps per thread, in one place
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One thread-local struct instead of a variable per module: what a thread
 * is to the runtime (a worker, a blocking thread, a local dispatch, or
 * none of them) can be read in one place, and a new piece of per-thread
 * state has an obvious home. Each member is written only by the thread
 * it belongs to, so none of them needs an atomic.
 *
 * This header sits at the bottom of the core: it names the types of the
 * modules above it only through incomplete struct declarations, and
 * includes nothing of theirs. *
 * What a thread must give back when it exits is not here but in the
 * module that owns it, each with a GPrivate key of its own whose
 * destructor gives it back: the task allocator's magazines
 * (ws-task-allocator.c), the registry's counter slot
 * (ws-task-registry.c), the fiber-stack cache (ws-fiber-stack.c), the
 * owed-completions source cache (ws-owed.c) and the face's delivery
 * source cache (ws-delivery.c). Why not one destructor here:
 *
 *  - C11 _Thread_local has no destructor, and GPrivate's is the thread
 *    exit hook GLib gives (on a thread GLib did not start too);
 *  - this module would have to call into every one of them, which sit
 *    above it (and ws-delivery.c in the GObject face, which the core may
 *    not call): an include cycle that tools/check-layers refuses;
 *  - a key is set only by a thread that first used the module, so a
 *    thread that never did pays nothing at its exit.
 *
 * The destructors run in no fixed order, so each gives back only its
 * own module's state, and a module that another destructor may still use
 * says what happens then (a task freed by a later destructor goes
 * straight back to malloc: exit_state in ws-task-allocator.c).
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The per-thread pointers of the core are read on every spawn and wake.
 * The default TLS model of a shared library calls __tls_get_addr for each
 * read; initial-exec is one load off %fs. It takes a few bytes of the
 * static TLS surplus that glibc keeps for libraries loaded later (as
 * GObject-Introspection does), so the struct stays small. */
#define WS_TLS_INITIAL_EXEC __attribute__ ((tls_model ("initial-exec")))

struct _WsWorker;
struct _WsBlockingPool;
struct _WsRuntimeRef;
struct _WsFiberCtx;
struct _WsFiberStack;
struct _WsFiberStackPool;

/* A block of the task allocator while it is cached: its first words
 * link it (ws-task-allocator.c). */
typedef struct _WsFreeBlock WsFreeBlock;
struct _WsFreeBlock
{
  WsFreeBlock *next;                 /* the next block of its magazine */
  WsFreeBlock *next_magazine;        /* in the depot, on a first block */
};

/* The task allocator's magazines (ws-task-allocator.c). */
typedef struct
{
  WsFreeBlock *current;              /* allocate from here, free to here */
  guint        n_current;
  WsFreeBlock *full;                 /* a full magazine, or NULL */
  guint8       exit_state;           /* see ws-task-allocator.c */
  /* Of current's blocks, the bottom n_remote (<= n_current) came in a
   * magazine from the depot; of full's, n_remote_full (zero_block ()). */
  guint8       n_remote;
  guint8       n_remote_full;
} WsThreadTaskCache;

/* A worker thread's cache of fiber stacks (ws-fiber-stack.c). */
typedef struct
{
  struct _WsFiberStackPool   *pool;  /* NULL until the first release */
  struct _WsFiberStack       *head;
  guint                       n;
  guint                       n_dirty; /* of these, not trimmed since used */
  guint8                      exit_state; /* see ws-fiber-stack.c */
} WsThreadStackCache;

typedef struct
{
  WsThreadTaskCache           task_cache;
  /* Those of its large blocks; exit_state unused (task_cache's holds). */
  WsThreadTaskCache           task_cache_large;
  /* And of its small blocks; exit_state unused too. */
  WsThreadTaskCache           task_cache_small;
  /* And of its tailed tasks' blocks; exit_state unused too. */
  WsThreadTaskCache           task_cache_tailed;
  /* This thread's slot in the spawn gates (ws-task-registry.c), 1-based;
   * 0 until the first spawn. */
  guint                       registry_slot;
  /* This thread's counter slot in every task registry, 1-based; 0 until
   * the first count (ws-task-registry.c, "Counter slots"). */
  guint                       counter_slot;
  /* The worker this thread runs now (ws-worker.c); NULL once a
   * ws_block_in_place () gave the worker's core to another thread. */
  struct _WsWorker           *worker;
  /* The runtime whose code this thread runs (a worker, a blocking
   * thread, a local dispatch, shutdown's own sweep): a shutdown called
   * from such a thread must not wait for itself. */
  const struct _WsRuntimeRef *runtime;
  /* The blocking pool this thread serves (ws-blocking-pool.c). */
  struct _WsBlockingPool     *blocking_pool;
  /* The thread-default context that a thread leaving ws_block_in_place ()
   * took; the blocking pool adopts it with the thread. */
  GMainContext               *adopted_context;
  /* Inside a local executor's dispatch (ws-local-executor.c). */
  gboolean                    in_local_dispatch;
  /* Where the timers of the task this thread polls go when the thread is
   * not running a worker's core (ws-timer-driver.c): the local
   * executor's context during its dispatch, the context of the core that
   * ws_block_in_place () handed off for the rest of that poll. Not a
   * reference: the polled task holds its host, which holds the context. */
  GMainContext               *host_context;
  /* Task references on the runtime's count that this thread holds
   * unassigned (ws-runtime-ref-private.h): its tasks take and give back
   * from here, not from the shared count. Owner NULL: none. */
  struct _WsRuntimeRef       *ref_credit_owner;
  gint                        ref_credit;
  /* The schedule perturbation's generator (ws-chaos.c). */
  guint64                     chaos_rng;
  /* The fiber this thread runs now, innermost (ws-fiber-switch.c): set on
   * the poller's side of a resume and restored after it. The overflow
   * handler reads it in a signal handler (ws-fiber-overflow.c), which the
   * initial-exec model makes one load. */
  const struct _WsFiberCtx   *fiber;
  /* The fiber stacks this thread keeps for reuse, when it is a worker. */
  WsThreadStackCache          stack_cache;
  /* This thread's alternate signal stack for that handler, by
   * ws-fiber-overflow.c's enum: 0 until the thread first resumes a fiber. */
  guint8                      altstack;
  /* WS_DEBUG only: the time of the polls run inside the one this thread
   * is in (ws-raw-task.c, debug_poll_begin). */
  gint64                      debug_nested_usec;
} WsThread;

extern _Thread_local WsThread ws_thread WS_TLS_INITIAL_EXEC;

G_END_DECLS
