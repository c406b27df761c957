package ensemble

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

func TestSelect(t *testing.T) {
	pool := []Model{
		{Name: "small", Latency: ms(40), Accuracy: 0.70, PackingFactor: 10},
		{Name: "small2", Latency: ms(42), Accuracy: 0.71, PackingFactor: 10},
		{Name: "mid", Latency: ms(80), Accuracy: 0.74, PackingFactor: 3},
		{Name: "mid2", Latency: ms(90), Accuracy: 0.76, PackingFactor: 6},
		{Name: "big", Latency: ms(300), Accuracy: 0.82, PackingFactor: 1},
	}
	tests := []struct {
		name      string
		c         Constraint
		want      []string
		wantMet   bool
		wantCands int
		wantErr   error
	}{
		{"a single cheap model suffices", Constraint{ms(100), 0.70}, []string{"small2"}, true, 4, nil},
		{"the big model is the only single that suffices but an ensemble is cheaper",
			Constraint{ms(310), 0.80}, []string{"mid2", "small2", "small"}, true, 5, nil},
		{"latency margin admits a model 5 ms over", Constraint{ms(295), 0.99}, []string{"big", "mid2", "mid", "small2", "small"}, false, 5, nil},
		{"unreachable target returns the most accurate ensemble", Constraint{ms(50), 0.99}, []string{"small2"}, false, 2, nil},
		{"no model meets the latency", Constraint{ms(10), 0.5}, nil, false, 0, ErrNoCandidate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Select(pool, tt.c, DefaultConfig())
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error (-want +got):\n-%v\n+%v", tt.wantErr, err)
			}
			if err != nil {
				return
			}
			if got := s.Names(); !slices.Equal(got, tt.want) || s.Met != tt.wantMet || len(s.Candidates) != tt.wantCands {
				t.Errorf("selection (-want +got):\n-%v met=%v candidates=%d\n+%v met=%v candidates=%d (%s)",
					tt.want, tt.wantMet, tt.wantCands, got, s.Met, len(s.Candidates), s.Reason)
			}
		})
	}
}

func TestSelectRejectsBadInput(t *testing.T) {
	good := Model{Name: "m", Latency: ms(10), Accuracy: 0.7, PackingFactor: 1}
	bad := []struct {
		name string
		pool []Model
		c    Constraint
	}{
		{"zero latency constraint", []Model{good}, Constraint{0, 0.7}},
		{"accuracy above one", []Model{good}, Constraint{ms(10), 1.2}},
		{"model without a name", []Model{{Latency: ms(1), Accuracy: 0.5, PackingFactor: 1}}, Constraint{ms(10), 0.5}},
		{"zero packing factor", []Model{{Name: "x", Latency: ms(1), Accuracy: 0.5}}, Constraint{ms(10), 0.5}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Select(tt.pool, tt.c, DefaultConfig()); err == nil {
				t.Error("Select accepted bad input")
			}
		})
	}
}

// TestSelectProperties checks on random pools that Select never picks a model slower than the
// latency target plus margin, that a met selection really predicts the target, that no other
// subset meeting the target is cheaper, and that Select is deterministic.
func TestSelectProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	cfg := DefaultConfig()
	for i := range 300 {
		n := 1 + rng.IntN(8)
		pool := make([]Model, n)
		for j := range pool {
			pool[j] = Model{Name: string(rune('a' + j)), Latency: ms(10 + 300*rng.Float64()),
				Accuracy: 0.5 + 0.45*rng.Float64(), PackingFactor: float64(1 + rng.IntN(10))}
		}
		c := Constraint{Latency: ms(50 + 250*rng.Float64()), Accuracy: 0.6 + 0.39*rng.Float64()}
		s, err := Select(pool, c, cfg)
		if errors.Is(err, ErrNoCandidate) {
			for _, m := range pool {
				if m.Latency <= c.Latency+cfg.LatencyMargin {
					t.Fatalf("case %d: ErrNoCandidate although %s meets %v", i, m.Name, c)
				}
			}
			continue
		}
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		for _, m := range s.Models {
			if m.Latency > c.Latency+cfg.LatencyMargin {
				t.Fatalf("case %d: chose %s with latency %v over %v", i, m.Name, m.Latency, c.Latency)
			}
		}
		need := c.Accuracy - cfg.AccuracyMargin
		if s.Met != (s.PredictedAccuracy >= need-1e-12) {
			t.Fatalf("case %d: Met=%v but predicted %v vs need %v", i, s.Met, s.PredictedAccuracy, need)
		}
		cand := s.Candidates
		for mask := 1; mask < 1<<len(cand); mask++ {
			var acc []float64
			cst := 0.0
			for j := range cand {
				if mask&(1<<j) != 0 {
					acc = append(acc, cand[j].Accuracy)
					cst += 1 / cand[j].PackingFactor
				}
			}
			p := EnsembleAccuracy(acc)
			if s.Met && p >= need && cst < s.Cost-1e-9 {
				t.Fatalf("case %d: subset %b costs %v < chosen %v and predicts %v >= %v", i, mask, cst, s.Cost, p, need)
			}
			if !s.Met && p > s.PredictedAccuracy+1e-9 {
				t.Fatalf("case %d: unmet selection %v is not the most accurate (%v)", i, s.PredictedAccuracy, p)
			}
		}
		again, _ := Select(pool, c, cfg)
		if !slices.Equal(again.Names(), s.Names()) {
			t.Fatalf("case %d: Select is not deterministic: %v then %v", i, s.Names(), again.Names())
		}
	}
}

func TestSelectGreedyBeyondExhaustiveLimit(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxExhaustive = 2
	pool := ImageNetModels()
	s, err := Select(pool, Constraint{ms(160), 0.9}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Met || s.PredictedAccuracy < 0.898 || math.IsNaN(s.Cost) {
		t.Errorf("greedy selection: met=%v predicted=%v (%s)", s.Met, s.PredictedAccuracy, s.Reason)
	}
}

func TestCache(t *testing.T) {
	c := NewCache()
	k := Constraint{ms(100), 0.7}
	pool := ImageNetModels()
	first, err := c.SelectCached(pool, k, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.SelectCached(nil, k, DefaultConfig()) // a hit never looks at the pool
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(first.Names(), second.Names()) {
		t.Errorf("cached selection (-want +got):\n-%v\n+%v", first.Names(), second.Names())
	}
	if h, m := c.Stats(); h != 1 || m != 1 {
		t.Errorf("stats (-want +got):\n-1 hit 1 miss\n+%d hit %d miss", h, m)
	}
	c.Invalidate()
	if _, ok := c.Get(k); ok {
		t.Error("Get after Invalidate found a selection")
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	bad := map[string]func(*Config){
		"interval":          func(c *Config) { c.Interval = 0 },
		"accuracy_margin":   func(c *Config) { c.AccuracyMargin = -0.1 },
		"latency_margin":    func(c *Config) { c.LatencyMargin = -1 },
		"popularity_window": func(c *Config) { c.PopularityWindow = 0 },
		"idle_timeout":      func(c *Config) { c.IdleTimeout = 0 },
		"max_exhaustive":    func(c *Config) { c.MaxExhaustive = 40 },
	}
	for field, mutate := range bad {
		t.Run(field, func(t *testing.T) {
			c := DefaultConfig()
			mutate(&c)
			err := c.Validate()
			if err == nil || !contains(err.Error(), field) {
				t.Errorf("Validate() = %v, want an error naming %q", err, field)
			}
		})
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub)))
}
