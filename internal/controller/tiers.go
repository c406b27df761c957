package controller

import (
	"sync"
	"time"

	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/policy"
)

// The function tier live: a policy with a serverless tier (sloserve) decides on two goroutines
// at once — the controller's (Scale: the VM fleet and the tier choice) and the gateway's request
// goroutines (Route: MArk's Bouncer on the admission verdict). Its parts share state (the chosen
// tier, MArk's monitor), so both go through one lock: the policy stays the pure, single-owner
// object the simulator drives, and the lock serialises its callers as the simulator's one
// goroutine does.

// lockedPolicy serialises a model policy's Scale, Route and Forecast.
type lockedPolicy struct {
	mu     sync.Mutex
	scaler autoscale.Scaler
	router policy.Router
}

// Scale implements autoscale.Scaler.
func (l *lockedPolicy) Scale(s autoscale.Snapshot, now time.Time) autoscale.Decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.scaler.Scale(s, now)
}

// Route is the policy's Router under the lock.
func (l *lockedPolicy) Route(r policy.Request, v policy.TierView, now time.Time) policy.Route {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.router.Route(r, v, now)
}

// Forecast is the scaler's forecast under the lock (nil when it does not forecast).
func (l *lockedPolicy) Forecast() []float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f, ok := l.scaler.(forecaster); ok {
		return f.Forecast()
	}
	return nil
}

// Unit is the scaler's forecast unit (0 when it does not forecast).
func (l *lockedPolicy) Unit() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f, ok := l.scaler.(forecaster); ok {
		return f.Unit()
	}
	return 0
}

// withTiers fills out's serverless tier and router from the policy pm when it has a serverless
// tier, putting its scaler behind the lock the router shares.
func withTiers(out *Model, pm policy.Model) {
	if pm.Serverless == nil || pm.Router == nil || pm.Scaler == nil {
		return
	}
	l := &lockedPolicy{scaler: pm.Scaler, router: pm.Router}
	out.Scaler = l
	out.Route = l.Route
	out.Serverless = pm.Serverless
}
