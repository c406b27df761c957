#!/usr/bin/env bash
# conformance.sh checks that `sloserve serve` answers as Triton would the requests Triton's clients
# send: grpcurl (reflection, health, ModelInfer raw and typed, ModelConfig, ModelStatistics,
# repository, versions, deadlines), curl in tritonclient's REST shapes (JSON in/binary out with
# binary_data_output, binary in/binary out with Inference-Header-Content-Length, named outputs,
# versions, config, stats) and a short ghz run. It prints one table row per case and exits 1 when a
# case fails. Known differences from Triton are listed in docs/protocols.md ("Triton differences").
#
# Usage: scripts/conformance.sh            (make e2e-clients runs it)
# Needs: go, curl, jq, base64. grpcurl and ghz are installed, pinned, with `go install` into
# $TOOLS (default <repo>/.tools/bin, git-ignored) when missing; the gateway binary is built into
# $OUT (default a temporary directory). Everything listens on 127.0.0.1 only.
set -euo pipefail

GRPCURL_VERSION=v1.9.3
GHZ_VERSION=v0.120.0

root=$(cd "$(dirname "$0")/.." && pwd)
TOOLS=${TOOLS:-$root/.tools/bin}
OUT=${OUT:-$(mktemp -d -t sloserve-conformance.XXXXXX)}
GO=${GO:-go}
for tool in curl jq base64 "$GO"; do
	command -v "$tool" >/dev/null 2>&1 || { echo "conformance.sh: $tool not found" >&2; exit 2; }
done

# install puts a pinned tool in $TOOLS once; a second run finds it (idempotent).
install() { # name module version
	if [ -x "$TOOLS/$1" ] && [ "$(cat "$TOOLS/$1.version" 2>/dev/null)" = "$3" ]; then
		return
	fi
	mkdir -p "$TOOLS"
	echo "conformance.sh: installing $1 $3 into $TOOLS" >&2
	GOBIN="$TOOLS" "$GO" install "$2@$3"
	echo "$3" >"$TOOLS/$1.version"
}
install grpcurl github.com/fullstorydev/grpcurl/cmd/grpcurl "$GRPCURL_VERSION"
install ghz github.com/bojand/ghz/cmd/ghz "$GHZ_VERSION"
grpcurl="$TOOLS/grpcurl"
ghz="$TOOLS/ghz"

version=$(git -C "$root" describe --tags --always --dirty 2>/dev/null || echo devel)
(cd "$root" && "$GO" build -ldflags "-X main.version=$version" -o "$OUT/sloserve" ./cmd/sloserve)

cat >"$OUT/serve.yaml" <<EOF
gateway:
  addr: 127.0.0.1:0
  grpc_addr: 127.0.0.1:0
workers:
  binary: $OUT/sloserve
  runtime: native
  state_dir: $OUT/state
controller:
  policy: none
models:
  - name: logreg
    instances: 1
    max_rows: 64
    batching: {policy: fixed, max_batch: 16, max_wait: 2ms}
EOF

"$OUT/sloserve" serve --config "$OUT/serve.yaml" --log-level warn >"$OUT/serve.out" 2>"$OUT/serve.err" &
pid=$!
cleanup() {
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}
trap cleanup EXIT
url="" grpc=""
for _ in $(seq 1 900); do
	url=$(sed -n 's/^sloserve gateway listening on \([^ ]*\).*/\1/p' "$OUT/serve.out")
	grpc=$(sed -n 's/^OIP v2 gRPC on //p' "$OUT/serve.out")
	[ -n "$url" ] && [ -n "$grpc" ] && break
	kill -0 "$pid" 2>/dev/null || { echo "conformance.sh: serve exited:" >&2; cat "$OUT/serve.err" >&2; exit 1; }
	sleep 0.1
done
[ -n "$grpc" ] || { echo "conformance.sh: serve did not start in 90 s" >&2; cat "$OUT/serve.err" >&2; exit 1; }

