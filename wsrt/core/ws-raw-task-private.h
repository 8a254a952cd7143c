/* ws-raw-task-private.h: the task core (the task, its result, its harness)
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A task is a plain struct, not a GObject (g_object_new costs ~270 ns
 * here, a plain allocation ~20 ns; doc/architecture.md, "The task and its
 * state word"). The WsTask GObject is only the join handle, made when a
 * caller asks for one.
 *
 * The state word and its transitions are in ws-task-state-private.h, the
 * waker in ws-waker-private.h, the host interface in
 * ws-task-host-private.h; ws-raw-task.c drives them.
 */

#pragma once

#include <stdatomic.h>

#include <glib.h>

#include "ws-types.h"
#include "ws-debug-private.h"
#include "ws-task-state-private.h"
#include "ws-waker-private.h"
#include "ws-task-host-private.h"

G_BEGIN_DECLS

typedef struct _WsWorker       WsWorker;
/* What WS_DEBUG records of a task (ws-raw-task.c, above its struct). */
typedef struct _WsRawTaskDebug WsRawTaskDebug;

typedef enum
{
  WS_RESULT_NONE,        /* READY without a result */
  WS_RESULT_POINTER,
  WS_RESULT_PAYLOAD,     /* opaque to the core: the face's GValue */
  WS_RESULT_UINT64,      /* a plain integer, no allocation */
  WS_RESULT_ERROR,
  WS_RESULT_CANCELLED,
} WsResultKind;

/* The outcome of a task. POINTER and PAYLOAD both keep a pointer and the
 * function that clears it: the core never looks inside a payload (the
 * GObject face stores a GValue there), so it links against GLib alone. */
typedef struct
{
  WsResultKind kind;
  union
  {
    struct
    {
      gpointer       data;
      GDestroyNotify destroy;
    } pointer;
    GError *error;
    guint64 uint64;
  } u;
} WsResult;

void ws_result_clear (WsResult *result);

typedef enum
{
  WS_STAGE_FUTURE,       /* func/data/destroy are live */
  WS_STAGE_FINISHED,     /* the outcome is stored */
  WS_STAGE_CONSUMED,     /* the outcome was taken or dropped */
} WsStage;

/* What the face attaches to a task that asked for a GCancellable
 * (ws_context_get_cancellable): cancel () runs, maybe more than once and
 * on any thread, once the task is cancelled; with @last (once, with
 * RUNNING held, just before the future is destroyed) it returns only when
 * no other thread's cancel () is still running the cancellable's
 * handlers; free () runs when the task's memory goes. See "Cancellation
 * the work can see" in ws-raw-task.c. */
typedef struct _WsCancelHook WsCancelHook;
struct _WsCancelHook
{
  void (*cancel) (WsCancelHook *hook,
                  gboolean      last);
  void (*free)   (WsCancelHook *hook);
};

struct _WsRawTask
{
  WsWaker          waker;            /* first: a task is its own waker */
  WsTaskState      state;            /* ws-task-state-private.h */
  WsTaskHost      *host;
  WsRawTask       *queue_next;       /* WsTaskFifo link (ws-task-fifo-private.h) */
  WsRawTask       *registry_prev;       /* registry list, under its lock */
  WsRawTask       *registry_next;
  WsWaker         *join_waker;       /* guarded by WS_STATE_JOIN_WAKER */
  guint16          registry_shard;
  guint8           registry_linked;     /* under the shard lock */
  guint8           bound;            /* in the task registry once; see ws_task_registry_bind */
  guint8           stage;            /* WsStage, owned by whoever holds RUNNING */
  guint8           result_kind;      /* WsResultKind once FINISHED */
  guint8           counted;          /* accepted: counted alive until complete() */
  guint8           has_tail;         /* WsTailKind: how the task's memory was allocated */
  WsCancelHook *_Atomic cancel_hook; /* set once, by the poller; NULL mostly */
#ifdef WS_ENABLE_SYSPROF
  gint64           trace_begin;      /* the spawn's ws_trace_begin (): 0 unless recorded */
#endif
  /* The task's name (ws_raw_task_set_name): an interned string or NULL,
   * written by any thread, read by any (messages, the stuck dump). */
  const char *_Atomic name;
  /* Made by the poller when WS_DEBUG is set, NULL otherwise; freed with
   * the task. */
  WsRawTaskDebug *_Atomic debug;
  union
  {
    struct
    {
      WsTaskFunc     func;
      gpointer       data;
      GDestroyNotify destroy;
    } future;
    struct
    {
      gpointer       data;
      GDestroyNotify destroy;
    } pointer;
    GError *error;
    guint64 uint64;
  } u;
};

