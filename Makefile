# Vigil — the two commands: `make run` and `make test`. Both install what is missing first.
SHELL := /bin/bash
.DEFAULT_GOAL := run

# Debian packages: Tauri's build libraries, then what running and testing under Xvfb needs.
BUILD_PKGS := build-essential pkg-config file curl libssl-dev libxdo-dev libwebkit2gtk-4.1-dev \
  libgtk-3-dev libsoup-3.0-dev librsvg2-dev libayatana-appindicator3-dev libdbus-1-dev
# bubblewrap: the sandbox the agent's commands run in (Settings → Approvals); slirp4netns:
# its network, when a run may have one (user-mode, without the host's loopback).
RUN_PKGS := xvfb xauth dbus dbus-x11 dunst libnotify-bin bubblewrap slirp4netns
# gnome-keyring + libsecret-tools: a real Secret Service (and a reader for it) on a private
# bus, where the keyring test stores the provider key and an MCP secret.
TEST_PKGS := webkit2gtk-driver imagemagick x11-apps xdotool procps python3 python3-dbus python3-gi \
  dbus-daemon gnome-keyring libsecret-tools

TAURI_DRIVER_VERSION := 2.1.0
CARGO_FUZZ_VERSION := 0.13.2
FUZZ_TARGETS := sse transcript heartbeat_tasks schedule
# Seconds per fuzz target: a short run in `make test`, `make fuzz-long` for the real thing.
FUZZ_SECONDS ?= 15
APP_BIN := target/debug/vigil

.PHONY: run test deps-run deps-test npm-deps ui app tools test-core test-ui test-e2e check-core-boundary fmt bench bench-app test-load crash fuzz fuzz-long bundle bundle-test test-app sandbox-compare check-circles lint

## Install what is missing, build the UI and the app, open the Vigil window.
run: deps-run ui app
	@if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ]; then exec ./$(APP_BIN); \
	else echo "No display found: starting Vigil under Xvfb (screen :99 is virtual)."; \
	  exec xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- ./$(APP_BIN); fi

## Install what is missing and run every test: unit, integration, UI, end-to-end.
test: deps-test fmt-check check-circles test-core check-core-boundary fuzz test-ui ui app test-app test-e2e

deps-run:
	@scripts/apt-install-missing.sh $(BUILD_PKGS) $(RUN_PKGS)
	@$(MAKE) --no-print-directory npm-deps

deps-test:
	@scripts/apt-install-missing.sh $(BUILD_PKGS) $(RUN_PKGS) $(TEST_PKGS)
	@$(MAKE) --no-print-directory npm-deps tools

# `npm ci` fails against this machine's registry mirror (see TAURI-ON-THIS-MACHINE.md);
# `npm install` with the committed lock installs the locked versions.
npm-deps:
	@if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then \
	  npm install --no-audit --no-fund; fi

tools:
	@command -v tauri-driver >/dev/null || cargo install tauri-driver --locked --version $(TAURI_DRIVER_VERSION)

ui:
	npm run --silent ui:build

# Always the same feature set, or the tauri crates rebuild. vigil-sandbox (the sandbox's zygote,
# found beside the app's binary) in the same run: the same vigil-core, no second build of it.
app:
	cargo build -p vigil -p vigil-core --bin vigil --bin vigil-sandbox --features vigil/custom-protocol

fmt-check:
	cargo fmt --all -- --check

test-core:
	cargo test -p vigil-protocol -p vigil-core -p vigil-fake-llm

# The desktop shell's own unit tests (the tray's menu); the same features as `app`.
test-app:
	cargo test -p vigil --features custom-protocol --lib

check-core-boundary:
	@scripts/check-core-boundary.sh

# No import circles between core's modules (nor src-tauri's files); the self-test plants one
# in a temp tree first, so a check that finds nothing cannot pass for a blind one.
check-circles:
	@python3 scripts/check-circles.py --self-test
	@python3 scripts/check-circles.py

# clippy over every crate and target, warnings as errors (not in `make test`: a second full
# check of the workspace would add minutes to every fresh CI run on 2 cores).
lint:
	cargo clippy --workspace --all-targets -- -D warnings

