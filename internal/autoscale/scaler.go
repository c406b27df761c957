package autoscale

import (
	"time"

	"github.com/sloserve/sloserve/internal/cluster"
	"github.com/sloserve/sloserve/internal/provider"
)

// Member is one instance of the fleet as the runtime that owns it last saw it.
type Member struct {
	// ID is the provider's instance id.
	ID string
	// Type is the catalog name of the instance type (e.g. "c5.large").
	Type string
	// Tier is the tier the instance belongs to.
	Tier provider.Tier
	// State is the lifecycle state.
	State provider.State
	// Spot reports a spot (interruptible) instance.
	Spot bool
	// Launched is when the launch was requested; Ready is when it became ready (zero if not yet).
	Launched, Ready time.Time
	// Slots is how many batches the instance serves concurrently.
	Slots int
	// Busy is how many of its slots serve a batch now.
	Busy int
	// Spec is what the instance was launched with (its batch size, batch timeout, resources and
	// server, for policies that give every instance its own: INFless); the live controller fills
	// it, the simulator's shared-queue engine leaves it zero.
	Spec provider.Spec
}

// Sample is the load observed over one sampling period [Start, Start+Period).
type Sample struct {
	// Start is the beginning of the period; Period its length.
	Start  time.Time
	Period time.Duration
	// Arrivals counts requests that arrived in the period (all tiers).
	Arrivals int
	// Completed counts requests that completed in the period; Missed counts those of them that
	// missed the SLO threshold (failed and rejected requests count as missed).
	Completed, Missed int
	// Concurrency is the time-averaged number of requests in the system (queued or in service),
	// Knative's "observed concurrency".
	Concurrency float64
	// VMInFlight is the time-averaged number of busy VM slots.
	VMInFlight float64
	// Upstream is the time-averaged number of VM-tier batches in service or sent and waiting for
	// a slot (busy slots, plus ⌈queued requests / max batch⌉ while the batcher wants to dispatch
	// but no slot is free): the concurrency a backend autoscaler such as Knative's observes
	// behind a batching proxy (MLProxy §3) — requests the proxy holds on purpose are invisible to
	// it — and the number of requests in the VM tier when nothing batches.
	Upstream float64
	// LatencyMax is the largest latency completed in the period.
	LatencyMax time.Duration
}

// Snapshot is everything a Scaler may look at. The runtime fills it in; Scalers must not retain
// its slices after Scale returns.
type Snapshot struct {
	// Fleet lists the instances that are not terminated, in launch order.
	Fleet []Member
	// History holds the most recent sampling periods, oldest first; the last one is complete.
	History []Sample
	// QueueLen is the number of requests waiting in the VM tier's batch queue.
	QueueLen int
	// Cluster is a copy of the servers the provider places instances on, with every model's
	// allocations (INFless's cluster model); nil when the provider models no servers. A Scaler may
	// allocate on it (it is its own copy).
	Cluster *cluster.Cluster
}

// Decision is a Scaler's answer at one instant.
type Decision struct {
	// Launch lists the instances to launch now.
	Launch []provider.Spec
	// Terminate lists the ids of instances to terminate now (they drain their in-flight work).
	Terminate []string
	// Reason says why, for logs, metrics and tests; a constant string.
	Reason string
	// Next is when the runtime must ask again; the zero time means at the next sample boundary.
	Next time.Time
	// Weights are dispatch weights by instance id (INFless's α-band rates, requests/s) for the
	// instances that stay; nil leaves the dispatcher's weights as they are.
	Weights map[string]float64
}

// Scaler decides the size and mix of the VM fleet. Implementations are pure (ARCHITECTURE.md,
// keystone rule): they are given now, never read a clock, start no goroutine and do no I/O.
// A Scaler is owned by one goroutine (the controller loop or the simulator's event loop) and keeps
// whatever state it needs between calls (cool-down timers, alarm counters).
type Scaler interface {
	Scale(s Snapshot, now time.Time) Decision
}

// ScalerFunc adapts a function to the Scaler interface.
type ScalerFunc func(s Snapshot, now time.Time) Decision

// Scale calls f(s, now).
func (f ScalerFunc) Scale(s Snapshot, now time.Time) Decision { return f(s, now) }

// Counts returns how many members of the given type are launching or ready (draining,
// interrupted and terminated ones do not count); an empty typ counts every type.
func (s Snapshot) Counts(typ string) (launching, ready int) {
	for _, m := range s.Fleet {
		if typ != "" && m.Type != typ {
			continue
		}
		switch m.State {
		case provider.StateLaunching:
			launching++
		case provider.StateReady:
			ready++
		}
	}
	return launching, ready
}

// Recent sums the last n samples of History (fewer if History is shorter) and returns the total
// arrivals, the covered duration and the time-averaged concurrency over them.
func (s Snapshot) Recent(n int) (arrivals int, span time.Duration, concurrency float64) {
	h := s.History
	if n > len(h) {
		n = len(h)
	}
	var wsum float64
	for _, x := range h[len(h)-n:] {
		arrivals += x.Arrivals
		span += x.Period
		wsum += x.Concurrency * x.Period.Seconds()
	}
	if span > 0 {
		concurrency = wsum / span.Seconds()
	}
	return arrivals, span, concurrency
}

// StepAttrs returns the facts a Scaler was given at one step and what it decided, as slog
// key-value pairs (the live controller and `sloserve validate`'s simulator log the same ones,
// so that their steps compare line by line): the last sample's arrivals, completions, misses
// and concurrency, the queue, the fleet by state, and the decision.
func StepAttrs(s Snapshot, d Decision, launched, terminated int) []any {
	var last Sample
	if n := len(s.History); n > 0 {
		last = s.History[n-1]
	}
	launching, ready := s.Counts("")
	return []any{"arrivals", last.Arrivals, "completed", last.Completed, "missed", last.Missed,
		"concurrency", last.Concurrency, "queue", s.QueueLen, "launching", launching, "ready", ready,
		"launch", launched, "terminate", terminated, "reason", d.Reason}
}
