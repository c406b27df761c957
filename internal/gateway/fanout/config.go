package fanout

import (
	"fmt"
	"time"

	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/ensemble"
	bundled "github.com/sloserve/sloserve/models"
)

// EnsembleFromConfig turns a configured ensemble into the gateway's description: each member's
// profile comes from its profiles entry, its accuracy otherwise from the bundled manifest (test
// accuracy), its latency otherwise config.DefaultMemberLatencyMS and its packing factor 1.
func EnsembleFromConfig(c config.Ensemble) (Ensemble, error) {
	e := Ensemble{
		Name:            c.Name,
		Default:         ensemble.Constraint{Latency: msToDuration(c.LatencyMS), Accuracy: c.Accuracy},
		Selection:       c.Selection,
		Voting:          c.Voting,
		Config:          c.SelectionConfig(),
		FeedbackEntries: c.FeedbackEntries,
	}
	man, _ := bundled.Manifest()
	for _, name := range c.Members {
		p := c.Profiles[name]
		m := ensemble.Model{Name: name, Accuracy: p.Accuracy, Latency: msToDuration(p.LatencyMS), PackingFactor: p.PackingFactor}
		if m.Accuracy == 0 && man != nil {
			if mi, ok := man.Model(name); ok {
				m.Accuracy = mi.Accuracy
			}
		}
		if m.Accuracy == 0 {
			return Ensemble{}, fmt.Errorf("ensemble %s: member %s: no accuracy (give profiles.%s.accuracy)", c.Name, name, name)
		}
		if m.Latency == 0 {
			m.Latency = msToDuration(config.DefaultMemberLatencyMS)
		}
		if m.PackingFactor == 0 {
			m.PackingFactor = 1
		}
		e.Members = append(e.Members, m)
	}
	return e, nil
}

func msToDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
