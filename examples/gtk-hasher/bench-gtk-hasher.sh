#!/bin/sh
# bench-gtk-hasher.sh: gtk-hasher (wsrt) and gtk-hasher-fiber (wsrt, one
# fiber) against gtk-hasher-gtask (GTask).
#
#   bench-gtk-hasher.sh BUILD-DIR [DIR] [RUNS]
#
# Runs the programs headless on DIR (default /usr/share/doc), RUNS times
# each (default 9), alternately, after one untimed run of each to warm the
# page cache; prints the time each reported (from the start of the walk to
# the final digest), the medians and their ratio. Both must print the same
# digest. BUILD-DIR holds the programs (_build/examples/gtk-hasher).
set -eu

bin=$1
dir=${2:-/usr/share/doc}
runs=${3:-9}

if [ -z "$(find "$dir" -type f 2>/dev/null | head -n 1)" ]; then
  echo "no files under $dir: nothing to measure"
  exit 77
fi

# seconds PROGRAM: runs it once, prints the time it reported; the digest
# goes to $digests.
digests=$(mktemp)
trap 'rm -f "$digests"' EXIT INT TERM
seconds ()
{
  out=$("$bin/$1" --headless "$dir")
  printf '%s\n' "$out" | tail -n 1 >> "$digests"
  printf '%s\n' "$out" | sed -n 's/^[^:]*: [0-9]* files, [0-9]* unreadable, \([0-9.]*\) s$/\1/p'
}

# median "T1 T2 ...": the word splitting is wanted.
median ()
{
  # shellcheck disable=SC2086
  printf '%s\n' $1 | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

seconds gtk-hasher > /dev/null
seconds gtk-hasher-gtask > /dev/null
seconds gtk-hasher-fiber > /dev/null
wsrt=
gtask=
fiber=
i=0
while [ $i -lt "$runs" ]; do
  wsrt="$wsrt $(seconds gtk-hasher)"
  gtask="$gtask $(seconds gtk-hasher-gtask)"
  fiber="$fiber $(seconds gtk-hasher-fiber)"
  i=$((i + 1))
done

if [ "$(sort -u "$digests" | wc -l)" -ne 1 ]; then
  echo "the programs disagree on the digest:"
  sort "$digests" | uniq -c
  exit 1
fi

n_files=$(find "$dir" -type f | wc -l)
m_wsrt=$(median "$wsrt")
m_gtask=$(median "$gtask")
m_fiber=$(median "$fiber")
echo "$dir: $n_files files, $runs runs each, alternately ($(nproc) CPUs)"
echo "gtk-hasher (wsrt):        median $m_wsrt s   runs:$wsrt"
echo "gtk-hasher-gtask (GTask): median $m_gtask s   runs:$gtask"
echo "gtk-hasher-fiber (fiber): median $m_fiber s   runs:$fiber"
echo "wsrt / GTask: $(echo "$m_wsrt $m_gtask" | awk '{ printf "%.2f", $1 / $2 }')"
echo "fiber / GTask: $(echo "$m_fiber $m_gtask" | awk '{ printf "%.2f", $1 / $2 }')"
