/* test-shutdown.c: the shutdown protocol against the public API
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One regression test per way shutdown, wakes and hand-offs used to break
 * (doc/architecture.md, "Shutdown"; doc/testing.md lists which defect each
 * case covers). Where a window can be widened from user code it is: a
 * slow destroy notify, a blocking job that holds shutdown, a thread that
 * owns a context. Everything here is public API; the stress suite runs it
 * in every build (release, ASan+UBSan, TSan, chaos + small queue).
 */

#include "config.h"

#include <pthread.h>

#include <gio/gio.h>

#include "ws-test-util.h"
#include "wsrt.h"

/* ---- shared bits -------------------------------------------------------- */

typedef struct
{
  _Atomic gint destroyed;
  _Atomic gint polled;
} Counts;

static void
count_destroy (gpointer data)
{
  Counts *c = data;

  atomic_fetch_add (&c->destroyed, 1);
}

/* A task that never ends by itself: it keeps no waker. */
static WsPoll
pending_forever (WsContext *cx,
                 gpointer   data)
{
  Counts *c = data;

  atomic_fetch_add (&c->polled, 1);
  return WS_POLL_PENDING;
}

static WsPoll
ready_at_once (WsContext *cx,
               gpointer   data)
{
  Counts *c = data;

  atomic_fetch_add (&c->polled, 1);
  return WS_POLL_READY;
}

/* A job that holds its worker, and with it shutdown, until the test
 * releases it. Plain atomics: ThreadSanitizer does not see GLib's own
 * locks. */
typedef struct
{
  _Atomic gint released;
  _Atomic gint started;
} Gate;

static void
gate_init (Gate *g)
{
  atomic_init (&g->released, 0);
  atomic_init (&g->started, 0);
}

static void
gate_clear (Gate *g)
{
}

static void
gate_release (Gate *g)
{
  atomic_store (&g->released, 1);
}

static void
gate_wait_started (Gate *g)
{
  while (!atomic_load (&g->started))
    g_usleep (100);
}

static WsPoll
gate_job (WsContext *cx,
          gpointer   data)
{
  Gate *g = data;

  atomic_store (&g->started, 1);
  while (!atomic_load (&g->released))
    g_usleep (100);
  return WS_POLL_READY;
}

/* A lock for the tests' own shared slots: a POSIX mutex, which
 * ThreadSanitizer sees (a spin lock starved the owner thread of a
 * context while the waker looped). */
typedef struct
{
  pthread_mutex_t mutex;
} SpinLock;

static void
spin_lock (SpinLock *l)
{
  pthread_mutex_lock (&l->mutex);
}

static void
spin_unlock (SpinLock *l)
{
  pthread_mutex_unlock (&l->mutex);
}

typedef struct
{
  WsRuntime      *rt;
  gint64          timeout;
  _Atomic gint    done;
  gboolean        result;
} ShutdownCall;

static gpointer
shutdown_thread (gpointer data)
{
  ShutdownCall *call = data;

  call->result = ws_runtime_shutdown (call->rt, call->timeout);
  atomic_store (&call->done, 1);
  return NULL;
}

/* ---- 1. a refused spawn is never counted ------------------------------ */

typedef struct
{
  Counts   counts;
  Gate    *gate;
  GThread *spawner;
  _Atomic gint refused_seen;
  _Atomic gint destroyed_on_spawner;
} RefuseProbe;

static void
refuse_probe_destroy (gpointer data)
{
  RefuseProbe *p = data;

  if (atomic_load (&p->counts.polled) == 0)
    {
      /* Refused: shutdown is waiting for the gate job. Let it go on, and
       * stay inside the destroy notify meanwhile: a refused spawn that
       * was counted alive would make shutdown report FALSE. */
      atomic_store (&p->refused_seen, 1);
      gate_release (p->gate);
      g_usleep (200 * 1000);
    }
  if (g_thread_self () == p->spawner)
    atomic_store (&p->destroyed_on_spawner, 1);
  atomic_fetch_add (&p->counts.destroyed, 1);
}

static void
test_refused_spawn_not_counted (void)
{
  WsRuntime *rt = ws_runtime_new (2);
  ShutdownCall call = { rt, -1, 0, FALSE };
  GPtrArray *probes = g_ptr_array_new_with_free_func (g_free);
  Gate gate;
  GThread *t;
  guint n = 0;

  gate_init (&gate);
  ws_runtime_spawn_detached (rt, (WsTaskFunc) gate_job, &gate, NULL);
  gate_wait_started (&gate);

  t = g_thread_new ("shutdown", shutdown_thread, &call);

  /* Spawn from this (foreign) thread until one is refused. An accepted
   * probe may wait in a queue until shutdown's last sweep, which waits
   * for the gate job, which waits for a refusal: keep the accepted ones
   * and check them once shutdown has returned. */
  for (;;)
    {
      RefuseProbe *p = g_new0 (RefuseProbe, 1);

      p->gate = &gate;
      p->spawner = g_thread_self ();
      g_ptr_array_add (probes, p);
      ws_runtime_spawn_detached (rt, ready_at_once, p, refuse_probe_destroy);
      n++;
      /* Refused: destroyed here, before the spawn returned. */
      if (atomic_load (&p->destroyed_on_spawner))
        break;
      g_usleep (100);
    }

  g_thread_join (t);
  g_test_message ("%u spawns until one was refused", n);
  g_assert_true (call.result);
  for (guint i = 0; i < probes->len; i++)
    g_assert_cmpint (atomic_load (&((RefuseProbe *) probes->pdata[i])->counts.destroyed), ==, 1);
  g_ptr_array_unref (probes);
  g_object_unref (rt);
  gate_clear (&gate);
}

