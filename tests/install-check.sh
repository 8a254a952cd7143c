#!/usr/bin/env bash
# Installs a build into a scratch DESTDIR and compiles a program against
# wsrt-1.pc (through pkg-config, as a user would) that spawns, wakes,
# awaits, cancels and joins tasks with the signatures of the public API,
# then runs it.
#
#   tests/install-check.sh [BUILD-DIR]   # default _build-release
#   tests/install-check.sh --system      # what is installed in /usr
#
# --system checks the system's install (the Debian packages, installed by
# tools/check-debs) instead: no DESTDIR, and every program is built and run
# with no search path set (PKG_CONFIG_PATH, LD_LIBRARY_PATH,
# GI_TYPELIB_PATH, valac's --vapidir), as a user of the packages would.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
system=0
if [ "${1:-}" = --system ]; then
  system=1
  shift
fi
build=${1:-_build-release}
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT

if [ $system = 1 ]; then
  unset PKG_CONFIG_PATH LD_LIBRARY_PATH GI_TYPELIB_PATH
  root=/usr
  pc=$(pkg-config --variable=pcfiledir wsrt-1)/wsrt-1.pc
  test -f "$pc"
  libdir=$(pkg-config --variable=libdir wsrt-1)
  test -f "$(pkg-config --variable=includedir wsrt-1)/wsrt-1/wsrt.h"
else
  meson install -C "$build" --no-rebuild --quiet --destdir "$dest" >/dev/null

  pc=$(find "$dest" -name 'wsrt-1.pc' | head -n1)
  pcdir=$(dirname "$pc")
  libdir=$(dirname "$pcdir")
  # Point the installed .pc at the scratch tree, as if the prefix were there.
  prefix=$(sed -n 's/^prefix=//p' "$pc")
  sed -i "s|^prefix=.*|prefix=$dest$prefix|" "$pc"
  export PKG_CONFIG_PATH="$pcdir"
  root=$dest

  test -f "$(find "$dest" -path '*/include/wsrt-1/wsrt.h' | head -n1)"
fi
# The library's directory for the dynamic loader: none for the system's.
ld_path=$libdir
[ $system = 0 ] || ld_path=
cc -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Werror -o "$dest/consumer" "$here/install-consumer.c" \
  $(pkg-config --cflags --libs wsrt-1)
env ${ld_path:+"LD_LIBRARY_PATH=$ld_path"} timeout 60 "$dest/consumer"

# Bindings, from the installed files only, found through the pkg-config
# variables of a GNOME library (girdir, typelibdir, vapidir; README.md,
# "Installing"): the typelib through GI_TYPELIB_PATH and the helper module
# through its pkg-config variable (GJS), the VAPI through valac's --pkg
# (Vala).
girdir=$(pkg-config --variable=girdir wsrt-1)
typelibdir=$(pkg-config --variable=typelibdir wsrt-1)
vapidir=$(pkg-config --variable=vapidir wsrt-1)
for var in "$girdir" "$typelibdir" "$vapidir"; do
  case $var in
    "$root"/*) ;;
    *) echo "install-check: pkg-config variable '$var' is not under the installed prefix" >&2
       exit 1 ;;
  esac
done
test -f "$girdir/Ws-1.gir"
typelib=$typelibdir/Ws-1.typelib
test -f "$typelib"
vapi=$vapidir/wsrt-1.vapi
test -f "$vapi"
module=$(pkg-config --variable=gjs_module wsrt-1)
test -f "$module"

cat > "$dest/consumer.js" <<JS
import Ws from 'gi://Ws?version=1';
import GLib from 'gi://GLib';
const Wsrt = await import('file://$module');
let polls = 0;
const rt = Ws.Runtime.new(1);
const task = Wsrt.spawnLocal(rt, cx => (++polls < 3 ? cx.yield() : (cx.return_value(42), Ws.Poll.READY)));
GLib.MainContext.default().iteration(false);
while (!task.is_finished())
    GLib.MainContext.default().iteration(true);
print(\`gjs consumer: \${task.get_value()} after \${polls} polls\`);
rt.shutdown(-1);
JS
# The typelib's directory for GJS, and valac's --vapidir: none for the
# system's.
typelib_path=$(dirname "$typelib")
vapidir_args=(--vapidir "$(dirname "$vapi")")
if [ $system = 1 ]; then
  typelib_path=
  vapidir_args=()
fi
env ${typelib_path:+"GI_TYPELIB_PATH=$typelib_path"} ${ld_path:+"LD_LIBRARY_PATH=$ld_path"} \
  timeout 60 gjs -m "$dest/consumer.js"

cat > "$dest/consumer.vala" <<'VALA'
int main () {
    var rt = new Ws.Runtime (2);
    var task = rt.spawn ((cx) => {
        cx.return_value ("from a worker");
        return Ws.Poll.READY;
    });
    try {
        task.wait (null);
    } catch (Error e) {
        printerr ("%s\n", e.message);
        return 1;
    }
    print ("vala consumer: %s\n", task.get_value ().get_string ());
    return rt.shutdown (-1) ? 0 : 1;
}
VALA
valac "${vapidir_args[@]}" --pkg wsrt-1 -X -w -o "$dest/consumer-vala" "$dest/consumer.vala"
env ${ld_path:+"LD_LIBRARY_PATH=$ld_path"} timeout 60 "$dest/consumer-vala"

# A native library of one's own for GJS, built outside wsrt's tree against
# the installed prefix (examples/gjs-library): meson finds Ws-1.gir
# through wsrt-1.pc's girdir, as GNOME libraries are found.
example=$dest/gjs-library
cp -r "$here/../examples/gjs-library" "$example"
meson setup "$example/_build" "$example" >/dev/null
ninja -C "$example/_build" >/dev/null
printf 'hello\n' > "$dest/hello.txt"
out=$(cd "$example" && GI_TYPELIB_PATH="$example/_build${typelib_path:+:$typelib_path}" \
      LD_LIBRARY_PATH="$example/_build${ld_path:+:$ld_path}" timeout 60 gjs -m digest.js "$dest/hello.txt")
printf '%s\n' "$out"
expected="$(sha256sum "$dest/hello.txt" | cut -d' ' -f1)  $dest/hello.txt"
printf '%s\n' "$out" | grep -qxF "$expected"
printf '%s\n' "$out" | grep -qx 'cancelled: /dev/zero'
