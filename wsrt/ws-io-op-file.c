/* ws-io-op-file.c: WsIoOp operations on a GFile
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One row (WsIoOpVTable) and one constructor per operation, on the
 * adapter of ws-io-op.c (ws-io-op-private.h says what a row is): load,
 * replace, query, and the enumeration, an operation of three calls.
 */

#include "config.h"

#include "ws-io-op-private.h"

/* ---- load ---------------------------------------------------------------- */

static void
load_start (WsIoOp       *self,
            GCancellable *cancellable,
            gpointer      data)
{
  g_file_load_bytes_async (G_FILE (self->source), cancellable, ws_async_op_callback, data);
}

static gboolean
load_finish (WsIoOp       *self,
             GAsyncResult *result)
{
  ws_io_op_set_result (self, g_file_load_bytes_finish (G_FILE (self->source), result, NULL,
                                                       &self->error),
                       (GDestroyNotify) g_bytes_unref);
  return TRUE;
}

static const WsIoOpVTable load_vtable = {
  .constructor = "ws_file_load_contents",
  .finish = "ws_io_op_finish_bytes",
  .start = load_start,
  .finish_step = load_finish,
  .value_type = g_bytes_get_type,
};

/**
 * ws_file_load_contents:
 * @file: the file to load
 *
 * Creates an awaitable that loads the whole of @file
 * (g_file_load_bytes_async()) when a task first polls it. Get the
 * contents with [method@Ws.IoOp.finish_bytes].
 *
 * Returns: (transfer full): a new operation, not started
 */
WsIoOp *
ws_file_load_contents (GFile *file)
{
  g_return_val_if_fail (G_IS_FILE (file), NULL);

  return ws_io_op_new (&load_vtable, file);
}

/* ---- replace ------------------------------------------------------------- */

static void
replace_start (WsIoOp       *self,
               GCancellable *cancellable,
               gpointer      data)
{
  g_file_replace_contents_bytes_async (G_FILE (self->source), self->input, NULL, FALSE,
                                       G_FILE_CREATE_NONE, cancellable,
                                       ws_async_op_callback, data);
}

static gboolean
replace_finish (WsIoOp       *self,
                GAsyncResult *result)
{
  g_file_replace_contents_finish (G_FILE (self->source), result, NULL, &self->error);
  return TRUE;
}

static const WsIoOpVTable replace_vtable = {
  .constructor = "ws_file_replace_contents",
  .finish = "ws_io_op_finish",
  .start = replace_start,
  .finish_step = replace_finish,
};

/**
 * ws_file_replace_contents:
 * @file: the file to write
 * @contents: what to write to @file
 *
 * Creates an awaitable that replaces the contents of @file with
 * @contents (g_file_replace_contents_bytes_async(), no backup, no etag
 * check) when a task first polls it. Get the outcome with
 * [method@Ws.IoOp.finish].
 *
 * Returns: (transfer full): a new operation, not started
 */
WsIoOp *
ws_file_replace_contents (GFile  *file,
                          GBytes *contents)
{
  WsIoOp *self;

  g_return_val_if_fail (G_IS_FILE (file), NULL);
  g_return_val_if_fail (contents != NULL, NULL);

  self = ws_io_op_new (&replace_vtable, file);
  self->input = g_bytes_ref (contents);
  return self;
}

/* ---- query --------------------------------------------------------------- */

static void
query_start (WsIoOp       *self,
             GCancellable *cancellable,
             gpointer      data)
{
  g_file_query_info_async (G_FILE (self->source), self->attributes, self->query_flags,
                           G_PRIORITY_DEFAULT, cancellable, ws_async_op_callback, data);
}

static gboolean
query_finish (WsIoOp       *self,
              GAsyncResult *result)
{
  ws_io_op_set_result (self, g_file_query_info_finish (G_FILE (self->source), result,
                                                       &self->error),
                       g_object_unref);
  return TRUE;
}

static const WsIoOpVTable query_vtable = {
  .constructor = "ws_file_query_info",
  .finish = "ws_io_op_finish_info",
  .start = query_start,
  .finish_step = query_finish,
  .value_type = g_file_info_get_type,
};

