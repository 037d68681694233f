#!/usr/bin/env bash
# make bench: tidemark against git on the same data, same run. Figures are ratios (tidemark/baseline).
# BENCH_ITEMS (default 100000), BENCH_RUNS (default 3), BENCH_HTTP_ITEMS (default 20000), BENCH_DIR,
# BENCH_RESULTS (default Benchmarks/RESULTS.md) and BENCH_BIN (the build folder, default .build/release)
# may be set; `make bench-smoke` runs it small, on the debug build.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
items="${BENCH_ITEMS:-100000}"
runs="${BENCH_RUNS:-3}"
work="$(realpath -m "${BENCH_DIR:-$here/Benchmarks/work}")"
bin="${BENCH_BIN:-$here/.build/release}"
tidemark="$bin/tidemark"
results="${BENCH_RESULTS:-$here/Benchmarks/RESULTS.md}"
changed=$(( items / 100 ))
# The last run's files are moved aside and deleted at the end, like the trees of earlier runs below:
# deleting ~500k files just before the clone would slow its file creation (see "trash").
if [ -d "$work" ]; then mv "$work" "$work.old.$$"; fi
mkdir -p "$work" && cd "$work"
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@localhost GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@localhost

echo "Generating $items items of ~1 KB (100 shards)..." >&2
python3 "$here/Benchmarks/items.py" generate "$items"

