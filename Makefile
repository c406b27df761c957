# sloserve — the two commands a new machine needs are 'make demo' and 'make test'.
GO ?= go
ORT_LIB := $(CURDIR)/.cache/onnxruntime/libonnxruntime.so
export ONNXRUNTIME_LIB ?= $(if $(wildcard $(ORT_LIB)),$(ORT_LIB),)

.PHONY: demo serve bench-gateway test setup tools models fuzz bench vet build attack soak e2e-clients promtool prom-check test-defaults test-oraclegap

# Tools 'make test' runs, installed by scripts/setup.sh (which pins the version) into an ignored
# cache folder; SLOSERVE_TOOLS moves it.
export SLOSERVE_TOOLS ?= $(CURDIR)/.cache/tools
STATICCHECK_VERSION := $(shell sed -n 's/^STATICCHECK_VERSION=//p' scripts/setup.sh)
STATICCHECK := $(SLOSERVE_TOOLS)/staticcheck-$(STATICCHECK_VERSION)/staticcheck

# build: compile everything and write the binary to bin/sloserve with its version and commit
# (sloserve version) from git; a release sets VERSION=v1.2.3. Without the ldflags the binary reports
# the module version and VCS stamp of its build info.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

# cmd/sloserve/default.pgo is a CPU profile of the full scoreboard (`sloserve sim --scoreboard
# --json --no-cache --cpuprofile cmd/sloserve/default.pgo`, from the repository root): the Go
# toolchain builds the binary with profile-guided optimisation from it (-pgo=auto), the same
# code, about a tenth less CPU for the simulator (docs/scoreboard.md "Speed"). Test builds turn
# it off: the suite gains nothing from it and would compile every dependency a second time.
test e2e-k8s: export GOFLAGS += -pgo=off

build:
	$(GO) build ./...
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/sloserve ./cmd/sloserve

setup:
	scripts/setup.sh ort

tools:
	scripts/setup.sh staticcheck

demo: setup
	ONNXRUNTIME_LIB=$${ONNXRUNTIME_LIB:-$(ORT_LIB)} $(GO) run ./cmd/sloserve demo

# serve: every bundled model behind the gateway on 127.0.0.1:8080 until interrupted.
serve: setup
	ONNXRUNTIME_LIB=$${ONNXRUNTIME_LIB:-$(ORT_LIB)} $(GO) run ./cmd/sloserve serve

# bench-gateway: the gateway's added latency and throughput against a direct call and a plain proxy.
bench-gateway: setup
	ONNXRUNTIME_LIB=$${ONNXRUNTIME_LIB:-$(ORT_LIB)} $(GO) run ./cmd/sloserve bench gateway

# test: vet, go.mod/go.sum tidy, staticcheck, the whole suite, and a short budget for every fuzz
# target. Every package whose tests can run two goroutines runs under the race detector; the rest
# (the decision floors, the simulator, the experiments: tests on one goroutine, so the detector
# can report nothing) run without it, 5–10× faster. tools/racefree decides from the code
# (go statements, t.Parallel, network and process imports), so a package that starts a goroutine
# is raced again without an edit here; `go run ./tools/racefree -invert -v` says why each is.
# The unraced tests run beside the fuzz step, whose first half is linking instrumented binaries.
test: setup tools
	$(GO) vet ./...
	$(GO) mod tidy -diff
	$(STATICCHECK) ./...
	ONNXRUNTIME_LIB=$${ONNXRUNTIME_LIB:-$(ORT_LIB)} $(GO) test -race -timeout 20m $$($(GO) run ./tools/racefree -invert)
	@mkdir -p .cache
	ONNXRUNTIME_LIB=$${ONNXRUNTIME_LIB:-$(ORT_LIB)} $(GO) test -timeout 20m $$($(GO) run ./tools/racefree) >.cache/unraced.log 2>&1 & \
	pid=$$!; scripts/fuzz.sh 2s; fuzz=$$?; wait $$pid; unraced=$$?; \
	echo "--- the unraced tests (beside the fuzzing):"; cat .cache/unraced.log; \
	[ $$fuzz = 0 ] && [ $$unraced = 0 ]

fuzz:
	scripts/fuzz.sh 30s

# test-defaults re-chooses every tuned default (MArk's and sloserve's) with the tuner on the
# committed excerpts' tuning halves and fails when a committed default left the search's band
# (docs/scoreboard.md, "Which part each default was chosen on"); about a CPU-minute.
test-defaults:
	$(GO) test -tags defaults -count=1 -run 'DefaultsInSearchBand' -timeout 15m ./internal/experiment/

# test-oraclegap decomposes sloserve's gap to the oracle on the full Twitter day in MArk's
# setting: restricted oracles and one-knob sloserve runs on both parts (docs/scoreboard.md,
# "Where sloserve loses to the oracle on full parts"); about a CPU-minute, needs ../shared/data.
test-oraclegap:
	$(GO) test -tags oraclegap -count=1 -run TestOracleGap -v -timeout 15m ./internal/experiment/

# promtool installs Debian's prometheus (promtool, prometheus) when missing and checks the rules
# and dashboard of deploy/observability (go test skips that check when promtool is absent).
promtool:
	scripts/setup.sh promtool
	$(GO) test -count=1 ./test/observability/

# prom-check: a real Prometheus (1 s scrapes) against the gateway under 'sloserve load'; fails when
# its histogram_quantile(0.99) is more than 10 % off the load generator's p99 (docs/observability.md).
prom-check: promtool
	scripts/prom-check.sh

# models re-trains the bundled models on the full Fashion-MNIST (Debian dataset-fashion-mnist).
models:
	scripts/setup.sh dataset
	$(GO) run ./cmd/sloserve train --out models

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# e2e-clients runs scripts/conformance.sh: `sloserve serve` on loopback driven by grpcurl, curl in
# tritonclient's REST shapes and ghz (pinned, installed into .tools/bin on first use); every case
# answers as Triton would or is listed in docs/protocols.md.
e2e-clients:
	GO=$(GO) scripts/conformance.sh

# e2e-ui drives the live dashboard in headless Chromium (installs Debian chromium when missing).
e2e-ui:
	scripts/ui-test.sh

# e2e-k8s runs the kubernetes provider against a real control plane on 127.0.0.1 (built once and
# cached under $${SLOSERVE_CACHE:-~/.cache/sloserve}/k8s; see docs/kubernetes.md).
e2e-k8s:
	scripts/k8s-controlplane.sh run $(GO) test -tags e2e -count=1 -v -timeout 15m ./test/e2e/k8s/

# soak: bounded reliability runs (test/soak): 60 s at 10× capacity, then 2 min of real workers at
# 80 % of capacity with a random fault every 5 s; checks nothing is lost and nothing leaks.
soak:
	$(GO) build -o .cache/sloserve ./cmd/sloserve
	SLOSERVE_SOAK=1 SLOSERVE_BIN=$(CURDIR)/.cache/sloserve $(GO) test -count=1 -v -timeout 15m ./test/soak/

# attack: the adversarial suite (test/attack) against real workers on loopback: what one client can
# do to the others' requests (idle connection floods, oversized uploads, lock-out, poisoned batches,
# large requests, overload); each scenario bounded in time.
attack: setup
	$(GO) build -o .cache/sloserve ./cmd/sloserve
	ONNXRUNTIME_LIB=$${ONNXRUNTIME_LIB:-$(ORT_LIB)} SLOSERVE_ATTACK=1 SLOSERVE_BIN=$(CURDIR)/.cache/sloserve $(GO) test -count=1 -v -timeout 10m ./test/attack/
