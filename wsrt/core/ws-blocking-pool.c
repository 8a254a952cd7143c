/* ws-blocking-pool.c: threads for blocking work, started by the pool's
 * own threads
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Up to max-blocking-threads threads run jobs in submission order;
 * idle threads retire as below (doc/architecture.md, "Rules: blocking").
 *
 * Who starts threads. A spawn never creates a thread: it queues the job
 * and wakes one idle thread if there is one (one eventfd write), so a
 * burst of spawns from a GTK main loop costs the pool a lock and a push
 * each. The
 * pool's first thread is started by the first spawn (an app that spawns
 * no blocking job starts none). After that, a
 * thread is started only by a thread of the pool: one that takes a job
 * from the queue first starts one more thread when no thread is idle and
 * none is starting (n_starting) and n_threads < max. At most one thread
 * is starting at a time, so growth is paced: while jobs stay queued, each
 * new thread takes a job and starts the next one; a job waits for a
 * thread instead of each spawn starting one. The test does not look at
 * the queue: a thread that takes the last queued job still starts one, so
 * that the pool keeps a thread in reserve while it has room. Without that
 * reserve a job would wait behind running jobs with the pool below its
 * cap, for ever if the running job waits for it. The one exception: a
 * spawn that finds no thread at all (n_threads == 0: the first spawn, or
 * the threads could not be started) starts one itself, and if
 * that fails, cancels what is queued (nobody would run it) rather than
 * hang its waiters.
 *
 * How many run at once. Threads that are blocked deserve company; threads
 * that compute do not: on a laptop, a pool of threads all busy on a CPU
 * would starve the GTK main loop that spawns the jobs and gain nothing.
 * So a thread takes a queued job only while fewer than cpu_slots (the
 * number of CPUs) of the running jobs are busy (admitted_locked): a job
 * counts as busy while its thread is runnable, on a CPU or waiting for
 * one, as its run meter (ws-run-meter.c) sees it, at most once per 2 ms
 * window; a job found waiting on something at two looks in a row is not.
 * A thread that may not take the job yet is the standby, which looks
 * again every window (so a job that blocks gets company within two
 * windows); a second such thread waits listed idle, and a spawn wakes no
 * idle thread while there is a standby.
 * A burst of jobs that compute thus runs on cpu_slots threads plus the
 * standby (and at most one idle thread, left when the standby took a job
 * as another thread came back from one), however long the queue, while
 * jobs that block (a disk, a socket, a lock, one job waiting for
 * another) still grow the pool towards max-blocking-threads, one new
 * thread per job found blocked. The bound is on queued jobs: a job that
 * returned PENDING keeps its thread and is polled again when woken,
 * without asking, so more than cpu_slots jobs can be busy for a while.
 *
 * The admission deadline. The meter is a heuristic, and a heuristic may
 * delay a job, never strand it. It can be wrong for ever: a job that
 * waits while runnable (a spin on a flag set by a queued job, a busy poll)
 * is busy to it, and with cpu_slots such jobs nothing the meter sees
 * would ever change. So a job that has been at the head of the queue for
 * BLOCKING_ADMIT_DEADLINE_USEC (head_since: when the job there got there,
 * set by the push onto an empty queue and by each pop that leaves one
 * behind) is admitted whatever the meter says. The standby looks at the
 * next window's end or at the head's deadline, whichever comes first, so
 * the head is taken within the deadline of reaching the head plus the
 * time the system takes to run the standby; taking it starts the next
 * thread as any take does (below), which stands by for the next job.
 * The deadline runs from reaching the head, not from the spawn: a long
 * queue of short jobs that compute moves at least once per deadline and
 * stays at cpu_slots threads, while a queue that does not move (jobs
 * that compute for longer than the deadline, or that wait for a queued
 * job while runnable) grows the pool by at most one thread per deadline,
 * towards max-blocking-threads, as jobs that block do.
 *
 * Why no queued job is stranded. Call a thread available when it is
 * listed idle, woken by a schedule and not yet back at the queue, the
 * standby, or starting (counted in n_threads and n_starting, not yet in
 * its loop).
 * While the pool is open and has room (n_threads < max), at least one
 * thread is available, unless a thread could not be started:
 *   - the first thread is counted before it starts;
 *   - a thread stops being available only by taking a job, and then, if
 *     no thread is idle, standby or starting, it starts one first (a
 *     woken thread that it does not see is itself available); if it
 *     starts none while jobs are still queued and there is no standby, it
 *     wakes a listed idle thread: the spawns of those jobs may have woken
 *     nobody because this thread was the standby then, so the duty to
 *     wake moves with the end of its standing by;
 *   - the standby takes a job as soon as fewer than cpu_slots running
 *     jobs are busy, or the job has waited at the head for the deadline,
 *     whatever the meter says (so this holds however wrong the meter
 *     is); while it waits, a spawn need not wake anyone;
 *   - an idle thread retires only while another one is listed idle (the
 *     last idle thread never retires while the pool is open), and a woken
 *     thread that finds the queue empty lists itself idle again;
 *   - a thread leaves the pool only by retiring (or at close), so a full
 *     pool does not turn into one with room and nobody available.
 * A push wakes a listed idle thread if there is one and no standby;
 * otherwise an available thread is on its way to the queue or standing
 * by, or the pool is full and
 * the job waits for a running job to end (as at the cap before). A thread
 * that takes a job hands the rest of the queue to the thread it starts,
 * so every queued job has a thread that will take it or start one
 * (models/blocking-pool.pml checks it, with a meter that may say busy
 * for ever, and finds a stranded job when a thread starts another only
 * while more jobs are queued, when a thread that may not take a job waits
 * idle instead of standing by, when the standby takes a job without
 * waking an idle thread, or when the meter's word is the only rule, with
 * no deadline). If a
 * start fails on a pool thread, the job stays queued for the threads
 * there are (the one that failed is one of them, and the next thread to
 * take a job tries again).
 *
 * Idle threads retire in two steps, decided under the lock by the idle
 * thread itself when its wait times out (wait_for_job_locked):
 *   - a thread idle for keep-alive / BLOCKING_SURPLUS_DIVISOR retires if
 *     BLOCKING_IDLE_SPARE other threads are idle: a burst's surplus goes
 *     within an eighth of the keep-alive (1.25 s by default) instead of
 *     staying for all of it;
 *   - a thread idle for keep-alive retires if another thread is idle: so
 *     the spare ones go too, down to one idle thread, which never retires
 *     while the pool is open (the reserve above).
 * Why a spare of 4 and an eighth rather than halving the idle set every
 * quarter keep-alive: halving leaves 256 of 512 idle threads for 2.5 s
 * and takes longer than the keep-alive to reach a handful; a fixed spare
 * is the same after any burst. A load that comes back within the grace
 * finds its threads; a steady load of N concurrent jobs keeps N busy
 * threads and up to 4 idle ones, and a thread retires only after a whole
 * grace in which no job needed it, so a load that fluctuates retires and
 * restarts a thread at most once per grace. Threads adopted after
 * ws_block_in_place () run the same loop, so they obey the same rule.
 *
 * What else holds:
 *
 *  - A job is bound to the pool's task registry at spawn (under the
 *    registry's lock: refused once it is closed, never counted), so
 *    shutdown reaches every job through the registry, queued or not.
 *  - A schedule takes the queue lock and either queues the job (waking an
 *    idle thread if there is one) or, for a job that returned PENDING,
 *    hands it back to the thread that polled it (the "pinned" table): a
 *    pending job keeps its thread, which parks on its own GMainContext
 *    until the job is woken, like a dedicated block_on. A closed pool
 *    drops the queued reference; it never completes or cancels a job
 *    (but for the no-thread-at-all case above, on a spawn).
 *  - Every thread that runs jobs is counted from before it is created
 *    (n_threads, then n_exiting until its stop hook has run), so shutdown
 *    waits for all of them, the one being started included; no thread is
 *    started into a closed pool, and one that was being started when it
 *    closed leaves at once. A job that shuts its own
 *    runtime down is recognised (ws_thread.blocking_pool) and not waited
 *    for.
 *  - A thread that left ws_block_in_place () is adopted with its context
 *    (ws_thread.adopted_context) when the pool has room and is open.
 *
 * The meter's reads. A look at a meter reads /proc (ws-run-meter.c),
 * which the pool does not do under its lock, or a spawn would wait for
 * it. The thread deciding an admission (look_at_meters_locked) notes,
 * under the lock, which running jobs' meters are due and their fds, sets
 * looking, reads them with the lock dropped, and takes the lock again to
 * record what it saw for the jobs still running (a slot's n_taken tells
 * the job looked at from a later one), then decides on what the meters
 * say now, after checking the queue and closed again. One thread looks
 * at a time (another uses what the meters saw last). The fds stay open:
 * a thread that leaves the pool closes its meter only after waiting,
 * under the lock, until no look is under way, so a look never reads a
 * closed (or reused) descriptor, and every slot it noted is alive when
 * it takes the lock again. The lock dropped for a look changes nothing
 * in the argument above: the looking thread is available (on its way to
 * the queue), what it decides is taken in one hold, and the meter's
 * answer may be anything there anyway.
 *
 * The pool's counts, lists and queue are read and written under its lock
 * only; no atomic is involved.
 *
 * Its part in shutdown (ws-worker-pool.c, steps 1 and 7): close (the
 * registry, then the queue: queued jobs are cancelled through the
 * registry and their queue references dropped; idle and pinned threads
 * are woken; no thread is started into a closed pool), then wait, up to
 * the deadline, until every thread, started or starting, is gone.
 */