/* What a poller needs to run a task; lives on the stack of the polling
 * thread (or inside its worker) and is what WsContext points at. */
struct _WsContext
{
  WsRawTask *task;
  WsWorker  *worker;                 /* NULL off the worker pool */
  guint      budget;                 /* the cooperative budget of this tick */
  guint      awaited_depth;          /* work-first nesting (ws-worker.c) */
  gboolean   yielded;
  WsResult   result;
  /* The fiber this context belongs to (ws-fiber.c), which keeps its own
   * context for the fiber's whole life; NULL in a poller's context. The
   * core reads only whether it is set (a work-first run on a fiber's
   * stack, ws-worker.c). */
  gpointer   fiber;
};

/* Stores a new reference to the polling task's waker (the task of @cx)
 * in @slot, under the awaitable's lock, and returns the waker it
 * replaced, whose reference the caller drops outside the lock
 * (ws-waker-private.h). */
WsWaker   *ws_waker_slot_replace            (WsWaker       **slot,
                                             WsContext      *cx);

void       ws_raw_task_release_zombies      (WsTaskHost     *host);
WsRawTask *ws_raw_task_new                  (WsTaskHost     *host,
                                             WsTaskFunc      func,
                                             gpointer        data,
                                             GDestroyNotify  destroy,
                                             gboolean        join_interest);
WsRawTask *ws_raw_task_new_with_tail        (WsTaskHost     *host,
                                             WsTaskFunc      func,
                                             gpointer        data,
                                             GDestroyNotify  destroy,
                                             gboolean        join_interest,
                                             gsize           tail_size,
                                             gconstpointer   state,
                                             gsize           state_size);
void       ws_raw_task_ref                  (WsRawTask      *task);
void       ws_raw_task_unref                (WsRawTask      *task);
void       ws_raw_task_unref_n              (WsRawTask      *task,
                                             guint           n);
void       ws_raw_task_run                  (WsRawTask      *task,
                                             WsContext      *cx);
void       ws_raw_task_run_awaited          (WsRawTask      *task,
                                             WsContext      *cx);
void       ws_raw_task_wake_by_ref          (WsRawTask      *task);
void       ws_raw_task_cancel               (WsRawTask      *task);
gboolean   ws_raw_task_shutdown             (WsRawTask      *task);
gboolean   ws_raw_task_shutdown_idle        (WsRawTask      *task);
void       ws_raw_task_refuse               (WsRawTask      *task);
void       ws_raw_task_mark_counted         (WsRawTask      *task);
void       ws_raw_task_drop_queued          (WsRawTask      *task);
gboolean   ws_raw_task_try_read_output      (WsRawTask      *task,
                                             WsWaker        *waker,
                                             WsResult       *out);
gboolean   ws_raw_task_try_read_output_full (WsRawTask      *task,
                                             WsWaker        *waker,
                                             WsResult       *out,
                                             gboolean       *replaced_other);
void       ws_raw_task_drop_join_handle     (WsRawTask      *task);
gboolean   ws_raw_task_has_join_handle      (WsRawTask      *task);
gboolean   ws_raw_task_is_complete          (WsRawTask      *task);

/* Live task count, for tests and leak checks: counted only with
 * WS_ENABLE_LEAK_COUNTERS (debug builds), -1 otherwise. */
gint64     ws_raw_task_get_n_live        (void);

static inline guint64
ws_raw_task_get_state (WsRawTask *task)
{
  return ws_task_state_load (&task->state, memory_order_acquire);
}

void          ws_raw_task_set_cancel_hook (WsRawTask    *task,
                                           WsCancelHook *hook);

/* The hook a poll of @task installed, or NULL. Acquire: pairs with the
 * release of the install, for the hook's contents. */
static inline WsCancelHook *
ws_raw_task_get_cancel_hook (WsRawTask *task)
{
  return atomic_load_explicit (&task->cancel_hook, memory_order_acquire);
}

