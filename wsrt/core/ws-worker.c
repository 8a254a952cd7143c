/* ws-worker.c: the worker loop
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One iteration ("tick"): maintenance every event-interval ticks, then the
 * next task (the injection queue first every global-queue-interval ticks,
 * for fairness), then the LIFO slot up to a cap, else steal, else park.
 *
 * Work-first. A task that awaits another task's end (a join-handle poll)
 * runs it at once, nested in its own poll, if it is this worker's to run
 * and has not started: in the LIFO slot, or the newest task of the run
 * queue, taken back from the queue's tail (ws-local-queue.c says why no
 * thief can take it too). The parent would otherwise return PENDING, be
 * bound to the task registry, and wait for a wake and a second poll;
 * TBB's task_group::wait runs its children the same way. The task that
 * was in the LIFO slot moves to the queue first, so that thieves can take
 * it while the nested task runs. The nested poll is a poll like any
 * other (ws_raw_task_run_awaited takes the state word to RUNNING and back
 * as from the loop, except that where the word shows only the queued
 * instance's and the handle's references it does so by stores: the
 * handle's owner is the awaiting task below us, so nobody else can write
 * the word, ws-task-state-private.h) with a context of its own
 * that shares the awaiting poll's budget: each nested run costs one unit,
 * so one tick still runs at most a budget's worth of polls, and at most
 * WS_MAX_AWAITED_DEPTH nest, which bounds the thread's stack. A fiber
 * runs its awaited tasks the same way, on its own stack, at most
 * WS_MAX_AWAITED_DEPTH_ON_FIBER deep there (an awaited fiber runs on a
 * stack of its own and counts from zero again): a fiber that awaits the
 * fiber it just spawned runs it to its end at once, so the child's stack
 * is free for the next child instead of waiting with it. Not once
 * shutdown began, and not for a cancelled task. "Next to run" is what
 * the queue says, not "never polled": a task woken or yielded into the
 * LIFO slot or the queue's tail runs nested as well. If the nested task
 * hands the core to another thread (ws_block_in_place), every awaiting
 * poll on this thread goes on without a worker, as the one that called
 * it.
 *
 * A worker's part in shutdown is step 2 of the protocol written at the top
 * of ws-worker-pool.c: walk the task registry, drain the queues, leave. The
 * worker never seals the injection queue: a thread inside
 * ws_block_in_place () may still be polling and may re-queue its task,
 * so only the shutdown caller, once no pool thread runs, makes the last
 * sweep.
 */

#include "config.h"

#include "ws-worker-private.h"
#include "ws-worker-pool-private.h"
#include "ws-chaos-private.h"
#include "ws-trace-private.h"
#include "ws-error.h"
#include "ws-fiber-stack-private.h"
#include "ws-owed-private.h"

static inline guint32
next_random (WsWorker *w,
             guint32   n)
{
  /* xorshift32: cheap and good enough to pick a victim. */
  guint32 x = w->core.rand_state;

  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  w->core.rand_state = x;
  return x % n;
}

/* Whether tasks scheduled from outside the pool (not this pool's own
 * overflow) came since this worker last saw the injection queue empty,
 * and the queue holds tasks. Hints: relaxed loads; a wrong answer only
 * takes a batch from the injection queue early, or not yet. */
static inline gboolean
remote_tasks_waiting (WsWorker *w)
{
  return !ws_inject_queue_is_empty (&w->pool->inject)
         && ws_inject_queue_n_remote (&w->pool->inject, memory_order_relaxed)
            != w->core.remote_seen;
}

static void
push_local_or_overflow (WsWorker  *w,
                        WsRawTask *task)
{
  if (ws_local_queue_push_back_or_overflow (&w->core.queue, task, &w->pool->inject))
    WS_STAT_INC (w, overflows);
}

/* A spawn or wake on a worker goes to its LIFO slot, pushing the
 * previous occupant to the back of the run queue; a yield goes to the
 * back. */