#include "config.h"

#include "ws-blocking-pool-private.h"
#include "ws-owed-private.h"
#include "ws-run-meter-private.h"
#include "ws-task-fifo-private.h"

/* Idle threads that may stay for the whole keep-alive; the idle
 * threads beyond them retire after keep-alive / BLOCKING_SURPLUS_DIVISOR
 * (see above). */
#define BLOCKING_IDLE_SPARE      4
#define BLOCKING_SURPLUS_DIVISOR 8

/* How long the job at the head of the queue waits for the meter before
 * it is admitted anyway (The admission deadline, above; doc/blocking.md
 * states it): four meter windows, so that a job the meter finds blocked
 * is normally taken well before, and a burst of short jobs that compute
 * on a loaded machine rarely waits that long at the head. */
#define BLOCKING_ADMIT_DEADLINE_USEC (4 * WS_RUN_METER_WINDOW_USEC)

typedef struct _BlockingSlot BlockingSlot;

struct _WsBlockingPool
{
  WsTaskHost     host;           /* first */
  WsTaskRegistry   registry;
  const WsConfig *config;        /* the runtime's */
  WsRuntimeRef  *runtime;        /* the count a task holds (H) */
  WsLock         lock;
  WsCond         exit_cond;      /* shutdown waits here */
  BlockingSlot  *idle;           /* idle threads, most recent first */
  WsTaskFifo     queue;          /* jobs waiting for a thread */
  guint          n_threads;      /* started or starting, not yet leaving */
  guint          n_idle;
  guint          n_starting;     /* counted in n_threads, not yet in the loop */
  guint          n_exiting;      /* left the loop, stop hook not yet run */
  gboolean       closed;
  GHashTable    *pinned;         /* WsRawTask* -> BlockingSlot*: jobs being polled */
  BlockingSlot  *standby;        /* waiting for a CPU slot, if a thread is */
  guint          cpu_slots;      /* busy jobs that may run at once */
  gint64         head_since;     /* when the queue's head got there */
  guint64        n_overdue;      /* jobs admitted by the deadline */
  gboolean       looking;        /* a thread reads meters without the lock */
};

