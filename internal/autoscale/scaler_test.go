package autoscale

import (
	"testing"

	"github.com/sloserve/sloserve/internal/provider"
)

// TestStepAttrsLastSample: the facts logged for a step are the last sample's and the fleet's.
func TestStepAttrsLastSample(t *testing.T) {
	s := Snapshot{QueueLen: 3, History: []Sample{{Arrivals: 1}, {Arrivals: 126, Completed: 126, Missed: 13}},
		Fleet: []Member{{State: provider.StateReady}, {State: provider.StateLaunching}, {State: provider.StateReady}}}
	got := StepAttrs(s, Decision{Reason: "r"}, 1, 0)
	want := map[string]any{"arrivals": 126, "completed": 126, "missed": 13, "queue": 3, "launching": 1, "ready": 2, "launch": 1, "reason": "r"}
	for i := 0; i+1 < len(got); i += 2 {
		if w, ok := want[got[i].(string)]; ok && w != got[i+1] {
			t.Errorf("%s = %v, want %v", got[i], got[i+1], w)
		}
	}
	if len(got) != 20 {
		t.Errorf("%d values, want 20 (10 pairs)", len(got))
	}
}