/* ---- 1. spawns racing shutdown from foreign threads -------------------- */

typedef struct
{
  WsRuntime    *rt;
  Counts       *counts;
  _Atomic gint *stop;
  guint         n_spawned;
} Spawner;

static gpointer
spawner_thread (gpointer data)
{
  Spawner *s = data;

  while (!atomic_load (s->stop) && s->n_spawned < 100000)
    {
      ws_runtime_spawn_detached (s->rt, s->n_spawned % 2 ? ready_at_once : pending_forever,
                                 s->counts, count_destroy);
      s->n_spawned++;
    }
  return NULL;
}

static void
test_spawns_race_shutdown (void)
{
  for (guint round = 0; round < 20; round++)
    {
      WsRuntime *rt = ws_runtime_new (2);
      Counts counts = { 0, 0 };
      _Atomic gint stop = 0;
      Spawner s[3];
      GThread *t[3];
      guint total = 0;
      gboolean ok;

      for (guint i = 0; i < G_N_ELEMENTS (s); i++)
        {
          s[i] = (Spawner) { g_object_ref (rt), &counts, &stop, 0 };
          t[i] = g_thread_new ("spawner", spawner_thread, &s[i]);
        }
      g_usleep (g_random_int_range (0, 2000));

      /* Spawns still going on are refused from the close on, and their
       * destroy notifies run on the spawning threads before the spawn
       * returns; every accepted one has ended when this returns TRUE. */
      ok = ws_runtime_shutdown (rt, -1);
      atomic_store (&stop, 1);
      for (guint i = 0; i < G_N_ELEMENTS (s); i++)
        {
          g_thread_join (t[i]);
          total += s[i].n_spawned;
          g_object_unref (s[i].rt);
        }
      g_assert_true (ok);
      g_assert_cmpint (atomic_load (&counts.destroyed), ==, total);
      g_object_unref (rt);
    }
}

/* ---- 1. a foreign wake during shutdown, then the runtime is freed ----- */

typedef struct
{
  _Atomic gint   destroyed;
  _Atomic gint   polls;
  GThread       *waker_thread;
  _Atomic gint   destroyed_on_waker;
  SpinLock       lock;
  WsWaker       *waker;
} WakeTarget;

static WakeTarget *
wake_target_new (void)
{
  WakeTarget *w = g_new0 (WakeTarget, 1);

  pthread_mutex_init (&w->lock.mutex, NULL);
  return w;
}

static WsPoll
wake_target_poll (WsContext *cx,
                  gpointer   data)
{
  WakeTarget *w = data;
  WsWaker *old;

  atomic_fetch_add (&w->polls, 1);
  spin_lock (&w->lock);
  old = w->waker;
  w->waker = ws_context_get_waker (cx);
  spin_unlock (&w->lock);
  if (old != NULL)
    ws_waker_unref (old);
  return WS_POLL_PENDING;
}

static void
wake_target_destroy (gpointer data)
{
  WakeTarget *w = data;

  if (g_thread_self () == w->waker_thread)
    {
      /* Cancelled inside the waker's push: widen the window in which the
       * runtime may be freed under it. */
      atomic_store (&w->destroyed_on_waker, 1);
      g_usleep (100 * 1000);
    }
  atomic_store (&w->destroyed, 1);
}

static gpointer
waker_loop (gpointer data)
{
  WakeTarget *w = data;

  while (!atomic_load (&w->destroyed))
    {
      WsWaker *waker;

      spin_lock (&w->lock);
      waker = w->waker != NULL ? ws_waker_ref (w->waker) : NULL;
      spin_unlock (&w->lock);
      if (waker != NULL)
        {
          ws_waker_wake (waker);
          ws_waker_unref (waker);
        }
    }
  return NULL;
}

/* Spawns probes until one is refused: then shutdown has closed the
 * runtime (a refused spawn runs its destroy notify before it returns).
 * The accepted ones may wait for a worker: they are kept in @probes for
 * the caller to check and free once shutdown has returned. */
static void
wait_until_closed (WsRuntime *rt,
                   GPtrArray *probes)
{
  for (;;)
    {
      Counts *c = g_new0 (Counts, 1);

      g_ptr_array_add (probes, c);
      ws_runtime_spawn_detached (rt, ready_at_once, c, count_destroy);
      if (atomic_load (&c->destroyed) == 1 && atomic_load (&c->polled) == 0)
        return;
      g_usleep (100);
    }
}

static void
check_probes (GPtrArray *probes)
{
  for (guint i = 0; i < probes->len; i++)
    g_assert_cmpint (atomic_load (&((Counts *) probes->pdata[i])->destroyed), ==, 1);
  g_ptr_array_unref (probes);
}