void
ws_worker_schedule_local (WsWorker  *w,
                          WsRawTask *task,
                          gboolean   is_yield)
{
  gboolean should_notify;

  WS_STAT_INC (w, local_schedules);

  if (is_yield || w->pool->config->disable_lifo_slot)
    {
      push_local_or_overflow (w, task);
      should_notify = TRUE;
    }
  else
    {
      WsRawTask *prev = w->core.lifo;

      w->core.lifo = task;
      should_notify = prev != NULL;
      if (prev != NULL)
        push_local_or_overflow (w, prev);
    }

  /* A task in the LIFO slot alone runs right after the current one, so it
   * is not worth waking anyone for; a task in the run queue is stealable
   * and may be. */
  if (should_notify)
    ws_worker_pool_notify_parked (w->pool);
}

static WsRawTask *
next_local_task (WsWorker *w)
{
  WsRawTask *t = w->core.lifo;

  if (t != NULL)
    {
      w->core.lifo = NULL;
      return t;
    }
  return ws_local_queue_pop (&w->core.queue);
}

/* Pulls a batch from the injection queue into the local queue; returns
 * the first task to run now, or, with @all_queued, queues it first and
 * returns it too (not to be run: it is queued). */
static WsRawTask *
take_injected (WsWorker *w,
               gboolean  all_queued)
{
  WsWorkerPool *s = w->pool;
  gsize len;
  WsRawTask *batch[WS_LOCAL_QUEUE_CAPACITY / 2 + 1];
  gsize want;
  gsize n;
  guint64 remote;

  /* For remote_tasks_waiting (): kept when we see the queue empty or
   * empty it, so that remote tasks left in it count as waiting until
   * then. Read before the length: a remote push counted after this read
   * shows as new. Acquire, paired with the release of the count, which
   * ws_inject_queue_push_remote () stores after the count of pushes: a
   * push this count includes is in the length read next, so it is never
   * recorded as seen while still queued. */
  remote = ws_inject_queue_n_remote (&s->inject, memory_order_acquire);
  len = ws_inject_queue_len (&s->inject);
  if (len == 0)
    {
      w->core.remote_seen = remote;
      return NULL;
    }

  /* Our fair share, at most half the room we have, so that stealing and
   * other workers still get some (tokio >= 1.29 does the same). */
  want = MIN (len / s->n_workers + 1, ws_local_queue_remaining (&w->core.queue) / 2);
  want = CLAMP (want, 1, G_N_ELEMENTS (batch));

  n = ws_inject_queue_pop_batch (&s->inject, batch, want);
  if (n >= len)
    w->core.remote_seen = remote;
  if (n == 0)
    return NULL;

  for (gsize i = all_queued ? 0 : 1; i < n; i++)
    push_local_or_overflow (w, batch[i]);
  /* The producers' notifies were paired with looks at the injection
   * queue, which no longer holds these tasks: a worker that parks now may
   * see that queue empty, and this worker's poll may block. So notify
   * for them as for a push (ws-sleepers.c, "Searchers"). */
  if (n > (all_queued ? 0u : 1u))
    ws_worker_pool_notify_parked (s);
  return batch[0];
}

static WsRawTask *
pop_injected (WsWorker *w)
{
  return take_injected (w, FALSE);
}

/* Sets the fairness interval so that the injection queue is looked at
 * about every WS_GLOBAL_QUEUE_TARGET_USEC of polling: at most every
 * global-queue-interval ticks, at least every 2 (tokio >= 1.29 tunes it
 * too). Called at each fairness tick, so one clock read per interval: a
 * fixed tick count is a long time when each tick polls a long chain
 * (doc/performance.md, "What each optimisation bought"). */
static void
tune_global_queue_interval (WsWorker *w)
{
  gint64 now = g_get_monotonic_time ();
  guint64 ticks = w->core.tick - w->core.tick_at_tune;
  gint64 elapsed = now - w->core.tune_since;
  guint32 max = w->pool->config->global_queue_interval;
  guint64 interval = max;

  if (elapsed > 0)
    interval = (guint64) WS_GLOBAL_QUEUE_TARGET_USEC * ticks / (guint64) elapsed;
  w->core.gq_interval = (guint32) CLAMP (interval, MIN (2, max), max);
  w->core.tick_at_tune = w->core.tick;
  w->core.tune_since = now;
}

