package sim

import (
	"math"

	"github.com/sloserve/sloserve/internal/provider"
)

// interruptScheduled sends the interruption notices of the Config.Interruptions that are due
// (called at every load sample, before the scaler, which sees the notices in its snapshot).
// Fired interruptions are dropped from the engine's copy of the config.
func (e *engine) interruptScheduled() {
	for len(e.cfg.Interruptions) > 0 && e.now >= int64(e.cfg.Interruptions[0].At) {
		frac := e.cfg.Interruptions[0].Fraction
		e.cfg.Interruptions = e.cfg.Interruptions[1:]
		var ready []int
		for _, i := range e.live {
			in := &e.insts[i]
			if in.ended == 0 && in.state == provider.StateReady && e.types[in.typ].spot {
				ready = append(ready, i)
			}
		}
		n := min(int(math.Round(frac*float64(len(ready)))), len(ready))
		for _, i := range ready[:n] {
			e.spotNotice(i)
		}
	}
}
