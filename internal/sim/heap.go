package sim

// event kinds.
const (
	evVMDone uint8 = iota
	evSLDone
	evReady
	evWakeVM
	evWakeSL
	evSample
	evScale
	evSpotNotice
	evSpotReclaim
)

// event is one scheduled happening; id is a batch or instance index depending on kind.
type event struct {
	at   int64
	seq  uint64
	id   int32
	kind uint8
}

// eventHeap is a binary min-heap ordered by (at, seq): ties run in scheduling order, which
// keeps runs deterministic. Hand-written so that pushing and popping never allocate in steady state.
type eventHeap struct {
	ev  []event
	seq uint64
}

func (h *eventHeap) len() int { return len(h.ev) }

func (h *eventHeap) less(i, j int) bool {
	a, b := &h.ev[i], &h.ev[j]
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

func (h *eventHeap) push(at int64, kind uint8, id int32) {
	h.seq++
	h.ev = append(h.ev, event{at: at, seq: h.seq, id: id, kind: kind})
	i := len(h.ev) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h.ev[i], h.ev[p] = h.ev[p], h.ev[i]
		i = p
	}
}

func (h *eventHeap) top() *event { return &h.ev[0] }

func (h *eventHeap) pop() event {
	e := h.ev[0]
	n := len(h.ev) - 1
	h.ev[0] = h.ev[n]
	h.ev = h.ev[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			break
		}
		h.ev[i], h.ev[m] = h.ev[m], h.ev[i]
		i = m
	}
	return e
}

// ring is a FIFO of int64 (arrival offsets) that grows by doubling.
type ring struct {
	buf  []int64
	head int
	n    int
}

func (r *ring) push(v int64) {
	if r.n == len(r.buf) {
		nb := make([]int64, max(64, 2*len(r.buf)))
		for i := 0; i < r.n; i++ {
			nb[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = nb, 0
	}
	r.buf[(r.head+r.n)%len(r.buf)] = v
	r.n++
}

func (r *ring) front() int64 { return r.buf[r.head] }

func (r *ring) pop() int64 {
	v := r.buf[r.head]
	r.head++
	if r.head == len(r.buf) {
		r.head = 0
	}
	r.n--
	return v
}
