/* ws-offload.c: one blocking syscall run off the calling thread
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A runtime makes one WsOffload at its first offloaded call
 * (ws_runtime_core_get_offload) and frees it at its last unref. A call is
 * a WsOffloadOp that the caller owns (a fiber keeps it on its stack): no
 * task, no allocation per call. Two backends run it:
 *
 *  - io_uring (liburing, when built with it): one ring per runtime. A
 *    submission takes `sq_lock`, fills one SQE whose user data is the op
 *    and submits it; one reaper thread waits in the kernel until the CQ
 *    holds a completion and ends each op whose CQE it takes. The kernel
 *    runs a call that need not wait (a read of cached pages, a write to a
 *    pipe with room, most closes) within the submission, so its CQE is
 *    there when the submission returns: the submitter then takes what
 *    the CQ holds itself (uring_reap_own), and its own op, ended before
 *    it would wait, returns without the two wakes of sleeping threads
 *    (the reaper's, then the caller's) on its path. The CQ has these two
 *    kinds of consumer and `cq_lock` lets one take at a time, each CQE
 *    exactly once (reading the head and advancing it are two steps); a
 *    submitter that finds the lock held leaves the CQ to its holder. The reaper's wait is
 *    io_uring_enter (GETEVENTS), which reads nothing of the CQ in user
 *    space; what it saw may be gone once it locks, and then it waits
 *    again. A submitter ends other callers' ops as the reaper does, and
 *    the offload outlives that: the submitter's own task holds the
 *    runtime. models/offload-uring.pml checks the two consumers, the
 *    wakeless end of a submitter's own op and the stop request that only
 *    the reaper takes. Chosen when io_uring_queue_init ()
 *    succeeds (a kernel too old, a seccomp filter or
 *    kernel.io_uring_disabled make it fail), the kernel keeps completions
 *    that overflow the CQ (IORING_FEAT_NODROP), reads at the file
 *    position (IORING_FEAT_RW_CUR_POS) and has every opcode used here;
 *    WS_IO_URING=0 in the environment, or ws_offload_set_force_threads (),
 *    chooses the threads instead, and so does running under valgrind
 *    (under_valgrind ()): valgrind runs one thread at a time and does not
 *    let go of its lock while the reaper waits in io_uring_enter (), so
 *    every other thread of the process would stop with it. The workers never enter the kernel to
 *    wait: the reaper does, and the kernel runs a call that would block
 *    on its own io-wq threads.
 *  - Threads: a few threads of the offload's own (not the blocking pool's:
 *    its jobs are tasks, and its admission rule delays jobs that compute,
 *    while a syscall here only waits). A submission hands the op to an
 *    idle thread if there is one (the one idle last), starts a thread for
 *    it if there are fewer than max_threads, or queues it for the next
 *    thread that is done. A thread that is done takes the next queued op,
 *    or else lists itself idle. It chooses before it ends the op (and so
 *    wakes its caller), so that a caller that calls again at once finds
 *    it idle rather than starting another. An idle thread leaves once it
 *    has been unused for SURPLUS_GRACE_USEC while another thread is idle
 *    too, and the last idle one (the standby) after
 *    STANDBY_KEEP_ALIVE_USEC. So:
 *      - a thread is started only when every thread runs a call, so
 *        n_threads <= n_in_flight just after a start, and the threads
 *        never outnumber the most calls in flight at once (nor
 *        max_threads);
 *      - once fewer calls are in flight, the threads beyond them and one
 *        standby leave within SURPLUS_GRACE_USEC.
 *    The grace keeps two callers that alternate (a reader and a writer)
 *    on two threads and a standby, where leaving at once would start and
 *    end a thread every few calls. n_in_flight counts the ops submitted
 *    and not yet ended; peak_threads and peak_in_flight, the most seen
 *    under `lock`, are for the tests. A thread that cannot be started
 *    runs the op on the caller's thread instead: slower, never stranded.
 *
 * The end of an op (op_end), the same for both backends: its result is
 * written, then `done` is set, then its waker is woken and released
 * (only released for an op its own submitter ends before it would wait,
 * uring_reap_own). The
 * op belongs to its caller again from the moment `done` can be seen, so
 * nothing touches the op after that store: the waker was taken out
 * before. A caller that may not suspend (a cancelled fiber unwinding)
 * waits in ws_offload_wait (): it counts itself in n_blocking_waiters,
 * then waits on `waiter_cond` under `lock` for `done`; op_end, after its
 * store of `done`, broadcasts if it sees a waiter counted. Both the count
 * and `done` are seq_cst, so either op_end sees the waiter or the waiter
 * sees `done` before it waits; the broadcast is under `lock`, so it
 * cannot fall between the waiter's test and its wait. op_end reads only
 * the offload, which outlives every op, after the store.
 *
 * models/offload.pml checks the end of an op against both kinds of
 * waiter, that no queued op is stranded, and the bound on the threads;
 * its broken variants read the waiter count before `done`, take the
 * waker after it, start a thread while one is idle, or leave the queue.
 *
 * Teardown (ws_offload_free) happens at the runtime's last unref, so no
 * op is in flight: each holds its task's waker, and each task holds the
 * runtime. The last unref may come from the waker an offload thread
 * releases in op_end; that thread cannot wait for itself, so it only
 * marks the offload (`free_on_exit`) and frees it when op_end returns,
 * after the other threads have gone.
 */

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_LIBURING
# include <liburing.h>
#endif

