/* park.pml: the idle and park/unpark protocol of the worker pool
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * NW workers and one remote producer. Mirrors, for what is listed here:
 *  - worker_run, steal_work, run_task, transition_from_searching, park
 *    (wsrt/core/ws-worker.c);
 *  - ws_sleepers_transition_to_searching, ws_sleepers_transition_from_searching,
 *    ws_sleepers_transition_to_parked, ws_sleepers_worker_to_notify,
 *    ws_sleepers_is_parked (wsrt/core/ws-sleepers.c): the state word with its
 *    searching and unparked counts, and the sleeper stack under its lock;
 *  - ws_parker_park / ws_parker_unpark (wsrt/core/ws-parker.c): EMPTY, PARKED,
 *    NOTIFIED; a sleeping worker blocks until NOTIFIED (the eventfd wakeup
 *    of g_main_context_wakeup is sticky, so "blocks until" is exact);
 *  - push_remote (wsrt/core/ws-worker-pool.c): a remote spawn pushes to the
 *    injection queue (ws_inject_queue_push_remote, seq_cst store of its
 *    count of pushes)
 *    and looks at the idle state (ws_sleepers_worker_to_notify_after_sc,
 *    a seq_cst load of state with no fence before it: two seq_cst
 *    operations, kept in order by C11's single total order, which is
 *    spin's order here too);
 *  - a task running on a worker spawns a child into the worker's local
 *    queue and notifies (ws_worker_schedule_local, the run-queue path),
 *    then blocks its worker until another worker took the child, as a
 *    task that busy-waits for its child does
 *    (/scheduling/blocked-worker-child-stolen);
 *  - a worker that is not searching takes a batch from the injection
 *    queue (take_injected: len / NW + 1 tasks), runs the first and pushes
 *    the rest to its run queue, then notifies for them;
 *  - -DBLOCKER: one more task, taken from the injection queue, blocks its
 *    worker until every task ran;
 *  - -DTIMED_PARK: a parker whose fiber stacks want a trim parks with a
 *    deadline (ws_parker_park_until); a return at the deadline takes no
 *    wake and leaves the parker EMPTY; the worker, still listed as
 *    sleeping, trims and parks again without one (park, ws-worker.c).
 *
 * Spin's interleaving semantics are sequentially consistent, which is what
 * the seq_cst operations of the Dekker check provide in C: the producer
 * stores the count then loads state; the parker RMWs state then loads the
 * count.
 * Queue contents are counts; a steal takes the larger half
 * (ws_local_queue_steal_into); the injection pop takes one task.
 *
 * Properties (assertions):
 *  - no lost wake: when nothing can move any more (every worker asleep or
 *    blocked), no task is left in the injection queue or in any local
 *    queue, and every task ran (monitor, on `timeout`);
 *  - the counts stay within bounds: searching <= unparked <= NW, and a
 *    worker is asleep exactly when it is on the sleeper stack.
 *
 * Broken variants, each a test that expects pan to find a stranded task:
 *  - -DBROKEN_RECHECK: no parker re-checks the queues after announcing
 *    its park (the parker's half of the Dekker check is gone): a remote
 *    task is stranded while every worker sleeps
 *    (model-park-broken-recheck);
 *  - -DBROKEN_NONLAST_INJECT_ONLY: a parker that is not the last searcher
 *    re-checks the injection queue only: the child is stranded behind its
 *    blocked owner while the other worker sleeps
 *    (model-park-broken-nonlast-inject-only);
 *  - -DBROKEN_SEARCH_EXIT_OWN_ONLY -DBLOCKER -DNW=3 -DNREMOTE=2 (by
 *    hand): the last searcher that stops searching looks at its own queue
 *    and the injection queue only: the child is left while the searcher
 *    runs the blocking task and the third worker sleeps;
 *  - -DBROKEN_BATCH_NO_NOTIFY -DBLOCKER -DNCHILD=0 -DNREMOTE=2: a worker
 *    that takes a batch from the injection queue into its run queue does
 *    not notify for it: the second task waits behind the first, which
 *    blocks, while the other worker sleeps
 *    (model-park-broken-batch-no-notify);
 *  - -DTIMED_PARK -DBROKEN_TIMED_RESET: the trim after the deadline resets
 *    the parker to EMPTY before it parks again, dropping a wake that came
 *    after its look at the sleeper list: the woken worker sleeps while
 *    counted as searching, and a task waits (model-park-broken-timed-reset).
 *
 * Not modelled: the LIFO slot, the take-back of work-first, the fairness
 * tick, overflow; a steal is one atomic step. CI runs the default (2
 * workers, 1 remote spawn), -DNREMOTE=2, -DBLOCKER -DNCHILD=0
 * -DNREMOTE=2, and -DTIMED_PARK; doc/testing.md gives the sizes and the
 * searches made by hand.
 */

