package cost

import (
	"math"
	"strings"
	"testing"
	"time"
)

// series is $0.10/h from 0, $0.40/h from 1 h, $0.20/h from 3 h.
var series = PriceSeries{At: []time.Duration{0, time.Hour, 3 * time.Hour}, Price: []float64{0.10, 0.40, 0.20}}

func TestPriceSeriesPriceAt(t *testing.T) {
	late := PriceSeries{At: []time.Duration{time.Hour}, Price: []float64{0.5}}
	cases := []struct {
		name string
		s    PriceSeries
		at   time.Duration
		want float64
	}{
		{"empty series", PriceSeries{}, time.Hour, 0},
		{"start", series, 0, 0.10},
		{"just before a change", series, time.Hour - 1, 0.10},
		{"at a change", series, time.Hour, 0.40},
		{"between changes", series, 2 * time.Hour, 0.40},
		{"last step forever", series, 1000 * time.Hour, 0.20},
		{"before the first step: first price", late, 0, 0.5},
		{"negative offset", series, -time.Minute, 0.10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.s.PriceAt(c.at); got != c.want {
				t.Errorf("PriceAt(%v) (-want +got): -%v +%v", c.at, c.want, got)
			}
		})
	}
}

func TestPriceSeriesCost(t *testing.T) {
	late := PriceSeries{At: []time.Duration{time.Hour}, Price: []float64{0.5}}
	cases := []struct {
		name     string
		s        PriceSeries
		from, to time.Duration
		want     float64
	}{
		{"empty series", PriceSeries{}, 0, time.Hour, 0},
		{"empty interval", series, time.Hour, time.Hour, 0},
		{"reversed interval", series, 2 * time.Hour, time.Hour, 0},
		{"inside one step", series, 10 * time.Minute, 40 * time.Minute, 0.5 * 0.10},
		{"exactly one step", series, time.Hour, 3 * time.Hour, 2 * 0.40},
		{"across every step", series, 30 * time.Minute, 4 * time.Hour, 0.5*0.10 + 2*0.40 + 1*0.20},
		{"one second at a boundary", series, time.Hour - time.Second, time.Hour + time.Second, (0.10 + 0.40) / 3600},
		{"before the first step at the first price", late, 0, 2 * time.Hour, 2 * 0.5},
		{"past the end", series, 5 * time.Hour, 7 * time.Hour, 2 * 0.20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.s.Cost(c.from, c.to); math.Abs(got-c.want) > 1e-12 {
				t.Errorf("Cost(%v, %v) (-want +got): -%v +%v", c.from, c.to, c.want, got)
			}
		})
	}
}

// TestPriceSeriesCostAdditive: the cost of [a, c) is the cost of [a, b) plus [b, c) for any b,
// so billing an instance in pieces (per sample period) equals billing it at once.
func TestPriceSeriesCostAdditive(t *testing.T) {
	whole := series.Cost(7*time.Minute, 5*time.Hour)
	for b := 7 * time.Minute; b <= 5*time.Hour; b += 13 * time.Minute {
		if got := series.Cost(7*time.Minute, b) + series.Cost(b, 5*time.Hour); math.Abs(got-whole) > 1e-12 {
			t.Fatalf("split at %v (-want +got): -%v +%v", b, whole, got)
		}
	}
}

func TestReadSpotPricesZeroBased(t *testing.T) {
	got, err := ReadSpotPrices(strings.NewReader("time,a\n0,0.1\n1,0.2\n3,0.3\n"), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{0, time.Hour, 3 * time.Hour}
	a := got["a"]
	if len(a.At) != len(want) {
		t.Fatalf("steps (-want +got): -%v +%v", want, a.At)
	}
	for i := range want {
		if a.At[i] != want[i] {
			t.Errorf("step %d start (-want +got): -%v +%v", i, want[i], a.At[i])
		}
	}
	if _, err := ReadSpotPrices(strings.NewReader("time,a\n0,0.1\n"), 0); err == nil {
		t.Error("ReadSpotPrices with step 0 succeeded, want an error")
	}
}

// TestDefaultBurstCredits checks the default T2 types against AWS's credit rule: a T2 instance
// earns credits at its baseline (credits per hour = baseline × vCPU × 60; one credit is one vCPU
// at 100 % for a minute), so running flat out at the baseline neither gains nor loses credits.
func TestDefaultBurstCredits(t *testing.T) {
	c := DefaultCatalog()
	n := 0
	for _, it := range c.Types {
		if it.Kind != KindBurstable {
			continue
		}
		n++
		t.Run(it.Name, func(t *testing.T) {
			b := it.Burst
			if b == nil {
				t.Fatal("burstable type without a Burst")
			}
			if want := b.Baseline * float64(it.VCPU) * 60; math.Abs(b.CreditsPerHour-want) > 1e-9 {
				t.Errorf("credits per hour (-want +got): -%v +%v (baseline %v × %d vCPU × 60)", want, b.CreditsPerHour, b.Baseline, it.VCPU)
			}
			if b.InitialCredits <= 0 {
				t.Errorf("initial credits = %v, want > 0 (AWS launch credits)", b.InitialCredits)
			}
		})
	}
	if n == 0 {
		t.Fatal("default catalog has no burstable type")
	}
}

func TestBurstValidate(t *testing.T) {
	cases := []struct {
		name string
		b    *Burst
		want string
	}{
		{"missing", nil, "types[0].burst: required for kind burstable"},
		{"baseline zero", &Burst{Baseline: 0, CreditsPerHour: 6}, "types[0].burst.baseline: must be in (0, 1], got 0"},
		{"baseline above one", &Burst{Baseline: 1.5, CreditsPerHour: 6}, "types[0].burst.baseline: must be in (0, 1], got 1.5"},
		{"negative accrual", &Burst{Baseline: 0.1, CreditsPerHour: -1}, "types[0].burst.credits_per_hour: must be ≥ 0, got -1"},
		{"negative initial", &Burst{Baseline: 0.1, InitialCredits: -1}, "types[0].burst.initial_credits: must be ≥ 0, got -1"},
		{"negative max", &Burst{Baseline: 0.1, MaxCredits: -1}, "types[0].burst.max_credits: must be ≥ 0, got -1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cat := DefaultCatalog()
			it := cat.Types[0]
			it.Name, it.Kind, it.Burst = "t2.test", KindBurstable, c.b
			cat.Types = []InstanceType{it}
			err := cat.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Validate (-want +got):\n-%s\n+%v", c.want, err)
			}
		})
	}
}