static WsRawTask *
next_task (WsWorker *w)
{
  WsRawTask *t;

  if (--w->core.until_fairness == 0)
    {
      tune_global_queue_interval (w);
      w->core.until_fairness = w->core.gq_interval;

      /* Fairness: look at the injection queue first now and then, and
       * take a batch (our share, at most half our free room) to the back
       * of the local queue. One task per interval starves remote spawns
       * while yielding or respawning tasks keep the local queue non-empty
       * (doc/performance.md, "What each optimisation bought"). */
      t = pop_injected (w);
      if (t != NULL)
        return t;
      return next_local_task (w);
    }

  t = next_local_task (w);
  if (t != NULL)
    return t;
  return pop_injected (w);
}

/* Work-first: see the top of this file. Returns TRUE if @task was run
 * (it may have returned PENDING, or handed the core away). */
gboolean
ws_worker_run_awaited (WsContext *cx,
                       WsRawTask *task)
{
  WsWorker *w = ws_thread.worker;
  WsContext *outer;
  WsContext inner;

  /* A fiber's context has no worker (it may migrate), but while it runs
   * it runs inside the poll of the worker of this thread. */
  if (w == NULL || (cx->worker != w && cx->fiber == NULL) || !w->in_poll
      || w->core.is_shutdown || cx->budget == 0)
    return FALSE;
  /* A cancelled task that still awaits is unwinding (a cancelled fiber's
   * code runs to its end with a budget that never runs out): it waits
   * for nothing, and must not start its children on the way out. */
  if (ws_raw_task_get_state (cx->task) & WS_STATE_CANCELLED)
    return FALSE;
  if (cx->awaited_depth >= (cx->fiber != NULL ? WS_MAX_AWAITED_DEPTH_ON_FIBER
                                              : WS_MAX_AWAITED_DEPTH))
    return FALSE;

  if (w->core.lifo == task)
    w->core.lifo = NULL;
  else if (!ws_local_queue_take_back (&w->core.queue, task))
    {
      /* A take-back that lost to a thief lowered the tail and put it
       * back: a parker may have looked at the queue in between and seen
       * it empty. Notify for what is still queued, as for a push. */
      if (ws_local_queue_has_tasks (&w->core.queue))
        ws_worker_pool_notify_parked (w->pool);
      return FALSE;
    }

  if (w->core.lifo != NULL)
    {
      /* Stealable while the nested task runs; notify as any push. */
      push_local_or_overflow (w, g_steal_pointer (&w->core.lifo));
      ws_worker_pool_notify_parked (w->pool);
    }

  memset (&inner, 0, sizeof inner);
  inner.worker = w;
  inner.budget = cx->budget - 1;
  /* On a fiber's stack, counted from the fiber's own depth, so that a
   * fiber of the smallest stack size has room for the nesting. */
  inner.awaited_depth = (cx->fiber != NULL ? WS_MAX_AWAITED_DEPTH - WS_MAX_AWAITED_DEPTH_ON_FIBER
                                           : 0) + cx->awaited_depth + 1;
  outer = w->cx;
  w->cx = &inner;
  WS_STAT_INC (w, polls);
  ws_raw_task_run_awaited (task, &inner);

  if (ws_thread.worker != w)
    {
      /* The core went to another thread during the nested poll: every
       * poll on this thread's stack goes on without it. */
      cx->worker = NULL;
      if (outer != NULL)
        outer->worker = NULL;
      return TRUE;
    }
  w->cx = outer;
  cx->budget = inner.budget;
  return TRUE;
}

/* Returns FALSE if the poll handed this worker's core to another thread
 * (ws_block_in_place): the caller must not touch @w again. */
static gboolean
poll_task (WsWorker  *w,
           WsContext *cx,
           WsRawTask *task)
{
  WS_STAT_INC (w, polls);
  w->in_poll = TRUE;
  ws_raw_task_run (task, cx);
  if (ws_thread.worker != w)
    return FALSE;
  w->in_poll = FALSE;
  return TRUE;
}

/* Whether the injection queue or any run queue holds a task: the reading
 * half of the Dekker pairs of ws-sleepers.c, after the caller's seq_cst
 * fence (the injection queue's length is a seq_cst load, a run queue's
 * head and tail acquire loads). LIFO slots are not looked at: only their
 * owner runs them. */
