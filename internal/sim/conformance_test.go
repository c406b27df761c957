package sim

import (
	"context"
	"errors"
	"testing"

	"github.com/sloserve/sloserve/internal/cost"
)

// TestPolicyConformance builds every registered policy on the default model and runs it on a
// short Poisson trace: a policy either reports ErrNotImplemented or accounts for every request
// exactly once, spends money, and reproduces its Summary for the same seed.
func TestPolicyConformance(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			cat := cost.DefaultCatalog()
			cfg := DefaultConfig()
			env := Env{Catalog: &cat, Model: DefaultModel(), SLO: cfg.SLO, Load: LoadStats{MeanRPS: 50, PeakRPS: 80}}
			run := func() *Result {
				t.Helper()
				p, err := New(name, env)
				if errors.Is(err, ErrNotImplemented) {
					t.Skipf("%s: %v", name, err)
				}
				if err != nil {
					t.Fatalf("New(%q): %v", name, err)
				}
				if p.Name != name {
					t.Errorf("Policy.Name (-want +got): -%q +%q", name, p.Name)
				}
				res, err := Run(context.Background(), cfg, &cat, env.Model, p, newPoisson(50, 20000, 9))
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				return res
			}
			a := run()
			s := a.Summary
			if s.Requests != 20000 || s.Completed+s.Failed+s.Rejected != s.Requests {
				t.Errorf("accounting: requests %d, completed %d + failed %d + rejected %d; want 20000 in total", s.Requests, s.Completed, s.Failed, s.Rejected)
			}
			if s.CostUSD.Total <= 0 || s.Policy != name {
				t.Errorf("summary %+v: want a positive cost and policy %q", s, name)
			}
			if b := run(); b.Summary.CostUSD != s.CostUSD || b.Summary.SLOAttainment != s.SLOAttainment {
				t.Errorf("same seed, different summaries:\n-%+v\n+%+v", s, b.Summary)
			}
		})
	}
}
