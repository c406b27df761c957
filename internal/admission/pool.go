package admission

import "time"

// PoolView is a heterogeneous fleet seen as one pool behind a shared queue (the simulator's and
// the gateway's VM tier): requests leave the queue at the fleet's aggregate rate.
type PoolView struct {
	// Queued is the number of requests waiting ahead of the new one.
	Queued int
	// FreeSlots is how many batch slots are idle now; Slots how many exist.
	Slots, FreeSlots int
	// DrainRate is the rate at which the fleet serves queued requests, in requests/s (the sum of
	// its ready instances' μ*).
	DrainRate float64
	// MaxWait is W_batch, the longest a partial batch waits for more requests.
	MaxWait time.Duration
	// ServiceTime is the longest time an instance of the pool takes for its own batch.
	ServiceTime time.Duration
}

// DecidePool is Decide for a pool: a request that finds a free slot (Queued < FreeSlots) starts
// after at most W_batch; otherwise it starts once the Queued − FreeSlots + 1 requests ahead of
// it have drained at DrainRate; it then takes ServiceTime:
//
//	start  = now + max(W, (Queued − FreeSlots + 1)⁺ / DrainRate)
//	finish = start + ServiceTime
func (b Bouncer) DecidePool(v PoolView, deadline, now time.Time) Decision {
	if v.Slots <= 0 || !(v.DrainRate > 0) {
		return Decision{Reason: ReasonNoCapacity}
	}
	wait := v.MaxWait
	if ahead := max(v.Queued, 0) - max(v.FreeSlots, 0) + 1; ahead > 0 {
		if d := time.Duration(float64(ahead) / v.DrainRate * float64(time.Second)); d > wait {
			wait = d
		}
	}
	finish := now.Add(wait + v.ServiceTime)
	if finish.After(deadline.Add(-b.cfg.Margin)) {
		return Decision{Finish: finish, Reason: ReasonTooLate}
	}
	return Decision{Admit: true, Finish: finish, Reason: ReasonFits}
}
