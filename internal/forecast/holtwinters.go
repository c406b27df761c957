package forecast

import "fmt"

// HoltWintersConfig configures additive Holt-Winters with a damped trend.
type HoltWintersConfig struct {
	// Alpha is the level smoothing factor, in (0, 1].
	Alpha float64
	// Beta is the trend smoothing factor, in [0, 1].
	Beta float64
	// Gamma is the seasonal smoothing factor, in [0, 1].
	Gamma float64
	// Phi is the trend damping factor, in (0, 1]; 1 is Holt's undamped linear trend.
	Phi float64
	// Season is the period in units (1440 one-minute units = one day). Until two full seasons
	// have been observed the method runs without the seasonal term (damped Holt).
	Season int
}

// DefaultHoltWintersConfig returns the settings used by the "holt-winters" method. The level
// follows fast (α = 0.5, the same half-life as the EWMA baseline), the trend slowly (β = 0.02)
// and damped (φ = 0.9, so a 60-unit forecast extrapolates a trend for about 9 units rather than
// 60, which on bursty peaks is what keeps a linear trend from running away), and the daily
// profile adapts at γ = 0.2 per period.
func DefaultHoltWintersConfig() HoltWintersConfig {
	return HoltWintersConfig{Alpha: 0.5, Beta: 0.02, Gamma: 0.2, Phi: 0.9, Season: 24 * 60}
}

// Validate reports the first field that is out of range.
func (c HoltWintersConfig) Validate() error {
	switch {
	case !(c.Alpha > 0 && c.Alpha <= 1):
		return fmt.Errorf("holt_winters.alpha: must be in (0, 1], got %v", c.Alpha)
	case !(c.Beta >= 0 && c.Beta <= 1):
		return fmt.Errorf("holt_winters.beta: must be in [0, 1], got %v", c.Beta)
	case !(c.Gamma >= 0 && c.Gamma <= 1):
		return fmt.Errorf("holt_winters.gamma: must be in [0, 1], got %v", c.Gamma)
	case !(c.Phi > 0 && c.Phi <= 1):
		return fmt.Errorf("holt_winters.phi: must be in (0, 1], got %v", c.Phi)
	case c.Season < 2:
		return fmt.Errorf("holt_winters.season: must be >= 2, got %d", c.Season)
	}
	return nil
}

// HoltWinters is additive Holt-Winters exponential smoothing with a damped trend:
//
//	L_t = α(x_t − s_{t−m}) + (1−α)(L_{t−1} + φT_{t−1})
//	T_t = β(L_t − L_{t−1}) + (1−β)φT_{t−1}
//	s_t = γ(x_t − L_t) + (1−γ)s_{t−m}
//	x̂_{t+h} = L_t + (φ + … + φ^h)T_t + s_{t−m+1+((h−1) mod m)}
//
// The seasonal state is initialised from the first two seasons (level = mean of season 1, trend
// = difference of the two seasons' means / m, seasonal indices = mean deviation), then those 2m
// values are replayed through the recursions.
type HoltWinters struct {
	cfg          HoltWintersConfig
	n            int
	level, trend float64
	season       []float64 // indexed by time mod m once seasonal
	seasonal     bool
	warm         []float64 // first 2m values, until the seasonal state is initialised
}

var _ Forecaster = (*HoltWinters)(nil)

// NewHoltWinters returns a HoltWinters forecaster.
func NewHoltWinters(c HoltWintersConfig) (*HoltWinters, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &HoltWinters{cfg: c}, nil
}

// Name returns "holt-winters".
func (*HoltWinters) Name() string { return "holt-winters" }

// Observe feeds the next value through the recursions.
func (hw *HoltWinters) Observe(v float64) {
	v = clean(v)
	m := hw.cfg.Season
	if !hw.seasonal {
		hw.warm = append(hw.warm, v)
		hw.step(v, 0)
		if len(hw.warm) == 2*m {
			hw.initSeasonal()
		}
		return
	}
	idx := hw.n % m
	hw.season[idx] = hw.cfg.Gamma*(v-hw.stepLevel(v, hw.season[idx])) + (1-hw.cfg.Gamma)*hw.season[idx]
	hw.n++
}

// step runs the non-seasonal (damped Holt) recursion during warm-up.
func (hw *HoltWinters) step(v, s float64) {
	if hw.n == 0 {
		hw.level, hw.trend, hw.n = v, 0, 1
		return
	}
	hw.stepLevel(v, s)
	hw.n++
}

// stepLevel updates level and trend for observation v with seasonal index s and returns the new level.
func (hw *HoltWinters) stepLevel(v, s float64) float64 {
	c := hw.cfg
	prev := hw.level
	hw.level = c.Alpha*(v-s) + (1-c.Alpha)*(prev+c.Phi*hw.trend)
	hw.trend = c.Beta*(hw.level-prev) + (1-c.Beta)*c.Phi*hw.trend
	return hw.level
}

func (hw *HoltWinters) initSeasonal() {
	m := hw.cfg.Season
	var m1, m2 float64
	for i := range m {
		m1 += hw.warm[i]
		m2 += hw.warm[m+i]
	}
	m1 /= float64(m)
	m2 /= float64(m)
	hw.season = make([]float64, m)
	for i := range m {
		hw.season[i] = ((hw.warm[i] - m1) + (hw.warm[m+i] - m2)) / 2
	}
	hw.level, hw.trend = m1, (m2-m1)/float64(m)
	hw.seasonal, hw.n = true, 0
	warm := hw.warm
	hw.warm = nil
	for _, v := range warm {
		hw.Observe(v)
	}
}

// Forecast returns the next h values.
func (hw *HoltWinters) Forecast(h int) []float64 {
	if h <= 0 {
		return nil
	}
	out := make([]float64, h)
	damp, phiK := 0.0, 1.0
	for k := 1; k <= h; k++ {
		phiK *= hw.cfg.Phi
		damp += phiK
		v := hw.level + damp*hw.trend
		if hw.seasonal {
			v += hw.season[(hw.n+k-1)%hw.cfg.Season]
		}
		out[k-1] = nonNeg(v)
	}
	return out
}