test-ui:
	npm run --silent ui:check
	npm run --silent ui:test

## Crash safety, the long run: 1 000 SIGKILLs at random moments (`make test` runs 20).
crash:
	VIGIL_CRASH_KILLS=1000 cargo test -p vigil-core --test all sigkill_at_random_moments -- --nocapture

## Fuzzing (nightly, from the machine's toolchain): every target for FUZZ_SECONDS each.
fuzz:
	@command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked --version $(CARGO_FUZZ_VERSION)
	@scripts/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

## The long fuzz run reported in issue notes: 10 million executions per target.
fuzz-long:
	$(MAKE) fuzz FUZZ_RUNS=10000000

## The installable .deb (release build through the Tauri bundler; nothing is downloaded),
## in $(CARGO_TARGET_DIR or target)/release/bundle/deb/.
bundle: deps-run ui
	cargo build --release -p vigil-core --bin vigil-sandbox
	install -D $${CARGO_TARGET_DIR:-target}/release/vigil-sandbox src-tauri/binaries/vigil-sandbox
	TAURI_APP_PATH=src-tauri npx tauri build --bundles deb --ci
	@ls -l $${CARGO_TARGET_DIR:-target}/release/bundle/deb/*.deb

## Installs that .deb on this machine, starts the installed Vigil under Xvfb and checks that
## its window comes up; prints the .deb's size. Not part of `make test` (a release build).
bundle-test: bundle deps-test
	scripts/bundle-test.sh

## Benchmarks: each prints a ratio against a baseline measured in the same run.
bench:
	cargo bench -p vigil-core --bench core
	cargo bench -p vigil-core --bench exec_throughput
	cargo bench -p vigil-core --bench trust
	cargo bench -p vigil-core --bench continuation
	cargo bench -p vigil-core --bench mcp
	cargo bench -p vigil-core --bench images
	cargo bench -p vigil-core --bench history
	cargo bench -p vigil-core --bench channels
	cargo bench -p vigil-core --bench triggers
	@$(MAKE) --no-print-directory bench-app

## The desktop app against an empty Tauri v2 window built the same way (bench/empty-window,
## one cargo run so both link the same tauri): launch to interactive and idle PSS, as ratios.
bench-app: deps-test ui
	cargo build --release -p vigil -p vigil-empty-window -p vigil-core --bin vigil --bin vigil-empty-window --bin vigil-sandbox --features vigil/custom-protocol,vigil-empty-window/custom-protocol
	xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- node scripts/bench-app.mjs

## Issue 30's comparison (not in `make test`): the walls' reachability probe in Vigil's three
## sandboxes, in `codex sandbox` and in `srt`, printed side by side. The peers are installed
## here only, at the versions locked in bench/sandbox-compare/, into the target folder; srt
## needs socat and ripgrep on Linux.
sandbox-compare:
	@scripts/apt-install-missing.sh bubblewrap slirp4netns python3 socat ripgrep
	@d=$${CARGO_TARGET_DIR:-target}/sandbox-compare; mkdir -p $$d; \
	  if [ ! -d $$d/node_modules ] || ! cmp -s bench/sandbox-compare/package-lock.json $$d/package-lock.json; then \
	    cp bench/sandbox-compare/package.json bench/sandbox-compare/package-lock.json $$d/ && \
	    (cd $$d && npm ci --no-audit --no-fund); fi
	d=$$(realpath $${CARGO_TARGET_DIR:-target}/sandbox-compare); \
	  VIGIL_COMPARE_CODEX=$$d/node_modules/.bin/codex VIGIL_COMPARE_SRT=$$d/node_modules/.bin/srt \
	  cargo test -p vigil-core --test all sandbox_compare -- --ignored --nocapture

test-e2e:
	cargo build -p vigil-fake-llm -p vigil-fake-phone
	scripts/e2e.sh

## Load through the real window (not in `make test`: its bounds are timings): a 10 000-message
## conversation, 50 terminals streaming at once, 1 000 routines; frame gaps and event rates.
test-load: deps-test ui app
	cargo build -p vigil-fake-llm -p vigil-fake-phone
	scripts/e2e.sh tests/e2e/load.test.mjs
