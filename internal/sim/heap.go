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
	evStall
)

// wakeSet is a tier's pending wake-ups (up to len(at) of them recorded): a wake-up asked for
// at a time one is already pending at is not pushed again. A tier's pump at an instant it was
// just pumped at, with nothing in between, decides as the first did (a batching policy's
// Decide depends on the queue, the free slots and now), so the copy changes nothing but the
// heap: BATCH's buffer asks for its re-plan time after every batch, and the copies of that one
// time were 32,000 pending events on average on a busy week (issue #17; about 5 % of the batch
// and sloserve rows' CPU).
// More distinct times than it records are pushed unrecorded, as before.
type wakeSet struct {
	at [4]int64
	n  int
}

// add records a wake-up at t and reports whether it must be pushed (none is pending at t).
func (s *wakeSet) add(t int64) bool {
	for _, a := range s.at[:s.n] {
		if a == t {
			return false
		}
	}
	if s.n < len(s.at) {
		s.at[s.n] = t
		s.n++
	}
	return true
}

// del forgets the wake-up at t (popped).
func (s *wakeSet) del(t int64) {
	for i, a := range s.at[:s.n] {
		if a == t {
			s.n--
			s.at[i] = s.at[s.n]
			return
		}
	}
}