#include "ws-offload-private.h"

/* How long the last idle thread of the thread backend stays unused
 * before it leaves, and how long the others do (see the top). */
#define STANDBY_KEEP_ALIVE_USEC (10 * G_USEC_PER_SEC)
#define SURPLUS_GRACE_USEC      (20 * 1000)

#ifdef HAVE_LIBURING
/* Ring sizes: submissions are sent at once, so a small SQ is enough;
 * completions beyond the CQ wait in the kernel (IORING_FEAT_NODROP). */
# define RING_SQ_ENTRIES 256
# define RING_CQ_ENTRIES 4096
/* The user data of the reaper's stop request. */
# define STOP_TAG ((guint64) 1)
#endif

typedef struct _OffloadThread OffloadThread;
struct _OffloadThread
{
  WsCond         cond;               /* signalled when `op` is set, or at close */
  WsOffloadOp   *op;                 /* handed to it while it is idle */
  OffloadThread *next_idle;          /* the idle list's link */
};

struct _WsOffload
{
  gboolean        uring;
#ifdef HAVE_LIBURING
  struct io_uring ring;
  WsLock          sq_lock;           /* guards the SQ */
  WsLock          cq_lock;           /* guards the CQ's consumption */
  GThread        *reaper;
#endif
  _Atomic guint   uring_in_flight;   /* statistics only: relaxed */
  _Atomic guint64 n_ended_by_submitter; /* statistics only: relaxed */

  WsLock          lock;              /* guards what follows */
  WsCond          waiter_cond;       /* ws_offload_wait () */
  _Atomic guint   n_blocking_waiters;
  WsCond          threads_gone;      /* n_threads went down, at close */
  OffloadThread  *idle;              /* idle threads, the last idle first */
  guint           n_idle;
  WsOffloadOp    *queue_head;        /* ops waiting for a thread */
  WsOffloadOp    *queue_tail;
  guint           n_threads;
  guint           max_threads;
  guint           n_in_flight;       /* see the top */
  guint           peak_threads;      /* the most seen, for the tests */
  guint           peak_in_flight;
  gboolean        closing;
  gboolean        free_on_exit;      /* see "Teardown" at the top */
};

/* The offload whose thread this is, if any (see "Teardown"). */
static _Thread_local WsOffload *offload_thread_of;

static _Atomic gboolean force_threads;

void
ws_offload_set_force_threads (gboolean force)
{
  /* Relaxed: read by the next ws_offload_new () of the test's thread. */
  atomic_store_explicit (&force_threads, force, memory_order_relaxed);
}

/* ---- the end of an op ---------------------------------------------- */