static void blocking_schedule (WsTaskHost *host,
                               WsRawTask  *task,
                               gboolean    is_yield);

static const WsTaskHostVTable blocking_host_vtable = {
  .schedule = blocking_schedule,
  /* The pool's memory is the runtime's: a task holds the runtime. */
  .ref = ws_task_host_ref_runtime,
  .unref = ws_task_host_unref_runtime,
  .bind = ws_task_registry_bind_task,
  .release = ws_task_registry_release_task,
};

WsBlockingPool *
ws_blocking_pool_new (const WsConfig *config,
                      WsRuntimeRef   *runtime)
{
  /* Aligned: the members marked _Alignas sit on cache lines of their own. */
  WsBlockingPool *self = g_aligned_alloc0 (1, sizeof (WsBlockingPool), 64);

  self->host.vtable = &blocking_host_vtable;
  self->host.trace_kind = WS_TRACE_BLOCKING_JOB;
  self->host.registry = &self->registry;
  self->host.runtime = runtime;
  ws_task_registry_init (&self->registry);
  self->config = config;
  self->runtime = runtime;
  ws_lock_init (&self->lock);
  ws_cond_init (&self->exit_cond);
  self->pinned = g_hash_table_new (NULL, NULL);
  self->cpu_slots = ws_run_meter_cpu_slots ();
  return self;
}

