/* test-lifecycle.c: the lifecycle matrix of one task (stress suite)
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Table-driven: every combination of
 *
 *   runtime  1 worker, 2 workers, local (a GMainContext of the test thread)
 *   outcome  ok (a pointer with a destroy notify), error
 *   handle   kept, dropped before the first poll, dropped after completion
 *   cancel   never, before the first poll, during a poll (from another
 *            thread), after completion
 *   waker    none, woken from a foreign thread (during the poll in ok
 *            cells, after it in error cells, both made certain), woken
 *            after completion
 *
 * is one test case (3 x 2 x 3 x 4 x 3 = 216). Each checks that the
 * future's destroy notify ran exactly once, that the task was polled
 * exactly as often as the rules allow (never twice at once, never after
 * its end), that the outcome is the one allowed, that the result payload
 * was freed exactly once, and (ws-test-util.h, after every case) that no
 * task and no waker reference is left.
 *
 * "Before the first poll" is made certain, not likely: on a worker pool
 * every worker is held in a blocking poll of a gate task while the task
 * is spawned, cancelled or dropped; a local task is not polled before the
 * test iterates its context. A handle dropped before the first poll
 * cannot cancel; such cells cancel through a core reference taken in the
 * first poll (the same ws_raw_task_cancel that ws_task_cancel calls).
 */

#include "config.h"

#include <gio/gio.h>

#include "ws-test-util.h"
#include "wsrt.h"
#include "ws-raw-task-private.h"

typedef enum { RT_ONE, RT_TWO, RT_LOCAL, N_RT } Flavour;
typedef enum { OUT_OK, OUT_ERROR, N_OUT } Outcome;
typedef enum { H_KEPT, H_DROP_BEFORE, H_DROP_AFTER, N_H } Handle;
typedef enum { C_NEVER, C_BEFORE, C_DURING, C_AFTER, N_C } Cancel;
typedef enum { W_NONE, W_FOREIGN, W_AFTER, N_W } Waker;

static const char *flavour_names[] = { "1-worker", "2-workers", "local" };
static const char *outcome_names[] = { "ok", "error" };
static const char *handle_names[] = { "kept", "dropped-before-poll", "dropped-after-completion" };
static const char *cancel_names[] = { "never", "before-poll", "during-poll", "after-completion" };
static const char *waker_names[] = { "none", "foreign-thread", "after-completion" };

#define N_CELLS (N_RT * N_OUT * N_H * N_C * N_W)

typedef struct
{
  Flavour flavour;
  Outcome outcome;
  Handle  handle;
  Cancel  cancel;
  Waker   waker;
} Cell;

static Cell cells[N_CELLS];

typedef struct
{
  WsWaker          *waker;
  gboolean          during_poll;
  _Atomic gboolean  woken;
} ForeignWake;

typedef struct
{
  const Cell        *cell;
  _Atomic gint       polls;
  _Atomic gint       in_poll;
  _Atomic gint       violations;      /* overlapping polls, polls after the end */
  _Atomic gint       destroyed;       /* the future's destroy notify */
  _Atomic gint       payload_freed;   /* the ok result's destroy notify */
  _Atomic gint       returned;        /* -1 none, else the Outcome returned */
  _Atomic gboolean   in_first_poll;
  _Atomic gboolean   cancel_done;
  WsRawTask *_Atomic raw;             /* a core reference, for late cancels */
  WsWaker   *_Atomic kept_waker;      /* W_AFTER */
  GThread           *foreign;         /* W_FOREIGN: the thread that wakes */
  ForeignWake        fw;
} Probe;

static void
probe_destroy (gpointer data)
{
  Probe *p = data;

  atomic_fetch_add (&p->destroyed, 1);
}

static void
payload_free (gpointer data)
{
  Probe *p = data;

  atomic_fetch_add (&p->payload_freed, 1);
}

/* Wakes the task from a thread of its own: during the poll (the poll
 * waits for it), or once the poll is over (the task left RUNNING). */
static gpointer
foreign_wake_thread (gpointer data)
{
  ForeignWake *fw = data;

  if (!fw->during_poll)
    while (ws_raw_task_get_state ((WsRawTask *) fw->waker) & WS_STATE_RUNNING)
      g_usleep (50);
  ws_waker_wake (fw->waker);
  atomic_store (&fw->woken, TRUE);
  ws_waker_unref (fw->waker);
  return NULL;
}

static WsPoll
finish (WsContext *cx,
        Probe     *p)
{
  if (p->cell->outcome == OUT_OK)
    ws_context_return_pointer (cx, p, payload_free);
  else
    ws_context_return_error (cx, g_error_new_literal (G_IO_ERROR, G_IO_ERROR_FAILED, "the task failed"));
  atomic_store (&p->returned, p->cell->outcome);
  return WS_POLL_READY;
}

