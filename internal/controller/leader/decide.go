package leader

import "time"

// Timings are the election's durations, client-go's LeaderElectionConfig's:
// 0 < RetryPeriod < RenewDeadline < LeaseDuration.
type Timings struct {
	// LeaseDuration is how long a follower waits, on its own clock, after it observed the last
	// change of the Lease before it may take the Lease over.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps leading without a successful renewal (measured
	// from the start of its last successful one).
	RenewDeadline time.Duration
	// RetryPeriod is the interval between the leader's renewals and between failed attempts.
	RetryPeriod time.Duration
}

// View is what one replica knows when it decides: the Lease as last observed, when it observed
// that version first (its own clock), and its own term.
type View struct {
	// Exists is false when the Lease was not found (deleted or never created).
	Exists bool
	// Holder is the record's holderIdentity; "" means released (the last holder stepped down and
	// said so, as client-go's ReleaseOnCancel does).
	Holder string
	// ObservedAt is when this replica first saw the Lease's current version (resourceVersion):
	// the arrival of the watch event or of the read that showed it.
	ObservedAt time.Time
	// Leading is whether this replica's term is running.
	Leading bool
	// LastRenew is the start of this replica's last successful acquire or renewal (its term):
	// the write reached the API server after it, so every follower observed it after it too.
	LastRenew time.Time
	// LastTry is the start of this replica's last attempt to acquire or renew, failed or not.
	LastTry time.Time
}

// Action is what a replica does next.
type Action int

const (
	// Wait: nothing until Decision.At or a new observation of the Lease.
	Wait Action = iota
	// Acquire: write this replica as the holder (create the Lease if it does not exist),
	// conditional on the observed version.
	Acquire
	// Renew: write a new renewTime, conditional on this replica's last written version.
	Renew
	// StepDown: end the term now.
	StepDown
)

func (a Action) String() string {
	return [...]string{"wait", "acquire", "renew", "step down"}[a]
}

// Decision is an Action and, for Wait, the time to decide again.
type Decision struct {
	Action Action
	At     time.Time
}

// Decide is the election's rule, client-go's leaderelection (tryAcquireOrRenew, renew) with one
// change: a follower is driven by its observation of the Lease's last change, not by a jittered
// poll, so it acquires at exactly ObservedAt + LeaseDuration.
//
//   - A leader steps down once RenewDeadline has passed since the start of its last successful
//     renewal, or when the Lease shows another holder; otherwise it renews every RetryPeriod.
//   - A follower takes over a Lease held by another identity only once LeaseDuration has passed on
//     its own clock since it observed the record's last change (client-go's safety rule). A
//     released (holder ""), missing or own Lease it acquires at once: the write is conditional
//     on the observed version, so a concurrent renewal wins and restarts the wait.
//   - Failed attempts are retried every RetryPeriod.
//
// The two rules never give two overlapping terms when clocks run at the same rate: the holder's
// last successful renewal started at r and was observed at o ≥ r, so a follower acquires at
// o + LeaseDuration ≥ r + LeaseDuration > r + RenewDeadline, when the holder has stepped down.
func Decide(v View, self string, now time.Time, t Timings) Decision {
	retry := v.LastTry.Add(t.RetryPeriod)
	if v.Leading {
		end := v.LastRenew.Add(t.RenewDeadline)
		switch {
		case !now.Before(end), v.Exists && v.Holder != self:
			return Decision{Action: StepDown}
		case !now.Before(retry):
			return Decision{Action: Renew}
		}
		return Decision{Action: Wait, At: earliest(retry, end)}
	}
	at := retry
	if v.Exists && v.Holder != "" && v.Holder != self {
		at = latest(at, v.ObservedAt.Add(t.LeaseDuration))
	}
	if !now.Before(at) {
		return Decision{Action: Acquire}
	}
	return Decision{Action: Wait, At: at}
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