# Request material: one all-zero 28×28 image (784 FP32 = 3136 bytes).
zeros=$(printf '0,%.0s' $(seq 1 784)); zeros=${zeros%,}
head -c 3136 /dev/zero >"$OUT/image.bin"
raw=$(base64 -w0 "$OUT/image.bin")

pass=0 fail=0
rows=()
# record case protocol want got: a row of the table; want = got passes.
record() {
	local status=PASS
	if [ "$3" != "$4" ]; then status=FAIL; fail=$((fail + 1)); else pass=$((pass + 1)); fi
	rows+=("$(printf '%-4s  %-5s  %-44s  want %-34s got %s' "$status" "$2" "$1" "$3" "$4")")
}

# gcall method json: grpcurl's answer (stdout+stderr); gcode: the status code it reports.
gcall() { "$grpcurl" -plaintext -max-time 10 -d "$2" "$grpc" "inference.GRPCInferenceService/$1" 2>&1 || true; }
gcode() { local o; o=$(gcall "$1" "$2"); sed -n 's/^ *Code: //p' <<<"$o" | head -1 | grep . || echo OK; }

# --- gRPC ---
list=$("$grpcurl" -plaintext "$grpc" list 2>&1 | sort | tr '\n' ' ')
record "reflection lists the services" grpc "grpc.health.v1.Health grpc.reflection.v1.ServerReflection grpc.reflection.v1alpha.ServerReflection inference.GRPCInferenceService " "$list"
h=$("$grpcurl" -plaintext -d '{}' "$grpc" grpc.health.v1.Health/Check 2>&1 | jq -r .status 2>/dev/null || echo error)
record "health check (server)" grpc SERVING "$h"
h=$("$grpcurl" -plaintext -d '{"service":"logreg"}' "$grpc" grpc.health.v1.Health/Check 2>&1 | jq -r .status 2>/dev/null || echo error)
record "health check (model logreg)" grpc SERVING "$h"
md=$(gcall ServerMetadata '{}')
record "ServerMetadata version" grpc "$version" "$(jq -r .version <<<"$md" 2>/dev/null)"
record "ServerMetadata lists model_configuration" grpc true "$(jq '.extensions | index("model_configuration") != null' <<<"$md" 2>/dev/null)"
r=$(gcall ModelInfer '{"model_name":"logreg","id":"raw","inputs":[{"name":"input","datatype":"FP32","shape":[1,784]}],"raw_input_contents":["'"$raw"'"]}')
rawlen=$(jq -r '.rawOutputContents[0]' <<<"$r" 2>/dev/null | base64 -d 2>/dev/null | wc -c)
record "ModelInfer raw in → raw out" grpc "probs FP32 [1,10] 40 bytes" \
	"$(jq -r '"\(.outputs[0].name) \(.outputs[0].datatype) [\(.outputs[0].shape|join(","))]"' <<<"$r" 2>/dev/null || echo "$r") $rawlen bytes"
r=$(gcall ModelInfer '{"model_name":"logreg","id":"typed","inputs":[{"name":"input","datatype":"FP32","shape":[1,784],"contents":{"fp32_contents":['"$zeros"']}}]}')
record "ModelInfer typed in → typed out" grpc "probs 10 values" "$(jq -r '"\(.outputs[0].name) \(.outputs[0].contents.fp32Contents|length) values"' <<<"$r" 2>/dev/null || echo "$r")"
r=$(gcall ModelInfer '{"model_name":"logreg","model_version":"1","inputs":[{"name":"input","datatype":"FP32","shape":[1,784]}],"raw_input_contents":["'"$raw"'"]}')
record "ModelInfer model_version 1" grpc "1" "$(jq -r .modelVersion <<<"$r" 2>/dev/null || echo "$r")"
record "ModelInfer model_version 7 (unknown)" grpc NotFound \
	"$(gcode ModelInfer '{"model_name":"logreg","model_version":"7","inputs":[{"name":"input","datatype":"FP32","shape":[1,784]}],"raw_input_contents":["'"$raw"'"]}')"