static WsPoll
cell_func (WsContext *cx,
           gpointer   data)
{
  Probe *p = data;
  const Cell *c = p->cell;
  gint n = atomic_fetch_add (&p->polls, 1);
  WsPoll ret;

  if (atomic_fetch_add (&p->in_poll, 1) != 0 || atomic_load (&p->destroyed) != 0
      || atomic_load (&p->returned) >= 0)
    atomic_fetch_add (&p->violations, 1);

  if (n == 0)
    {
      /* A core reference for cancels that the dropped handle cannot make. */
      ws_raw_task_ref (cx->task);
      atomic_store (&p->raw, cx->task);

      if (c->cancel == C_DURING)
        {
          atomic_store (&p->in_first_poll, TRUE);
          while (!atomic_load (&p->cancel_done))
            g_usleep (100);
        }

      if (c->waker == W_FOREIGN)
        {
          /* Exactly one more poll follows (unless cancelled), whether the
           * wake lands during this poll (ok cells: the poll waits for it,
           * the wake only sets NOTIFIED) or after it (error cells: the
           * wake queues the idle task). */
          p->fw.waker = ws_context_get_waker (cx);
          p->fw.during_poll = c->outcome == OUT_OK;
          p->foreign = g_thread_new ("foreign-waker", foreign_wake_thread, &p->fw);
          if (p->fw.during_poll)
            while (!atomic_load (&p->fw.woken))
              g_usleep (50);
          ret = WS_POLL_PENDING;
        }
      else
        {
          if (c->waker == W_AFTER)
            atomic_store (&p->kept_waker, ws_context_get_waker (cx));
          ret = finish (cx, p);
        }
    }
  else if (n == 1 && c->waker == W_FOREIGN)
    ret = finish (cx, p);
  else
    {
      atomic_fetch_add (&p->violations, 1);
      ret = finish (cx, p);
    }

  atomic_fetch_sub (&p->in_poll, 1);
  return ret;
}

/* Holds every worker of a pool in a poll until released. */
typedef struct
{
  _Atomic gint     started;
  _Atomic gboolean release;
} Gate;

static WsPoll
gate_func (WsContext *cx,
           gpointer   data)
{
  Gate *g = data;

  atomic_fetch_add (&g->started, 1);
  while (!atomic_load (&g->release))
    g_usleep (100);
  return WS_POLL_READY;
}

typedef struct
{
  Probe  *probe;
  WsTask *task;   /* owned; NULL if the handle was dropped */
} Canceller;

static gpointer
canceller_thread (gpointer data)
{
  Canceller *k = data;

  while (!atomic_load (&k->probe->in_first_poll))
    g_usleep (100);
  if (k->task != NULL)
    ws_task_cancel (k->task);
  else
    ws_raw_task_cancel (atomic_load (&k->probe->raw));
  g_clear_object (&k->task);
  atomic_store (&k->probe->cancel_done, TRUE);
  g_free (k);
  return NULL;
}

static gboolean
raw_complete (Probe *p)
{
  WsRawTask *raw = atomic_load (&p->raw);

  return raw != NULL && ws_raw_task_is_complete (raw);
}

/* Waits (iterating @ctx for local tasks) until @cond. */
#define wait_until(ctx, cond) \
  G_STMT_START { \
    while (!(cond)) \
      { \
        if ((ctx) != NULL) \
          g_main_context_iteration ((ctx), FALSE); \
        g_usleep (50); \
      } \
  } G_STMT_END

