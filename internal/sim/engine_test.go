package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/slo"
)

// poisson is a hand-written Poisson arrival source for tests (rate per second, n arrivals).
type poisson struct {
	rng  *rand.Rand
	rate float64
	t    float64
	left int
}

func newPoisson(rate float64, n int, seed uint64) *poisson {
	return &poisson{rng: rand.New(rand.NewPCG(seed, 7)), rate: rate, left: n}
}

func (p *poisson) Next() (time.Duration, bool) {
	if p.left == 0 {
		return 0, false
	}
	p.left--
	p.t += p.rng.ExpFloat64() / p.rate
	return time.Duration(p.t * 1e9), true
}

func oneTypeModel(t *testing.T, svc time.Duration, slots int) profile.Model {
	t.Helper()
	c, err := profile.NewCurve([]profile.Point{{Batch: 1, Time: svc}, {Batch: 2, Time: svc * 3 / 2}})
	if err != nil {
		t.Fatal(err)
	}
	return profile.Model{Name: "m", VM: map[string]profile.Backend{"c5.large": {Curve: c, Slots: slots}}}
}

func staticPolicy(n int, bp batching.Policy) Policy {
	spec := provider.Spec{Model: "m", Type: "c5.large"}
	init := make([]provider.Spec, n)
	for i := range init {
		init[i] = spec
	}
	return Policy{Name: "static", Scaler: &autoscale.Static{Spec: spec, Count: n}, Initial: init, Batching: bp}
}

// TestMD1PollaczekKhinchine checks a single unbatched queue with Poisson arrivals and a
// deterministic service time against the M/D/1 mean waiting time W = ρ D / (2 (1 − ρ))
// (Pollaczek–Khinchine), so the mean latency is D + W.
func TestMD1PollaczekKhinchine(t *testing.T) {
	const d = 10 * time.Millisecond
	cases := []struct {
		name string
		rho  float64
	}{{"rho=0.5", 0.5}, {"rho=0.8", 0.8}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.NoiseCV = 0
			cfg.SLO = slo.Spec{Threshold: time.Second, Target: 0.99}
			rate := c.rho / d.Seconds()
			res, err := Run(context.Background(), cfg, nil, oneTypeModel(t, d, 1), staticPolicy(1, nil), newPoisson(rate, 400000, 3))
			if err != nil {
				t.Fatal(err)
			}
			mean := res.Latency.Mean().Seconds()
			want := d.Seconds() + c.rho*d.Seconds()/(2*(1-c.rho))
			if math.Abs(mean-want)/want > 0.03 {
				t.Errorf("mean latency (-want +got): -%.5f s +%.5f s (M/D/1, ρ=%v)", want, mean, c.rho)
			}
		})
	}
}

// TestFixedTimeoutBatchSizes checks fixed batching with a window W and a batch cap far above
// what arrives in W: each batch holds the first request plus the Poisson(λW) arrivals of its
// window, so the mean batch size is 1 + λW.
func TestFixedTimeoutBatchSizes(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NoiseCV = 0
	bc := batching.DefaultConfig()
	bc.Policy, bc.MaxBatch, bc.MaxWait, bc.SLO = batching.PolicyFixed, 1000, 20*time.Millisecond, time.Second
	bp, err := batching.New(bc)
	if err != nil {
		t.Fatal(err)
	}
	const rate = 100.0
	res, err := Run(context.Background(), cfg, nil, oneTypeModel(t, time.Microsecond, 1000), staticPolicy(1, bp), newPoisson(rate, 200000, 5))
	if err != nil {
		t.Fatal(err)
	}
	want := 1 + rate*0.020
	if got := res.Summary.MeanBatchSize; math.Abs(got-want)/want > 0.02 {
		t.Errorf("mean batch size (-want +got): -%.3f +%.3f", want, got)
	}
}

func TestDeterminism(t *testing.T) {
	run := func(seed uint64) Result {
		cfg := DefaultConfig()
		cfg.Seed = seed
		cat := cost.DefaultCatalog()
		env := Env{Catalog: &cat, Model: DefaultModel(), SLO: cfg.SLO, Load: LoadStats{MeanRPS: 150, PeakRPS: 300}}
		out := map[string]slo.Summary{}
		_ = out
		p, err := New("sagemaker", env)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), cfg, &cat, env.Model, p, newPoisson(300, 200000, seed))
		if err != nil {
			t.Fatal(err)
		}
		return *res
	}
	a, b := run(7), run(7)
	if !reflect.DeepEqual(a.Summary, b.Summary) || !reflect.DeepEqual(a.Series, b.Series) {
		t.Errorf("same seed, different results:\n-%+v\n+%+v", a.Summary, b.Summary)
	}
	if c := run(8); reflect.DeepEqual(a.Summary, c.Summary) {
		t.Errorf("different seeds gave identical summaries; the seed is not used")
	}
}