/* @wake is FALSE only for an op that its caller ends itself, on its own
 * thread, before it would wait (uring_reap_own): nobody waits for it
 * yet, so its waker is only released. */
static void
op_end_full (WsOffload   *self,
             WsOffloadOp *op,
             gint64       result,
             gboolean     wake)
{
  WsWaker *waker;

  /* Acquire: pairs with the release in ws_offload_submit (). The op
   * reached this thread through the kernel (io_uring's user data) or the
   * offload's lock; the load makes the first an edge of the C memory
   * model too, as the lock is. */
  (void) atomic_load_explicit (&op->done, memory_order_acquire);
  waker = g_steal_pointer (&op->waker);
  op->result = result;
  /* seq_cst: releases the result to the caller's acquire, and orders
   * against the waiter count below (see the top). */
  atomic_store_explicit (&op->done, 1, memory_order_seq_cst);
  /* From here @op is the caller's. */
  if (atomic_load_explicit (&self->n_blocking_waiters, memory_order_seq_cst) > 0)
    {
      ws_lock_lock (&self->lock);
      ws_cond_broadcast (&self->waiter_cond);
      ws_lock_unlock (&self->lock);
    }
  if (wake)
    ws_waker_take_and_wake (waker);
  else if (waker != NULL)
    waker->vtable->unref (waker);
}

static void
op_end (WsOffload   *self,
        WsOffloadOp *op,
        gint64       result)
{
  op_end_full (self, op, result, TRUE);
}

void
ws_offload_wait (WsOffload   *self,
                 WsOffloadOp *op)
{
  if (ws_offload_op_is_done (op))
    return;
  ws_lock_lock (&self->lock);
  /* seq_cst, against op_end's store of `done` (see the top). */
  atomic_fetch_add_explicit (&self->n_blocking_waiters, 1, memory_order_seq_cst);
  while (atomic_load_explicit (&op->done, memory_order_seq_cst) == 0)
    ws_cond_wait (&self->waiter_cond, &self->lock);
  atomic_fetch_sub_explicit (&self->n_blocking_waiters, 1, memory_order_relaxed);
  ws_lock_unlock (&self->lock);
}

/* ---- the thread backend -------------------------------------------- */

/* The syscall itself, on the calling thread: >= 0 or -errno. */
static gint64
op_run (WsOffloadOp *op)
{
  gint64 r;

  do
    {
      switch (op->kind)
        {
        case WS_OFFLOAD_READ:
          r = op->offset >= 0 ? pread (op->fd, op->buf, op->count, op->offset)
                              : read (op->fd, op->buf, op->count);
          break;
        case WS_OFFLOAD_WRITE:
          r = op->offset >= 0 ? pwrite (op->fd, op->buf, op->count, op->offset)
                              : write (op->fd, op->buf, op->count);
          break;
        case WS_OFFLOAD_FSYNC:
          r = fsync (op->fd);
          break;
        case WS_OFFLOAD_OPENAT:
          r = openat (op->fd, op->buf, op->flags, (mode_t) op->mode);
          break;
        case WS_OFFLOAD_CLOSE:
          /* Not retried on EINTR: on Linux the descriptor is gone. */
          r = close (op->fd);
          return r < 0 ? -errno : r;
        default:
          g_assert_not_reached ();
        }
    }
  while (r < 0 && errno == EINTR);
  return r < 0 ? -errno : r;
}

static void
note_peaks_locked (WsOffload *self)
{
  self->peak_threads = MAX (self->peak_threads, self->n_threads);
  self->peak_in_flight = MAX (self->peak_in_flight, self->n_in_flight);
}

/* With `lock` held. */
static void
idle_push_locked (WsOffload     *self,
                  OffloadThread *t)
{
  t->next_idle = self->idle;
  self->idle = t;
  self->n_idle++;
}

/* With `lock` held: takes @t off the idle list, where it is. */
static void
idle_remove_locked (WsOffload     *self,
                    OffloadThread *t)
{
  OffloadThread **link = &self->idle;

  while (*link != t)
    link = &(*link)->next_idle;
  *link = t->next_idle;
  t->next_idle = NULL;
  self->n_idle--;
}

