/* ws-runtime.c: the GObject face of the worker pool
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <gio/gio.h>

#include "ws-runtime.h"
#include "ws-join-handle.h"
#include "ws-error.h"
#include "ws-handle-private.h"
#include "ws-metrics-private.h"
#include "ws-core-private.h"
#include "ws-task-private.h"
#include "ws-join-handle-delivery-private.h"
#include "ws-runtime-private.h"
#include "ws-refuse-private.h"

/**
 * WsRuntime:
 *
 * A pool of worker threads that runs tasks with work stealing.
 *
 * Each worker owns a run queue, a LIFO slot for the task it just spawned or
 * woke, and a private #GMainContext that is its thread-default context: a
 * GIO `_async()` call made inside a task completes on that worker, and a
 * timeout source attached there fires there. Idle workers steal half of a
 * busy worker's queue; a worker with nothing to do sleeps by iterating its
 * context.
 *
 * Configuration is through construct-only properties. `WsRuntime`
 * implements #GInitable: construct it with g_initable_new() to get a
 * #GError for an invalid configuration (%WS_ERROR_INVALID_CONFIG, naming
 * the property and its valid range; each property's doc gives the range).
 * [ctor@Ws.Runtime.new] reports such errors as criticals instead, and a
 * runtime made with g_object_new() alone replaces an invalid value by its
 * default, with a critical.
 *
 * ```c
 * g_autoptr(GError) error = NULL;
 * g_autoptr(WsRuntime) rt = g_initable_new (WS_TYPE_RUNTIME, NULL, &error,
 *                                           "n-workers", 4,
 *                                           "thread-name-prefix", "thumbs",
 *                                           NULL);
 * ```
 *
 * No thread starts with the runtime: the workers start with the first
 * task or fiber spawned onto them (or the first timer a blocking job
 * arms), the blocking pool's first thread with the first blocking job,
 * and local tasks need neither. So a runtime that runs only blocking
 * jobs, local tasks and local fibers (with [func@Ws.fiber_run_in_thread])
 * runs no worker thread; [struct@Ws.Metrics] reports the workers it
 * would start, with their counters at 0. Shutting down a runtime whose
 * workers never started starts none, and a spawn that races the shutdown
 * either starts them or is refused. A worker thread that cannot be
 * started makes that first spawn return a cancelled task (with a
 * warning) and shuts the runtime down.
 *
 * Disposing the runtime shuts it down and waits for its tasks; see
 * [method@Ws.Runtime.shutdown].
 */

struct _WsRuntime
{
  GObject        parent_instance;
  WsConfig       config;
  WsRuntimeCore *core;
  WsHandle      *handle;
  gboolean       initialized;
};

