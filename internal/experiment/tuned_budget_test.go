package experiment

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/experiment/tune"
	"github.com/sloserve/sloserve/internal/sim"
	"github.com/sloserve/sloserve/internal/trace"
)

// TestMissAllowance: the allowance is the most misses that still attain the target, as
// slo.Recorder divides — one more would not.
func TestMissAllowance(t *testing.T) {
	for _, c := range []struct {
		n      int64
		target float64
		want   int64
	}{{100, 0.98, 2}, {1000, 0.95, 50}, {99, 0.98, 1}, {0, 0.98, 0}, {10, 1, 0}, {10, 0, 10}, {7, 1.5, 0}} {
		if got := MissAllowance(c.n, c.target); got != c.want {
			t.Errorf("MissAllowance(%d, %v) = %d, want %d", c.n, c.target, got, c.want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		n := 1 + rng.Int64N(50_000_000)
		target := 0.9 + 0.1*rng.Float64()
		m := MissAllowance(n, target)
		meets := func(m int64) bool { return float64(n-m)/float64(n) >= target }
		if m < 0 || m > n || (m > 0 && !meets(m)) || (m < n && meets(m+1)) {
			t.Fatalf("MissAllowance(%d, %v) = %d: meets(m) %v, meets(m+1) %v", n, target, m, meets(m), meets(m+1))
		}
	}
}

// TestExactMissBudget: with the tuners' budget (the part's exact request count), a candidate
// that meets the target runs to the same summary as without one, and one that stops early is
// one that misses it; the count is the full run's requests.
func TestExactMissBudget(t *testing.T) {
	w, tuning, _, parts := excerptWorld(t, DefaultScoreSettings()[0], 5*time.Minute)
	target := w.Config.SLO.Target
	budget := missBudget(tuning, w.Config.Seed, target)
	load := sim.Load(tuning)
	var met, stopped int
	for _, mb := range []int{3008, 2048, 1024, 512, 256} {
		o := tune.Options{"memory_mb": mb}
		full, err := w.RunPolicy(context.Background(), "lambda", o, tuning, parts[0], load, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n := arrivalMemo.Count(tuning, w.Config.Seed); full.Requests != n {
			t.Fatalf("arrivalMemo.Count %d, the run's requests %d", n, full.Requests)
		}
		s, err := w.RunPolicy(context.Background(), "lambda", o, tuning, parts[0], load, budget)
		switch {
		case errors.Is(err, sim.ErrMissBudget):
			stopped++
			if full.SLOAttainment >= target {
				t.Errorf("%d MB: stopped early, but the full run attains %.5f ≥ %v", mb, full.SLOAttainment, target)
			}
		case err != nil:
			t.Fatal(err)
		default:
			if full.SLOAttainment >= target {
				met++
			}
			if s.SLOAttainment != full.SLOAttainment || s.CostUSD.Total != full.CostUSD.Total {
				t.Errorf("%d MB: with the budget %.5f $%v, without %.5f $%v", mb, s.SLOAttainment, s.CostUSD.Total, full.SLOAttainment, full.CostUSD.Total)
			}
		}
	}
	if met == 0 || stopped == 0 {
		t.Fatalf("met %d, stopped %d: the test needs candidates on both sides of the target", met, stopped)
	}
}

// TestTunePrefixChecksOnWholePart: the coarse-to-fine search (World.TunePrefix) searches a
// prefix of the tuning part but answers only with options whose run on the whole part met the
// target, and reports that whole-part run.
func TestTunePrefixChecksOnWholePart(t *testing.T) {
	w, tuning, eval, parts := excerptWorld(t, DefaultScoreSettings()[1], 6*time.Minute)
	w.TunePrefix = 2 * time.Minute
	for _, b := range DefaultTunedBaselines() {
		if b.Name != "lambda-tuned" && b.Name != "sagemaker-ec2-tuned" {
			continue
		}
		r, err := w.RunTuned(context.Background(), b, tuning, eval, parts[0], parts[1])
		if err != nil {
			t.Fatal(err)
		}
		if !r.Search.Met || r.Search.Runs < 2 || r.Prefix != w.TunePrefix {
			t.Fatalf("%s: met %v after %d runs on a %v prefix, want a met answer searched on the %v prefix and checked on the whole part",
				b.Name, r.Search.Met, r.Search.Runs, r.Prefix, w.TunePrefix)
		}
		o := maps.Clone(r.Search.Options)
		s, err := w.RunPolicy(context.Background(), b.Policy, o, tuning, parts[0], sim.Load(tuning), 0)
		if err != nil {
			t.Fatal(err)
		}
		if s.SLOAttainment < w.Config.SLO.Target || s.SLOAttainment != r.Search.Tuning.Attainment || s.CostUSD.Total != r.Search.Tuning.Cost {
			t.Errorf("%s %s: whole part %.5f $%v, reported %.5f $%v (target %v)", b.Name, o.Key(), s.SLOAttainment, s.CostUSD.Total,
				r.Search.Tuning.Attainment, r.Search.Tuning.Cost, w.Config.SLO.Target)
		}
	}
}

// TestLambdaTunedInBatchSetting: BATCH's setting fits TF-resnetV2's Lambda times on 1280–3008 MB
// only, so the tuned Lambda baseline offers no other size (a probe of 768 MB used to fail the
// search and drop the lambda-tuned row from every trace of the setting), and it runs.
func TestLambdaTunedInBatchSetting(t *testing.T) {
	st := DefaultScoreSettings()[2]
	w, tuning, eval, parts := excerptWorld(t, st, 4*time.Minute)
	ks := lambdaKnobs(w.Model, w.Catalog)
	if len(ks) != 1 || len(ks[0].Values) == 0 {
		t.Fatalf("%s setting: lambda knobs %+v, want one memory knob with values", st.Name, ks)
	}
	for _, v := range ks[0].Values {
		if _, err := w.Model.Serverless.At(v.(int)); err != nil {
			t.Errorf("memory %v MB offered: %v", v, err)
		}
	}
	for _, b := range DefaultTunedBaselines() {
		if b.Name != "lambda-tuned" {
			continue
		}
		r, err := w.RunTuned(context.Background(), b, tuning, eval, parts[0], parts[1])
		if err != nil || r.Search.Runs == 0 || r.Summary.Requests == 0 {
			t.Fatalf("lambda-tuned in the %s setting: %+v, %v; want a tuned row", st.Name, r.Search, err)
		}
	}
}

// excerptWorld loads setting st's world and the committed 07:00 Twitter excerpt rescaled to the
// setting's peak, split as the scoreboard splits it with parts capped at d.
func excerptWorld(t *testing.T, st ScoreSetting, d time.Duration) (World, *trace.Trace, *trace.Trace, [2]TracePart) {
	t.Helper()
	w, err := loadWorld(ScoreboardConfig{Root: "../.."}, st)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Open("../../testdata/traces/twitter-2017-05-25-0700-30min.rps.csv")
	if err == nil {
		tr, err = scaleTrace(tr, st.MaxRPS, 0)
	}
	if err != nil {
		t.Fatal(err)
	}
	tuning, eval, parts, err := Split("twitter-2017-05-25-0700-30min.rps.csv", tr, d)
	if err != nil {
		t.Fatal(err)
	}
	return w, tuning, eval, parts
}
