#!/usr/bin/env bash
# Builds the libFuzzer targets of Fuzz/ with `swiftc -sanitize=fuzzer` and runs each for
# FUZZ_SECONDS (default 60). Usage: Scripts/fuzz.sh [target...]  (default: all targets)
# Targets: listing (adapters' JSON listing decoding), canonical-json (item storage JSON),
# manifest (manifest parser and table). Corpora grow under .build/fuzz/corpus/<target>; crashes are
# written to .build/fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${FUZZ_SECONDS:-60}
SWIFTC=${SWIFTC:-swiftc}
OUT=.build/fuzz
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(listing canonical-json manifest)
mkdir -p "$OUT/src"

# Each target is its entry point compiled together with the product files it exercises, as one
# module (`import Upstreams` and `import GitStore` removed from Tidemark files): no SwiftPM target, so a normal build
# never needs the fuzzer runtime.
sources() {
    case "$1" in
    listing)
        echo Fuzz/ListingFuzz.swift Sources/Upstreams/{JSONValue,JSONParser,JSONWriter,CQuoting,Timestamp,Timestamp+JSON,ItemID,ListingAccumulator,Upstream,UpstreamError}.swift \
            Sources/Upstreams/HTTP/{HTTPResult,HTTPDate,URLSafety,HTTPStatistics}.swift ;;
    canonical-json)
        sed '/^import Upstreams$/d' Sources/Tidemark/CanonicalJSON.swift > "$OUT/src/CanonicalJSON.swift"
        echo Fuzz/CanonicalJSONFuzz.swift "$OUT/src/CanonicalJSON.swift" Sources/Tidemark/CanonicalCheck.swift \
            Sources/Upstreams/{JSONValue,JSONParser,JSONWriter,CQuoting,ItemID,IgnoredFields}.swift ;;
    manifest)
        for file in Manifest ManifestTable; do
            sed '/^import \(Upstreams\|GitStore\)$/d' "Sources/Tidemark/$file.swift" > "$OUT/src/$file.swift"
        done
        echo Fuzz/ManifestFuzz.swift "$OUT"/src/{Manifest,ManifestTable}.swift Sources/GitStore/PackDelta.swift \
            Sources/Upstreams/{ItemID,Timestamp,Upstream}.swift Sources/Upstreams/HTTP/{HTTPStatistics,HTTPDate}.swift ;;
    *) echo "unknown fuzz target '$1' (known: listing canonical-json manifest)" >&2; exit 2 ;;
    esac
}

cat > "$OUT/probe.swift" <<'SWIFT'
@_cdecl("LLVMFuzzerTestOneInput") public func probe(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt { 0 }
SWIFT
if ! "$SWIFTC" -sanitize=fuzzer -parse-as-library "$OUT/probe.swift" -o "$OUT/probe" > "$OUT/probe.log" 2>&1; then
    cat "$OUT/probe.log" >&2
    echo "fuzz: '$SWIFTC -sanitize=fuzzer' does not work with this toolchain (it needs the libFuzzer runtime that swift.org's Linux toolchains ship)" >&2
    exit 1
fi

pids=()
for target in "${TARGETS[@]}"; do
    # shellcheck disable=SC2046
    "$SWIFTC" -sanitize=fuzzer -parse-as-library -O -module-name FuzzTarget -package-name tidemark $(sources "$target") -o "$OUT/$target-fuzz" \
        > "$OUT/$target-build.log" 2>&1 &
    pids+=($!)
done
for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then
        cat "$OUT/${TARGETS[$i]}-build.log" >&2
        echo "fuzz: building ${TARGETS[$i]} failed" >&2
        exit 1
    fi
done

status=0
for target in "${TARGETS[@]}"; do
    corpus="$OUT/corpus/$target"
    artifacts="$OUT/artifacts/$target/"
    mkdir -p "$corpus" "$artifacts"
    cp -n Fuzz/corpus/"$target"/* "$corpus"/ 2>/dev/null || true
    dict=()
    [ -f "Fuzz/$target.dict" ] && dict=(-dict="Fuzz/$target.dict")
    if "$OUT/$target-fuzz" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$artifacts" "${dict[@]}" "$corpus" > "$OUT/$target.log" 2>&1; then
        echo "fuzz $target: $(grep -E '^Done [0-9]+ runs' "$OUT/$target.log" | tail -1), corpus $(ls "$corpus" | wc -l) inputs, no failure"
    else
        tail -40 "$OUT/$target.log" >&2
        echo "fuzz $target: FAILED (input saved in $artifacts)" >&2
        status=1
    fi
done
exit $status
