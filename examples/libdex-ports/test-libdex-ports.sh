#!/bin/sh
# test-libdex-ports.sh: the test of libdex's examples ported to wsrt.
#
#   test-libdex-ports.sh CP CAT TCP-ECHO TCP-ECHO-CLIENT OUTDIR
#
# On a scratch tree under OUTDIR (about 300 files: 250 in one directory,
# more than cp's batch of 100, nested directories, an empty file, a name
# with a space, a 3 MiB file, symbolic links):
#  1. cp -r copies it: diff -r (links compared as links) and the listings
#     of types, names, sizes and link targets agree; cp of one file gives
#     the same bytes; cp of a directory without -r fails with a message,
#     and so does cp of a missing file;
#  2. cat copies the 3 MiB file to standard output, with -o, from standard
#     input, and with 1000-byte buffers and a queue of 2 (the reader waits
#     for the writer): each copy is byte-identical; cat of a missing file
#     fails with a message;
#  3. tcp-echo listens on 127.0.0.1 on a free port (PORT 0), and the client
#     sends 2 MiB on each of 4 connections at once and checks every byte
#     echoed; then the server is stopped.
# Every program runs under timeout(1) (30 s); meson's timeout is the
# second watchdog. Nothing leaves 127.0.0.1.
set -eu

cp_port=$1
cat_port=$2
echo_port=$3
client=$4
outdir=$5

work=$(mktemp -d "$outdir/libdex-ports.XXXXXX")
server_pid=
cleanup ()
{
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

status=0
fail ()
{
  echo "FAIL: $*"
  status=1
}

run ()
{
  timeout 30 "$@"
}

# The tree
src=$work/src
mkdir -p "$src/many" "$src/nested/a/b/c" "$src/empty-dir"
i=0
while [ $i -lt 250 ]; do
  printf "file %d %0$(( i * 13 % 3000 + 1 ))d\n" $i 0 > "$src/many/f$i"
  i=$((i + 1))
done
echo deep > "$src/nested/a/b/c/deep"
: > "$src/empty"
echo spaced > "$src/with space.txt"
head -c 3145728 /dev/urandom > "$src/nested/big.bin"
ln -s many/f0 "$src/link"
ln -s /nonexistent/target "$src/dangling"

# Types, names, link targets, and sizes (not of directories)
listing ()
{
  (cd "$1" && { find . -type d -printf '%y %P\n'; find . ! -type d -printf '%y %P %s %l\n'; } |
     LC_ALL=C sort)
}

# 1. cp
if ! run "$cp_port" -r "$src" "$work/copy"; then
  fail "cp -r exited with an error"
elif ! diff -r --no-dereference "$src" "$work/copy" >/dev/null; then
  fail "cp -r: diff -r finds differences"
elif [ "$(listing "$src")" != "$(listing "$work/copy")" ]; then
  fail "cp -r: the listings differ"
else
  echo "cp -r: $(find "$work/copy" | wc -l) entries copied identically"
fi
run "$cp_port" "$src/nested/big.bin" "$work/one.bin" || fail "cp of a file exited with an error"
cmp -s "$src/nested/big.bin" "$work/one.bin" || fail "cp of a file: the copy differs"
if out=$(run "$cp_port" "$src/nested" "$work/no-r" 2>&1); then
  fail "cp of a directory without -r succeeded"
elif ! printf '%s\n' "$out" | grep -q "is a directory and -r is not set"; then
  fail "cp of a directory without -r: no message ($out)"
fi
if out=$(run "$cp_port" "$work/missing" "$work/never" 2>&1); then
  fail "cp of a missing file succeeded"
elif ! printf '%s\n' "$out" | grep -q "^cp: "; then
  fail "cp of a missing file: no message ($out)"
fi

# 2. cat
big=$src/nested/big.bin
run "$cat_port" "$big" > "$work/cat.out" || fail "cat FILE exited with an error"
cmp -s "$big" "$work/cat.out" || fail "cat FILE: the output differs"
run "$cat_port" -o "$work/cat-o.out" "$big" || fail "cat -o exited with an error"
cmp -s "$big" "$work/cat-o.out" || fail "cat -o: the output differs"
run "$cat_port" < "$big" > "$work/cat-stdin.out" || fail "cat < FILE exited with an error"
cmp -s "$big" "$work/cat-stdin.out" || fail "cat < FILE: the output differs"
run "$cat_port" -b 1000 -q 2 "$big" > "$work/cat-small.out" || fail "cat -b 1000 -q 2 exited with an error"
cmp -s "$big" "$work/cat-small.out" || fail "cat -b 1000 -q 2: the output differs"
run "$cat_port" "$src/empty" > "$work/cat-empty.out" || fail "cat of an empty file exited with an error"
[ ! -s "$work/cat-empty.out" ] || fail "cat of an empty file wrote something"
if out=$(run "$cat_port" "$work/missing" 2>&1 >/dev/null); then
  fail "cat of a missing file succeeded"
elif ! printf '%s\n' "$out" | grep -q "^cat: "; then
  fail "cat of a missing file: no message ($out)"
fi
[ $status -ne 0 ] || echo "cat: 5 copies identical"

# 3. tcp-echo: the server prints its port first; wait up to 10 s for it.
# The file exists before the server starts: the background job opens its
# redirection only after the fork, so the first look may come first.
: > "$work/server.out"
timeout 60 "$echo_port" 0 >> "$work/server.out" 2>&1 &
server_pid=$!
port=
i=0
while [ -z "$port" ] && [ $i -lt 100 ] && kill -0 "$server_pid" 2>/dev/null; do
  port=$(sed -n 's/^Listening on 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$work/server.out") || port=
  [ -n "$port" ] || sleep 0.1
  i=$((i + 1))
done
if [ -z "$port" ]; then
  fail "tcp-echo did not print its port: $(cat "$work/server.out")"
elif ! run "$client" "$port" 2048 4; then
  fail "tcp-echo: the client did not get its bytes back"
else
  echo "tcp-echo: 4 connections of 2 MiB echoed on 127.0.0.1:$port"
fi
if ! kill -0 "$server_pid" 2>/dev/null; then
  fail "tcp-echo exited: $(cat "$work/server.out")"
fi
kill "$server_pid" 2>/dev/null || true
wait "$server_pid" 2>/dev/null || true
server_pid=

exit $status