# time_cmd <label> <command...>: wall seconds and peak KB of one run, appended to times.tsv. Each
# run starts after `sync`: no figure, tidemark's or git's, waits on the writeback of the step before.
time_cmd() {
  local label="$1"; shift
  sync
  /usr/bin/time -f "%e %M" -o time.out "$@" >/dev/null 2>cmd.err || { cat cmd.err >&2; exit 1; }
  read -r secs kb < time.out
  printf '%s\t%s\t%s\n' "$label" "$secs" "$kb" >> times.tsv
}
median() { awk -F'\t' -v l="$1" '$1==l{print $2}' times.tsv | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
peak() { awk -F'\t' -v l="$1" '$1==l && $3>m{m=$3} END{print int(m/1024)}' times.tsv; }
: > times.tsv

change_items() {  # change 1% of the items upstream, with a new lastModified ($1 = round)
  python3 "$here/Benchmarks/items.py" change "$items" "$changed" "$1"
}

# Trees of earlier runs are moved aside, not deleted, until the end: ext4 skips recently deleted
# inodes for minutes when allocating, which would charge 200k deletions to whichever command runs next.
mkdir -p trash
watch_pid=
trap 'kill $watch_pid 2>/dev/null || true' EXIT
for run in $(seq 1 "$runs"); do
  echo "Run $run/$runs" >&2
  [ -d mirror ] && mv mirror "trash/mirror-$run"
  [ -d baseline ] && mv baseline "trash/baseline-$run"
  # W1: tidemark clone. B1: git fast-import of the same files, then checkout.
  time_cmd W1 "$tidemark" clone -q dir:up mirror
  time_cmd B1 bash -c 'git init -q baseline && cd baseline && python3 - ../up <<"PY" | git fast-import --quiet && git checkout -q main
import os, sys
root = sys.argv[1]
out = sys.stdout.buffer
out.write(b"commit refs/heads/main\ncommitter bench <bench@localhost> 1700000000 +0000\ndata 5\nbulk\n")
for shard in sorted(os.listdir(root)):
    for name in sorted(os.listdir(os.path.join(root, shard))):
        data = open(os.path.join(root, shard, name), "rb").read()
        out.write(b"M 100644 inline items/%s\ndata %d\n" % (name.encode(), len(data)) + data + b"\n")
PY'
  # W3: fetch with nothing changed. B4: git status on the mirror.
  time_cmd W3 "$tidemark" -C mirror fetch -q
  time_cmd B4 git -C mirror status --porcelain
  # L0: the floor of any fetch of a dir upstream: one lstat per upstream file (find's %s needs it).
  time_cmd L0 find up -name '*.json' -printf '%s\n'
  # W2: 1% changed upstream, then sync. B2: the same files written into the checkout, add -A, commit.
  change_items "$run"
  time_cmd W2 "$tidemark" -C mirror sync -q
  time_cmd B2 bash -c 'xargs cp -t baseline/items < changed.txt && git -C baseline add -A && git -C baseline commit -qm sync'
  # W4: status with 1% behind upstream.
  change_items $(( run + 10 ))
  "$tidemark" -C mirror fetch -q
  time_cmd W4 "$tidemark" -C mirror status --porcelain
  time_cmd B4s git -C mirror status --porcelain
  # W3w, W2w: W3 and W2 again with `tidemark watch` running beside the mirror. The sync before them
  # applies W4's changes and, the watcher's first, scans every file and takes its token.
  "$tidemark" -C mirror watch -q &
  watch_pid=$!
  for _ in $(seq 1 600); do [ -S mirror/.git/tidemark/watch.sock ] && break; sleep 0.1; done
  [ -S mirror/.git/tidemark/watch.sock ] || { echo "tidemark watch did not start" >&2; exit 1; }
  "$tidemark" -C mirror sync -q
  time_cmd W3w "$tidemark" -C mirror fetch -q
  change_items $(( run + 20 ))
  time_cmd W2w "$tidemark" -C mirror sync -q
  used=$("$tidemark" -C mirror sync -v 2>&1)
  [[ "$used" == *"Listed from the watcher"* ]] || { echo "the watcher was not used: $used" >&2; exit 1; }
  kill "$watch_pid" && wait "$watch_pid" && watch_pid=
done

# W5: the same over HTTP. The fixture emulates DocuSign (100 templates per listing page); a clone of
# http_items, then 1% changed upstream and a sync. Requests and bytes come from `--json`; the
# fixture's own request count must agree. Minimum requests = listing pages + changed items.
http_items="${BENCH_HTTP_ITEMS:-20000}"
http_changed=$(( http_items / 100 ))
"$bin/tidemark-fixture" --port 0 --items "$http_items" --token bench-token > fixture.log 2>&1 &
fixture_pid=$!
trap 'kill $fixture_pid $watch_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do grep -q "listening on" fixture.log && break; sleep 0.1; done
base_url=$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' fixture.log | head -1)
# DocuSign's hourly limit (3,000 calls) would stop a 20k clone; the benchmark measures traffic, not waits.
curl -s "$base_url/_admin/ratelimit?remaining=10000000&reset=3600" > /dev/null
export BENCH_TOKEN=bench-token
rm -rf http-mirror
/usr/bin/time -f "%e %M" -o time.out "$tidemark" clone --json --token-env BENCH_TOKEN \
  "docusign:$base_url/restapi/v2.1/accounts/bench" http-mirror > w5-clone.json
read -r w5_clone_secs w5_clone_kb < time.out
python3 - "$base_url" "$http_changed" <<'PY'
import json, sys, urllib.request
base, k = sys.argv[1], int(sys.argv[2])
ids = json.load(urllib.request.urlopen(base + "/_admin/docusign/ids"))["ids"]
for i in range(k):
    urllib.request.urlopen(base + "/_admin/docusign/modify?id=" + ids[(i * 97) % len(ids)]).read()
urllib.request.urlopen(base + "/_admin/reset-counts").read()
PY
/usr/bin/time -f "%e %M" -o time.out "$tidemark" -C http-mirror sync --json > w5-sync.json
read -r w5_sync_secs w5_sync_kb < time.out
fixture_sync_requests=$(python3 -c "import json,urllib.request; print(json.load(urllib.request.urlopen('$base_url/_admin/requests?prefix=/restapi'))['count'])")
kill $fixture_pid 2>/dev/null || true
w5_row() {  # label, json file, seconds, KB, items changed
  python3 - "$@" "$http_items" <<'PY'
import json, math, sys
label, path, secs, kb, changed, items = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
fetch = json.load(open(path))["fetch"]
pages = math.ceil(items / 100)
minimum = pages + changed
print(f"| {label} | {secs} | {fetch['requests']} | {minimum} ({pages} pages + {changed} items) | "
      f"{fetch['downloaded']} | {fetch['bytesReceived'] / 1e6:.1f} | {kb // 1024} |")
PY
}
{
  echo "| W5 over HTTP ($http_items DocuSign templates) | seconds | requests | minimum | bodies downloaded | MB received | peak MB |"
  echo "|---|---|---|---|---|---|---|"
  w5_row "clone" w5-clone.json "$w5_clone_secs" "$w5_clone_kb" "$http_items"
  w5_row "sync, 1% changed" w5-sync.json "$w5_sync_secs" "$w5_sync_kb" "$http_changed"
  echo
  echo "The fixture counted $fixture_sync_requests requests during the sync."
} > http-table.md

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
{
  echo "| figure | tidemark (s) | baseline (s) | ratio | target | peak MB |"
  echo "|---|---|---|---|---|---|"
  echo "| W1 clone $items items vs B1 fast-import + checkout | $(median W1) | $(median B1) | $(ratio "$(median W1)" "$(median B1)") | ≤ 1.0 | $(peak W1) |"
  echo "| W2 sync 1% changed vs B2 write + add -A + commit | $(median W2) | $(median B2) | $(ratio "$(median W2)" "$(median B2)") | ≤ 0.25 | $(peak W2) |"
  echo "| W3 fetch, nothing changed vs B4 git status (the first after the clone) | $(median W3) | $(median B4) | $(ratio "$(median W3)" "$(median B4)") | < 0.5 | $(peak W3) |"
  echo "| W3 fetch, nothing changed vs B4s git status on a settled index (no target; see README) | $(median W3) | $(median B4s) | $(ratio "$(median W3)" "$(median B4s)") | | $(peak W3) |"
  echo "| W4 status, 1% behind vs B4s git status on a settled index | $(median W4) | $(median B4s) | $(ratio "$(median W4)" "$(median B4s)") | ≤ 1.0 | $(peak W4) |"
  echo "| W2w sync 1% changed, tidemark watch running, vs B2 | $(median W2w) | $(median B2) | $(ratio "$(median W2w)" "$(median B2)") | ≤ 0.25 | $(peak W2w) |"
  echo "| W3w fetch, nothing changed, tidemark watch running, vs B4 | $(median W3w) | $(median B4) | $(ratio "$(median W3w)" "$(median B4)") | < 0.5 | $(peak W3w) |"
  echo "| L0 floor of W3: lstat of every upstream file (find) vs B4 | $(median L0) | $(median B4) | $(ratio "$(median L0)" "$(median B4)") | | $(peak L0) |"
} > table.md
# Every run, fastest first: the medians above hide how much this machine's timings move.
runs_of() { awk -F'\t' -v l="$1" '$1==l{print $2}' times.tsv | sort -n | paste -sd' ' -; }
{
  echo "Each run (s), fastest first:"
  echo
  for label in W1 B1 W2 W2w B2 W3 W3w B4 B4s W4 L0; do echo "- $label: $(runs_of "$label")"; done
} > runs.md
{
  echo "# Benchmark results"
  echo
  echo "\`make bench\` (BENCH_ITEMS=$items, median of $runs runs, $(basename "$bin") build), $(date -u +%Y-%m-%d), $(nproc) cores."
  echo "Each timed command starts after \`sync\`, so none waits on the writeback of the step before."
  echo
  cat table.md
  echo
  cat runs.md
  echo
  cat http-table.md
} > "$results"
cat table.md
echo
cat http-table.md
rm -rf trash "$work".old.*
