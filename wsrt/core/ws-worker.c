/* ws-worker.c: the worker loop
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One iteration ("tick"): maintenance every event-interval ticks, then the
 * next task (the injection queue first every global-queue-interval ticks,
 * for fairness), then the LIFO slot up to a cap, else steal, else park.
 *
 * A worker's part in shutdown is step 2 of the protocol written at the top
 * of ws-scheduler.c: walk the owned set, drain the queues, leave. The
 * worker never seals the injection queue: a thread inside
 * ws_block_in_place () may still be polling and may re-queue its task,
 * so only the shutdown caller, once no pool thread runs, makes the last
 * sweep.
 */

#include "config.h"

#include "ws-scheduler-private.h"
#include "ws-blocking-pool-private.h"
#include "ws-chaos-private.h"
#include "ws-error.h"

static _Thread_local WsWorker    *tls_worker WS_TLS_INITIAL_EXEC;
static _Thread_local WsScheduler *tls_sched WS_TLS_INITIAL_EXEC;

WsWorker *
ws_worker_get_current (void)
{
  return tls_worker;
}

WsScheduler *
ws_scheduler_get_current (void)
{
  return tls_sched;
}

void
ws_scheduler_set_current (WsScheduler *sched)
{
  tls_sched = sched;
}

void
ws_worker_init_context (WsContext *cx,
                        WsWorker  *worker)
{
  memset (cx, 0, sizeof *cx);
  cx->worker = worker;
}

gboolean
ws_context_poll_proceed (WsContext *cx)
{
  if (cx->budget > 0)
    {
      cx->budget--;
      return TRUE;
    }

  /* Out of budget: yield. Wake ourselves (the task is running, so this
   * only sets NOTIFIED) and go to the back of the queue. */
  if (cx->worker != NULL)
    WS_STAT_INC (cx->worker, forced_yields);
  cx->yielded = TRUE;
  ws_raw_task_wake_by_ref (cx->task);
  return FALSE;
}

static inline guint32
next_random (WsWorker *w,
             guint32   n)
{
  /* xorshift32: cheap and good enough to pick a victim. */
  guint32 x = w->rand_state;

  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  w->rand_state = x;
  return x % n;
}

static void
push_local_or_overflow (WsWorker  *w,
                        WsRawTask *task)
{
  if (ws_local_queue_push_back_or_overflow (&w->queue, task, &w->sched->inject))
    WS_STAT_INC (w, overflows);
}

/* DESIGN 5: a spawn or wake on a worker goes to its LIFO slot, pushing the
 * previous occupant to the back of the run queue; a yield goes to the
 * back. */
void
ws_worker_schedule_local (WsWorker  *w,
                          WsRawTask *task,
                          gboolean   is_yield)
{
  gboolean should_notify;

  WS_STAT_INC (w, local_schedules);

  if (is_yield || w->sched->config.disable_lifo_slot)
    {
      push_local_or_overflow (w, task);
      should_notify = TRUE;
    }
  else
    {
      WsRawTask *prev = w->lifo;

      w->lifo = task;
      should_notify = prev != NULL;
      if (prev != NULL)
        push_local_or_overflow (w, prev);
    }

  /* A task in the LIFO slot alone runs right after the current one, so it
   * is not worth waking anyone for; a task in the run queue is stealable
   * and may be. */
  if (should_notify)
    ws_scheduler_notify_parked (w->sched);
}

static WsRawTask *
next_local_task (WsWorker *w)
{
  WsRawTask *t = w->lifo;

  if (t != NULL)
    {
      w->lifo = NULL;
      return t;
    }
  return ws_local_queue_pop (&w->queue);
}

/* Pulls a batch from the injection queue into the local queue; returns
 * the first task to run now. */
