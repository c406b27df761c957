package planner

import "time"

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
	for _, id := range p.Surplus {
		since, ok := m.surplusSince[id]
		if !ok {
			m.surplusSince[id] = now
			since = now
		}
		if now.Sub(since) >= m.cfg.CoolDown {
			p.Terminate = append(p.Terminate, id)
			delete(m.surplusSince, id)
		}
	}
	return p, nil
}