/**
 * ws_file_query_info:
 * @file: the file to query
 * @attributes: the attributes to get, as g_file_query_info() takes them
 *   (`"standard::size,time::modified"`)
 *
 * Creates an awaitable that queries @attributes of @file
 * (g_file_query_info_async(), following symbolic links) when a task first
 * polls it. Get the #GFileInfo with [method@Ws.IoOp.finish_info].
 *
 * Returns: (transfer full): a new operation, not started
 */
WsIoOp *
ws_file_query_info (GFile      *file,
                    const char *attributes)
{
  WsIoOp *self;

  g_return_val_if_fail (G_IS_FILE (file), NULL);
  g_return_val_if_fail (attributes != NULL, NULL);

  self = ws_io_op_new (&query_vtable, file);
  self->attributes = g_strdup (attributes);
  return self;
}

/**
 * ws_file_query_info_full:
 * @file: a #GFile
 * @attributes: the attributes to get, as g_file_query_info() takes them
 * @flags: #G_FILE_QUERY_INFO_NOFOLLOW_SYMLINKS to query a symbolic link
 *   itself
 *
 * [func@Ws.file_query_info] with the flags of g_file_query_info(). In a
 * fiber, any GIO call is also awaited directly with %WS_GIO.
 *
 * Returns: (transfer full): a new operation; finish it with
 *   [method@Ws.IoOp.finish_info]
 */
WsIoOp *
ws_file_query_info_full (GFile               *file,
                         const char          *attributes,
                         GFileQueryInfoFlags  flags)
{
  WsIoOp *self;

  g_return_val_if_fail (G_IS_FILE (file), NULL);
  g_return_val_if_fail (attributes != NULL, NULL);

  self = ws_io_op_new (&query_vtable, file);
  self->attributes = g_strdup (attributes);
  self->query_flags = flags;
  return self;
}

/**
 * ws_io_op_finish_info:
 * @self: a #WsIoOp made by [func@Ws.file_query_info], ready
 * @error: return location for the error of the operation
 *
 * Gets the information the operation queried once
 * [method@Ws.IoOp.poll] returned %WS_POLL_READY.
 *
 * Returns: (transfer full) (nullable): the information, or %NULL with
 *   @error set
 */
GFileInfo *
ws_io_op_finish_info (WsIoOp  *self,
                      GError **error)
{
  if (!ws_io_op_check_finish (self, G_STRFUNC, FALSE, error) || ws_io_op_take_error (self, error))
    return NULL;
  return g_object_ref (self->result);
}

/* ---- enumerate ----------------------------------------------------------- */

/* An enumeration asks for this many GFileInfo per call. */
#define ENUMERATE_BATCH 64

/* The steps of an enumeration. */
enum
{
  STEP_ENUMERATE,
  STEP_NEXT_FILES,
  STEP_CLOSE,
};

typedef struct
{
  GFileEnumerator *enumerator;
  GPtrArray       *infos;        /* what was listed so far */
} Enumerate;

static void
enumerate_start (WsIoOp       *self,
                 GCancellable *cancellable,
                 gpointer      data)
{
  Enumerate *e = ws_io_op_get_priv (self);

  if (self->step == STEP_ENUMERATE)
    g_file_enumerate_children_async (G_FILE (self->source), self->attributes,
                                     G_FILE_QUERY_INFO_NONE, G_PRIORITY_DEFAULT,
                                     cancellable, ws_async_op_callback, data);
  else if (self->step == STEP_NEXT_FILES)
    g_file_enumerator_next_files_async (e->enumerator, ENUMERATE_BATCH,
                                        G_PRIORITY_DEFAULT, cancellable,
                                        ws_async_op_callback, data);
  else
    g_file_enumerator_close_async (e->enumerator, G_PRIORITY_DEFAULT, cancellable,
                                   ws_async_op_callback, data);
}

