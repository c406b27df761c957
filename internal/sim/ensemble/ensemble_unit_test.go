package ensemble

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/ensemble"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/trace"
)

// tinyWorkload is a synthetic three-model, twenty-class workload at 40 req/s for d, needing no
// shared data.
func tinyWorkload(t *testing.T, seed uint64, d time.Duration) EnsembleWorkload {
	t.Helper()
	var b strings.Builder
	b.WriteString("model,class,correct\n")
	for m, name := range []string{"fast", "mid", "slow"} {
		for c := range 20 {
			b.WriteString(name + ",c" + string(rune('a'+c)) + ",")
			b.WriteString([]string{"30", "35", "40"}[m] + "\n")
		}
	}
	tab, err := ensemble.ReadClassTable(strings.NewReader(b.String()), 50)
	if err != nil {
		t.Fatal(err)
	}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	return EnsembleWorkload{
		Table: tab,
		Models: []ensemble.Model{
			{Name: "fast", Latency: ms(40), Accuracy: 0.6, PackingFactor: 8},
			{Name: "mid", Latency: ms(90), Accuracy: 0.7, PackingFactor: 4},
			{Name: "slow", Latency: ms(150), Accuracy: 0.8, PackingFactor: 1},
		},
		Constraints: []EnsembleConstraint{
			{Constraint: ensemble.Constraint{Latency: ms(100), Accuracy: 0.72}, Weight: 2},
			{Constraint: ensemble.Constraint{Latency: ms(200), Accuracy: 0.75}, Weight: 1},
		},
		Arrivals:   trace.Until(trace.Poisson(40, seed), d),
		Trace:      "poisson-40",
		InitialRPS: 40, PeakRPS: 40,
	}
}

// TestEnsemblePolicies runs every ensemble policy on the synthetic workload, with and without
// failures: every request is accounted for exactly once, money is spent, the selection mode
// shows in mean_models, and the same seed reproduces the Summary.
func TestEnsemblePolicies(t *testing.T) {
	const d = 5 * time.Minute
	for _, name := range EnsemblePolicyNames() {
		for _, fail := range []float64{0, 0.5} {
			t.Run(name+map[bool]string{true: "/fail", false: ""}[fail > 0], func(t *testing.T) {
				run := func() *EnsembleResult {
					t.Helper()
					pol, err := NewEnsemblePolicy(name)
					if err != nil {
						t.Fatal(err)
					}
					cfg := DefaultEnsembleConfig()
					cfg.FailAt, cfg.FailFraction = d/2, fail
					cat := cost.DefaultCatalog()
					res, err := RunEnsemble(context.Background(), cfg, &cat, tinyWorkload(t, 3, d), pol)
					if err != nil {
						t.Fatalf("RunEnsemble: %v", err)
					}
					return res
				}
				a := run()
				s := a.Summary
				if s.Requests < 10000 || s.Completed+s.Failed+s.Rejected != s.Requests {
					t.Errorf("accounting: requests %d, completed %d + failed %d + rejected %d", s.Requests, s.Completed, s.Failed, s.Rejected)
				}
				if s.CostUSD.Total <= 0 || s.Accuracy == nil || s.Policy != name {
					t.Errorf("summary %+v: want a cost, an accuracy and policy %q", s, name)
				}
				mm := s.Extra["mean_models"]
				switch pol, _ := NewEnsemblePolicy(name); pol.Selection {
				case SelectSingle:
					if mm != 1 {
						t.Errorf("mean_models = %v, want 1", mm)
					}
				case SelectAll:
					if mm != 3 {
						t.Errorf("mean_models = %v, want 3", mm)
					}
				}
				if fail > 0 && s.Extra["failed_instances"] == 0 {
					t.Errorf("failed_instances = 0 with FailFraction %v", fail)
				}
				b := run()
				if b.Summary.CostUSD != s.CostUSD || *b.Summary.Accuracy != *s.Accuracy || b.Summary.SLOAttainment != s.SLOAttainment {
					t.Errorf("same seed, different summaries:\n-%+v\n+%+v", s, b.Summary)
				}
			})
		}
	}
}