static WsRawTask *
pop_injected (WsWorker *w)
{
  WsScheduler *s = w->sched;
  gsize len = ws_inject_queue_len (&s->inject);
  WsRawTask *batch[WS_LOCAL_QUEUE_CAPACITY / 2 + 1];
  gsize want;
  gsize n;

  if (len == 0)
    return NULL;

  /* Our fair share, at most half the room we have, so that stealing and
   * other workers still get some (tokio >= 1.29 does the same). */
  want = MIN (len / s->n_workers + 1, ws_local_queue_remaining (&w->queue) / 2);
  want = CLAMP (want, 1, G_N_ELEMENTS (batch));

  n = ws_inject_queue_pop_batch (&s->inject, batch, want);
  if (n == 0)
    return NULL;

  for (gsize i = 1; i < n; i++)
    push_local_or_overflow (w, batch[i]);
  return batch[0];
}

/* Sets the fairness interval so that the injection queue is looked at
 * about every WS_GLOBAL_QUEUE_TARGET_USEC of polling: at most every
 * global-queue-interval ticks, at least every 2 (tokio >= 1.29 tunes it
 * too). Called at each fairness tick, so one clock read per interval.
 * With 40 us ticks (a respawning chain, 10 us per link), 61 ticks were
 * 2.4 ms between looks (busy2 bench). */
static void
tune_global_queue_interval (WsWorker *w)
{
  gint64 now = g_get_monotonic_time ();
  guint64 ticks = w->tick - w->tick_at_tune;
  gint64 elapsed = now - w->tune_since;
  guint32 max = w->sched->config.global_queue_interval;
  guint64 interval = max;

  if (elapsed > 0)
    interval = (guint64) WS_GLOBAL_QUEUE_TARGET_USEC * ticks / (guint64) elapsed;
  w->gq_interval = (guint32) CLAMP (interval, MIN (2, max), max);
  w->tick_at_tune = w->tick;
  w->tune_since = now;
}

