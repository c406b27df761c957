package policy

import (
	"fmt"
	"math"
)

// CheapestType returns the model's profiled instance type with the lowest price per request at
// batch 1 (price / capacity), the natural default type of a single-type policy.
func CheapestType(env Env) (string, error) {
	best, bestCost := "", math.Inf(1)
	for _, name := range env.Model.Types() {
		it, ok := env.Catalog.Type(name)
		if !ok {
			continue
		}
		b := env.Model.VM[name]
		t1 := b.Curve.ServiceTime(1)
		if t1 <= 0 || t1 > env.SLO.Threshold {
			continue
		}
		c := it.PricePerHour * t1.Seconds() / float64(max(b.Slots, 1))
		if c < bestCost {
			best, bestCost = name, c
		}
	}
	if best == "" {
		return "", fmt.Errorf("model %s has no instance type in the catalog that serves a request within the SLO", env.Model.Name)
	}
	return best, nil
}

// Capacity returns the requests per second one instance of typ sustains with batches of n.
func Capacity(env Env, typ string, n int) float64 {
	base := typ
	if i := len(typ) - len("/spot"); i > 0 && typ[i:] == "/spot" {
		base = typ[:i]
	}
	b := env.Model.VM[base]
	t := b.Curve.ServiceTime(max(n, 1))
	if t <= 0 {
		return 0
	}
	return float64(max(b.Slots, 1)) * float64(max(n, 1)) / t.Seconds()
}
