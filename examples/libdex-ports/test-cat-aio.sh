#!/bin/sh
# test-cat-aio.sh: the cat-aio port copies a 3 MiB file byte for byte, on
# both backends of the syscall offload (io_uring where the kernel allows
# it, and WS_IO_URING=0: the offload's threads): to standard output, with
# -o, from standard input, with small buffers; a missing file fails with
# a message. Its thread count (--count-threads) stays within the
# offload's bound: no more threads than calls in flight at once, 2 here
# (a read and a write), and one more that /proc may still list for a
# moment after it left.
#
#   test-cat-aio.sh CAT-AIO WORKDIR
set -eu

cat_aio=$1
work=$(mkdir -p "$2" && cd "$2" && pwd)/test-cat-aio.$$
mkdir "$work"
trap 'rm -rf "$work"' EXIT INT TERM
status=0
fail () { echo "FAIL: $*"; status=1; }

head -c 3145728 /dev/urandom > "$work/big"
for uring in 1 0; do
  export WS_IO_URING=$uring
  "$cat_aio" "$work/big" > "$work/out" || fail "WS_IO_URING=$uring cat-aio FILE exited with an error"
  cmp -s "$work/big" "$work/out" || fail "WS_IO_URING=$uring cat-aio FILE: the output differs"
  "$cat_aio" -o "$work/out-o" "$work/big" || fail "WS_IO_URING=$uring cat-aio -o exited with an error"
  cmp -s "$work/big" "$work/out-o" || fail "WS_IO_URING=$uring cat-aio -o: the output differs"
  "$cat_aio" < "$work/big" > "$work/out-stdin" || fail "WS_IO_URING=$uring cat-aio < FILE exited with an error"
  cmp -s "$work/big" "$work/out-stdin" || fail "WS_IO_URING=$uring cat-aio < FILE: the output differs"
  "$cat_aio" -b 1000 -q 2 --count-threads "$work/big" > "$work/out-small" 2> "$work/threads" ||
    fail "WS_IO_URING=$uring cat-aio -b 1000 -q 2 exited with an error"
  cmp -s "$work/big" "$work/out-small" || fail "WS_IO_URING=$uring cat-aio -b 1000 -q 2: the output differs"
  offload=$(sed -n 's/.*offload: \([0-9]*\),.*/\1/p' "$work/threads")
  [ -n "$offload" ] && [ "$offload" -le 3 ] ||
    fail "WS_IO_URING=$uring: the offload held more than 3 threads: $(cat "$work/threads")"
  if out=$("$cat_aio" "$work/missing" 2>&1 >/dev/null); then
    fail "cat-aio of a missing file succeeded"
  elif ! printf '%s\n' "$out" | grep -q "^cat-aio: "; then
    fail "cat-aio of a missing file: no message ($out)"
  fi
done
[ $status -ne 0 ] || echo "cat-aio: 8 copies identical, offload threads within the bound"
exit $status
