package ensemble

import "fmt"

// Comparison holds the strategies of Cocktail's evaluation run on the same simulated workload.
type Comparison struct {
	// Constraint is what the dynamic policy worked to.
	Constraint Constraint `json:"-"`
	// Pool is the O1 candidate set, most accurate first.
	Pool []string `json:"pool"`
	// Results has one entry per strategy: best single model, full ensemble (Clipper-like),
	// static top-⌊N/2⌋ (§3), and Cocktail's dynamic selection, each with plain majority and
	// class-weighted voting.
	Results []SimResult `json:"results"`
}

// Result returns the named strategy's result.
func (c Comparison) Result(name string) (SimResult, bool) {
	for _, r := range c.Results {
		if r.Name == name {
			return r, true
		}
	}
	return SimResult{}, false
}

// Strategy names used by Compare.
const (
	StrategySingle       = "single"
	StrategyFullPlain    = "full-plain"
	StrategyFull         = "full"
	StrategyStaticPlain  = "static-plain"
	StrategyStatic       = "static"
	StrategyDynamicPlain = "dynamic-plain"
	StrategyDynamic      = "dynamic"
)

// Compare simulates every strategy of Cocktail's evaluation over the latency-feasible
// candidates of models for constraint c: the most accurate single candidate, the full ensemble,
// the top ⌊N/2⌋ candidates (§3 "static"), and the dynamic policy starting from the full
// ensemble — the ensembles each with plain majority ("-plain") and class-weighted voting.
func Compare(t *ClassTable, models []Model, c Constraint, ecfg Config, cfg SimConfig) (Comparison, error) {
	if err := ecfg.Validate(); err != nil {
		return Comparison{}, err
	}
	cand := Candidates(models, c, ecfg.LatencyMargin)
	if len(cand) == 0 {
		return Comparison{}, fmt.Errorf("compare %v: %w", c, ErrNoCandidate)
	}
	all := names(cand)
	static := all[:max(1, len(all)/2)]
	strategies := []Strategy{
		{Name: StrategySingle, Models: all[:1]},
		{Name: StrategyFullPlain, Models: all},
		{Name: StrategyFull, Models: all, Weighted: true},
		{Name: StrategyStaticPlain, Models: static},
		{Name: StrategyStatic, Models: static, Weighted: true},
		{Name: StrategyDynamicPlain, Models: all, Dynamic: true},
		{Name: StrategyDynamic, Models: all, Dynamic: true, Weighted: true},
	}
	out := Comparison{Constraint: c, Pool: all}
	for _, s := range strategies {
		r, err := Simulate(t, cand, s, c, ecfg, cfg)
		if err != nil {
			return Comparison{}, err
		}
		out.Results = append(out.Results, r)
	}
	return out, nil
}