// TestSingleModel checks InFaaS's choice: the cheapest model meeting the target, else the most
// accurate.
func TestSingleModel(t *testing.T) {
	cand := []ensemble.Model{
		{Name: "big", Accuracy: 0.8, PackingFactor: 1},
		{Name: "mid", Accuracy: 0.75, PackingFactor: 3},
		{Name: "small", Accuracy: 0.7, PackingFactor: 10},
	}
	for _, tc := range []struct {
		name   string
		target float64
		want   string
	}{
		{"cheapest meeting", 0.74, "mid"},
		{"all meet", 0.6, "small"},
		{"only the best", 0.79, "big"},
		{"none meets", 0.9, "big"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := singleModel(cand, tc.target, 0).Name; got != tc.want {
				t.Errorf("singleModel(target %v) (-want +got): -%s +%s", tc.target, tc.want, got)
			}
		})
	}
}

func TestEnsembleConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*EnsembleConfig)
		field string
	}{
		{"default", func(*EnsembleConfig) {}, ""},
		{"noise", func(c *EnsembleConfig) { c.NoiseCV = -1 }, "noise_cv"},
		{"control", func(c *EnsembleConfig) { c.ControlPeriod = 0 }, "control_period"},
		{"types", func(c *EnsembleConfig) { c.Types = nil }, "types"},
		{"type scale", func(c *EnsembleConfig) { c.Types = []EnsembleType{{"c5.large", 0}} }, "types[0]"},
		{"window", func(c *EnsembleConfig) { c.AccuracyWindow = 0 }, "accuracy_window"},
		{"fail fraction", func(c *EnsembleConfig) { c.FailFraction = 2 }, "fail_fraction"},
		{"timeout", func(c *EnsembleConfig) { c.RequestTimeout = 0 }, "request_timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultEnsembleConfig()
			tc.edit(&c)
			err := c.Validate()
			switch {
			case tc.field == "" && err != nil:
				t.Errorf("Validate: %v, want nil", err)
			case tc.field != "" && (err == nil || !strings.Contains(err.Error(), tc.field)):
				t.Errorf("Validate: %v, want an error naming %q", err, tc.field)
			}
		})
	}
}

func TestNewEnsemblePolicyUnknown(t *testing.T) {
	if _, err := NewEnsemblePolicy("nope"); !errors.Is(err, policy.ErrUnknown) {
		t.Errorf("NewEnsemblePolicy(nope) = %v, want policy.ErrUnknown", err)
	}
}

func TestReadCocktailConstraints(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     int
		wantErr  bool
	}{
		{"two", `{"constants_py":{"constraint_table":{"accuracy":[0.75,0.6],"latency_ms":[120,70]}}}`, 2, false},
		{"uneven", `{"constants_py":{"constraint_table":{"accuracy":[0.75],"latency_ms":[120,70]}}}`, 0, true},
		{"empty", `{}`, 0, true},
		{"bad accuracy", `{"constants_py":{"constraint_table":{"accuracy":[1.5],"latency_ms":[120]}}}`, 0, true},
		{"bad latency", `{"constants_py":{"constraint_table":{"accuracy":[0.5],"latency_ms":[-1]}}}`, 0, true},
		{"not json", `nope`, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadCocktailConstraints(strings.NewReader(tc.in))
			if (err != nil) != tc.wantErr || len(got) != tc.want {
				t.Errorf("ReadCocktailConstraints = %v, %v; want %d constraints, error %v", got, err, tc.want, tc.wantErr)
			}
			if err == nil && (got[0].Constraint.Latency != 120*time.Millisecond || got[0].Constraint.Accuracy != 0.75 || got[0].Weight != 1) {
				t.Errorf("first constraint = %+v, want <120ms, 0.75> weight 1", got[0])
			}
		})
	}
}

func FuzzReadCocktailConstraints(f *testing.F) {
	f.Add([]byte(`{"constants_py":{"constraint_table":{"accuracy":[0.75,0.6],"latency_ms":[120,70]}}}`))
	f.Add([]byte(`{"constants_py":{"constraint_table":{"accuracy":[],"latency_ms":[]}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		cs, err := ReadCocktailConstraints(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, c := range cs {
			if err := c.Constraint.Validate(); err != nil || c.Weight != 1 {
				t.Fatalf("accepted an invalid constraint %+v: %v", c, err)
			}
		}
	})
}
