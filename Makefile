# sloserve — the two commands a new machine needs are 'make demo' and 'make test'.
GO ?= go
ORT_LIB := $(CURDIR)/.cache/onnxruntime/libonnxruntime.so
export ONNXRUNTIME_LIB ?= $(if $(wildcard $(ORT_LIB)),$(ORT_LIB),)

.PHONY: demo test setup models fuzz bench vet build

build:
	$(GO) build ./...

setup:
	scripts/setup.sh ort

demo: setup
	ONNXRUNTIME_LIB=$${ONNXRUNTIME_LIB:-$(ORT_LIB)} $(GO) run ./cmd/sloserve demo

# test: vet, the whole suite with the race detector, and a short budget for every fuzz target.
test: setup
	$(GO) vet ./...
	ONNXRUNTIME_LIB=$${ONNXRUNTIME_LIB:-$(ORT_LIB)} $(GO) test -race -timeout 20m ./...
	scripts/fuzz.sh 5s

fuzz:
	scripts/fuzz.sh 30s

# models re-trains the bundled models on the full Fashion-MNIST (Debian dataset-fashion-mnist).
models:
	scripts/setup.sh dataset
	$(GO) run ./cmd/sloserve train --out models

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
