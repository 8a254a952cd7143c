/* ws-raw-task-private.h: the task core (header, state word, waker, result)
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A task is a plain struct, not a GObject (DESIGN 4: g_object_new costs
 * ~270 ns here, a plain allocation ~20 ns). The WsTask GObject is only the
 * join handle, made when a caller asks for one.
 */

#pragma once

#include <stdatomic.h>

#include <glib.h>

#include "ws-types.h"

G_BEGIN_DECLS

/* The per-thread pointers of the core are read on every spawn and wake.
 * The default TLS model of a shared library calls __tls_get_addr for each
 * read; initial-exec is one load off %fs. It takes a few bytes of the
 * static TLS surplus that glibc keeps for libraries loaded later (as
 * GObject-Introspection does). */
#define WS_TLS_INITIAL_EXEC __attribute__ ((tls_model ("initial-exec")))

typedef struct _WsRawTask      WsRawTask;
typedef struct _WsTaskHost     WsTaskHost;
typedef struct _WsOwnedTasks   WsTaskRegistry;
typedef struct _WsWorker       WsWorker;

/* A waker is anything with this vtable as its first member. A task is its
 * own waker (no allocation per waker); the WsTask join handle and the
 * blocking waiters embed one too. */
typedef struct
{
  void (*wake)  (WsWaker *waker);      /* by reference: keeps the ref */
  void (*ref)   (WsWaker *waker);
  void (*unref) (WsWaker *waker);
} WsWakerVTable;

struct _WsWaker
{
  const WsWakerVTable *vtable;
};

/* Where a woken task goes: a worker pool, the blocking pool or a local
 * executor on one GMainContext.
 *
 * A task holds a reference on its host from ws_raw_task_new () until it
 * is freed (ref/unref), as a tokio task holds its scheduler handle: a late
 * wake, a join-handle read or a completion never touches a freed host,
 * whatever the owner of the runtime did meanwhile. */
typedef struct
{
  /* Takes over one reference of @task (the "notified" reference). Never
   * completes or cancels a task (doc/architecture.md, "Shutdown"): a host
   * that is closed hands the task to a list that its shutdown drains, or
   * drops the reference of a task that has ended. */
  void (*schedule) (WsTaskHost *host,
                    WsRawTask  *task,
                    gboolean    is_yield);
  void (*ref)      (WsTaskHost *host);
  void (*unref)    (WsTaskHost *host);
} WsTaskHostVTable;

struct _WsTaskHost
{
  const WsTaskHostVTable *vtable;
  WsTaskRegistry          *registry;
  /* Bind a task to the owned set when its first poll returns PENDING, not
   * at spawn. Only for a host whose spawns pass the owned set's spawn
   * gate and whose queues shutdown drains with ws_raw_task_drop_queued
   * (the worker pool): a queued task that was never polled is reached
   * there, not through the set. */
  gboolean               bind_on_pending;
};

typedef enum
{
  WS_RESULT_NONE,        /* READY without a result */
  WS_RESULT_POINTER,
  WS_RESULT_PAYLOAD,     /* opaque to the core: the face's GValue */
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
  } u;
} WsResult;

void ws_result_clear (WsResult *result);

/* State word layout. The flags sit in the low byte, the reference count
 * above it, so that every transition is one CAS on one word. */
#define WS_STATE_RUNNING       ((guint64) 1 << 0)  /* being polled; owns the stage */
#define WS_STATE_COMPLETE      ((guint64) 1 << 1)  /* the outcome is in the stage */
#define WS_STATE_NOTIFIED      ((guint64) 1 << 2)  /* queued, or to be re-queued */
#define WS_STATE_CANCELLED     ((guint64) 1 << 3)
#define WS_STATE_JOIN_INTEREST ((guint64) 1 << 4)  /* a join handle exists */
#define WS_STATE_JOIN_WAKER    ((guint64) 1 << 5)  /* join_waker is set */
#define WS_STATE_REF_SHIFT     8
#define WS_STATE_REF_ONE       ((guint64) 1 << WS_STATE_REF_SHIFT)

typedef enum
{
  WS_STAGE_FUTURE,       /* func/data/destroy are live */
  WS_STAGE_FINISHED,     /* the outcome is stored */
  WS_STAGE_CONSUMED,     /* the outcome was taken or dropped */
} WsStage;

