package timex

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestSubIsTimeSub: Sub is t.Sub(u) for times with and without monotonic readings, in any
// location, near each other and centuries apart (where t.Sub saturates).
func TestSubIsTimeSub(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tokyo := time.FixedZone("JST", 9*3600)
	now := time.Now() // has a monotonic reading
	bases := []time.Time{
		time.Unix(1_500_000_000, 123).UTC(), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, tokyo),
		time.Date(1733, 3, 4, 5, 6, 7, 8, tokyo), time.Date(2318, 1, 1, 0, 0, 0, 1, time.UTC), now, now.Round(0), {},
	}
	var ts []time.Time
	for _, b := range bases {
		ts = append(ts, b)
		for range 40 {
			d := time.Duration(rng.Int64N(1<<62)) - 1<<61
			if rng.IntN(2) == 0 {
				d = time.Duration(rng.Int64N(int64(time.Hour))) - time.Hour/2
			}
			ts = append(ts, b.Add(d))
		}
	}
	for _, a := range ts {
		for _, b := range ts {
			if got, want := Sub(a, b), a.Sub(b); got != want {
				t.Fatalf("Sub(%v, %v) = %v, want %v", a, b, got, want)
			}
		}
	}
}

func BenchmarkSub(b *testing.B) {
	t0 := time.Unix(1_500_000_000, 0).UTC()
	ts := make([]time.Time, 1024)
	for i := range ts {
		ts[i] = t0.Add(time.Duration(i) * 1234567)
	}
	b.Run("clock", func(b *testing.B) {
		var s time.Duration
		for i := range b.N {
			s += Sub(ts[i&1023], ts[(i*7)&1023])
		}
		_ = s
	})
	b.Run("time", func(b *testing.B) {
		var s time.Duration
		for i := range b.N {
			s += ts[i&1023].Sub(ts[(i*7)&1023])
		}
		_ = s
	})
}