#ifndef NW
#define NW 2
#endif
#ifndef NREMOTE
#define NREMOTE 1            /* remote spawns */
#endif
#ifndef NCHILD
#define NCHILD 1             /* spawns from inside tasks */
#endif

#define EMPTY    0
#define PARKED   1
#define NOTIFIED 2

/* WsSleepers.state, split in its two halves (one word in C: every change
 * below is one atomic RMW or load of it). */
byte searching = 0;
byte unparked = NW;
/* Under WsSleepers.lock. */
bool idle_lock = false;
byte sleepers[NW];
byte n_sleepers = 0;
bool is_sleeping[NW];

byte parker[NW];             /* WsParker.state */
byte inject = 0;             /* WsInjectQueue.pushed - popped */
byte lq[NW];              /* local run queue lengths */
byte ran = 0;                /* tasks polled */
byte children_left = NCHILD;
byte blockers_left = 1;      /* -DBLOCKER: a remote task that blocks */

inline lock ()
{
  atomic { !idle_lock -> idle_lock = true }
}

inline unlock ()
{
  idle_lock = false
}

inline should_wake (result)
{
  result = (searching == 0 && unparked < NW)
}

/* ws_worker_pool_notify_parked = ws_sleepers_worker_to_notify + unpark */
inline notify_parked ()
{
  bool wake;
  byte w;

  should_wake (wake);                  /* fence + seq_cst load */
  if
  :: wake ->
     lock ();
     should_wake (wake);
     if
     :: wake && n_sleepers > 0 ->
        atomic {
          unparked++;                  /* counts as unparked and searching */
          searching++
        };
        n_sleepers--;
        w = sleepers[n_sleepers];
        is_sleeping[w] = false;
        unlock ();
        parker[w] = NOTIFIED           /* ws_parker_unpark */
     :: else -> unlock ()
     fi
  :: else -> skip
  fi;
  w = 0
}

inline any_work_pending (result)
{
  byte u;

  result = inject > 0;
  u = 0;
  do
  :: u < NW -> result = result || lq[u] > 0; u++
  :: else -> break
  od;
  u = 0
}

proctype producer ()
{
  byte k = 0;

  do
  :: k < NREMOTE ->
     inject++;                         /* push: seq_cst store of pushed */
     notify_parked ();
     k++
  :: else -> break
  od
}

