package forecast

import (
	"fmt"
	"time"
)

// Named defaults of the arrival monitor (MArk §4.2: "[P_u, P_w, P_s] is set to [1 min, 60, 5 sec]").
const (
	// DefaultSampleInterval is P_s, the short window in which the arrival rate is treated as stable.
	DefaultSampleInterval = 5 * time.Second
	// DefaultUnit is P_u, the prediction unit; EC2 bills at least one minute.
	DefaultUnit = time.Minute
	// DefaultWindow is P_w, the number of units predicted ahead (one hour).
	DefaultWindow = 60
	// DefaultMaxHistory is how many completed units the monitor retains (one week of minutes).
	DefaultMaxHistory = 7 * 24 * 60
)

// MonitorConfig configures a Monitor.
type MonitorConfig struct {
	// SampleInterval is P_s: arrivals are counted per sample and turned into a rate (requests/s).
	SampleInterval time.Duration
	// Unit is P_u: the monitor keeps the maximum sample rate of each unit. Must be a multiple of
	// SampleInterval.
	Unit time.Duration
	// Window is P_w, in units: how many units ahead forecasters are asked for.
	Window int
	// MaxHistory is the number of completed units retained, oldest dropped first.
	MaxHistory int
}

// DefaultMonitorConfig returns MArk's settings: 5 s samples, 1 min units, 60 units ahead.
func DefaultMonitorConfig() MonitorConfig {
	return MonitorConfig{
		SampleInterval: DefaultSampleInterval,
		Unit:           DefaultUnit,
		Window:         DefaultWindow,
		MaxHistory:     DefaultMaxHistory,
	}
}

// Validate reports the first field that is out of range.
func (c MonitorConfig) Validate() error {
	switch {
	case c.SampleInterval <= 0:
		return fmt.Errorf("monitor.sample_interval: must be > 0, got %v", c.SampleInterval)
	case c.Unit < c.SampleInterval || c.Unit%c.SampleInterval != 0:
		return fmt.Errorf("monitor.unit: must be a positive multiple of sample_interval %v, got %v", c.SampleInterval, c.Unit)
	case c.Window <= 0:
		return fmt.Errorf("monitor.window: must be > 0, got %d", c.Window)
	case c.MaxHistory < c.Window:
		return fmt.Errorf("monitor.max_history: must be >= window %d, got %d", c.Window, c.MaxHistory)
	}
	return nil
}

// Monitor is MArk's arrival monitor (§4.2): it counts arrivals in consecutive samples of P_s,
// converts each sample to a rate, keeps the maximum rate of every unit P_u, and retains the series
// of completed unit maxima for the forecasters. It is pure: the caller passes now (the live
// controller its clock, the simulator its virtual clock). Not safe for concurrent use.
type Monitor struct {
	cfg         MonitorConfig
	started     bool
	sampleStart time.Time
	sampleCount float64
	unitStart   time.Time
	unitMax     float64
	history     []float64
	onUnit      func(float64)
}

// NewMonitor returns a Monitor; onUnit, if not nil, is called with each completed unit maximum
// (e.g. to feed a Forecaster) from inside Observe.
func NewMonitor(cfg MonitorConfig, onUnit func(maxRate float64)) (*Monitor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Monitor{cfg: cfg, onUnit: onUnit}, nil
}

// Config returns the monitor's configuration.
func (m *Monitor) Config() MonitorConfig { return m.cfg }

// Observe records count arrivals at now and closes every sample and unit that ended at or before
// now. Arrivals stamped before the current sample (clock skew) are counted in the current sample.
// Observe(0, now) just advances time.
func (m *Monitor) Observe(count int, now time.Time) {
	if !m.started {
		m.started = true
		m.unitStart = now.Truncate(m.cfg.Unit)
		m.sampleStart = now.Truncate(m.cfg.SampleInterval)
		if m.sampleStart.Before(m.unitStart) {
			m.sampleStart = m.unitStart
		}
	}
	m.advance(now)
	if count > 0 {
		m.sampleCount += float64(count)
	}
}

// advance closes samples and units that ended at or before now.
func (m *Monitor) advance(now time.Time) {
	ps, pu := m.cfg.SampleInterval, m.cfg.Unit
	// Fast-forward over long silences: whole empty units beyond the retained history are zeros.
	if gap := now.Sub(m.unitStart); gap > time.Duration(m.cfg.MaxHistory+2)*pu {
		m.closeSample()
		m.closeUnit()
		skip := int(gap/pu) - m.cfg.MaxHistory - 1
		m.unitStart = m.unitStart.Add(time.Duration(skip) * pu)
		m.sampleStart = m.unitStart
	}
	for !now.Before(m.sampleStart.Add(ps)) {
		m.closeSample()
		m.sampleStart = m.sampleStart.Add(ps)
		if !m.sampleStart.Before(m.unitStart.Add(pu)) {
			m.closeUnit()
			m.unitStart = m.unitStart.Add(pu)
		}
	}
}

func (m *Monitor) closeSample() {
	rate := m.sampleCount / m.cfg.SampleInterval.Seconds()
	if rate > m.unitMax {
		m.unitMax = rate
	}
	m.sampleCount = 0
}

func (m *Monitor) closeUnit() {
	v := m.unitMax
	m.unitMax = 0
	m.history = append(m.history, v)
	if over := len(m.history) - m.cfg.MaxHistory; over > 0 {
		m.history = append(m.history[:0], m.history[over:]...)
	}
	if m.onUnit != nil {
		m.onUnit(v)
	}
}

// History returns a copy of the completed unit maxima (requests/s), oldest first.
func (m *Monitor) History() []float64 { return append([]float64(nil), m.history...) }

// Last returns the last completed unit's maximum (requests/s; 0 before the first unit).
func (m *Monitor) Last() float64 {
	if len(m.history) == 0 {
		return 0
	}
	return m.history[len(m.history)-1]
}

// Len returns the number of completed units retained.
func (m *Monitor) Len() int { return len(m.history) }

// Current returns the maximum sample rate seen so far in the unit in progress (requests/s).
func (m *Monitor) Current() float64 {
	cur := m.sampleCount / m.cfg.SampleInterval.Seconds()
	if cur > m.unitMax {
		return cur
	}
	return m.unitMax
}

// UnitStart returns the start of the unit in progress (zero before the first Observe).
func (m *Monitor) UnitStart() time.Time { return m.unitStart }
