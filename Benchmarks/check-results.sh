#!/usr/bin/env bash
# check-results.sh <RESULTS.md>: fails unless every figure of the table was measured (tidemark and
# baseline seconds, and a ratio unless the baseline rounds to 0.00 s), and W5 made exactly the
# minimum requests, as the fixture counted them too. `make bench-smoke` runs it.
set -euo pipefail
file="$1"
status=0
fail() { echo "check-results: $*" >&2; status=1; }
number='^ *[0-9]+(\.[0-9]+)? *$'
figures=0
while IFS='|' read -r _ figure tidemark baseline ratio _; do
  figures=$((figures + 1))
  [[ "$tidemark" =~ $number && "$baseline" =~ $number ]] || fail "no time in row:$figure"
  [[ "$ratio" =~ $number ]] || [[ "$ratio" == " n/a " && "$baseline" =~ ^\ *0\.00\ *$ ]] || fail "no ratio in row:$figure"
done < <(grep -E '^\| (W[1-4]w?|L0) ' "$file")
[ "$figures" -eq 8 ] || fail "expected 8 figure rows in $file, found $figures"
rows=0
while IFS='|' read -r _ label _ requests minimum _; do
  rows=$((rows + 1))
  [ "$(echo "$requests" | tr -d ' ')" = "$(echo "$minimum" | awk '{print $1}')" ] || fail "W5$label made $requests requests; minimum $minimum"
  sync_requests=$(echo "$requests" | tr -d ' ')
done < <(grep -E '^\| (clone|sync, 1% changed) ' "$file")
[ "$rows" -eq 2 ] || fail "expected the 2 W5 rows in $file, found $rows"
grep -q "The fixture counted ${sync_requests:-?} requests during the sync." "$file" || fail "the fixture counted other requests than the sync reported"
[ "$status" -eq 0 ] && echo "check-results: every figure measured; W5 made the minimum requests"
exit "$status"