static WsRawTask *
next_task (WsWorker *w)
{
  WsRawTask *t;

  if (w->tick % w->gq_interval == 0)
    {
      tune_global_queue_interval (w);

      /* Fairness: look at the injection queue first now and then, and
       * take a batch (our share, at most half our free room) to the back
       * of the local queue. One task per interval starves remote spawns
       * while yielding or respawning tasks keep the local queue non-empty:
       * with 10 us polls, 10,000 remote spawns took 3 s (busy1 bench). */
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
  if (tls_worker != w)
    return FALSE;
  w->in_poll = FALSE;
  return TRUE;
}

static void
transition_from_searching (WsWorker *w)
{
  if (!w->is_searching)
    return;
  w->is_searching = FALSE;
  /* The last searcher to find work wakes another one: there may be more
   * work where this came from. */
  if (ws_sleepers_transition_from_searching (&w->sched->sleepers))
    ws_scheduler_notify_parked (w->sched);
}

static gboolean
run_task (WsWorker  *w,
          WsContext *cx,
          WsRawTask *task)
{
  transition_from_searching (w);
  w->just_unparked = FALSE;

  cx->budget = w->sched->config.budget;
  w->lifo_polls = 0;
  if (!poll_task (w, cx, task))
    return FALSE;

  /* LIFO-slot tasks share the budget of this tick, and are capped. */
  for (;;)
    {
      WsRawTask *t = w->lifo;

      if (t == NULL || w->is_shutdown)
        return TRUE;
      w->lifo = NULL;

      if (cx->budget == 0 || w->lifo_polls >= WS_MAX_LIFO_POLLS_PER_TICK)
        {
          /* No notify, as in tokio: this worker runs it next tick. A
           * notify here woke a sleeper every four links of a spawn chain
           * only to find nothing (chained_spawn: 4 parks per worker per
           * 1,000 links, down to 1; 211 -> 140 ns per link). */
          push_local_or_overflow (w, t);
          return TRUE;
        }
      w->lifo_polls++;
      if (!poll_task (w, cx, t))
        return FALSE;
    }
}

static WsRawTask *
steal_work (WsWorker *w)
{
  WsScheduler *s = w->sched;
  guint n = s->n_workers;
  guint start;

  if (!w->is_searching)
    {
      if (!ws_sleepers_transition_to_searching (&s->sleepers))
        return NULL;
      w->is_searching = TRUE;
    }

  /* DESIGN 5: start at a random victim, try each once. */
  start = next_random (w, n);
  for (guint i = 0; i < n; i++)
    {
      guint idx = (start + i) % n;
      guint n_stolen;
      WsRawTask *t;

      if (idx == w->index)
        continue;

      t = ws_local_queue_steal_into (&s->workers[idx]->queue, &w->queue, &n_stolen);
      if (t != NULL)
        {
          WS_STAT_INC (w, steal_operations);
          WS_STAT_ADD (w, steals, n_stolen);
          return t;
        }
    }

  return pop_injected (w);
}

static gboolean
any_work_pending (WsScheduler *s)
{
  if (!ws_inject_queue_is_empty (&s->inject))
    return TRUE;
  for (guint i = 0; i < s->n_workers; i++)
    if (ws_local_queue_has_tasks (&s->workers[i]->queue))
      return TRUE;
  return FALSE;
}

static void
maintenance (WsWorker *w)
{
  /* DESIGN 3: dispatch our context without sleeping, so sources fire
   * under load too. Wakes from it stay local. */
  gint64 now;

  g_main_context_iteration (w->context, FALSE);

  /* Publish busy time as we go, not only when parking, so that a snapshot
   * of a worker that never sleeps is at most one interval stale. */
  now = g_get_monotonic_time ();
  WS_STAT_ADD (w, busy_usec, now - w->busy_since);
  w->busy_since = now;

  if (ws_scheduler_is_shutdown (w->sched))
    w->is_shutdown = TRUE;
}

static void
park (WsWorker *w)
{
  WsScheduler *s = w->sched;
  gboolean is_last_searcher;
  gint64 now;

  if (w->just_unparked)
    {
      /* Woken last time, and found nothing to do. */
      WS_STAT_INC (w, noop_wakes);
      w->just_unparked = FALSE;
    }

  /* Run the hook before the last look at our queues: a hook that spawns
   * or wakes a task puts it in our LIFO slot, and we must not sleep on it
   * (DESIGN 8). */
  ws_hook_run (&s->config.hooks[WS_HOOK_BEFORE_PARK]);

  if (w->lifo != NULL || ws_local_queue_has_tasks (&w->queue))
    return;

  is_last_searcher = ws_sleepers_transition_to_parked (&s->sleepers, w->index, w->is_searching);
  w->is_searching = FALSE;

  /* Between announcing the park and the re-check (the Dekker window). */
  WS_CHAOS_POINT ();

  /* The parker's side of the Dekker pair of ws-sleepers.c: the seq_cst RMW
   * above and the queue reads below must not be reordered, but the local
   * queues are read with acquire loads, and an acquire load after a
   * seq_cst RMW is not ordered by C11 on every architecture. The fence
   * pairs with the producer's fence in ws_sleepers_worker_to_notify (). */
  atomic_thread_fence (memory_order_seq_cst);

  /* The last searcher re-checks every queue before it sleeps; everyone
   * re-checks the injection queue, whose producers may have seen us still
   * unparked a moment ago. */
  if (is_last_searcher ? any_work_pending (s) : !ws_inject_queue_is_empty (&s->inject))
    ws_scheduler_notify_parked (s);

  now = g_get_monotonic_time ();
  WS_STAT_ADD (w, busy_usec, now - w->busy_since);

  WS_STAT_INC (w, parks);
  w->in_park = TRUE;
  for (;;)
    {
      ws_parker_park (&w->parker);
      if (!ws_sleepers_is_parked (&s->sleepers, w->index))
        {
          /* Woken by notify: we count as searching now. */
          w->is_searching = TRUE;
          break;
        }
      if (ws_scheduler_is_shutdown (s))
        {
          w->is_shutdown = TRUE;
          break;
        }
    }
  w->in_park = FALSE;

  WS_STAT_INC (w, unparks);
  w->just_unparked = TRUE;
  w->busy_since = g_get_monotonic_time ();
  w->tune_since = w->busy_since;
  w->tick_at_tune = w->tick;
  ws_hook_run (&s->config.hooks[WS_HOOK_AFTER_UNPARK]);
}

static void
drain_local (WsWorker *w)
{
  WsRawTask *t;

  /* Cancels the tasks never polled (not in the owned set yet) and drops
   * the queued reference of the others. */
  if (w->lifo != NULL)
    {
      ws_raw_task_drop_queued (w->lifo);
      w->lifo = NULL;
    }
  while ((t = ws_local_queue_pop (&w->queue)) != NULL)
    ws_raw_task_drop_queued (t);
}

/* Step 2 of the shutdown protocol (ws-scheduler.c). */
static void
worker_shutdown (WsWorker *w)
{
  WsScheduler *s = w->sched;
  gboolean last;

  /* Cancel every owned task: idle ones are destroyed here (their destroy
   * notifies run), running ones when their poll returns. */
  ws_task_registry_shutdown_all (&s->registry);

  /* If we were listed as a sleeper, leave the list. */
  ws_sleepers_unpark_worker_by_id (&s->sleepers, w->index);
  if (w->is_searching)
    {
      w->is_searching = FALSE;
      ws_sleepers_transition_from_searching (&s->sleepers);
    }

  drain_local (w);

  ws_lock_lock (&s->lock);
  last = ++s->n_shutdown_workers == s->n_workers;
  ws_lock_unlock (&s->lock);

  if (last)
    {
      /* Everyone else has stopped and drained; drain what is left, then the
       * (closed) injection queue. */
      for (guint i = 0; i < s->n_workers; i++)
        {
          WsRawTask *t;

          while ((t = ws_local_queue_pop (&s->workers[i]->queue)) != NULL)
            ws_raw_task_drop_queued (t);
        }
      for (WsRawTask *t; (t = ws_inject_queue_pop (&s->inject)) != NULL;)
        ws_raw_task_drop_queued (t);
    }
}

/* Returns FALSE if this thread lost the core to ws_block_in_place(). */
static gboolean
worker_run (WsWorker *w)
{
  WsScheduler *s = w->sched;
  WsContext cx;

  /* Each thread that runs a worker has its own context on its stack: after
   * a core hand-off, the old thread may still be inside a poll with its
   * own. */
  ws_worker_init_context (&cx, w);
  w->cx = &cx;
  w->busy_since = g_get_monotonic_time ();
  w->tune_since = w->busy_since;
  w->tick_at_tune = w->tick;
  if (w->gq_interval == 0)
    w->gq_interval = s->config.global_queue_interval;

  while (!w->is_shutdown)
    {
      WsRawTask *t;

      w->tick++;
      if (w->tick % s->config.event_interval == 0)
        {
          maintenance (w);
          if (w->is_shutdown)
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
      if (w->is_shutdown)
        break;
      park (w);
    }

  worker_shutdown (w);
  return TRUE;
}

gpointer
ws_worker_thread_main (gpointer data)
{
  WsWorker *w = data;
  WsScheduler *s = w->sched;
  gboolean kept_core;
  gboolean adopted;
  gboolean last;

  tls_worker = w;
  tls_sched = s;
  ws_hook_run (&s->config.hooks[WS_HOOK_THREAD_START]);

  /* DESIGN 3: the worker's context is the thread default for as long as
   * the thread is a worker, so GIO calls made by tasks complete here. */
  g_main_context_acquire (w->context);
  g_main_context_push_thread_default (w->context);

  kept_core = worker_run (w);

  if (kept_core)
    {
      /* Dispatch what is still pending (GIO callbacks of cancelled tasks). */
      while (g_main_context_iteration (w->context, FALSE))
        ;
      g_main_context_pop_thread_default (w->context);
      g_main_context_release (w->context);
      tls_worker = NULL;
    }

  /* After ws_block_in_place () handed our core to another thread, this
   * thread carries on as an ordinary blocking thread if the pool takes it.
   * Otherwise it leaves, and runs the stop hook while still counted (the
   * hooks' data may be released once shutdown has seen every thread
   * go). */
  adopted = !kept_core && ws_blocking_pool_try_adopt (s->blocking);
  if (!adopted)
    {
      if (!kept_core)
        ws_blocking_pool_drop_adopted_context ();
      ws_hook_run (&s->config.hooks[WS_HOOK_THREAD_STOP]);
    }

  ws_lock_lock (&s->lock);
  last = --s->n_running_threads == 0 && s->shutdown_begun;
  ws_cond_broadcast (&s->cond);
  ws_lock_unlock (&s->lock);

  /* The last pool thread ends what the workers' drains could not reach
   * (a spawn that was in flight, a task re-queued after ws_block_in_place),
   * in case no shutdown caller waits to do it. */
  if (last)
    ws_scheduler_finish_from_last_thread (s);

  if (adopted)
    ws_blocking_pool_run_adopted (s->blocking);

  tls_sched = NULL;
  ws_scheduler_unref (s);
  return NULL;
}

/* DESIGN 6: called by ws_block_in_place() on a worker, inside a poll.
 * Moves the worker's core (queues, LIFO slot, GMainContext) to a new
 * thread, which carries on as that worker; the calling thread keeps
 * running the current poll, then becomes a blocking thread. */
gboolean
ws_worker_hand_off_core (GError **error)
{
  WsWorker *w = tls_worker;
  WsScheduler *s;
  WsContext *cx;
  g_autofree gchar *name = NULL;
  GMainContext *own;
  GThread *thread;
  GThread *old;

  g_assert (w != NULL);
  s = w->sched;
  cx = w->cx;

  if (!w->in_poll)
    {
      /* Inside a GMainContext dispatch of the worker (a GIO callback, a
       * timeout): the context cannot be released from here. */
      g_set_error_literal (error, WS_ERROR, WS_ERROR_WOULD_BLOCK,
                           "ws_block_in_place() was called on a worker outside a task "
                           "poll (from a main-context callback); call it from the task "
                           "itself, or use ws_runtime_spawn_blocking()");
      return FALSE;
    }

  /* The LIFO slot is not stealable; the queue is. */
  if (w->lifo != NULL)
    {
      push_local_or_overflow (w, w->lifo);
      w->lifo = NULL;
    }

  /* From here this thread is no longer the worker: the poll in progress
   * keeps its own context, detached from the worker. */
  cx->worker = NULL;
  w->cx = NULL;
  w->in_poll = FALSE;
  g_main_context_pop_thread_default (w->context);
  g_main_context_release (w->context);
  tls_worker = NULL;

  /* Every thread that polls a task has a thread-default context that is
   * iterated while the task waits: the rest of this poll gets one of its
   * own, which this thread keeps, and iterates, as a blocking thread. */
  own = g_main_context_new ();
  g_main_context_push_thread_default (own);
  ws_blocking_pool_set_adopted_context (own);

  ws_lock_lock (&s->lock);
  s->n_running_threads++;
  ws_lock_unlock (&s->lock);
  ws_scheduler_ref (s);

  name = g_strdup_printf ("%s-%u", s->config.thread_name_prefix, w->index);
  thread = g_thread_try_new (name, ws_worker_thread_main, w, error);
  if (thread == NULL)
    {
      /* Keep the core and run in place. */
      ws_lock_lock (&s->lock);
      s->n_running_threads--;
      ws_lock_unlock (&s->lock);
      ws_scheduler_unref (s);
      ws_blocking_pool_set_adopted_context (NULL);
      g_main_context_pop_thread_default (own);
      g_main_context_unref (own);
      tls_worker = w;
      g_main_context_acquire (w->context);
      g_main_context_push_thread_default (w->context);
      w->cx = cx;
      cx->worker = w;
      w->in_poll = TRUE;
      g_prefix_error (error, "ws_block_in_place: could not start a thread to take over the worker: ");
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