void
ws_blocking_pool_free (WsBlockingPool *self)
{
  g_assert (ws_task_fifo_is_empty (&self->queue));
  g_hash_table_unref (self->pinned);
  ws_task_registry_clear (&self->registry);
  ws_lock_clear (&self->lock);
  ws_cond_clear (&self->exit_cond);
  g_aligned_free (self);
}

WsTaskRegistry *
ws_blocking_pool_get_registry (WsBlockingPool *self)
{
  return &self->registry;
}

/* One per thread of the pool, on its stack. A thread polls tasks, so it
 * has a thread-default GMainContext of its own that it iterates while it
 * waits (WsParker), idle or for the job it polls: a GIO call made by a
 * job, or after ws_block_in_place (), completes here. A job that returned
 * PENDING keeps its thread, which sleeps until the job is woken, like a
 * dedicated block_on (tokio's spawn_blocking + block_on). */
struct _BlockingSlot
{
  WsRawTask     *job;        /* the job this thread polls, while it does */
  WsRawTask     *ready;      /* set by a wake of that job */
  GMainContext  *context;
  WsParker       parker;
  BlockingSlot  *next_idle;  /* in the pool's idle list, under its lock */
  gboolean       listed;     /* in the idle list */
  WsRunMeter     meter;      /* is this thread's job busy or blocked? */
  guint          n_taken;    /* jobs taken: tells one job's looks from the next's */
};

static void
wait_locked (WsBlockingPool *self,
             BlockingSlot   *slot,
             gint64          deadline,
             gboolean       *notified)
{
  gboolean n;

  ws_lock_unlock (&self->lock);
  n = ws_parker_park_until (&slot->parker, deadline);
  ws_lock_lock (&self->lock);
  if (notified != NULL)
    *notified = n;
}

/* @task was taken by take_job_locked (), which made it this slot's. */
static void
run_job (WsBlockingPool *self,
         BlockingSlot   *slot,
         WsContext      *cx,
         WsRawTask      *task)
{
  for (;;)
    {
      cx->budget = self->config->budget;
      ws_raw_task_run (task, cx);

      ws_lock_lock (&self->lock);
      while (slot->ready == NULL && !ws_raw_task_is_complete (task) && !self->closed)
        wait_locked (self, slot, -1, NULL);
      if (slot->ready == NULL)
        break;                  /* complete, or shut down (the task registry ends it) */
      task = g_steal_pointer (&slot->ready);
      ws_lock_unlock (&self->lock);
    }

  g_hash_table_remove (self->pinned, task);
  slot->job = NULL;
  ws_lock_unlock (&self->lock);
  ws_raw_task_unref (task);
}

static void
unlist_idle_locked (WsBlockingPool *self,
                    BlockingSlot   *slot)
{
  BlockingSlot **link = &self->idle;

  if (!slot->listed)
    return;
  while (*link != slot)
    link = &(*link)->next_idle;
  *link = slot->next_idle;
  slot->next_idle = NULL;
  slot->listed = FALSE;
  self->n_idle--;
}

/* Unlists the most recent idle thread and wakes it. */
static void
wake_idle_locked (WsBlockingPool *self)
{
  BlockingSlot *idle = self->idle;

  unlist_idle_locked (self, idle);
  ws_parker_unpark (&idle->parker);
}

/* @start + @delay, or -1 (no deadline) past the end of time. */
static gint64
deadline_after (gint64 start,
                gint64 delay)
{
  return delay > G_MAXINT64 - start ? -1 : start + delay;
}

/* A look due at a running job's meter, taken under the lock and read
 * without it (The meter's reads, above). */
typedef struct
{
  BlockingSlot *slot;
  guint         n_taken;
  gint          fd;
  gboolean      has_clock;
  clockid_t     cpu_clock;
  WsRunSample   sample;
} DueLook;

/* With the lock held: makes the looks due at the running jobs' meters,
 * reading them with the lock dropped, and records what they saw for the
 * jobs that still run. One thread looks at a time; another one that
 * finds a look under way uses what the meters saw last. */
