package models_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/sloserve/sloserve/internal/models"
	"github.com/sloserve/sloserve/internal/models/fashion"
	"github.com/sloserve/sloserve/internal/models/train"
	bundled "github.com/sloserve/sloserve/models"
)

// openOrSkip opens a bundled model, skipping the test when the runtime is unavailable here.
func openOrSkip(tb testing.TB, name, runtime string) (models.Runner, models.Metadata) {
	tb.Helper()
	r, meta, err := bundled.Open(name, models.Options{Runtime: runtime})
	if errors.Is(err, models.ErrRuntimeUnavailable) {
		tb.Skipf("runtime %s unavailable (run scripts/setup.sh ort or set ONNXRUNTIME_LIB): %v", runtime, err)
	}
	if err != nil {
		tb.Fatalf("open %s on %s: %v", name, runtime, err)
	}
	tb.Cleanup(func() { r.Close() })
	return r, meta
}

func sampleOrFatal(tb testing.TB) *fashion.Set {
	tb.Helper()
	s, err := bundled.Sample()
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestConformance is the conformance test every runtime passes: metadata, accuracy on the
// committed sample versus the manifest, and concurrent Run.
func TestConformance(t *testing.T) {
	man, err := bundled.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if got := len(man.Models); got < 6 {
		t.Fatalf("bundled models: got %d, want ≥ 6", got)
	}
	sample := sampleOrFatal(t)
	for _, rt := range models.Runtimes {
		for _, mi := range man.Models {
			t.Run(rt+"/"+mi.Name, func(t *testing.T) {
				r, meta := openOrSkip(t, mi.Name, rt)
				if got, want := fmt.Sprint(meta.Inputs), fmt.Sprint(mi.Inputs); got != want {
					t.Errorf("inputs (-want +got): -%s +%s", want, got)
				}
				if got, want := fmt.Sprint(meta.Outputs), fmt.Sprint(mi.Outputs); got != want {
					t.Errorf("outputs (-want +got): -%s +%s", want, got)
				}
				acc, _, err := train.Evaluate(context.Background(), r, sample)
				if err != nil {
					t.Fatal(err)
				}
				// The manifest's sample accuracy was measured with the native runtime; another
				// runtime may flip a near-tie or two (0.2 %).
				if math.Abs(acc-mi.SampleAccuracy) > 0.002 {
					t.Errorf("sample accuracy (-want +got): -%.4f +%.4f", mi.SampleAccuracy, acc)
				}
				// The sample (100 per class) is close to the full test set.
				if math.Abs(acc-mi.Accuracy) > 0.04 {
					t.Errorf("sample accuracy %.4f is far from the test-set accuracy %.4f", acc, mi.Accuracy)
				}
				var wg sync.WaitGroup
				errs := make(chan error, 4)
				for g := 0; g < 4; g++ {
					wg.Go(func() {
						x := sample.Floats(nil, g*8, g*8+8)
						out, err := r.Run(context.Background(), []models.Tensor{{Name: meta.Inputs[0].Name, Shape: []int64{8, fashion.Pixels}, Data: x}})
						if err == nil && len(out[0].Data) != 8*fashion.NumClasses {
							err = fmt.Errorf("output has %d values", len(out[0].Data))
						}
						errs <- err
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					if err != nil {
						t.Errorf("concurrent Run: %v", err)
					}
				}
			})
		}
	}
}

// TestRuntimesAgree checks that the native runtime and ONNX Runtime compute the same
// probabilities (within 1e-4) on the whole committed sample.
func TestRuntimesAgree(t *testing.T) {
	sample := sampleOrFatal(t)
	x := sample.Floats(nil, 0, sample.Len())
	in := []models.Tensor{{Shape: []int64{int64(sample.Len()), fashion.Pixels}, Data: x}}
	for _, name := range bundled.Names() {
		t.Run(name, func(t *testing.T) {
			ort, _ := openOrSkip(t, name, models.RuntimeONNXRuntime)
			nat, _ := openOrSkip(t, name, models.RuntimeNative)
			want, err := ort.Run(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := nat.Run(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(want[0].Shape) != fmt.Sprint(got[0].Shape) {
				t.Fatalf("shape (-onnxruntime +native): -%v +%v", want[0].Shape, got[0].Shape)
			}
			var worst float64
			for i := range want[0].Data {
				worst = max(worst, math.Abs(float64(want[0].Data[i]-got[0].Data[i])))
			}
			if worst > 1e-4 {
				t.Errorf("max |onnxruntime - native| = %g, want ≤ 1e-4", worst)
			}
		})
	}
}

// BenchmarkRun measures Run of the three serving models at batch 1, 32 and 128 on both runtimes.
func BenchmarkRun(b *testing.B) {
	man, err := bundled.Manifest()
	if err != nil {
		b.Fatal(err)
	}
	sample := sampleOrFatal(b)
	for _, rt := range models.Runtimes {
		for _, role := range []string{"small", "medium", "large"} {
			name := man.Serving[role]
			for _, bs := range []int{1, 32, 128} {
				b.Run(fmt.Sprintf("%s/%s/b=%d", rt, name, bs), func(b *testing.B) {
					r, meta := openOrSkip(b, name, rt)
					in := []models.Tensor{{Name: meta.Inputs[0].Name, Shape: []int64{int64(bs), fashion.Pixels}, Data: sample.Floats(nil, 0, bs)}}
					for b.Loop() {
						if _, err := r.Run(context.Background(), in); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(bs), "ns/sample")
				})
			}
		}
	}
}
