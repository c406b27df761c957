#!/usr/bin/env bash
# k8s-controlplane.sh builds, caches, starts and stops a real Kubernetes control plane on 127.0.0.1
# for sloserve's e2e tests: kube-apiserver, kube-controller-manager and kube-scheduler built from the
# Go module proxy, Debian's etcd-server, and KWOK fake nodes (pods are scheduled and become Running,
# but no process runs; their pod IPs are loopback addresses, 127.0.1.0/24, so a test can start a
# real worker on a pod's address).
#
# Usage:
#   scripts/k8s-controlplane.sh build   # build and cache binaries (idempotent; cached by version)
#   scripts/k8s-controlplane.sh start   # build if needed, start everything, create fake nodes
#   scripts/k8s-controlplane.sh env     # print `export KUBECONFIG=...` for the running plane
#   scripts/k8s-controlplane.sh status  # show whether the plane is up
#   scripts/k8s-controlplane.sh stop    # stop everything started by `start`, remove its state dir
#   scripts/k8s-controlplane.sh run CMD...  # start (unless up), run CMD with KUBECONFIG set, then
#                                           # stop again if this call started it; exits with CMD's status
#
# Environment:
#   SLOSERVE_CACHE     cache root (default $HOME/.cache/sloserve); binaries go to $SLOSERVE_CACHE/k8s/
#   SLOSERVE_K8S_DIR   runtime state dir: certs, tokens, kubeconfig, logs, pids (default /tmp/sloserve-k8s)
#   SLOSERVE_K8S_PORT  kube-apiserver secure port (default 16443)
#   SLOSERVE_ETCD_PORT etcd client port (default 23790; peer port is +1)
#   SLOSERVE_K8S_NODES number of fake nodes (default 4; the odd ones are spot)
#   SLOSERVE_K8S_POD_CIDR the pods' IPs (default 127.0.1.0/24: loopback, so only this machine)
#   NICE               prefix for heavy builds (default "nice -n 19")
set -euo pipefail

K8S_VERSION=v1.36.3
STAGING_VERSION=v0.36.3
KWOK_VERSION=v0.8.0

CACHE_ROOT=${SLOSERVE_CACHE:-$HOME/.cache/sloserve}
CACHE=$CACHE_ROOT/k8s
K8S_DIR=$CACHE/kubernetes-$K8S_VERSION
K8S_BIN=$K8S_DIR/bin
KWOK_DIR=$CACHE/kwok-$KWOK_VERSION
STATE=${SLOSERVE_K8S_DIR:-/tmp/sloserve-k8s}
API_PORT=${SLOSERVE_K8S_PORT:-16443}
ETCD_PORT=${SLOSERVE_ETCD_PORT:-23790}
ETCD_PEER_PORT=$((ETCD_PORT + 1))
NODES=${SLOSERVE_K8S_NODES:-4}
POD_CIDR=${SLOSERVE_K8S_POD_CIDR:-127.0.1.0/24}
NICE=${NICE:-nice -n 19}

log() { echo "k8s-controlplane: $*" >&2; }
die() { log "error: $*"; exit 1; }

# staging_modules lists the staging modules k8s.io/kubernetes replaces with ./staging/src/... in its
# own go.mod; a consumer of the module must replace them with the published v0.x versions.
staging_modules() {
	local gomod
	gomod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
	[ -f "$gomod" ] || die "cannot download k8s.io/kubernetes@$K8S_VERSION go.mod"
	sed -n '/^replace (/,/^)/p' "$gomod" | awk '$2 == "=>" && $3 ~ /^\.\/staging/ {print $1}'
}

build_kubernetes() {
	if [ -x "$K8S_BIN/kube-apiserver" ] && [ -x "$K8S_BIN/kube-controller-manager" ] && [ -x "$K8S_BIN/kube-scheduler" ]; then
		log "kubernetes $K8S_VERSION cached in $K8S_BIN"
		return
	fi
	local src=$K8S_DIR/src
	mkdir -p "$src" "$K8S_BIN"
	if [ ! -f "$src/go.sum" ]; then
		log "writing build module in $src"
		{
			echo "module sloserve.local/k8sbuild"
			echo
			echo "go 1.26.0"
			echo
			echo "require k8s.io/kubernetes $K8S_VERSION"
			echo
			echo "replace ("
			staging_modules | while read -r m; do echo "	$m => $m $STAGING_VERSION"; done
			echo ")"
		} >"$src/go.mod.tmp"
		mv "$src/go.mod.tmp" "$src/go.mod"
		cat >"$src/tools.go" <<'EOF'
//go:build tools

// Package tools pins the control-plane commands this module builds.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
)
EOF
		log "go mod tidy (about 40 s)"
		(cd "$src" && GOFLAGS=-mod=mod $NICE go mod tidy)
	fi
	local cmd
	for cmd in kube-apiserver kube-controller-manager kube-scheduler; do
		if [ ! -x "$K8S_BIN/$cmd" ]; then
			log "building $cmd (cold kube-apiserver takes ~8 min on 2 cores)"
			(cd "$src" && $NICE go build -trimpath -o "$K8S_BIN/$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd")
			mv "$K8S_BIN/$cmd.tmp" "$K8S_BIN/$cmd"
		fi
	done
}

