package sim

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/trace"
)

// scenario is the outcome of one MArk §5.3 microbenchmark run (Fig. 9).
type scenario struct {
	attainment float64       // over the whole run
	p99MS      float64       // over the whole run
	spilled    int64         // requests served by the serverless tier
	preP95MS   float64       // mean per-minute p95 over the 5 minutes before the event
	minAtt     float64       // lowest per-minute attainment from the event on
	peakP95MS  float64       // highest per-minute p95 from the event on
	overSLO    int           // minutes from the event on whose p95 exceeds the SLO threshold
	recovery   time.Duration // event → end of the last minute whose p95 exceeds the SLO (0: none did)
	normal     time.Duration // event → end of the last minute whose p95 exceeds 1.1 × preP95MS
	costUSD    float64
	fleet      int // VM instances (launching or ready) at the event
	notices    int // spot interruption notices over the run
	series     Series
}

// runScenario runs the named policy on tr with one-minute series and the scheduled
// interruptions, and measures latency around the event at offset event.
func runScenario(t *testing.T, name, options string, cat *cost.Catalog, tr *trace.Trace, event time.Duration, intr []Interruption) scenario {
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
	cfg.SLO, cfg.SeriesPeriod, cfg.Trace, cfg.Interruptions = markSLO, time.Minute, tr.Name, intr
	res, err := Run(context.Background(), cfg, cat, env.Model, p, tr.Arrivals(cfg.Seed))
	if err != nil {
		t.Fatalf("Run(%s): %v", name, err)
	}
	s := scenario{attainment: res.Summary.SLOAttainment, p99MS: res.Summary.LatencyMS.P99,
		spilled: res.Summary.ServedBy.Serverless, costUSD: res.Summary.CostUSD.Total, series: res.Series,
		notices: int(res.Summary.Extra["spot_interruptions"])}
	slo := float64(markSLO.Threshold.Milliseconds())
	pre := 0
	for _, pt := range res.Series.Points {
		if pt.At <= event && pt.At > event-5*time.Minute {
			s.preP95MS += pt.P95MS
			pre++
		}
	}
	if pre > 0 {
		s.preP95MS /= float64(pre)
	}
	for _, pt := range res.Series.Points {
		if pt.At <= event {
			s.fleet = 0
			for _, c := range pt.Instances {
				s.fleet += c
			}
			continue
		}
		s.peakP95MS = max(s.peakP95MS, pt.P95MS)
		if s.minAtt == 0 || pt.Attainment < s.minAtt {
			s.minAtt = pt.Attainment
		}
		if pt.P95MS > slo {
			s.overSLO++
			s.recovery = pt.At - event
		}
		if pt.P95MS > 1.1*s.preP95MS {
			s.normal = pt.At - event
		}
	}
	return s
}

// TestMarkSpotInterruptionScenario is MArk §5.3's spot microbenchmark (Fig. 9d) as full runs: a
// MArk-spot fleet of about 20 c5.large spot instances serving Inception-v3 at 64 req/s receives,
// at minute 10, the two-minute interruption notice for 20, 40 and 80 % of its ready spot
// instances; t2.medium standbys are resumed, the planner re-plans and the Bouncer spills to
// the serverless tier meanwhile. Attainment over the 30-minute run stays ≥ SL_min and the
// per-minute p95 comes back under the SLO.
func TestMarkSpotInterruptionScenario(t *testing.T) {
	const event = 10 * time.Minute
	for _, frac := range []float64{0.2, 0.4, 0.8} {
		t.Run(fmt.Sprintf("%.0f%%", frac*100), func(t *testing.T) {
			tr := steps(t, "steady-64", [2]float64{30, 64})
			s := runScenario(t, "mark", "spot: true\ntypes: [c5.large, t2.medium]\nstandby: t2.medium", markCatalog(), tr,
				event, []Interruption{{At: event, Fraction: frac}})
			logScenario(t, s, event)
			checkScenario(t, s)
		})
	}
}

// TestMarkSurgeScenario is MArk §5.3's unexpected surge (Fig. 9a–c) as full runs: 60 req/s for
// 10 minutes, then +50, +75 and +100 % within 2 minutes, held for 10 minutes; mark against the
// sagemaker baseline.
func TestMarkSurgeScenario(t *testing.T) {
	const event = 10 * time.Minute
	for _, up := range []float64{0.5, 0.75, 1.0} {
		t.Run(fmt.Sprintf("+%.0f%%", up*100), func(t *testing.T) {
			const base = 60.0
			tr := steps(t, "surge", [2]float64{10, base}, [2]float64{-2, base * (1 + up)}, [2]float64{10, base * (1 + up)})
			m := runScenario(t, "mark", "", markCatalog(), tr, event, nil)
			sm := runScenario(t, "sagemaker", "type: c5.large", markCatalog(), tr, event, nil)
			logScenario(t, m, event)
			t.Logf("sagemaker: attainment %.4f p99 %.0f ms pre-event p95 %.0f ms peak p95 %.0f ms cost $%.3f",
				sm.attainment, sm.p99MS, sm.preP95MS, sm.peakP95MS, sm.costUSD)
			checkScenario(t, m)
		})
	}
}

