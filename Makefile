# evloop: how to work on it. `make demo` and `make test` are the two set-up commands.
CARGO ?= cargo
EXAMPLES_DIR := runtime/examples
BENCH_VENV := .bench-venv
BENCH_PY := $(BENCH_VENV)/bin/python
BENCH := $(or $(CARGO_TARGET_DIR),target)/release/examples/bench

.PHONY: all test demo bench bench-quick bench-build bench-venv bench-instr bench-instr-gate bench-instr-baseline \
	lint cross-check minimal-versions doc doc-coverage book book-traces fault-matrix valgrind publish-check fmt clean miri \
	sim-bugs sim-speed

all: test

## test: every unit, integration and syscall-level test (prints cargo's summaries)
test:
	$(CARGO) test --workspace --all-targets
	$(CARGO) test --workspace --doc

## demo: the seed programs (Rust versions of the Python asyncio programs evloop was designed from) in trace
## mode (EVLOOP_TRACE=1), children and signals, then the echo server under load
demo:
	$(CARGO) build --release -p evloop --examples
	@./scripts/demo.sh

## bench-quick: a two-minute subset of `make bench` (the CI smoke test), written to target/bench-quick.md
bench-quick: bench-build bench-venv
	$(BENCH) --quick

## bench: evloop side by side with tokio, smol, a raw epoll loop, asyncio and uvloop (about 12 minutes);
## writes docs/benchmarks.md and docs/bench/*.svg
bench: bench-build bench-venv
	$(BENCH)

## bench-instr: user-space instructions per operation under callgrind (valgrind), evloop and the Rust
## peers, each case run twice with different amounts of work (about 5 minutes); writes the
## "Instructions per operation" section of docs/benchmarks.md and docs/bench/instructions.tsv
bench-instr: bench-build
	$(BENCH) instr

## bench-instr-gate: the CI regression gate: a few evloop cases under callgrind (some ten seconds),
## failing when one costs more than 5% above docs/bench/instructions-baseline.tsv
bench-instr-gate: bench-build
	$(BENCH) instr --gate

## bench-instr-baseline: measure the gate's cases and rewrite docs/bench/instructions-baseline.tsv;
## commit it with a message that says why the figures changed
bench-instr-baseline: bench-build
	$(BENCH) instr --baseline

## bench-build: the peers, the load client and the harness in release mode; the tests crate WITHOUT
## its default fault-injection feature, so the measured runtime carries no injection checks, and
## with bench-internals (the runtime's hidden `fiber::bench`, for `peer_fiber raw_switch`)
bench-build:
	$(CARGO) build --release -p evloop --examples
	$(CARGO) build --release -p evloop-tests --no-default-features --features bench-internals --examples
	$(CARGO) build --release -p evloop-hyper --example hyper_hello --example hyper_hello_tokio

## bench-venv: a virtual environment with uvloop and greenlet for the Python peers ($(BENCH_VENV)/, gitignored).
## Never fails: without venv or pip (offline), asyncio runs on python3 and uvloop and greenlet show as n/a.
bench-venv:
	@if [ ! -x $(BENCH_PY) ]; then \
		python3 -m venv $(BENCH_VENV) || echo "bench-venv: cannot create $(BENCH_VENV): uvloop will show as n/a"; \
	fi
	@if [ -x $(BENCH_PY) ] && ! $(BENCH_PY) -c 'import uvloop' 2>/dev/null; then \
		$(BENCH_PY) -m pip install --quiet --disable-pip-version-check --timeout 20 --retries 1 uvloop \
			|| echo "bench-venv: pip could not install uvloop (offline?): uvloop will show as n/a"; \
	fi
	@if [ -x $(BENCH_PY) ] && ! $(BENCH_PY) -c 'import greenlet' 2>/dev/null; then \
		$(BENCH_PY) -m pip install --quiet --disable-pip-version-check --timeout 20 --retries 1 greenlet \
			|| echo "bench-venv: pip could not install greenlet (offline?): greenlet will show as n/a"; \
	fi

## lint: formatting and clippy, warnings are errors
lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## miri: the raw task cell's own tests (every test under event_loop::raw_task: raw_task/tests.rs,
## and raw_task/state.rs, with the macros' pin projection; the cell is the runtime's unsafe
## module) under Miri: Stacked Borrows,
## then Tree Borrows with strict provenance, then thread interleavings of the cross-thread waker
## test under 16 seeds. Installs a nightly toolchain with Miri through rustup when it is missing.
MIRI_TESTS := event_loop::raw_task
miri:
	@rustup run nightly cargo miri --version >/dev/null 2>&1 || rustup toolchain install nightly --profile minimal -c miri
	$(CARGO) +nightly miri test -p evloop --lib $(MIRI_TESTS)
	MIRIFLAGS="-Zmiri-tree-borrows -Zmiri-strict-provenance" $(CARGO) +nightly miri test -p evloop --lib $(MIRI_TESTS)
	MIRIFLAGS="-Zmiri-many-seeds=0..16" $(CARGO) +nightly miri test -p evloop --lib $(MIRI_TESTS)::tests::wakers

