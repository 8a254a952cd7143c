#!/bin/sh
# bench-gtk-hasher.sh: gtk-hasher (wsrt, local fibers) against
# gtk-hasher-gtask (GTask).
#
#   bench-gtk-hasher.sh BUILD-DIR [DIR] [RUNS]
#
# Runs the programs headless with --measure-gap on DIR (default
# /usr/share/doc), RUNS times each (default 9), alternately, after one
# untimed run of each to warm the page cache; prints the time each
# reported (from the start of the walk to the final digest) and its
# longest main-loop gap (between two callbacks of a 1 ms timer), the
# medians and their ratios. Both must print the same digest. BUILD-DIR
# holds the programs (_build/examples/gtk-hasher).
set -eu

bin=$1
dir=${2:-/usr/share/doc}
runs=${3:-9}

if [ -z "$(find "$dir" -type f 2>/dev/null | head -n 1)" ]; then
  echo "no files under $dir: nothing to measure"
  exit 77
fi

# run PROGRAM: runs it once, prints "SECONDS GAP-MS"; the digest goes to
# $digests.
digests=$(mktemp)
trap 'rm -f "$digests"' EXIT INT TERM
run ()
{
  out=$("$bin/$1" --headless --measure-gap --timeout 600 "$dir")
  printf '%s\n' "$out" | tail -n 1 >> "$digests"
  s=$(printf '%s\n' "$out" |
        sed -n 's/^[^:]*: [0-9]* files, [0-9]* unreadable, \([0-9.]*\) s$/\1/p')
  gap=$(printf '%s\n' "$out" | sed -n 's/^longest main-loop gap: \([0-9.]*\) ms$/\1/p')
  echo "$s $gap"
}

# median "V1 V2 ...": the word splitting is wanted.
median ()
{
  # shellcheck disable=SC2086
  printf '%s\n' $1 | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

run gtk-hasher > /dev/null
run gtk-hasher-gtask > /dev/null
wsrt_s=
wsrt_gap=
gtask_s=
gtask_gap=
i=0
while [ $i -lt "$runs" ]; do
  # shellcheck disable=SC2046 # "SECONDS GAP" into $1 and $2
  set -- $(run gtk-hasher)
  wsrt_s="$wsrt_s $1"
  wsrt_gap="$wsrt_gap $2"
  # shellcheck disable=SC2046
  set -- $(run gtk-hasher-gtask)
  gtask_s="$gtask_s $1"
  gtask_gap="$gtask_gap $2"
  i=$((i + 1))
done

if [ "$(sort -u "$digests" | wc -l)" -ne 1 ]; then
  echo "the programs disagree on the digest:"
  sort "$digests" | uniq -c
  exit 1
fi

n_files=$(find "$dir" -type f | wc -l)
m_wsrt_s=$(median "$wsrt_s")
m_wsrt_gap=$(median "$wsrt_gap")
m_gtask_s=$(median "$gtask_s")
m_gtask_gap=$(median "$gtask_gap")
echo "$dir: $n_files files, $runs runs each, alternately ($(nproc) CPUs)"
echo "gtk-hasher (wsrt):        median $m_wsrt_s s, gap $m_wsrt_gap ms"
echo "  times:$wsrt_s"
echo "  gaps: $wsrt_gap"
echo "gtk-hasher-gtask (GTask): median $m_gtask_s s, gap $m_gtask_gap ms"
echo "  times:$gtask_s"
echo "  gaps: $gtask_gap"
echo "wsrt / GTask: time $(echo "$m_wsrt_s $m_gtask_s" | awk '{ printf "%.2f", $1 / $2 }'), gap $(echo "$m_wsrt_gap $m_gtask_gap" | awk '{ printf "%.2f", $1 / $2 }')"
