package admission

import (
	"fmt"
	"time"
)

// View is the state of the instance (or pool of identical instances) a request would join, as
// the runtime that owns the queue sees it when the request arrives.
type View struct {
	// Queued is the number of requests waiting ahead of the new one.
	Queued int
	// Slots is how many batches the instances serve concurrently; FreeSlots how many are idle.
	Slots, FreeSlots int
	// MaxBatch is N_batch, the largest batch (≤ 0 counts as 1).
	MaxBatch int
	// MaxWait is W_batch, the longest a partial batch waits for more requests.
	MaxWait time.Duration
	// BatchTime is T_N, the service time of a full batch (an upper bound for smaller ones).
	BatchTime time.Duration
}

// Config configures the Bouncer.
type Config struct {
	// Margin is subtracted from every deadline, covering transfer and scheduling noise not in
	// the profile (≥ 0).
	Margin time.Duration
}

// DefaultConfig returns a zero margin: MArk admits exactly when the estimate meets RT_max.
func DefaultConfig() Config { return Config{} }

// Validate reports the first field that is out of range.
func (c Config) Validate() error {
	if c.Margin < 0 {
		return fmt.Errorf("admission.margin: must be >= 0, got %v", c.Margin)
	}
	return nil
}

// Decision is the Bouncer's answer for one request.
type Decision struct {
	// Admit is true when the fleet is expected to finish the request by its deadline; false
	// means route it to the serverless tier now.
	Admit bool
	// Finish is the estimated completion time on the fleet (zero when no slot exists).
	Finish time.Time
	// Reason is a constant string for metrics.
	Reason string
}

// The reasons a Decision carries.
const (
	ReasonFits       = "fits before deadline"
	ReasonTooLate    = "would finish after deadline"
	ReasonNoCapacity = "no ready instance"
)

// Bouncer is MArk's admission control (§4.1): "whenever there is an incoming request, Bouncer
// checks whether its own host instance can finish the inference within the specified time
// RT_max. If not, the Bouncer rejects the request and reroutes it to be handled by Lambda
// instances immediately." It is a value: pure, allocation-free, safe for concurrent use.
type Bouncer struct{ cfg Config }

// NewBouncer returns a Bouncer.
func NewBouncer(c Config) (Bouncer, error) {
	if err := c.Validate(); err != nil {
		return Bouncer{}, err
	}
	return Bouncer{cfg: c}, nil
}

// Decide estimates when the request would finish and admits it if that is not after
// deadline − Margin. The estimate (the paper gives none) follows the batch queue: the request is
// at position Queued, so it rides in batch k = ⌊Queued/N⌋; the first FreeSlots batches start now,
// later ones one full-batch time per round of Slots; a batch that is not full may wait W_batch
// for more requests; the batch then takes at most T_N:
//
//	start  = now + ⌈(k − FreeSlots + 1) / Slots⌉⁺ · T_N
//	finish = max(start, now + W if the batch is not full) + T_N
//
// It over-estimates slightly (busy slots may free sooner than T_N), which errs towards the
// serverless tier, the side that keeps the SLO.
func (b Bouncer) Decide(v View, deadline, now time.Time) Decision {
	if v.Slots <= 0 {
		return Decision{Reason: ReasonNoCapacity}
	}
	n := max(v.MaxBatch, 1)
	q := max(v.Queued, 0)
	free := min(max(v.FreeSlots, 0), v.Slots)
	k := q / n
	start := now
	if k >= free {
		rounds := (k-free)/v.Slots + 1
		start = now.Add(time.Duration(rounds) * v.BatchTime)
	}
	if full := q%n+1 == n; !full {
		if w := now.Add(v.MaxWait); w.After(start) {
			start = w
		}
	}
	finish := start.Add(v.BatchTime)
	if finish.After(deadline.Add(-b.cfg.Margin)) {
		return Decision{Finish: finish, Reason: ReasonTooLate}
	}
	return Decision{Admit: true, Finish: finish, Reason: ReasonFits}
}
