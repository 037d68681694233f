#!/usr/bin/env bash
# Benchmarks/ab.sh OLD NEW [ROUNDS]: two tidemark binaries compared on the 1% sync (W2), the way the
# README's A/B figures were taken. Both clone the same `dir` upstream (AB_ITEMS items, default
# 100000, generated like `make bench`'s into AB_DIR, default Benchmarks/ab-work); then, ROUNDS
# times (default 8), 1% of the items change upstream and each mirror syncs them, the two taking
# turns at going first. With AB_WATCH=1 each mirror has its `tidemark watch` running (W2w). Prints
# each sync's wall time and its steps (TIDEMARK_TRACE_STEPS), then the medians of the wall time, of
# the CPU time used up to the branch update (steadier than the wall time here), and of each step.
# On this noisy machine, trust a difference only when it holds round after round.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OLD-BINARY NEW-BINARY [ROUNDS]" >&2; exit 2; }
old="$(realpath "$1")"; new="$(realpath "$2")"; rounds="${3:-8}"
here="$(cd "$(dirname "$0")/.." && pwd)"
items="${AB_ITEMS:-100000}"
work="$(realpath -m "${AB_DIR:-$here/Benchmarks/ab-work}")"
mkdir -p "$work" && cd "$work"
if [ ! -f up/.generated-$items ]; then
  rm -rf up a b next-seed
  echo "Generating $items items..." >&2
  python3 "$here/Benchmarks/items.py" generate "$items"
  touch "up/.generated-$items"
fi
# Each round's change is new to this upstream: a seed applied before writes the bytes its items
# already hold, and the "1% changed" sync then changes no item file (its trees and checkout are
# all but skipped). The next unused seed is kept beside the upstream; AB_SEED overrides it.
seed="${AB_SEED:-$(cat next-seed 2>/dev/null || echo 1)}"

binary_of() { [ "$1" = a ] && echo "$old" || echo "$new"; }
watchers=()
trap 'for pid in "${watchers[@]}"; do kill "$pid" 2>/dev/null || true; done' EXIT
for side in a b; do
  rm -rf "$side" && "$(binary_of $side)" clone -q dir:up "$side"
  if [ "${AB_WATCH:-0}" = 1 ]; then
    "$(binary_of $side)" -C "$side" watch -q &
    watchers+=($!)
    for _ in $(seq 1 600); do [ -S "$side/.git/tidemark/watch.sock" ] && break; sleep 0.1; done
  fi
done
# The watchers' first sync scans every file; it is not timed.
if [ "${AB_WATCH:-0}" = 1 ]; then for side in a b; do "$(binary_of $side)" -C "$side" sync -q; done; fi
: > ab.tsv
steps="listing downloads manifest objects trees commit upstream-ref local-edits journal checkout branch"
sync_once() {  # side: appends "side wall-ms step-ms..." to ab.tsv
  sync
  local start end
  start=$(date +%s%N)
  (cd "$1" && TIDEMARK_TRACE_STEPS=1 "$(binary_of "$1")" sync -q 2> "$work/steps.txt")
  end=$(date +%s%N)
  awk -v side="$1" -v wall=$(( (end - start) / 1000000 )) -v steps="$steps" '
    / (fetch-start|after-[a-z-]+) / { name = $2; sub(/^after-/, "", name); t[name] = $1; cpu = $4; sub(/\)/, "", cpu) }
    END {
      n = split(steps, names, " "); prev = t["fetch-start"]; line = side "\t" wall "\t" sprintf("%.0f", cpu * 1000)
      for (i = 1; i <= n; i++) { line = line "\t" ((names[i] in t) ? sprintf("%.0f", (t[names[i]] - prev) * 1000) : "-"); if (names[i] in t) prev = t[names[i]] }
      print line
    }' "$work/steps.txt" >> ab.tsv
}
for round in $(seq 1 "$rounds"); do
  python3 "$here/Benchmarks/items.py" change "$items" $(( items / 100 )) "$seed"
  seed=$(( seed + 1 )); echo "$seed" > next-seed
  sleep 0.3  # the watchers read their events
  if [ $(( round % 2 )) = 1 ]; then order="a b"; else order="b a"; fi
  for side in $order; do sync_once "$side"; done
  tail -2 ab.tsv | sort | cut -f1,2 | tr '\t\n' '  ' | sed 's/^/round '"$round"': /'; echo
done
median() { awk -F'\t' -v s="$1" -v f="$2" '$1==s && $f != "-" {print $f}' ab.tsv | sort -n | awk '{a[NR]=$1} END{print (NR ? a[int((NR+1)/2)] : "-")}'; }
echo "medians (ms)       old (a)  new (b)"
printf '%-18s %7s  %7s\n' sync "$(median a 2)" "$(median b 2)"
printf '%-18s %7s  %7s\n' "cpu (to branch)" "$(median a 3)" "$(median b 3)"
field=4
for step in $steps; do printf '%-18s %7s  %7s\n' "$step" "$(median a $field)" "$(median b $field)"; field=$(( field + 1 )); done
