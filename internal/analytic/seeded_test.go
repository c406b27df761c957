package analytic

import (
	"testing"
	"time"
)

// TestNewOnlineSeeded: the seeded plan is in force from the first call until a re-fit, and a
// seed outside the service's domain is refused.
func TestNewOnlineSeeded(t *testing.T) {
	seed := Plan{MemoryMB: 2048, MaxBatch: 16, Timeout: 200 * time.Millisecond, Feasible: true}
	o, err := NewOnlineSeeded(DefaultPolicyConfig(), resnetSvc{}, seed)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := o.Plan(time.Unix(0, 0))
	if p.MemoryMB != 2048 || p.MaxBatch != 16 || p.Timeout != 200*time.Millisecond {
		t.Errorf("first plan %+v, want the seed %+v", p, seed)
	}
	for _, bad := range []Plan{{MemoryMB: 2048}, {MemoryMB: 512, MaxBatch: 4}, {MemoryMB: 4096, MaxBatch: 4}} {
		if _, err := NewOnlineSeeded(DefaultPolicyConfig(), resnetSvc{}, bad); err == nil {
			t.Errorf("seed %+v accepted", bad)
		}
	}
}
