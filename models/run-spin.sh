#!/bin/sh
# run-spin.sh: check one Promela model with spin, as a TAP test.
#
#   models/run-spin.sh MODEL.pml NAME [expect-pass|expect-counterexample] [-DFLAG ...]
#
# Generates the verifier (spin -a), compiles it (safety checks:
# assertions and invalid end states) and runs an exhaustive search. With
# expect-counterexample the model is a deliberately broken variant and the
# test passes only if pan finds an error (printing the failed assertion of
# the trail), so the properties can fail.
set -u
model=$1
name=$2
expect=${3:-expect-pass}
shift 3 2>/dev/null || shift $#

spin=${SPIN:-spin}
cc=${CC:-cc}
dir=$(mktemp -d "${TMPDIR:-/tmp}/wsrt-spin.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cp "$model" "$dir/model.pml"
cd "$dir" || exit 1

echo "1..1"
if ! "$spin" -a "$@" model.pml > spin.out 2>&1; then
  sed 's/^/# /' spin.out
  echo "not ok 1 - $name: spin -a failed"
  exit 1
fi
# -DSAFETY: assertions and end states; MEMLIM in MB bounds the search.
if ! $cc -O2 -DSAFETY -DMEMLIM=2048 -o pan pan.c > cc.out 2>&1; then
  sed 's/^/# /' cc.out
  echo "not ok 1 - $name: cc pan.c failed"
  exit 1
fi
./pan -m1000000 > pan.out 2>&1
errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' pan.out | tail -n1)
states=$(sed -n 's/^ *\([0-9][0-9]*\) states, stored.*/\1/p' pan.out | tail -n1)
depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' pan.out | tail -n1)
sed 's/^/# /' pan.out
if [ -z "$errors" ]; then
  echo "not ok 1 - $name: pan gave no result"
  exit 1
fi

if [ "$expect" = expect-counterexample ]; then
  if [ "$errors" -gt 0 ]; then
    "$spin" -t "$@" model.pml 2>&1 | grep -E 'assertion|invalid end' | sed 's/^/# trail: /'
    echo "ok 1 - $name: counterexample found as expected ($* ; $states states, depth $depth)"
    exit 0
  fi
  echo "not ok 1 - $name: the broken variant ($*) passed: the model cannot see this bug"
  exit 1
fi

if [ "$errors" -ne 0 ]; then
  "$spin" -t -p "$@" model.pml 2>&1 | tail -n 60 | sed 's/^/# trail: /'
  echo "not ok 1 - $name: $errors error(s)"
  exit 1
fi
if grep -q 'Search not completed' pan.out; then
  echo "not ok 1 - $name: search not completed (raise -m or MEMLIM)"
  exit 1
fi
echo "ok 1 - $name: no errors, $states states explored, depth $depth"