// TestNoiseFactors: with NoiseFactors every service time is the curve's times one of the
// factors (here at a load so light that most requests do not wait), drawn deterministically per seed; a
// factor that is not finite and > 0 is refused.
func TestNoiseFactors(t *testing.T) {
	run := func(fs []float64) slo.Summary {
		cfg := DefaultConfig()
		cfg.NoiseFactors = fs
		res, err := Run(context.Background(), cfg, nil, oneTypeModel(t, 10*time.Millisecond, 1), staticPolicy(1, batching.NewNone()), newPoisson(1, 400, 3))
		if err != nil {
			t.Fatal(err)
		}
		return res.Summary
	}
	if s := run([]float64{3}); math.Abs(s.LatencyMS.P50-30) > 0.5 {
		t.Fatalf("factor 3 on 10 ms: p50 %.2f ms, want 30", s.LatencyMS.P50)
	}
	a, b := run([]float64{1, 1, 1, 10}), run([]float64{1, 1, 1, 10})
	if !reflect.DeepEqual(a, b) || a.LatencyMS.Max < 99 || a.LatencyMS.P50 > 10.5 {
		t.Fatalf("factors {1,1,1,10}: p50 %.2f ms, max %.2f ms (want 10 and 100, the same twice)", a.LatencyMS.P50, a.LatencyMS.Max)
	}
	for _, bad := range [][]float64{{0}, {1, -1}, {math.Inf(1)}, {math.NaN()}} {
		cfg := DefaultConfig()
		cfg.NoiseFactors = bad
		if err := cfg.Validate(); err == nil {
			t.Errorf("NoiseFactors %v accepted", bad)
		}
		cfg.NoiseFactors, cfg.LaunchNoiseFactors = nil, bad
		if err := cfg.Validate(); err == nil {
			t.Errorf("LaunchNoiseFactors %v accepted", bad)
		}
	}
}

// TestLaunchNoiseFactors: LaunchNoiseFactors apply only while an instance launches; a fixed
// fleet never launches, so they change nothing there.
func TestLaunchNoiseFactors(t *testing.T) {
	run := func(fs []float64) slo.Summary {
		cfg := DefaultConfig()
		cfg.NoiseFactors, cfg.LaunchNoiseFactors = []float64{1}, fs
		res, err := Run(context.Background(), cfg, nil, oneTypeModel(t, 10*time.Millisecond, 1), staticPolicy(1, batching.NewNone()), newPoisson(1, 400, 3))
		if err != nil {
			t.Fatal(err)
		}
		return res.Summary
	}
	if a, b := run(nil), run([]float64{50}); !reflect.DeepEqual(a, b) {
		t.Fatalf("no launch, yet launch factors changed the run: p50 %.2f / %.2f ms", a.LatencyMS.P50, b.LatencyMS.P50)
	}
	e := &engine{types: []*vmType{{alive: 2, ready: 1}}}
	if !e.launching() {
		t.Fatal("2 alive, 1 ready: want launching")
	}
	e.types[0].ready = 2
	if e.launching() {
		t.Fatal("2 alive, 2 ready: want not launching")
	}
}

// opaque hides a batching policy's type from the engine, so that it is not inert and every
// Decide, Observe and MaxBatch call is made.
type opaque struct{ batching.Policy }

// TestInertPoliciesMatchOpaque: the calls the engine skips for an inert policy (None, Fixed: a
// Decide on an empty queue, Observe, MaxBatch) change nothing — the same run with the policy
// hidden behind another type gives the identical result, on a load that queues.
func TestInertPoliciesMatchOpaque(t *testing.T) {
	model := oneTypeModel(t, 10*time.Millisecond, 1)
	for _, mk := range []func() batching.Policy{
		func() batching.Policy { return batching.NewNone() },
		func() batching.Policy { return batching.NewFixed(2, 5*time.Millisecond) },
	} {
		run := func(p batching.Policy) *Result {
			cfg := DefaultConfig()
			cfg.NoiseCV = 0.3
			res, err := Run(context.Background(), cfg, nil, model, staticPolicy(2, p), newPoisson(170, 20000, 3))
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		p := mk()
		if !inert(p) || inert(opaque{p}) {
			t.Fatalf("%T: inert %v, hidden %v", p, inert(p), inert(opaque{p}))
		}
		a, b := run(p), run(opaque{mk()})
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%T: inert and hidden runs differ:\n-%+v\n+%+v", p, a.Summary, b.Summary)
		}
		if a.Summary.Requests == 0 || a.Summary.MeanBatchSize <= 1 && p.MaxBatch() > 1 {
			t.Errorf("%T: the run did not batch (%+v)", p, a.Summary)
		}
	}
}