/* With `lock` held: this thread leaves the pool. */
static void
thread_leave_locked (WsOffload     *self,
                     OffloadThread *t)
{
  ws_cond_clear (&t->cond);
  g_free (t);
  self->n_threads--;
  ws_cond_broadcast (&self->threads_gone);
}

/* With `lock` held: the first queued op, or NULL. */
static WsOffloadOp *
queue_pop_locked (WsOffload *self)
{
  WsOffloadOp *op = self->queue_head;

  if (op != NULL)
    {
      self->queue_head = op->next;
      if (self->queue_head == NULL)
        self->queue_tail = NULL;
    }
  return op;
}

static gpointer
offload_thread_main (gpointer data)
{
  OffloadThread *t = data;
  WsOffload *self = offload_thread_of;
  WsOffloadOp *op = g_steal_pointer (&t->op);

  for (;;)
    {
      gint64 result = op_run (op);
      WsOffloadOp *next;
      gint64 idle_since;

      /* What this thread does next is chosen before the op's caller is
       * woken, so that the caller's next call finds it idle instead of
       * starting a thread (see the top). */
      ws_lock_lock (&self->lock);
      self->n_in_flight--;
      next = queue_pop_locked (self);
      if (next == NULL)
        idle_push_locked (self, t);
      ws_lock_unlock (&self->lock);

      op_end (self, op, result);

      ws_lock_lock (&self->lock);
      if (self->free_on_exit)
        break;
      if (next != NULL)
        {
          ws_lock_unlock (&self->lock);
          op = next;
          continue;
        }

      /* Idle: an op is handed to it in `t->op`, maybe while it was still
       * ending the last one. It leaves after the grace if another thread
       * is idle too, after the keep-alive if not, or at close. */
      idle_since = g_get_monotonic_time ();
      while (t->op == NULL && !self->closing)
        {
          gint64 now = g_get_monotonic_time ();

          if (self->n_idle > 1 && now >= idle_since + SURPLUS_GRACE_USEC)
            break;
          if (now >= idle_since + STANDBY_KEEP_ALIVE_USEC)
            break;
          ws_cond_wait_until (&t->cond, &self->lock,
                              idle_since + (self->n_idle > 1 ? SURPLUS_GRACE_USEC
                                                             : STANDBY_KEEP_ALIVE_USEC));
        }
      op = g_steal_pointer (&t->op);
      if (op == NULL)
        {
          /* Still listed: only a submission that hands it an op
           * unlists it. */
          idle_remove_locked (self, t);
          thread_leave_locked (self, t);
          ws_lock_unlock (&self->lock);
          return NULL;
        }
      ws_lock_unlock (&self->lock);
    }

  /* The op it ended dropped the runtime's last reference, and with it
   * the offload (see "Teardown"): the others have gone. */
  g_assert (self->n_threads == 1);
  ws_lock_unlock (&self->lock);
  ws_cond_clear (&t->cond);
  g_free (t);
  ws_lock_clear (&self->lock);
  ws_cond_clear (&self->waiter_cond);
  ws_cond_clear (&self->threads_gone);
  g_free (self);
  return NULL;
}

typedef struct
{
  WsOffload     *self;
  OffloadThread *t;
} ThreadStart;

static gpointer
offload_thread_start (gpointer data)
{
  ThreadStart *start = data;

  offload_thread_of = start->self;
  data = start->t;
  g_free (start);
  return offload_thread_main (data);
}

