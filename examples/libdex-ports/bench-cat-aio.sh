#!/bin/sh
# bench-cat-aio.sh: the cat-aio port against libdex's own cat-aio, on one
# file, interleaved.
#
#   examples/libdex-ports/bench-cat-aio.sh PORTS-DIR LIBDEX-DIR RUNS WORKDIR [MIB]
#
# PORTS-DIR is the build directory of examples/libdex-ports; LIBDEX-DIR is
# what build-libdex-examples.sh made (its cat-aio: libdex 1.1.alpha built
# as the peers build it, without liburing, so its AIO runs on its thread
# pool). Each of RUNS rounds copies a file of MIB MiB (1024 by default; in
# the page cache) to /dev/null with libdex's cat-aio, the port on io_uring
# and the port on the offload's threads (WS_IO_URING=0), in turn. Prints
# the median wall and CPU time of each (min..max), and the most threads
# each had at once, sampled every 2 ms from /proc (the port's own count,
# --count-threads, splits the offload's threads from io_uring's kernel
# workers). Each copy is checked with cmp first.
set -eu

ports=$1
libdex=$2
runs=$3
mib=${5:-1024}
work=$(mkdir -p "$4" && cd "$4" && pwd)/bench-cat-aio.$$
mkdir "$work"
trap 'rm -rf "$work"' EXIT INT TERM

now () { date +%s%N; }

# time_run NAME CMD...: the wall ms, CPU ms and most threads of CMD
time_run ()
{
  name=$1
  shift
  t0=$(now)
  /usr/bin/time -f '%U %S' -o "$work/time.out" "$@" &
  pid=$!
  most=0
  # /usr/bin/time's child is the program.
  while kill -0 $pid 2>/dev/null; do
    child=$(cat /proc/$pid/task/$pid/children 2>/dev/null || true)
    for c in $child; do
      n=$(ls /proc/$c/task 2>/dev/null | wc -l)
      [ "$n" -le "$most" ] || most=$n
    done
    sleep 0.002
  done
  wait $pid
  t1=$(now)
  echo $(( (t1 - t0) / 1000000 )) >> "$work/$name.times"
  awk '{ printf "%d\n", ($1 + $2) * 1000 }' "$work/time.out" >> "$work/$name.cpu"
  echo "$most" >> "$work/$name.threads"
}

echo "input: a $mib MiB file"
head -c $((mib * 1048576)) /dev/urandom > "$work/in.bin"
cat "$work/in.bin" > /dev/null

"$libdex/cat-aio" "$work/in.bin" | cmp -s - "$work/in.bin" || { echo "libdex cat-aio: wrong output"; exit 1; }
"$ports/cat-aio" "$work/in.bin" | cmp -s - "$work/in.bin" || { echo "port cat-aio: wrong output"; exit 1; }
WS_IO_URING=0 "$ports/cat-aio" "$work/in.bin" | cmp -s - "$work/in.bin" || { echo "port cat-aio (threads): wrong output"; exit 1; }
"$ports/cat-aio" --count-threads "$work/in.bin" 2>&1 > /dev/null | sed 's/^/port, io_uring: /'
WS_IO_URING=0 "$ports/cat-aio" --count-threads "$work/in.bin" 2>&1 > /dev/null | sed 's/^/port, threads:  /'

r=0
while [ $r -lt "$runs" ]; do
  time_run libdex sh -c 'exec "$1" "$2" > /dev/null' sh "$libdex/cat-aio" "$work/in.bin"
  time_run uring sh -c 'exec "$1" "$2" > /dev/null' sh "$ports/cat-aio" "$work/in.bin"
  time_run threads sh -c 'WS_IO_URING=0 exec "$1" "$2" > /dev/null' sh "$ports/cat-aio" "$work/in.bin"
  r=$((r + 1))
done

median ()
{
  sort -n "$work/$1" | awk '{ v[NR] = $1 } END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%d (%d..%d)", m, v[1], v[NR] }'
}

echo "$runs runs each, interleaved; median (min..max)"
printf '%-28s %-20s %-20s %-14s\n' "" "wall ms" "CPU ms" "threads"
for t in "libdex cat-aio:libdex" "port, io_uring:uring" "port, threads (WS_IO_URING=0):threads"; do
  n=${t##*:}
  printf '%-28s %-20s %-20s %-14s\n' "${t%:*}" "$(median "$n.times")" "$(median "$n.cpu")" \
    "$(median "$n.threads")"
done
