package ensemble

import (
	"errors"
	"fmt"
	"math"
)

// InstanceType is a procurement option for one model pool.
type InstanceType struct {
	// Name identifies the type (e.g. "c5.xlarge", "p2.xlarge").
	Name string
	// CostPerHour is the price of one instance, in US dollars per hour.
	CostPerHour float64
	// PackingFactor is P_f of the pool's model on this type, in concurrent requests per
	// instance; > 0.
	PackingFactor float64
}

// Procurement is the cost-aware controller's decision for one pool (§4.2.1).
type Procurement struct {
	// Additional is A_n = L_p − C_r, the load not covered by running instances, in concurrent
	// requests (0 when they suffice).
	Additional float64
	// Type is the chosen instance type (empty when nothing is needed).
	Type string
	// Count is the number of instances of Type to launch: ⌈A_n / P_f⌉.
	Count int
	// CostPerHour is Count × the type's hourly price, in US dollars per hour.
	CostPerHour float64
	// Reason explains the choice.
	Reason string
}

// ErrNoInstanceType is returned by Procure when it is given no usable instance type.
var ErrNoInstanceType = errors.New("no instance type to procure")

// Procure is Cocktail's cost-aware procurement (§4.2.1): with predicted load L_p and running
// instances of packing factors running (C_r = Σ P_f), it needs A_n = L_p − C_r more slots and
// picks the type minimising Cost_i × A_n / P_f_i. The paper's ratio is continuous; Procure
// charges whole instances (⌈A_n / P_f_i⌉), which is what makes a GPU with a large P_f win only
// "if the load matches the P_f of the instance". Ties go to the type listed first.
func Procure(predicted float64, running []float64, types []InstanceType) (Procurement, error) {
	if math.IsNaN(predicted) || predicted < 0 || math.IsInf(predicted, 0) {
		return Procurement{}, fmt.Errorf("procure: predicted load must be finite and >= 0, got %v", predicted)
	}
	cr := 0.0
	for _, pf := range running {
		cr += pf
	}
	an := predicted - cr
	if an <= 0 {
		return Procurement{Reason: fmt.Sprintf("running capacity %.3g covers predicted load %.3g", cr, predicted)}, nil
	}
	best := Procurement{Additional: an, CostPerHour: math.Inf(1)}
	for _, t := range types {
		if !(t.PackingFactor > 0) || t.CostPerHour < 0 || math.IsNaN(t.CostPerHour) {
			continue
		}
		n := int(math.Ceil(an/t.PackingFactor - 1e-9))
		c := float64(n) * t.CostPerHour
		if c < best.CostPerHour {
			best.Type, best.Count, best.CostPerHour = t.Name, n, c
		}
	}
	if best.Type == "" {
		return Procurement{}, ErrNoInstanceType
	}
	best.Reason = fmt.Sprintf("A_n = %.3g - %.3g = %.3g: %d x %s at $%.4g/h is the cheapest", predicted, cr, an, best.Count, best.Type, best.CostPerHour)
	return best, nil
}

// LeastFreeSlot is Cocktail's bin-packing load balancer (§4.2.1): given each instance's free
// slots (P_f minus requests in flight), it returns the index of the instance with the fewest
// free slots that still has one, so that lightly loaded instances drain and can be recycled by
// the idle timeout; ties go to the lowest index. It returns -1 when no instance has a free slot.
// internal/dispatch adapts it to its pick interface.
func LeastFreeSlot(free []int) int {
	best := -1
	for i, f := range free {
		if f > 0 && (best < 0 || f < free[best]) {
			best = i
		}
	}
	return best
}