static void
threads_submit (WsOffload   *self,
                WsOffloadOp *op)
{
  g_autoptr(GError) error = NULL;
  OffloadThread *t;
  ThreadStart *start;
  GThread *thread;

  ws_lock_lock (&self->lock);
  self->n_in_flight++;
  note_peaks_locked (self);
  if (self->idle != NULL)
    {
      t = self->idle;
      idle_remove_locked (self, t);
      t->op = op;
      ws_cond_signal (&t->cond);
      ws_lock_unlock (&self->lock);
      return;
    }
  if (self->n_threads >= self->max_threads)
    {
      op->next = NULL;
      if (self->queue_tail != NULL)
        self->queue_tail->next = op;
      else
        self->queue_head = op;
      self->queue_tail = op;
      ws_lock_unlock (&self->lock);
      return;
    }
  /* Every thread runs a call: n_threads <= n_in_flight after this. */
  self->n_threads++;
  note_peaks_locked (self);
  ws_lock_unlock (&self->lock);

  t = g_new0 (OffloadThread, 1);
  ws_cond_init (&t->cond);
  t->op = op;
  start = g_new (ThreadStart, 1);
  start->self = self;
  start->t = t;
  thread = g_thread_try_new ("ws-offload", offload_thread_start, start, &error);
  if (thread != NULL)
    {
      g_thread_unref (thread);
      return;
    }

  /* No thread: the call runs here rather than not at all. */
  g_free (start);
  ws_cond_clear (&t->cond);
  g_free (t);
  ws_lock_lock (&self->lock);
  self->n_threads--;
  self->n_in_flight--;
  ws_cond_broadcast (&self->threads_gone);
  ws_lock_unlock (&self->lock);
  op_end (self, op, op_run (op));
}

/* ---- the io_uring backend ------------------------------------------ */

#ifdef HAVE_LIBURING

/* Held around the mapping and the unmapping of every ring. liburing
 * maps a ring with raw syscalls, which ThreadSanitizer does not see, so a
 * ring mapped where an earlier one was would look like the same memory
 * written by two threads with nothing between them. Taken by the thread
 * that unmaps a ring after its last use and by the one that maps the next,
 * the lock is that edge; rings are made once per runtime, so it costs
 * nothing that matters. */
static WsLock ring_map_lock = WS_LOCK_INIT;

static void
uring_exit (WsOffload *self)
{
  ws_lock_lock (&ring_map_lock);
  io_uring_queue_exit (&self->ring);
  ws_lock_unlock (&ring_map_lock);
}

static gboolean
uring_try_init (WsOffload *self)
{
  struct io_uring_params params = { 0 };
  struct io_uring_probe *probe;
  static const int needed[] = {
    IORING_OP_READ, IORING_OP_WRITE, IORING_OP_FSYNC, IORING_OP_OPENAT,
    IORING_OP_CLOSE, IORING_OP_NOP,
  };
  gboolean ok = TRUE;
  int r;

  params.flags = IORING_SETUP_CQSIZE;
  params.cq_entries = RING_CQ_ENTRIES;
  ws_lock_lock (&ring_map_lock);
  r = io_uring_queue_init_params (RING_SQ_ENTRIES, &self->ring, &params);
  ws_lock_unlock (&ring_map_lock);
  if (r < 0)
    return FALSE;
  if ((params.features & IORING_FEAT_NODROP) == 0
      || (params.features & IORING_FEAT_RW_CUR_POS) == 0)
    ok = FALSE;
  probe = ok ? io_uring_get_probe_ring (&self->ring) : NULL;
  if (probe == NULL)
    ok = FALSE;
  for (gsize i = 0; ok && i < G_N_ELEMENTS (needed); i++)
    ok = io_uring_opcode_supported (probe, needed[i]);
  if (probe != NULL)
    io_uring_free_probe (probe);
  if (!ok)
    uring_exit (self);
  return ok;
}

/* With `sq_lock` held: an SQE, sending the full SQ first if need be. */
static struct io_uring_sqe *
uring_get_sqe_locked (WsOffload *self)
{
  struct io_uring_sqe *sqe;

  while ((sqe = io_uring_get_sqe (&self->ring)) == NULL)
    io_uring_submit (&self->ring);
  return sqe;
}

/* With `sq_lock` held: sends what the SQ holds. A transient error (a
 * signal, a full CQ, memory the kernel could not get) is waited out and
 * the send tried again, so a queued op is delayed, never dropped. Any
 * other error means the ring itself is broken (EBADF, EFAULT, EINVAL on
 * a ring that accepted these opcodes at its start): no op sent to it
 * could ever complete, so it is fatal rather than a hang. */