build_kwok() {
	if [ ! -x "$KWOK_DIR/bin/kwok" ]; then
		log "installing kwok $KWOK_VERSION"
		mkdir -p "$KWOK_DIR/bin"
		GOBIN=$KWOK_DIR/bin $NICE go install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
	fi
	if [ ! -s "$KWOK_DIR/stages.yaml" ]; then
		local dir
		dir=$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')
		[ -d "$dir" ] || die "cannot download sigs.k8s.io/kwok@$KWOK_VERSION sources for its stage files"
		local f first=1
		: >"$KWOK_DIR/stages.yaml.tmp"
		for f in "$dir"/kustomize/stage/node/fast/node-initialize.yaml \
			"$dir"/kustomize/stage/node/heartbeat/*.yaml \
			"$dir"/kustomize/stage/pod/fast/pod-ready.yaml \
			"$dir"/kustomize/stage/pod/fast/pod-complete.yaml \
			"$dir"/kustomize/stage/pod/fast/pod-delete.yaml; do
			[ -f "$f" ] || die "kwok stage file $f missing"
			[ $first = 1 ] || echo "---" >>"$KWOK_DIR/stages.yaml.tmp"
			first=0
			cat "$f" >>"$KWOK_DIR/stages.yaml.tmp"
		done
		mv "$KWOK_DIR/stages.yaml.tmp" "$KWOK_DIR/stages.yaml"
	fi
	log "kwok $KWOK_VERSION cached in $KWOK_DIR"
}

ensure_etcd() {
	if command -v etcd >/dev/null 2>&1; then
		return
	fi
	log "installing Debian etcd-server"
	if [ "$(id -u)" = 0 ]; then
		apt-get install -y etcd-server >/dev/null || { apt-get update >/dev/null && apt-get install -y etcd-server >/dev/null; }
	else
		sudo apt-get install -y etcd-server >/dev/null
	fi
	command -v etcd >/dev/null 2>&1 || die "etcd not found after installing etcd-server"
}

build() {
	command -v go >/dev/null || die "go not found"
	command -v openssl >/dev/null || die "openssl not found"
	ensure_etcd
	build_kwok
	build_kubernetes
}

# spawn NAME CMD... starts CMD in the background with its own log and pid file.
spawn() {
	local name=$1
	shift
	setsid "$@" >"$STATE/log/$name.log" 2>&1 </dev/null &
	echo $! >"$STATE/pid/$name"
}

running() {
	local f=$STATE/pid/$1
	[ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null
}

# api METHOD PATH [JSON] calls the API server as the admin; fails on an HTTP error.
api() {
	local token
	token=$(cat "$STATE/admin.token")
	if [ $# -ge 3 ]; then
		curl -sSfk -X "$1" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
			--data "$3" "https://127.0.0.1:$API_PORT$2"
	else
		curl -sSfk -X "$1" -H "Authorization: Bearer $token" "https://127.0.0.1:$API_PORT$2"
	fi
}

wait_for() { # wait_for DESCRIPTION SECONDS CMD...
	local what=$1 secs=$2 i
	shift 2
	for ((i = 0; i < secs * 5; i++)); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.2
	done
	die "timed out after ${secs}s waiting for $what (logs in $STATE/log)"
}

# nodes_ready succeeds when all fake nodes report the Ready condition (set by KWOK).
nodes_ready() {
	local n
	n=$(api GET /api/v1/nodes | grep -Eo '"reason": ?"KubeletReady"' | wc -l)
	[ "$n" -ge "$NODES" ]
}

create_nodes() {
	local i pool
	for ((i = 0; i < NODES; i++)); do
		if ((i % 2 == 1)); then pool=spot; else pool=on-demand; fi
		api POST /api/v1/nodes "$(
			cat <<EOF
{"apiVersion":"v1","kind":"Node","metadata":{"name":"kwok-node-$i",
 "annotations":{"kwok.x-k8s.io/node":"fake","node.alpha.kubernetes.io/ttl":"0"},
 "labels":{"kubernetes.io/hostname":"kwok-node-$i","kubernetes.io/os":"linux","kubernetes.io/arch":"amd64",
  "type":"kwok","sloserve.io/capacity-type":"$pool","sloserve.io/pool":"$pool"}},
 "spec":{"taints":$([ $pool = spot ] && echo '[{"key":"sloserve.io/spot","value":"true","effect":"NoSchedule"}]' || echo '[]')},
 "status":{"allocatable":{"cpu":"32","memory":"256Gi","pods":"110","nvidia.com/gpu":"4"},
  "capacity":{"cpu":"32","memory":"256Gi","pods":"110","nvidia.com/gpu":"4"}}}
EOF
		)" >/dev/null
	done
}

start() {
	build
	if running kube-apiserver; then
		log "already running (state in $STATE)"
		return
	fi
	command -v curl >/dev/null || die "curl not found"
	rm -rf "$STATE"
	mkdir -p "$STATE/log" "$STATE/pid" "$STATE/pki" "$STATE/etcd"
	openssl genrsa -out "$STATE/pki/sa.key" 2048 2>/dev/null
	openssl rsa -in "$STATE/pki/sa.key" -pubout -out "$STATE/pki/sa.pub" 2>/dev/null
	head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$STATE/admin.token"
	echo "$(cat "$STATE/admin.token"),admin,admin,system:masters" >"$STATE/tokens.csv"
	cat >"$STATE/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:$API_PORT
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: $(cat "$STATE/admin.token")
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
EOF

	spawn etcd etcd --name sloserve --data-dir "$STATE/etcd" \
		--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
		--initial-cluster "sloserve=http://127.0.0.1:$ETCD_PEER_PORT" --quota-backend-bytes 1073741824
	wait_for etcd 30 curl -sf "http://127.0.0.1:$ETCD_PORT/health"

	spawn kube-apiserver "$K8S_BIN/kube-apiserver" \
		--etcd-servers "http://127.0.0.1:$ETCD_PORT" \
		--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API_PORT" \
		--cert-dir "$STATE/pki" \
		--service-account-issuer https://kubernetes.default.svc \
		--service-account-key-file "$STATE/pki/sa.pub" \
		--service-account-signing-key-file "$STATE/pki/sa.key" \
		--token-auth-file "$STATE/tokens.csv" \
		--authorization-mode Node,RBAC \
		--service-cluster-ip-range 10.0.0.0/24 \
		--enable-priority-and-fairness=false \
		--feature-gates WatchList=false
	# /readyz includes the RBAC bootstrap-roles post-start hook.
	wait_for kube-apiserver 120 api GET /readyz

	spawn kube-controller-manager "$K8S_BIN/kube-controller-manager" \
		--kubeconfig "$STATE/kubeconfig" --leader-elect=false \
		--controllers '*,-serviceaccount-token' --bind-address 127.0.0.1 --secure-port 0 \
		--use-service-account-credentials=false
	spawn kube-scheduler "$K8S_BIN/kube-scheduler" \
		--kubeconfig "$STATE/kubeconfig" --leader-elect=false --bind-address 127.0.0.1 --secure-port 0
	# Debian's etcd 3.4.23 lacks the watch-progress requests that streaming watch-lists need;
	# with the API server's WatchList gate on, client-go in KWOK keeps asking for them and backs
	# off (pods then wait up to a minute to be seen). The gate is off above; this is belt and braces.
	spawn kwok env KUBE_FEATURE_WatchListClient=false "$KWOK_DIR/bin/kwok" \
		--kubeconfig "$STATE/kubeconfig" \
		--manage-all-nodes=false \
		--manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
		--node-ip 10.1.0.1 --cidr "$POD_CIDR" \
		--config "$KWOK_DIR/stages.yaml"
	create_nodes
	wait_for "fake nodes Ready" 60 nodes_ready
	log "up: KUBECONFIG=$STATE/kubeconfig ($NODES fake nodes; state and logs in $STATE)"
}

stop() {
	local name
	for name in kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
		if running "$name"; then
			kill "$(cat "$STATE/pid/$name")" 2>/dev/null || true
		fi
	done
	for name in kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
		local i
		for ((i = 0; i < 50; i++)); do running "$name" || break; sleep 0.2; done
		if running "$name"; then kill -9 "$(cat "$STATE/pid/$name")" 2>/dev/null || true; fi
	done
	rm -rf "$STATE"
	log "stopped"
}

status() {
	local name up=0
	for name in etcd kube-apiserver kube-controller-manager kube-scheduler kwok; do
		if running "$name"; then echo "$name running (pid $(cat "$STATE/pid/$name"))"; up=$((up + 1)); else echo "$name stopped"; fi
	done
	[ $up = 5 ]
}

run_with() {
	local started=0 rc=0
	if ! running kube-apiserver; then
		start
		started=1
	fi
	KUBECONFIG=$STATE/kubeconfig KUBE_FEATURE_WatchListClient=false "$@" || rc=$?
	if [ $started = 1 ]; then stop; fi
	return $rc
}

case "${1:-}" in
build) build ;;
run)
	shift
	[ $# -gt 0 ] || die "run: need a command"
	run_with "$@"
	;;
start) start ;;
stop) stop ;;
status) status ;;
env)
	[ -f "$STATE/kubeconfig" ] || die "not started (no $STATE/kubeconfig)"
	echo "export KUBECONFIG=$STATE/kubeconfig KUBE_FEATURE_WatchListClient=false"
	;;
*)
	echo "usage: $0 build|start|stop|status|env|run CMD..." >&2
	exit 2
	;;
esac
