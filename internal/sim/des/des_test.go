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

// TestHeapInterleaved: pushes and pops interleaved at random pop what a scan for the least
// (time, scheduling order) of the pending events pops.
func TestHeapInterleaved(t *testing.T) {
	var h Heap
	var ref []Event
	rng := rand.New(rand.NewPCG(3, 4))
	var seq uint64
	for step := range 20000 {
		if rng.IntN(5) < 3 || len(ref) == 0 {
			at := int64(rng.IntN(40))
			seq++
			h.Push(at, uint8(step%7), int32(step))
			ref = append(ref, Event{At: at, Seq: seq, ID: int32(step), Kind: uint8(step % 7)})
			continue
		}
		m := 0
		for k := range ref {
			if before(&ref[k], &ref[m]) {
				m = k
			}
		}
		want := ref[m]
		ref = append(ref[:m], ref[m+1:]...)
		if got := h.Pop(); got != want {
			t.Fatalf("step %d: popped %+v, want %+v", step, got, want)
		}
		if h.Len() != len(ref) {
			t.Fatalf("step %d: %d pending, want %d", step, h.Len(), len(ref))
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
