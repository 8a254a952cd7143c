#!/bin/sh
# build-libdex-examples.sh: builds libdex 1.1.alpha's own cp, cat and
# tcp-echo, to compare the ports with (bench-libdex-ports.sh).
#
#   examples/libdex-ports/build-libdex-examples.sh PEERS-LIBDEX-BENCH OUTDIR
#
# PEERS-LIBDEX-BENCH is the peers' libdex-bench directory (its tarball and
# patches; see its README.md): libdex is built from them offline, as the
# peers build it (release, no introspection, docs, sysprof or liburing),
# with its examples. OUTDIR then holds cp, cat, cat-aio and tcp-echo-loopback:
# libdex's tcp-echo.c changed in two lines only, so that it listens on
# 127.0.0.1 (not on every interface) and on the port given as its first
# argument (not 8080 always), as the port does.
set -eu

peers=$1
out=$(mkdir -p "$2" && cd "$2" && pwd)
src=$out/libdex-1.1.alpha

rm -rf "$src" "$out/build"
tar -C "$out" -xzf "$peers/libdex-1.1.alpha.tar.gz"
for p in "$peers"/patches/*.patch; do
  patch -s -p1 -d "$src" < "$p"
done
meson setup --buildtype=release --wrap-mode=nodownload -Dintrospection=disabled \
  -Ddocs=false -Dvapi=false -Dpygobject=false -Dtests=false -Dexamples=true \
  -Dsysprof=false -Dliburing=disabled "$out/build" "$src" > "$out/meson.log"

sed -e 's|guint port = 8080;|guint port = argc > 1 ? atoi (argv[1]) : 8080;|' \
    -e 's|g_socket_listener_add_inet_port (socket_listener, port, NULL, &error)|g_socket_listener_add_address (socket_listener, g_inet_socket_address_new_from_string ("127.0.0.1", port), G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL, NULL, \&error)|' \
    -e 's|Listening on 0.0.0.0:%u|Listening on 127.0.0.1:%u|' \
    "$src/examples/tcp-echo.c" > "$src/examples/tcp-echo-loopback.c"
grep -q 'G_SOCKET_PROTOCOL_TCP' "$src/examples/tcp-echo-loopback.c"
sed -i "s|'tcp-echo': {},|'tcp-echo': {},\n  'tcp-echo-loopback': {},|" "$src/examples/meson.build"
meson setup --reconfigure "$out/build" "$src" > "$out/meson.log"

nice ninja -C "$out/build" examples/cp examples/cat examples/cat-aio examples/tcp-echo-loopback > "$out/ninja.log"
for x in cp cat cat-aio tcp-echo-loopback; do
  cp "$out/build/examples/$x" "$out/$x"
done
echo "$out: cp cat cat-aio tcp-echo-loopback"
