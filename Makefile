# runner: build, test and lint. `make help` lists the targets.
GO      ?= go
BIN     ?= bin/runner
PKGS    := ./...
# A pipe fails when any command in it fails: `go test -json | testprogress` fails with go test.
SHELL       := bash
.SHELLFLAGS := -o pipefail -ec
# The production binary carries no symbol table or DWARF: half the size, and panics still show
# file:line stacks.
LDFLAGS ?= -s -w
# testprogress prints each package's line as it finishes, and which are still running.
PROGRESS := $(GO) run ./.ci/testprogress
# The packages that run goroutines of their own: the client's streams and load loops, the
# server supervisor and its guard, the orchestration, the GPU sampler and the simulator.
RACE_PKGS := ./runner/internal/measure ./runner/internal/sse ./runner/internal/engine \
	./runner/internal/orchestrate ./runner/internal/telemetry ./runner/internal/sim

.PHONY: help build test test-race test-engine test-short test-k8s lint fmt bench bench-large bench-load ollama model demo demo-load sim-demo sim-load

help: ## list the targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/runner
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./runner

test: ## run the test suite (minutes): every package, the simulator end to end; not the real engine
	$(GO) test -json -count=1 -timeout 20m $(PKGS) | $(PROGRESS)

test-race: ## run the tests of the packages with goroutines of their own under the race detector (minutes)
	$(GO) test -race -json -count=1 -timeout 30m $(RACE_PKGS) | $(PROGRESS)

test-engine: ollama ## run the tests that boot the real CPU engine (builds it first)
	RUNNER_ENGINE_TESTS=1 $(GO) test -json -count=1 -timeout 20m -run '^TestCPUEngine' ./runner ./runner/internal/engine | $(PROGRESS)

test-short: ## run the fast unit tests only
	$(GO) test -short -count=1 $(PKGS)

test-k8s: ## decode the Kubernetes export strictly into the official k8s.io types (a module of its own)
	cd runner/internal/sched/k8scheck && $(GO) test -count=1 ./...

lint: ## check formatting and run go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS) ./.ci/testprogress

fmt: ## format the code
	gofmt -w $$(git ls-files '*.go')

bench: ## run the benchmarks and print their figures
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

bench-large: ## write a folder of 300,000 requests (9.9 M events) and print the peak memory, time and output size of summary, diff and report on it (minutes; RUNNER_LARGE_REQUESTS=N for another size)
	RUNNER_LARGE_REQUESTS=$${RUNNER_LARGE_REQUESTS:-300000} $(GO) test -run '^$$' -bench '^BenchmarkLargeFolder$$' -benchtime 1x -count 1 -timeout 60m -v ./runner/

bench-load: build ## drive 1, 64, 256 and 1024 streams against runner sim and print the client's figures
	RUNNER_BIN=$(abspath $(BIN)) $(GO) test -run '^$$' -bench '^BenchmarkLoad$$' -benchtime 1x -count 1 -timeout 15m ./runner/internal/measure/

ollama: ## build the pinned ollama (real CPU engine) into the user cache; no-op when present
	.ci/build-ollama.sh

model: build ## generate the tiny random-weight llama model bin/tiny.gguf
	@test -f bin/tiny.gguf || $(BIN) tinymodel bin/tiny.gguf

demo: build ollama model ## the main job on any machine: experiments/cpu-demo.yaml on the real CPU engine, then against its baseline
	$(BIN) experiments/cpu-demo.yaml
	@.ci/demo-compare.sh $(BIN) results

demo-load: build ollama model ## latency under load on the real CPU engine: experiments/cpu-load.yaml
	$(BIN) experiments/cpu-load.yaml

sim-demo: build ## run experiments/sim-smoke.yaml against the simulator (seconds, nothing to install)
	$(BIN) experiments/sim-smoke.yaml

sim-load: build ## a concurrency sweep against the simulator with continuous batching (seconds)
	$(BIN) experiments/sim-load.yaml