static void
uring_submit_locked (WsOffload *self)
{
  for (;;)
    {
      int r = io_uring_submit (&self->ring);

      if (r >= 0)
        return;
      if (r != -EINTR && r != -EAGAIN && r != -EBUSY && r != -ENOMEM)
        g_error ("io_uring_submit: %s", g_strerror (-r));
      g_usleep (100);
    }
}

/* With `cq_lock` held: takes up to @n_max completions off the CQ, in
 * order, into @tags and @results; stops before the
 * reaper's stop request unless @take_stop. Returns how many it took, and
 * sets *@stop if it took the stop request (not counted). */
static guint
uring_take_cqes (WsOffload *self,
                 guint64   *tags,
                 gint64    *results,
                 guint      n_max,
                 gboolean   take_stop,
                 gboolean  *stop)
{
  struct io_uring_cqe *cqe;
  unsigned head, seen = 0;
  guint n = 0;

  io_uring_for_each_cqe (&self->ring, head, cqe)
    {
      guint64 tag = io_uring_cqe_get_data64 (cqe);

      if (n == n_max)
        break;
      if (tag == STOP_TAG)
        {
          if (!take_stop)
            break;
          *stop = TRUE;
          seen++;
          continue;
        }
      tags[n] = tag;
      results[n] = cqe->res;
      n++;
      seen++;
    }
  io_uring_cq_advance (&self->ring, seen);
  return n;
}

#define REAP_BATCH 32

/* After a submission, on the submitting thread: a call that the kernel
 * ran at once (a read of cached pages, a write to a pipe with room, most
 * closes) has its completion in the CQ already; taking it here takes two
 * wakes of sleeping threads off the caller's path: the reaper's, which
 * would end the op, and then the caller's own. The reaper still wakes,
 * off that path (the kernel wakes it for the completion), and finds the
 * CQ emptied or takes what is left. The CQ has two consumers, the reaper
 * and this, and `cq_lock` lets one at a time take completions, each
 * exactly once. A submitter finding the lock held leaves the CQ to its
 * holder (the reaper ends @op, as without this path), and one takes at
 * most REAP_BATCH. Other callers' ops it takes are ended as the reaper
 * ends them, after the lock; @op itself, ended here before its caller
 * waits, wakes nobody. The stop request is left to the reaper: it is
 * sent only once no op is in flight (see "Teardown"), so no submitter
 * meets it, and one taken here would leave the reaper waiting. */
static void
uring_reap_own (WsOffload   *self,
                WsOffloadOp *op)
{
  guint64 tags[REAP_BATCH];
  gint64 results[REAP_BATCH];
  gboolean stop = FALSE;
  guint n;

  if (!ws_lock_trylock (&self->cq_lock))
    return;
  n = uring_take_cqes (self, tags, results, REAP_BATCH, FALSE, &stop);
  ws_lock_unlock (&self->cq_lock);
  for (guint i = 0; i < n; i++)
    {
      WsOffloadOp *done = (WsOffloadOp *) (guintptr) tags[i];

      atomic_fetch_sub_explicit (&self->uring_in_flight, 1, memory_order_relaxed);
      if (done == op)
        atomic_fetch_add_explicit (&self->n_ended_by_submitter, 1, memory_order_relaxed);
      op_end_full (self, done, results[i], done != op);
    }
}