static gboolean
any_work_pending (WsWorkerPool *s)
{
  if (!ws_inject_queue_is_empty (&s->inject))
    return TRUE;
  for (guint i = 0; i < s->n_workers; i++)
    if (ws_local_queue_has_tasks (&s->workers[i]->core.queue))
      return TRUE;
  return FALSE;
}

static void
transition_from_searching (WsWorker *w)
{
  if (!w->core.is_searching)
    return;
  w->core.is_searching = FALSE;
  /* The last searcher to find work wakes another one if more work is in
   * sight in any queue: the rest of what it stole or took from the
   * injection queue, more in that queue, or a task that a running worker
   * pushed to its own run queue after this searcher had looked there, and
   * left to the searchers (its notify saw one: ws-sleepers.c,
   * "Searchers"). Not otherwise: the wake is a syscall (an IPI to an idle
   * CPU) on the way to the task just found, and the sleeper it wakes
   * would find nothing. The fence makes the seq_cst RMW above and the
   * queues' acquire loads this searcher's half of the Dekker pair with
   * that push's notify. */
  if (ws_sleepers_transition_from_searching (&w->pool->sleepers))
    {
      atomic_thread_fence (memory_order_seq_cst);
      if (any_work_pending (w->pool))
        ws_worker_pool_notify_parked (w->pool);
    }
}

/* Puts @task at the back of the run queue; if tasks scheduled from
 * outside are waiting, behind our share of them, taken first. Only where
 * the LIFO cap ends a chain: doing it for every spawn, wake or yield
 * while remote tasks wait took the LIFO slot's locality from a mixed
 * load (bench-demo all 2 with a busy CPU: 0.76 to 1.12 of GThreadPool's
 * time; doc/performance.md). */
static void
queue_behind_remote (WsWorker  *w,
                     WsRawTask *task)
{
  if G_UNLIKELY (remote_tasks_waiting (w))
    (void) take_injected (w, TRUE);
  push_local_or_overflow (w, task);
}

static gboolean
run_task (WsWorker  *w,
          WsContext *cx,
          WsRawTask *task)
{
  transition_from_searching (w);
  w->core.just_unparked = FALSE;

  cx->budget = w->pool->config->budget;
  w->core.lifo_polls = 0;
  if (!poll_task (w, cx, task))
    return FALSE;

  /* LIFO-slot tasks share the budget of this tick, and are capped. */
  for (;;)
    {
      WsRawTask *t = w->core.lifo;

      if (t == NULL || w->core.is_shutdown)
        return TRUE;
      w->core.lifo = NULL;

      if (cx->budget == 0 || w->core.lifo_polls >= WS_MAX_LIFO_POLLS_PER_TICK)
        {
          /* A chain of tasks that respawn each other reached the cap: it
           * goes on behind our share of the remote tasks waiting, if any,
           * which it would otherwise hold back until the fairness tick.
           * No notify for it, as in tokio: this worker runs it next, and
           * a sleeper woken for it would find nothing (doc/performance.md,
           * "What each optimisation bought"); the tasks taken from the
           * injection queue are stealable in the run queue, and
           * take_injected notifies for them. */
          queue_behind_remote (w, t);
          return TRUE;
        }
      w->core.lifo_polls++;
      if (!poll_task (w, cx, t))
        return FALSE;
    }
}

static WsRawTask *
steal_work (WsWorker *w)
{
  WsWorkerPool *s = w->pool;
  guint n = s->n_workers;
  guint start;

  if (!w->core.is_searching)
    {
      if (!ws_sleepers_transition_to_searching (&s->sleepers))
        return NULL;
      w->core.is_searching = TRUE;
    }

  /* Start at a random victim, try each once. */
  start = next_random (w, n);
  for (guint i = 0; i < n; i++)
    {
      guint idx = start + i < n ? start + i : start + i - n;
      guint n_stolen;
      WsRawTask *t;

      if (idx == w->index)
        continue;

      t = ws_local_queue_steal_into (&s->workers[idx]->core.queue, &w->core.queue, &n_stolen);
      if (t != NULL)
        {
          WS_STAT_INC (w, steal_operations);
          WS_STAT_ADD (w, steals, n_stolen);
          return t;
        }
    }

  return pop_injected (w);
}

