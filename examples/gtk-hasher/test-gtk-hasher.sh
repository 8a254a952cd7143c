#!/bin/sh
# test-gtk-hasher.sh: the gtk-hasher example's test.
#
#   test-gtk-hasher.sh XVFB-RUN GTK-HASHER GTK-HASHER-GTASK OUTDIR RENDERER GTASK \
#                      LSAN-SUPP TSAN-SUPP
#
# Builds a scratch tree of about 3,000 small files, then, under Xvfb:
#  1. gtk-hasher hashes it with its window up; its last line ("total: ...")
#     must be the digest that sha256sum computes in the shell over the
#     same "DIGEST  NAME" lines, and it must have shown every file as it
#     came (hasher_show_file());
#  2. gtk-hasher-gtask does the same and must agree (GTASK "yes", as
#     every build passes now; "no" skips it);
#  3. both run on the tree plus two 1 GiB sparse files with Cancel pressed
#     after 300 ms: they must report the cancellation, having stopped
#     within 5 s of Cancel (a file being hashed stops within a chunk).
# Then gtk-hasher --headless must print the same digest.
# The sanitizer builds check every run for leaks (ASan) and races (TSan).
# Each program gives up after 60 s on its own; meson's timeout is the
# second watchdog.
#
# RENDERER "cairo": draw without GL (the sanitizer builds, see
# examples/gtk-fractal/meson.build). LSAN-SUPP and TSAN-SUPP are the
# suppression files for GTK (colon-separated lists), added to those in use.
set -eu

xvfb_run=$1
hasher=$2
gtask=$3
outdir=$4
renderer=$5
run_gtask=$6
lsan_supp=$7
tsan_supp=$8

tree=$(mktemp -d "$outdir/gtk-hasher-tree.XXXXXX")
trap 'rm -rf "$tree"' EXIT INT TERM

if [ "$renderer" = cairo ]; then
  GSK_RENDERER=cairo GDK_DEBUG=gl-disable
  export GSK_RENDERER GDK_DEBUG
fi

# Sanitizer builds: add the suppressions for GTK to those in use.
# shellcheck source=../gtk-sanitizer-env.sh
. "$(dirname "$0")/../gtk-sanitizer-env.sh"
add_suppressions LSAN_OPTIONS "$outdir/gtk-hasher-lsan.supp" "$lsan_supp"
add_suppressions TSAN_OPTIONS "$outdir/gtk-hasher-tsan.supp" "$tsan_supp"

# The tree: 30 directories of 100 files of 1 to 4,000 bytes, a nested
# directory, an empty file, a name with a space, a few 1 MiB files, and a
# symbolic link (not followed, like find -type f).
d=0
while [ $d -lt 30 ]; do
  mkdir -p "$tree/d$d"
  f=0
  while [ $f -lt 100 ]; do
    printf "file %d of directory %d %0$(( (d * 100 + f) % 4000 + 1 ))d\n" $f $d 0 \
      > "$tree/d$d/f$f.txt"
    f=$((f + 1))
  done
  d=$((d + 1))
done
mkdir -p "$tree/nested/a/b/c"
echo nested > "$tree/nested/a/b/c/deep"
: > "$tree/empty"
echo spaced > "$tree/with space.txt"
for i in 1 2 3 4; do
  head -c 1048576 /dev/zero | tr '\0' "$i" > "$tree/nested/mib$i"
done
ln -s d0/f0.txt "$tree/link"

expected=$(cd "$tree" && find . -type f | sed 's|^\./||' | LC_ALL=C sort |
             xargs -d '\n' sha256sum | sha256sum | cut -d ' ' -f 1)
n_files=$(cd "$tree" && find . -type f | wc -l)
echo "scratch tree: $n_files files, expected total: $expected"

status=0

# check_complete NAME OUTPUT
check_complete ()
{
  printf '%s\n' "$2"
  if ! printf '%s\n' "$2" | grep -q ": $n_files files, 0 unreadable,"; then
    echo "FAIL: $1 did not hash $n_files files"
    status=1
  fi
  if ! printf '%s\n' "$2" | grep -qx "shown as they came: $n_files files"; then
    echo "FAIL: $1 did not show the $n_files files as they came"
    status=1
  fi
  if [ "$(printf '%s\n' "$2" | tail -n 1)" != "total: $expected" ]; then
    echo "FAIL: $1's last line is not 'total: $expected'"
    status=1
  fi
}

# check_cancelled NAME OUTPUT
check_cancelled ()
{
  printf '%s\n' "$2"
  stopped=$(printf '%s\n' "$2" |
              sed -n 's/.*: cancelled after .*(stopped \([0-9]*\) ms after Cancel)$/\1/p')
  if [ -z "$stopped" ]; then
    echo "FAIL: $1 did not report the cancellation"
    status=1
  elif [ "$stopped" -gt 5000 ]; then
    echo "FAIL: $1 took $stopped ms to stop after Cancel"
    status=1
  fi
}

run ()
{
  "$xvfb_run" -a -s "-screen 0 1024x768x24" "$@"
}

out=$(run "$hasher" --quit --timeout 60 "$tree")
check_complete gtk-hasher "$out"
if [ "$run_gtask" = yes ]; then
  out=$(run "$gtask" --quit --timeout 60 "$tree")
  check_complete gtk-hasher-gtask "$out"
fi

out=$("$hasher" --headless --timeout 60 "$tree")
check_complete "gtk-hasher --headless" "$out"

# Cancel: two files far too large to finish in time, sparse (they take no
# disk space; their holes read as zeros). They sort first: two threads
# are in the middle of them when Cancel is pressed.
mkdir "$tree/big"
truncate -s 1G "$tree/big/sparse1.bin" "$tree/big/sparse2.bin"
out=$(run "$hasher" --quit --timeout 60 --cancel-after-ms 300 "$tree")
check_cancelled gtk-hasher "$out"
if [ "$run_gtask" = yes ]; then
  out=$(run "$gtask" --quit --timeout 60 --cancel-after-ms 300 "$tree")
  check_cancelled gtk-hasher-gtask "$out"
fi

exit $status
