package des

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The heap pops in (time, scheduling order); the ring is FIFO across its growth.
func TestHeapAndRing(t *testing.T) {
	var h Heap
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 1000 {
		h.Push(int64(rng.IntN(50)), uint8(i%3), int32(i))
	}
	var last Event
	for n := 0; h.Len() > 0; n++ {
		if top := *h.Top(); top != h.Events()[0] {
			t.Fatalf("Top %+v is not the heap's first event", top)
		}
		e := h.Pop()
		if n > 0 && (e.At < last.At || (e.At == last.At && e.Seq < last.Seq)) {
			t.Fatalf("popped %+v after %+v", e, last)
		}
		last = e
	}
	var r Ring
	for i := range 200 {
		r.Push(int64(i))
		if i%3 == 0 {
			r.Pop()
		}
	}
	want := int64(67)
	for r.N > 0 {
		if v := r.Pop(); v != want {
			t.Fatalf("ring popped %d, want %d", v, want)
		}
		want++
	}
	if want != 200 {
		t.Fatalf("ring ended at %d, want 200", want)
	}
}

// Interleaved pushes and pops return exactly the events a sorted reference returns, in the same
// order: the pop order is fixed by (At, Seq) alone, whatever the heap's shape.
func TestHeapMatchesSortedReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 50 {
		var h Heap
		var ref []Event // pending, unsorted
		var seq uint64
		now := int64(0)
		for step := range 2000 {
			if len(ref) == 0 || rng.IntN(100) < 55 {
				at := now + int64(rng.IntN(1+round*3))
				seq++
				h.Push(at, uint8(step%7), int32(step))
				ref = append(ref, Event{At: at, Seq: seq, ID: int32(step), Kind: uint8(step % 7)})
				continue
			}
			m := 0
			for j := range ref {
				if ref[j].At < ref[m].At || (ref[j].At == ref[m].At && ref[j].Seq < ref[m].Seq) {
					m = j
				}
			}
			want := ref[m]
			ref = append(ref[:m], ref[m+1:]...)
			if top := *h.Top(); top != want {
				t.Fatalf("round %d step %d: Top %+v, want %+v", round, step, top, want)
			}
			if got := h.Pop(); got != want {
				t.Fatalf("round %d step %d: popped %+v, want %+v", round, step, got, want)
			}
			now = want.At
			if h.Len() != len(ref) {
				t.Fatalf("round %d step %d: Len %d, want %d", round, step, h.Len(), len(ref))
			}
		}
	}
}

// BenchmarkHeap is a steady state of n pending events, each pop followed by a push a little
// later, as a world's loop runs.
func BenchmarkHeap(b *testing.B) {
	for _, n := range []int{8, 64, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var h Heap
			rng := rand.New(rand.NewPCG(5, 6))
			for range n {
				h.Push(int64(rng.IntN(1_000_000)), 0, 0)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				e := h.Pop()
				h.Push(e.At+int64(rng.IntN(1_000_000)), e.Kind, e.ID)
			}
		})
	}
}
