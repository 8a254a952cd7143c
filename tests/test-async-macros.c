/* test-async-macros.c: the coroutine macros of ws-async.h
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * WS_ASYNC_BEGIN, WS_AWAIT, WS_ASYNC_YIELD and WS_ASYNC_END: one task
 * function awaits a sleep, a channel and another task, in sequence, and
 * returns a value computed from what it got; another keeps g_autoptr
 * locals where ws-async.h says, across polls that suspend and resume.
 */

#include "config.h"

#include "ws-test-fixture.h"

typedef struct
{
  WS_ASYNC_STATE;
  WsSleep   *nap;
  WsChannel *inbox;
  WsTask    *child;
  gpointer   item;
  guint      steps;
} Job;

static WsPoll
child_value (WsContext *cx,
             gpointer   data)
{
  return ws_test_return_int (cx, 40);
}

static WsPoll
job_func (WsContext *cx,
          gpointer   data)
{
  Job *s = data;
  g_autoptr(GError) error = NULL;

  WS_ASYNC_BEGIN (s);

  WS_AWAIT (s, ws_sleep_poll (s->nap, cx));
  s->steps++;
  WS_AWAIT (s, ws_channel_poll_receive (s->inbox, cx, &s->item, &error));
  g_assert_no_error (error);
  s->steps++;
  WS_ASYNC_YIELD (s, cx);
  WS_AWAIT (s, ws_task_poll (s->child, cx));
  s->steps++;

  ws_test_return_int (cx, g_value_get_int (ws_task_get_value (s->child)) + GPOINTER_TO_INT (s->item));

  WS_ASYNC_END (s);
}

static void
test_sleep_channel_task (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (2);
  Job job = { 0 };
  g_autoptr(WsTask) task = NULL;

  job.nap = ws_sleep_new (5000);
  job.inbox = ws_channel_new (1, NULL);
  job.child = ws_runtime_spawn (rt, child_value, NULL, NULL);
  task = ws_runtime_spawn (rt, job_func, &job, NULL);
  g_usleep (10000);
  g_assert_true (ws_channel_try_send (job.inbox, GINT_TO_POINTER (2), NULL));
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_assert_cmpuint (job.steps, ==, 3);
  g_assert_cmpint (g_value_get_int (ws_task_get_value (task)), ==, 42);

  ws_sleep_unref (job.nap);
  ws_channel_unref (job.inbox);
  g_object_unref (job.child);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

/* The places ws-async.h gives for locals with a cleanup attribute: before
 * WS_ASYNC_BEGIN (made and freed on every poll), in a block that holds no
 * await, after the last await; and what lives across awaits in the state,
 * freed by the destroy notify. Each is freed exactly once, across polls
 * that suspend and resume (a local in scope at a later await does not
 * compile: tests/async-macros-misuse.c). */
typedef struct
{
  guint *live;
} Tracked;

static Tracked *
tracked_new (guint *live)
{
  Tracked *t = g_new0 (Tracked, 1);

  t->live = live;
  (*live)++;
  return t;
}

static void
tracked_free (Tracked *t)
{
  (*t->live)--;
  g_free (t);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (Tracked, tracked_free)

typedef struct
{
  WS_ASYNC_STATE;
  WsSleep *nap;
  Tracked *kept;          /* lives across awaits: the state owns it */
  guint    i;
  guint    polls;
  guint    live;          /* Tracked alive */
  guint    max_live;
  guint    blocks;
  gboolean tail;
} Cleanups;

static void
cleanups_free (gpointer data)
{
  Cleanups *s = data;

  g_clear_pointer (&s->kept, tracked_free);
}

static WsPoll
cleanups_func (WsContext *cx,
               gpointer   data)
{
  Cleanups *s = data;
  g_autoptr(Tracked) per_poll = tracked_new (&s->live);

  s->polls++;
  s->max_live = MAX (s->max_live, s->live);

  WS_ASYNC_BEGIN (s);

  s->kept = tracked_new (&s->live);
  for (s->i = 0; s->i < 3; s->i++)
    {
      {
        g_autoptr(Tracked) between = tracked_new (&s->live);

        s->blocks++;
        s->max_live = MAX (s->max_live, s->live);
      }
      ws_sleep_reset (s->nap, g_get_monotonic_time () + 1000);
      WS_AWAIT (s, ws_sleep_poll (s->nap, cx));
      WS_ASYNC_YIELD (s, cx);
    }

  g_autoptr(Tracked) tail = tracked_new (&s->live);
  s->tail = tail != NULL;
  s->max_live = MAX (s->max_live, s->live);

  WS_ASYNC_END (s);
}

static void
test_cleanup_locals (void)
{
  WsTestOnContext f;
  Cleanups s = { 0 };
  g_autoptr(WsTask) task = NULL;

  /* A local task: polled on this thread, so the counters need no atomics. */
  ws_test_on_context_init (&f, 1);
  s.nap = ws_sleep_new (1000);
  task = ws_runtime_spawn_local (f.rt, NULL, cleanups_func, &s, cleanups_free);
  ws_test_iterate_until (f.ctx, ws_task_is_finished (task));

  /* Suspended and resumed: one poll for the start, then one per await
   * that was pending and per yield. */
  g_assert_cmpuint (s.polls, >=, 1 + 3);
  g_assert_cmpuint (s.blocks, ==, 3);
  g_assert_true (s.tail);
  /* per_poll, kept and one of between or tail at a time. */
  g_assert_cmpuint (s.max_live, ==, 3);
  g_assert_null (s.kept);
  g_assert_cmpuint (s.live, ==, 0);

  ws_sleep_unref (s.nap);
  ws_test_on_context_clear (&f);
}

/* A state that was not zeroed (g_new instead of g_new0) holds a resume
 * point the function never saved: a critical that says so, not a silent
 * "success" that ran nothing. A finished coroutine polled again stays
 * finished, quietly. */
typedef struct
{
  WS_ASYNC_STATE;
  guint body_runs;
} Unzeroed;

static WsPoll
unzeroed_func (WsContext *cx,
               gpointer   data)
{
  Unzeroed *s = data;

  WS_ASYNC_BEGIN (s);
  s->body_runs++;
  WS_ASYNC_END (s);
}

static void
test_unzeroed_state (void)
{
  g_autoptr(WsRuntime) rt = ws_runtime_new (1);
  Unzeroed garbage = { 0, 0 };
  Unzeroed fine = { 0, 0 };
  g_autoptr(WsTask) task = NULL;

  garbage.ws_async_line_ = 0x5a5a5a5a;
  g_test_expect_message ("Wsrt", G_LOG_LEVEL_CRITICAL,
                         "unzeroed_func: *no resume point*(1515870810)*g_new0*");
  task = ws_runtime_spawn (rt, unzeroed_func, &garbage, NULL);
  g_assert_true (ws_task_wait (task, NULL, NULL));
  g_test_assert_expected_messages ();
  g_assert_cmpuint (garbage.body_runs, ==, 0);
  g_clear_object (&task);

  /* Run once, then polled again after its end: nothing, no critical. */
  g_assert_cmpint (unzeroed_func (NULL, &fine), ==, WS_POLL_READY);
  g_assert_cmpint (unzeroed_func (NULL, &fine), ==, WS_POLL_READY);
  g_assert_cmpuint (fine.body_runs, ==, 1);
  g_assert_true (ws_runtime_shutdown (rt, -1));
}

WS_TEST_MAIN ({ "/async-macros/sleep-channel-task", test_sleep_channel_task },
              { "/async-macros/cleanup-locals", test_cleanup_locals },
              { "/async-macros/unzeroed-state", test_unzeroed_state })
