package sim

import (
	"context"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	batchpol "github.com/sloserve/sloserve/internal/policy/batch"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/slo"
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
				o := v.(*batchpol.Options)
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

// resnetV2 returns BATCH's TF-resnetV2 serverless profile (batch-lambda-polynomials.json), or
// skips when the shared data is absent.
func resnetV2(t *testing.T) profile.Model {
	t.Helper()
	pf, err := os.Open("../../../shared/data/profiles/batch-lambda-polynomials.json")
	if err != nil {
		t.Skipf("shared data not available: %v", err)
	}
	defer pf.Close()
	polys, err := profile.ReadBatchPolynomials(pf)
	if err != nil {
		t.Fatal(err)
	}
	return profile.Model{Name: "TF-resnetV2", Serverless: polys["TF-resnetV2"]}
}

// TestBatchPolicyMeetsSLOUnderServiceNoise is issue #18's acceptance run for BATCH: the batch
// policy on TF-resnetV2 (3008 MB), 30 minutes of 50 req/s Poisson arrivals, p95 ≤ 5 s, with the
// simulator's default service noise (CV 0.05). A plan whose deterministic P_95 sits a few ms under
// the SLO misses it on a third of the requests; constraining the predicted attainment at the
// noise's CV (policies.batch.service_cv) meets the target.
func TestBatchPolicyMeetsSLOUnderServiceNoise(t *testing.T) {
	cfg, res := runBatchAcceptance(t, nil)
	s := res.Summary
	t.Logf("batch, noise CV %.2f: requests %d attainment %.4f p95 %.0f ms mean batch %.2f $%.4g/req", cfg.NoiseCV,
		s.Requests, s.SLOAttainment, s.LatencyMS.P95, s.MeanBatchSize, s.CostUSD.Total/float64(max(s.Completed, 1)))
	if s.SLOAttainment < 0.95 {
		t.Errorf("attainment %.4f < target 0.95 (p95 %.0f ms, SLO 5000 ms)", s.SLOAttainment, s.LatencyMS.P95)
	}
}

// TestBatchPolicyPinAndPlans: the batch policy reports the plans it put in force (Result.Plans),
// and policies.batch.pin replays one fixed plan. Pinned to the plan BATCH's deterministic
// optimiser picks for the acceptance setting of TestBatchPolicyMeetsSLOUnderServiceNoise (B 7,
// T 150 ms: P95 4994 ms, predicted to serve 0.698 within the SLO under a 5 % noise), the
// simulator measures what the model predicts; the online policy's plans are the vanilla start
// and the first fit, planned for CV 0.05.
func TestBatchPolicyPinAndPlans(t *testing.T) {
	for _, tc := range []struct {
		name string
		pin  batchpol.Pin
	}{{"online", batchpol.Pin{}}, {"pinned", batchpol.Pin{MaxBatch: 7, Timeout: 150 * time.Millisecond}}} {
		_, res := runBatchAcceptance(t, func(v any) error {
			v.(*batchpol.Options).Pin = tc.pin
			return nil
		})
		s := res.Summary
		t.Logf("%s: attainment %.4f p95 %.0f ms mean batch %.2f", tc.name, s.SLOAttainment, s.LatencyMS.P95, s.MeanBatchSize)
		for _, pc := range res.Plans {
			t.Logf("  at %v: B %d T %v memory %d MB, service CV %g: %s", pc.At.Sub(res.Plans[0].At), pc.Plan.MaxBatch, pc.Plan.Timeout,
				pc.Plan.MemoryMB, pc.Plan.ServiceCV, pc.Plan.Reason)
		}
		switch tc.name {
		case "online":
			if len(res.Plans) != 2 || res.Plans[0].Plan.MaxBatch != 1 || res.Plans[1].Plan.ServiceCV != DefaultNoiseCV {
				t.Errorf("plans: want the vanilla start and one fit planned for CV %g, got %+v", DefaultNoiseCV, res.Plans)
			}
		case "pinned":
			if len(res.Plans) != 1 || res.Plans[0].Plan.MaxBatch != 7 || res.Plans[0].Plan.Timeout != 150*time.Millisecond {
				t.Errorf("plans: want the pinned (7, 150ms) only, got %+v", res.Plans)
			}
			if s.SLOAttainment < 0.66 || s.SLOAttainment > 0.74 || s.MeanBatchSize < 6.4 {
				t.Errorf("pinned (7, 150 ms): attainment %.4f mean batch %.2f, want ≈ 0.70 and ≈ 6.5 (the model's 0.698, 6.54)", s.SLOAttainment, s.MeanBatchSize)
			}
		}
	}
}

// runBatchAcceptance runs the batch policy (options decoded by decode; nil: the defaults) in the
// acceptance setting of issue #18: BATCH's TF-resnetV2 profile, 30 minutes of Poisson arrivals
// at 50 req/s, p95 ≤ 5 s, the simulator's default service noise.
func runBatchAcceptance(t *testing.T, decode func(any) error) (Config, *Result) {
	t.Helper()
	model := resnetV2(t)
	cfg := DefaultConfig()
	cfg.SLO = slo.Spec{Threshold: 5 * time.Second, Target: 0.95}
	pol, err := New("batch", Env{Model: model, SLO: cfg.SLO, Decode: decode})
	if err != nil {
		t.Fatal(err)
	}
	arr := &poissonArrivals{rng: rand.New(rand.NewPCG(18, 6)), rate: 50, stop: 30 * time.Minute}
	res, err := Run(context.Background(), cfg, nil, model, pol, arr)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, res
}