static void
test_cell (gconstpointer data)
{
  const Cell *c = data;
  Probe p = { .cell = c };
  Gate gate = { 0, };
  guint n_workers = c->flavour == RT_TWO ? 2 : 1;
  g_autoptr(WsRuntime) rt = ws_runtime_new (n_workers);
  g_autoptr(GMainContext) ctx = c->flavour == RT_LOCAL ? g_main_context_new () : NULL;
  gboolean gated = c->handle == H_DROP_BEFORE || c->cancel == C_BEFORE;
  WsTask *task;
  GThread *canceller = NULL;
  gint expected_polls;
  gint expected_outcome;   /* an Outcome, or -1 for cancelled */
  gboolean ok;
  g_autoptr(GError) error = NULL;

  atomic_store (&p.returned, -1);

  if (gated && ctx == NULL)
    {
      /* A worker may take two gate tasks from the injection queue at
       * once and block in the first: spawn more until every worker is
       * held. The spare ones end at once after the release. */
      while (atomic_load (&gate.started) < (gint) n_workers)
        {
          gint64 until = g_get_monotonic_time () + 20000;

          ws_runtime_spawn_detached (rt, gate_func, &gate, NULL);
          while (atomic_load (&gate.started) < (gint) n_workers && g_get_monotonic_time () < until)
            g_usleep (100);
        }
    }

  if (ctx != NULL)
    task = ws_runtime_spawn_local (rt, ctx, cell_func, &p, probe_destroy);
  else
    task = ws_runtime_spawn (rt, cell_func, &p, probe_destroy);
  g_assert_nonnull (task);

  if (c->cancel == C_BEFORE)
    ws_task_cancel (task);
  if (c->handle == H_DROP_BEFORE)
    g_clear_object (&task);
  if (gated)
    {
      g_assert_cmpint (atomic_load (&p.polls), ==, 0);
      atomic_store (&gate.release, TRUE);
    }

  if (c->cancel == C_DURING)
    {
      Canceller *k = g_new0 (Canceller, 1);

      k->probe = &p;
      k->task = task != NULL ? g_object_ref (task) : NULL;
      canceller = g_thread_new ("canceller", canceller_thread, k);
    }

  /* Wait for the end, without touching the handle unless it is kept (a
   * handle dropped after completion must find the outcome unread). */
  if (c->cancel == C_BEFORE)
    wait_until (ctx, atomic_load (&p.destroyed) == 1
                     && (task == NULL || ws_task_is_finished (task)));
  else if (c->handle == H_KEPT && ctx == NULL)
    {
      ok = ws_task_wait (task, NULL, &error);
      g_assert_true (ok == (error == NULL));
    }
  else
    wait_until (ctx, raw_complete (&p));

  if (canceller != NULL)
    g_thread_join (canceller);
  if (p.foreign != NULL)
    g_thread_join (p.foreign);

  /* The destroy notify runs before anyone learns of the end. */
  g_assert_cmpint (atomic_load (&p.destroyed), ==, 1);

  if (c->cancel == C_AFTER)
    {
      if (task != NULL)
        ws_task_cancel (task);
      else
        ws_raw_task_cancel (atomic_load (&p.raw));
    }

  if (c->waker == W_AFTER && atomic_load (&p.kept_waker) != NULL)
    {
      WsWaker *waker = atomic_exchange (&p.kept_waker, NULL);

      /* Woken after completion: nothing may happen. */
      ws_waker_wake (waker);
      ws_waker_wake (waker);
      ws_waker_unref (waker);
    }

  if (c->handle == H_DROP_AFTER)
    g_clear_object (&task);

  /* What the rules allow. */
  if (c->cancel == C_BEFORE)
    {
      expected_polls = 0;
      expected_outcome = -1;
    }
  else if (c->cancel == C_DURING && c->waker == W_FOREIGN)
    {
      /* The poll returned PENDING after the cancel: the future is
       * destroyed right after it, and the foreign wake does nothing. */
      expected_polls = 1;
      expected_outcome = -1;
    }
  else
    {
      /* A poll that returns READY while a cancel races it completes;
       * a cancel after completion changes nothing. */
      expected_polls = c->waker == W_FOREIGN ? 2 : 1;
      expected_outcome = c->outcome;
    }

  /* The handle sees that outcome, and the ok payload once. */
  if (task != NULL)
    {
      g_autoptr(GError) err2 = NULL;
      gpointer payload;

      g_assert_true (ws_task_is_finished (task));
      payload = ws_task_propagate_pointer (task, &err2);
      if (expected_outcome == OUT_OK)
        {
          g_assert_no_error (err2);
          g_assert_true (payload == &p);
          g_assert_null (error);
          payload_free (payload);
        }
      else
        {
          g_assert_null (payload);
          if (expected_outcome == OUT_ERROR)
            g_assert_error (err2, G_IO_ERROR, G_IO_ERROR_FAILED);
          else
            g_assert_error (err2, G_IO_ERROR, G_IO_ERROR_CANCELLED);
          if (c->handle == H_KEPT && ctx == NULL && c->cancel != C_BEFORE)
            g_assert_true (g_error_matches (error, err2->domain, err2->code));
        }
      g_clear_object (&task);
    }

  /* Give a wrong poll (a wake after the end) every chance to happen. */
  if (ctx != NULL)
    while (g_main_context_iteration (ctx, FALSE))
      ;
  g_assert_true (ws_runtime_shutdown (rt, -1));
  if (ctx != NULL)
    while (g_main_context_iteration (ctx, FALSE))
      ;

  g_assert_cmpint (atomic_load (&p.violations), ==, 0);
  g_assert_cmpint (atomic_load (&p.polls), ==, expected_polls);
  g_assert_cmpint (atomic_load (&p.destroyed), ==, 1);
  g_assert_cmpint (atomic_load (&p.returned), ==, expected_outcome);
  g_assert_cmpint (atomic_load (&p.payload_freed), ==, expected_outcome == OUT_OK ? 1 : 0);

  if (atomic_load (&p.raw) != NULL)
    ws_raw_task_unref (atomic_exchange (&p.raw, NULL));
  g_clear_object (&rt);
}

int
main (int   argc,
      char *argv[])
{
  guint i = 0;

  ws_test_init (&argc, &argv);

  for (Flavour f = 0; f < N_RT; f++)
    for (Outcome o = 0; o < N_OUT; o++)
      for (Handle h = 0; h < N_H; h++)
        for (Cancel k = 0; k < N_C; k++)
          for (Waker w = 0; w < N_W; w++)
            {
              g_autofree char *path = NULL;

              cells[i] = (Cell) { f, o, h, k, w };
              path = g_strdup_printf ("/lifecycle/%s/%s/handle-%s/cancel-%s/waker-%s",
                                      flavour_names[f], outcome_names[o], handle_names[h],
                                      cancel_names[k], waker_names[w]);
              ws_test_add_data_func (path, &cells[i], test_cell);
              i++;
            }
  g_assert_cmpuint (i, ==, N_CELLS);

  return g_test_run ();
}
