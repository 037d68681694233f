# tidemark: set-up, build, test, demo, benchmarks.
SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
BIN := .build/debug

.PHONY: deps build release test demo demo-dir completions man bench bench-smoke bench-tools fuzz fuzz-smoke soak clean
FUZZ_SECONDS ?= 60

## deps: install libgit2-dev, libdeflate-dev and pkg-config when pkg-config cannot find them
deps:
	@if pkg-config --exists libgit2 libdeflate 2>/dev/null; then \
		echo "libgit2 $$(pkg-config --modversion libgit2), libdeflate $$(pkg-config --modversion libdeflate) found"; \
	elif [ "$$(uname)" = Darwin ]; then \
		echo "Install libgit2 and libdeflate with: brew install libgit2 libdeflate pkg-config"; exit 1; \
	elif command -v apt-get >/dev/null; then \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq libgit2-dev libdeflate-dev pkg-config; \
	else \
		echo "libgit2 or libdeflate not found: install their development files and pkg-config"; exit 1; \
	fi
	@command -v git >/dev/null || { $(SUDO) apt-get install -y -qq git; }
	@command -v python3 >/dev/null || { $(SUDO) apt-get install -y -qq python3; }
	@command -v curl >/dev/null || { $(SUDO) apt-get install -y -qq curl; }

build: deps
	$(SWIFT) build

## release: the optimised build, with the Swift runtime linked in (starts in 10 ms instead of 16)
release: deps
	$(SWIFT) build -c release --static-swift-stdlib

## test: the whole suite (units, engine, end-to-end CLI, interoperability with git)
test: deps
	$(SWIFT) build --build-tests
	@# The build's gigabyte of objects goes to disk before the tests start: a test run started
	@# under that writeback saw file writes stall for tens of seconds, and time-bound tests fail.
	sync
	$(SWIFT) test --skip-build

## demo: a guided walk against a local DocuSign-compatible server: clone, upstream changes,
## status, diff, sync, log, rollback (starts and stops the fixture server)
demo: deps build
	@bash Scripts/demo.sh

## demo-dir: the same walk on the bundled folder upstream (Demo/templates)
demo-dir: deps build
	@bash Scripts/demo-dir.sh

## completions: bash, zsh and fish completion scripts in .build/completions/
completions: build
	@mkdir -p .build/completions
	$(BIN)/tidemark --generate-completion-script bash > .build/completions/tidemark.bash
	$(BIN)/tidemark --generate-completion-script zsh > .build/completions/_tidemark
	$(BIN)/tidemark --generate-completion-script fish > .build/completions/tidemark.fish
	@echo "wrote .build/completions/{tidemark.bash,_tidemark,tidemark.fish}"

## man: man pages (tidemark.1 and tidemark.<command>.1) in .build/man/, by argument-parser's
## generate-manual plugin (runs offline once the package is resolved; debug build)
man: build
	$(SWIFT) package generate-manual --configuration debug --multi-page
	@rm -rf .build/man && mkdir -p .build/man
	cp .build/plugins/GenerateManual/outputs/tidemark/*.1 .build/man/
	@echo "wrote .build/man/ (try: man -l .build/man/tidemark.sync.1)"

## bench: the benchmark of Benchmarks/ (writes Benchmarks/RESULTS.md)
bench: deps bench-tools release
	@bash Benchmarks/bench.sh

## bench-smoke: the same script, small (400 items, one run, 300 templates over HTTP) on the debug
## build, into .build/bench-smoke; fails unless every figure was measured and W5 made exactly the
## minimum requests (run by .ci/run)
bench-smoke: deps bench-tools
	$(SWIFT) build
	@BENCH_ITEMS=400 BENCH_RUNS=1 BENCH_HTTP_ITEMS=300 BENCH_DIR=$(CURDIR)/.build/bench-smoke/work \
		BENCH_RESULTS=$(CURDIR)/.build/bench-smoke/RESULTS.md BENCH_BIN=$(CURDIR)/$(BIN) bash Benchmarks/bench.sh
	@bash Benchmarks/check-results.sh .build/bench-smoke/RESULTS.md

bench-tools:
	@[ -x /usr/bin/time ] || $(SUDO) apt-get install -y -qq time
	@command -v python3 >/dev/null || $(SUDO) apt-get install -y -qq python3

## fuzz: libFuzzer (swiftc -sanitize=fuzzer) on the listing, canonical-JSON and manifest parsers,
## FUZZ_SECONDS each (default 60); corpora in .build/fuzz/corpus
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash Scripts/fuzz.sh

## fuzz-smoke: each fuzz target for 15 s (run by .ci/run)
fuzz-smoke:
	FUZZ_SECONDS=15 bash Scripts/fuzz.sh

## soak: the randomized consistency soak (Scripts/soak.py) on the release build, SOAK_SEEDS seeds
## (default 20) of SOAK_STEPS random steps (default 250; about 15 s a seed); fails on a violation
SOAK_SEEDS ?= 20
SOAK_STEPS ?= 250
soak: deps release
	@failed=0; for seed in $$(seq 1 $(SOAK_SEEDS)); do \
	  rm -f /tmp/tidemark-soak/s$$seed-*.sh; \
	  python3 Scripts/soak.py $$seed $(SOAK_STEPS) /tmp/tidemark-soak/s$$seed | tail -1; \
	  ls /tmp/tidemark-soak/s$$seed-*.sh >/dev/null 2>&1 && failed=1; \
	done; exit $$failed

clean:
	rm -rf .build