proctype worker (byte me)
{
  bool is_searching = false;
  bool found;
  bool last;
  bool pending;
#ifdef TIMED_PARK
  bool trim_pending;
  bool timed_out;
#endif
  byte st;
  byte v;
  byte n;

  do
  :: true ->
     found = false;

     /* next_task: the local queue */
     atomic {
       if
       :: lq[me] > 0 -> lq[me]--; found = true
       :: else -> skip
       fi
     }

     /* next_task: pop_injected by a worker that is not searching
      * (take_injected: a batch of len / NW + 1 under head_lock, the rest
      * pushed to our run queue, then a notify for them) */
     if
     :: !found && !is_searching ->
        atomic {
          if
          :: inject > 0 ->
             n = inject / NW + 1;
             if
             :: n > inject -> n = inject
             :: else -> skip
             fi;
             inject = inject - n;
             found = true
          :: else -> n = 0
          fi
        };
        if
        :: n > 1 ->
           lq[me] = lq[me] + n - 1;
#ifndef BROKEN_BATCH_NO_NOTIFY
           notify_parked ()
#else
           skip
#endif
        :: else -> skip
        fi;
        n = 0
     :: else -> skip
     fi;

     /* steal_work */
     if
     :: !found ->
        if
        :: !is_searching ->
           st = searching;                       /* seq_cst load */
           if
           :: 2 * st < NW ->
              searching++;                       /* fetch_add */
              is_searching = true
           :: else -> skip
           fi
        :: else -> skip
        fi;
        if
        :: is_searching ->
           v = 0;
           do
           :: v < NW && !found ->
              if
              :: v != me ->
                 atomic {
                   if
                   :: lq[v] > 0 ->             /* steal the larger half */
                      n = lq[v] - lq[v] / 2;
                      lq[v] = lq[v] - n;
                      lq[me] = lq[me] + n - 1;
                      found = true
                   :: else -> skip
                   fi
                 }
              :: else -> skip
              fi;
              v++
           :: else -> break
           od;
           atomic {                               /* pop_injected */
             if
             :: !found && inject > 0 -> inject--; found = true
             :: else -> skip
             fi
           }
        :: else -> skip
        fi
     :: else -> skip
     fi;

     if
     :: found ->
        /* run_task: transition_from_searching, then the poll */
        if
        :: is_searching ->
           is_searching = false;
           atomic { last = (searching == 1); searching-- };
           /* only if more work is in sight, in any queue (seq_cst
            * fence, hint loads) */
#ifndef BROKEN_SEARCH_EXIT_OWN_ONLY
           any_work_pending (pending);
#else
           pending = inject > 0 || lq[me] > 0;
#endif
           if
           :: last && pending -> notify_parked ()
           :: else -> skip
           fi
        :: else -> skip
        fi;
        ran++;
        /* A child spawned into our run queue (ws_worker_schedule_local)
         * and its notify; then the task blocks this worker until another
         * took the child. */
        atomic {
          found = children_left > 0;
          if
          :: found -> children_left--; lq[me]++
          :: else -> skip
          fi
        };
        if
        :: found ->
           notify_parked ();
           (lq[me] == 0)
        :: else ->
#ifdef BLOCKER
           /* Another task that blocks its worker, until every task ran. */
           atomic {
             found = blockers_left > 0;
             if
             :: found -> blockers_left--
             :: else -> skip
             fi
           };
           if
           :: found -> (ran == NREMOTE + NCHILD)
           :: else -> skip
           fi
#else
           skip
#endif
        fi
     :: else ->
        /* park (): never with work in our own queue */
        if
        :: lq[me] > 0 -> skip
        :: else ->
           lock ();
           atomic {                               /* seq_cst RMW */
             last = is_searching && searching == 1;
             unparked--;
             if
             :: is_searching -> searching--
             :: else -> skip
             fi
           };
           sleepers[n_sleepers] = me;
           n_sleepers++;
           is_sleeping[me] = true;
           unlock ();
           is_searching = false;

           /* the re-check (seq_cst fence, then the queues): every
            * parker looks at every queue */
#ifndef BROKEN_NONLAST_INJECT_ONLY
           any_work_pending (pending);
#else
           if
           :: last -> any_work_pending (pending)
           :: else -> pending = inject > 0
           fi;
#endif
#ifdef BROKEN_RECHECK
           pending = false;
#endif
           if
           :: pending -> notify_parked ()
           :: else -> skip
           fi;

           /* ws_parker_park until listed as not sleeping */
#ifdef TIMED_PARK
           trim_pending = true;                   /* parks with the trim's deadline */
           timed_out = false;
#endif
park_again:
           atomic {
             if
             :: parker[me] == NOTIFIED -> parker[me] = EMPTY
             :: else -> parker[me] = PARKED
             fi
           };
end_park:
#ifdef TIMED_PARK
           if
           :: atomic { parker[me] != PARKED -> parker[me] = EMPTY }
           :: atomic {                            /* the deadline: no wake taken */
                trim_pending && parker[me] == PARKED ->
                parker[me] = EMPTY;
                timed_out = true
              }
           fi;
#else
           atomic { parker[me] != PARKED -> parker[me] = EMPTY };
#endif
           lock ();
           found = is_sleeping[me];               /* ws_sleepers_is_parked */
           unlock ();
           if
           :: !found -> is_searching = true       /* woken by notify */
           :: else ->
#ifdef TIMED_PARK
              if
              :: timed_out ->                     /* trim, still listed as sleeping */
                 timed_out = false;
                 trim_pending = false;
#ifdef BROKEN_TIMED_RESET
                 parker[me] = EMPTY               /* drops a wake that came since the look */
#else
                 skip
#endif
              :: else -> skip
              fi;
#endif
              goto park_again
           fi
        fi
     fi
  od
}

proctype monitor ()
{
  byte v;

  timeout ->
    assert (inject == 0);                /* no lost wake */
    v = 0;
    do
    :: v < NW -> assert (lq[v] == 0); v++
    :: else -> break
    od;
    assert (ran == NREMOTE + NCHILD)
}

/* Bounds that hold in every state. */
active proctype invariants ()
{
end:
  do
  :: atomic { !(searching <= NW && unparked <= NW && n_sleepers <= NW) -> assert (false) }
  od
}

init
{
  byte i;

  atomic {
    i = 0;
    do
    :: i < NW -> run worker (i); i++
    :: else -> break
    od;
    run producer ();
    run monitor ()
  }
}
