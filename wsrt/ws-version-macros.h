/* ws-version-macros.h: availability and deprecation of wsrt symbols
 *
 * Copyright 2026 The wsrt authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * As in GLib (gversionmacros.h) and libdex (dex-version-macros.h): every
 * public function is declared with an availability macro. The library is
 * built with hidden symbol visibility, so the macro is what exports a
 * symbol; it also carries deprecation attributes, which a program can
 * bound with WS_VERSION_MIN_REQUIRED and WS_VERSION_MAX_ALLOWED, or turn
 * off with WS_DISABLE_DEPRECATION_WARNINGS. When a release adds API, add
 * its WS_VERSION_X_Y and its WS_AVAILABLE_IN_X_Y / WS_DEPRECATED_IN_X_Y
 * block here.
 */

#pragma once

#if !defined(WSRT_INSIDE) && !defined(WSRT_COMPILATION)
# error "Only <wsrt.h> can be included directly."
#endif

#include <glib.h>

#ifndef _WS_EXTERN
# if defined(__GNUC__) || defined(__clang__)
#  define _WS_EXTERN __attribute__((visibility ("default"))) extern
# else
#  define _WS_EXTERN extern
# endif
#endif

/**
 * WS_DISABLE_DEPRECATION_WARNINGS:
 *
 * Define it before including `wsrt.h` to silence the warnings that using
 * deprecated wsrt symbols, or symbols newer than
 * %WS_VERSION_MAX_ALLOWED, gives.
 */

/**
 * WS_DEPRECATED:
 *
 * Marks a declaration as deprecated, and exports it.
 */

/**
 * WS_DEPRECATED_FOR:
 * @f: the name of the replacement
 *
 * Marks a declaration as deprecated in favour of @f, and exports it.
 */

/**
 * WS_UNAVAILABLE:
 * @maj: a major version
 * @min: a minor version
 *
 * Marks a declaration as added in wsrt @maj.@min, and exports it.
 */
#ifdef WS_DISABLE_DEPRECATION_WARNINGS
# define WS_DEPRECATED _WS_EXTERN
# define WS_DEPRECATED_FOR(f) _WS_EXTERN
# define WS_UNAVAILABLE(maj,min) _WS_EXTERN
#else
# define WS_DEPRECATED G_DEPRECATED _WS_EXTERN
# define WS_DEPRECATED_FOR(f) G_DEPRECATED_FOR (f) _WS_EXTERN
# define WS_UNAVAILABLE(maj,min) G_UNAVAILABLE (maj, min) _WS_EXTERN
#endif

/**
 * WS_AVAILABLE_IN_ALL:
 *
 * Marks a declaration as available in every version of wsrt, and exports
 * it from the library (which hides every other symbol). Every symbol of
 * the first release, 0.1, has it.
 */
#define WS_AVAILABLE_IN_ALL _WS_EXTERN

/* The version numbers, after the macros above: ws-version.h includes this
 * header and then declares its functions with WS_AVAILABLE_IN_ALL, so this
 * order works whichever of the two headers is included first. */
#include "ws-version.h"

/**
 * WS_VERSION_0_1:
 *
 * The 0.1 release series of wsrt, in a form that the C preprocessor can
 * compare, for %WS_VERSION_MIN_REQUIRED and %WS_VERSION_MAX_ALLOWED.
 */
#define WS_VERSION_0_1 (G_ENCODE_VERSION (0, 1))

/* The release series of the headers being compiled. */
#define WS_VERSION_CUR_STABLE (G_ENCODE_VERSION (WS_MAJOR_VERSION, WS_MINOR_VERSION))

/**
 * WS_VERSION_MIN_REQUIRED:
 *
 * The oldest wsrt release series a program supports. Define it, to one of
 * the `WS_VERSION_X_Y` values, before including `wsrt.h`; the default is
 * the series of the headers.
 *
 * Symbols deprecated in later series than this do not warn, so a program
 * that still supports an older wsrt can keep using them.
 */
#ifndef WS_VERSION_MIN_REQUIRED
# define WS_VERSION_MIN_REQUIRED (WS_VERSION_CUR_STABLE)
#endif

/**
 * WS_VERSION_MAX_ALLOWED:
 *
 * The newest wsrt release series whose API a program may use. Define it,
 * to one of the `WS_VERSION_X_Y` values, before including `wsrt.h`; the
 * default is the series of the headers.
 *
 * Using a symbol added after this series warns, as a deprecated one does.
 */
#ifndef WS_VERSION_MAX_ALLOWED
# define WS_VERSION_MAX_ALLOWED (WS_VERSION_CUR_STABLE)
#endif

#if WS_VERSION_MIN_REQUIRED > WS_VERSION_CUR_STABLE
# error "WS_VERSION_MIN_REQUIRED must be <= WS_VERSION_CUR_STABLE"
#endif
#if WS_VERSION_MAX_ALLOWED < WS_VERSION_MIN_REQUIRED
# error "WS_VERSION_MAX_ALLOWED must be >= WS_VERSION_MIN_REQUIRED"
#endif
#if WS_VERSION_MIN_REQUIRED < WS_VERSION_0_1
# error "WS_VERSION_MIN_REQUIRED must be >= WS_VERSION_0_1"
#endif

/**
 * WS_DEPRECATED_IN_0_1:
 *
 * Marks a declaration as deprecated in wsrt 0.1: it warns if
 * %WS_VERSION_MIN_REQUIRED is 0.1 or newer.
 */

/**
 * WS_DEPRECATED_IN_0_1_FOR:
 * @f: the name of the replacement
 *
 * Marks a declaration as deprecated in wsrt 0.1 in favour of @f: it warns
 * if %WS_VERSION_MIN_REQUIRED is 0.1 or newer.
 */
#if WS_VERSION_MIN_REQUIRED >= WS_VERSION_0_1
# define WS_DEPRECATED_IN_0_1 WS_DEPRECATED
# define WS_DEPRECATED_IN_0_1_FOR(f) WS_DEPRECATED_FOR (f)
#else
# define WS_DEPRECATED_IN_0_1 _WS_EXTERN
# define WS_DEPRECATED_IN_0_1_FOR(f) _WS_EXTERN
#endif

/**
 * WS_AVAILABLE_IN_0_1:
 *
 * Marks a declaration as added in wsrt 0.1: it warns if
 * %WS_VERSION_MAX_ALLOWED is older than 0.1.
 */
#if WS_VERSION_MAX_ALLOWED < WS_VERSION_0_1
# define WS_AVAILABLE_IN_0_1 WS_UNAVAILABLE (0, 1)
#else
# define WS_AVAILABLE_IN_0_1 _WS_EXTERN
#endif
