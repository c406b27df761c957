package sloserve

import (
	"time"

	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/keepalive"
	"github.com/sloserve/sloserve/internal/provider"
)

// Reasons of Idle's own decisions; every other decision is the MArk scaler's, with its
// reason behind the "sloserve: " prefix (e.g. "sloserve: mark: plan (Alg. 1)").
const (
	// ReasonColdStart: requests arrived or wait for a model with no instance; one is launched at
	// once (the gateway holds the requests until it is ready or their deadline passes).
	ReasonColdStart = "sloserve: lsth: cold start, requests waiting"
	// ReasonKeepAlive: the model is idle but within LSTH's keep-alive windows; its last instance
	// stays although MArk's planner would release it.
	ReasonKeepAlive = "sloserve: lsth: idle, kept alive"
	// ReasonPreWarm: LSTH's pre-warm time has come for an idle model with no instance.
	ReasonPreWarm = "sloserve: lsth: pre-warm"
	// ReasonRelease: the model has been idle past LSTH's windows; its instances go (down to the
	// controller's min_instances).
	ReasonRelease = "sloserve: lsth: idle past keep-alive, released"
	// ReasonIdle: the model is idle past LSTH's windows and has no instance.
	ReasonIdle = "sloserve: lsth: idle, no instance"
)

// Idle is the sloserve policy's keep-alive in a world without a serverless tier when
// Options.MinInstances is 0 (the live controller's with min_instances 0):
//
//   - While the model has traffic every decision is Mark's (the sloserve scaler: MArk's planner,
//     §4.2–4.4), prefixed "sloserve: ".
//   - INFless's LSTH keep-alive (§3.5, keepalive.LSTH) for idle instances: a run of samples with
//     arrivals is one invocation; once the traffic stops, the model's last instance stays
//     loaded as long as LSTH's windows say (Windows.Loaded, looking Lead ahead so that a
//     pre-warm is ready in time), is released when they end, and is launched again at the
//     pre-warm time or as soon as a request arrives.
//
// With a serverless tier the tier absorbs an idle model instead (the tier choice drains the
// fleet), so Idle is not used there. Idle is pure (it is given now, reads no clock) and belongs
// to the goroutine that drives the policy.
type Idle struct {
	// Mark is the scaler that sizes the fleet under traffic.
	Mark autoscale.Scaler
	// KeepAlive decides the idle windows (keepalive.LSTH in production).
	KeepAlive keepalive.Policy
	// Spec is what a cold start or pre-warm launches (the controller fills empty fields).
	Spec provider.Spec
	// Lead is how long an instance takes to be ready: the windows are checked Lead ahead, so an
	// instance is not released for a pause shorter than its own launch, and a pre-warm starts
	// early enough.
	Lead time.Duration

	busy             bool      // the last sample had arrivals (requests waiting count as traffic too)
	runStart, runEnd time.Time // the current (busy) or last run of samples with arrivals
	idleSince        time.Time // the first Scale, before any run
}

var _ autoscale.Scaler = (*Idle)(nil)

// Scale implements autoscale.Scaler.
func (s *Idle) Scale(snap autoscale.Snapshot, now time.Time) autoscale.Decision {
	if s.idleSince.IsZero() {
		s.idleSince = now
	}
	if n := len(snap.History); n > 0 {
		h := snap.History[n-1]
		end := h.Start.Add(h.Period)
		switch {
		case h.Arrivals > 0 && !s.busy:
			s.busy, s.runStart, s.runEnd = true, h.Start, end
		case h.Arrivals > 0:
			s.runEnd = end
		case s.busy:
			// The run ended: it is one invocation for the keep-alive histograms.
			s.busy = false
			s.KeepAlive.Observe(s.runStart, s.runEnd)
		}
	}
	d := s.Mark.Scale(snap, now)
	launching, ready := snap.Counts("")
	live := launching + ready
	if s.busy || snap.QueueLen > 0 {
		if live == 0 && len(d.Launch) == 0 {
			return autoscale.Decision{Launch: []provider.Spec{s.Spec}, Reason: ReasonColdStart}
		}
		if live > 0 && len(d.Launch) == 0 && live-len(d.Terminate) < 1 {
			// A forecast that has not caught up with the traffic yet never takes the last
			// instance from a model with requests.
			d.Terminate = d.Terminate[:live-1]
		}
		d.Reason = "sloserve: " + d.Reason
		return d
	}
	last := s.runEnd
	if last.IsZero() {
		last = s.idleSince
	}
	gap := now.Sub(last)
	w := s.KeepAlive.Windows(now)
	if w.Loaded(gap) || w.Loaded(gap+s.Lead) {
		switch {
		case live == 0:
			return autoscale.Decision{Launch: []provider.Spec{s.Spec}, Reason: ReasonPreWarm}
		case live-len(d.Terminate) < 1:
			// MArk would release the last instance; LSTH keeps it.
			d.Terminate = d.Terminate[:live-1]
			d.Reason = ReasonKeepAlive
			return d
		}
		d.Reason = "sloserve: " + d.Reason
		return d
	}
	// Past the windows: release every instance.
	out := autoscale.Decision{Reason: ReasonRelease}
	for _, m := range snap.Fleet {
		if m.State == provider.StateLaunching || m.State == provider.StateReady {
			out.Terminate = append(out.Terminate, m.ID)
		}
	}
	if len(out.Terminate) == 0 {
		out.Reason = ReasonIdle
	}
	return out
}

// Forecast is the inner scaler's latest forecast (requests/s per unit ahead), when it has one.
func (s *Idle) Forecast() []float64 {
	if f, ok := s.Mark.(forecaster); ok {
		return f.Forecast()
	}
	return nil
}

// Unit is the inner scaler's forecast unit (0 without one).
func (s *Idle) Unit() time.Duration {
	if f, ok := s.Mark.(forecaster); ok {
		return f.Unit()
	}
	return 0
}

// forecaster is a scaler that forecasts (the MArk scaler, sloserve's).
type forecaster interface {
	Forecast() []float64
	Unit() time.Duration
}
