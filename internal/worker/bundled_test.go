package worker

import (
	"context"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/sloserve/sloserve/internal/models"
	"github.com/sloserve/sloserve/internal/models/fashion"
	"github.com/sloserve/sloserve/internal/oip"
	bundled "github.com/sloserve/sloserve/models"
)

// bundledCatalog adapts the embedded bundle to Catalog, as cmd/sloserve does.
type bundledCatalog struct{}

func (bundledCatalog) Names() []string { return bundled.Names() }
func (bundledCatalog) Open(name string, opts models.Options) (models.Runner, models.Metadata, error) {
	return bundled.Open(name, opts)
}

// startBundled serves the named bundled models with the native runtime on a loopback test server.
func startBundled(tb testing.TB, names ...string) *oip.Client {
	return startBundledWith(tb, oip.ClientOptions{}, names...)
}

func startBundledWith(tb testing.TB, opts oip.ClientOptions, names ...string) *oip.Client {
	tb.Helper()
	ms, err := Load(bundledCatalog{}, LoadConfig{Names: names})
	if err != nil {
		tb.Fatalf("Load: %v", err)
	}
	w, err := New(DefaultConfig(), ms, Deps{})
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(func() { w.Close() })
	srv := httptest.NewServer(w.Handler())
	tb.Cleanup(srv.Close)
	c, err := oip.NewClient(srv.URL, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func singleImages(set *fashion.Set, from, to int) []*oip.InferenceRequest {
	reqs := make([]*oip.InferenceRequest, 0, to-from)
	for i := from; i < to; i++ {
		reqs = append(reqs, &oip.InferenceRequest{ID: strconv.Itoa(i),
			Inputs: []oip.Tensor{oip.NewFP32("input", []int64{1, fashion.Pixels}, set.Floats(nil, i, i+1))}})
	}
	return reqs
}

// TestBundledAccuracyThroughGateway sends the committed 1,000-image sample as single-image
// requests merged 100 at a time (oip.Concat), as the gateway does, splits the answers
// (oip.Split) and checks the accuracy the manifest records for the sample.
func TestBundledAccuracyThroughGateway(t *testing.T) {
	const model = "mlp32"
	c := startBundled(t, model)
	set, err := bundled.Sample()
	if err != nil {
		t.Fatalf("sample: %v", err)
	}
	man, _ := bundled.Manifest()
	info, _ := man.Model(model)
	correct := 0
	for from := 0; from < set.Len(); from += 100 {
		reqs := singleImages(set, from, from+100)
		batch, err := oip.Concat(reqs)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Infer(context.Background(), model, "", batch)
		if err != nil {
			t.Fatalf("Infer: %v", err)
		}
		if resp.ServiceTime <= 0 {
			t.Errorf("response has no service time")
		}
		parts, err := oip.Split(resp, reqs)
		if err != nil {
			t.Fatal(err)
		}
		for k, p := range parts {
			if p.ID != reqs[k].ID {
				t.Fatalf("part %d has id %q, want %q", k, p.ID, reqs[k].ID)
			}
			probs := p.Output("probs").FP32
			best := 0
			for j := range probs {
				if probs[j] > probs[best] {
					best = j
				}
			}
			if uint8(best) == set.Labels[from+k] {
				correct++
			}
		}
	}
	acc := float64(correct) / float64(set.Len())
	if math.Abs(acc-info.SampleAccuracy) > 0.005 {
		t.Errorf("sample accuracy (-want +got):\n- %.3f (manifest)\n+ %.3f", info.SampleAccuracy, acc)
	}
}

func TestLoadModelDir(t *testing.T) {
	b, err := bundled.Model("logreg")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "custom.onnx"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	ms, err := Load(nil, LoadConfig{Dir: dir})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	defer ms[0].Runner.Close()
	if len(ms) != 1 || ms[0].Name != "custom" || ms[0].Inputs[0].Shape[1] != fashion.Pixels {
		t.Errorf("Load(dir) = %+v, want one model \"custom\" taking 784 pixels", ms)
	}
}

// BenchmarkWorkerRoundTrip measures a client → worker → native mlp32 round trip over loopback
// HTTP for one image and for 64 merged images (ns/op is per batch; see rows/s).
func BenchmarkWorkerRoundTrip(b *testing.B) {
	set, err := bundled.Sample()
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		n      int
		binary bool
	}{{"json/batch=1", 1, false}, {"json/batch=64", 64, false}, {"binary/batch=1", 1, true}, {"binary/batch=64", 64, true}} {
		c := startBundledWith(b, oip.ClientOptions{BinaryData: tc.binary}, "mlp32")
		n := tc.n
		b.Run(tc.name, func(b *testing.B) {
			batch, err := oip.Concat(singleImages(set, 0, n))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			var service float64
			for b.Loop() {
				resp, err := c.Infer(context.Background(), "mlp32", "", batch)
				if err != nil {
					b.Fatal(err)
				}
				service += resp.ServiceTime.Seconds()
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(service/float64(b.N)*1e6, "service-µs/op")
		})
	}
}