static void
look_at_meters_locked (WsBlockingPool *self,
                       gint64          now,
                       gint64          window)
{
  g_autofree DueLook *due = NULL;
  GHashTableIter iter;
  gpointer value;
  guint n_due = 0;

  if (self->looking)
    return;
  due = g_new (DueLook, g_hash_table_size (self->pinned));
  g_hash_table_iter_init (&iter, self->pinned);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    {
      BlockingSlot *slot = value;

      if (!ws_run_meter_look_due (&slot->meter, now, window))
        continue;
      due[n_due].slot = slot;
      due[n_due].n_taken = slot->n_taken;
      due[n_due].fd = slot->meter.fd;
      due[n_due].has_clock = slot->meter.has_clock;
      due[n_due].cpu_clock = slot->meter.cpu_clock;
      n_due++;
    }
  if (n_due == 0)
    return;

  /* The fds stay open while looking is set: a thread leaves the pool
   * (and closes its meter) only once no look is under way. The slots
   * are not touched until the lock is held again. */
  self->looking = TRUE;
  ws_lock_unlock (&self->lock);
  for (guint i = 0; i < n_due; i++)
    ws_run_meter_sample (due[i].fd, due[i].has_clock, due[i].cpu_clock, &due[i].sample);
  ws_lock_lock (&self->lock);
  self->looking = FALSE;
  ws_cond_broadcast (&self->exit_cond);

  /* Every slot looked at is alive: its thread, if it left the pool
   * meanwhile, waits for looking to clear under the lock we hold. A slot
   * that still runs a job (job set) and has taken no other since is
   * running the job looked at. */
  for (guint i = 0; i < n_due; i++)
    {
      BlockingSlot *slot = due[i].slot;

      if (slot->job != NULL && slot->n_taken == due[i].n_taken)
        (void) ws_run_meter_judge (&slot->meter, now, &due[i].sample);
    }
}

/* With the lock held and a job queued: whether a thread may take it
 * now. It may while fewer than cpu_slots of the running jobs are busy on
 * a CPU (How many run at once, above), or once the job has waited at the
 * head of the queue for the deadline (The admission deadline). May drop
 * the lock to read the meters; returns TRUE only with a job queued and
 * the pool open, for the caller to take in this hold. */
static gboolean
admitted_locked (WsBlockingPool *self)
{
  guint n_running = g_hash_table_size (self->pinned);
  GHashTableIter iter;
  gpointer value;
  gint64 now;
  gint64 window;
  guint n_busy = 0;

  if (n_running < self->cpu_slots)
    return TRUE;
  now = g_get_monotonic_time ();
  if (now - self->head_since >= BLOCKING_ADMIT_DEADLINE_USEC)
    {
      self->n_overdue++;        /* the caller takes the job in this hold */
      return TRUE;
    }

  /* A look costs a read of /proc: with many jobs running, each is looked
   * at less often, so that the looks stay about 8 per millisecond. */
  window = WS_RUN_METER_WINDOW_USEC * MAX ((n_running + 15) / 16, 1);
  look_at_meters_locked (self, now, window);
  /* The lock may have been dropped: the queue may be empty, the pool
   * closed, jobs ended. */
  if (self->closed || ws_task_fifo_is_empty (&self->queue))
    return FALSE;
  if (g_hash_table_size (self->pinned) < self->cpu_slots)
    return TRUE;
  g_hash_table_iter_init (&iter, self->pinned);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    if (((BlockingSlot *) value)->meter.busy && ++n_busy >= self->cpu_slots)
      return FALSE;
  return TRUE;
}

/* With the lock held: the standby waits a meter window, or until the
 * head of the queue is due (The admission deadline), whichever comes
 * first, then looks again (it is woken early only by close). */
static void
wait_standby_locked (WsBlockingPool *self,
                     BlockingSlot   *slot)
{
  gint64 deadline = MIN (g_get_monotonic_time () + WS_RUN_METER_WINDOW_USEC,
                         self->head_since + BLOCKING_ADMIT_DEADLINE_USEC);

  self->standby = slot;
  wait_locked (self, slot, deadline, NULL);
  self->standby = NULL;
}

/* With the lock held: waits until this thread may take a queued job, or
 * the pool closes (TRUE), or until this thread is to retire (FALSE).
 * With a job queued, a thread that may not take it yet is the standby if
 * there is none, and otherwise waits listed idle like a thread with
 * nothing to do. Listed idle, it retires after the grace if
 * BLOCKING_IDLE_SPARE others are idle, after the keep-alive if another
 * one is; the last idle thread waits until woken. */
