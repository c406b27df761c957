package analytic

import (
	"fmt"
	"math"
	"os"
	"testing"
)

func TestFitMAP2RecoversSyntheticMoments(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    *MAP
	}{
		{"poisson", mustMAP(t)(Poisson(30))},
		{"bursty mmpp2", mustMAP(t)(MMPP2(5, 80, 0.2, 0.5))},
		{"correlated map2", mustMAP(t)(MAP2(2, 40, 1, 0.5, 0.3, 0.6))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The rate check compares with the true process, so it carries the sample's own error:
			// a slowly switching MMPP(2) sample of 100k arrivals (race builds) is ~3 % off its rate.
			n, rateTol := 300000, 0.02
			if raceEnabled {
				n, rateTol = 100000, 0.05
			}
			x := sample(tc.a, n, 11)
			fit, st, err := FitMAP2(x)
			if err != nil {
				t.Fatal(err)
			}
			mean, scv, _, rho := fit.Moments()
			if d := math.Abs(mean-st.Mean) / st.Mean; d > 1e-9 {
				t.Errorf("mean: (-trace +fit) %g %g", st.Mean, mean)
			}
			if st.SCV > 1 && math.Abs(scv-st.SCV)/st.SCV > 0.02 {
				t.Errorf("SCV: (-trace +fit) %g %g", st.SCV, scv)
			}
			if math.Abs(rho-st.Rho1) > 0.02 {
				t.Errorf("lag-1 autocorrelation: (-trace +fit) %g %g", st.Rho1, rho)
			}
			if r := fit.Rate() / tc.a.Rate(); math.Abs(r-1) > rateTol {
				t.Errorf("rate: (-true +fit) %g %g", tc.a.Rate(), fit.Rate())
			}
		})
	}
}

func TestMomentsOfPoisson(t *testing.T) {
	mean, scv, skew, rho := mustMAP(t)(Poisson(4)).Moments()
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"mean", mean, 0.25}, {"scv", scv, 1}, {"skew", skew, 2}, {"rho1", rho, 0}} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s: (-want +got) %g %g", c.name, c.want, c.got)
		}
	}
}

// TestFitTwitterHoursReplayRawTrace is the test of FitMAP2 that matters to BATCH: the latency
// distribution the model predicts from the fit must be the one the buffer produces on the raw
// trace. Each raw Twitter hour (hour h is BATCH's MAP{h+1}) is replayed through the buffer
// (SimulateBuffer, BATCH's linear profile, where waits are a large part of the latency) and the
// Kolmogorov distance between the replay's latencies and LatencyCDF of our fit must be ≤ 0.01
// at (B, T) = (10, 200 ms) and (20, 490 ms). A fit that matches only the mean rate fails it: a
// Poisson process of the same rate is 0.02–0.05 off in the busy hours (issue #18 item 9), and so
// is, at 0.02–0.04, BATCH's published KPC-toolbox fit, which under-states the lag-1
// autocorrelation (logged). Run with -v for the table in docs/batch.md.
func TestFitTwitterHoursReplayRawTrace(t *testing.T) {
	t.Logf("| hour | samples | trace rate/s | SCV | ρ1 | our ρ1 | BATCH ρ1 | B | T ms | KS ours | KS BATCH's fit | KS Poisson |")
	t.Logf("|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, h := range []int{0, 7, 14, 20} {
		path := needShared(t, fmt.Sprintf("traces/twitter-2017-05-25-interarrivals/TW_may25_%d-%d", h, h+1))
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		x, err := ReadInterarrivals(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		ours, st, err := FitMAP2(x)
		if err != nil {
			t.Fatal(err)
		}
		theirs := publishedTwitterMAP(t, h+1)
		pois := mustMAP(t)(Poisson(1 / st.Mean))
		_, _, _, rho := ours.Moments()
		_, _, _, trho := theirs.Moments()
		for _, c := range []struct {
			b       int
			timeout float64
		}{{10, 0.2}, {20, 0.49}} {
			svc := linearService(c.b)
			lat, _ := SimulateBuffer(x, c.b, c.timeout, svc)
			ks := make([]float64, 3)
			for i, a := range []*MAP{ours, theirs, pois} {
				bt, err := Analyze(a, c.b, c.timeout, StartExact)
				if err != nil {
					t.Fatal(err)
				}
				ks[i] = Kolmogorov(append([]float64(nil), lat...), func(v float64) float64 { return bt.LatencyCDF(svc, v) })
			}
			t.Logf("| %d | %d | %.3f | %.3f | %.4f | %.4f | %.4f | %d | %g | %.4f | %.4f | %.4f |",
				h, st.N, 1/st.Mean, st.SCV, st.Rho1, rho, trho, c.b, c.timeout*1000, ks[0], ks[1], ks[2])
			if ks[0] > 0.01 {
				t.Errorf("hour %d, B %d, T %g s: the fit's latency CDF is %.4f from the replayed trace's (limit 0.01)", h, c.b, c.timeout, ks[0])
			}
		}
		if d := math.Abs(ours.Rate()*st.Mean - 1); d > 1e-6 {
			t.Errorf("hour %d: fitted rate %.4f ≠ trace rate %.4f", h, ours.Rate(), 1/st.Mean)
		}
	}
}

func TestNewMAPRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		d0, d1 [][]float64
	}{
		{"empty", nil, nil},
		{"shape", [][]float64{{-1}}, [][]float64{{1, 0}}},
		{"negative D1", [][]float64{{-1, 0}, {0, -1}}, [][]float64{{2, -1}, {0, 1}}},
		{"rows do not sum to 0", [][]float64{{-1, 0}, {0, -1}}, [][]float64{{2, 0}, {0, 1}}},
		{"no arrivals", [][]float64{{-1, 1}, {1, -1}}, [][]float64{{0, 0}, {0, 0}}},
		{"NaN", [][]float64{{math.NaN()}}, [][]float64{{1}}},
		{"zero diagonal", [][]float64{{0}}, [][]float64{{0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewMAP(tc.d0, tc.d1); err == nil {
				t.Errorf("NewMAP(%v, %v) = nil error, want one", tc.d0, tc.d1)
			}
		})
	}
}
