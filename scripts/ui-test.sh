#!/usr/bin/env bash
# ui-test.sh drives the live dashboard (/ui) in headless Chromium: it installs Debian's chromium
# when missing (idempotent; ~70 s the first time, needs root or sudo), then runs the browser test,
# which checks that every chart renders with data and writes out/ui/dashboard.png.
set -euo pipefail
cd "$(dirname "$0")/.."

browser=${CHROMIUM:-}
if [ -z "$browser" ]; then
	for name in chromium chromium-browser google-chrome; do
		if command -v "$name" >/dev/null 2>&1; then browser=$(command -v "$name"); break; fi
	done
fi
if [ -z "$browser" ]; then
	echo "ui-test: installing Debian chromium"
	sudo=""
	if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
	browser=$(command -v chromium)
fi
echo "ui-test: $("$browser" --version 2>/dev/null || echo "$browser")"

mkdir -p out/ui
SLOSERVE_E2E_UI=1 CHROMIUM="$browser" go test -count=1 -v -run 'TestDashboardInChromium' ./test/e2e/ui/
echo "ui-test: screenshot at out/ui/dashboard.png"