static gboolean
wait_for_job_locked (WsBlockingPool *self,
                     BlockingSlot   *slot)
{
  gint64 keep_alive = self->config->blocking_keep_alive;
  gint64 grace = keep_alive / BLOCKING_SURPLUS_DIVISOR;
  gint64 since = g_get_monotonic_time ();

  while (!self->closed)
    {
      gint64 idle_for;
      gint64 deadline;
      gboolean notified;

      if (!ws_task_fifo_is_empty (&self->queue))
        {
          if (admitted_locked (self))
            return TRUE;
          if (self->closed || ws_task_fifo_is_empty (&self->queue))
            continue;           /* changed while the meters were read */
          if (self->standby == NULL)
            {
              wait_standby_locked (self, slot);
              since = g_get_monotonic_time ();
              continue;
            }
        }

      /* This thread is not listed here: n_idle counts the others. */
      idle_for = g_get_monotonic_time () - since;
      if (idle_for >= grace && self->n_idle >= BLOCKING_IDLE_SPARE)
        return FALSE;
      if (idle_for >= keep_alive && self->n_idle > 0)
        return FALSE;

      if (idle_for < grace)
        deadline = since + grace;
      else if (idle_for < keep_alive)
        deadline = deadline_after (since, keep_alive);
      else
        deadline = -1;

      slot->next_idle = self->idle;
      self->idle = slot;
      slot->listed = TRUE;
      self->n_idle++;
      wait_locked (self, slot, deadline, &notified);
      unlist_idle_locked (self, slot);
      if (notified)
        since = g_get_monotonic_time ();   /* a job, shutdown, or a job taken by another */
    }

  return TRUE;
}

static void start_thread (WsBlockingPool *self);

/* A thread about to be started counts from now: for shutdown (n_threads)
 * and as available (n_starting). Under the lock; start_thread () follows
 * outside it. */
static inline void
count_starting_locked (WsBlockingPool *self)
{
  self->n_threads++;
  self->n_starting++;
}

/* With the lock held: pops the next job and makes it this slot's, in the
 * same hold as the admission that allowed it, so that two threads cannot
 * both be admitted for the last CPU slot; the next job's wait at the
 * head starts now. The slot's reference lets
 * run_job () look at the task after its poll. */
static WsRawTask *
take_job_locked (WsBlockingPool *self,
                 BlockingSlot   *slot)
{
  WsRawTask *task = ws_task_fifo_pop (&self->queue);

  if (task == NULL)
    return NULL;
  if (!ws_task_fifo_is_empty (&self->queue))
    self->head_since = g_get_monotonic_time ();
  ws_raw_task_ref (task);
  slot->job = task;
  slot->n_taken++;
  ws_run_meter_restart (&slot->meter);
  g_hash_table_insert (self->pinned, task, slot);
  return task;
}

/* With the lock held and n_threads already counting this thread. */
static void
thread_loop (WsBlockingPool *self)
{
  BlockingSlot slot = { NULL, };
  WsContext cx;

  memset (&cx, 0, sizeof cx);
  slot.context = g_steal_pointer (&ws_thread.adopted_context);
  if (slot.context == NULL)
    {
      slot.context = g_main_context_new ();
      g_main_context_push_thread_default (slot.context);
    }
  ws_parker_init (&slot.parker, slot.context);
  /* Under the lock, before anything can see the slot. */
  ws_run_meter_init (&slot.meter);
  ws_thread.blocking_pool = self;

  for (;;)
    {
      WsRawTask *task;
      gboolean start;

      if (!wait_for_job_locked (self, &slot))
        break;                  /* retired */

      task = take_job_locked (self, &slot);
      if (task == NULL)
        break;                  /* closed and drained */

      /* Before running the job, the next thread: the pool keeps one
       * available while it has room (see above). */
      start = !self->closed && self->n_idle == 0 && self->n_starting == 0
              && self->standby == NULL
              && self->n_threads < self->config->max_blocking_threads;
      if (start)
        count_starting_locked (self);
      else if (self->standby == NULL && self->idle != NULL
               && !ws_task_fifo_is_empty (&self->queue))
        wake_idle_locked (self);
      ws_lock_unlock (&self->lock);

      if (start)
        start_thread (self);
      run_job (self, &slot, &cx, task);

      ws_lock_lock (&self->lock);
    }

  ws_thread.blocking_pool = NULL;
  /* No longer serving jobs (a job queued from now on starts or wakes
   * another thread), but still counted for shutdown until the stop hook
   * has run. A look under way may still read this meter's fd (it took
   * it while the slot ran a job); none that starts later will. */
  self->n_threads--;
  self->n_exiting++;
  while (self->looking)
    ws_cond_wait (&self->exit_cond, &self->lock);
  ws_lock_unlock (&self->lock);
  ws_run_meter_clear (&slot.meter);

  /* Iterate this thread's context until GIO owes it nothing: the
   * completions of calls made by the jobs it ran (ws-owed.c). */
  (void) ws_owed_drain (slot.context, -1);
  g_main_context_pop_thread_default (slot.context);
  g_main_context_unref (slot.context);

  /* While still counted: shutdown waits for the count, and may release
   * the hooks after it. */
  ws_hook_run (&self->config->hooks[WS_HOOK_THREAD_STOP]);

  ws_lock_lock (&self->lock);
  self->n_exiting--;
  ws_cond_broadcast (&self->exit_cond);
  ws_lock_unlock (&self->lock);
}

