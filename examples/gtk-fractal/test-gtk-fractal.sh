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
outdir=$4
png=$outdir/gtk-fractal-snapshot.png
srcdir=$(dirname "$0")

rm -f "$png"

# RENDERER "cairo": draw without GL (the sanitizer builds).
if [ "${5:-default}" = cairo ]; then
  GSK_RENDERER=cairo GDK_DEBUG=gl-disable
  export GSK_RENDERER GDK_DEBUG
fi

# Sanitizer builds: add the suppressions for GTK to those in use.
# shellcheck source=../gtk-sanitizer-env.sh
. "$srcdir/../gtk-sanitizer-env.sh"
add_suppressions LSAN_OPTIONS "$outdir/lsan-gtk.supp" "$srcdir/lsan-gtk.supp"
add_suppressions TSAN_OPTIONS "$outdir/tsan-gtk.supp" "$srcdir/tsan-gtk.supp"

"$xvfb_run" -a -s "-screen 0 1024x768x24" \
  "$fractal" --workers 2 --snapshot "$png" --zooms 3 --timeout 60
# 640×480, at least 200 colours, none on more than 60% of the pixels, and
# no placeholder pixel (#1a1a1a) where a tile should be.
"$check" "$png" 640 480 200 60 1a1a1a
