package mark

import (
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/autoscale"
)

// TestFirstUnseen checks the backward scan against the samples Scale's loop would observe.
func TestFirstUnseen(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := make([]autoscale.Sample, 10)
	for i := range h {
		h[i] = autoscale.Sample{Start: t0.Add(time.Duration(i) * time.Second), Period: time.Second}
	}
	cases := []struct {
		last time.Time
		want int
	}{
		{time.Time{}, 0},
		{t0.Add(-time.Second), 0},
		{t0, 1},
		{t0.Add(4 * time.Second), 5},
		{t0.Add(4500 * time.Millisecond), 5},
		{t0.Add(9 * time.Second), 10},
		{t0.Add(time.Hour), 10},
	}
	for _, c := range cases {
		m := &Scaler{lastSeen: c.last}
		if got := m.firstUnseen(h); got != c.want {
			t.Errorf("lastSeen %v: firstUnseen = %d, want %d", c.last, got, c.want)
		}
	}
}
