package forecast

import "fmt"

// Naive forecasts every future unit as the last observed value (the persistence baseline).
type Naive struct{ last float64 }

var _ Forecaster = (*Naive)(nil)

// NewNaive returns a Naive forecaster.
func NewNaive() *Naive { return &Naive{} }

// Name returns "naive".
func (*Naive) Name() string { return "naive" }

// Observe records the latest value.
func (n *Naive) Observe(v float64) { n.last = clean(v) }

// Forecast returns h copies of the last value.
func (n *Naive) Forecast(h int) []float64 { return flat(n.last, h) }

// DefaultEWMAAlpha is the smoothing factor of the EWMA baseline: weight 0.5 on the newest unit, a
// half-life of one unit, which tracks a per-minute peak series closely without copying its noise.
const DefaultEWMAAlpha = 0.5

// EWMA forecasts every future unit as the exponentially weighted moving average of the past
// (the baseline Cocktail Table 4 compares its LSTM against).
type EWMA struct {
	alpha float64
	level float64
	seen  bool
}

var _ Forecaster = (*EWMA)(nil)

// NewEWMA returns an EWMA forecaster with smoothing factor alpha in (0, 1].
func NewEWMA(alpha float64) (*EWMA, error) {
	if !(alpha > 0 && alpha <= 1) {
		return nil, fmt.Errorf("ewma.alpha: must be in (0, 1], got %v", alpha)
	}
	return &EWMA{alpha: alpha}, nil
}

// Name returns "ewma".
func (*EWMA) Name() string { return "ewma" }

// Observe updates the level: level ← α·v + (1−α)·level.
func (e *EWMA) Observe(v float64) {
	v = clean(v)
	if !e.seen {
		e.level, e.seen = v, true
		return
	}
	e.level = e.alpha*v + (1-e.alpha)*e.level
}

// Forecast returns h copies of the level.
func (e *EWMA) Forecast(h int) []float64 { return flat(e.level, h) }

func flat(v float64, h int) []float64 {
	if h <= 0 {
		return nil
	}
	out := make([]float64, h)
	for i := range out {
		out[i] = nonNeg(v)
	}
	return out
}
