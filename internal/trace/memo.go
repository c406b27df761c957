package trace

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"sync"
	"time"
)

// Memo shares a trace's arrivals across the runs that replay it (issue #17 item 6): the
// scoreboard replays each trace part, for one seed, in every row and every tuner probe, and
// generating a rate series' arrivals (an exponential draw each) was 5–8 % of its CPU. The first
// caller records the whole sequence as 4-byte gaps; later callers replay it, value for value
// what Trace.Arrivals gives (TestMemoReplaysArrivals). Keys are the trace's contents and the
// seed, so equal parts of different settings share too. The recordings held stay under a byte
// budget, the least recently used dropped first; past it, or while another caller records the
// same key, a caller gets Trace.Arrivals. Safe for concurrent use.
type Memo struct {
	mu    sync.Mutex
	max   int64 // byte budget of the recordings held
	used  int64
	clock uint64
	m     map[memoKey]*recording
}

// NewMemo returns a memo that holds at most maxBytes of recordings.
func NewMemo(maxBytes int64) *Memo {
	return &Memo{max: maxBytes, m: map[memoKey]*recording{}}
}

type memoKey struct {
	digest [sha256.Size]byte
	seed   uint64
}

// recording is one key's arrivals: gaps between successive offsets (the first from 0) in
// nanoseconds, a gap ≥ gapEscape as gapEscape and its high and low words.
type recording struct {
	gaps     []uint32
	n        int64  // arrivals
	used     uint64 // the memo's clock at the last use (LRU)
	building bool   // being recorded: others get a live source meanwhile
}

const gapEscape = math.MaxUint32

// Arrivals returns a Source of t.Arrivals(seed)'s offsets: the recording when there is one; a
// recording made now, generating the whole sequence first, when it fits the budget and no one
// else is making it; else t.Arrivals(seed).
func (m *Memo) Arrivals(t *Trace, seed uint64) Source {
	if r := m.get(t, seed); r != nil {
		return &replay{gaps: r.gaps}
	}
	return t.Arrivals(seed)
}

// Count returns how many arrivals t.Arrivals(seed) yields, recording them as Arrivals does.
func (m *Memo) Count(t *Trace, seed uint64) int64 {
	if r := m.get(t, seed); r != nil {
		return r.n
	}
	var n int64
	src := t.Arrivals(seed)
	for _, more := src.Next(); more; _, more = src.Next() {
		n++
	}
	return n
}

// get returns the recording of (t, seed), making it if it may; nil when the caller is to
// generate the arrivals itself.
func (m *Memo) get(t *Trace, seed uint64) *recording {
	if m == nil {
		return nil
	}
	k := memoKey{digest: t.digest(), seed: seed}
	m.mu.Lock()
	m.clock++
	if r, ok := m.m[k]; ok {
		r.used = m.clock
		building := r.building // its recorder writes it, under mu
		m.mu.Unlock()
		if building {
			return nil
		}
		return r
	}
	// About four bytes an arrival: skip what cannot fit even alone.
	if est := int64(t.Expected()*4*1.1) + 64; est > m.max {
		m.mu.Unlock()
		return nil
	}
	r := &recording{building: true, used: m.clock}
	m.m[k] = r
	m.mu.Unlock()

	gaps, n, ok := record(t.Arrivals(seed), int(t.Expected()*1.02)+16)
	m.mu.Lock()
	defer m.mu.Unlock()
	size := int64(cap(gaps)) * 4
	if !ok || size > m.max {
		delete(m.m, k)
		return nil
	}
	r.gaps, r.n, r.building = gaps, n, false
	m.used += size
	for m.used > m.max {
		m.evict(r)
	}
	return r
}

// evict drops the least recently used finished recording other than keep.
func (m *Memo) evict(keep *recording) {
	var oldK memoKey
	var old *recording
	for k, r := range m.m {
		if r != keep && !r.building && (old == nil || r.used < old.used) {
			oldK, old = k, r
		}
	}
	if old == nil {
		m.used = int64(cap(keep.gaps)) * 4 // only keep is left
		return
	}
	delete(m.m, oldK)
	m.used -= int64(cap(old.gaps)) * 4
}

// record drains src into gaps; ok is false when an offset goes back in time (the engine
// rejects such a source, which a replay must not hide).
func record(src Source, hint int) (gaps []uint32, n int64, ok bool) {
	gaps = make([]uint32, 0, hint)
	var last time.Duration
	for at, more := src.Next(); more; at, more = src.Next() {
		g := at - last
		if g < 0 {
			return nil, 0, false
		}
		if g < gapEscape {
			gaps = append(gaps, uint32(g))
		} else {
			gaps = append(gaps, gapEscape, uint32(uint64(g)>>32), uint32(g))
		}
		last = at
		n++
	}
	if cap(gaps) > len(gaps)+len(gaps)/8 { // the hint fell short and append doubled
		gaps = append([]uint32(nil), gaps...)
	}
	return gaps, n, true
}

// replay is a Source over a recording.
type replay struct {
	gaps []uint32
	i    int
	t    time.Duration
}

func (r *replay) Next() (time.Duration, bool) {
	if r.i >= len(r.gaps) {
		return 0, false
	}
	g := r.gaps[r.i]
	if g != gapEscape {
		r.i++
		r.t += time.Duration(g)
		return r.t, true
	}
	r.t += time.Duration(uint64(r.gaps[r.i+1])<<32 | uint64(r.gaps[r.i+2]))
	r.i += 3
	return r.t, true
}

// digest identifies what Arrivals generates from: the rates and step of a series, the offsets,
// end and scale of a list.
func (t *Trace) digest() [sha256.Size]byte {
	h := sha256.New()
	var b [8]byte
	word := func(v uint64) {
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	word(uint64(t.Step))
	word(uint64(len(t.Rates)))
	for _, r := range t.Rates {
		word(math.Float64bits(r))
	}
	word(uint64(len(t.Times)))
	for _, v := range t.Times {
		word(uint64(v))
	}
	word(uint64(t.End))
	word(math.Float64bits(t.scale()))
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}
