package sim

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/admission"
	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/policy"
)

// TestVerdictRoutersMatchRoute: every registered policy whose Router is a VerdictRouter
// answers RouteVerdict as Route does for any request and view carrying that verdict (before and
// after a run moved its state), and a run that asks RouteVerdict on offsets (the engine's path)
// equals, summary for summary, the run that asks Route with the request's times and the view;
// on a model with a serverless tier and on one without, at six times the load the policy was
// told (it queues and spills) or told none (no fleet at the start), with noisy batches.
func TestVerdictRoutersMatchRoute(t *testing.T) {
	reasons := []string{admission.ReasonNoInstance, admission.ReasonFreeSlot, admission.ReasonColdBound,
		admission.ReasonNoEstimate, admission.ReasonUnreachable, admission.ReasonReachable}
	noSL := DefaultModel()
	noSL.Serverless = nil
	checked := 0
	for _, model := range []struct {
		name  string
		model Env
	}{
		{"with a serverless tier", Env{Model: DefaultModel(), Load: LoadStats{MeanRPS: 50, PeakRPS: 80}}},
		{"with a serverless tier, told no load", Env{Model: DefaultModel()}}, // no fleet at the start: no instance usable
		{"without", Env{Model: noSL, Load: LoadStats{MeanRPS: 50, PeakRPS: 80}}},
	} {
		for _, name := range Names() {
			cat := cost.DefaultCatalog()
			cfg := DefaultConfig()
			cfg.NoiseCV = 0.5 // batches overrun their estimates: the verdicts' Done counts
			env := model.model
			env.Catalog, env.SLO = &cat, cfg.SLO
			build := func() Policy {
				p, err := New(name, env)
				if errors.Is(err, ErrNotImplemented) || err != nil && env.Model.Serverless == nil {
					return Policy{} // not on this port, or needs the serverless tier
				}
				if err != nil {
					t.Fatalf("%s %s: New: %v", name, model.name, err)
				}
				return p
			}
			p := build()
			vr, ok := p.Router.(VerdictRouter)
			if !ok {
				continue
			}
			checked++
			rng := rand.New(rand.NewPCG(uint64(checked), 3))
			agree := func(when string) {
				now := time.Unix(1_700_000_000, 0)
				for _, admit := range []bool{true, false} {
					for _, reason := range reasons {
						for range 20 {
							v := TierView{QueueLen: rng.IntN(50), FreeSlots: rng.IntN(4), MaxBatch: 1 + rng.IntN(8), Ready: rng.IntN(5), Slots: rng.IntN(10),
								BatchTime: time.Duration(rng.IntN(100)) * time.Millisecond,
								Admission: admission.Verdict{Admit: admit, Reason: reason, Done: now.Add(time.Duration(rng.IntN(500)) * time.Millisecond)}}
							r := Request{Arrival: now, Deadline: now.Add(cfg.SLO.Threshold)}
							if got, want := vr.RouteVerdict(admit, reason), p.Router.Route(r, v, now); got != want {
								t.Fatalf("%s %s %s: RouteVerdict(%v, %q) = %v, Route = %v", name, model.name, when, admit, reason, got, want)
							}
						}
					}
				}
			}
			agree("as built")
			res, err := Run(context.Background(), cfg, &cat, env.Model, p, newPoisson(300, 30000, 5))
			if err != nil {
				t.Fatal(err)
			}
			agree("after a run")
			q := build()
			q.Router = policy.RouterFunc(q.Router.Route) // hides RouteVerdict: the engine asks Route
			alone, err := Run(context.Background(), cfg, &cat, env.Model, q, newPoisson(300, 30000, 5))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res.Summary, alone.Summary) {
				t.Errorf("%s %s: the run on verdicts\n%+v\nis not the run on Route\n%+v", name, model.name, res.Summary, alone.Summary)
			}
			if res.Summary.Rejected+res.Summary.ServedBy.Serverless == 0 && model.name != "without" && name == "mark" {
				t.Errorf("%s: nothing spilled or rejected: the load does not exercise the verdicts", name)
			}
		}
	}
	if checked < 4 {
		t.Errorf("%d policies with a VerdictRouter checked, want mark, sloserve, lambda and batch at least", checked)
	}
}
