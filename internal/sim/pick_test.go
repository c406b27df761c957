package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/sloserve/sloserve/internal/dispatch"
)

// TestPickLeastOutstandingMatchesPicker: the engine's default pick, read off the instance table
// with its early exit, chooses the instance dispatch.LeastOutstanding chooses from the snapshot,
// on random fleets of mixed types, busy slots and accepting states.
func TestPickLeastOutstandingMatchesPicker(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 20000 {
		e := &engine{picker: dispatch.PickFunc(dispatch.LeastOutstanding)}
		for range 1 + rng.IntN(3) {
			ty := &vmType{}
			ty.backend.Slots = 1 + rng.IntN(4)
			e.types = append(e.types, ty)
		}
		for range rng.IntN(12) {
			ti := rng.IntN(len(e.types))
			in := vmInst{id: "vm", typ: ti, accepting: rng.IntN(5) > 0, busy: rng.IntN(e.types[ti].backend.Slots + 1)}
			if in.accepting {
				e.types[ti].ready++
			}
			e.insts = append(e.insts, in)
		}
		want := e.pick()
		e.leastOut = true
		if got := e.pick(); got != want {
			t.Fatalf("trial %d: fast pick %d, LeastOutstanding %d (fleet %+v)", trial, got, want, e.insts)
		}
	}
}