static void
maintenance (WsWorker *w)
{
  /* Dispatch our context without sleeping, so sources fire
   * under load too. Wakes from it stay local. */
  gint64 now;

  g_main_context_iteration (w->core.context, FALSE);

  /* Publish busy time as we go, not only when parking, so that a snapshot
   * of a worker that never sleeps is at most one interval stale. */
  now = g_get_monotonic_time ();
  WS_STAT_ADD (w, busy_usec, now - w->core.busy_since);
  w->core.busy_since = now;

  if (ws_worker_pool_is_shutdown (w->pool))
    w->core.is_shutdown = TRUE;
}

static void
park (WsWorker *w)
{
  WsWorkerPool *s = w->pool;
  gint64 trace_begin;
  gint64 now;
  gint64 trim_at;

  if (w->core.just_unparked)
    {
      /* Woken last time, and found nothing to do. */
      WS_STAT_INC (w, noop_wakes);
      w->core.just_unparked = FALSE;
    }

  /* Run the hook before the last look at our queues: a hook that spawns
   * or wakes a task puts it in our LIFO slot, and we must not sleep on it
   * (doc/architecture.md, "Rules: hooks"). */
  ws_hook_run (&s->config->hooks[WS_HOOK_BEFORE_PARK]);

  if (w->core.lifo != NULL || ws_local_queue_has_tasks (&w->core.queue))
    return;

  /* Whether we were the last searcher does not matter here: every
   * parker looks at every queue below. */
  (void) ws_sleepers_transition_to_parked (&s->sleepers, w->index, w->core.is_searching);
  w->core.is_searching = FALSE;

  /* Between announcing the park and the re-check (the Dekker window). */
  WS_CHAOS_POINT ();

  /* The parker's side of the Dekker pair of ws-sleepers.c: the seq_cst RMW
   * above and the queue reads below must not be reordered, but the local
   * queues are read with acquire loads, and an acquire load after a
   * seq_cst RMW is not ordered by C11 on every architecture. The fence
   * pairs with the producer's fence in ws_sleepers_worker_to_notify (), or
   * with a remote producer's seq_cst store of the injection queue's count
   * (ws_sleepers_worker_to_notify_after_sc, ws-sleepers.c). */
  atomic_thread_fence (memory_order_seq_cst);

  /* Every parker looks at every queue before it sleeps: a producer may
   * have seen it still unparked a moment ago, and left its task to the
   * workers awake; if that task is in a run queue whose owner's poll then
   * blocks, and the other workers are busy or asleep, nobody else would
   * look (ws-sleepers.c, "Searchers"). */
  if (any_work_pending (s))
    ws_worker_pool_notify_parked (s);

  now = g_get_monotonic_time ();
  WS_STAT_ADD (w, busy_usec, now - w->core.busy_since);

  /* Idle: the fiber stacks this worker keeps give their pages back once
   * it is parked WS_FIBER_STACK_TRIM_DELAY_USEC after they first had
   * some to give (ws-fiber-stack.c, "Giving pages back"). The deadline
   * is kept across parks, so that a worker woken more often than that
   * still trims: at its first park past the deadline. */
  if (!ws_fiber_stack_cache_wants_trim ())
    w->core.trim_at = 0;
  else if (w->core.trim_at == 0)
    w->core.trim_at = now + WS_FIBER_STACK_TRIM_DELAY_USEC;
  trim_at = w->core.trim_at != 0 ? w->core.trim_at : -1;

  WS_STAT_INC (w, parks);
  trace_begin = ws_trace_begin ();
  w->in_park = TRUE;
  for (;;)
    {
      /* A park with the trim's deadline that returns unnotified has
       * taken no wake: it left the parker EMPTY, and if we are still
       * listed as sleeping we trim and park again. A wake that comes
       * during the trim is kept by the parker (NOTIFIED), and the next
       * park returns at once (doc/architecture.md, "Parking on the
       * worker's GMainContext"). */
      gboolean notified = ws_parker_park_until (&w->core.parker, trim_at);

      if (!ws_sleepers_is_parked (&s->sleepers, w->index))
        {
          /* Woken by notify: we count as searching now. */
          w->core.is_searching = TRUE;
          break;
        }
      if (ws_worker_pool_is_shutdown (s))
        {
          w->core.is_shutdown = TRUE;
          break;
        }
      if (!notified && trim_at >= 0)
        {
          ws_fiber_stack_trim_cache ();
          w->core.trim_at = 0;
          trim_at = -1;
        }
    }
  w->in_park = FALSE;
  ws_trace_end (trace_begin, WS_TRACE_PARK, 0);

  WS_STAT_INC (w, unparks);
  w->core.just_unparked = TRUE;
  w->core.busy_since = g_get_monotonic_time ();
  w->core.tune_since = w->core.busy_since;
  w->core.tick_at_tune = w->core.tick;
  ws_hook_run (&s->config->hooks[WS_HOOK_AFTER_UNPARK]);
}