func logScenario(t *testing.T, s scenario, event time.Duration) {
	t.Helper()
	t.Logf("fleet %d VMs, %d interrupted; attainment %.4f p99 %.0f ms spilled %d cost $%.3f; p95 before %.0f ms, peak after %.0f ms, lowest minute attainment %.4f, %d min over the SLO, under the SLO after %v, back to normal after %v",
		s.fleet, s.notices, s.attainment, s.p99MS, s.spilled, s.costUSD, s.preP95MS, s.peakP95MS, s.minAtt, s.overSLO, s.recovery, s.normal)
	for _, pt := range s.series.Points {
		if pt.At >= event-2*time.Minute && pt.At <= event+12*time.Minute {
			n := 0
			for _, c := range pt.Instances {
				n += c
			}
			t.Logf("  min %2.0f: %5.1f req/s, p95 %4.0f ms, attainment %.4f, %d VMs, %d functions", pt.At.Minutes(), pt.ArrivalRPS, pt.P95MS, pt.Attainment, n, pt.Serverless)
		}
	}
}

func checkScenario(t *testing.T, s scenario) {
	t.Helper()
	if s.attainment < markSLO.Target {
		t.Errorf("attainment %.4f over the run, want ≥ %.2f", s.attainment, markSLO.Target)
	}
	if n := len(s.series.Points); n == 0 || s.series.Points[n-1].P95MS > float64(markSLO.Threshold.Milliseconds()) {
		t.Errorf("p95 did not recover under the SLO by the end of the run; series %+v", s.series.Points)
	}
}

func TestInterruptionsValidate(t *testing.T) {
	cases := []struct {
		name string
		in   []Interruption
		want string // "" for valid
	}{
		{"none", nil, ""},
		{"ascending", []Interruption{{At: time.Minute, Fraction: 0.2}, {At: time.Minute, Fraction: 1}}, ""},
		{"negative at", []Interruption{{At: -time.Second, Fraction: 0.2}}, "sim.interruptions[0].at"},
		{"descending", []Interruption{{At: 2 * time.Minute, Fraction: 0.2}, {At: time.Minute, Fraction: 0.2}}, "sim.interruptions[1].at"},
		{"zero fraction", []Interruption{{At: time.Minute}}, "sim.interruptions[0].fraction"},
		{"fraction above one", []Interruption{{At: time.Minute, Fraction: 1.5}}, "sim.interruptions[0].fraction"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Interruptions = c.in
			err := cfg.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("Validate() = %v, want an error naming %q", err, c.want)
			}
		})
	}
}

// TestSageMakerPricing checks that the sagemaker baseline launches the SageMaker-hosted type by
// default and the bare EC2 type with pricing: ec2, with the same fleet decisions, so the cost
// ratio is SageMaker's 1.4× hosting premium.
func TestSageMakerPricing(t *testing.T) {
	tr := steps(t, "steady-60", [2]float64{10, 60})
	hosted := runPolicy(t, "sagemaker", "type: c5.large", markCatalog(), tr)
	ec2 := runPolicy(t, "sagemaker", "type: c5.large\npricing: ec2", markCatalog(), tr)
	if _, ok := hosted.InstanceHours["ml.c5.large"]; !ok || len(hosted.InstanceHours) != 1 {
		t.Errorf("default pricing ran %v, want only ml.c5.large", hosted.InstanceHours)
	}
	if _, ok := ec2.InstanceHours["c5.large"]; !ok || len(ec2.InstanceHours) != 1 {
		t.Errorf("pricing ec2 ran %v, want only c5.large", ec2.InstanceHours)
	}
	if r := hosted.CostUSD.Total / ec2.CostUSD.Total; r < 1.399 || r > 1.401 {
		t.Errorf("hosted / EC2 cost = %.4f ($%.3f / $%.3f), want 1.4", r, hosted.CostUSD.Total, ec2.CostUSD.Total)
	}
	if hosted.SLOAttainment != ec2.SLOAttainment || hosted.LatencyMS != ec2.LatencyMS {
		t.Errorf("hosting changed the service (-ec2 +hosted):\n-%+v\n+%+v", ec2, hosted)
	}
	env := Env{Catalog: markCatalog(), Model: markTestModel(t), SLO: markSLO, Load: Load(tr),
		Decode: func(v any) error { return yaml.Unmarshal([]byte("pricing: azure"), v) }}
	if _, err := New("sagemaker", env); err == nil || !strings.Contains(err.Error(), "sagemaker.pricing") {
		t.Errorf("New(sagemaker, pricing: azure) error = %v, want one naming sagemaker.pricing", err)
	}
}
