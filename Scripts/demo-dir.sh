#!/usr/bin/env bash
# make demo-dir: a guided walk through tidemark on the bundled folder upstream (Demo/templates).
# Each step prints the command a user would type, then its output.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bin="$here/.build/debug"
work="$(mktemp -d "${TMPDIR:-/tmp}/tidemark-demo.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export PATH="$bin:$PATH" NO_COLOR=1 GIT_PAGER=cat
cd "$work"
cp -R "$here/Demo/templates" upstream

# Bold commands on a terminal only: piped, the output stays plain text.
if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
step() { printf '\n%s$ %s%s\n' "$bold" "$*" "$plain"; "$@"; }
note() { printf '\n# %s\n' "$*"; }

note "A folder of DocuSign-style templates is our upstream (one JSON file per item)."
step ls upstream
step tidemark clone dir:upstream cache
cd cache
step tidemark status
step git log --format='%h %s%n%(trailers:key=Tidemark-Watermark)' -1

note "Upstream changes: one template edited, one added, one deleted."
cd ..
python3 - <<'PY'
import json
p = "upstream/3f1c2a9e-8b1d-4c55-9a0e-1d2b3c4d5e01.json"
d = json.load(open(p)); d["name"] = "NDA - Mutual (2026 revision)"; d["lastModified"] = "2026-11-20T09:15:00.1230000Z"
open(p, "w").write(json.dumps(d, indent=2) + "\n")
new = {"templateId": "e6f7a8b9-c0d1-4e2f-8a3b-4c5d6e7f8a07", "name": "Data Processing Agreement",
       "lastModified": "2026-11-20T09:20:00.0000000Z", "documents": []}
open("upstream/e6f7a8b9-c0d1-4e2f-8a3b-4c5d6e7f8a07.json", "w").write(json.dumps(new, indent=2) + "\n")
PY
rm upstream/c8d9e0f1-a2b3-4c4d-8e5f-6a7b8c9d0e05.json
cd cache
step tidemark fetch
step tidemark status
step tidemark status --porcelain
step tidemark diff --stat
step tidemark diff -- items/3f1c2a9e-8b1d-4c55-9a0e-1d2b3c4d5e01
step tidemark sync --dry-run
step tidemark sync
step tidemark status
step tidemark log
note "Plain git reads the same history."
step git log --oneline --all
note "Roll back to the first snapshot; status shows what is behind again."
step tidemark rollback HEAD~1
step tidemark status --porcelain
step tidemark sync
step git fsck --strict
note "Done. The demo mirror lived in $work and is removed now."