/* Drops every queued instance of this worker's LIFO slot and run queue
 * (ws_raw_task_drop_queued cancels a task never polled, which is in no
 * registry yet). Only once the worker's thread has stopped using them: by
 * that thread, or by shutdown after it left. Returns TRUE if anything was
 * queued. */
gboolean
ws_worker_drain (WsWorker *self)
{
  gboolean any = FALSE;
  WsRawTask *t;

  if (self->core.lifo != NULL)
    {
      ws_raw_task_drop_queued (g_steal_pointer (&self->core.lifo));
      any = TRUE;
    }
  while ((t = ws_local_queue_pop (&self->core.queue)) != NULL)
    {
      ws_raw_task_drop_queued (t);
      any = TRUE;
    }
  return any;
}

/* Step 2 of the shutdown protocol (ws-worker-pool.c). */
static void
worker_shutdown (WsWorker *w)
{
  WsWorkerPool *s = w->pool;
  gboolean last;

  /* Cancel every task that waits on a waker: idle ones are destroyed
   * here (their destroy notifies run), running and queued ones when their
   * poller or a drain takes them (ws-worker-pool.c, "Foreign pushes"). */
  ws_task_registry_shutdown_all (&s->registry, TRUE);

  /* If we were listed as a sleeper, leave the list. */
  ws_sleepers_unpark_worker_by_id (&s->sleepers, w->index);
  if (w->core.is_searching)
    {
      w->core.is_searching = FALSE;
      ws_sleepers_transition_from_searching (&s->sleepers);
    }

  ws_worker_drain (w);

  ws_lock_lock (&s->lock);
  last = ++s->n_shutdown_workers == s->n_workers;
  ws_lock_unlock (&s->lock);

  /* Everyone else has stopped and drained: drain what is left, and the
   * injection queue (without sealing it: a thread inside
   * ws_block_in_place () may still re-queue its task). */
  if (last)
    ws_worker_pool_drain (s, FALSE);
}

/* Returns FALSE if this thread lost the core to ws_block_in_place(). */
static gboolean
worker_run (WsWorker *w)
{
  WsWorkerPool *s = w->pool;
  WsContext cx;

  /* Each thread that runs a worker has its own context on its stack: after
   * a core hand-off, the old thread may still be inside a poll with its
   * own. */
  memset (&cx, 0, sizeof cx);
  cx.worker = w;
  w->cx = &cx;
  w->core.busy_since = g_get_monotonic_time ();
  w->core.tune_since = w->core.busy_since;
  w->core.tick_at_tune = w->core.tick;
  if (w->core.gq_interval == 0)
    w->core.gq_interval = s->config->global_queue_interval;
  if (w->core.until_fairness == 0)
    w->core.until_fairness = w->core.gq_interval;
  if (w->core.until_maintenance == 0)
    w->core.until_maintenance = s->config->event_interval;

  while (!w->core.is_shutdown)
    {
      WsRawTask *t;

      w->core.tick++;
      if (--w->core.until_maintenance == 0)
        {
          w->core.until_maintenance = s->config->event_interval;
          maintenance (w);
          if (w->core.is_shutdown)
            break;
        }

      t = next_task (w);
      if (t == NULL)
        t = steal_work (w);
      if (t != NULL)
        {
          if (!run_task (w, &cx, t))
            return FALSE;
          continue;
        }

      /* Nothing anywhere: dispatch the context once before sleeping, then
       * park; a shutdown is noticed on wake. */
      maintenance (w);
      if (w->core.is_shutdown)
        break;
      park (w);
    }

  worker_shutdown (w);
  w->cx = NULL;                 /* on this frame's stack */
  return TRUE;
}

