package slomon

import (
	"fmt"
	"time"
)

// Named defaults (MArk §4.4 and mark-constants.json, "slo").
const (
	// DefaultWindow is M, the number of most recent requests judged. The original tracks an
	// EWMA of the failure rate with weight 0.999 per request, whose memory is ~1000 requests.
	DefaultWindow = 1000
	// DefaultTarget is SL_min: 98 % of requests within RT_max (MArk §5.1; SLA_BOUND 0.02).
	DefaultTarget = 0.98
	// DefaultLaunch is L, the number of instances launched on a violation (launch_standby(…, 1)).
	DefaultLaunch = 1
	// DefaultType is T. The paper says "c5.large by default" (§4.4); the original code launches
	// c5.xlarge. We follow the paper; configs may choose either.
	DefaultType = "c5.large"
	// DefaultCoolDown is how long after a reactive launch no further one is made: five one-minute
	// ticks (cool_down_ticks_after_launch × tick_s), about one launch delay.
	DefaultCoolDown = 5 * time.Minute
)

// Config configures a Monitor.
type Config struct {
	// Window is M, in requests.
	Window int `yaml:"window"`
	// Target is SL_min, the fraction of the window that must meet the threshold, in (0, 1].
	Target float64 `yaml:"target"`
	// Launch is L, the number of instances launched per violation.
	Launch int `yaml:"launch"`
	// Type is T, the catalog name of the instance type launched.
	Type string `yaml:"type"`
	// CoolDown is the quiet period after a launch.
	CoolDown time.Duration `yaml:"cool_down"`
}

// DefaultConfig returns M = 1000, SL_min = 0.98, L = 1, T = c5.large, cool-down 5 min.
func DefaultConfig() Config {
	return Config{Window: DefaultWindow, Target: DefaultTarget, Launch: DefaultLaunch, Type: DefaultType, CoolDown: DefaultCoolDown}
}

// Validate reports the first field that is out of range.
func (c Config) Validate() error {
	switch {
	case c.Window <= 0:
		return fmt.Errorf("slo_monitor.window: must be > 0, got %d", c.Window)
	case !(c.Target > 0 && c.Target <= 1):
		return fmt.Errorf("slo_monitor.target: must be in (0, 1], got %v", c.Target)
	case c.Launch <= 0:
		return fmt.Errorf("slo_monitor.launch: must be > 0, got %d", c.Launch)
	case c.Type == "":
		return fmt.Errorf("slo_monitor.type: must name an instance type")
	case c.CoolDown < 0:
		return fmt.Errorf("slo_monitor.cool_down: must be >= 0, got %v", c.CoolDown)
	}
	return nil
}

// Decision is the monitor's answer at one instant.
type Decision struct {
	// Launch is how many instances of Type to launch now (0 = none).
	Launch int
	Type   string
	// Attainment is the fraction of the judged window that met the threshold (1 when empty).
	Attainment float64
	// Next is when the cool-down ends (zero when none runs).
	Next time.Time
	// Reason is a constant string.
	Reason string
}

// The reasons a Decision carries.
const (
	ReasonWarmingUp = "fewer than M requests seen"
	ReasonMet       = "attainment meets SL_min"
	ReasonCoolDown  = "violation during cool-down"
	ReasonViolated  = "attainment below SL_min: reactive launch"
)

// Monitor keeps the outcomes of the last M requests in a ring and decides reactive launches.
// It is pure (given now) and owned by one goroutine.
type Monitor struct {
	cfg       Config
	ring      []bool // true = missed
	next, n   int
	misses    int
	coolUntil time.Time
}

// New returns a Monitor.
func New(c Config) (*Monitor, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &Monitor{cfg: c, ring: make([]bool, c.Window)}, nil
}

// Observe records one finished request: met reports whether it completed within RT_max (failed
// and rejected requests are misses).
func (m *Monitor) Observe(met bool) {
	if m.n == len(m.ring) && m.ring[m.next] {
		m.misses--
	}
	m.ring[m.next] = !met
	if !met {
		m.misses++
	}
	m.next = (m.next + 1) % len(m.ring)
	if m.n < len(m.ring) {
		m.n++
	}
}

// Reset forgets the judged requests without touching the cool-down: the next decision waits
// for M new requests. The MArk scaler calls it when a reactive launch is ready, so that the
// SLO is judged on requests served with it.
func (m *Monitor) Reset() {
	clear(m.ring)
	m.next, m.n, m.misses = 0, 0, 0
}

// Attainment returns the fraction of the judged requests that met the threshold (1 when none).
func (m *Monitor) Attainment() float64 {
	if m.n == 0 {
		return 1
	}
	return 1 - float64(m.misses)/float64(m.n)
}

// Decide checks the last M requests (§4.4: "MArk constantly checks if the last M requests satisfy
// the SLO requirements. If not, L instances of type T will be launched"). After a launch the
// window is cleared — as the original resets its failure rate — so the launch is judged on new
// requests only, and no launch follows until the cool-down has passed.
func (m *Monitor) Decide(now time.Time) Decision {
	d := Decision{Attainment: m.Attainment()}
	switch {
	case m.n < len(m.ring):
		d.Reason = ReasonWarmingUp
	case d.Attainment >= m.cfg.Target:
		d.Reason = ReasonMet
	case now.Before(m.coolUntil):
		d.Reason, d.Next = ReasonCoolDown, m.coolUntil
	default:
		d.Reason, d.Launch, d.Type = ReasonViolated, m.cfg.Launch, m.cfg.Type
		m.coolUntil = now.Add(m.cfg.CoolDown)
		d.Next = m.coolUntil
		m.Reset()
	}
	return d
}
