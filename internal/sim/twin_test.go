package sim

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sloserve/sloserve/internal/cost"
)

// rampArrivals is Poisson at rates[k] requests/s during the k-th span of each seconds.
type rampArrivals struct {
	rng   *rand.Rand
	rates []float64
	each  time.Duration
	t     time.Duration
}

func (r *rampArrivals) Next() (time.Duration, bool) {
	for {
		k := int(r.t / r.each)
		if k >= len(r.rates) {
			return 0, false
		}
		next := r.t + time.Duration(r.rng.ExpFloat64()/r.rates[k]*float64(time.Second))
		if end := time.Duration(k+1) * r.each; next >= end { // memoryless: restart at the span's end
			r.t = end
			continue
		}
		r.t = next
		return next, true
	}
}

// TestTwinMatchesOwnRun: sagemaker at hosting prices ("ml.c5.large") billed for its EC2-priced
// twin (cost.HostedOn: "c5.large") reports, for the twin, exactly the Summary and the early stops
// of the EC2-priced policy's own run — with no budget, with either's cost budget passed, with
// both, and with the miss budget passed — and its own outcome as without the twin.
func TestTwinMatchesOwnRun(t *testing.T) {
	cat := cost.DefaultCatalog()
	base := DefaultConfig()
	model := DefaultModel()
	load := LoadStats{MeanRPS: 40, PeakRPS: 120}
	policy := func(pricing string) Policy {
		env := Env{Catalog: &cat, Model: model, SLO: base.SLO, Load: load,
			Decode: func(v any) error { return yaml.Unmarshal([]byte("{pricing: "+pricing+", type: c5.large}"), v) }}
		p, err := New("sagemaker", env)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	arrivals := func() Arrivals {
		return &rampArrivals{rng: rand.New(rand.NewPCG(5, 6)), rates: []float64{20, 150, 150, 40, 10, 10}, each: 8 * time.Minute}
	}
	own := func(pricing string, cfg Config) (*Result, error) {
		return Run(context.Background(), cfg, &cat, model, policy(pricing), arrivals())
	}
	hosted, err := own("sagemaker", base)
	if err != nil {
		t.Fatal(err)
	}
	ec2, err := own("ec2", base)
	if err != nil {
		t.Fatal(err)
	}
	if hosted.Summary.Extra["launches"] < 2 || ec2.Summary.CostUSD.Total <= 0 || hosted.Summary.CostUSD.Total <= ec2.Summary.CostUSD.Total {
		t.Fatalf("hosting $%v, EC2 $%v, %v launches: the test needs a scaling fleet and two prices",
			hosted.Summary.CostUSD.Total, ec2.Summary.CostUSD.Total, hosted.Summary.Extra["launches"])
	}
	if _, ok := hosted.Summary.InstanceHours["ml.c5.large"]; !ok {
		t.Fatalf("hosting instance hours %v, want ml.c5.large", hosted.Summary.InstanceHours)
	}
	for _, c := range []struct {
		name             string
		cost, twinCost   float64 // fractions of each one's full bill (0: no budget)
		missBudget       int64
		slo              time.Duration
		wantOwn, wantTwn error
	}{
		{name: "no budget"},
		{name: "own cost budget passed", cost: 0.5, wantOwn: ErrCostBudget},
		{name: "twin's cost budget passed", twinCost: 0.5, wantTwn: ErrCostBudget},
		{name: "both passed", cost: 0.4, twinCost: 0.7, wantOwn: ErrCostBudget, wantTwn: ErrCostBudget},
		{name: "both above", cost: 1.01, twinCost: 1.01},
		{name: "miss budget", missBudget: 10, slo: 20 * time.Millisecond, wantOwn: ErrMissBudget, wantTwn: ErrMissBudget},
	} {
		cfg := base
		if c.slo > 0 {
			cfg.SLO.Threshold = c.slo
		}
		cfg.MissBudget = c.missBudget
		cfg.CostBudget = c.cost * hosted.Summary.CostUSD.Total
		solo := cfg
		solo.CostBudget = c.twinCost * ec2.Summary.CostUSD.Total
		wantOwn, errOwn := own("sagemaker", cfg)
		wantTwn, errTwn := own("ec2", solo)
		if !errors.Is(errOwn, c.wantOwn) || !errors.Is(errTwn, c.wantTwn) {
			t.Fatalf("%s: own runs stop with %v and %v, the case wants %v and %v", c.name, errOwn, errTwn, c.wantOwn, c.wantTwn)
		}
		cfg.Twins = []Twin{{Type: cost.HostedOn, CostBudget: solo.CostBudget}}
		got, err := Run(context.Background(), cfg, &cat, model, policy("sagemaker"), arrivals())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(got.Twins) != 1 || got.Stop != errOwn || got.Twins[0].Stop != errTwn {
			t.Fatalf("%s: stops %v and %+v, want %v and %v", c.name, got.Stop, got.Twins, errOwn, errTwn)
		}
		if errOwn == nil && !reflect.DeepEqual(got.Summary, wantOwn.Summary) {
			t.Errorf("%s: own summary with a twin\n%+v\nwithout\n%+v", c.name, got.Summary, wantOwn.Summary)
		}
		if errTwn == nil && !reflect.DeepEqual(got.Twins[0].Summary, wantTwn.Summary) {
			t.Errorf("%s: the twin's summary\n%+v\nits own run's\n%+v", c.name, got.Twins[0].Summary, wantTwn.Summary)
		}
	}
}

// TestTwinOtherMachineRefused: a twin is the same machine under another name and price; a
// mapping to another size, a missing type or a spot type is an error, and so is no mapping.
func TestTwinOtherMachineRefused(t *testing.T) {
	cat := cost.DefaultCatalog()
	cfg := DefaultConfig()
	model := DefaultModel()
	env := Env{Catalog: &cat, Model: model, SLO: cfg.SLO, Load: LoadStats{MeanRPS: 10, PeakRPS: 10},
		Decode: func(v any) error { return yaml.Unmarshal([]byte("{type: c5.large}"), v) }}
	for _, c := range []struct{ to, want string }{
		{"c5.xlarge", "not the same machine"},
		{"c9.huge", "not in the catalog"},
		{"c5.large/spot", "spot types have no twins"},
	} {
		p, err := New("sagemaker", env)
		if err != nil {
			t.Fatal(err)
		}
		run := cfg
		run.Twins = []Twin{{Type: func(string) string { return c.to }}}
		_, err = Run(context.Background(), run, &cat, model, p, newPoisson(10, 100, 1))
		if !errors.Is(err, ErrNotTwin) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("twin %s: error %v, want %q", c.to, err, c.want)
		}
	}
	bad := cfg
	bad.Twins = []Twin{{}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "sim.twins[0].type") {
		t.Errorf("a twin without a type: Validate %v, want sim.twins[0].type", err)
	}
}