/* Leaves the worker: this thread no longer runs its core, and the poll in
 * progress (if any) keeps its own context, detached from the worker. */
static void
detach_core (WsWorker *w)
{
  if (w->cx != NULL)
    w->cx->worker = NULL;
  w->cx = NULL;
  w->in_poll = FALSE;
  g_main_context_pop_thread_default (w->core.context);
  g_main_context_release (w->core.context);
  ws_thread.worker = NULL;
}

/* Runs the worker on this thread: its context is the thread default for
 * as long as the thread is the worker, so GIO calls made by its tasks
 * complete there (doc/architecture.md, "Rules: main contexts"). */
static void
attach_core (WsWorker  *w,
             WsContext *cx,
             gboolean   in_poll)
{
  ws_thread.worker = w;
  g_main_context_acquire (w->core.context);
  g_main_context_push_thread_default (w->core.context);
  w->cx = cx;
  if (cx != NULL)
    cx->worker = w;
  w->in_poll = in_poll;
}

/* A thread that left ws_block_in_place () and is not kept: iterates the
 * context it adopted until GIO owes it nothing (ws-owed.c), then lets it
 * go. */
static void
drop_adopted_context (void)
{
  GMainContext *context = g_steal_pointer (&ws_thread.adopted_context);

  if (context == NULL)
    return;
  /* GIO calls made in the rest of the poll complete here: this thread
   * stays until they have (ws-owed.c). */
  (void) ws_owed_drain (context, -1);
  g_main_context_pop_thread_default (context);
  g_main_context_unref (context);
}

gpointer
ws_worker_thread_main (gpointer data)
{
  WsWorker *w = data;
  WsWorkerPool *s = w->pool;
  gboolean kept_core;
  gboolean adopted;

  /* The start hook already runs as the worker: a wait it makes is refused
   * as on any worker, a spawn goes to the worker's own queue. */
  ws_thread.runtime = s->runtime;
  ws_thread.worker = w;
  ws_runtime_ref_keep_credit (s->runtime);
  ws_hook_run (&s->config->hooks[WS_HOOK_THREAD_START]);

  attach_core (w, NULL, FALSE);
  kept_core = worker_run (w);
  /* This thread is no longer the worker: its stacks go to the runtime's
   * pool while the runtime is held (ws-fiber-stack.c, "The pool"). */
  ws_fiber_stack_flush_cache ();
  /* The poll that handed the core off has returned. */
  ws_thread.host_context = NULL;
  if (kept_core)
    {
      /* Dispatch what is still pending (GIO callbacks of cancelled tasks). */
      while (g_main_context_iteration (w->core.context, FALSE))
        ;
      detach_core (w);
    }

  /* After ws_block_in_place () handed our core to another thread, this
   * thread carries on as an ordinary blocking thread if the runtime takes
   * it. Otherwise it leaves, and runs the stop hook while still counted
   * (the hooks' data may be released once shutdown has seen every thread
   * go). */
  adopted = !kept_core && s->hand_off.adopt (s->hand_off.data);
  if (!adopted)
    {
      drop_adopted_context ();
      ws_hook_run (&s->config->hooks[WS_HOOK_THREAD_STOP]);
    }

  ws_worker_pool_thread_stopped (s);

  if (adopted)
    s->hand_off.run (s->hand_off.data);

  ws_thread.runtime = NULL;
  ws_runtime_ref_return_credit ();
  ws_runtime_ref_release (s->runtime);
  return NULL;
}

/* Called by ws_block_in_place () on a worker, inside a poll
 * (doc/architecture.md, "Rules: blocking"). Moves the worker's core to a new
 * thread, which carries on as that worker; the calling thread keeps
 * running the current poll, then becomes a blocking thread. */
