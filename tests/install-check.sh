#!/usr/bin/env bash
# Installs a build into a scratch DESTDIR and compiles a program against
# wsrt-1.pc (through pkg-config, as a user would) that spawns, wakes,
# awaits, cancels and joins tasks with the DESIGN section 4 signatures,
# then runs it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-_build-release}
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT

meson install -C "$build" --no-rebuild --quiet --destdir "$dest" >/dev/null

pc=$(find "$dest" -name 'wsrt-1.pc' | head -n1)
pcdir=$(dirname "$pc")
libdir=$(dirname "$pcdir")
# Point the installed .pc at the scratch tree, as if the prefix were there.
prefix=$(sed -n 's/^prefix=//p' "$pc")
sed -i "s|^prefix=.*|prefix=$dest$prefix|" "$pc"
export PKG_CONFIG_PATH="$pcdir"

test -f "$(find "$dest" -path '*/include/wsrt-1/wsrt.h' | head -n1)"
cc -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Werror -o "$dest/consumer" "$here/install-consumer.c" \
  $(pkg-config --cflags --libs wsrt-1)
LD_LIBRARY_PATH="$libdir" timeout 60 "$dest/consumer"
