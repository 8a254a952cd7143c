#!/usr/bin/env bash
# The install check: runs README.md's custom-prefix block ("Installing")
# as written, with a scratch prefix and build directory in place of
# $HOME/opt/wsrt and _build-prefix, and then, with nothing but the
# variables that block exports, compiles a program against wsrt-1.pc
# (through pkg-config, as a user would) that spawns, wakes, awaits,
# cancels and joins tasks with the signatures of the public API and runs
# it; then README.md's GJS block as written, the GJS and Vala consumers
# and examples/gjs-library.
#
#   tests/install-check.sh            # README.md's block, scratch prefix
#   tests/install-check.sh --system   # what is installed in /usr
#
# --system checks the system's install (the Debian packages, installed by
# tools/check-debs) instead: no block, and every program is built and run
# with none of the block's variables set, as a user of the packages would.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT

if [ "${1:-}" = --system ]; then
  unset PKG_CONFIG_PATH LD_LIBRARY_PATH GI_TYPELIB_PATH XDG_DATA_DIRS
  prefix=/usr
  test -f "$(pkg-config --variable=includedir wsrt-1)/wsrt-1/wsrt.h"
else
  block=$(awk '/^<!-- tests\/install-check.sh runs this block/ { on = 1; next }
               on && /^```sh$/ { inside = 1; next }
               inside && /^```$/ { exit }
               inside { print }' "$root/README.md")
  # shellcheck disable=SC2016
  case $block in
    *'prefix=$HOME/opt/wsrt'*_build-prefix*) ;;
    *) echo "install-check: README.md's custom-prefix block not found" >&2
       exit 1 ;;
  esac
  block=${block//\$HOME\/opt\/wsrt/$dest/prefix}
  block=${block//_build-prefix/$dest/build}
  printf 'install-check: running README.md'"'"'s block:\n%s\n' "$block"
  # A shell of its own with -e: on the left of ||, this one's set -e is
  # off, and a failing step of the block must fail the check.
  (cd "$root" && bash -e -c "$block") > "$dest/install.log" 2>&1 || {
    cat "$dest/install.log" >&2
    exit 1
  }
  eval "$(printf '%s\n' "$block" | grep -E '^(prefix=|export )')"

  test -f "$(find "$dest/prefix" -path '*/include/wsrt-1/wsrt.h' | head -n1)"
fi
# shellcheck disable=SC2046
cc -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Werror -o "$dest/consumer" "$here/install-consumer.c" \
  $(pkg-config --cflags --libs wsrt-1)
timeout 60 "$dest/consumer"

# Bindings, from the installed files only, found through the pkg-config
# variables of a GNOME library (girdir, typelibdir, vapidir; README.md,
# "Installing"): the typelib through the GI_TYPELIB_PATH of the block and
# the helper module through its pkg-config variable (GJS), the VAPI
# through valac's --pkg and the block's XDG_DATA_DIRS (Vala).
girdir=$(pkg-config --variable=girdir wsrt-1)
typelibdir=$(pkg-config --variable=typelibdir wsrt-1)
vapidir=$(pkg-config --variable=vapidir wsrt-1)
for var in "$girdir" "$typelibdir" "$vapidir"; do
  case $var in
    "$prefix"/*) ;;
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

# README.md's GJS block, as written: the helper module from the
# library's resource, with no path of this prefix in it.
gjs_block=$(awk '/^<!-- tests\/install-check.sh runs this GJS block/ { on = 1; next }
                 on && /^```js$/ { inside = 1; next }
                 inside && /^```$/ { exit }
                 inside { print }' "$root/README.md")
case $gjs_block in
  *"resource:///org/gnome/wsrt/js/wsrt.js"*) ;;
  *) echo "install-check: README.md's GJS block not found" >&2
     exit 1 ;;
esac
printf '%s\n' "$gjs_block" > "$dest/readme.js"
out=$(cd "$dest" && timeout 60 gjs -m readme.js)
if [ "$out" != 42 ]; then
  echo "install-check: README.md's GJS block printed '$out', not 42" >&2
  exit 1
fi
echo "gjs: README.md's block printed $out"

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
valac --pkg wsrt-1 -X -w -o "$dest/consumer-vala" "$dest/consumer.vala"
timeout 60 "$dest/consumer-vala"

# A native library of one's own for GJS, built outside wsrt's tree against
# the installed prefix (examples/gjs-library): meson finds Ws-1.gir
# through wsrt-1.pc's girdir, as GNOME libraries are found.
example=$dest/gjs-library
cp -r "$here/../examples/gjs-library" "$example"
meson setup "$example/_build" "$example" >/dev/null
ninja -C "$example/_build" >/dev/null
printf 'hello\n' > "$dest/hello.txt"
out=$(cd "$example" && GI_TYPELIB_PATH="$example/_build${GI_TYPELIB_PATH:+:$GI_TYPELIB_PATH}" \
      LD_LIBRARY_PATH="$example/_build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 60 gjs -m digest.js "$dest/hello.txt")
printf '%s\n' "$out"
expected="$(sha256sum "$dest/hello.txt" | cut -d' ' -f1)  $dest/hello.txt"
printf '%s\n' "$out" | grep -qxF "$expected"
printf '%s\n' "$out" | grep -qx 'cancelled: /dev/zero'
