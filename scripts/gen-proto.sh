#!/bin/sh
# gen-proto.sh regenerates internal/oipgrpc/inferencepb from internal/oipgrpc/proto/grpc_predict_v2.proto.
# Needs protoc (Debian protobuf-compiler, 3.21.12) and the pinned plugins:
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
#   go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
# Run from anywhere; the generated files are committed, so builds never need protoc.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
gobin=$(go env GOBIN)
[ -n "$gobin" ] || gobin="$(go env GOPATH)/bin"
export PATH="$gobin:$PATH"
for tool in protoc protoc-gen-go protoc-gen-go-grpc; do
	command -v "$tool" >/dev/null 2>&1 || { echo "gen-proto.sh: $tool not found (see the header of this script)" >&2; exit 1; }
done
out="$root/internal/oipgrpc/inferencepb"
mkdir -p "$out"
cd "$root/internal/oipgrpc/proto"
protoc --proto_path=. \
	--go_out="$out" --go_opt=paths=source_relative \
	--go-grpc_out="$out" --go-grpc_opt=paths=source_relative \
	grpc_predict_v2.proto
echo "gen-proto.sh: wrote $out"
