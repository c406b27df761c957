package forecast

import (
	"fmt"
	"math/cmplx"

	"gonum.org/v1/gonum/mat"
)

// ARConfig configures the autoregressive forecaster.
type ARConfig struct {
	// Order is p, the number of lagged units in the model.
	Order int
	// Window is how many of the most recent units the least-squares fit uses.
	Window int
	// RefitEvery is how many new observations trigger a refit (the fit is lazy: at Forecast).
	RefitEvery int
	// Ridge is the Tikhonov regulariser, relative to the mean diagonal of XᵀX; it keeps the
	// normal equations solvable on constant or very short series.
	Ridge float64
	// Differenced fits the model to first differences and integrates the forecast (ARIMA(p,1,0)
	// without drift) instead of to levels around the window mean.
	Differenced bool
}

// DefaultARConfig returns AR(12) on the last 1440 units (a day of minutes), refitted every 10
// units. Twelve lags cover the last quarter hour of one-minute peaks, where nearly all of the
// partial autocorrelation of request-rate series sits; a day-long window keeps the fit local.
func DefaultARConfig() ARConfig {
	return ARConfig{Order: 12, Window: 1440, RefitEvery: 10, Ridge: 1e-6}
}

// Validate reports the first field that is out of range.
func (c ARConfig) Validate() error {
	switch {
	case c.Order <= 0:
		return fmt.Errorf("ar.order: must be > 0, got %d", c.Order)
	case c.Window < 2*c.Order+2:
		return fmt.Errorf("ar.window: must be >= 2*order+2 = %d, got %d", 2*c.Order+2, c.Window)
	case c.RefitEvery <= 0:
		return fmt.Errorf("ar.refit_every: must be > 0, got %d", c.RefitEvery)
	case !(c.Ridge >= 0):
		return fmt.Errorf("ar.ridge: must be >= 0, got %v", c.Ridge)
	}
	return nil
}

// AR is an AR(p) model x_t − μ = Σ_k a_k (x_{t−k} − μ) + ε_t fitted by (ridge-regularised) least
// squares on the recent window with gonum; multi-step forecasts iterate the recursion.
type AR struct {
	cfg      ARConfig
	hist     []float64
	coef     []float64 // a_1..a_p
	mean     float64
	fitted   bool
	sinceFit int
}

var _ Forecaster = (*AR)(nil)

// NewAR returns an AR forecaster.
func NewAR(c ARConfig) (*AR, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &AR{cfg: c}, nil
}

// Name returns "ar".
func (*AR) Name() string { return "ar" }

// Observe appends a value; the model is refitted lazily.
func (a *AR) Observe(v float64) {
	a.hist = appendBounded(a.hist, clean(v), a.cfg.Window)
	a.sinceFit++
}

// Coefficients returns a copy of the fitted a_1..a_p and the mean μ (nil before the first fit).
func (a *AR) Coefficients() ([]float64, float64) {
	a.refit()
	return append([]float64(nil), a.coef...), a.mean
}

func (a *AR) refit() {
	if a.fitted && a.sinceFit < a.cfg.RefitEvery {
		return
	}
	p := a.cfg.Order
	x := a.series()
	if len(x) < 2*p+2 {
		return
	}
	var mu float64
	for _, v := range x {
		mu += v
	}
	mu /= float64(len(x))
	rows := len(x) - p
	X := mat.NewDense(rows, p, nil)
	y := mat.NewVecDense(rows, nil)
	for r := range rows {
		t := r + p
		y.SetVec(r, x[t]-mu)
		for k := 1; k <= p; k++ {
			X.Set(r, k-1, x[t-k]-mu)
		}
	}
	var xtx mat.SymDense
	xtx.SymOuterK(1, X.T())
	var tr float64
	for i := range p {
		tr += xtx.At(i, i)
	}
	lam := a.cfg.Ridge*tr/float64(p) + 1e-12
	for i := range p {
		xtx.SetSym(i, i, xtx.At(i, i)+lam)
	}
	var xty mat.VecDense
	xty.MulVec(X.T(), y)
	var chol mat.Cholesky
	if !chol.Factorize(&xtx) {
		return
	}
	var sol mat.VecDense
	if err := chol.SolveVecTo(&sol, &xty); err != nil {
		return
	}
	a.coef = make([]float64, p)
	for i := range p {
		a.coef[i] = sol.AtVec(i)
	}
	stabilise(a.coef)
	a.mean, a.fitted, a.sinceFit = mu, true, 0
}

// maxARRadius is the largest modulus allowed for a root of the fitted AR polynomial.
const maxARRadius = 0.99

// stabilise shrinks the roots of x_t = Σ a_k x_{t−k} into the disc of radius maxARRadius when
// least squares returned an explosive or unit-root fit (it can on short, trending windows, and
// an explosive recursion iterated 60 steps ruins the forecast): with r the spectral radius of the
// companion matrix, a_k ← a_k·(maxARRadius/r)^k scales every root by maxARRadius/r.
func stabilise(coef []float64) {
	p := len(coef)
	comp := mat.NewDense(p, p, nil)
	for j, c := range coef {
		comp.Set(0, j, c)
	}
	for i := 1; i < p; i++ {
		comp.Set(i, i-1, 1)
	}
	var eig mat.Eigen
	if !eig.Factorize(comp, mat.EigenNone) {
		return
	}
	var r float64
	for _, v := range eig.Values(nil) {
		r = max(r, cmplx.Abs(v))
	}
	if r <= maxARRadius {
		return
	}
	f, s := maxARRadius/r, 1.0
	for k := range coef {
		s *= f
		coef[k] *= s
	}
}

// series returns the fitted series: the window, or its first differences.
func (a *AR) series() []float64 {
	x := tail(a.hist, a.cfg.Window)
	if !a.cfg.Differenced || len(x) < 2 {
		return x
	}
	d := make([]float64, len(x)-1)
	for i := range d {
		d[i] = x[i+1] - x[i]
	}
	return d
}

// Forecast returns the next h values by iterating the fitted recursion; before a fit is possible
// (fewer than 2p+2 values) it repeats the last value.
func (a *AR) Forecast(h int) []float64 {
	if h <= 0 {
		return nil
	}
	a.refit()
	if !a.fitted {
		last := 0.0
		if len(a.hist) > 0 {
			last = a.hist[len(a.hist)-1]
		}
		return flat(last, h)
	}
	p := a.cfg.Order
	buf := make([]float64, 0, p+h)
	buf = append(buf, tail(a.series(), p)...)
	out := make([]float64, h)
	level := a.hist[len(a.hist)-1]
	for k := range h {
		n := len(buf)
		v := a.mean
		for j := 1; j <= p; j++ {
			v += a.coef[j-1] * (buf[n-j] - a.mean)
		}
		buf = append(buf, v)
		if a.cfg.Differenced {
			level += v
			out[k] = nonNeg(level)
		} else {
			out[k] = nonNeg(v)
		}
	}
	return out
}