/* Made certain: the one worker is held by a gate job, so shutdown has
 * closed the runtime but no worker has walked its tasks yet when this
 * thread wakes an idle task. The wake must not cancel the task inside its
 * push (the destroy notify would run here, while shutdown goes on and the
 * program frees the runtime under it). */
static void
test_foreign_wake_during_shutdown (void)
{
  WsRuntime *rt = ws_runtime_new (1);
  WakeTarget *w = wake_target_new ();
  ShutdownCall call = { rt, -1, 0, FALSE };
  GPtrArray *probes = g_ptr_array_new_with_free_func (g_free);
  Gate gate;
  GThread *t;

  gate_init (&gate);
  w->waker_thread = g_thread_self ();
  ws_runtime_spawn_detached (rt, wake_target_poll, w, wake_target_destroy);
  while (atomic_load (&w->polls) == 0)
    g_usleep (100);
  ws_runtime_spawn_detached (rt, gate_job, &gate, NULL);
  gate_wait_started (&gate);

  t = g_thread_new ("shutdown", shutdown_thread, &call);
  wait_until_closed (rt, probes);

  ws_waker_wake (w->waker);
  g_assert_cmpint (atomic_load (&w->destroyed_on_waker), ==, 0);

  gate_release (&gate);
  g_thread_join (t);
  g_assert_true (call.result);
  g_assert_cmpint (atomic_load (&w->destroyed), ==, 1);
  check_probes (probes);
  g_object_unref (rt);

  /* A wake after the end does nothing, and touches no freed memory. */
  ws_waker_wake (w->waker);
  g_clear_pointer (&w->waker, ws_waker_unref);
  g_free (w);
  gate_clear (&gate);
}

/* ---- 2. no stack overflow on a long await chain ----------------------- */

#define CHAIN_LENGTH 200000

typedef struct
{
  WsRuntime    *rt;
  _Atomic gint  n_spawned;
  _Atomic gint  n_destroyed;
} Chain;

typedef struct
{
  Chain  *chain;
  WsTask *next;
  guint   level;
} Link;

static void
link_destroy (gpointer data)
{
  Link *l = data;

  g_clear_object (&l->next);
  atomic_fetch_add (&l->chain->n_destroyed, 1);
  g_free (l);
}

static WsPoll
link_poll (WsContext *cx,
           gpointer   data)
{
  Link *l = data;

  if (l->next == NULL)
    {
      atomic_fetch_add (&l->chain->n_spawned, 1);
      if (l->level + 1 == CHAIN_LENGTH)
        return WS_POLL_PENDING;       /* the end of the chain never ends */
      else
        {
          Link *n = g_new0 (Link, 1);

          n->chain = l->chain;
          n->level = l->level + 1;
          l->next = ws_runtime_spawn (l->chain->rt, link_poll, n, link_destroy);
        }
    }
  /* Await the next link. */
  return ws_task_poll (l->next, cx);
}

static void
test_long_await_chain (void)
{
  Chain chain = { ws_runtime_new (2), 0, 0 };
  Link *first = g_new0 (Link, 1);

  first->chain = &chain;
  ws_runtime_spawn_detached (chain.rt, link_poll, first, link_destroy);
  while (atomic_load (&chain.n_spawned) < CHAIN_LENGTH)
    g_usleep (1000);

  /* Cancelling the end wakes its awaiter, whose cancellation wakes the
   * next: shutdown must do that in a loop, not on the stack. */
  g_assert_true (ws_runtime_shutdown (chain.rt, -1));
  g_assert_cmpint (atomic_load (&chain.n_destroyed), ==, CHAIN_LENGTH);
  g_object_unref (chain.rt);
}

/* ---- 3. local tasks woken from other threads while shut down ---------- */

typedef struct
{
  GMainContext *context;
  _Atomic gint  quit;
  _Atomic gint  owning;
} ContextThread;

/* A thread that owns @ct's context (pushed as its thread default, so
 * acquired) until told to quit. */
static gpointer
iterate_context (gpointer data)
{
  ContextThread *ct = data;

  g_main_context_push_thread_default (ct->context);
  atomic_store (&ct->owning, 1);
  while (!atomic_load (&ct->quit))
    g_main_context_iteration (ct->context, TRUE);
  g_main_context_pop_thread_default (ct->context);
  return NULL;
}

static GThread *
context_thread_start (ContextThread *ct)
{
  GThread *t;

  ct->context = g_main_context_new ();
  atomic_init (&ct->quit, 0);
  atomic_init (&ct->owning, 0);
  t = g_thread_new ("owner", iterate_context, ct);
  while (!atomic_load (&ct->owning))
    g_usleep (100);
  return t;
}

static void
context_thread_stop (ContextThread *ct,
                     GThread       *t)
{
  atomic_store (&ct->quit, 1);
  g_main_context_wakeup (ct->context);
  g_thread_join (t);
}

