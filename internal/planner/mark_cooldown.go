package planner

import (
	"fmt"
	"time"
)

// Mark is the MArk proactive controller's decision state: it runs Schedule every planning step
// and turns the surplus into terminations only after the cool-down (§4.3: "the launching
// requests should be sent right away …; the destroying requests … after a predefined cool-down
// period"). It is pure (given now) and owned by one goroutine.
type Mark struct {
	cfg          MarkConfig
	surplusSince map[string]time.Time
}

// NewMark returns a Mark planner.
func NewMark(c MarkConfig) (*Mark, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &Mark{cfg: c, surplusSince: map[string]time.Time{}}, nil
}

// Config returns the planner's configuration.
func (m *Mark) Config() MarkConfig { return m.cfg }

// Step plans with Schedule and fills Plan.Terminate with the surplus instances that have been
// surplus continuously for at least the cool-down. An instance that rejoins the plan restarts
// its cool-down. While the cool-down of a surplus instance runs, the plan still counts on new
// launches only for what the kept instances cannot cover, so a surplus instance may serve
// traffic until it is terminated.
//
// Make before break: when the plan swaps types (ten c5.large for a p2.xlarge), the
// replacement's launch delay (p2.xlarge: 60–360 s) can outlast a 2 min cool-down, and
// terminating first left the fleet short for minutes (MArk §4.3: the cool-down is there "to
// ensure better service quality"). So ready surplus instances whose cool-down is over are held,
// one by one, while the ready capacity — kept instances plus surplus ones still serving — is
// below the plan's target; the rest go. Surplus instances not ready, or of a type the planner
// does not know (standbys), are not held.
func (m *Mark) Step(types []InstanceType, running []Running, f Forecast, now time.Time) (Plan, error) {
	p, err := Schedule(types, running, f, m.cfg, now)
	if err != nil {
		return Plan{}, err
	}
	live := make(map[string]bool, len(running))
	for _, r := range running {
		live[r.ID] = true
	}
	for id := range m.surplusSince {
		if !live[id] {
			delete(m.surplusSince, id)
		}
	}
	for _, id := range p.Keep {
		delete(m.surplusSince, id)
	}
	// Make before break: expired surplus instances that are ready go only as far as the ready
	// capacity left — kept instances and surplus still serving — covers the target.
	capOf := make(map[string]float64, len(types))
	for _, t := range types {
		capOf[t.Name] = t.Capacity
	}
	byID := make(map[string]Running, len(running))
	for _, r := range running {
		byID[r.ID] = r
	}
	var ready float64
	for _, id := range p.Keep {
		if r := byID[id]; r.Ready {
			ready += capOf[r.Type]
		}
	}
	var expired []string
	for _, id := range p.Surplus {
		since, ok := m.surplusSince[id]
		if !ok {
			m.surplusSince[id] = now
			since = now
		}
		switch r := byID[id]; {
		case now.Sub(since) >= m.cfg.CoolDown:
			expired = append(expired, id)
		case r.Ready:
			ready += capOf[r.Type]
		}
	}
	var held []string
	for _, id := range expired {
		// Short by more than rounding: the single-type cover's ⌈gap/C_i − 1e-9⌉ > 0.
		if r := byID[id]; r.Ready && capOf[r.Type] > 0 && (p.Target-ready)/capOf[r.Type] > 1e-9 {
			ready += capOf[r.Type]
			held = append(held, id)
			continue
		}
		p.Terminate = append(p.Terminate, id)
		delete(m.surplusSince, id)
	}
	if len(held) > 0 {
		p.Reasons = append(p.Reasons, fmt.Sprintf("hold %d surplus past the cool-down: ready capacity %.1f < target %.1f until launches are ready", len(held), ready, p.Target))
	}
	return p, nil
}