static gboolean
enumerate_finish (WsIoOp       *self,
                  GAsyncResult *result)
{
  Enumerate *e = ws_io_op_get_priv (self);

  if (self->step == STEP_ENUMERATE)
    {
      e->enumerator = g_file_enumerate_children_finish (G_FILE (self->source), result,
                                                        &self->error);
      if (e->enumerator == NULL)
        return TRUE;
      e->infos = g_ptr_array_new_with_free_func (g_object_unref);
      self->step = STEP_NEXT_FILES;
      return FALSE;
    }
  if (self->step == STEP_NEXT_FILES)
    {
      GList *batch = g_file_enumerator_next_files_finish (e->enumerator, result, &self->error);

      if (self->error != NULL)
        {
          /* Dropping the enumerator closes it (synchronously: a
           * closedir() for local files). */
          g_clear_object (&e->enumerator);
          g_clear_pointer (&e->infos, g_ptr_array_unref);
          return TRUE;
        }
      if (batch == NULL)
        self->step = STEP_CLOSE;
      for (GList *l = batch; l != NULL; l = l->next)
        g_ptr_array_add (e->infos, l->data);
      g_list_free (batch);
      return FALSE;
    }
  g_file_enumerator_close_finish (e->enumerator, result, &self->error);
  g_clear_object (&e->enumerator);
  if (self->error != NULL)
    g_clear_pointer (&e->infos, g_ptr_array_unref);
  else
    ws_io_op_set_result (self, g_steal_pointer (&e->infos), (GDestroyNotify) g_ptr_array_unref);
  return TRUE;
}

static void
enumerate_clear (WsIoOp *self)
{
  Enumerate *e = ws_io_op_get_priv (self);

  g_clear_object (&e->enumerator);
  g_clear_pointer (&e->infos, g_ptr_array_unref);
}

static const WsIoOpVTable enumerate_vtable = {
  .constructor = "ws_file_enumerate_children",
  .finish = "ws_io_op_finish_infos",
  .priv_size = sizeof (Enumerate),
  .start = enumerate_start,
  .finish_step = enumerate_finish,
  .clear = enumerate_clear,
};

/**
 * ws_file_enumerate_children:
 * @file: the directory to list
 * @attributes: the attributes to get for each child, as
 *   g_file_enumerate_children() takes them (`"standard::name,standard::type"`)
 *
 * Creates an awaitable that lists every child of @file with @attributes
 * when a task first polls it: g_file_enumerate_children_async(), then
 * g_file_enumerator_next_files_async() in batches until the end, then
 * g_file_enumerator_close_async(); symbolic links are followed. Get the
 * children with [method@Ws.IoOp.finish_infos]. A directory that does not
 * exist fails with `G_IO_ERROR_NOT_FOUND`, a file that is no directory
 * with `G_IO_ERROR_NOT_DIRECTORY`.
 *
 * Returns: (transfer full): a new operation, not started
 */
WsIoOp *
ws_file_enumerate_children (GFile      *file,
                            const char *attributes)
{
  WsIoOp *self;

  g_return_val_if_fail (G_IS_FILE (file), NULL);
  g_return_val_if_fail (attributes != NULL, NULL);

  self = ws_io_op_new (&enumerate_vtable, file);
  self->attributes = g_strdup (attributes);
  return self;
}

static gpointer
copy_object (gconstpointer object,
             gpointer      data)
{
  return g_object_ref ((gpointer) object);
}

/**
 * ws_io_op_finish_infos:
 * @self: a #WsIoOp made by [func@Ws.file_enumerate_children], ready
 * @error: return location for the error of the operation
 *
 * Gets the children the operation listed once [method@Ws.IoOp.poll]
 * returned %WS_POLL_READY, in the order the enumerator gave them (no
 * particular order: sort them if it matters).
 *
 * The array is new and holds a reference on each #GFileInfo, which it
 * releases when freed (its free function is g_object_unref()):
 * `g_autoptr(GPtrArray)` releases the whole.
 *
 * Returns: (transfer container) (element-type Gio.FileInfo) (nullable):
 *   the information of each child, or %NULL with @error set
 */
GPtrArray *
ws_io_op_finish_infos (WsIoOp  *self,
                       GError **error)
{
  if (!ws_io_op_check_finish (self, G_STRFUNC, FALSE, error) || ws_io_op_take_error (self, error))
    return NULL;
  /* (transfer container) with the references in the array: a binding
   * takes its own reference on each element, then frees the container,
   * which drops ours; C code frees both with one unref. */
  return g_ptr_array_copy (self->result, copy_object, NULL);
}
