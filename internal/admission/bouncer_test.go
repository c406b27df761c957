package admission

import (
	"testing"
	"time"
)

func TestBouncerDecide(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const ms = time.Millisecond
	tests := []struct {
		name       string
		v          View
		rt         time.Duration
		margin     time.Duration
		wantAdmit  bool
		wantFinish time.Duration
		wantReason string
	}{
		{"no instance spills", View{}, 200 * ms, 0, false, -1, ReasonNoCapacity},
		{"idle, no batching", View{Slots: 1, FreeSlots: 1, MaxBatch: 1, BatchTime: 100 * ms}, 200 * ms, 0, true, 100 * ms, ReasonFits},
		{"idle, partial batch waits W", View{Slots: 1, FreeSlots: 1, MaxBatch: 8, MaxWait: 50 * ms, BatchTime: 120 * ms}, 200 * ms, 0, true, 170 * ms, ReasonFits},
		{"full batch goes at once", View{Queued: 7, Slots: 1, FreeSlots: 1, MaxBatch: 8, MaxWait: 50 * ms, BatchTime: 120 * ms}, 200 * ms, 0, true, 120 * ms, ReasonFits},
		{"busy slot, empty queue waits one batch", View{Queued: 0, Slots: 1, FreeSlots: 0, MaxBatch: 1, BatchTime: 90 * ms}, 200 * ms, 0, true, 180 * ms, ReasonFits},
		{"busy slot and a queued batch spill", View{Queued: 1, Slots: 1, FreeSlots: 0, MaxBatch: 1, BatchTime: 90 * ms}, 200 * ms, 0, false, 270 * ms, ReasonTooLate},
		{"more slots drain faster", View{Queued: 2, Slots: 3, FreeSlots: 0, MaxBatch: 1, BatchTime: 90 * ms}, 200 * ms, 0, true, 180 * ms, ReasonFits},
		{"free slots take the first batches", View{Queued: 2, Slots: 4, FreeSlots: 3, MaxBatch: 1, BatchTime: 90 * ms}, 200 * ms, 0, true, 90 * ms, ReasonFits},
		{"margin tightens the deadline", View{Slots: 1, FreeSlots: 1, MaxBatch: 1, BatchTime: 190 * ms}, 200 * ms, 20 * ms, false, 190 * ms, ReasonTooLate},
		{"negative queue is empty", View{Queued: -3, Slots: 1, FreeSlots: 1, MaxBatch: 1, BatchTime: 10 * ms}, 200 * ms, 0, true, 10 * ms, ReasonFits},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := NewBouncer(Config{Margin: tc.margin})
			if err != nil {
				t.Fatal(err)
			}
			got := b.Decide(tc.v, now.Add(tc.rt), now)
			if got.Admit != tc.wantAdmit || got.Reason != tc.wantReason {
				t.Errorf("Decide (-want +got):\n-admit %v %q\n+admit %v %q", tc.wantAdmit, tc.wantReason, got.Admit, got.Reason)
			}
			if tc.wantFinish >= 0 && got.Finish.Sub(now) != tc.wantFinish {
				t.Errorf("Finish (-want +got):\n-%v\n+%v", tc.wantFinish, got.Finish.Sub(now))
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	if _, err := NewBouncer(Config{Margin: -time.Millisecond}); err == nil {
		t.Error("NewBouncer with negative margin: want error naming admission.margin")
	}
}

func TestDecideDoesNotAllocate(t *testing.T) {
	b, _ := NewBouncer(DefaultConfig())
	now := time.Unix(0, 0)
	v := View{Queued: 13, Slots: 4, FreeSlots: 1, MaxBatch: 8, MaxWait: time.Millisecond, BatchTime: time.Millisecond}
	if a := testing.AllocsPerRun(100, func() { b.Decide(v, now.Add(time.Second), now) }); a != 0 {
		t.Errorf("Decide allocates %v times per call, want 0", a)
	}
}

func BenchmarkDecide(b *testing.B) {
	bc, _ := NewBouncer(DefaultConfig())
	now := time.Unix(0, 0)
	v := View{Queued: 13, Slots: 4, FreeSlots: 1, MaxBatch: 8, MaxWait: time.Millisecond, BatchTime: time.Millisecond}
	b.ReportAllocs()
	for b.Loop() {
		bc.Decide(v, now.Add(time.Second), now)
	}
}
