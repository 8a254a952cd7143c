#!/bin/sh
# test-gtk-fractal.sh: the gtk-fractal example's test.
#
#   test-gtk-fractal.sh XVFB-RUN GTK-FRACTAL CHECK-SNAPSHOT OUTDIR [RENDERER]
#
# Runs gtk-fractal under Xvfb: it zooms three times while rendering
# (cancelling the stale tiles), renders the last view completely and saves
# a snapshot of it; then check-snapshot looks at the pixels. gtk-fractal
# gives up after 60 s on its own; meson's timeout is the second watchdog.
set -eu

xvfb_run=$1
fractal=$2
check=$3
png=$4/gtk-fractal-snapshot.png

rm -f "$png"

# RENDERER "cairo": draw without GL (the sanitizer builds).
if [ "${5:-default}" = cairo ]; then
  GSK_RENDERER=cairo GDK_DEBUG=gl-disable
  export GSK_RENDERER GDK_DEBUG
fi

# Sanitizer builds: add the suppressions for GTK's font caches to those
# in use (LSAN_OPTIONS takes one file).
if [ -n "${LSAN_OPTIONS:-}" ]; then
  supp=$4/lsan.supp
  base=$(printf '%s' "$LSAN_OPTIONS" | tr ':' '\n' | sed -n 's/^suppressions=//p')
  others=$(printf '%s' "$LSAN_OPTIONS" | tr ':' '\n' | grep -v '^suppressions=' | tr '\n' ':')
  { if [ -n "$base" ]; then cat "$base"; fi
    cat "$(dirname "$0")/lsan-gtk.supp"; } > "$supp"
  LSAN_OPTIONS="${others}suppressions=$supp"
  export LSAN_OPTIONS
fi

"$xvfb_run" -a -s "-screen 0 1024x768x24" \
  "$fractal" --workers 2 --snapshot "$png" --zooms 3 --timeout 60
# 640×480, at least 200 colours, none on more than 60% of the pixels, and
# no placeholder pixel (#1a1a1a) where a tile should be.
"$check" "$png" 640 480 200 60 1a1a1a