static gpointer
blocking_thread_main (gpointer data)
{
  WsBlockingPool *self = data;
  WsRuntimeRef *runtime = self->runtime;

  ws_thread.runtime = runtime;
  ws_runtime_ref_keep_credit (runtime);
  ws_hook_run (&self->config->hooks[WS_HOOK_THREAD_START]);

  ws_lock_lock (&self->lock);
  self->n_starting--;
  thread_loop (self);

  ws_thread.runtime = NULL;
  ws_runtime_ref_return_credit ();
  ws_runtime_ref_release (runtime);
  return NULL;
}

/* Starts a thread that the caller counted in n_threads and n_starting
 * under the lock; called without it. If the thread cannot be created,
 * the counts are taken back and queued jobs stay for the threads there
 * are; if there are none (only a spawn into a pool without threads can
 * get here), nobody will run the queue, so it is cancelled here rather
 * than hang its waiters. */
static void
start_thread (WsBlockingPool *self)
{
  g_autofree gchar *name = g_strdup_printf ("%s-blk", self->config->thread_name_prefix);
  g_autoptr(GError) error = NULL;
  WsTaskFifo stranded = WS_TASK_FIFO_INIT;
  GThread *thread;
  WsRawTask *t;

  /* The new thread's: released when it ends. */
  ws_runtime_ref_acquire (self->runtime);
  thread = g_thread_try_new (name, blocking_thread_main, self, &error);
  if (thread != NULL)
    {
      g_thread_unref (thread);
      return;
    }

  g_warning ("wsrt: could not start a blocking thread: %s", error->message);
  ws_lock_lock (&self->lock);
  self->n_threads--;
  self->n_starting--;
  if (self->n_threads == 0)
    stranded = ws_task_fifo_take_all (&self->queue);
  ws_cond_broadcast (&self->exit_cond);
  ws_lock_unlock (&self->lock);
  while ((t = ws_task_fifo_pop (&stranded)) != NULL)
    {
      ws_raw_task_cancel (t);           /* sets CANCELLED on the queued task */
      ws_raw_task_run (t, &(WsContext) { 0, });  /* ends it here */
    }
  /* The caller holds the runtime too (a pool thread, or a task). */
  ws_runtime_ref_release (self->runtime);
}

/* A worker thread that gave its core away (ws_block_in_place) joins the
 * pool, with the context it took as its thread default
 * (ws_thread.adopted_context), unless the pool is full or closed. Called
 * while the thread still counts as a thread of the worker pool; returns
 * TRUE if this pool now counts it, and then the thread calls
 * ws_blocking_pool_run_adopted (). */
gboolean
ws_blocking_pool_try_adopt (WsBlockingPool *self)
{
  gboolean adopted;

  ws_lock_lock (&self->lock);
  adopted = !self->closed && self->n_threads < self->config->max_blocking_threads;
  if (adopted)
    self->n_threads++;
  ws_lock_unlock (&self->lock);

  return adopted;
}

void
ws_blocking_pool_run_adopted (WsBlockingPool *self)
{
  ws_lock_lock (&self->lock);
  thread_loop (self);
}

