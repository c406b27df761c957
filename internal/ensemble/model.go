package ensemble

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Model is what the selector knows about one servable classifier before it runs: its profiled
// latency, top-1 accuracy and packing factor (Cocktail Table 1).
type Model struct {
	// Name identifies the model (unique within a pool).
	Name string `json:"name"`
	// Latency is the model's profiled inference latency (Table 1, "Latency (ms)").
	Latency time.Duration `json:"-"`
	// Accuracy is the model's top-1 accuracy as a fraction in (0, 1].
	Accuracy float64 `json:"accuracy"`
	// PackingFactor is P_f (§2.3.2): how many inferences one instance runs concurrently without
	// violating the model's latency, in requests; ≥ 1 (fractional for tiny instances).
	PackingFactor float64 `json:"packing_factor"`
}

// Validate reports the first field of m that is out of range.
func (m Model) Validate() error {
	switch {
	case m.Name == "":
		return errors.New("model.name: must not be empty")
	case m.Latency <= 0:
		return fmt.Errorf("model %q latency: must be > 0, got %v", m.Name, m.Latency)
	case !(m.Accuracy > 0 && m.Accuracy <= 1):
		return fmt.Errorf("model %q accuracy: must be in (0, 1], got %v", m.Name, m.Accuracy)
	case !(m.PackingFactor > 0) || math.IsInf(m.PackingFactor, 0):
		return fmt.Errorf("model %q packing_factor: must be > 0, got %v", m.Name, m.PackingFactor)
	}
	return nil
}

// Constraint is a request's <latency, accuracy> pair (§5.1, "Constraint specification"); it is
// also the key of the selection cache.
type Constraint struct {
	// Latency is the target latency of one inference (Lat_target).
	Latency time.Duration
	// Accuracy is the target accuracy as a fraction (Acc_target).
	Accuracy float64
}

// Validate reports the first field of c that is out of range.
func (c Constraint) Validate() error {
	if c.Latency <= 0 {
		return fmt.Errorf("constraint.latency: must be > 0, got %v", c.Latency)
	}
	if !(c.Accuracy > 0 && c.Accuracy <= 1) {
		return fmt.Errorf("constraint.accuracy: must be in (0, 1], got %v", c.Accuracy)
	}
	return nil
}

// String renders c as "<latency, accuracy>".
func (c Constraint) String() string {
	return fmt.Sprintf("<%v, %.4g>", c.Latency, c.Accuracy)
}

// ErrNoCandidate is returned when no model meets a constraint's latency.
var ErrNoCandidate = errors.New("no model meets the latency constraint")