enum
{
  PROP_0,
  PROP_N_WORKERS,
  PROP_THREAD_NAME_PREFIX,
  PROP_MAX_BLOCKING_THREADS,
  PROP_BLOCKING_KEEP_ALIVE,
  PROP_GLOBAL_QUEUE_INTERVAL,
  PROP_EVENT_INTERVAL,
  PROP_DISABLE_LIFO_SLOT,
  PROP_BUDGET,
  PROP_LOCAL_SLICE,
  PROP_FIBER_STACK_SIZE,
  PROP_MAX_FIBER_STACKS,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

/* Linux keeps 15 characters of a thread name; wsrt appends "-NNNN" or
 * "-blk". */
#define MAX_PREFIX_LEN 10
#define MAX_WORKERS    1024

static void initable_iface_init (GInitableIface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (WsRuntime, ws_runtime, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (G_TYPE_INITABLE, initable_iface_init))

/* The valid range of each numeric property. The GParamSpecs take the
 * whole range of their type, so that an out-of-range value reaches
 * g_initable_init() and fails there with WS_ERROR_INVALID_CONFIG naming
 * the property, instead of GObject's warning and the default. The ranges
 * are repeated in the property docs (ws_runtime_class_init). */
typedef struct
{
  const char *name;
  gsize       offset;               /* in WsConfig */
  gboolean    is_int64;             /* gint64, else guint */
  gint64      min;
  gint64      max;
  gint64      fallback;             /* the default */
} Range;

static const Range ranges[] = {
  { "n-workers", G_STRUCT_OFFSET (WsConfig, n_workers), FALSE, 0, MAX_WORKERS, 0 },
  { "max-blocking-threads", G_STRUCT_OFFSET (WsConfig, max_blocking_threads), FALSE,
    1, 65536, 512 },
  { "blocking-keep-alive", G_STRUCT_OFFSET (WsConfig, blocking_keep_alive), TRUE,
    0, G_MAXINT64, 10 * G_USEC_PER_SEC },
  { "global-queue-interval", G_STRUCT_OFFSET (WsConfig, global_queue_interval), FALSE,
    1, G_MAXINT32, 61 },
  { "event-interval", G_STRUCT_OFFSET (WsConfig, event_interval), FALSE, 1, G_MAXINT32, 61 },
  { "budget", G_STRUCT_OFFSET (WsConfig, budget), FALSE, 1, G_MAXINT32, 128 },
  { "local-slice", G_STRUCT_OFFSET (WsConfig, local_slice), TRUE,
    1, G_USEC_PER_SEC, WS_LOCAL_SLICE_USEC },
  { "fiber-stack-size", G_STRUCT_OFFSET (WsConfig, fiber_stack_size), FALSE,
    WS_FIBER_STACK_MIN_SIZE, 1 << 30, WS_FIBER_STACK_DEFAULT_SIZE },
};

static gint64
range_get (const Range    *r,
           const WsConfig *config)
{
  const guint8 *field = (const guint8 *) config + r->offset;

  return r->is_int64 ? *(const gint64 *) field : (gint64) *(const guint *) field;
}

static void
range_set (const Range *r,
           WsConfig    *config,
           gint64       value)
{
  guint8 *field = (guint8 *) config + r->offset;

  if (r->is_int64)
    *(gint64 *) field = value;
  else
    *(guint *) field = (guint) value;
}

/* Whether @config is valid. If not, @error names the first invalid
 * setting and its valid range, and @bad_range points at that range (NULL
 * for the thread-name prefix). */
static gboolean
validate_config (const WsConfig  *config,
                 const Range    **bad_range,
                 GError         **error)
{
  const gchar *prefix = config->thread_name_prefix;

  if (bad_range != NULL)
    *bad_range = NULL;

  if (prefix == NULL || prefix[0] == '\0' || strlen (prefix) > MAX_PREFIX_LEN)
    {
      g_set_error (error, WS_ERROR, WS_ERROR_INVALID_CONFIG,
                   "thread-name-prefix “%s” must be 1 to %d characters long: Linux "
                   "keeps 15 characters of a thread name and wsrt appends “-N”",
                   prefix ? prefix : "", MAX_PREFIX_LEN);
      return FALSE;
    }

  for (guint i = 0; i < G_N_ELEMENTS (ranges); i++)
    {
      const Range *r = &ranges[i];
      gint64 value = range_get (r, config);

      if (value < r->min || value > r->max)
        {
          g_set_error (error, WS_ERROR, WS_ERROR_INVALID_CONFIG,
                       "%s is %" G_GINT64_FORMAT "; it must be between %" G_GINT64_FORMAT
                       " and %" G_GINT64_FORMAT, r->name, value, r->min, r->max);
          if (bad_range != NULL)
            *bad_range = r;
          return FALSE;
        }
    }
  return TRUE;
}

static gboolean
validate (WsRuntime  *self,
          GError    **error)
{
  return validate_config (&self->config, NULL, error);
}

/* For a runtime made without g_initable_init(): each invalid setting of
 * @config is replaced by its default, with a critical that says so. */
static void
fix_config (WsConfig *config)
{
  const Range *bad;
  GError *error = NULL;

  while (!validate_config (config, &bad, &error))
    {
      if (bad == NULL)
        {
          g_critical ("WsRuntime: %s; using “ws”", error->message);
          config->thread_name_prefix = (gchar *) "ws";
        }
      else
        {
          g_critical ("WsRuntime: %s; using %" G_GINT64_FORMAT, error->message, bad->fallback);
          range_set (bad, config, bad->fallback);
        }
      g_clear_error (&error);
    }
}

/* The runtime core is made at construction when the configuration is valid;
 * otherwise g_initable_init() reports the error, and a runtime made with
 * plain g_object_new() falls back to defaults here, with a critical, on
 * first use. */
static G_GNUC_NO_INLINE WsRuntimeCore *
make_core (WsRuntime *self)
{
  WsRuntimeCore *core;
  WsConfig config;

  /* The copy's prefix is the runtime's string or a literal: the core
   * copies it (ws_config_init_from). */
  config = self->config;
  fix_config (&config);

  core = ws_runtime_core_new (&config);
  if (!g_atomic_pointer_compare_and_exchange (&self->core, NULL, core))
    {
      /* Another thread got there first. */
      ws_runtime_core_shutdown (core, -1);
      ws_runtime_core_unref (core);
      return g_atomic_pointer_get (&self->core);
    }
  return core;
}

/* Every spawn passes here: the first one's setup is out of line, so that
 * the others do not pay for its stack frame. */
static inline WsRuntimeCore *
ensure_core (WsRuntime *self)
{
  WsRuntimeCore *core = g_atomic_pointer_get (&self->core);

  if G_LIKELY (core != NULL)
    return core;
  return make_core (self);
}

/* The core of @self, made on first use (ws-runtime-private.h). */
WsRuntimeCore *
ws_runtime_get_core (WsRuntime *self)
{
  return ensure_core (self);
}

static WsHandle *
ensure_handle (WsRuntime *self)
{
  WsHandle *handle = g_atomic_pointer_get (&self->handle);

  if (handle == NULL)
    {
      handle = ws_handle_new_for_core (ensure_core (self));
      if (!g_atomic_pointer_compare_and_exchange (&self->handle, NULL, handle))
        {
          g_object_unref (handle);
          handle = g_atomic_pointer_get (&self->handle);
        }
    }
  return handle;
}

static gboolean
ws_runtime_initable_init (GInitable     *initable,
                          GCancellable  *cancellable,
                          GError       **error)
{
  WsRuntime *self = WS_RUNTIME (initable);

  if (self->initialized)
    return TRUE;

  if (!validate (self, error))
    return FALSE;

  /* No thread starts here: the workers start with the first spawn onto
   * them, the blocking pool with the first blocking job
   * (ws-runtime-core.c), so an app starts only what it uses. */
  ensure_core (self);
  self->initialized = TRUE;
  return TRUE;
}

static void
initable_iface_init (GInitableIface *iface)
{
  iface->init = ws_runtime_initable_init;
}

static void
ws_runtime_constructed (GObject *object)
{
  WsRuntime *self = WS_RUNTIME (object);

  G_OBJECT_CLASS (ws_runtime_parent_class)->constructed (object);

  if (validate (self, NULL))
    ensure_core (self);
}

static void
ws_runtime_dispose (GObject *object)
{
  WsRuntime *self = WS_RUNTIME (object);

  /* Disposing shuts the runtime down, or finishes a shutdown that
   * returned early (a timeout). From one of its own threads the call
   * returns at once, and the last pool thread ends the tasks. It waits
   * for every task to end, not for GIO calls that cancelled tasks left
   * in flight: those stay with the pool thread that drains them, which
   * holds the runtime until they call back (ws-worker-pool.c, "Owed
   * completions"). */
  if (self->core != NULL && !ws_runtime_core_is_finished (self->core))
    ws_runtime_core_shutdown_full (self->core, -1, FALSE);

  g_clear_object (&self->handle);

  G_OBJECT_CLASS (ws_runtime_parent_class)->dispose (object);
}

static void
ws_runtime_finalize (GObject *object)
{
  WsRuntime *self = WS_RUNTIME (object);

  g_clear_pointer (&self->core, ws_runtime_core_unref);
  g_free (self->config.thread_name_prefix);

  G_OBJECT_CLASS (ws_runtime_parent_class)->finalize (object);
}

static void
ws_runtime_get_property (GObject    *object,
                         guint       prop_id,
                         GValue     *value,
                         GParamSpec *pspec)
{
  WsRuntime *self = WS_RUNTIME (object);

  switch (prop_id)
    {
    case PROP_N_WORKERS:
      g_value_set_uint (value, self->core != NULL
                               ? ws_runtime_core_get_config (self->core)->n_workers
                               : self->config.n_workers);
      break;
    case PROP_THREAD_NAME_PREFIX:
      g_value_set_string (value, self->config.thread_name_prefix);
      break;
    case PROP_MAX_BLOCKING_THREADS:
      g_value_set_uint (value, self->config.max_blocking_threads);
      break;
    case PROP_BLOCKING_KEEP_ALIVE:
      g_value_set_int64 (value, self->config.blocking_keep_alive);
      break;
    case PROP_GLOBAL_QUEUE_INTERVAL:
      g_value_set_uint (value, self->config.global_queue_interval);
      break;
    case PROP_EVENT_INTERVAL:
      g_value_set_uint (value, self->config.event_interval);
      break;
    case PROP_DISABLE_LIFO_SLOT:
      g_value_set_boolean (value, self->config.disable_lifo_slot);
      break;
    case PROP_BUDGET:
      g_value_set_uint (value, self->config.budget);
      break;
    case PROP_LOCAL_SLICE:
      g_value_set_int64 (value, self->config.local_slice);
      break;
    case PROP_FIBER_STACK_SIZE:
      g_value_set_uint (value, self->config.fiber_stack_size);
      break;
    case PROP_MAX_FIBER_STACKS:
      g_value_set_uint (value, self->core != NULL
                               ? ws_runtime_core_get_config (self->core)->max_fiber_stacks
                               : self->config.max_fiber_stacks);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ws_runtime_set_property (GObject      *object,
                         guint         prop_id,
                         const GValue *value,
                         GParamSpec   *pspec)
{
  WsRuntime *self = WS_RUNTIME (object);

  switch (prop_id)
    {
    case PROP_N_WORKERS:
      self->config.n_workers = g_value_get_uint (value);
      break;
    case PROP_THREAD_NAME_PREFIX:
      g_free (self->config.thread_name_prefix);
      self->config.thread_name_prefix = g_value_dup_string (value);
      if (self->config.thread_name_prefix == NULL)
        self->config.thread_name_prefix = g_strdup ("ws");
      break;
    case PROP_MAX_BLOCKING_THREADS:
      self->config.max_blocking_threads = g_value_get_uint (value);
      break;
    case PROP_BLOCKING_KEEP_ALIVE:
      self->config.blocking_keep_alive = g_value_get_int64 (value);
      break;
    case PROP_GLOBAL_QUEUE_INTERVAL:
      self->config.global_queue_interval = g_value_get_uint (value);
      break;
    case PROP_EVENT_INTERVAL:
      self->config.event_interval = g_value_get_uint (value);
      break;
    case PROP_DISABLE_LIFO_SLOT:
      self->config.disable_lifo_slot = g_value_get_boolean (value);
      break;
    case PROP_BUDGET:
      self->config.budget = g_value_get_uint (value);
      break;
    case PROP_LOCAL_SLICE:
      self->config.local_slice = g_value_get_int64 (value);
      break;
    case PROP_FIBER_STACK_SIZE:
      self->config.fiber_stack_size = g_value_get_uint (value);
      break;
    case PROP_MAX_FIBER_STACKS:
      self->config.max_fiber_stacks = g_value_get_uint (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ws_runtime_class_init (WsRuntimeClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GParamFlags flags = G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS;

  /* GLib fills some caches on first use with a plain store (G_DEFINE_QUARK's
   * static, a GType's registration is locked but its class is not): two
   * of our threads filling one at once is a data race. Fill the ones
   * that wsrt's threads reach first (a GIO error made in a task, a task
   * error, a task's cancellable) here, once, before any runtime thread
   * exists. Not GTask's type: registering it starts GLib's worker thread
   * (`gmain`, for GTask's thread pool), and a process that makes and
   * drops a runtime keeps the threads it had; GTask is registered by the
   * first GIO call, under g_once like any type. */
  (void) g_io_error_quark ();
  (void) ws_error_quark ();
  g_type_ensure (G_TYPE_CANCELLABLE);
  /* The seconds timeouts' per-process perturbation (gmain.c's
   * timer_perturb), computed by the first g_timeout_source_new_seconds;
   * tasks on two workers made their first ones at once. */
  g_source_unref (g_timeout_source_new_seconds (1));

  object_class->constructed = ws_runtime_constructed;
  object_class->dispose = ws_runtime_dispose;
  object_class->finalize = ws_runtime_finalize;
  object_class->get_property = ws_runtime_get_property;
  object_class->set_property = ws_runtime_set_property;

  /**
   * WsRuntime:n-workers:
   *
   * The number of worker threads, from 0 to 1024; 0 (the default) means
   * one per CPU. Reading it after construction gives the actual number.
   */
  properties[PROP_N_WORKERS] =
    g_param_spec_uint ("n-workers", NULL, NULL, 0, G_MAXUINT, 0, flags);

  /**
   * WsRuntime:thread-name-prefix:
   *
   * Workers are named `PREFIX-N` and blocking threads `PREFIX-blk`. At most
   * 10 characters, so that names fit the 15 that Linux keeps.
   */
  properties[PROP_THREAD_NAME_PREFIX] =
    g_param_spec_string ("thread-name-prefix", NULL, NULL, "ws", flags);

  /**
   * WsRuntime:max-blocking-threads:
   *
   * The most threads the blocking pool starts, from 1 to 65536; 512 by
   * default.
   */
  properties[PROP_MAX_BLOCKING_THREADS] =
    g_param_spec_uint ("max-blocking-threads", NULL, NULL, 0, G_MAXUINT, 512, flags);

  /**
   * WsRuntime:blocking-keep-alive:
   *
   * How long an idle blocking thread waits for a job before it exits, in
   * microseconds: 0 or more; 10 seconds by default.
   */
  properties[PROP_BLOCKING_KEEP_ALIVE] =
    g_param_spec_int64 ("blocking-keep-alive", NULL, NULL,
                        G_MININT64, G_MAXINT64, 10 * G_USEC_PER_SEC, flags);

  /**
   * WsRuntime:global-queue-interval:
   *
   * The most ticks between two looks of a worker at the injection queue
   * before its own queue, so remote spawns are not starved by local ones.
   * A worker looks more often when its tasks poll for long: about every
   * 200 microseconds of polling, and at least every 2 ticks. From 1 to
   * %G_MAXINT32; 61 by default.
   */
  properties[PROP_GLOBAL_QUEUE_INTERVAL] =
    g_param_spec_uint ("global-queue-interval", NULL, NULL, 0, G_MAXUINT, 61, flags);

  /**
   * WsRuntime:event-interval:
   *
   * Every this many ticks a busy worker dispatches its #GMainContext
   * without sleeping, so that sources attached there fire under load.
   * From 1 to %G_MAXINT32; 61 by default.
   */
  properties[PROP_EVENT_INTERVAL] =
    g_param_spec_uint ("event-interval", NULL, NULL, 0, G_MAXUINT, 61, flags);

  /**
   * WsRuntime:disable-lifo-slot:
   *
   * Turns the LIFO slot off: tasks spawned or woken on a worker then go to
   * the back of its queue, where other workers can steal them at once.
   */
  properties[PROP_DISABLE_LIFO_SLOT] =
    g_param_spec_boolean ("disable-lifo-slot", NULL, NULL, FALSE, flags);

  /**
   * WsRuntime:budget:
   *
   * The cooperative budget of one poll: how many runtime awaitables (such
   * as [method@Ws.Task.poll]) a task may consume before it is made to
   * yield. From 1 to %G_MAXINT32; 128 by default.
   */
  properties[PROP_BUDGET] =
    g_param_spec_uint ("budget", NULL, NULL, 0, G_MAXUINT, 128, flags);

  /**
   * WsRuntime:local-slice:
   *
   * How long one dispatch of local tasks (see
   * [method@Ws.Runtime.spawn_local]) may run before it returns to the main
   * loop, in microseconds, from 1 to 1000000. A dispatch also stops after
   * 256 polls. The default, 1000, keeps a 60 Hz frame clock on time.
   */
  properties[PROP_LOCAL_SLICE] =
    g_param_spec_int64 ("local-slice", NULL, NULL, G_MININT64, G_MAXINT64, 1000, flags);

  /**
   * WsRuntime:fiber-stack-size:
   *
   * The usable size in bytes of the stack of each fiber
   * ([method@Ws.Runtime.spawn_fiber]), from 16384 to 1073741824 (1 GiB);
   * 262144 (256 KiB) by default, twice what libdex found GTK and Pango
   * to need. The stack is reserved, not committed: a fiber costs the
   * pages it touches. [method@Ws.Runtime.spawn_fiber_full] sets the size
   * of one fiber's stack.
   */
  properties[PROP_FIBER_STACK_SIZE] =
    g_param_spec_uint ("fiber-stack-size", NULL, NULL, 0, G_MAXUINT,
                       WS_FIBER_STACK_DEFAULT_SIZE, flags);

  /**
   * WsRuntime:max-fiber-stacks:
   *
   * The most fiber stacks this runtime has mapped at once: those of its
   * fibers that started and have not returned (a fiber spawned but not
   * yet polled has none), and those it keeps for reuse (up to 64 per
   * worker and 1024 in a pool). A fiber that needs a new stack at the cap
   * first unmaps one that the pool keeps; if there is none, the fiber
   * ends at once, its function not run, with a %WS_ERROR_FAILED error
   * that names this property. Stacks kept by idle workers count too, so
   * a fiber may be refused with up to 64 per worker fewer running.
   *
   * Each stack takes two memory mappings, and the kernel bounds the
   * mappings of a whole process (`vm.max_map_count`, 65530 by default):
   * past that bound not only fibers fail, every library of the process
   * fails to allocate memory. 0, the default, means a quarter of
   * `vm.max_map_count` (16382 by default), which leaves half the mappings
   * to the rest of the process; reading the property after construction
   * gives the cap in force. %G_MAXUINT means no cap. The cap is per
   * runtime: a process with several runtimes that run many fibers each
   * should set it lower.
   */
  properties[PROP_MAX_FIBER_STACKS] =
    g_param_spec_uint ("max-fiber-stacks", NULL, NULL, 0, G_MAXUINT, 0, flags);

  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
ws_runtime_init (WsRuntime *self)
{
  self->config.n_workers = 0;
  self->config.thread_name_prefix = g_strdup ("ws");
  self->config.max_blocking_threads = 512;
  self->config.blocking_keep_alive = 10 * G_USEC_PER_SEC;
  self->config.global_queue_interval = 61;
  self->config.event_interval = 61;
  self->config.disable_lifo_slot = FALSE;
  self->config.budget = 128;
  self->config.local_slice = WS_LOCAL_SLICE_USEC;
  self->config.fiber_stack_size = WS_FIBER_STACK_DEFAULT_SIZE;
}

/**
 * ws_runtime_new:
 * @n_workers: the number of worker threads; 0 for one per CPU
 *
 * Creates a runtime. Its threads start when they are first needed: the
 * workers with the first spawn onto them, the blocking pool's first
 * thread with the first blocking job, so an app that only runs blocking
 * jobs starts no worker. Use g_initable_new() with %WS_TYPE_RUNTIME to
 * set other properties and get a #GError for an invalid one.
 *
 * Returns: (transfer full) (nullable): a new runtime, or %NULL (with a
 *   critical) if @n_workers is out of range
 */
WsRuntime *
ws_runtime_new (guint n_workers)
{
  g_autoptr(GError) error = NULL;
  WsRuntime *self;

  if G_UNLIKELY (n_workers > MAX_WORKERS)
    {
      g_critical ("%s: n_workers must be between 0 (one per CPU) and %u, not %u",
                  G_STRFUNC, MAX_WORKERS, n_workers);
      return NULL;
    }

  self = g_initable_new (WS_TYPE_RUNTIME, NULL, &error, "n-workers", n_workers, NULL);
  if (self == NULL)
    g_critical ("ws_runtime_new: %s", error->message);
  return self;
}

/**
 * ws_runtime_get_default:
 *
 * Gets the process-wide runtime, with one worker per CPU. It is created on
 * first use and its threads start with the first spawn onto them
 * ([method@Ws.Runtime.spawn], a blocking job, ...). Local tasks
 * ([method@Ws.Runtime.spawn_local]) start no thread: they, their sleeps
 * and their GIO calls live on their own main context, so a GJS script or
 * a GTK app that only spawns local tasks runs no worker at all. It lives
 * until the process exits.
 *
 * Returns: (transfer none): the default runtime
 */
WsRuntime *
ws_runtime_get_default (void)
{
  static WsRuntime *default_runtime;
  static gsize once;

  if (g_once_init_enter (&once))
    {
      default_runtime = g_object_new (WS_TYPE_RUNTIME, NULL);
      g_once_init_leave (&once, 1);
    }
  return default_runtime;
}

/* A refused call still frees what it was given (ws-refuse-private.h),
 * naming the caller in its critical. */
static gboolean
refuse_spawn (WsRuntime      *self,
              WsTaskFunc      func,
              gpointer        user_data,
              GDestroyNotify  destroy,
              const char     *strfunc)
{
  if G_LIKELY (WS_IS_RUNTIME (self) && func != NULL)
    return FALSE;

  ws_refused_free (destroy, user_data, strfunc,
                   !WS_IS_RUNTIME (self) ? "WS_IS_RUNTIME (self)" : "func != NULL");
  return TRUE;
}

/**
 * ws_runtime_spawn: (skip)
 * @self: a #WsRuntime
 * @func: (scope notified) (closure user_data) (destroy destroy): the task
 * @user_data: data for @func
 * @destroy: (nullable): frees @user_data after the last poll
 *
 * Spawns a task on the workers of @self. @func runs on a worker thread.
 * Spawned from a worker, the task goes to that worker's LIFO slot and
 * usually runs right after the current task; from any other thread it goes
 * to the injection queue and wakes a sleeping worker.
 *
 * @destroy runs exactly once, after the last poll, and before any waiter
 * learns that the task ended. After [method@Ws.Runtime.shutdown] the task
 * is cancelled at once (and @destroy has run when this returns).
 *
 * Returns: (transfer full): the join handle of the task
 */
WsTask *
ws_runtime_spawn (WsRuntime      *self,
                  WsTaskFunc      func,
                  gpointer        user_data,
                  GDestroyNotify  destroy)
{
  WsRawTask *raw;

  if (refuse_spawn (self, func, user_data, destroy, G_STRFUNC))
    return NULL;

  raw = ws_runtime_core_spawn (ensure_core (self), func, user_data, destroy, TRUE);
  return ws_task_new_for_raw (raw);
}

/**
 * ws_runtime_spawn_joinable: (skip)
 * @self: a #WsRuntime
 * @func: (scope notified) (closure user_data) (destroy destroy): the task
 * @user_data: data for @func
 * @destroy: (nullable): frees @user_data after the last poll
 *
 * Spawns a task on the workers of @self, as [method@Ws.Runtime.spawn]
 * does, and returns a [struct@Ws.JoinHandle]: no GObject per task, for C
 * and Vala code that spawns many tasks and joins them. Inside a task,
 * [method@Ws.Context.spawn] does the same without naming the runtime.
 *
 * Returns: (transfer full): the join handle of the task
 */
WsJoinHandle *
ws_runtime_spawn_joinable (WsRuntime      *self,
                           WsTaskFunc      func,
                           gpointer        user_data,
                           GDestroyNotify  destroy)
{
  if (refuse_spawn (self, func, user_data, destroy, G_STRFUNC))
    return NULL;

  return (WsJoinHandle *) ws_runtime_core_spawn (ensure_core (self), func, user_data,
                                                 destroy, TRUE);
}

/**
 * ws_runtime_spawn_with_callback: (skip)
 * @self: a #WsRuntime
 * @func: (scope notified) (closure user_data) (destroy destroy): the task
 * @user_data: data for @func
 * @destroy: (nullable): frees @user_data after the last poll
 * @callback: (scope async) (closure callback_data): called on the caller's
 *   main context once the task has ended
 * @callback_data: data for @callback
 *
 * Spawns a task on the workers of @self, as [method@Ws.Runtime.spawn]
 * does, and calls @callback with its [struct@Ws.JoinHandle] once it has
 * ended: the cheapest way to bring many results back to a main loop, with
 * no [class@Ws.Task] and no #GAsyncResult per task, and no allocation
 * besides the task itself.
 *
 * @callback runs exactly once, on the thread-default main context of the
 * calling thread as it is at this call (the global default context if the
 * thread has none), dispatched by whichever thread iterates that context,
 * never from inside this call. Completions for one context are batched
 * through one source. The handle is the callback's: it takes the outcome
 * with [method@Ws.JoinHandle.finish] or
 * [method@Ws.JoinHandle.finish_uint64], which also free it, or frees it
 * with [method@Ws.JoinHandle.free]. A failed task finishes with its
 * error, a cancelled one with %G_IO_ERROR_CANCELLED; the callback runs in
 * every case, after @destroy has run. Nobody holds a handle before the callback, so nothing but
 * [method@Ws.Runtime.shutdown] cancels the task from outside: a task that
 * must be stoppable watches a #GCancellable of its own (and ends with
 * [method@Ws.Context.return_error]), or is spawned with
 * [method@Ws.Runtime.spawn] and awaited with [method@Ws.Task.wait_async].
 *
 * Until the callback has run, the context is kept alive, and so are the
 * task and its outcome: if that context is never iterated again, the
 * callback never runs, as for a #GTask. A shutdown does not wait for the
 * callbacks; it cancels the tasks that have not ended, and their callbacks
 * run when the context is next iterated. A task spawned inside another
 * task calls back on the worker's context, as
 * [method@Ws.Task.wait_async] does.
 *
 * After [method@Ws.Runtime.shutdown] the task is refused: @destroy has run
 * when this returns, the call returns %FALSE, and @callback still runs
 * once, on the context, with a handle that finishes with
 * %G_IO_ERROR_CANCELLED.
 *
 * Returns: %TRUE if the runtime took the task; %FALSE if it refused it
 *   because it is shut down
 */
gboolean
ws_runtime_spawn_with_callback (WsRuntime        *self,
                                WsTaskFunc        func,
                                gpointer          user_data,
                                GDestroyNotify    destroy,
                                WsCompletionFunc  callback,
                                gpointer          callback_data)
{
  WsRawTask *raw;
  gboolean refused;

  ws_return_val_if_fail_free (callback != NULL, destroy, user_data, FALSE);
  if (refuse_spawn (self, func, user_data, destroy, G_STRFUNC))
    return FALSE;

  /* The callback and where to call it live in the task's own memory. */
  raw = ws_runtime_core_spawn_with_tail (ensure_core (self), func, user_data, destroy,
                                         ws_join_handle_tail_size ());
  /* Read before the handle is handed over: after that the callback may
   * have freed the task. */
  refused = ws_raw_task_was_refused (raw);
  ws_join_handle_deliver (raw, callback, callback_data);
  return !refused;
}

/**
 * ws_runtime_spawn_detached: (skip)
 * @self: a #WsRuntime
 * @func: (scope notified) (closure user_data) (destroy destroy): the task
 * @user_data: data for @func
 * @destroy: (nullable): frees @user_data after the last poll
 *
 * Spawns a task without a join handle: the cheapest spawn, which allocates
 * only the task itself. Otherwise as [method@Ws.Runtime.spawn].
 */
void
ws_runtime_spawn_detached (WsRuntime      *self,
                           WsTaskFunc      func,
                           gpointer        user_data,
                           GDestroyNotify  destroy)
{
  if (refuse_spawn (self, func, user_data, destroy, G_STRFUNC))
    return;

  ws_runtime_core_spawn (ensure_core (self), func, user_data, destroy, FALSE);
}

/**
 * ws_runtime_spawn_detached_with_state: (skip)
 * @self: a #WsRuntime
 * @func: the task; its `user_data` is the task's copy of @state
 * @state: (not nullable): the task's state, copied into the task
 * @state_size: the size of @state in bytes, more than 0 (and at most
 *   %G_MAXINT32)
 * @clear_func: (nullable): clears the copy's members after the last poll
 *
 * Spawns a detached task, as [method@Ws.Runtime.spawn_detached] does,
 * with its state copied into the task's own memory: @func gets the copy
 * as its `user_data`, and @clear_func runs on it once, after the last
 * poll. See [method@Ws.Context.spawn_with_state] for the copy, its
 * alignment and what a refused spawn does with @state.
 */
void
ws_runtime_spawn_detached_with_state (WsRuntime      *self,
                                      WsTaskFunc      func,
                                      gconstpointer   state,
                                      gsize           state_size,
                                      GDestroyNotify  clear_func)
{
  ws_return_if_fail_free (state != NULL, NULL, NULL);
  ws_return_if_fail_free (state_size > 0, clear_func, (gpointer) state);
  ws_return_if_fail_free (state_size <= G_MAXINT32, clear_func, (gpointer) state);
  if (refuse_spawn (self, func, (gpointer) state, clear_func, G_STRFUNC))
    return;

  ws_runtime_core_spawn_with_state (ensure_core (self), func, state, state_size, state_size,
                                    clear_func, FALSE);
}

/**
 * ws_runtime_spawn_blocking: (skip)
 * @self: a #WsRuntime
 * @func: (scope notified) (closure user_data) (destroy destroy): the job
 * @user_data: data for @func
 * @destroy: (nullable): frees @user_data after the last poll
 *
 * Runs @func on the blocking pool of @self: threads apart from the workers,
 * started on demand up to [property@Ws.Runtime:max-blocking-threads], where
 * blocking I/O or long computations cannot stall other tasks. Jobs start
 * in submission order.
 *
 * Returns: (transfer full): the join handle of the job
 */
WsTask *
ws_runtime_spawn_blocking (WsRuntime      *self,
                           WsTaskFunc      func,
                           gpointer        user_data,
                           GDestroyNotify  destroy)
{
  WsRawTask *raw;

  if (refuse_spawn (self, func, user_data, destroy, G_STRFUNC))
    return NULL;

  raw = ws_runtime_core_spawn_blocking (ensure_core (self), func, user_data, destroy, TRUE);
  return ws_task_new_for_raw (raw);
}

/**
 * ws_runtime_spawn_local:
 * @self: a #WsRuntime
 * @context: (nullable): the context that polls the task; %NULL for the
 *   caller's thread-default context
 * @func: (scope notified) (closure user_data) (destroy destroy): the task
 * @user_data: data for @func
 * @destroy: (nullable): frees @user_data after the last poll
 *
 * Spawns a task that is polled only by the thread that runs @context,
 * usually the GTK main loop. Wakes from any thread are queued for it. One
 * dispatch polls a bounded slice of tasks and returns, so many local tasks
 * do not stall a frame. @destroy runs on that thread too, also when the
 * task is cancelled from elsewhere, and so do the handlers of its
 * cancellable ([method@Ws.Context.get_cancellable]).
 *
 * A local task needs no worker thread, and spawning one starts none: its
 * timers ([struct@Ws.Sleep]) are on @context's own timer wheel, and the
 * GIO calls it makes complete on the thread-default context of the
 * thread that polls it.
 *
 * Returns: (transfer full): the join handle of the task
 */
WsTask *
ws_runtime_spawn_local (WsRuntime      *self,
                        GMainContext   *context,
                        WsTaskFunc      func,
                        gpointer        user_data,
                        GDestroyNotify  destroy)
{
  g_autoptr(GMainContext) ctx = NULL;
  WsRawTask *raw;

  if (refuse_spawn (self, func, user_data, destroy, G_STRFUNC))
    return NULL;

  ctx = context != NULL ? g_main_context_ref (context) : g_main_context_ref_thread_default ();
  raw = ws_runtime_core_spawn_local (ensure_core (self), ctx, func, user_data, destroy, TRUE);
  return ws_task_new_for_raw (raw);
}

/**
 * ws_runtime_spawn_local_detached:
 * @self: a #WsRuntime
 * @context: (nullable): the context that polls the task; %NULL for the
 *   caller's thread-default context
 * @func: (scope notified) (closure user_data) (destroy destroy): the task
 * @user_data: data for @func
 * @destroy: (nullable): frees @user_data after the last poll
 *
 * Like [method@Ws.Runtime.spawn_local], without a join handle.
 */
void
ws_runtime_spawn_local_detached (WsRuntime      *self,
                                 GMainContext   *context,
                                 WsTaskFunc      func,
                                 gpointer        user_data,
                                 GDestroyNotify  destroy)
{
  g_autoptr(GMainContext) ctx = NULL;

  if (refuse_spawn (self, func, user_data, destroy, G_STRFUNC))
    return;

  ctx = context != NULL ? g_main_context_ref (context) : g_main_context_ref_thread_default ();
  ws_runtime_core_spawn_local (ensure_core (self), ctx, func, user_data, destroy, FALSE);
}

/**
 * ws_runtime_shutdown:
 * @self: a #WsRuntime
 * @timeout_usec: how long to wait for running tasks and blocking jobs, in
 *   microseconds; -1 to wait for ever
 *
 * Shuts the runtime down: no task starts any more, every task that has not
 * ended is cancelled (its destroy notify runs), queued blocking jobs are
 * cancelled and running ones waited for. Later spawns return tasks that
 * are already cancelled, and their destroy notifies run before the spawn
 * returns (for [method@Ws.Runtime.spawn_local], on the thread that owns
 * the context: at once if the calling thread can acquire it, otherwise
 * when the owner next dispatches it).
 *
 * Local tasks are cancelled on their own context: if the calling thread
 * can acquire that context, this call runs those cancellations itself;
 * otherwise it waits, up to @timeout_usec, for the thread that owns the
 * context to run them.
 *
 * Completions owed to a worker's context ([method@Ws.Task.wait_async] or
 * [method@Ws.Runtime.spawn_with_callback] called inside a task) are
 * delivered before this call returns; those owed to other contexts are
 * delivered when those contexts are next iterated.
 *
 * A GIO call that a cancelled task made with [struct@Ws.AsyncOp] (or an
 * awaitable built on it) is cancelled, but completes when GIO calls
 * back, which an operation that ignores its cancellable may do late or
 * never. This call waits for such a callback only up to @timeout_usec and
 * returns %FALSE while one is still owed, although every task has ended
 * and every destroy notify has run by then. The runtime's last pool
 * thread keeps iterating the worker's context, holding the runtime, until
 * GIO calls back; nothing is freed under the call. Calling this again
 * returns %TRUE once it has. Dropping the runtime does not wait for it: a
 * call that never calls back keeps that thread and the runtime's memory
 * for the life of the process (doc/threading.md).
 *
 * Called from one of the runtime's own threads (a task, a blocking job, a
 * function run by [func@Ws.block_in_place], a local task, a destroy
 * notify that shutdown itself runs), the call shuts the runtime down all
 * the same, and returns %FALSE at once: it cannot wait for the thread it
 * runs on, whose task has not ended. That %FALSE is not a refusal and
 * logs nothing. By the time it returns no task starts any more, every
 * other task is being cancelled and later spawns are cancelled, as after
 * any other call. To know when everything has ended, call it again from
 * a thread of your own (the main thread, with the timeout you can
 * afford): that call waits, and returns %TRUE once every task, the
 * calling one included, has ended.
 *
 * It is safe to drop the last reference to @self right after this call,
 * even while other threads still hold [struct@Ws.Waker]s or
 * [class@Ws.Task]s of its tasks: each task keeps what it needs alive.
 *
 * Returns: %TRUE if every task ended and every destroy notify ran (their
 *   effects are visible to the caller) and no GIO call of a cancelled task
 *   is still owed a callback, within @timeout_usec; with -1 it returns
 *   %TRUE unless called from one of the runtime's own threads, waiting for
 *   such calls as long as they take. %FALSE always from one of the
 *   runtime's own threads, where the shutdown has begun but cannot be
 *   waited for
 */
gboolean
ws_runtime_shutdown (WsRuntime *self,
                     gint64     timeout_usec)
{
  g_return_val_if_fail (WS_IS_RUNTIME (self), FALSE);
  g_return_val_if_fail (timeout_usec >= -1, FALSE);

  return ws_runtime_core_shutdown (ensure_core (self), timeout_usec);
}

/**
 * ws_runtime_get_handle:
 * @self: a #WsRuntime
 *
 * Gets a handle that spawns on @self.
 *
 * Returns: (transfer full): a handle
 */
WsHandle *
ws_runtime_get_handle (WsRuntime *self)
{
  g_return_val_if_fail (WS_IS_RUNTIME (self), NULL);

  return g_object_ref (ensure_handle (self));
}

/**
 * ws_runtime_get_n_workers:
 * @self: a #WsRuntime
 *
 * Gets the number of worker threads of @self, as resolved from the
 * [property@Ws.Runtime:n-workers] property (0 there means one per CPU).
 *
 * Returns: the number of worker threads
 */
guint
ws_runtime_get_n_workers (WsRuntime *self)
{
  g_return_val_if_fail (WS_IS_RUNTIME (self), 0);

  return ws_runtime_core_get_config (ensure_core (self))->n_workers;
}

/**
 * ws_runtime_dump_tasks:
 * @self: a #WsRuntime
 *
 * Describes the tasks of @self that wait: one line per task of the
 * workers that has returned %WS_POLL_PENDING at least once, and per local
 * task, that has not ended and is not being polled, with its name (see
 * [method@Ws.Task.set_name]) and whether it waits for a wake or is queued.
 * With `WS_DEBUG=stuck` in the environment (doc/getting-started-c.md,
 * “Debugging stuck work”) each line also says how long the task has
 * waited and what it last awaited; without, those read “unknown”.
 * Blocking jobs are not listed: a job runs in one poll.
 *
 * Call it when something hangs, from the program: a debugging shortcut,
 * a D-Bus method, a g_unix_signal_add() callback. The list is read
 * without stopping the runtime (it takes the task registries' locks one
 * at a time), so a task may end or start waiting while it is made.
 *
 * Returns: (transfer full): the description, an empty string when no
 *   task waits
 */
char *
ws_runtime_dump_tasks (WsRuntime *self)
{
  GString *out;

  g_return_val_if_fail (WS_IS_RUNTIME (self), NULL);

  out = g_string_new (NULL);
  ws_runtime_core_dump_pending (ensure_core (self), 0, FALSE, out);
  /* Each line starts with a newline. */
  if (out->len > 0)
    {
      g_string_erase (out, 0, 1);
      g_string_append_c (out, '\n');
    }
  return g_string_free (out, FALSE);
}

/**
 * ws_runtime_get_metrics:
 * @self: a #WsRuntime
 *
 * Takes a snapshot of the runtime's counters. Workers publish their
 * counters as they go; the snapshot is not atomic across workers.
 *
 * Returns: (transfer full): the metrics
 */
WsMetrics *
ws_runtime_get_metrics (WsRuntime *self)
{
  g_return_val_if_fail (WS_IS_RUNTIME (self), NULL);

  return ws_metrics_new_snapshot (ensure_core (self));
}

static void
set_hook (WsRuntime      *self,
          WsHookKind      kind,
          WsHookFunc      func,
          gpointer        user_data,
          GDestroyNotify  destroy,
          const char     *strfunc)
{
  if (!WS_IS_RUNTIME (self))
    {
      if (destroy != NULL)
        destroy (user_data);
      g_return_if_fail_warning (G_LOG_DOMAIN, strfunc, "WS_IS_RUNTIME (self)");
      return;
    }

  if (!ws_runtime_core_set_hook (ensure_core (self), kind, func, user_data, destroy))
    g_critical ("%s: the runtime has already started its threads; set hooks "
                "before its first spawn (after g_object_new() or "
                "g_initable_new())", strfunc);
}

/**
 * ws_runtime_set_on_thread_start: (skip)
 * @self: a #WsRuntime that has not started yet
 * @func: (nullable) (scope notified) (closure user_data) (destroy destroy): the hook
 * @user_data: data for @func
 * @destroy: (nullable): frees @user_data when the runtime goes away
 *
 * Sets a function that runs on every worker and blocking thread when it
 * starts, on that thread. Hooks must be set before the runtime starts its
 * threads, that is before its first spawn: create it with g_object_new()
 * or g_initable_new(), set the hooks, then spawn. Start and stop calls
 * balance.
 */
void
ws_runtime_set_on_thread_start (WsRuntime      *self,
                                WsHookFunc      func,
                                gpointer        user_data,
                                GDestroyNotify  destroy)
{
  set_hook (self, WS_HOOK_THREAD_START, func, user_data, destroy, G_STRFUNC);
}

/**
 * ws_runtime_set_on_thread_stop: (skip)
 * @self: a #WsRuntime that has not started yet
 * @func: (nullable) (scope notified) (closure user_data) (destroy destroy): the hook
 * @user_data: data for @func
 * @destroy: (nullable): frees @user_data when the runtime goes away
 *
 * Sets a function that runs on every worker and blocking thread just
 * before it exits, on that thread. See
 * [method@Ws.Runtime.set_on_thread_start] for when hooks can be set.
 */
void
ws_runtime_set_on_thread_stop (WsRuntime      *self,
                               WsHookFunc      func,
                               gpointer        user_data,
                               GDestroyNotify  destroy)
{
  set_hook (self, WS_HOOK_THREAD_STOP, func, user_data, destroy, G_STRFUNC);
}

/**
 * ws_runtime_set_before_park: (skip)
 * @self: a #WsRuntime that has not started yet
 * @func: (nullable) (scope notified) (closure user_data) (destroy destroy): the hook
 * @user_data: data for @func
 * @destroy: (nullable): frees @user_data when the runtime goes away
 *
 * Sets a function that a worker runs when it has nothing to do, before it
 * goes to sleep. A task the hook spawns or wakes runs before the worker
 * sleeps.
 */
void
ws_runtime_set_before_park (WsRuntime      *self,
                            WsHookFunc      func,
                            gpointer        user_data,
                            GDestroyNotify  destroy)
{
  set_hook (self, WS_HOOK_BEFORE_PARK, func, user_data, destroy, G_STRFUNC);
}

/**
 * ws_runtime_set_after_unpark: (skip)
 * @self: a #WsRuntime that has not started yet
 * @func: (nullable) (scope notified) (closure user_data) (destroy destroy): the hook
 * @user_data: data for @func
 * @destroy: (nullable): frees @user_data when the runtime goes away
 *
 * Sets a function that a worker runs each time it wakes up.
 */
void
ws_runtime_set_after_unpark (WsRuntime      *self,
                             WsHookFunc      func,
                             gpointer        user_data,
                             GDestroyNotify  destroy)
{
  set_hook (self, WS_HOOK_AFTER_UNPARK, func, user_data, destroy, G_STRFUNC);
}

/**
 * ws_block_in_place: (skip)
 * @func: (scope call) (closure user_data): the blocking work
 * @user_data: data for @func
 * @error: return location for a #GError
 *
 * Runs blocking work from inside a task without stalling the other tasks
 * of its worker.
 *
 * On a worker thread, the worker's core (its run queue, its LIFO slot and
 * its #GMainContext) moves to a new thread, which carries on as that
 * worker, and @func runs on the calling thread. When the current poll
 * returns, the calling thread becomes an ordinary blocking thread of the
 * runtime. Calls may nest. Off any runtime (and on a blocking thread)
 * @func simply runs.
 *
 * On a local executor (a task polled by a GTK main loop) the main context
 * cannot move: the call fails with %WS_ERROR_WOULD_BLOCK. Run the work with
 * [method@Ws.Runtime.spawn_blocking] and await it instead.
 *
 * Prefer [method@Ws.Runtime.spawn_blocking] when the work can be handed
 * off; this is for blocking calls in the middle of a poll.
 *
 * Returns: %TRUE if @func ran; %FALSE with @error set if it did not
 */
gboolean
ws_block_in_place (WsBlockingFunc   func,
                   gpointer         user_data,
                   GError         **error)
{
  gint64 trace_begin;

  g_return_val_if_fail (func != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  trace_begin = ws_trace_begin ();
  if (!ws_core_block_in_place_begin (error))
    return FALSE;

  func (user_data);
  ws_trace_end (trace_begin, WS_TRACE_BLOCK_IN_PLACE, 0);
  return TRUE;
}
