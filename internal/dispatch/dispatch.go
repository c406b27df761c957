package dispatch

import (
	"errors"
	"fmt"
	"sort"
)

// Instance is one candidate in the snapshot a Picker chooses from; the runtime (gateway or
// simulator) fills it in, in a stable order (e.g. by instance id), before each pick.
type Instance struct {
	// ID identifies the instance; pickers do not interpret it.
	ID string
	// Free is how many batches the instance can take now; only instances with Free > 0 are
	// eligible. Runtimes that do not limit concurrency set it to a large number.
	Free int
	// Outstanding is how many batches were sent to the instance and not yet answered.
	Outstanding int
	// Weight is the instance's relative capacity — INFless's r_up in requests per second, or
	// MArk's load-balancer weight; values ≤ 0 count as 1.
	Weight float64
}

// Picker chooses the instance for the next batch: Pick returns an index into snap, or -1 when
// no instance is eligible. Pickers are pure apart from their own cursor (round-robin); a Picker
// is owned by one goroutine.
type Picker interface {
	Pick(snap []Instance) int
}

// PickFunc adapts a function to a Picker, so that further picks (INFless's α-band, Cocktail's
// least free slots) plug in as plain functions.
type PickFunc func(snap []Instance) int

// Pick calls f(snap).
func (f PickFunc) Pick(snap []Instance) int { return f(snap) }

// Pick names understood by New.
const (
	// LeastOutstandingName picks the eligible instance with the fewest outstanding batches; the
	// gateway's default.
	LeastOutstandingName = "least-outstanding"
	// WeightedLeastOutstandingName picks the smallest (Outstanding+1)/Weight.
	WeightedLeastOutstandingName = "weighted-least-outstanding"
	// RoundRobinName cycles through the eligible instances in snapshot order.
	RoundRobinName = "round-robin"
	// DefaultName is the pick used when none is configured.
	DefaultName = LeastOutstandingName
)

// ErrUnknownPicker is returned by New for an unknown pick name.
var ErrUnknownPicker = errors.New("unknown dispatch pick")

// New returns a fresh Picker by name (see Names).
func New(name string) (Picker, error) {
	switch name {
	case LeastOutstandingName:
		return PickFunc(LeastOutstanding), nil
	case WeightedLeastOutstandingName:
		return PickFunc(WeightedLeastOutstanding), nil
	case RoundRobinName:
		return &RoundRobin{}, nil
	}
	return nil, fmt.Errorf("new dispatch pick %q (known: %v): %w", name, Names(), ErrUnknownPicker)
}

// Names returns the pick names New understands, sorted.
func Names() []string {
	n := []string{LeastOutstandingName, WeightedLeastOutstandingName, RoundRobinName}
	sort.Strings(n)
	return n
}

var (
	_ Picker = PickFunc(nil)
	_ Picker = (*RoundRobin)(nil)
)

// LeastOutstanding returns the eligible instance with the fewest outstanding batches; ties go to
// the one with more free slots, then to the earlier one in snap. It returns -1 when no instance
// has a free slot.
func LeastOutstanding(snap []Instance) int {
	best := -1
	for i := range snap {
		c := &snap[i]
		if c.Free <= 0 {
			continue
		}
		if best < 0 || c.Outstanding < snap[best].Outstanding ||
			c.Outstanding == snap[best].Outstanding && c.Free > snap[best].Free {
			best = i
		}
	}
	return best
}

// WeightedLeastOutstanding returns the eligible instance with the smallest (Outstanding+1)/Weight —
// the one that would be least loaded relative to its capacity after taking the batch; ties go to
// the earlier one in snap. It returns -1 when no instance has a free slot.
func WeightedLeastOutstanding(snap []Instance) int {
	best := -1
	var bestLoad float64
	for i := range snap {
		c := &snap[i]
		if c.Free <= 0 {
			continue
		}
		w := c.Weight
		if !(w > 0) {
			w = 1
		}
		load := float64(c.Outstanding+1) / w
		if best < 0 || load < bestLoad {
			best, bestLoad = i, load
		}
	}
	return best
}

// RoundRobin cycles through the eligible instances in snapshot order, starting after the index
// it picked last. The zero value starts at the first instance.
type RoundRobin struct {
	next int
}

// Pick returns the first eligible instance at or after the cursor (wrapping), or -1.
func (r *RoundRobin) Pick(snap []Instance) int {
	n := len(snap)
	if n == 0 {
		return -1
	}
	start := r.next % n
	for k := range n {
		i := (start + k) % n
		if snap[i].Free > 0 {
			r.next = i + 1
			return i
		}
	}
	return -1
}