void          ws_raw_task_set_name        (WsRawTask    *task,
                                           const char   *name);

/* The task's name, an interned string, or NULL if it has none. Acquire:
 * pairs with the release of ws_raw_task_set_name (), so a reader on
 * another thread sees the string's bytes that g_intern_string () wrote
 * before the store. The string is never freed. */
static inline const char *
ws_raw_task_get_name (WsRawTask *task)
{
  return atomic_load_explicit (&task->name, memory_order_acquire);
}

/* How messages name a task: `“name” (0x…)` or `0x… (unnamed)`, written
 * into @buf, which is returned. The _for_name form is for a caller that
 * read the name before the task could go (the address is only printed). */
#define WS_RAW_TASK_LABEL_SIZE 96
const char   *ws_raw_task_label          (WsRawTask    *task,
                                          char          buf[WS_RAW_TASK_LABEL_SIZE]);
const char   *ws_raw_task_label_for_name (gconstpointer  task,
                                          const char    *name,
                                          char           buf[WS_RAW_TASK_LABEL_SIZE]);

/* The label of the task @cx polls, or "(none)" outside a poll: for the
 * messages about a call made with a context. */
static inline const char *
ws_context_label (WsContext *cx,
                  char       buf[WS_RAW_TASK_LABEL_SIZE])
{
  if (cx == NULL || cx->task == NULL)
    return "(none)";
  return ws_raw_task_label (cx->task, buf);
}

/* Diagnostics (WS_DEBUG, ws-debug-private.h). */
void          ws_raw_task_note_await_slow (WsRawTask    *task,
                                           const char   *what);

/* Records, when WS_DEBUG=stuck is set, what the task that @cx polls
 * waits for: @what is a static string (the awaiting function's
 * G_STRFUNC), shown by the stuck dump. Called in a poll (the poller holds
 * RUNNING). One relaxed load and a branch when off. */
static inline void
ws_context_note_await (WsContext  *cx,
                       const char *what)
{
  if G_UNLIKELY (ws_debug_get_flags () & WS_DEBUG_STUCK)
    {
      if (cx != NULL && cx->task != NULL)
        ws_raw_task_note_await_slow (cx->task, what);
    }
}

/* For the stuck dump, with @task kept alive by the caller (a registry's
 * shard lock): appends a line to @out and returns TRUE if @task has been
 * pending since at least @min_age microseconds before @now. With @mark,
 * a task is reported once per wait: it is marked and skipped while it
 * waits on (only one thread, the runtime's watchdog, marks). With
 * @min_age 0 (ws_runtime_dump_tasks ()), every task that has not ended
 * and is not being polled is listed, with what was recorded of it. */
gboolean      ws_raw_task_describe_pending (WsRawTask  *task,
                                            gint64      now,
                                            gint64      min_age,
                                            gboolean    mark,
                                            GString    *out);

/* Where a tail begins: past the task, at a multiple of 16 bytes. The
 * block is aligned as malloc aligns one (the task allocator's come from
 * malloc too), so a state copied there is aligned for any type
 * (max_align_t: 16 bytes on x86-64, 8 on some 32-bit targets). */
#define WS_RAW_TASK_TAIL_OFFSET ((sizeof (WsRawTask) + 15) & ~(gsize) 15)

/* The @tail_size bytes of a task made with ws_raw_task_new_with_tail (),
 * zeroed at first (or the spawner's state, copied): the spawner's, the
 * core never reads them. They live as long as the task's memory. */
static inline gpointer
ws_raw_task_get_tail (WsRawTask *task)
{
  return (char *) task + WS_RAW_TASK_TAIL_OFFSET;
}

/* The task whose tail @tail is. */
static inline WsRawTask *
ws_raw_task_from_tail (gpointer tail)
{
  return (WsRawTask *) ((char *) tail - WS_RAW_TASK_TAIL_OFFSET);
}

/* For the spawner, right after the spawn returned @task with its join
 * reference: TRUE if the host refused it (ws_raw_task_refuse). An accepted
 * task was counted before it was published, and only the spawner wrote
 * that flag, so this plain read races with nothing. */
static inline gboolean
ws_raw_task_was_refused (WsRawTask *task)
{
  return !task->counted;
}

G_END_DECLS
