package analytic

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestLevelsAreTheVanLoanProducts: the level quantities NewModel keeps (row block 0 only) give
// e^{Qt}·L and H(t)·L of the full n×n generator — H the Van Loan integral of the arrival part —
// as computed directly by expm (Model.levels' identity: below the full level the levels are
// translation invariant, and H counts the arrivals, one level each).
func TestLevelsAreTheVanLoanProducts(t *testing.T) {
	maps := map[string]*MAP{
		"Poisson": mustMAP(t)(Poisson(40)),
		"MMPP(2)": mustMAP(t)(MMPP2(10, 60, 0.2, 0.3)),
		"MAP(2)":  mustMAP(t)(NewMAP([][]float64{{-30, 4}, {1, -8}}, [][]float64{{20, 6}, {2, 5}})),
	}
	rng := rand.New(rand.NewPCG(3, 5))
	for name, a := range maps {
		for _, b := range []int{2, 5, 12} {
			md, err := NewModel(a, b, 0.004, 0.2)
			if err != nil {
				t.Fatal(err)
			}
			md.tagging()
			m, n := a.m, b*a.m
			q, arr := md.q, md.arrA // the full generators NewModel built (it keeps them)
			for _, g := range []int{1, 7, 50} {
				tt := float64(g) * md.h
				e := expm(q, n, tt)
				h := upperRight(expm(block(q, arr, q, n), 2*n, tt), n)
				x := make([]float64, n)
				for s := range x {
					x[s] = rng.Float64()
				}
				y := make([]float64, b)
				md.tagged(y, x, g)
				for k := 0; k < b; k++ {
					want, full := 0.0, 0.0
					for s := 0; s < n; s++ {
						for phi := 0; phi < m; phi++ {
							want += x[s] * h[s*n+k*m+phi]
						}
					}
					if math.Abs(y[k]-want) > 1e-12 {
						t.Errorf("%s B=%d t=%g: x·H·L[%d] = %.15g, the Van Loan product %.15g", name, b, tt, k, y[k], want)
					}
					if k < b-1 {
						continue
					}
					for s := 0; s < n; s++ {
						full = 0
						for phi := 0; phi < m; phi++ {
							full += e[s*n+k*m+phi]
						}
						l, i := s/m, s%m
						if got := md.tail[g][i*b+b-1-l]; math.Abs(got-full) > 1e-12 {
							t.Errorf("%s B=%d t=%g: P(full | state %d) = %.15g, e^{Qt}·L %.15g", name, b, tt, s, got, full)
						}
					}
				}
			}
		}
	}
}

// TestAttainmentBoundBounds: the bounds the optimiser rules candidates out with (the law's and
// the coarse wait distribution's, which is the tighter) are never below the attainment they stand for (deterministic and noisy service, thresholds around the
// latencies), and it is tight enough to rule some out.
func TestAttainmentBoundBounds(t *testing.T) {
	a := mustMAP(t)(MMPP2(10, 60, 0.2, 0.3))
	below := 0
	for _, b := range []int{2, 5, 10} {
		md, err := NewModel(a, b, 0.01, 0.4)
		if err != nil {
			t.Fatal(err)
		}
		svc := polyService(TFResnetV2, b, 2048)
		for _, j := range []int{1, 10, 40} {
			for _, cv := range []float64{0, 0.05, 0.3} {
				for _, th := range []float64{0.5, 1, 1.5, 2, 2.5, 3} {
					bt, err := md.law(float64(j)*md.h, StartExact)
					if err != nil {
						t.Fatal(err)
					}
					var tab *noiseTable
					if cv > 0 {
						tab = newNoiseTable(svc, th, cv, bt.h)
					}
					ub := bt.attainmentBound(svc, th, tab)
					coarse := math.Inf(1)
					if tab != nil {
						coarse = bt.coarseBound(tab, 4)
					}
					bt.fill()
					got := bt.Attainment(svc, th, cv)
					if ub < got-1e-12 {
						t.Errorf("B=%d T=%g cv=%g t=%g: bound %.15g < attainment %.15g", b, bt.timeout, cv, th, ub, got)
					}
					if coarse < got-1e-12 || (tab != nil && coarse > ub+1e-12) {
						t.Errorf("B=%d T=%g cv=%g t=%g: coarse bound %.15g, attainment %.15g, law's bound %.15g", b, bt.timeout, cv, th, coarse, got, ub)
					}
					if ub < 0.95 {
						below++
					}
				}
			}
		}
	}
	if below == 0 {
		t.Error("the bound ruled out no configuration at p95")
	}
}