static void
test_local_wakes_race_shutdown (void)
{
  for (guint round = 0; round < 30; round++)
    {
      WsRuntime *rt = ws_runtime_new (1);
      ContextThread ct;
      GThread *owner = context_thread_start (&ct);
      WakeTarget *w = wake_target_new ();
      gboolean ok;

      ws_runtime_spawn_local_detached (rt, ct.context, wake_target_poll, w, wake_target_destroy);
      while (atomic_load (&w->polls) == 0)
        g_usleep (100);
      w->waker_thread = g_thread_new ("waker", waker_loop, w);
      g_usleep (g_random_int_range (0, 1000));

      ok = ws_runtime_shutdown (rt, -1);
      g_assert_true (ok);
      g_assert_cmpint (atomic_load (&w->destroyed), ==, 1);
      g_object_unref (rt);

      g_thread_join (w->waker_thread);
      g_clear_pointer (&w->waker, ws_waker_unref);
      context_thread_stop (&ct, owner);
      g_main_context_unref (ct.context);
      g_free (w);
    }
}

/* spawn_local from several threads while the runtime shuts down: each is
 * accepted and ends, or is refused; nothing leaks (the leak check after
 * the case, and LeakSanitizer at exit). */
typedef struct
{
  WsRuntime    *rt;
  GMainContext *context;
  Counts       *counts;
  _Atomic gint *stop;
  guint         n;
} LocalSpawner;

static gpointer
local_spawner_thread (gpointer data)
{
  LocalSpawner *s = data;

  while (!atomic_load (s->stop) && s->n < 20000)
    {
      ws_runtime_spawn_local_detached (s->rt, s->context, ready_at_once, s->counts, count_destroy);
      s->n++;
    }
  return NULL;
}

static void
test_local_spawns_race_shutdown (void)
{
  for (guint round = 0; round < 20; round++)
    {
      WsRuntime *rt = ws_runtime_new (1);
      ContextThread ct;
      GThread *owner = context_thread_start (&ct);
      Counts counts = { 0, 0 };
      _Atomic gint stop = 0;
      LocalSpawner s[2];
      GThread *t[2];
      guint total = 0;

      for (guint i = 0; i < G_N_ELEMENTS (s); i++)
        {
          s[i] = (LocalSpawner) { g_object_ref (rt), ct.context, &counts, &stop, 0 };
          t[i] = g_thread_new ("local-spawner", local_spawner_thread, &s[i]);
        }
      g_usleep (g_random_int_range (0, 2000));
      g_assert_true (ws_runtime_shutdown (rt, -1));
      atomic_store (&stop, 1);
      for (guint i = 0; i < G_N_ELEMENTS (s); i++)
        {
          g_thread_join (t[i]);
          total += s[i].n;
          g_object_unref (s[i].rt);
        }
      g_object_unref (rt);
      /* Refusals from a thread that is not the owner run on the owner:
       * let it dispatch them. */
      while (atomic_load (&counts.destroyed) < (gint) total)
        g_usleep (1000);
      g_assert_cmpint (atomic_load (&counts.destroyed), ==, total);
      context_thread_stop (&ct, owner);
      g_main_context_unref (ct.context);
    }
}

/* ---- 4. shutdown from inside ws_block_in_place ------------------------ */

typedef struct
{
  WsRuntime    *rt;
  _Atomic gint  result;    /* 0: not yet, 1: FALSE, 2: TRUE */
} InPlace;

static void
shutdown_in_place (gpointer data)
{
  InPlace *ip = data;

  atomic_store (&ip->result, ws_runtime_shutdown (ip->rt, -1) ? 2 : 1);
}

static WsPoll
block_in_place_then_shutdown (WsContext *cx,
                              gpointer   data)
{
  g_autoptr(GError) error = NULL;

  g_assert_true (ws_block_in_place (shutdown_in_place, data, &error));
  g_assert_no_error (error);
  return WS_POLL_READY;
}

static void
test_shutdown_inside_block_in_place (void)
{
  InPlace ip = { ws_runtime_new (2), 0 };
  WsTask *task = ws_runtime_spawn (ip.rt, block_in_place_then_shutdown, &ip, NULL);
  g_autoptr(GError) error = NULL;

  /* It must not wait for its own thread: FALSE, at once (the watchdog
   * catches a hang). The task itself was past its last await, so it
   * completes. */
  g_assert_true (ws_task_wait (task, NULL, &error));
  g_assert_no_error (error);
  g_assert_cmpint (atomic_load (&ip.result), ==, 1);
  g_object_unref (task);

  g_assert_true (ws_runtime_shutdown (ip.rt, -1));
  g_object_unref (ip.rt);
}

/* ---- 5. shutdown from one of the runtime's own tasks ------------------ */

static WsPoll
shutdown_from_task (WsContext *cx,
                    gpointer   data)
{
  InPlace *ip = data;

  atomic_store (&ip->result, ws_runtime_shutdown (ip->rt, -1) ? 2 : 1);
  return WS_POLL_READY;
}

/* FALSE, at once, as documented: the shutdown has begun and cannot be
 * waited for on the caller's own thread. The runtime is shut down for all
 * that: a later spawn is cancelled, and a call from another thread
 * waits for the rest and returns TRUE. */
