#!/usr/bin/env bash
# make demo: a guided walk through tidemark against a local server emulating the DocuSign
# eSignature API (tidemark-fixture): clone, upstream changes, status, diff, sync, log, rollback.
# Each step prints the command a user would type, then its output.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bin="$here/.build/debug"
for tool in tidemark tidemark-fixture; do
    [ -x "$bin/$tool" ] || { echo "demo: $bin/$tool is missing; run 'make build' first" >&2; exit 1; }
done
command -v curl >/dev/null || { echo "demo: curl is needed (apt-get install curl)" >&2; exit 1; }
work="$(mktemp -d "${TMPDIR:-/tmp}/tidemark-demo.XXXXXX")"
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
export PATH="$bin:$PATH" NO_COLOR=1 GIT_PAGER=cat
cd "$work"

bold() { if [ -t 1 ]; then printf '\033[1m%s\033[0m\n' "$*"; else printf '%s\n' "$*"; fi; }
# Shows a command the way a user would type it (arguments with spaces or specials single-quoted).
shown() {
    local out="" arg
    for arg in "$@"; do
        case "$arg" in
            *[!A-Za-z0-9_./:=@~+-]*) out+="'${arg//\'/\'\\\'\'}' " ;;
            *) out+="$arg " ;;
        esac
    done
    printf '%s' "${out% }"
}
step() { printf '\n'; bold "\$ $(shown "$@")"; "$@"; }
note() { printf '\n# %s\n' "$*"; }

# The "upstream": a DocuSign-compatible API on 127.0.0.1 with 20 templates, requiring a token.
export DOCUSIGN_TOKEN="demo-token-$RANDOM$RANDOM"
tidemark-fixture --port 0 --items 20 --token "$DOCUSIGN_TOKEN" >"$work/fixture.log" 2>&1 &
server_pid=$!
base=""
for _ in $(seq 1 100); do
    base="$(sed -n 's/^listening on \(http:\/\/127\.0\.0\.1:[0-9]*\).*/\1/p' "$work/fixture.log")"
    [ -n "$base" ] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/fixture.log" >&2; exit 1; }
    sleep 0.1
done
[ -n "$base" ] || { echo "demo: the fixture server did not start" >&2; cat "$work/fixture.log" >&2; exit 1; }
account="$base/restapi/v2.1/accounts/demo-account"
admin() { step curl -fsS -X POST "$base/_admin/docusign/$1"; echo; }
ids() { curl -fsS "$base/_admin/docusign/ids" | grep -o '[0-9a-f]\{8\}-[0-9a-f-]\{27\}'; }

note "A DocuSign-compatible server runs at $base with 20 templates."
note "The bearer token is in \$DOCUSIGN_TOKEN; tidemark stores only the variable's name."
step tidemark clone "docusign:$account" templates-cache --token-env DOCUSIGN_TOKEN
cd templates-cache
step tidemark config
step tidemark status
step git log --format='%h %s%n%(trailers:key=Tidemark-Watermark)' -1

note "Upstream changes (through the server's admin API): two templates edited, one added, one deleted."
first="$(ids | sed -n 1p)"; second="$(ids | sed -n 2p)"; third="$(ids | sed -n 3p)"
admin "modify?id=$first"
admin "modify?id=$second"
admin "purge?id=$third"
admin create

note "fetch lists upstream and downloads only what changed; -v logs each request (token never shown)."
step tidemark fetch -v
step tidemark status
step tidemark status --porcelain
step tidemark diff --stat
step tidemark diff -- "templates/$first"
step tidemark sync --dry-run
step tidemark sync
step tidemark status
step tidemark log
note "Plain git reads the same history."
step git log --oneline --all
note "Roll back to the first snapshot: status shows what is behind again, and the next sync
# re-uses the objects already stored instead of downloading them (\"downloaded\" : 0)."
step tidemark rollback HEAD~1
step tidemark status --porcelain
step tidemark sync --json
step git fsck --strict
note "Done. Stopping the server and removing the demo folder $work."