static void
uring_submit (WsOffload   *self,
              WsOffloadOp *op)
{
  struct io_uring_sqe *sqe;
  /* The kernel's count is unsigned 32 bits; the file position is -1. */
  guint64 offset = op->offset >= 0 ? (guint64) op->offset : (guint64) -1;

  /* Relaxed: a statistic. */
  atomic_fetch_add_explicit (&self->uring_in_flight, 1, memory_order_relaxed);
  ws_lock_lock (&self->sq_lock);
  sqe = uring_get_sqe_locked (self);
  switch (op->kind)
    {
    case WS_OFFLOAD_READ:
      io_uring_prep_read (sqe, op->fd, op->buf, (unsigned) op->count, offset);
      break;
    case WS_OFFLOAD_WRITE:
      io_uring_prep_write (sqe, op->fd, op->buf, (unsigned) op->count, offset);
      break;
    case WS_OFFLOAD_FSYNC:
      io_uring_prep_fsync (sqe, op->fd, 0);
      break;
    case WS_OFFLOAD_OPENAT:
      io_uring_prep_openat (sqe, op->fd, op->buf, op->flags, (mode_t) op->mode);
      break;
    case WS_OFFLOAD_CLOSE:
      io_uring_prep_close (sqe, op->fd);
      break;
    default:
      g_assert_not_reached ();
    }
  io_uring_sqe_set_data64 (sqe, (guint64) (guintptr) op);
  uring_submit_locked (self);
  ws_lock_unlock (&self->sq_lock);
  uring_reap_own (self, op);
}

static gpointer
uring_reaper_main (gpointer data)
{
  WsOffload *self = data;
  gboolean stop = FALSE;

  offload_thread_of = self;
  while (!stop)
    {
      guint64 tags[REAP_BATCH];
      gint64 results[REAP_BATCH];
      guint n;
      /* Only a wait, in the kernel, until the CQ holds a completion (or
       * an overflowed one can be moved into it): io_uring_wait_cqe ()
       * would read the CQ's head outside `cq_lock`, which a submitter may
       * be moving (uring_reap_own). What the wait saw may be gone by the
       * time we lock: then we take nothing and wait again. */
      int r = io_uring_enter (self->ring.ring_fd, 0, 1, IORING_ENTER_GETEVENTS, NULL);

      /* Transient, as for the submit: wait it out. */
      if (r == -EINTR || r == -EAGAIN || r == -ENOMEM || r == -EBUSY)
        {
          if (r == -ENOMEM)
            g_usleep (100);
          continue;
        }
      if (r < 0)
        g_error ("io_uring_enter: %s", g_strerror (-r));
      ws_lock_lock (&self->cq_lock);
      n = uring_take_cqes (self, tags, results, REAP_BATCH, TRUE, &stop);
      ws_lock_unlock (&self->cq_lock);
      for (guint i = 0; i < n && !self->free_on_exit; i++)
        {
          atomic_fetch_sub_explicit (&self->uring_in_flight, 1, memory_order_relaxed);
          op_end (self, (WsOffloadOp *) (guintptr) tags[i], results[i]);
        }
      if (self->free_on_exit)
        {
          /* See "Teardown": nobody else holds the offload. */
          g_thread_unref (self->reaper);
          uring_exit (self);
          ws_lock_clear (&self->sq_lock);
          ws_lock_clear (&self->cq_lock);
          ws_lock_clear (&self->lock);
          ws_cond_clear (&self->waiter_cond);
          ws_cond_clear (&self->threads_gone);
          g_free (self);
          return NULL;
        }
    }
  return NULL;
}

#endif /* HAVE_LIBURING */

/* ---- the offload --------------------------------------------------- */

#ifdef HAVE_LIBURING
/* Whether the process runs under valgrind, which preloads its
 * vgpreload_*.so into every program it runs (valgrind.h's
 * RUNNING_ON_VALGRIND needs a header Debian ships only in valgrind's
 * -dev package). */
static gboolean
under_valgrind (void)
{
  const char *preload = g_getenv ("LD_PRELOAD");

  return preload != NULL && strstr (preload, "vgpreload_") != NULL;
}
#endif

