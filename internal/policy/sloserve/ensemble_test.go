package sloserve

import (
	"math"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/policy/cocktail"
)

func TestErlangC(t *testing.T) {
	tests := []struct {
		c    int
		a    float64
		want float64
	}{
		{1, 0.5, 0.5},           // M/M/1: P(wait) = ρ
		{2, 1, 1.0 / 3},         // c = 2, a = 1: 1/3
		{5, 3, 0.2362},          // C(5, 3): B(5, 3) = 0.1101, C = 5B/(5 − 3(1 − B))
		{3, 3, 1},               // saturated
		{0, 0.1, 1},             // no server
		{10, 0.001, 1.3888e-23}, // nearly empty: C ≈ a^c/c!
	}
	for _, tc := range tests {
		got := erlangC(tc.c, tc.a)
		if math.Abs(got-tc.want) > 1e-3*max(tc.want, 1e-20) && math.Abs(got-tc.want) > 1e-4 {
			t.Errorf("erlangC(%d, %v) = %.6g, want %.6g", tc.c, tc.a, got, tc.want)
		}
	}
}

func TestSloserveSlots(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name       string
		rps        float64
		lat, dl    time.Duration
		miss       float64
		wantReason string
		want       float64 // < 0: check the bound instead
	}{
		{"idle", 0, 100 * ms, 400 * ms, 0.02, slotsReasonIdle, 0},
		{"no slack", 10, 500 * ms, 400 * ms, 0.02, slotsReasonNoSlack, cocktail.PoolSlots(10, 500*ms, cocktail.DefaultStaffing)},
		{"light load", 1, 100 * ms, 400 * ms, 0.02, slotsReasonDeadline, 1},
		{"heavy load", 100, 100 * ms, 400 * ms, 0.02, slotsReasonDeadline, -1},
		{"tight slack", 100, 300 * ms, 400 * ms, 0.02, slotsReasonDeadline, -1},
		{"strict miss", 100, 100 * ms, 400 * ms, 0.001, slotsReasonDeadline, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, why := sloserveSlots(tc.rps, tc.lat, tc.dl, tc.miss)
			if why != tc.wantReason {
				t.Errorf("reason %q, want %q", why, tc.wantReason)
			}
			if tc.want >= 0 {
				if got != tc.want {
					t.Errorf("slots %v, want %v", got, tc.want)
				}
				return
			}
			a := tc.rps * tc.lat.Seconds()
			s := (tc.dl - tc.lat).Seconds() / tc.lat.Seconds()
			p := func(c float64) float64 { return erlangC(int(c), a) * math.Exp(-(c-a)*s) }
			if got <= a || p(got) > tc.miss {
				t.Errorf("slots %v for load %v: P(wait > slack) = %.4g > %v", got, a, p(got), tc.miss)
			}
			if got-1 > a && p(got-1) <= tc.miss {
				t.Errorf("slots %v not the fewest: %v already gives %.4g", got, got-1, p(got-1))
			}
		})
	}
	// Fewer slots than Cocktail's square-root staffing when the deadline leaves room to queue,
	// more when it does not.
	loose, _ := sloserveSlots(100, 50*ms, 400*ms, DefaultEnsembleWaitMiss)
	tight, _ := sloserveSlots(100, 390*ms, 400*ms, DefaultEnsembleWaitMiss)
	if sq := cocktail.PoolSlots(100, 50*ms, cocktail.DefaultStaffing); loose >= sq {
		t.Errorf("loose deadline: %v slots ≥ square-root staffing's %.1f", loose, sq)
	}
	if sq := cocktail.PoolSlots(100, 390*ms, cocktail.DefaultStaffing); tight <= sq {
		t.Errorf("tight deadline: %v slots < square-root staffing's %.1f", tight, sq)
	}
}

func TestSloserveEnsemblePolicy(t *testing.T) {
	v, err := policy.Build(policy.PortEnsemble, "sloserve", nil)
	if err != nil {
		t.Fatal(err)
	}
	p := v.(cocktail.Policy)
	c := cocktail.Cocktail()
	if p.Name != "sloserve" || p.Selection != c.Selection || !p.Weighted || p.Scaling != c.Scaling || !p.Spot || p.Slots == nil {
		t.Errorf("sloserve = %+v: want Cocktail's selection, weighted voting, weighted scaling, spot, and its own slots", p)
	}
	if p.Ensemble.AccuracyMargin != DefaultSloserveAccuracyMargin {
		t.Errorf("accuracy margin %v", p.Ensemble.AccuracyMargin)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
}
