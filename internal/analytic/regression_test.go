package analytic

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// TestFitPolynomialFromFewPoints profiles 25 of the 560 (batch 1–20 × memory 1280–3008 MB)
// configurations of BATCH's TF-resnetV2 model (4.5 %) with 2 % measurement noise, fits the
// cubic and measures MAPE on the 535 held-out configurations (BATCH §VI-B: < 2 %). It recovers
// a known cubic, so it tests the least squares; TestFitPolynomialOnMeasuredLambda tests the form
// on measured latencies.
func TestFitPolynomialFromFewPoints(t *testing.T) {
	for _, truth := range []Polynomial{TFResnetV2, TFInceptionV4} {
		t.Run(truth.Name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 5))
			var train, held []ProfilePoint
			picked := map[[2]int]bool{}
			for _, k := range []int{1, 5, 10, 15, 20} {
				for _, m := range []int{1280, 1728, 2112, 2560, 3008} {
					s := truth.ServiceTime(k, m) * (1 + 0.02*rng.NormFloat64())
					train = append(train, ProfilePoint{Batch: k, MemoryMB: m, Seconds: s})
					picked[[2]int{k, m}] = true
				}
			}
			for k := 1; k <= 20; k++ {
				for m := 1280; m <= 3008; m += 64 {
					if !picked[[2]int{k, m}] {
						held = append(held, ProfilePoint{Batch: k, MemoryMB: m, Seconds: truth.ServiceTime(k, m)})
					}
				}
			}
			fit, err := FitPolynomial(truth.Name, train, 3)
			if err != nil {
				t.Fatal(err)
			}
			mape := MAPE(fit, held)
			t.Logf("%s: trained on %d of %d points (%.1f %%), held-out MAPE %.2f %%", truth.Name, len(train), len(train)+len(held),
				100*float64(len(train))/float64(len(train)+len(held)), mape)
			if mape >= 2 {
				t.Errorf("held-out MAPE %.2f %% ≥ 2 %%", mape)
			}
			if b0, b1, m0, m1 := fit.Domain(); b0 != 1 || b1 != 20 || m0 != 1280 || m1 != 3008 {
				t.Errorf("domain: (-want +got) [1 20 1280 3008] [%d %d %d %d]", b0, b1, m0, m1)
			}
		})
	}
}

func TestFitPolynomialRejects(t *testing.T) {
	ok := []ProfilePoint{{1, 128, 1}, {2, 128, 2}, {1, 256, 0.5}, {2, 256, 1}}
	for _, tc := range []struct {
		name   string
		points []ProfilePoint
		degree int
	}{
		{"too few points", ok[:2], 1},
		{"bad degree", ok, 0},
		{"zero time", append([]ProfilePoint{{1, 128, 0}}, ok...), 1},
		{"zero batch", append([]ProfilePoint{{0, 128, 1}}, ok...), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := FitPolynomial("x", tc.points, tc.degree); err == nil {
				t.Errorf("FitPolynomial = nil error, want one")
			}
		})
	}
}

func TestReadPolynomial(t *testing.T) {
	t.Run("BATCH file", func(t *testing.T) {
		path := needShared(t, "profiles/batch-lambda-polynomials.json")
		for _, want := range []Polynomial{TFResnetV2, TFInceptionV4, MXNetResnet50} {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ReadPolynomial(f, want.Name)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []int{1, 10, 20} {
				for _, m := range []int{1280, 2048, 3008} {
					if a, b := want.ServiceTime(k, m), got.ServiceTime(k, m); math.Abs(a-b) > 1e-12 {
						t.Errorf("%s S(%d, %d): (-builtin +file) %g %g", want.Name, k, m, a, b)
					}
				}
			}
		}
		f, _ := os.Open(path)
		defer f.Close()
		if _, err := ReadPolynomial(f, "nope"); err == nil {
			t.Errorf("unknown model: nil error")
		}
	})
	t.Run("own format", func(t *testing.T) {
		f, err := os.Open("testdata/linear.json")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		p, err := ReadPolynomial(f, "")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := p.ServiceTime(3, 1024), 0.034*3+0.01; math.Abs(got-want) > 1e-12 {
			t.Errorf("S(3): (-want +got) %g %g", want, got)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		if _, err := ReadPolynomial(strings.NewReader(`{"degree":3,"coefficients":[1]}`), ""); err == nil {
			t.Errorf("nil error for a short coefficient list")
		}
	})
}

// TestFitPolynomialOnMeasuredLambda fits BATCH's service-time form (a cubic in batch size and
// memory) to measured AWS Lambda latencies (InferAll's table, batch 1–32, every memory it
// measured) and scores each point left out of the fit (issue #18 item 9: the test above fits a
// cubic to samples of a cubic, so it checks the least squares, not whether the form fits real
// functions). The cubic's held-out error must stay ≤ 15 % and below half a linear fit's, which
// misses the curvature in memory; BATCH reports < 2 % on its own profiles (§VI-B), InferAll's
// measurements give 13–14 % (docs/batch.md §4).
func TestFitPolynomialOnMeasuredLambda(t *testing.T) {
	b, err := os.ReadFile(needShared(t, "profiles/inferall-lambda-vm-latency.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Batch  []int          `json:"batch_sz"`
		Models []string       `json:"lambda_models"`
		Mem    []int          `json:"lambda_available_memory_MB"`
		Lat    [][][]*float64 `json:"lambda_latency_ms"` // [model][memory][batch], null = infeasible
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	// looMAPE is the mean absolute percentage error of each point under a fit of the others.
	looMAPE := func(name string, pts []ProfilePoint, degree int) float64 {
		sum := 0.0
		for i := range pts {
			train := append(append([]ProfilePoint(nil), pts[:i]...), pts[i+1:]...)
			fit, err := FitPolynomial(name, train, degree)
			if err != nil {
				t.Fatalf("%s degree %d without point %d: %v", name, degree, i, err)
			}
			sum += MAPE(fit, pts[i:i+1])
		}
		return sum / float64(len(pts))
	}
	for mi, name := range doc.Models {
		if name != "squeeznet" && name != "inception" { // the two with ≥ 30 measured points
			continue
		}
		var pts []ProfilePoint
		for ji, m := range doc.Mem {
			for bi, k := range doc.Batch {
				if v := doc.Lat[mi][ji][bi]; v != nil && k <= 32 {
					pts = append(pts, ProfilePoint{Batch: k, MemoryMB: m, Seconds: *v / 1000})
				}
			}
		}
		cubic, linear := looMAPE(name, pts, 3), looMAPE(name, pts, 1)
		t.Logf("%s: %d measured points, leave-one-out MAPE cubic %.1f %%, linear %.1f %%", name, len(pts), cubic, linear)
		if cubic > 15 || cubic > linear/2 {
			t.Errorf("%s: cubic held-out MAPE %.1f %% (limit 15 %% and half the linear fit's %.1f %%)", name, cubic, linear)
		}
	}
}
