# tidemark: set-up, build, test, demo, benchmarks.
SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
BIN := .build/debug

.PHONY: deps build release test demo bench fuzz fuzz-smoke clean
FUZZ_SECONDS ?= 60

## deps: install libgit2-dev and pkg-config when pkg-config cannot find libgit2
deps:
	@if pkg-config --exists libgit2 2>/dev/null; then \
		echo "libgit2 $$(pkg-config --modversion libgit2) found"; \
	elif [ "$$(uname)" = Darwin ]; then \
		echo "Install libgit2 with: brew install libgit2 pkg-config"; exit 1; \
	elif command -v apt-get >/dev/null; then \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq libgit2-dev pkg-config; \
	else \
		echo "libgit2 not found: install libgit2 development files and pkg-config"; exit 1; \
	fi
	@command -v git >/dev/null || { $(SUDO) apt-get install -y -qq git; }

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

## test: the whole suite (units, engine, end-to-end CLI, interoperability with git)
test: deps
	$(SWIFT) build
	$(SWIFT) test

## demo: a guided walk through clone, upstream change, status, diff, sync, log, rollback
demo: build
	@bash Scripts/demo.sh

## bench: the benchmark of Benchmarks/ (writes Benchmarks/RESULTS.md)
bench: deps
	$(SWIFT) build -c release
	@bash Benchmarks/bench.sh

## fuzz: libFuzzer (swiftc -sanitize=fuzzer) on the listing, canonical-JSON and manifest parsers,
## FUZZ_SECONDS each (default 60); corpora in .build/fuzz/corpus
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash Scripts/fuzz.sh

## fuzz-smoke: each fuzz target for 15 s (run by .ci/run)
fuzz-smoke:
	FUZZ_SECONDS=15 bash Scripts/fuzz.sh

clean:
	rm -rf .build
