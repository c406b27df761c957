package keepalive

import (
	"testing"
	"time"
)

// BenchmarkLSTHWindows measures one Observe + Windows of LSTH with a day of history.
func BenchmarkLSTHWindows(b *testing.B) {
	p, err := NewLSTH(DefaultLSTHConfig())
	if err != nil {
		b.Fatal(err)
	}
	t := t0
	for i := range 1440 {
		t = t.Add(time.Duration(1+i%7) * time.Minute)
		p.Observe(t, t)
	}
	b.ReportAllocs()
	for b.Loop() {
		t = t.Add(3 * time.Minute)
		p.Observe(t, t)
		p.Windows(t)
	}
}
