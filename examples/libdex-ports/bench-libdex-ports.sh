#!/bin/sh
# bench-libdex-ports.sh: the ports against libdex's own cp, cat and
# tcp-echo, side by side, interleaved.
#
#   examples/libdex-ports/bench-libdex-ports.sh PORTS-DIR LIBDEX-DIR RUNS WORKDIR
#
# PORTS-DIR is the build directory of examples/libdex-ports; LIBDEX-DIR is
# what build-libdex-examples.sh made (cp, cat, tcp-echo-loopback). In each
# of RUNS rounds, each program runs once, libdex's and the port in turn:
#  - cat of a 1 GiB file (in the page cache) to /dev/null;
#  - cp -r of /usr/share/doc into WORKDIR (removed after each run; the
#    first copy of each is checked with diff -r);
#  - tcp-echo: tcp-echo-client sends 64 MiB on each of 4 connections to a
#    server on 127.0.0.1 and checks the echo.
# Prints the median wall time and CPU time of each, with their min and
# max (the CPU time is less disturbed by other load on the machine). WORKDIR needs
# about 1.2 GiB; it is removed at the end.
set -eu

ports=$1
libdex=$2
runs=$3
work=$(mkdir -p "$4" && cd "$4" && pwd)/bench-libdex-ports.$$
mkdir "$work"
server_pid=
trap 'if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi; rm -rf "$work"' EXIT INT TERM

now () { date +%s%N; }

# time_run NAME CMD...: appends the wall ms of CMD to $work/NAME.times and
# its CPU ms (user + system, with its children) to $work/NAME.cpu
time_run ()
{
  name=$1
  shift
  t0=$(now)
  /usr/bin/time -f '%U %S' -o "$work/time.out" "$@"
  t1=$(now)
  echo $(( (t1 - t0) / 1000000 )) >> "$work/$name.times"
  awk '{ printf "%d\n", ($1 + $2) * 1000 }' "$work/time.out" >> "$work/$name.cpu"
}

# server_cpu NAME: appends the server's CPU ms so far to $work/NAME.cpu
server_cpu ()
{
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%d\n", ($12 + $13) * 1000 / hz }' \
    "/proc/$server_pid/stat" >> "$work/$1.cpu"
}

free_port ()
{
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_server BINARY: starts it on a free port, sets $port and $server_pid
start_server ()
{
  port=$(free_port)
  : > "$work/server.out"
  "$1" "$port" >> "$work/server.out" 2>&1 &
  server_pid=$!
  i=0
  until grep -q "^Listening on 127.0.0.1:$port" "$work/server.out"; do
    i=$((i + 1))
    [ $i -lt 100 ] || { echo "$1 did not start"; exit 1; }
    sleep 0.1
  done
}

stop_server ()
{
  kill "$server_pid"
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}

echo "input: a 1 GiB file"
head -c 1073741824 /dev/urandom > "$work/1g.bin"
cat "$work/1g.bin" > /dev/null

# The results first: the same bytes, the same tree.
"$libdex/cat" "$work/1g.bin" | cmp -s - "$work/1g.bin" || { echo "libdex cat: wrong output"; exit 1; }
"$ports/cat" "$work/1g.bin" | cmp -s - "$work/1g.bin" || { echo "port cat: wrong output"; exit 1; }
for who in libdex port; do
  if [ $who = libdex ]; then dir=$libdex; else dir=$ports; fi
  "$dir/cp" -r /usr/share/doc "$work/doc-$who"
  diff -r --no-dereference /usr/share/doc "$work/doc-$who" > /dev/null ||
    { echo "$who cp: the copy differs"; exit 1; }
  rm -rf "$work/doc-$who"
done

r=0
while [ $r -lt "$runs" ]; do
  for who in libdex port; do
    if [ $who = libdex ]; then dir=$libdex; echo_bin=$libdex/tcp-echo-loopback;
    else dir=$ports; echo_bin=$ports/tcp-echo; fi
    time_run "cat-$who" sh -c '"$1" "$2" > /dev/null' sh "$dir/cat" "$work/1g.bin"
    time_run "cp-$who" "$dir/cp" -r /usr/share/doc "$work/doc"
    rm -rf "$work/doc"
    start_server "$echo_bin"
    t0=$(now)
    "$ports/tcp-echo-client" "$port" 65536 4
    t1=$(now)
    echo $(( (t1 - t0) / 1000000 )) >> "$work/tcp-echo-$who.times"
    server_cpu "tcp-echo-$who"
    stop_server
  done
  r=$((r + 1))
done

# median FILE: "median (min..max)"
median ()
{
  sort -n "$work/$1" | awk '{ v[NR] = $1 } END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%d ms (%d..%d)", m, v[1], v[NR] }'
}

echo "$runs runs each, interleaved; median (min..max) of the wall time, then of the CPU time"
echo "(user + system) of the program, of the server for tcp-echo"
printf '%-24s %-22s %-22s %-22s %-22s\n' "" "libdex wall" "wsrt port wall" "libdex CPU" "wsrt port CPU"
for t in "cat 1 GiB > /dev/null:cat" "cp -r /usr/share/doc:cp" "tcp-echo 4 x 64 MiB:tcp-echo"; do
  n=${t##*:}
  printf '%-24s %-22s %-22s %-22s %-22s\n' "${t%:*}" "$(median "$n-libdex.times")" \
    "$(median "$n-port.times")" "$(median "$n-libdex.cpu")" "$(median "$n-port.cpu")"
done
