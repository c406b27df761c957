package des

import (
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