struct _WsRawTask
{
  WsWaker          waker;            /* first: a task is its own waker */
  _Atomic guint64  state;
  WsTaskHost      *host;
  WsRawTask       *queue_next;       /* injection / local-executor lists */
  WsRawTask       *registry_prev;       /* owned-task list, under its lock */
  WsRawTask       *registry_next;
  WsWaker         *join_waker;       /* guarded by WS_STATE_JOIN_WAKER */
  guint16          registry_shard;
  guint8           registry_linked;     /* under the shard lock */
  guint8           bound;            /* in the owned set once; see ws_task_registry_bind */
  guint8           stage;            /* WsStage, owned by whoever holds RUNNING */
  guint8           result_kind;      /* WsResultKind once FINISHED */
  guint8           counted;          /* accepted: counted alive until complete() */
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
  } u;
};

/* What a poller needs to run a task; lives on the stack of the polling
 * thread (or inside its worker) and is what WsContext points at. */
struct _WsContext
{
  WsRawTask *task;
  WsWorker  *worker;                 /* NULL off the worker pool */
  guint      budget;                 /* the cooperative budget of this tick */
  gboolean   yielded;
  WsResult   result;
};

void       ws_raw_task_init_globals      (void);
WsRawTask *ws_raw_task_new               (WsTaskHost     *host,
                                          WsTaskFunc      func,
                                          gpointer        data,
                                          GDestroyNotify  destroy,
                                          gboolean        join_interest);
void       ws_raw_task_ref               (WsRawTask      *task);
void       ws_raw_task_unref             (WsRawTask      *task);
void       ws_raw_task_unref_n           (WsRawTask      *task,
                                          guint           n);
void       ws_raw_task_run               (WsRawTask      *task,
                                          WsContext      *cx);
void       ws_raw_task_wake_by_ref       (WsRawTask      *task);
void       ws_raw_task_cancel            (WsRawTask      *task);
gboolean   ws_raw_task_shutdown          (WsRawTask      *task);
void       ws_raw_task_refuse            (WsRawTask      *task);
void       ws_raw_task_mark_counted      (WsRawTask      *task);
void       ws_raw_task_drop_queued       (WsRawTask      *task);
gboolean   ws_raw_task_try_read_output   (WsRawTask      *task,
                                          WsWaker        *waker,
                                          WsResult       *out);
void       ws_raw_task_drop_join_handle  (WsRawTask      *task);
gboolean   ws_raw_task_is_complete       (WsRawTask      *task);

/* Live task count, for tests and leak checks: counted only with
 * WS_ENABLE_LEAK_COUNTERS (debug builds), -1 otherwise. */
gint64     ws_raw_task_get_n_live        (void);

/* Live references to task wakers (ws_context_get_waker, a waker slot, a
 * vtable ref), counted only with WS_ENABLE_LEAK_COUNTERS (debug builds):
 * the test harness checks it is 0 after every test case. -1 when not
 * counted. Relaxed, like n_live_tasks: exact once the threads are done. */
gint64     ws_raw_task_get_n_live_wakers (void);
#ifdef WS_ENABLE_LEAK_COUNTERS
extern _Atomic gint64 ws_raw_task_n_live_wakers;
# define WS_COUNT_WAKERS(n) \
  ((void) atomic_fetch_add_explicit (&ws_raw_task_n_live_wakers, (n), memory_order_relaxed))
#else
# define WS_COUNT_WAKERS(n) ((void) 0)
#endif

/* Awaitables keep one waker in a slot. Register the polling task's waker
 * there (under the awaitable's lock) and unref the one returned outside
 * it; wake a taken waker with ws_waker_take_and_wake (). */
static inline WsWaker *
ws_waker_slot_replace (WsWaker  **slot,
                       WsContext *cx)
{
  WsWaker *old = *slot;

  ws_raw_task_ref (cx->task);
  WS_COUNT_WAKERS (1);
  *slot = &cx->task->waker;
  return old;
}

static inline void
ws_waker_take_and_wake (WsWaker *waker)
{
  if (waker != NULL)
    {
      waker->vtable->wake (waker);
      waker->vtable->unref (waker);
    }
}

static inline guint64
ws_raw_task_get_state (WsRawTask *task)
{
  return atomic_load_explicit (&task->state, memory_order_acquire);
}

G_END_DECLS
