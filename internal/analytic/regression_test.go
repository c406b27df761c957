package analytic

import (
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// TestFitPolynomialFromFewPoints profiles 25 of the 560 (batch 1–20 × memory 1280–3008 MB)
// configurations of BATCH's TF-resnetV2 model (4.5 %) with 2 % measurement noise, fits the
// cubic and measures MAPE on the 535 held-out configurations (BATCH §VI-B: < 2 %).
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
