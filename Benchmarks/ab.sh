#!/usr/bin/env bash
# Benchmarks/ab.sh OLD NEW [ROUNDS]: two tidemark binaries compared on the 1% sync (W2), the way the
# README's A/B figures were taken. Both clone the same `dir` upstream (AB_ITEMS items, default
# 100000, generated like `make bench`'s into AB_DIR, default Benchmarks/ab-work); then, ROUNDS
# times (default 8), 1% of the items change upstream and each mirror syncs them, the two taking
# turns at going first. Prints each sync's wall time and its checkout step
# (TIDEMARK_TRACE_STEPS), then the medians. On this noisy machine, trust a difference only when it
# holds round after round.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OLD-BINARY NEW-BINARY [ROUNDS]" >&2; exit 2; }
old="$(realpath "$1")"; new="$(realpath "$2")"; rounds="${3:-8}"
here="$(cd "$(dirname "$0")/.." && pwd)"
items="${AB_ITEMS:-100000}"
work="$(realpath -m "${AB_DIR:-$here/Benchmarks/ab-work}")"
mkdir -p "$work" && cd "$work"
if [ ! -f up/.generated-$items ]; then
  rm -rf up a b
  echo "Generating $items items..." >&2
  python3 "$here/Benchmarks/items.py" generate "$items"
  touch "up/.generated-$items"
fi
for side in a b; do
  binary=$([ $side = a ] && echo "$old" || echo "$new")
  rm -rf "$side" && "$binary" clone -q dir:up "$side"
done
: > ab.tsv
sync_once() {  # side, binary: appends "side wall-ms checkout-ms" to ab.tsv
  sync
  local start end
  start=$(date +%s%N)
  (cd "$1" && TIDEMARK_TRACE_STEPS=1 "$2" sync -q 2> "$work/steps.txt")
  end=$(date +%s%N)
  awk -v side="$1" -v wall=$(( (end - start) / 1000000 )) \
    '/ after-journal /{j=$1} / after-checkout /{c=$1} END{printf "%s\t%d\t%.0f\n", side, wall, (c-j)*1000}' \
    "$work/steps.txt" >> ab.tsv
}
for round in $(seq 1 "$rounds"); do
  python3 "$here/Benchmarks/items.py" change "$items" $(( items / 100 )) $(( 100 + round ))
  if [ $(( round % 2 )) = 1 ]; then order="a b"; else order="b a"; fi
  for side in $order; do sync_once "$side" "$([ $side = a ] && echo "$old" || echo "$new")"; done
  tail -2 ab.tsv | sort | tr '\n' ' ' | sed 's/^/round '"$round"': /'; echo
done
median() { awk -F'\t' -v s="$1" -v f="$2" '$1==s{print $f}' ab.tsv | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
echo "old (a): sync median $(median a 2) ms, checkout $(median a 3) ms"
echo "new (b): sync median $(median b 2) ms, checkout $(median b 3) ms"
