package gateway

// Candidate is one instance able to take a batch now, as a Picker sees it.
type Candidate struct {
	// ID is the instance id.
	ID string
	// Outstanding is the number of the instance's batches in flight.
	Outstanding int
	// Slots is the number of batches the instance takes at once.
	Slots int
}

// Picker chooses which instance gets the next batch. Pick is called only from the model's
// batcher goroutine, with at least one candidate, every one of which has a free slot; it returns
// an index into cands. Implementations are pure decision code.
type Picker interface {
	Pick(cands []Candidate) int
}

// PickerFunc adapts a function to a Picker.
type PickerFunc func(cands []Candidate) int

// Pick implements Picker.
func (f PickerFunc) Pick(cands []Candidate) int { return f(cands) }

// LeastOutstanding picks the candidate with the fewest batches in flight relative to its slots,
// the first one on ties (Cocktail's least-free-slot balancing reduced to one slot type).
func LeastOutstanding(cands []Candidate) int {
	best := 0
	for i := 1; i < len(cands); i++ {
		// Compare Outstanding/Slots without division.
		if cands[i].Outstanding*cands[best].Slots < cands[best].Outstanding*cands[i].Slots {
			best = i
		}
	}
	return best
}
