package admission

import (
	"testing"
	"time"
)

func TestBouncerDecidePool(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const ms = time.Millisecond
	tests := []struct {
		name       string
		v          PoolView
		wantAdmit  bool
		wantFinish time.Duration
		wantReason string
	}{
		{"no capacity", PoolView{Slots: 2}, false, -1, ReasonNoCapacity},
		{"free slot", PoolView{Slots: 2, FreeSlots: 1, DrainRate: 10, ServiceTime: 200 * ms}, true, 200 * ms, ReasonFits},
		{"free slot waits W", PoolView{Slots: 2, FreeSlots: 1, DrainRate: 10, MaxWait: 50 * ms, ServiceTime: 200 * ms}, true, 250 * ms, ReasonFits},
		{"queue drains at the fleet rate", PoolView{Queued: 3, Slots: 2, DrainRate: 20, ServiceTime: 200 * ms}, true, 400 * ms, ReasonFits},
		{"long queue spills", PoolView{Queued: 30, Slots: 2, DrainRate: 20, ServiceTime: 200 * ms}, false, 1750 * ms, ReasonTooLate},
	}
	b, _ := NewBouncer(DefaultConfig())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := b.DecidePool(tc.v, now.Add(600*ms), now)
			if got.Admit != tc.wantAdmit || got.Reason != tc.wantReason {
				t.Errorf("DecidePool (-want +got):\n-admit %v %q\n+admit %v %q", tc.wantAdmit, tc.wantReason, got.Admit, got.Reason)
			}
			if tc.wantFinish >= 0 && got.Finish.Sub(now) != tc.wantFinish {
				t.Errorf("Finish (-want +got):\n-%v\n+%v", tc.wantFinish, got.Finish.Sub(now))
			}
		})
	}
	v := PoolView{Queued: 3, Slots: 2, DrainRate: 20, ServiceTime: 200 * ms}
	if a := testing.AllocsPerRun(100, func() { b.DecidePool(v, now.Add(time.Second), now) }); a != 0 {
		t.Errorf("DecidePool allocates %v times per call, want 0", a)
	}
}
