package sloserve

import (
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/analytic"
	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/policy/batch"
	"github.com/sloserve/sloserve/internal/profile"
)

// TestInvocationOverhead: the overhead is the median excess of the recent batches over the
// profile — a rare cold start does not move it, a batch faster than its profile counts as none —
// and the service model the re-fits use and the deadline guard both add it.
func TestInvocationOverhead(t *testing.T) {
	curve, err := profile.NewCurve([]profile.Point{{Batch: 1, Time: 10 * time.Millisecond}, {Batch: 16, Time: 160 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	over := &invocationOverhead{}
	svc := overheadService{MemoryService: batch.MemoryService{Curve: curve, MemoryMB: 1769, MaxBatch: 16}, over: over}
	online, err := analytic.NewOnline(analytic.DefaultPolicyConfig(), svc)
	if err != nil {
		t.Fatal(err)
	}
	p := &deadlineBuffer{buf: analytic.NewBufferPolicy(online), curve: curve, over: over, slack: 16 * time.Millisecond}
	t0 := time.Unix(1000, 0)
	for i := range 20 {
		took := curve.ServiceTime(4) + 7*time.Millisecond
		if i%10 == 3 {
			took += time.Second // a cold start
		}
		at := t0.Add(time.Duration(i) * time.Second)
		p.Observe(batching.Outcome{Size: 4, Dispatched: at, Completed: at.Add(took), Arrivals: []time.Time{at, at, at, at}}, at.Add(took))
	}
	if got := p.Overhead(); got != 7*time.Millisecond {
		t.Errorf("overhead %v, want the median excess 7ms (cold starts ignored)", got)
	}
	if got, want := svc.ServiceTime(4, 1769), (40*time.Millisecond).Seconds()+0.007; got < want-1e-9 || got > want+1e-9 {
		t.Errorf("service time of 4 with the overhead %v s, want %v", got, want)
	}
	// Deadline guard: a batch of 4 must leave by deadline − slack − S(4) − overhead.
	dl := t0.Add(200 * time.Millisecond)
	latest := dl.Add(-16*time.Millisecond - 40*time.Millisecond - 7*time.Millisecond)
	if d := p.guardLatest(dl, 4); !d.Equal(latest) {
		t.Errorf("guard's latest dispatch %v, want %v", d.Sub(t0), latest.Sub(t0))
	}
	fast := &invocationOverhead{}
	for range 5 {
		fast.observe(-3 * time.Millisecond)
	}
	if fast.value() != 0 {
		t.Errorf("batches faster than the profile: overhead %v, want 0", fast.value())
	}
}