WsOffload *
ws_offload_new (guint max_threads)
{
  WsOffload *self = g_new0 (WsOffload, 1);
  const char *env = g_getenv ("WS_IO_URING");

  ws_lock_init (&self->lock);
  ws_cond_init (&self->waiter_cond);
  ws_cond_init (&self->threads_gone);
  self->max_threads = MAX (max_threads, 1);

#ifdef HAVE_LIBURING
  if (!atomic_load_explicit (&force_threads, memory_order_relaxed)
      && g_strcmp0 (env, "0") != 0
      && !under_valgrind ()
      && uring_try_init (self))
    {
      g_autoptr(GError) error = NULL;

      ws_lock_init (&self->sq_lock);
      ws_lock_init (&self->cq_lock);
      self->reaper = g_thread_try_new ("ws-uring", uring_reaper_main, self, &error);
      if (self->reaper != NULL)
        self->uring = TRUE;
      else
        {
          ws_lock_clear (&self->sq_lock);
          ws_lock_clear (&self->cq_lock);
          uring_exit (self);
        }
    }
#else
  (void) env;
#endif
  return self;
}

const char *
ws_offload_get_backend (WsOffload *self)
{
  return self->uring ? "io_uring" : "threads";
}

void
ws_offload_submit (WsOffload   *self,
                   WsOffloadOp *op)
{
  op->count = MIN (op->count, WS_OFFLOAD_MAX_COUNT);
  /* Release: the op's fields, its waker included, before the thread
   * that ends it reads them (op_end). */
  atomic_store_explicit (&op->done, 0, memory_order_release);
#ifdef HAVE_LIBURING
  if (self->uring)
    {
      uring_submit (self, op);
      return;
    }
#endif
  threads_submit (self, op);
}

void
ws_offload_get_counts (WsOffload *self,
                       guint     *n_threads,
                       guint     *n_in_flight,
                       guint     *peak_threads,
                       guint     *peak_in_flight)
{
  ws_lock_lock (&self->lock);
  if (self->uring)
    {
      *n_threads = *peak_threads = 1;
      *n_in_flight = *peak_in_flight =
        atomic_load_explicit (&self->uring_in_flight, memory_order_relaxed);
    }
  else
    {
      *n_threads = self->n_threads;
      *n_in_flight = self->n_in_flight;
      *peak_threads = self->peak_threads;
      *peak_in_flight = self->peak_in_flight;
    }
  ws_lock_unlock (&self->lock);
}

guint64
ws_offload_get_n_ended_by_submitter (WsOffload *self)
{
  return atomic_load_explicit (&self->n_ended_by_submitter, memory_order_relaxed);
}

void
ws_offload_free (WsOffload *self)
{
  gboolean own_thread = offload_thread_of == self;

  if (self == NULL)
    return;

#ifdef HAVE_LIBURING
  if (self->uring)
    {
      if (own_thread)
        {
          /* The reaper frees it once op_end returns (see the top). */
          self->free_on_exit = TRUE;
          return;
        }
      ws_lock_lock (&self->sq_lock);
      {
        struct io_uring_sqe *sqe = uring_get_sqe_locked (self);

        io_uring_prep_nop (sqe);
        io_uring_sqe_set_data64 (sqe, STOP_TAG);
      }
      uring_submit_locked (self);
      ws_lock_unlock (&self->sq_lock);
      g_thread_join (self->reaper);
      uring_exit (self);
      ws_lock_clear (&self->sq_lock);
      ws_lock_clear (&self->cq_lock);
      ws_lock_clear (&self->lock);
      ws_cond_clear (&self->waiter_cond);
      ws_cond_clear (&self->threads_gone);
      g_free (self);
      return;
    }
#endif

  ws_lock_lock (&self->lock);
  g_assert (self->queue_head == NULL);
  self->closing = TRUE;
  for (OffloadThread *t = self->idle; t != NULL; t = t->next_idle)
    ws_cond_signal (&t->cond);
  /* This thread, if it is one of ours, stays counted until it frees. */
  while (self->n_threads > (own_thread ? 1u : 0u))
    ws_cond_wait (&self->threads_gone, &self->lock);
  if (own_thread)
    {
      self->free_on_exit = TRUE;
      ws_lock_unlock (&self->lock);
      return;
    }
  ws_lock_unlock (&self->lock);
  ws_lock_clear (&self->lock);
  ws_cond_clear (&self->waiter_cond);
  ws_cond_clear (&self->threads_gone);
  g_free (self);
}
