#!/usr/bin/env bash
# fuzz.sh runs every native fuzz target in the module for a short budget each (default 5s; make test uses 2s).
#
# Each package with fuzz targets is compiled once, with fuzzing instrumentation
# (go test -c -fuzz=.), and its targets run from that binary, in the package's directory (for
# testdata) with the go command's fuzz cache (the corpus of earlier runs). This avoids relinking
# the test binary for every target, which used to dominate the step's wall time.
#
# Both phases use every core the way `go test -p` does: JOBS binaries are built at once, then JOBS
# targets fuzz at once, each with one fuzzing worker (-test.parallel=1). A target gets the same
# budget as before with one worker instead of GOMAXPROCS of them; on 2 cores the step takes half
# the wall time of fuzzing the targets one after another with two workers each.
#
#   scripts/fuzz.sh [budget] [package pattern ...]     e.g. scripts/fuzz.sh 2s ./internal/oip/...
#   JOBS=1 scripts/fuzz.sh 30s                          one target at a time, GOMAXPROCS workers
set -euo pipefail
cd "$(dirname "$0")/.."
budget=${1:-5s}
shift || true
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)
jobs=${JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}
parallel=1
[ "$jobs" = 1 ] && parallel=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
cache=$(go env GOCACHE)/fuzz
start=$SECONDS

# run_target fuzzes one target, its output in $bin/<exe>.<target>.out. The fuzzing coordinator
# sometimes ends a short run with a bare "context deadline exceeded" and no failing input: a race
# in the coordinator's handling of the -fuzztime deadline (go.dev/issue/75804, fixed in Go 1.27),
# not a finding. Such a run is retried up to twice (make test hit it twice in a row on one target
# with the unraced tests running beside it); a third one, or any run that wrote a failing input,
# fails. Minimizing an input is capped at 3 s (Go's default is 60 s): at a 2 s budget a run could
# otherwise spend its whole time, and more, shrinking one new input instead of fuzzing.
run_target() {
	local exe=$1 dir=$2 target=$3 pkg=$4 out=$1.$3.out try
	for try in 1 2 3; do
		if (cd "$dir" && "$exe" -test.run='^$' -test.fuzz="^${target}\$" -test.fuzztime="$budget" \
			-test.parallel="$parallel" -test.fuzzminimizetime=3s -test.fuzzcachedir="$cache/$pkg" >"$out" 2>&1); then
			return 0
		fi
		if [ "$try" -lt 3 ] && grep -q 'context deadline exceeded' "$out" && ! grep -q 'Failing input written' "$out"; then
			echo "fuzz: $pkg $target: harness timeout without a failing input; retrying (try $try of 3)"
			continue
		fi
		return 1
	done
	return 1
}

# Phase 1: the packages with fuzz targets, and their instrumented test binaries, JOBS at a time.
list=$bin/targets
: >"$list"
builds=()
while read -r pkg dir; do
	targets=$(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u || true)
	[ -n "$targets" ] || continue
	exe="$bin/$(echo "$pkg" | tr / _).test"
	for target in $targets; do echo "$exe $dir $target $pkg" >>"$list"; done
	builds+=("$pkg $exe")
done < <(go list -f '{{.ImportPath}} {{.Dir}}' "${pkgs[@]}")
# -ldflags=-s -w: no symbol table or DWARF, which linking 25 binaries spent most of its time on;
# a failing input still prints its panic's stack (from the runtime's own tables).
printf '%s\n' "${builds[@]}" | xargs -P "$jobs" -L 1 sh -c 'go test -c -fuzz=. -ldflags="-s -w" -o "$1" "$0"'
echo "fuzz: built ${#builds[@]} instrumented test binaries in $((SECONDS - start)) s"

# Phase 2: the targets, JOBS at a time; a target's output is printed only when it fails.
n=0
failed=()
pids=()
names=()
reap() { # waits for the oldest running target
	local p=${pids[0]} name=${names[0]}
	pids=("${pids[@]:1}")
	names=("${names[@]:1}")
	if ! wait "$p"; then
		set -- $name
		cat "$1.$3.out"
		echo "fuzz: $4 $3 FAILED (a failing input is saved under $2/testdata/fuzz/$3)"
		failed+=("$4.$3")
	fi
}
while read -r exe dir target pkg; do
	[ ${#pids[@]} -lt "$jobs" ] || reap
	echo "fuzz $pkg $target ($budget)"
	run_target "$exe" "$dir" "$target" "$pkg" &
	pids+=($!)
	names+=("$exe $dir $target $pkg")
	n=$((n + 1))
done <"$list"
while [ ${#pids[@]} -gt 0 ]; do reap; done
if [ ${#failed[@]} -gt 0 ]; then
	echo "fuzz: ${#failed[@]} of $n targets FAILED in $((SECONDS - start)) s: ${failed[*]}"
	exit 1
fi
echo "fuzz: all $n targets passed in $((SECONDS - start)) s"
