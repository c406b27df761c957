# syntax=docker/dockerfile:1
# The sloserve image: one binary for the gateway/controller (`sloserve serve`) and the workers
# (`sloserve worker`, bundled models embedded). Build: docker build -t sloserve:0.1.0 .
# The native runtime needs no native library; for --runtime onnxruntime mount libonnxruntime.so
# and set ONNXRUNTIME_LIB.
ARG GO_VERSION=1.26
FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=1 go build -trimpath -ldflags="-s -w" -o /out/sloserve ./cmd/sloserve

# distroless/cc: glibc for the cgo build, no shell, non-root user 65532.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/sloserve /usr/local/bin/sloserve
USER 65532:65532
EXPOSE 8080 8000
ENTRYPOINT ["/usr/local/bin/sloserve"]
