package sim

import (
	"context"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

// poissonArrivals is a seeded Poisson arrival stream of a fixed length.
type poissonArrivals struct {
	rng      *rand.Rand
	rate     float64
	at, stop time.Duration
}

func (p *poissonArrivals) Next() (time.Duration, bool) {
	p.at += time.Duration(p.rng.ExpFloat64() / p.rate * float64(time.Second))
	return p.at, p.at < p.stop
}

// TestBatchPolicyBeatsLambda runs the batch policy and vanilla lambda on the same two hours of
// 40 req/s Poisson arrivals with BATCH's linear profile (34 ms per request + 10 ms): batch must
// meet the p95 SLO and cost less per request.
func TestBatchPolicyBeatsLambda(t *testing.T) {
	t.Parallel() // long and independent: lets the package's tests use both cores
	curve, err := profile.NewCurve([]profile.Point{{Batch: 1, Time: 44 * time.Millisecond}, {Batch: 20, Time: 690 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	model := profile.Model{Name: "linear", Serverless: profile.MemoryTable{3008: curve}}
	cfg := DefaultConfig()
	cfg.SLO = slo.Spec{Threshold: 300 * time.Millisecond, Target: 0.95}
	cfg.NoiseCV = 0
	got := map[string]slo.Summary{}
	for _, name := range []string{"lambda", "batch"} {
		env := Env{Model: model, SLO: cfg.SLO}
		if name == "batch" {
			env.Decode = func(v any) error {
				o := v.(*BatchOptions)
				o.Window, o.Period = 10*time.Minute, 10*time.Minute
				return nil
			}
		}
		pol, err := New(name, env)
		if err != nil {
			t.Fatal(err)
		}
		arr := &poissonArrivals{rng: rand.New(rand.NewPCG(3, 4)), rate: 40, stop: 2 * time.Hour}
		res, err := Run(context.Background(), cfg, nil, model, pol, arr)
		if err != nil {
			t.Fatal(err)
		}
		got[name] = res.Summary
		s := res.Summary
		t.Logf("%s: requests %d attainment %.4f p95 %.1f ms mean batch %.2f cost $%.4g ($%.3g/req)", name, s.Requests, s.SLOAttainment,
			s.LatencyMS.P95, s.MeanBatchSize, s.CostUSD.Total, s.CostUSD.Total/float64(max(s.Completed, 1)))
	}
	b, l := got["batch"], got["lambda"]
	if b.SLOAttainment < 0.95 {
		t.Errorf("batch attainment %.4f < 0.95", b.SLOAttainment)
	}
	if b.CostUSD.Total >= l.CostUSD.Total {
		t.Errorf("batch cost $%.4g ≥ lambda $%.4g", b.CostUSD.Total, l.CostUSD.Total)
	}
}

// TestBatchPolicyTwitterDay replays the Twitter day (BATCH's 24 hourly MAP(2) fits, one hour
// each) through the project simulator with TF-resnetV2 on Lambda (3008 MB), p95 ≤ 3.053 s, for
// the batch and lambda policies. It takes about a minute: set SLOSERVE_TWITTER_DAY=1 to run it.
func TestBatchPolicyTwitterDay(t *testing.T) {
	if os.Getenv("SLOSERVE_TWITTER_DAY") == "" {
		t.Skip("long: set SLOSERVE_TWITTER_DAY=1")
	}
	dir := "../../../shared/data/traces/batch-map-fits/twitter"
	pf, err := os.Open("../../../shared/data/profiles/batch-lambda-polynomials.json")
	if err != nil {
		t.Skipf("shared data not available: %v", err)
	}
	polys, err := profile.ReadBatchPolynomials(pf)
	pf.Close()
	if err != nil {
		t.Fatal(err)
	}
	var maps []trace.MAP2
	for h := 1; h <= 24; h++ {
		m, err := trace.OpenMAP2(dir, h)
		if err != nil {
			t.Skipf("shared data not available: %v", err)
		}
		maps = append(maps, m)
	}
	model := profile.Model{Name: "TF-resnetV2", Serverless: polys["TF-resnetV2"]}
	cfg := DefaultConfig()
	cfg.SLO = slo.Spec{Threshold: 3053 * time.Millisecond, Target: 0.95}
	for _, noise := range []float64{0, DefaultNoiseCV} {
		cfg.NoiseCV = noise
		for _, name := range []string{"lambda", "batch"} {
			pol, err := New(name, Env{Model: model, SLO: cfg.SLO})
			if err != nil {
				t.Fatal(err)
			}
			arr := trace.Until(trace.PiecewiseMAP(maps, time.Hour, 7), 24*time.Hour)
			res, err := Run(context.Background(), cfg, nil, model, pol, arr)
			if err != nil {
				t.Fatal(err)
			}
			s := res.Summary
			t.Logf("noise %.2f %s: requests %d attainment %.4f p95 %.0f ms mean batch %.2f cost $%.2f ($%.4g/req) cold starts %d", noise, name,
				s.Requests, s.SLOAttainment, s.LatencyMS.P95, s.MeanBatchSize, s.CostUSD.Total, s.CostUSD.Total/float64(max(s.Completed, 1)), s.ColdStarts)
		}
	}
}
