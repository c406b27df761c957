#!/usr/bin/env bash
# fuzz.sh runs every native fuzz target in the module for a short budget each (default 5s).
set -euo pipefail
cd "$(dirname "$0")/.."
budget=${1:-5s}
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
		echo "fuzz $pkg $target ($budget)"
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$budget" "$pkg" >/dev/null
	done
done
echo "fuzz: all targets passed"