gboolean
ws_worker_hand_off_core (GError **error)
{
  WsWorker *w = ws_thread.worker;
  WsWorkerPool *s;
  WsContext *cx;
  g_autofree gchar *name = NULL;
  GMainContext *own;
  GThread *thread;
  GThread *old;

  g_assert (w != NULL);
  s = w->pool;
  cx = w->cx;

  if (!w->in_poll || g_main_depth () > 0)
    {
      /* Inside a GMainContext dispatch of the worker (a GIO callback, a
       * timeout), also one that a nested iteration inside a poll runs
       * (a worker polls its tasks outside any dispatch, so a depth above
       * 0 in a poll is a nested one): the context is held by the
       * iteration on our stack and cannot be handed over from here. */
      g_set_error_literal (error, WS_ERROR, WS_ERROR_WOULD_BLOCK,
                           "ws_block_in_place() was called on a worker from a "
                           "main-context callback (outside a task poll, or in a nested "
                           "main loop inside one); call it from the task itself, or use "
                           "ws_runtime_spawn_blocking()");
      return FALSE;
    }

  /* The LIFO slot is not stealable; the queue is. */
  if (w->core.lifo != NULL)
    push_local_or_overflow (w, g_steal_pointer (&w->core.lifo));

  detach_core (w);

  /* Every thread that polls a task has a thread-default context that is
   * iterated while the task waits: the rest of this poll gets one of its
   * own, which this thread keeps, and iterates, as a blocking thread. */
  own = g_main_context_new ();
  g_main_context_push_thread_default (own);
  ws_thread.adopted_context = own;
  /* The task's timers stay on the core's wheel, which the new thread
   * iterates until shutdown; this thread may leave, or take a blocking
   * job, as soon as the poll returns (ws-timer-driver.c). */
  ws_thread.host_context = w->core.context;

  /* The new thread counts as a pool thread and holds the runtime. */
  ws_lock_lock (&s->lock);
  s->n_running_threads++;
  ws_lock_unlock (&s->lock);
  ws_runtime_ref_acquire (s->runtime);

  name = g_strdup_printf ("%s-%u", s->config->thread_name_prefix, w->index);
  thread = g_thread_try_new (name, ws_worker_thread_main, w, error);
  if (thread == NULL)
    {
      /* Keep the core and run in place. */
      ws_lock_lock (&s->lock);
      s->n_running_threads--;
      ws_lock_unlock (&s->lock);
      ws_runtime_ref_release (s->runtime);
      ws_thread.adopted_context = NULL;
      ws_thread.host_context = NULL;
      g_main_context_pop_thread_default (own);
      g_main_context_unref (own);
      attach_core (w, cx, TRUE);
      g_prefix_error (error, "ws_block_in_place: could not start a thread to take over "
                             "the worker: ");
      return FALSE;
    }

  /* The new thread is the worker's now; shutdown joins it. This thread
   * will leave as a detached blocking thread. */
  ws_lock_lock (&s->lock);
  old = w->thread;
  w->thread = thread;
  ws_lock_unlock (&s->lock);
  if (old != NULL)
    g_thread_unref (old);

  return TRUE;
}

WsWorker *
ws_worker_new (WsWorkerPool *pool,
               guint         index)
{
  /* Cache-line aligned, so that no other allocation shares a line with
   * the queue's head (which thieves write) or with the fields this
   * worker writes on every poll (WS_CACHE_LINE_PAIR: the pair of lines
   * the adjacent-line prefetcher pulls together). */
  WsWorker *self = g_aligned_alloc0 (1, sizeof (WsWorker), WS_CACHE_LINE_PAIR);

  self->pool = pool;
  self->index = index;
  ws_local_queue_init (&self->core.queue);
  self->core.context = g_main_context_new ();
  ws_parker_init (&self->core.parker, self->core.context);
  /* Any non-zero seed works for xorshift; spread them out. */
  self->core.rand_state = 0x9e3779b9u * (index + 1);
  return self;
}

/* Once no thread runs the worker and its queues were drained. */
void
ws_worker_free (WsWorker *self)
{
  g_assert (self->core.lifo == NULL);
  g_assert (!ws_local_queue_has_tasks (&self->core.queue));
  if (self->thread != NULL)
    g_thread_unref (self->thread);
  g_main_context_unref (self->core.context);
  g_aligned_free (self);
}