static void
blocking_schedule (WsTaskHost *host,
                   WsRawTask  *task,
                   gboolean    is_yield)
{
  WsBlockingPool *self = (WsBlockingPool *) host;
  BlockingSlot *slot;
  gboolean start = FALSE;

  ws_lock_lock (&self->lock);
  if (self->closed)
    {
      ws_lock_unlock (&self->lock);
      /* Shutdown reaches the task through the task registry. */
      ws_raw_task_unref (task);
      return;
    }

  /* A job that was polled before goes back to its own thread. The slot
   * lives while its thread holds the lock we hold. */
  slot = g_hash_table_lookup (self->pinned, task);
  if (slot != NULL)
    {
      g_assert (slot->ready == NULL);
      slot->ready = task;
      ws_parker_unpark (&slot->parker);
      ws_lock_unlock (&self->lock);
      return;
    }

  if (ws_task_fifo_is_empty (&self->queue))
    self->head_since = g_get_monotonic_time ();
  ws_task_fifo_push (&self->queue, task);

  /* Never a thread started here while the pool has one: an idle thread
   * takes the job, or the standby, or one that is starting or running
   * does (see above). While there is a standby, the job waits for a CPU
   * slot like it: waking an idle thread would only make it wait too (and
   * a pool with a standby has a thread). */
  if (self->standby == NULL && self->idle != NULL)
    wake_idle_locked (self);
  else if (self->n_threads == 0)
    {
      /* The first spawn, or the threads could not be started. */
      count_starting_locked (self);
      start = TRUE;
    }
  ws_lock_unlock (&self->lock);

  if (start)
    start_thread (self);
}

void
ws_blocking_pool_close (WsBlockingPool *self)
{
  WsTaskFifo queued;
  WsRawTask *t;

  ws_task_registry_close (&self->registry);

  ws_lock_lock (&self->lock);
  self->closed = TRUE;
  queued = ws_task_fifo_take_all (&self->queue);
  while (self->idle != NULL)
    wake_idle_locked (self);
  if (self->standby != NULL)
    ws_parker_unpark (&self->standby->parker);
  {
    GHashTableIter iter;
    gpointer value;

    /* Wake threads sleeping on a pending job: the registry ends it. */
    g_hash_table_iter_init (&iter, self->pinned);
    while (g_hash_table_iter_next (&iter, NULL, &value))
      ws_parker_unpark (&((BlockingSlot *) value)->parker);
  }
  ws_lock_unlock (&self->lock);

  /* Queued jobs are cancelled (their destroy notifies run here, through
   * the registry, which holds every job of this pool); running ones are
   * waited for in shutdown. The queue's references are dropped. */
  ws_task_registry_shutdown_all (&self->registry, FALSE);
  while ((t = ws_task_fifo_pop (&queued)) != NULL)
    ws_raw_task_unref (t);
}

gboolean
ws_blocking_pool_shutdown (WsBlockingPool *self,
                           gint64          deadline)
{
  guint self_threads = 0;
  gboolean done;

  /* A blocking job that shuts its own runtime down cannot wait for
   * itself. */
  if (ws_thread.blocking_pool == self)
    self_threads = 1;

  ws_lock_lock (&self->lock);
  while (self->n_threads + self->n_exiting > self_threads)
    if (!ws_cond_wait_until (&self->exit_cond, &self->lock, deadline))
      break;
  done = self->n_threads + self->n_exiting <= self_threads;
  ws_lock_unlock (&self->lock);

  /* Every job has ended (its thread is gone): the ones that something
   * still holds by a waker need not hold the pool (ws-raw-task.c). */
  if (done && self_threads == 0)
    ws_raw_task_release_zombies (&self->host);
  return done && self_threads == 0;
}

void
ws_blocking_pool_get_counts (WsBlockingPool *self,
                             guint          *n_threads,
                             guint          *n_idle,
                             guint          *queue_depth)
{
  ws_lock_lock (&self->lock);
  *n_threads = self->n_threads;
  *n_idle = self->n_idle;
  *queue_depth = (guint) ws_task_fifo_len (&self->queue);
  ws_lock_unlock (&self->lock);
}

/* The jobs admitted by the deadline rather than by the meter, so far
 * (for the tests' bounds). */
guint64
ws_blocking_pool_get_n_overdue (WsBlockingPool *self)
{
  guint64 n;

  ws_lock_lock (&self->lock);
  n = self->n_overdue;
  ws_lock_unlock (&self->lock);
  return n;
}

/* Binding at spawn: the registry's lock decides, so a spawn is refused
 * (never counted, its destroy notify run here) or in the registry that
 * shutdown walks. */
WsRawTask *
ws_blocking_pool_spawn (WsBlockingPool *self,
                        WsTaskFunc      func,
                        gpointer        data,
                        GDestroyNotify  destroy,
                        gboolean        join_interest)
{
  WsRawTask *task = ws_raw_task_new (&self->host, func, data, destroy, join_interest);

  if (!ws_task_registry_bind (&self->registry, task))
    {
      ws_raw_task_refuse (task);
      return join_interest ? task : NULL;
    }

  blocking_schedule (&self->host, task, FALSE);
  return join_interest ? task : NULL;
}