// TestLazyLatencyCDFMatchesFill: the latency CDF read off the two grid points per batch size
// it needs, before the wait distribution is computed, is bit for bit LatencyCDF of the filled
// law — thresholds below every service time, between grid points, on them and past the timeout
// — and the fill that adopts those columns is a fill from scratch.
func TestLazyLatencyCDFMatchesFill(t *testing.T) {
	maps := map[string]*MAP{"poisson": mustMAP(t)(Poisson(40)), "mmpp": mustMAP(t)(MMPP2(10, 60, 0.2, 0.3))}
	checked := 0
	for name, a := range maps {
		for _, b := range []int{2, 7, 20} {
			md, err := NewModel(a, b, 0.005, 0.3)
			if err != nil {
				t.Fatal(err)
			}
			svc := polyService(TFResnetV2, b, 2048)
			for _, j := range []int{1, 3, 17, 60} {
				lazy, err := md.law(float64(j)*md.h, StartExact)
				if err != nil {
					t.Fatal(err)
				}
				full, err := md.At(float64(j)*md.h, StartExact)
				if err != nil {
					t.Fatal(err)
				}
				for _, th := range []float64{0, svc[0] - 1e-13, svc[0], svc[0] + md.h/3, svc[b/2] + float64(j/2)*md.h, svc[b-1] + full.timeout, 10} {
					if got, want := lazy.lazyLatencyCDF(svc, th), full.LatencyCDF(svc, th); math.Float64bits(got) != math.Float64bits(want) {
						t.Fatalf("%s B=%d j=%d t=%g: lazy %.17g, filled %.17g", name, b, j, th, got, want)
					}
					checked++
				}
				lazy.fill()
				for k := range full.cdf {
					if !slices.Equal(lazy.cdf[k], full.cdf[k]) {
						t.Fatalf("%s B=%d j=%d: cdf[%d] after lazy reads %v, from scratch %v", name, b, j, k, lazy.cdf[k], full.cdf[k])
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("nothing checked")
	}
}

// TestOptimizeBoundKeepsThePlan: ruling candidates out on attainmentBound changes no plan —
// feasible, infeasible (best effort), with service noise, with an attainment floor — against
// the search that checks every candidate on its latency distribution.
func TestOptimizeBoundKeepsThePlan(t *testing.T) {
	a := mustMAP(t)(MMPP2(10, 60, 0.2, 0.3))
	grid := Grid{MemoryMinMB: 1280, MemoryMaxMB: 3008, MemoryStepMB: 576, MaxBatch: 10,
		TimeoutStep: 20 * time.Millisecond, TimeoutMax: 400 * time.Millisecond}
	floor := AttainmentSpec{Threshold: 3 * time.Second, ServiceCV: 0.05, Min: 0.97}
	ruled := 0
	for _, slo := range []time.Duration{500 * time.Millisecond, 2 * time.Second, 2500 * time.Millisecond, 3 * time.Second} {
		for _, cv := range []float64{0, 0.05} {
			for _, f := range []AttainmentSpec{{}, floor} {
				p := Problem{Arrivals: a, Service: TFResnetV2, Percentile: 0.95, SLO: slo, Grid: grid, ServiceCV: cv, Attainment: f}
				t.Run(fmt.Sprintf("slo=%v cv=%g floor=%g", slo, cv, f.Min), func(t *testing.T) {
					got, err := Optimize(p)
					e := p
					e.eager = true
					want, werr := Optimize(e)
					if !errors.Is(err, werr) && (err == nil) != (werr == nil) {
						t.Fatalf("errors differ: %v, eager %v", err, werr)
					}
					if got != want {
						t.Errorf("plan %+v, eager search %+v", got, want)
					}
					if !got.Feasible {
						ruled++
					}
				})
			}
		}
	}
	if ruled == 0 {
		t.Error("no case exercised the best effort")
	}
}

// TestModelAtConcurrent: a Model stays safe for concurrent use though it builds its wait
// quantities on the first At (Model.tagging); under -race this fails without the sync.Once.
func TestModelAtConcurrent(t *testing.T) {
	md, err := NewModel(mustMAP(t)(MMPP2(10, 60, 0.2, 0.3)), 6, 0.01, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Analyze(md.arr, 6, 0.1, StartExact)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			bt, err := md.At(0.1, StartExact)
			if err == nil && math.Abs(bt.WaitCDF(0.05)-want.WaitCDF(0.05)) > 1e-3 {
				err = fmt.Errorf("P(W ≤ 50 ms) = %g, Analyze %g", bt.WaitCDF(0.05), want.WaitCDF(0.05))
			}
			errs <- err
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestOptimizeCheapestFirstKeepsThePlan: checking the candidates' constraints cheapest first and
// stopping past the cheapest feasible one's ties gives the plan, bit for bit, of checking them
// in the search's order — on random MMPP(2) arrivals, SLOs, service noise and attainment floors,
// feasible or not, and where many timeouts tie on cost.
func TestOptimizeCheapestFirstKeepsThePlan(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 4))
	grid := Grid{MemoryMinMB: 1280, MemoryMaxMB: 3008, MemoryStepMB: 576, MaxBatch: 8,
		TimeoutStep: 25 * time.Millisecond, TimeoutMax: 300 * time.Millisecond}
	var ps []Problem
	for range 24 {
		a := mustMAP(t)(MMPP2(1+80*rng.Float64(), 1+80*rng.Float64(), 0.05+rng.Float64(), 0.05+rng.Float64()))
		p := Problem{Arrivals: a, Service: TFResnetV2, Percentile: 0.9 + 0.09*rng.Float64(),
			SLO: time.Duration((0.3 + 3.5*rng.Float64()) * float64(time.Second)), Grid: grid}
		if rng.IntN(2) == 0 {
			p.ServiceCV = 0.05
		}
		if rng.IntN(2) == 0 {
			p.Attainment = AttainmentSpec{Threshold: p.SLO + time.Duration(rng.IntN(1000))*time.Millisecond, ServiceCV: 0.05, Min: 0.9 + 0.099*rng.Float64()}
		}
		ps = append(ps, p)
	}
	ties := DefaultGrid()
	ties.MemoryMinMB, ties.MemoryMaxMB, ties.MaxBatch = 1280, 3008, 4
	ps = append(ps, Problem{Arrivals: mustMAP(t)(Poisson(500)), Service: TFResnetV2, Percentile: 0.95, SLO: 20 * time.Second, Grid: ties})
	feasible, infeasible := 0, 0
	for i, p := range ps {
		got, err := Optimize(p)
		o := p
		o.inOrder = true
		want, werr := Optimize(o)
		if (err == nil) != (werr == nil) || got != want {
			t.Errorf("problem %d (%+v): plan %+v, %v; in the search's order %+v, %v", i, p, got, err, want, werr)
		}
		if got.Feasible {
			feasible++
		} else {
			infeasible++
		}
	}
	if feasible < 5 || infeasible < 2 {
		t.Errorf("%d feasible and %d infeasible problems: the test needs both", feasible, infeasible)
	}
}
