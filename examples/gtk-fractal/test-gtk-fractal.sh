#!/bin/sh
# test-gtk-fractal.sh: the gtk-fractal example's test.
#
#   test-gtk-fractal.sh XVFB-RUN GTK-FRACTAL CHECK-SNAPSHOT OUTDIR
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
"$xvfb_run" -a -s "-screen 0 1024x768x24" \
  "$fractal" --workers 2 --snapshot "$png" --zooms 3 --timeout 60
# 640×480, at least 200 colours, none on more than 60% of the pixels, and
# no placeholder pixel (#1a1a1a) where a tile should be.
"$check" "$png" 640 480 200 60 1a1a1a
