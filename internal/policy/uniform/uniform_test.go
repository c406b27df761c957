package uniform

import (
	"os"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/cluster"
	"github.com/sloserve/sloserve/internal/planner/infless"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/profile"
)

// fixtureProfile reads the committed made-up resnet-50 profile (testdata/fixture).
func fixtureProfile(t *testing.T) profile.INFlessProfile {
	t.Helper()
	f, err := os.Open("../../../testdata/fixture/profiles/infless/resnet-50-profile-results.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.ReadINFless(f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// world is one function on a small cluster: Control's decisions are applied (launches become
// ready instances, releases go) so the next step sees them.
type world struct {
	p    policy.Cluster
	fv   policy.FunctionView
	c    *cluster.Cluster
	next int
}

func (w *world) step(t *testing.T, now time.Time, rate float64) policy.ClusterDecision {
	t.Helper()
	w.fv.Rate, w.fv.RateNow = rate, rate
	d, err := w.p.Control(policy.ClusterView{Cluster: w.c.Clone(), Beta: cluster.DefaultBeta, Functions: []policy.FunctionView{w.fv}}, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range d.Launch {
		if err := w.c.Place(l.Server, l.Resources); err != nil {
			t.Fatal(err)
		}
		w.fv.Instances = append(w.fv.Instances, policy.InstanceView{ID: w.next, Launch: l, Ready: true, Resources: l.Resources})
		w.next++
	}
	for _, id := range d.Release {
		for k, in := range w.fv.Instances {
			if in.ID == id {
				if err := w.c.Release(in.Launch.Server, in.Launch.Resources); err != nil {
					t.Fatal(err)
				}
				w.fv.Instances = append(w.fv.Instances[:k], w.fv.Instances[k+1:]...)
				break
			}
		}
	}
	return d
}

func newWorld(t *testing.T, o Options) *world {
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	fv := policy.FunctionView{Name: "resnet-50", Profile: fixtureProfile(t), SLO: 200 * time.Millisecond, MeanRPS: 60, Target: 0.95}
	return &world{p: p, fv: fv, c: cluster.New(8, cluster.DefaultServer)}
}

// TestKeepAliveHolds: a uniform fleet scaled up by a burst keeps its surplus instances exactly as
// long as Options.KeepAlive after the last step that needed them, then releases them.
func TestKeepAliveHolds(t *testing.T) {
	for _, o := range []Options{DefaultOptions(), FairOptions(), OpenFaaSOptions()} {
		w := newWorld(t, o)
		o.Name = w.p.Name()
		t0 := time.Unix(0, 0)
		w.step(t, t0, 300)
		peak := len(w.fv.Instances)
		if peak < 2 {
			t.Fatalf("%s: %d instances at 300 rps, want several", o.Name, peak)
		}
		const period = 5 * time.Second
		var released time.Duration
		for at := period; at <= 2*o.KeepAlive+period; at += period {
			if d := w.step(t, t0.Add(at), 1); len(d.Release) > 0 && released == 0 {
				released = at
			}
		}
		if released <= o.KeepAlive || released > o.KeepAlive+period {
			t.Errorf("%s: surplus released %v after the burst, want within one step after the %v keep-alive", o.Name, released, o.KeepAlive)
		}
	}
}

// TestPicksMostEfficient: every instance runs the configuration with the highest r_up per unit of
// Options.Price among those that meet the SLO (the cheapest per request), not any other.
func TestPicksMostEfficient(t *testing.T) {
	for _, o := range []Options{DefaultOptions(), FairOptions()} {
		w := newWorld(t, o)
		o.Name = w.p.Name()
		d := w.step(t, time.Unix(0, 0), 100)
		if len(d.Launch) == 0 {
			t.Fatalf("%s: no launch at 100 rps", o.Name)
		}
		batches, res := infless.ProfileSpace(w.fv.Profile)
		cfg := infless.Config{SLO: w.fv.SLO, Batches: batches, Resources: res, Offset: o.Offset}
		price := func(r cluster.Resources) float64 {
			if o.Price == PriceShare {
				return infless.ShareCost(r, cluster.DefaultServer, cluster.DefaultServer)
			}
			return r.Weighted(cluster.DefaultBeta)
		}
		best, worst := 0.0, -1.0
		for _, op := range infless.Options(cfg, infless.ProfilePredictor(w.fv.Profile)) {
			if op.Batch > o.MaxBatch || op.Batch > 1 && !(w.fv.MeanRPS > op.Bounds.Low) {
				continue
			}
			e := op.Bounds.Up / price(op.Resources)
			best = max(best, e)
			if worst < 0 || e < worst {
				worst = e
			}
		}
		if best <= worst*1.01 {
			t.Fatalf("%s: every configuration as efficient (%v): the test cannot tell", o.Name, best)
		}
		for _, l := range d.Launch {
			if e := l.Bounds.Up / price(l.Resources); e < best*(1-1e-9) {
				t.Errorf("%s: launched b=%d %+v at %.4f rps per unit, the best is %.4f", o.Name, l.Batch, l.Resources, e, best)
			}
		}
	}
}
