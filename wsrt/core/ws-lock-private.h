/* ws-lock-private.h: locks the core can use under ThreadSanitizer
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * GLib's GMutex and GCond are built on raw futex calls on Linux, which
 * ThreadSanitizer cannot see: every access they order would be reported as
 * a race. The core therefore uses POSIX mutexes and condition variables,
 * which TSan intercepts (doc/architecture.md, "Rules: testing").
 */

#pragma once

#include <glib.h>
#include <pthread.h>
#include <time.h>
#include <errno.h>

G_BEGIN_DECLS

typedef struct
{
  pthread_mutex_t mutex;
} WsLock;

typedef struct
{
  pthread_cond_t cond;
} WsCond;

/* For a static WsLock. */
#define WS_LOCK_INIT { PTHREAD_MUTEX_INITIALIZER }

static inline void
ws_lock_init (WsLock *lock)
{
  pthread_mutex_init (&lock->mutex, NULL);
}

static inline void
ws_lock_clear (WsLock *lock)
{
  pthread_mutex_destroy (&lock->mutex);
}

static inline void
ws_lock_lock (WsLock *lock)
{
  pthread_mutex_lock (&lock->mutex);
}

/* TRUE if it took @lock; FALSE at once if another thread holds it. */
static inline gboolean
ws_lock_trylock (WsLock *lock)
{
  return pthread_mutex_trylock (&lock->mutex) == 0;
}

static inline void
ws_lock_unlock (WsLock *lock)
{
  pthread_mutex_unlock (&lock->mutex);
}

static inline void
ws_cond_init (WsCond *cond)
{
  pthread_condattr_t attr;

  /* Deadlines are on the monotonic clock, like g_get_monotonic_time(). */
  pthread_condattr_init (&attr);
  pthread_condattr_setclock (&attr, CLOCK_MONOTONIC);
  pthread_cond_init (&cond->cond, &attr);
  pthread_condattr_destroy (&attr);
}

static inline void
ws_cond_clear (WsCond *cond)
{
  pthread_cond_destroy (&cond->cond);
}

static inline void
ws_cond_wait (WsCond *cond,
              WsLock *lock)
{
  pthread_cond_wait (&cond->cond, &lock->mutex);
}

/* Waits until signalled or until @end_time (g_get_monotonic_time() units)
 * has passed; -1 waits forever. Returns FALSE on timeout. */
static inline gboolean
ws_cond_wait_until (WsCond *cond,
                    WsLock *lock,
                    gint64  end_time)
{
  struct timespec ts;

  if (end_time < 0)
    {
      pthread_cond_wait (&cond->cond, &lock->mutex);
      return TRUE;
    }

  ts.tv_sec = end_time / G_USEC_PER_SEC;
  ts.tv_nsec = (end_time % G_USEC_PER_SEC) * 1000;
  return pthread_cond_timedwait (&cond->cond, &lock->mutex, &ts) != ETIMEDOUT;
}

static inline void
ws_cond_signal (WsCond *cond)
{
  pthread_cond_signal (&cond->cond);
}

static inline void
ws_cond_broadcast (WsCond *cond)
{
  pthread_cond_broadcast (&cond->cond);
}

G_END_DECLS