static void
test_shutdown_from_own_task (void)
{
  InPlace ip = { ws_runtime_new (2), 0 };
  g_autoptr(WsTask) task = ws_runtime_spawn (ip.rt, shutdown_from_task, &ip, NULL);
  g_autoptr(WsTask) late = NULL;
  g_autoptr(GError) error = NULL;

  /* The task was past its last await, so it completes. */
  g_assert_true (ws_task_wait (task, NULL, &error));
  g_assert_no_error (error);
  g_assert_cmpint (atomic_load (&ip.result), ==, 1);

  /* Never polled: it would store 1 again. */
  atomic_store (&ip.result, 0);
  late = ws_runtime_spawn (ip.rt, shutdown_from_task, &ip, NULL);
  g_assert_false (ws_task_wait (late, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpint (atomic_load (&ip.result), ==, 0);

  g_assert_true (ws_runtime_shutdown (ip.rt, -1));
  g_object_unref (ip.rt);
}

/* ---- 6. shutdown (-1) waits for local tasks of another thread --------- */

static void
slow_count_destroy (gpointer data)
{
  g_usleep (1000);
  count_destroy (data);
}

static void
test_shutdown_waits_for_local_tasks (void)
{
  WsRuntime *rt = ws_runtime_new (1);
  ContextThread ct;
  GThread *owner = context_thread_start (&ct);
  Counts counts = { 0, 0 };

  /* 100 ms of destroy notifies on the owner thread. */
  for (guint i = 0; i < 100; i++)
    ws_runtime_spawn_local_detached (rt, ct.context, pending_forever, &counts, slow_count_destroy);
  while (atomic_load (&counts.polled) < 100)
    g_usleep (1000);

  /* The owner thread runs the cancellations; TRUE means they all ran. */
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_assert_cmpint (atomic_load (&counts.destroyed), ==, 100);

  g_object_unref (rt);
  context_thread_stop (&ct, owner);
  g_main_context_unref (ct.context);
}

/* ---- 7. the program dropped its context before shutdown --------------- */

static void
test_context_unreffed_before_shutdown (void)
{
  WsRuntime *rt = ws_runtime_new (1);
  GMainContext *context = g_main_context_new ();
  Counts counts = { 0, 0 };

  ws_runtime_spawn_local_detached (rt, context, pending_forever, &counts, count_destroy);
  while (atomic_load (&counts.polled) == 0)
    g_main_context_iteration (context, TRUE);
  g_main_context_unref (context);

  /* Nobody owns the context now: shutdown runs the cancellation itself. */
  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
  g_assert_cmpint (atomic_load (&counts.destroyed), ==, 1);
  g_object_unref (rt);
}

/* ---- 9. a refused spawn_local runs its destroy notify on the owner ----- */

typedef struct
{
  GThread      *expected;
  _Atomic gint  ran;
  _Atomic gint  right_thread;
} OwnerProbe;

static void
owner_probe_destroy (gpointer data)
{
  OwnerProbe *p = data;

  atomic_store (&p->right_thread, g_thread_self () == p->expected);
  atomic_store (&p->ran, 1);
}

static void
test_refused_local_spawn_on_owner (void)
{
  WsRuntime *rt = ws_runtime_new (1);
  ContextThread ct;
  GThread *owner = context_thread_start (&ct);
  GMainContext *mine = g_main_context_new ();
  OwnerProbe there = { owner, 0, 0 };
  OwnerProbe here = { g_thread_self (), 0, 0 };
  WsTask *task;
  g_autoptr(GError) error = NULL;

  g_assert_true (ws_runtime_shutdown (rt, -1));

  /* Another thread owns the context: the destroy notify runs there, and
   * the task ends cancelled then. */
  task = ws_runtime_spawn_local (rt, ct.context, ready_at_once, &there, owner_probe_destroy);
  g_assert_false (ws_task_wait (task, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&error);
  g_assert_cmpint (atomic_load (&there.ran), ==, 1);
  g_assert_cmpint (atomic_load (&there.right_thread), ==, 1);
  g_object_unref (task);

  /* A context this thread can own: at once, before the spawn returns. */
  ws_runtime_spawn_local_detached (rt, mine, ready_at_once, &here, owner_probe_destroy);
  g_assert_cmpint (atomic_load (&here.ran), ==, 1);
  g_assert_cmpint (atomic_load (&here.right_thread), ==, 1);

  g_object_unref (rt);
  context_thread_stop (&ct, owner);
  g_main_context_unref (ct.context);
  g_main_context_unref (mine);
}

/* ---- 10. the alive-tasks metric is never torn ------------------------- */

static gpointer
metrics_spawner (gpointer data)
{
  Spawner *s = data;

  while (!atomic_load (s->stop))
    {
      ws_runtime_spawn_detached (s->rt, ready_at_once, s->counts, count_destroy);
      s->n_spawned++;
    }
  return NULL;
}

static void
test_alive_metric_never_torn (void)
{
  WsRuntime *rt = ws_runtime_new (2);
  Counts counts = { 0, 0 };
  _Atomic gint stop = 0;
  Spawner s = { rt, &counts, &stop, 0 };
  GThread *t = g_thread_new ("spawner", metrics_spawner, &s);
  guint max_alive = 0;
  guint n = ws_test_scaled (1000000), i;
  gint64 budget_end = ws_test_budget_end ();

  /* A million snapshots (fewer with WS_STRESS_DIVISOR), or as many as a
   * third of the watchdog's time allows on a slow build or machine. */
  for (i = 0; i < n && (i % 1024 != 0 || g_get_monotonic_time () < budget_end); i++)
    {
      WsMetrics *m = ws_runtime_get_metrics (rt);
      guint alive = ws_metrics_get_alive_tasks (m);
      guint64 spawned = ws_metrics_get_spawned_tasks (m);

      /* A negative sum read slot by slot showed as about 4.29e9. */
      g_assert_cmpuint (alive, <, G_MAXINT);
      g_assert_cmpuint (spawned, <, G_MAXINT64);
      max_alive = MAX (max_alive, alive);
      ws_metrics_unref (m);
    }
  atomic_store (&stop, 1);
  g_thread_join (t);
  g_test_message ("%u snapshots of %u%s, %u spawns, largest alive count %u",
                  i, n, i < n ? " (the time budget ran out)" : "", s.n_spawned, max_alive);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_object_unref (rt);
}

/* ---- 12. wait_async from a worker is answered at shutdown -------------- */

typedef struct
{
  WsRuntime    *rt;
  WsTask       *awaited;
  Counts        awaited_counts;
  _Atomic gint  callbacks;
  _Atomic gint  started;
} AsyncWaiter;

static void
waited (GObject      *source,
        GAsyncResult *result,
        gpointer      data)
{
  AsyncWaiter *w = data;
  g_autoptr(GError) error = NULL;

  g_assert_false (ws_task_wait_finish (WS_TASK (source), result, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  atomic_fetch_add (&w->callbacks, 1);
}

static WsPoll
start_wait_async (WsContext *cx,
                  gpointer   data)
{
  AsyncWaiter *w = data;

  /* On a worker: the callback is owed to this worker's context. */
  ws_task_wait_async (w->awaited, NULL, waited, w);
  atomic_store (&w->started, 1);
  return WS_POLL_READY;
}

static void
test_wait_async_answered_at_shutdown (void)
{
  for (guint round = 0; round < 20; round++)
    {
      AsyncWaiter w = { ws_runtime_new (2), NULL, { 0, 0 }, 0, 0 };

      w.awaited = ws_runtime_spawn (w.rt, pending_forever, &w.awaited_counts, count_destroy);
      ws_runtime_spawn_detached (w.rt, start_wait_async, &w, NULL);
      while (!atomic_load (&w.started))
        g_usleep (100);

      g_assert_true (ws_runtime_shutdown (w.rt, -1));
      /* Exactly once, also when cancelled; by the time shutdown returns. */
      g_assert_cmpint (atomic_load (&w.callbacks), ==, 1);
      g_assert_cmpint (atomic_load (&w.awaited_counts.destroyed), ==, 1);
      g_object_unref (w.awaited);
      g_object_unref (w.rt);
    }
}

/* A spawn_with_callback made on a worker calls back on that worker's
 * context: answered, exactly once, by the time shutdown returns. */
typedef struct
{
  WsRuntime    *rt;
  Counts        counts;
  _Atomic gint  callbacks;
  _Atomic gint  started;
} CallbackSpawner;

static void
spawned_ended (WsJoinHandle *handle,
               gpointer      data)
{
  CallbackSpawner *s = data;
  g_autoptr(GError) error = NULL;

  g_assert_null (ws_join_handle_finish (handle, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  atomic_fetch_add (&s->callbacks, 1);
}

static WsPoll
start_callback_spawn (WsContext *cx,
                      gpointer   data)
{
  CallbackSpawner *s = data;

  g_assert_true (ws_runtime_spawn_with_callback (s->rt, pending_forever, &s->counts,
                                                 count_destroy, spawned_ended, s));
  atomic_store (&s->started, 1);
  return WS_POLL_READY;
}

static void
test_spawn_callback_answered_at_shutdown (void)
{
  for (guint round = 0; round < 20; round++)
    {
      CallbackSpawner s = { ws_runtime_new (2), { 0, 0 }, 0, 0 };

      ws_runtime_spawn_detached (s.rt, start_callback_spawn, &s, NULL);
      while (!atomic_load (&s.started))
        g_usleep (100);

      g_assert_true (ws_runtime_shutdown (s.rt, -1));
      g_assert_cmpint (atomic_load (&s.callbacks), ==, 1);
      g_assert_cmpint (atomic_load (&s.counts.destroyed), ==, 1);
      g_object_unref (s.rt);
    }
}

/* ---- everything at once: freed while foreign threads act --------------- */

static void
test_freed_while_foreign_threads_act (void)
{
  for (guint round = 0; round < 10; round++)
    {
      WsRuntime *rt = ws_runtime_new (2);
      Counts counts = { 0, 0 };
      _Atomic gint stop = 0;
      Spawner s[2];
      GThread *t[2];
      WakeTarget *w = wake_target_new ();
      guint total = 0;

      ws_runtime_spawn_detached (rt, wake_target_poll, w, wake_target_destroy);
      while (atomic_load (&w->polls) == 0)
        g_usleep (100);
      w->waker_thread = g_thread_new ("waker", waker_loop, w);
      for (guint i = 0; i < G_N_ELEMENTS (s); i++)
        {
          s[i] = (Spawner) { g_object_ref (rt), &counts, &stop, 0 };
          t[i] = g_thread_new ("spawner", i == 0 ? spawner_thread : metrics_spawner, &s[i]);
        }
      g_usleep (g_random_int_range (0, 3000));

      g_assert_true (ws_runtime_shutdown (rt, -1));
      g_object_unref (rt);

      atomic_store (&stop, 1);
      for (guint i = 0; i < G_N_ELEMENTS (s); i++)
        {
          g_thread_join (t[i]);
          total += s[i].n_spawned;
          g_object_unref (s[i].rt);
        }
      g_thread_join (w->waker_thread);
      g_assert_cmpint (atomic_load (&counts.destroyed), ==, total);
      g_clear_pointer (&w->waker, ws_waker_unref);
      g_free (w);
    }
}

/* ---- a GIO call that ignores its cancellable ----------------------- */

/* A GIO-style call that completes only when the test says: a GTask made
 * inside the task, on a worker (so GIO completes it on that worker's
 * context), and returned by the test thread. It ignores its cancellable,
 * as a call stuck in the kernel or on a remote peer does. */
typedef struct
{
  WsAsyncOp    *op;
  GTask        *call;         /* published by `started` */
  _Atomic gint  started;
  _Atomic gint  destroyed;
  _Atomic gint  call_finalized;
} HeldCall;

/* Whichever thread drops the call's last reference. */
static void
held_call_finalized (gpointer  data,
                     GObject  *call)
{
  HeldCall *h = data;

  atomic_store (&h->call_finalized, 1);
}

static WsPoll
start_held_call (WsContext *cx,
                 gpointer   data)
{
  HeldCall *h = data;

  if (h->op == NULL)
    {
      h->op = ws_async_op_new ();
      h->call = g_task_new (NULL, ws_async_op_get_cancellable (h->op),
                            ws_async_op_callback, ws_async_op_start (h->op, cx));
      g_object_weak_ref (G_OBJECT (h->call), held_call_finalized, h);
      atomic_store (&h->started, 1);
    }
  return ws_async_op_poll (h->op, cx);
}

static void
held_call_destroy (gpointer data)
{
  HeldCall *h = data;

  /* The last reference but GIO's: this cancels the call, which ignores
   * it. */
  g_clear_pointer (&h->op, ws_async_op_unref);
  atomic_fetch_add (&h->destroyed, 1);
}

/* The task has ended (its destroy notify ran), the call is in flight and
 * ignores the cancel; shutdown must return by its deadline, with FALSE. */
static WsRuntime *
shutdown_with_held_call (HeldCall *h)
{
  WsRuntime *rt = ws_runtime_new (2);

  ws_runtime_spawn_detached (rt, start_held_call, h, held_call_destroy);
  ws_test_wait_until (atomic_load (&h->started));

  /* Returns at all (a hang is the watchdog's), and FALSE: GIO still owes
   * a worker's context the completion, whatever the time it took. */
  g_assert_false (ws_runtime_shutdown (rt, 20 * 1000));
  /* The task itself has ended: the last worker's sweep ran its destroy
   * notify, whoever waits for it. */
  ws_test_wait_until (atomic_load (&h->destroyed) == 1);
  g_assert_cmpint (atomic_load (&h->call_finalized), ==, 0);
  return rt;
}

/* The call completes after shutdown gave up on it: it is delivered on the
 * worker's context (still alive, drained by the last pool thread), and a
 * shutdown then returns TRUE. */
static void
test_held_call_completes_late (void)
{
  HeldCall h = { NULL, NULL, 0, 0, 0 };
  WsRuntime *rt = shutdown_with_held_call (&h);

  g_task_return_boolean (h.call, TRUE);
  g_object_unref (h.call);

  g_assert_true (ws_runtime_shutdown (rt, ws_test_timeout_usec ()));
  /* Delivered: the operation let go of the call's result. */
  ws_test_wait_until (atomic_load (&h.call_finalized));
  g_assert_cmpint (atomic_load (&h.destroyed), ==, 1);
  g_object_unref (rt);
}

/* The call has not completed at any shutdown, nor when the program drops
 * the runtime: every shutdown returns FALSE by its deadline, and dropping
 * the runtime does not wait for the call either. When it does complete at
 * last, the completion touches no freed memory (ASan) and is delivered. */
static void
test_held_call_never_completes (void)
{
  HeldCall h = { NULL, NULL, 0, 0, 0 };
  WsRuntime *rt = shutdown_with_held_call (&h);

  g_assert_false (ws_runtime_shutdown (rt, 0));
  g_assert_false (ws_runtime_shutdown (rt, 20 * 1000));
  g_object_unref (rt);
  g_assert_cmpint (atomic_load (&h.call_finalized), ==, 0);

  /* The process goes on; the call completes some day. */
  g_task_return_boolean (h.call, TRUE);
  g_object_unref (h.call);
  ws_test_wait_until (atomic_load (&h.call_finalized));
  g_assert_cmpint (atomic_load (&h.destroyed), ==, 1);
}

/* ---- 5. a thread-default context wherever a task is polled --------- */

typedef struct
{
  WsAsyncOp    *op;
  gboolean      in_place_done;
  gboolean      global_default;
  GFile        *file;
  gchar        *contents;
  gsize         length;
} GioAwait;

static void
noop_blocking (gpointer data)
{
}

/* Awaits g_file_load_contents_async () of this test's source: it
 * completes on the calling thread's thread-default context, which must be
 * iterated while the task waits. */
static WsPoll
await_load (GioAwait  *g,
            WsContext *cx)
{
  g_autoptr(GError) error = NULL;

  if (g->op == NULL)
    {
      GMainContext *ctx = g_main_context_ref_thread_default ();

      g->global_default = ctx == g_main_context_default ();
      g_main_context_unref (ctx);
      g->file = g_file_new_for_path (g_test_get_filename (G_TEST_DIST, "test-shutdown.c", NULL));
      g->op = ws_async_op_new ();
      g_file_load_contents_async (g->file, ws_async_op_get_cancellable (g->op),
                                  ws_async_op_callback, ws_async_op_start (g->op, cx));
    }
  if (ws_async_op_poll (g->op, cx) == WS_POLL_PENDING)
    return WS_POLL_PENDING;
  g_assert_true (g_file_load_contents_finish (g->file, ws_async_op_get_result (g->op),
                                              &g->contents, &g->length, NULL, &error));
  g_assert_no_error (error);
  return WS_POLL_READY;
}

static WsPoll
gio_after_block_in_place (WsContext *cx,
                          gpointer   data)
{
  GioAwait *g = data;

  if (!g->in_place_done)
    {
      g_autoptr(GError) error = NULL;

      g_assert_true (ws_block_in_place (noop_blocking, NULL, &error));
      g_assert_no_error (error);
      g->in_place_done = TRUE;
    }
  return await_load (g, cx);
}

static WsPoll
gio_in_blocking_job (WsContext *cx,
                     gpointer   data)
{
  return await_load (data, cx);
}

static void
gio_await_clear (GioAwait *g)
{
  g_clear_pointer (&g->op, ws_async_op_unref);
  g_clear_object (&g->file);
  g_clear_pointer (&g->contents, g_free);
}

/* Waits for @task, which awaits a GIO call, from this thread, which does
 * not iterate the global default context: a callback sent there would
 * never run, and the watchdog would fire. */
static void
check_gio_await (WsRuntime *rt,
                 WsTask    *task,
                 GioAwait  *g)
{
  g_autoptr(GError) error = NULL;

  g_assert_true (ws_task_wait (task, NULL, &error));
  g_assert_no_error (error);
  g_assert_false (g->global_default);
  g_assert_nonnull (strstr (g->contents, "test-shutdown.c"));
  g_object_unref (task);
  gio_await_clear (g);
  g_assert_true (ws_runtime_shutdown (rt, -1));
  g_object_unref (rt);
}

static void
test_gio_after_block_in_place (void)
{
  WsRuntime *rt = ws_runtime_new (2);
  GioAwait g = { NULL, };

  check_gio_await (rt, ws_runtime_spawn (rt, gio_after_block_in_place, &g, NULL), &g);
}

static void
test_gio_in_blocking_job (void)
{
  WsRuntime *rt = ws_runtime_new (1);
  GioAwait g = { NULL, };

  check_gio_await (rt, ws_runtime_spawn_blocking (rt, gio_in_blocking_job, &g, NULL), &g);
}

int
main (int    argc,
      char **argv)
{
  ws_test_init (&argc, &argv);

  ws_test_add_func ("/shutdown/refused-spawn-not-counted", test_refused_spawn_not_counted);
  ws_test_add_func ("/shutdown/spawns-race-shutdown", test_spawns_race_shutdown);
  ws_test_add_func ("/shutdown/foreign-wake-during-shutdown", test_foreign_wake_during_shutdown);
  ws_test_add_func ("/shutdown/long-await-chain", test_long_await_chain);
  ws_test_add_func ("/shutdown/local-wakes-race-shutdown", test_local_wakes_race_shutdown);
  ws_test_add_func ("/shutdown/local-spawns-race-shutdown", test_local_spawns_race_shutdown);
  ws_test_add_func ("/shutdown/inside-block-in-place", test_shutdown_inside_block_in_place);
  ws_test_add_func ("/shutdown/from-own-task", test_shutdown_from_own_task);
  ws_test_add_func ("/hand-off/gio-after-block-in-place", test_gio_after_block_in_place);
  ws_test_add_func ("/hand-off/gio-in-blocking-job", test_gio_in_blocking_job);
  ws_test_add_func ("/shutdown/waits-for-local-tasks", test_shutdown_waits_for_local_tasks);
  ws_test_add_func ("/shutdown/context-unreffed-first", test_context_unreffed_before_shutdown);
  ws_test_add_func ("/shutdown/refused-local-spawn-on-owner", test_refused_local_spawn_on_owner);
  ws_test_add_func ("/shutdown/alive-metric-never-torn", test_alive_metric_never_torn);
  ws_test_add_func ("/shutdown/wait-async-answered", test_wait_async_answered_at_shutdown);
  ws_test_add_func ("/shutdown/spawn-callback-answered", test_spawn_callback_answered_at_shutdown);
  ws_test_add_func ("/shutdown/freed-while-foreign-threads-act", test_freed_while_foreign_threads_act);
  ws_test_add_func ("/shutdown/held-gio-call-completes-late", test_held_call_completes_late);
  ws_test_add_func ("/shutdown/held-gio-call-never-completes", test_held_call_never_completes);

  return g_test_run ();
}
