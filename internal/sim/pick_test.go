package sim

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/dispatch"
	"github.com/sloserve/sloserve/internal/provider"
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
			e.live = append(e.live, len(e.insts)-1)
		}
		want := e.pick()
		e.leastOut = true
		if got := e.pick(); got != want {
			t.Fatalf("trial %d: fast pick %d, LeastOutstanding %d (fleet %+v)", trial, got, want, e.insts)
		}
	}
}

// pickScan is pick as it was before the live list: a scan of the whole instance table, ended
// instances included, for the picker.
func pickScan(e *engine) int {
	var cands []dispatch.Instance
	var idx []int
	for i := range e.insts {
		in := &e.insts[i]
		ty := e.types[in.typ]
		if free := ty.backend.Slots - in.busy; in.accepting && free > 0 {
			cands = append(cands, dispatch.Instance{ID: in.id, Free: free, Outstanding: in.busy, Weight: ty.weight})
			idx = append(idx, i)
		}
	}
	k := e.picker.Pick(cands)
	if k < 0 || k >= len(cands) {
		return -1
	}
	return idx[k]
}

// TestLiveListMatchesTable: on random sequences of launches, readiness, busy slots, spot
// notices, terminations, ends and compactions, the live list is exactly the table's instances
// not ended, in table order, view's cached sums are the table's, and both picks (the default's
// fast one and the snapshot's) equal the picker's choice over a scan of the whole table.
func TestLiveListMatchesTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for trial := range 300 {
		cat := cost.DefaultCatalog()
		e := &engine{cat: &cat, picker: dispatch.PickFunc(dispatch.LeastOutstanding), typeIdx: map[string]int{}, instIdx: map[string]int{}, vmInert: true, vmMax: 1}
		for k := range 1 + rng.IntN(3) {
			ty := &vmType{account: account{name: "t" + strconv.Itoa(k)}, weight: 1}
			ty.backend.Slots = 1 + rng.IntN(4)
			e.types = append(e.types, ty)
			e.typeIdx[ty.name] = k
		}
		for step := range 200 {
			e.now = int64(step)
			n := len(e.insts)
			switch op := rng.IntN(10); {
			case op < 3 || n == 0:
				if _, err := e.launch(provider.Spec{Type: e.types[rng.IntN(len(e.types))].name}); err != nil {
					t.Fatal(err)
				}
			case op < 5:
				e.becomeReady(rng.IntN(n))
			case op < 7:
				if in := &e.insts[rng.IntN(n)]; in.ended == 0 {
					in.busy = rng.IntN(e.types[in.typ].backend.Slots + 1)
				}
			case op == 7:
				e.terminate(e.insts[rng.IntN(n)].id)
			case op == 8:
				e.spotNotice(rng.IntN(n))
			default:
				if rng.IntN(4) == 0 {
					e.compact()
				} else {
					e.end(rng.IntN(n))
				}
			}
			var want []int
			for i := range e.insts {
				if e.insts[i].ended == 0 {
					want = append(want, i)
				}
			}
			if !slices.Equal(e.live, want) {
				t.Fatalf("trial %d step %d: live %v, want %v", trial, step, e.live, want)
			}
			ready, slots := 0, 0
			for i := range e.insts {
				if e.insts[i].accepting {
					ready++
					slots += e.types[e.insts[i].typ].backend.Slots
				}
			}
			if v := e.view(); v.Ready != ready || v.Slots != slots {
				t.Fatalf("trial %d step %d: view has %d ready, %d slots; the table %d, %d", trial, step, v.Ready, v.Slots, ready, slots)
			}
			ref := pickScan(e)
			for _, fast := range []bool{false, true} {
				e.leastOut = fast
				if got := e.pick(); got != ref {
					t.Fatalf("trial %d step %d: pick (fast %v) %d, full scan %d", trial, step, fast, got, ref)
				}
			}
		}
	}
}

// TestPickTopFollowsReadiness: the most slots of a ready type, which ends pick's scan at an idle
// instance that has them, follows instances becoming ready and leaving: a one-slot instance idle
// before an idle four-slot one must not end the scan once the four-slot type is ready, and must
// again once it is gone.
func TestPickTopFollowsReadiness(t *testing.T) {
	cat := cost.DefaultCatalog()
	e := &engine{cat: &cat, picker: dispatch.PickFunc(dispatch.LeastOutstanding), typeIdx: map[string]int{}, instIdx: map[string]int{},
		vmInert: true, vmMax: 1, leastOut: true}
	for k, slots := range []int{1, 4} {
		ty := &vmType{account: account{name: "t" + strconv.Itoa(k)}, weight: 1}
		ty.backend.Slots = slots
		e.types = append(e.types, ty)
		e.typeIdx[ty.name] = k
	}
	small, err := e.launch(provider.Spec{Type: "t0"})
	if err != nil {
		t.Fatal(err)
	}
	big, err := e.launch(provider.Spec{Type: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	e.becomeReady(small)
	if got := e.pick(); got != small {
		t.Fatalf("only the one-slot instance ready: pick %d, want %d", got, small)
	}
	e.becomeReady(big)
	if got := e.pick(); got != big {
		t.Fatalf("both idle: pick %d, want the four-slot instance %d", got, big)
	}
	e.spotNotice(big)
	if got := e.pick(); got != small {
		t.Fatalf("the four-slot instance gone: pick %d, want %d", got, small)
	}
}
