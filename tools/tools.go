//go:build tools

// Package tools pins the modules sloserve builds on, so that go mod tidy keeps them while
// packages that use them are being written.
package tools

import (
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/yalue/onnxruntime_go"
	_ "gonum.org/v1/gonum/mat"
	_ "gonum.org/v1/plot"
	_ "gonum.org/v1/plot/plotter"
	_ "gonum.org/v1/plot/vg"
	_ "google.golang.org/protobuf/encoding/protowire"
	_ "gopkg.in/yaml.v3"
)