record "ModelInfer timeout 1 µs" grpc InvalidArgument \
	"$(gcode ModelInfer '{"model_name":"logreg","parameters":{"timeout":{"int64_param":1}},"inputs":[{"name":"input","datatype":"FP32","shape":[1,784]}],"raw_input_contents":["'"$raw"'"]}')"
record "ModelInfer timeout as double_param (Triton)" grpc OK \
	"$(gcode ModelInfer '{"model_name":"logreg","parameters":{"timeout":{"double_param":5e6}},"inputs":[{"name":"input","datatype":"FP32","shape":[1,784]}],"raw_input_contents":["'"$raw"'"]}')"
record "ModelInfer unknown model" grpc NotFound "$(gcode ModelInfer '{"model_name":"nope","inputs":[]}')"
c=$(gcall ModelConfig '{"name":"logreg"}')
record "ModelConfig" grpc "logreg 64 input TYPE_FP32 [784]" \
	"$(jq -r '"\(.config.name) \(.config.maxBatchSize) \(.config.input[0].name) \(.config.input[0].dataType) [\(.config.input[0].dims|join(","))]"' <<<"$c" 2>/dev/null || echo "$c")"
record "ModelConfig version 9 (unknown)" grpc NotFound "$(gcode ModelConfig '{"name":"logreg","version":"9"}')"
s=$(gcall ModelStatistics '{"name":"logreg"}')
record "ModelStatistics counts the successes" grpc "logreg 4" \
	"$(jq -r '"\(.modelStats[0].name) \(.modelStats[0].inferenceStats.success.count)"' <<<"$s" 2>/dev/null || echo "$s")"
i=$(gcall RepositoryIndex '{"ready":true}')
record "RepositoryIndex" grpc "logreg READY" "$(jq -r '"\(.models[0].name) \(.models[0].state)"' <<<"$i" 2>/dev/null || echo "$i")"
lc=$(gcode RepositoryModelLoad '{"model_name":"logreg"}')
case $lc in OK | Unimplemented) lc="OK or Unimplemented" ;; esac
record "RepositoryModelLoad" grpc "OK or Unimplemented" "$lc"

# --- REST, in the shapes tritonclient sends ---
# rest method path [curl args...]: "<status> <content-type> <Inference-Header-Content-Length>" on
# the first line, the body after.
rest() {
	local m=$1 p=$2; shift 2
	curl -sS -X "$m" -o "$OUT/body" -D "$OUT/headers" "$@" "$url$p" >/dev/null 2>&1 || { echo "000 - -"; return; }
	local code ct hl
	code=$(sed -n '1s/^HTTP\/[0-9.]* \([0-9]*\).*/\1/p' "$OUT/headers")
	ct=$(sed -n 's/^[Cc]ontent-[Tt]ype: \([^;[:space:]]*\).*/\1/p' "$OUT/headers")
	hl=$(sed -n 's/^[Ii]nference-[Hh]eader-[Cc]ontent-[Ll]ength: \([0-9]*\).*/\1/p' "$OUT/headers")
	echo "$code ${ct:--} ${hl:--}"
}
sm=$(rest GET /v2)
record "GET /v2 version" rest "200 $version" "${sm%% *} $(jq -r .version "$OUT/body")"
record "GET /v2 extensions" rest "binary_tensor_data,parameters,model_configuration,statistics" \
	"$(jq -r '.extensions|map(select(. != "model_repository"))|join(",")' "$OUT/body")"

json_in='{"id":"j","inputs":[{"name":"input","datatype":"FP32","shape":[1,784],"data":['"$zeros"']}]'
a=$(rest POST /v2/models/logreg/infer -H 'Content-Type: application/json' --data-binary "$json_in}")
record "JSON in → JSON out" rest "200 application/json - probs" "$a $(jq -r '.outputs[0].name' "$OUT/body")"
a=$(rest POST /v2/models/logreg/infer -H 'Content-Type: application/json' \
	--data-binary "$json_in"',"parameters":{"binary_data_output":true}}')
