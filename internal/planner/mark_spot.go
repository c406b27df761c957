package planner

import (
	"fmt"
	"math"
	"time"
)

// Named defaults of MArk's spot handling (§4.5 and mark-constants.json).
const (
	// DefaultInterruptionNotice is how far ahead a spot interruption is announced (AWS: 2 min).
	DefaultInterruptionNotice = 2 * time.Minute
	// DefaultStandbyResume is how long a stopped burstable standby takes to serve again
	// (§4.5: "resumed from stopped state in less than 2 minutes").
	DefaultStandbyResume = 2 * time.Minute
	// DefaultPrewarmFactor scales the serverless concurrency pre-warmed for an expected spill.
	DefaultPrewarmFactor = 1.0
)

// SpotConfig configures the spot decisions.
type SpotConfig struct {
	// StandbyResume is the time a stopped burstable standby needs to serve again.
	StandbyResume time.Duration
	// PrewarmFactor multiplies the Little's-law concurrency pre-warmed on the serverless tier (≥ 0).
	PrewarmFactor float64
	// ServerlessLatency is the service time of one request on a function instance, used for
	// Little's law (concurrency = rate × latency).
	ServerlessLatency time.Duration
}

// DefaultSpotConfig returns a 2 min standby resume, factor 1 and a 400 ms function latency
// (Inception-v3 on Lambda, MArk Table 2: 380 ms).
func DefaultSpotConfig() SpotConfig {
	return SpotConfig{StandbyResume: DefaultStandbyResume, PrewarmFactor: DefaultPrewarmFactor, ServerlessLatency: 400 * time.Millisecond}
}

// Validate reports the first field that is out of range.
func (c SpotConfig) Validate() error {
	switch {
	case c.StandbyResume < 0:
		return fmt.Errorf("spot.standby_resume: must be >= 0, got %v", c.StandbyResume)
	case !(c.PrewarmFactor >= 0) || math.IsInf(c.PrewarmFactor, 1):
		return fmt.Errorf("spot.prewarm_factor: must be a finite value >= 0, got %v", c.PrewarmFactor)
	case c.ServerlessLatency <= 0:
		return fmt.Errorf("spot.serverless_latency: must be > 0, got %v", c.ServerlessLatency)
	}
	return nil
}

// Standby is a stopped burstable instance kept as a cold standby for spot interruptions.
type Standby struct {
	// ID is the provider's id of the stopped instance (or a slot name when standbys are launched
	// on demand); Type its catalog name.
	ID, Type string
	// Capacity is the rate it serves while bursting, in requests/s.
	Capacity float64
}

// SpotDecision is the answer to an interruption notice.
type SpotDecision struct {
	// Resume lists the standbys to resume now.
	Resume []string
	// LostCapacity is the capacity of the interrupted instances; ResumedCapacity that of the
	// resumed standbys, both in requests/s.
	LostCapacity, ResumedCapacity float64
	// Prewarm is the serverless concurrency to warm up now for the expected spill.
	Prewarm int
	// Replan asks the caller to run the planner at once (the interrupted instances leave the
	// fleet it plans with).
	Replan bool
	// Reasons explains the decision.
	Reasons []string
}

// OnInterruption is MArk's response to spot interruption notices (§4.5): "once MArk receives
// interruption notices, it resumes the corresponding amount of burstable instances to handle the
// transient requests until the regular spot instances are stopped", then "the proactive
// controller … adjusts the provisioning plan and requests new instances"; and "when a potential
// Lambda request surge is expected, such as spot interruptions …, MArk sends concurrent pings to
// Lambda to warm up more instances".
//
// It resumes standbys in the given order until their capacity covers the lost capacity, and
// pre-warms serverless concurrency for the whole lost rate: the standbys need StandbyResume to
// serve, and whatever they do not cover spills for longer still.
func OnInterruption(interrupted []Running, types []InstanceType, standbys []Standby, c SpotConfig) (SpotDecision, error) {
	if err := c.Validate(); err != nil {
		return SpotDecision{}, err
	}
	caps := make(map[string]float64, len(types))
	for _, t := range types {
		caps[t.Name] = t.Capacity
	}
	var d SpotDecision
	for _, r := range interrupted {
		d.LostCapacity += caps[r.Type]
	}
	if len(interrupted) == 0 {
		return d, nil
	}
	d.Replan = true
	for _, s := range standbys {
		if d.ResumedCapacity >= d.LostCapacity {
			break
		}
		if !(s.Capacity > 0) {
			continue
		}
		d.Resume = append(d.Resume, s.ID)
		d.ResumedCapacity += s.Capacity
	}
	d.Reasons = append(d.Reasons, fmt.Sprintf("%d interrupted (%.1f req/s lost): resume %d standbys (%.1f req/s)", len(interrupted), d.LostCapacity, len(d.Resume), d.ResumedCapacity))
	d.Prewarm = PrewarmFor(d.LostCapacity, c)
	if d.Prewarm > 0 {
		d.Reasons = append(d.Reasons, fmt.Sprintf("pre-warm %d function instances for the spill until standbys serve", d.Prewarm))
	}
	return d, nil
}

// PrewarmFor returns the serverless concurrency to warm for an expected spill of rate requests/s
// (Little's law: rate × function latency, times PrewarmFactor, rounded up).
func PrewarmFor(rate float64, c SpotConfig) int {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return 0
	}
	return int(math.Ceil(rate * c.ServerlessLatency.Seconds() * c.PrewarmFactor))
}

// ExpectedSpill returns the rate (requests/s) the fleet is expected not to serve: the forecast
// rate of the next step beyond the capacity that is ready now. Callers pre-warm PrewarmFor of
// it when it is positive (a surge the planner's launches cannot meet in time).
func ExpectedSpill(f Forecast, readyCapacity float64, now time.Time) float64 {
	if f.Step <= 0 || len(f.Rates) == 0 {
		return 0
	}
	i := int(now.Sub(f.Start) / f.Step)
	i = max(0, min(i, len(f.Rates)-1))
	return math.Max(0, f.Rates[i]-readyCapacity)
}
