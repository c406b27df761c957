#!/usr/bin/env bash
# setup.sh fetches what sloserve needs beyond the Go module proxy, idempotently, into ignored
# cache folders under .cache/. Usage: scripts/setup.sh [ort] [dataset] [promtool] [staticcheck]  (default: ort)
#   ort      ONNX Runtime's libonnxruntime.so from the npm tarball of onnxruntime-node
#            (npm pack runs no install script) -> .cache/onnxruntime/libonnxruntime.so
#   dataset  Debian's dataset-fashion-mnist (the full 70k images), needed only by 'make models'
#   promtool Debian's prometheus package (promtool and prometheus), needed by 'make promtool' /
#            'make prom-check': test/observability checks deploy/observability with promtool
#            (skipped without it) and scripts/prom-check.sh runs a real Prometheus. A no-op when
#            both are on PATH.
#   staticcheck  honnef.co/go/tools/cmd/staticcheck at STATICCHECK_VERSION (go install from the Go
#            module proxy) -> ${SLOSERVE_TOOLS:-.cache/tools}/staticcheck-<version>/staticcheck;
#            needed by 'make test'. A present binary of that version is a no-op.
set -euo pipefail
cd "$(dirname "$0")/.."
ORT_VERSION=1.30.0
# The newest staticcheck the proxy serves that supports go.mod's Go version (go 1.26.0):
# v0.8.2 (2026.2.2) requires go 1.26.0. The Makefile reads this line.
STATICCHECK_VERSION=v0.8.2
CACHE=.cache
TOOLS=${SLOSERVE_TOOLS:-$CACHE/tools}

want=("$@")
[ ${#want[@]} -eq 0 ] && want=(ort)

fetch_ort() {
	local dir="$CACHE/onnxruntime" lib="$CACHE/onnxruntime/libonnxruntime.so"
	if [ -s "$lib" ] && [ "$(cat "$dir/VERSION" 2>/dev/null)" = "$ORT_VERSION" ]; then
		return 0
	fi
	if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
		echo "setup: no bundled ONNX Runtime for $(uname -s)-$(uname -m); set ONNXRUNTIME_LIB (the native runtime works without it)" >&2
		return 0
	fi
	if ! command -v npm >/dev/null; then
		echo "setup: npm not found; skipping ONNX Runtime (set ONNXRUNTIME_LIB, or use the native runtime)" >&2
		return 0
	fi
	mkdir -p "$dir"
	local tmp
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' RETURN
	echo "setup: fetching onnxruntime-node@$ORT_VERSION (npm pack, ~114 MB, no scripts run)" >&2
	(cd "$tmp" && npm pack --silent "onnxruntime-node@$ORT_VERSION" >/dev/null)
	tar -xzf "$tmp"/onnxruntime-node-*.tgz -C "$tmp" package/bin/napi-v6/linux/x64/libonnxruntime.so.1
	mv "$tmp/package/bin/napi-v6/linux/x64/libonnxruntime.so.1" "$lib"
	echo "$ORT_VERSION" >"$dir/VERSION"
}

fetch_dataset() {
	if [ -d /usr/share/datasets/fashion-mnist ] || [ -n "${FASHION_MNIST_DIR:-}" ]; then
		return 0
	fi
	if [ "$(id -u)" -ne 0 ]; then
		echo "setup: run 'sudo apt-get install dataset-fashion-mnist' (or set FASHION_MNIST_DIR)" >&2
		return 1
	fi
	apt-get update -qq && apt-get install -y -qq dataset-fashion-mnist >/dev/null
}

fetch_promtool() {
	if command -v promtool >/dev/null && command -v prometheus >/dev/null; then
		return 0
	fi
	if [ "$(id -u)" -ne 0 ]; then
		echo "setup: run 'sudo apt-get install prometheus' (promtool and prometheus for deploy/observability checks)" >&2
		return 1
	fi
	if ! command -v apt-get >/dev/null; then
		echo "setup: no apt-get; install promtool and prometheus from https://prometheus.io/download/" >&2
		return 1
	fi
	echo "setup: installing Debian's prometheus (promtool, prometheus)" >&2
	apt-get install -y -qq prometheus >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq prometheus >/dev/null; }
}

fetch_staticcheck() {
	local dir="$TOOLS/staticcheck-$STATICCHECK_VERSION"
	if [ -x "$dir/staticcheck" ]; then
		return 0
	fi
	mkdir -p "$dir"
	echo "setup: go install honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION (~75 s cold on 2 cores)" >&2
	GOBIN="$(cd "$dir" && pwd)" go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
}

for w in "${want[@]}"; do
	case "$w" in
	ort) fetch_ort ;;
	dataset) fetch_dataset ;;
	promtool) fetch_promtool ;;
	staticcheck) fetch_staticcheck ;;
	*) echo "setup: unknown part $w (want: ort, dataset, promtool, staticcheck)" >&2; exit 2 ;;
	esac
done
