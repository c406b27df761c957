package ensemble

import (
	"math"
	"math/rand/v2"
)

// Oracle draws inputs and every model's answer to them from a per-class correctness table: the
// answer model of Simulate, exported so that other simulators (internal/sim's ensemble serving
// loop) present the same kind of inputs. Each input's class is uniform over the table's classes;
// model m answers class c correctly with probability Rate[m][c], its correctness correlated
// across models through a Gaussian copula with ρ = SimConfig.Correlation; a wrong answer is one
// of the class's look-alike classes, shared between models with probability
// SimConfig.SharedConfusion. An Oracle is deterministic for its seed and belongs to one goroutine.
type Oracle struct {
	t      *ClassTable
	conf   [][]int
	rng    *rand.Rand
	sr, sn float64
	k      int
	shared float64
	label  float64
}

// NewOracle returns an oracle over t with cfg's seed, correlation, confusers, shared confusion
// and label fraction (cfg.Requests and cfg.Rate are not used).
func NewOracle(t *ClassTable, cfg SimConfig) (*Oracle, error) {
	c := cfg
	c.Requests, c.Rate = max(c.Requests, 1), 1
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &Oracle{
		t:      t,
		conf:   confusers(len(t.Classes), cfg.Confusers, cfg.Seed),
		rng:    rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15)),
		sr:     math.Sqrt(cfg.Correlation),
		sn:     math.Sqrt(1 - cfg.Correlation),
		k:      cfg.Confusers,
		shared: cfg.SharedConfusion,
		label:  cfg.LabelFraction,
	}, nil
}

// Draw fills answer (len ≥ the table's model count, indexed like t.Models) with every model's
// answer to a fresh input and returns the input's true class and whether its label comes back
// as feedback. Every model's answer is drawn, used or not, so that strategies run with the same
// seed see the same inputs (common random numbers).
func (o *Oracle) Draw(answer []int) (label int, feedback bool) {
	nm, nc := len(o.t.Models), len(o.t.Classes)
	class := o.rng.IntN(nc)
	z0 := o.rng.NormFloat64()
	shared := geometric(o.rng.Float64(), o.k)
	for m := range nm {
		z := o.sr*z0 + o.sn*o.rng.NormFloat64()
		u := 0.5 * math.Erfc(-z/math.Sqrt2) // Φ(z)
		own := geometric(o.rng.Float64(), o.k)
		if o.rng.Float64() < o.shared {
			own = shared
		}
		if u < o.t.Rate[m][class] {
			answer[m] = class
		} else {
			answer[m] = o.conf[class][own]
		}
	}
	return class, o.rng.Float64() < o.label
}
