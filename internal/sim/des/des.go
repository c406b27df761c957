// Package des is the simulator's event kernel: the event heap every world's loop runs on, in
// (time, scheduling order), and the FIFO ring its queues use. Both never allocate in steady state.
package des

// Event is one scheduled happening; ID is a batch or instance index depending on Kind (each
// world numbers its own kinds).
type Event struct {
	At   int64
	Seq  uint64
	ID   int32
	Kind uint8
}

// Heap is a 4-ary min-heap ordered by (at, seq): ties run in scheduling order, which keeps runs
// deterministic, and since (at, seq) is a total order the pop order is that of any correct heap
// (the binary one it replaced included). Four children per node halve the depth, and the sifts
// move a hole rather than swap: the pops and pushes were 7 % of the scoreboard's CPU (pprof,
// issue #17). Hand-written so that pushing and popping never allocate in steady state.
type Heap struct {
	ev  []Event
	seq uint64
}

// Len is the number of pending events.
func (h *Heap) Len() int { return len(h.ev) }

// Events are the pending events, in heap order (read only).
func (h *Heap) Events() []Event { return h.ev }

// before reports whether a runs before b.
func before(a, b *Event) bool { return a.At < b.At || (a.At == b.At && a.Seq < b.Seq) }

// Push schedules an event of kind at at with id.
func (h *Heap) Push(at int64, kind uint8, id int32) {
	h.seq++
	e := Event{At: at, Seq: h.seq, ID: id, Kind: kind}
	h.ev = append(h.ev, e)
	ev := h.ev
	i := len(ev) - 1
	for i > 0 {
		p := (i - 1) / 4
		// A new event has the largest seq: it rises only above a strictly later time.
		if ev[p].At <= at {
			break
		}
		ev[i] = ev[p]
		i = p
	}
	ev[i] = e
}

// Top is the earliest event (Len > 0).
func (h *Heap) Top() *Event { return &h.ev[0] }

// Pop removes and returns the earliest event (Len > 0).
func (h *Heap) Pop() Event {
	ev := h.ev
	top := ev[0]
	n := len(ev) - 1
	last := ev[n]
	h.ev = ev[:n]
	ev = ev[:n]
	if n == 0 {
		return top
	}
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		for j := c + 1; j < min(c+4, n); j++ {
			if before(&ev[j], &ev[m]) {
				m = j
			}
		}
		if !before(&ev[m], &last) {
			break
		}
		ev[i] = ev[m]
		i = m
	}
	ev[i] = last
	return top
}

// Ring is a FIFO of int64 (arrival offsets) that grows by doubling; N is its length. Its buffer's
// length is a power of two (64 doubled), so positions wrap with a mask.
type Ring struct {
	buf  []int64
	head int
	N    int
}

// Push appends v.
func (r *Ring) Push(v int64) {
	if r.N == len(r.buf) {
		nb := make([]int64, max(64, 2*len(r.buf)))
		for i := 0; i < r.N; i++ {
			nb[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
		}
		r.buf, r.head = nb, 0
	}
	r.buf[(r.head+r.N)&(len(r.buf)-1)] = v
	r.N++
}

// Front is the oldest value (N > 0).
func (r *Ring) Front() int64 { return r.buf[r.head] }

// Pop removes and returns the oldest value (N > 0).
func (r *Ring) Pop() int64 {
	v := r.buf[r.head]
	r.head++
	if r.head == len(r.buf) {
		r.head = 0
	}
	r.N--
	return v
}