hl=${a##* }
bin_len=$(($(stat -c %s "$OUT/body") - ${hl/-/0}))
record "JSON in → binary out (binary_data_output)" rest "200 application/octet-stream 40 bytes" "${a% *} $bin_len bytes"

header='{"id":"b","inputs":[{"name":"input","datatype":"FP32","shape":[1,784],"parameters":{"binary_data_size":3136}}],"outputs":[{"name":"probs","parameters":{"binary_data":true}}]}'
printf '%s' "$header" >"$OUT/req.bin"
cat "$OUT/image.bin" >>"$OUT/req.bin"
a=$(rest POST /v2/models/logreg/infer -H 'Content-Type: application/octet-stream' \
	-H "Inference-Header-Content-Length: ${#header}" --data-binary "@$OUT/req.bin")
hl=${a##* }
record "binary in → binary out (named output)" rest "200 application/octet-stream probs 40" \
	"${a% *} $(head -c "${hl/-/0}" "$OUT/body" | jq -r '"\(.outputs[0].name) \(.outputs[0].parameters.binary_data_size)"' 2>/dev/null || echo bad-header)"
a=$(rest POST /v2/models/logreg/infer -H 'Content-Type: application/json' \
	--data-binary "$json_in"',"outputs":[{"name":"nope"}]}')
record "unknown named output" rest "400 application/json" "${a% *}"
a=$(rest POST /v2/models/logreg/versions/1/infer -H 'Content-Type: application/json' --data-binary "$json_in}")
record "versions/1/infer" rest "200 1" "${a%% *} $(jq -r .model_version "$OUT/body")"
a=$(rest POST /v2/models/logreg/versions/9/infer -H 'Content-Type: application/json' --data-binary "$json_in}")
record "versions/9/infer (unknown)" rest "404 error" "${a%% *} $(jq -r 'keys[0]' "$OUT/body")"
a=$(rest POST /v2/models/logreg/infer -H 'Content-Type: application/json' \
	--data-binary "$json_in"',"parameters":{"timeout":1}}')
record "timeout 1 µs" rest "400 no-retry-after" "${a%% *} $(grep -qi '^retry-after' "$OUT/headers" && echo retry-after || echo no-retry-after)"
a=$(rest GET /v2/models/logreg/config)
record "GET config" rest "200 64 TYPE_FP32" "${a%% *} $(jq -r '"\(.max_batch_size) \(.input[0].data_type)"' "$OUT/body")"
a=$(rest GET /v2/models/logreg/versions/1/stats)
record "GET stats" rest "200 logreg 1" "${a%% *} $(jq -r '"\(.model_stats[0].name) \(.model_stats[0].version)"' "$OUT/body")"
a=$(rest GET /v2/models/nope/config)
record "GET config of an unknown model" rest "404" "${a%% *}"

# --- ghz: a short gRPC load with raw contents; every request must succeed ---
printf '{"model_name":"logreg","inputs":[{"name":"input","datatype":"FP32","shape":[1,784]}],"raw_input_contents":["%s"]}' "$raw" >"$OUT/ghz.json"
g=$("$ghz" --insecure --call inference.GRPCInferenceService/ModelInfer -D "$OUT/ghz.json" -n 400 -c 8 \
	--format json "$grpc" 2>&1 || true)
record "ghz 400 ModelInfer (8 clients)" grpc "400 OK" "$(jq -r '"\(.statusCodeDistribution.OK // 0) OK"' <<<"$g" 2>/dev/null || echo "$g")"
ghz_rps=$(jq -r '.rps|floor' <<<"$g" 2>/dev/null || echo "?")

printf '%s\n' "${rows[@]}"
echo "conformance: $pass passed, $fail failed (ghz: $ghz_rps rps; gateway $url, gRPC $grpc, version $version)"
[ "$fail" -eq 0 ]