// TestEpochMatchesAdd: the engine's offset-to-time conversion gives the Time epoch.Add gives
// (==: the same wall, ext and location), for the default epoch, other UTC ones, and epochs it
// must not build itself (another location, a monotonic reading).
func TestEpochMatchesAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, tc := range []struct {
		t    time.Time
		fast bool
	}{
		{DefaultEpoch, true},
		{time.Date(2026, 3, 1, 12, 30, 0, 999_999_999, time.UTC), true},
		{time.Date(1969, 12, 31, 23, 59, 59, 1, time.UTC), true},
		{time.Date(2026, 3, 1, 12, 30, 0, 5, time.FixedZone("x", 3600)), false},
		{time.Now(), false},
	} {
		ep := newEpoch(tc.t)
		if ep.fast != tc.fast {
			t.Errorf("epoch %v: fast %v, want %v", tc.t, ep.fast, tc.fast)
		}
		for k := range 100000 {
			off := rng.Int64N(int64(400*24*time.Hour)) - int64(time.Hour)
			if k%3 == 0 {
				off = int64(rng.IntN(3e9)) - 1e9
			}
			if got, want := ep.at(off), tc.t.Add(time.Duration(off)); got != want {
				t.Fatalf("epoch %v + %d: %#v, Add %#v", tc.t, off, got, want)
			}
		}
	}
}

// BenchmarkEpoch compares the engine's offset-to-time conversion with time.Time.Add.
func BenchmarkEpoch(b *testing.B) {
	ep := newEpoch(DefaultEpoch)
	var sink time.Time
	b.Run("at", func(b *testing.B) {
		for i := range b.N {
			sink = ep.at(int64(i) * 1_234_567)
		}
	})
	b.Run("Add", func(b *testing.B) {
		for i := range b.N {
			sink = DefaultEpoch.Add(time.Duration(int64(i) * 1_234_567))
		}
	})
	_ = sink
}

// TestNoiseBlockMatchesOneByOne: the factors noise hands out, drawn noiseBlock at a time, are
// the ones drawing each when asked gave, bit for bit, across several refills.
func TestNoiseBlockMatchesOneByOne(t *testing.T) {
	for _, cv := range []float64{0.05, 0.3, 1.5} {
		cfg := DefaultConfig()
		cfg.NoiseCV = cv
		e := &engine{cfg: cfg, rngSvc: rand.New(rand.NewPCG(7, 0x5e541ce))}
		e.noiseSig = math.Sqrt(math.Log1p(cv * cv))
		ref := rand.New(rand.NewPCG(7, 0x5e541ce))
		s := e.noiseSig
		for i := range 3*noiseBlock + 5 {
			want := math.Exp(s*ref.NormFloat64() - s*s/2)
			if got := e.noise(); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("cv %v, factor %d: %v, one by one %v", cv, i, got, want)
			}
		}
	}
}

// TestEpochSubMatchesSub: the engine's time-to-offset conversion is time.Time.Sub's, for times
// with and without a monotonic reading, in other locations, and far enough away that Sub
// saturates.
func TestEpochSubMatchesSub(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	far := []time.Time{time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2318, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1733, 1, 1, 0, 0, 0, 0, time.UTC)}
	for _, e := range []time.Time{DefaultEpoch, time.Date(2026, 3, 1, 12, 30, 0, 999_999_999, time.UTC),
		time.Date(2026, 3, 1, 12, 30, 0, 5, time.FixedZone("x", 3600)), time.Now()} {
		ep := newEpoch(e)
		check := func(u time.Time) {
			if got, want := ep.sub(u), int64(u.Sub(e)); got != want {
				t.Fatalf("epoch %v: %v − epoch = %d, Sub %d", e, u, got, want)
			}
		}
		for _, u := range far {
			check(u)
		}
		check(time.Now())
		for k := range 100000 {
			off := rng.Int64N(int64(400*24*time.Hour)) - int64(time.Hour)
			if k%3 == 0 {
				off = int64(rng.IntN(3e9)) - 1e9
			}
			u := e.Add(time.Duration(off))
			if k%5 == 0 {
				u = u.In(time.FixedZone("y", -7200))
			}
			check(u)
			check(ep.at(off))
		}
	}
}
