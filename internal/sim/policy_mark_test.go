package sim

import (
	"context"
	"fmt"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sloserve/sloserve/internal/admission"
	"github.com/sloserve/sloserve/internal/autoscale"
	markscale "github.com/sloserve/sloserve/internal/autoscale/mark"
	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

// markTestModel is Inception-v3 as MArk's implementation measured it (mark-constants.json,
// "tf": requests per minute per type at HANDLE_SIZE), with InferAll's Lambda curve at 3008 MB.
func markTestModel(t testing.TB) profile.Model {
	t.Helper()
	at := func(batch int, perMin float64) profile.Backend {
		c, err := profile.NewCurve([]profile.Point{{Batch: batch, Time: time.Duration(float64(batch) * 60 / perMin * float64(time.Second))}})
		if err != nil {
			t.Fatal(err)
		}
		return profile.Backend{Curve: c, Slots: 1}
	}
	ms := func(v ...float64) profile.Curve {
		ps := make([]profile.Point, len(v))
		for i, x := range v {
			ps[i] = profile.Point{Batch: 1 << i, Time: time.Duration(x * float64(time.Millisecond))}
		}
		c, err := profile.NewCurve(ps)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return profile.Model{
		Name: "inception-v3",
		VM: map[string]profile.Backend{
			"c5.large":   at(1, 284),
			"c5.xlarge":  at(2, 490),
			"c5.2xlarge": at(2, 771),
			"c5.4xlarge": at(2, 1080),
			"p2.xlarge":  at(8, 3320),
			"t2.medium":  at(1, 284),
		},
		Serverless: profile.MemoryTable{3008: ms(144, 144, 144, 150, 150, 152, 180, 230, 350)},
	}
}

// markSLO is MArk §5.1's SLO for Inception-v3: 98 % within 600 ms.
var markSLO = slo.Spec{Threshold: 600 * time.Millisecond, Target: 0.98}

// runPolicy runs the named policy with options (YAML) on tr and returns its Summary.
func runPolicy(t *testing.T, name, options string, cat *cost.Catalog, tr *trace.Trace) slo.Summary {
	t.Helper()
	env := Env{Catalog: cat, Model: markTestModel(t), SLO: markSLO, Load: Load(tr)}
	if options != "" {
		env.Decode = func(v any) error { return yaml.Unmarshal([]byte(options), v) }
	}
	p, err := New(name, env)
	if err != nil {
		t.Fatalf("New(%s): %v", name, err)
	}
	cfg := DefaultConfig()
	cfg.SLO, cfg.SeriesPeriod, cfg.Trace = markSLO, 0, tr.Name
	res, err := Run(context.Background(), cfg, cat, env.Model, p, tr.Arrivals(cfg.Seed))
	if err != nil {
		t.Fatalf("Run(%s): %v", name, err)
	}
	return res.Summary
}

// steps builds a rate series of 10 s steps from (minutes, rate) segments; a segment with a
// negative duration ramps linearly to its rate over |minutes|.
func steps(t *testing.T, name string, segs ...[2]float64) *trace.Trace {
	t.Helper()
	var rates []float64
	last := 0.0
	for _, s := range segs {
		n := int(abs(s[0]) * 6)
		for i := range n {
			r := s[1]
			if s[0] < 0 {
				r = last + (s[1]-last)*float64(i+1)/float64(n)
			}
			rates = append(rates, r)
		}
		last = s[1]
	}
	tr, err := trace.NewSeries(name, 10*time.Second, rates)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func markCatalog() *cost.Catalog {
	c := cost.DefaultCatalog()
	c.Spot.InterruptionsPerHour = 0
	return &c
}

func TestMarkSteadyBeatsSageMaker(t *testing.T) {
	tr := steps(t, "steady-90", [2]float64{20, 90})
	cat := markCatalog()
	mark := runPolicy(t, "mark", "", cat, tr)
	sm := runPolicy(t, "sagemaker", "type: c5.large", cat, tr)
	t.Logf("mark: attainment %.4f cost $%.3f; sagemaker: attainment %.4f cost $%.3f; ratio %.2f",
		mark.SLOAttainment, mark.CostUSD.Total, sm.SLOAttainment, sm.CostUSD.Total, sm.CostUSD.Total/mark.CostUSD.Total)
	if mark.SLOAttainment < markSLO.Target {
		t.Errorf("mark attainment %.4f, want ≥ %.2f", mark.SLOAttainment, markSLO.Target)
	}
	if mark.CostUSD.Total >= sm.CostUSD.Total {
		t.Errorf("mark cost $%.3f, want below sagemaker's $%.3f", mark.CostUSD.Total, sm.CostUSD.Total)
	}
}

// TestMarkSpotUnderInterruptions runs MArk-spot with frequent interruptions (every spot instance
// is interrupted about once per 20 minutes): standbys, serverless spill and re-planning keep the
// SLO, and spot stays cheaper than on-demand.
func TestMarkSpotUnderInterruptions(t *testing.T) {
	tr := steps(t, "steady-90", [2]float64{30, 90})
	cat := markCatalog()
	od := runPolicy(t, "mark", "", cat, tr)
	cat.Spot.InterruptionsPerHour = 3
	spot := runPolicy(t, "mark", "spot: true", cat, tr)
	t.Logf("on-demand: attainment %.4f cost $%.3f; spot: attainment %.4f cost $%.3f serverless %d",
		od.SLOAttainment, od.CostUSD.Total, spot.SLOAttainment, spot.CostUSD.Total, spot.ServedBy.Serverless)
	if spot.SLOAttainment < markSLO.Target {
		t.Errorf("mark spot attainment %.4f, want ≥ %.2f", spot.SLOAttainment, markSLO.Target)
	}
	if spot.CostUSD.Total >= od.CostUSD.Total {
		t.Errorf("mark spot cost $%.3f, want below on-demand $%.3f", spot.CostUSD.Total, od.CostUSD.Total)
	}
}

// TestMarkScalerInterruption checks the scaler's answer to interruption notices of 20, 40 and
// 80 % of a 20-instance spot fleet (MArk §5.3): it resumes standbys covering the lost capacity
// at once and re-plans, launching replacements for what the forecast still needs.
func TestMarkScalerInterruption(t *testing.T) {
	for _, frac := range []float64{0.2, 0.4, 0.8} {
		t.Run(fmt.Sprintf("%.0f%%", frac*100), func(t *testing.T) {
			cat := markCatalog()
			env := Env{Catalog: cat, Model: markTestModel(t), SLO: markSLO,
				Decode: func(v any) error {
					return yaml.Unmarshal([]byte("spot: true\ntypes: [c5.large, t2.medium]\nstandby: t2.medium"), v)
				}}
			p, err := New("mark", env)
			if err != nil {
				t.Fatal(err)
			}
			now := DefaultEpoch.Add(time.Hour)
			var fleet []autoscale.Member
			for i := range 20 {
				fleet = append(fleet, autoscale.Member{ID: fmt.Sprintf("vm-%d", i), Type: "c5.large/spot", State: provider.StateReady, Spot: true, Launched: DefaultEpoch, Ready: DefaultEpoch.Add(time.Minute)})
			}
			// One hour of 80 req/s (≈ 17 c5.large at 4.73 req/s each with 1.2 headroom ≈ 20).
			var hist []autoscale.Sample
			for s := range 3600 {
				hist = append(hist, autoscale.Sample{Start: DefaultEpoch.Add(time.Duration(s) * time.Second), Period: time.Second, Arrivals: 80, Completed: 80})
			}
			p.Scaler.Scale(autoscale.Snapshot{Fleet: fleet, History: hist}, now)
			n := int(frac * 20)
			for i := range n {
				fleet[i].State = provider.StateInterrupted
			}
			d := p.Scaler.Scale(autoscale.Snapshot{Fleet: fleet, History: hist[len(hist)-1:]}, now.Add(time.Second))
			standby, spot := 0, 0
			for _, sp := range d.Launch {
				switch sp.Type {
				case "t2.medium":
					standby++
				case "c5.large/spot", "c5.large":
					spot++
				}
			}
			if standby != n {
				t.Errorf("standbys resumed = %d, want %d (one per lost c5.large of equal capacity)", standby, n)
			}
			if spot == 0 {
				t.Errorf("re-plan launched no replacement; decision %+v", d)
			}
			if d.Reason != markscale.ReasonSpot {
				t.Errorf("Reason = %q, want %q", d.Reason, markscale.ReasonSpot)
			}
		})
	}
}

func TestMarkDeterministic(t *testing.T) {
	tr := steps(t, "ramp", [2]float64{5, 40}, [2]float64{-3, 120}, [2]float64{5, 120})
	a := runPolicy(t, "mark", "spot: true", markCatalog(), tr)
	b := runPolicy(t, "mark", "spot: true", markCatalog(), tr)
	if a.CostUSD != b.CostUSD || a.SLOAttainment != b.SLOAttainment || a.LatencyMS != b.LatencyMS || a.ServedBy != b.ServedBy {
		t.Errorf("two runs with the same seed differ (-first +second):\n-%+v\n+%+v", a, b)
	}
}

func TestMarkOptionErrors(t *testing.T) {
	for _, tc := range []struct{ name, opts string }{
		{"bad forecaster", "forecaster: prophet"},
		{"bad headroom", "headroom: 0.5"},
		{"bad batch budget", "batch_budget: 2"},
		{"unprofiled type", "types: [m5.large]"},
		{"unknown standby", "standby: z9.huge"},
		{"bad slo monitor", "slo_monitor: {window: -1}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := Env{Catalog: markCatalog(), Model: markTestModel(t), SLO: markSLO,
				Decode: func(v any) error { return yaml.Unmarshal([]byte(tc.opts), v) }}
			if _, err := New("mark", env); err == nil {
				t.Errorf("New(mark, %q): want error", tc.opts)
			}
		})
	}
}

// TestMarkBouncerFollowsAdmission: the Bouncer (MArk §4.1) admits to the fleet exactly what the
// one admission estimator admits (the live gateway's rule) and spills the rest to the serverless
// tier; in the simulator the estimator has learned the batch cost from the batches seen.
func TestMarkBouncerFollowsAdmission(t *testing.T) {
	env := Env{Catalog: markCatalog(), Model: markTestModel(t), SLO: markSLO,
		Decode: func(v any) error { return yaml.Unmarshal([]byte("types: [c5.large]"), v) }}
	p, err := New("mark", env)
	if err != nil {
		t.Fatal(err)
	}
	now := DefaultEpoch.Add(time.Hour)
	ms := time.Millisecond
	for _, tc := range []struct {
		name   string
		queued int
		want   Route
	}{{"17 queued on ten busy slots: 592 ms + margin past 600 ms", 17, RouteServerless}, {"one queued: 337 ms + one batch in time", 1, RouteVM}} {
		f := admission.Facts{Queued: tc.queued + 1, MaxBatch: 1, Slots: 10, Busy: 10, BusyLeft: 10 * 105 * ms,
			Cost: admission.BatchCost{Fixed: 211 * ms}, Budget: markSLO.Threshold, Margin: admission.MarginFloor}
		v := TierView{QueueLen: tc.queued, Ready: 10, Slots: 10, Admission: admission.Admit(f, now.Add(markSLO.Threshold), now)}
		if got := p.Router.Route(Request{Arrival: now, Deadline: now.Add(markSLO.Threshold)}, v, now); got != tc.want {
			t.Errorf("%s: Route = %v, want %v (verdict %+v)", tc.name, got, tc.want, v.Admission)
		}
	}
	// No usable instance: the estimator admits the request to wait for one (the live gateway's
	// only choice); the Bouncer spills it to the serverless tier instead.
	none := TierView{Admission: admission.Admit(admission.Facts{Queued: 1}, now.Add(markSLO.Threshold), now)}
	if !none.Admission.Admit {
		t.Fatalf("no instance: verdict %+v, want admitted to wait", none.Admission)
	}
	if got := p.Router.Route(Request{Arrival: now, Deadline: now.Add(markSLO.Threshold)}, none, now); got != RouteServerless {
		t.Errorf("no instance: Route = %v, want the serverless tier", got)
	}
}
