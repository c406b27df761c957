package sim

import (
	"context"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/slo"
)

// listArrivals replays fixed arrival offsets.
type listArrivals []time.Duration

func (l *listArrivals) Next() (time.Duration, bool) {
	if len(*l) == 0 {
		return 0, false
	}
	at := (*l)[0]
	*l = (*l)[1:]
	return at, true
}

// TestBurstableCredits checks the simulator's T2 credit model on one 1-vCPU burstable instance
// serving 1-second requests 10 s apart: a batch runs at full speed when the balance is positive
// at dispatch and at Baseline (20 %) otherwise, it consumes vCPU × run time of credits (one
// credit = one vCPU-minute), and credits accrue at CreditsPerHour, capped at MaxCredits.
func TestBurstableCredits(t *testing.T) {
	const sec = time.Second
	cases := []struct {
		name  string
		burst cost.Burst
		n     int
		// want is the latency of each request.
		want []time.Duration
	}{
		{
			// 2/60 credit at launch: requests 1 and 2 use 1/60 each; accrual of 1/6000 per
			// second adds 1/600 per 10 s, so request 3 still finds 1/300 > 0 (and leaves the
			// balance at −1/75: a batch that starts with credit finishes at full speed), and
			// request 4 finds −1/75 + 1/600 < 0: it runs 1/0.2 = 5 s, and so does request 5.
			name:  "credits run out",
			burst: cost.Burst{Baseline: 0.2, CreditsPerHour: 0.6, InitialCredits: 2.0 / 60},
			n:     5,
			want:  []time.Duration{sec, sec, sec, 5 * sec, 5 * sec},
		},
		{
			// Earning one credit a minute (> the 1/60 used per 10 s) never runs out.
			name:  "accrual keeps up",
			burst: cost.Burst{Baseline: 0.2, CreditsPerHour: 60, InitialCredits: 0.01},
			n:     5,
			want:  []time.Duration{sec, sec, sec, sec, sec},
		},
		{
			// No launch credits: the first request runs at baseline.
			name:  "no launch credits",
			burst: cost.Burst{Baseline: 0.5, CreditsPerHour: 0},
			n:     2,
			want:  []time.Duration{2 * sec, 2 * sec},
		},
		{
			// MaxCredits caps the 100 launch credits at 1/60: one full-speed second, then
			// baseline (no accrual).
			name:  "cap",
			burst: cost.Burst{Baseline: 0.2, InitialCredits: 100, MaxCredits: 1.0 / 60},
			n:     2,
			want:  []time.Duration{sec, 5 * sec},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cat := cost.DefaultCatalog()
			b := c.burst
			cat.Types = append(cat.Types, cost.InstanceType{Name: "t2.test", Kind: cost.KindBurstable, VCPU: 1, MemoryGB: 1,
				PricePerHour: 0.01, Burst: &b})
			if err := cat.Validate(); err != nil {
				t.Fatal(err)
			}
			curve, err := profile.NewCurve([]profile.Point{{Batch: 1, Time: sec}})
			if err != nil {
				t.Fatal(err)
			}
			model := profile.Model{Name: "m", VM: map[string]profile.Backend{"t2.test": {Curve: curve, Slots: 1}}}
			spec := provider.Spec{Model: "m", Type: "t2.test"}
			pol := Policy{Name: "t2", Initial: []provider.Spec{spec}}
			cfg := DefaultConfig()
			cfg.NoiseCV = 0
			cfg.SLO = slo.Spec{Threshold: 10 * sec, Target: 0.5}
			arr := make(listArrivals, c.n)
			for i := range arr {
				arr[i] = time.Duration(i) * 10 * sec
			}
			res, err := Run(context.Background(), cfg, &cat, model, pol, &arr)
			if err != nil {
				t.Fatal(err)
			}
			var sum, hi time.Duration
			for _, w := range c.want {
				sum += w
				hi = max(hi, w)
			}
			h := res.Latency
			if got := int(h.Count()); got != c.n {
				t.Fatalf("completed (-want +got): -%d +%d", c.n, got)
			}
			if mean := sum / time.Duration(c.n); h.Mean() != mean || h.Max() != hi {
				t.Errorf("latency mean, max (-want +got): -%v %v +%v %v", mean, hi, h.Mean(), h.Max())
			}
		})
	}
}