## cross-check: the runtime crates built for aarch64 (the other supported architecture: its raw
## syscall entry and fiber switch are separate assembly); the target's standard library installs
## through rustup when missing. A library build assembles the global_asm!, no linker needed.
cross-check:
	@rustup target list --installed 2>/dev/null | grep -qx aarch64-unknown-linux-gnu || rustup target add aarch64-unknown-linux-gnu
	$(CARGO) build --target aarch64-unknown-linux-gnu -p evloop-syscalls -p evloop-timers -p evloop --lib

## minimal-versions: every crate checked with its dependencies at the minimums the manifests declare
## (nightly `-Z direct-minimal-versions`, in a copy under target/minimal-versions; the lockfile is
## not touched), and the runtime crates with the declared rust-version (1.85); both toolchains
## install through rustup when missing (scripts/minimal-versions.sh)
minimal-versions:
	CARGO=$(CARGO) scripts/minimal-versions.sh

## doc: the API docs (the book is docs/*.md)
doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps

## doc-coverage: rustdoc's table of documented public items and items with an example (nightly
## `--show-coverage`, installed through rustup when missing); fails below 90% with an example
doc-coverage:
	CARGO=$(CARGO) scripts/doc-coverage.sh

## book: the book (docs/) as HTML with mdBook, into target/book/. Without mdbook it says how to get
## it and installs nothing: the Markdown in docs/ reads fine on its own (start at docs/README.md).
book:
	@if command -v mdbook >/dev/null 2>&1; then \
		mdbook build docs && echo "book: open target/book/index.html"; \
	else \
		echo "book: mdbook is not installed. Install it with:  cargo install mdbook"; \
		echo "book: or read the Markdown as it is: docs/README.md is the table of contents."; \
	fi

## book-traces: rerun every program the book quotes and rewrite each quoted trace that no longer
## matches (tests/tests/book_traces.rs in update mode); read the diff before committing it
book-traces:
	BOOK_TRACES=update $(CARGO) test -p evloop-tests --test book_traces -- --nocapture

## fault-matrix: fail each hot-path system call with each errno its man page lists, under a
## workload (echo server and clients, datagrams, pipes, children, timers, a remote wake-up), and
## rewrite docs/fault-matrix.md with the outcomes (tests/tests/fault_matrix.rs in update mode;
## `make test` runs the same matrix and fails when the table is stale). Read the diff.
fault-matrix:
	EVLOOP_FAULT_MATRIX=update $(CARGO) test -p evloop-tests --test fault_matrix -- --nocapture

## sim-bugs: the simulation's bug-finding proof (scripts/sim-reintroduce.sh): puts back, one at a
## time in a scratch copy under $TMPDIR, each outside-found bug of scripts/sim-bugs/*.patch, runs
## the simulated tests its header names with up to 1,000 seeds, and prints per bug: found or not,
## the seed, the shrunk schedule (docs/13-simulation.md, 13.9). A few minutes per bug on 2 CPUs.
sim-bugs:
	CARGO=$(CARGO) scripts/sim-reintroduce.sh

## sim-speed: the simulated kernel's speed, simulated seconds and echo round trips per wall second
## (tests/examples/sim_speed.rs; docs/benchmarks.md, "Simulated kernel speed")
sim-speed:
	$(CARGO) run --release -p evloop-tests --example sim_speed

## sim-mutation: the mutation run of issue 22 (scripts/mutation.sh): a seeded sample of
## cargo-mutants' mutants of the reactor and the stream transport, each built once in a scratch
## copy under $TMPDIR and run by the simulation suite and by the plain tests of the same files;
## prints both kill rates (docs/13-simulation.md, 13.11). About a minute per mutant on 2 CPUs.
## MUTANTS=n and MUTATION_SEED=s choose the sample.
.PHONY: sim-mutation
sim-mutation:
	scripts/mutation.sh -n $(or $(MUTANTS),100) -s $(or $(MUTATION_SEED),22)

## valgrind: every test binary of the workspace under memcheck (scripts/valgrind.sh), one per CPU
## at a time: any memcheck error or definitely lost block fails it. Children are watched by
## waiter threads there (valgrind 3.19 does not know pidfd_open), so the tests that spawn them
## run too. Skipped: the syscall layer's pidfd wrapper tests (`processes`) and book_traces (its
## programs run outside valgrind); the script's header says why (docs/valgrind.md). Logs in target/valgrind/. About 6 minutes on 2 CPUs; CI runs it.
valgrind:
	CARGO=$(CARGO) scripts/valgrind.sh

## publish-check: `cargo publish --dry-run` of every published crate (evloop-timers, evloop-syscalls,
## evloop-macros, evloop): each is packaged and built from its package, with the unpublished path
## dependencies served from a local overlay. It needs the registry index (for libc and
## static_assertions); where that cannot be reached it says so and skips instead of failing.
publish-check:
	@out=$$($(CARGO) publish --dry-run --allow-dirty --workspace --exclude evloop-tests 2>&1); status=$$?; \
	printf '%s\n' "$$out" | tail -n 40; \
	if [ $$status -ne 0 ]; then \
		if printf '%s\n' "$$out" | grep -qiE 'failed to (download|query|get|load|update)|network|resolve host|timed out|offline'; then \
			echo "publish-check: skipped: the registry index cannot be reached from here"; \
		else \
			echo "publish-check: FAILED"; exit $$status; \
		fi; \
	else \
		echo "publish-check: evloop-timers, evloop-syscalls, evloop-macros and evloop package and build"; \
	fi

fmt:
	$(CARGO) fmt --all

clean:
	$(CARGO) clean
