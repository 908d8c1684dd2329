# evloop: how to work on it. `make demo` and `make test` are the two set-up commands.
CARGO ?= cargo
EXAMPLES_DIR := runtime/examples

.PHONY: all test demo bench bench-quick lint doc fmt clean

all: test

## test: every unit, integration and syscall-level test (prints cargo's summaries)
test:
	$(CARGO) test --workspace --all-targets
	$(CARGO) test --workspace --doc

## demo: the source documents' programs in trace mode (EVLOOP_TRACE=1), then the echo server under load
demo:
	$(CARGO) build --release -p evloop --examples
	@./scripts/demo.sh

## bench-quick: the micro-benchmarks of spawn / wake / call_soon / memory per task (about a minute)
bench-quick:
	$(CARGO) run --release -p evloop-tests --no-default-features --example bench_quick

## bench: everything bench-quick does (the side-by-side suite grows here)
bench: bench-quick

## lint: formatting and clippy, warnings are errors
lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## doc: the API docs (the book is docs/*.md)
doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps

fmt:
	$(CARGO) fmt --all

clean:
	$(CARGO) clean
