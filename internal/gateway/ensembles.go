package gateway

import (
	"context"
	"fmt"

	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/gateway/fanout"
	"github.com/sloserve/sloserve/internal/oip"
)

// Live Cocktail ensembles are package fanout's; the gateway serves them under their names next to
// its models, and these are the names its callers have always used.

// Ensemble describes one live ensemble (fanout.Ensemble).
type Ensemble = fanout.Ensemble

// EnsembleStats are an ensemble's counters and current state (fanout.Stats).
type EnsembleStats = fanout.Stats

// Label is one label for an answered ensemble request (fanout.Label).
type Label = fanout.Label

// FeedbackResult is what one feedback call learnt (fanout.FeedbackResult).
type FeedbackResult = fanout.FeedbackResult

// Response parameters of an ensemble answer the gateway's callers read (fanout's Param*).
const (
	ParamEnsembleMembers = fanout.ParamEnsembleMembers
	ParamEnsembleVoters  = fanout.ParamEnsembleVoters
	ParamEnsembleVotes   = fanout.ParamEnsembleVotes
	ParamEnsembleClasses = fanout.ParamEnsembleClasses
)

// ErrNoVote (504) and ErrNoMemberAvailable (503) are fanout's errors of ensemble requests.
var ErrNoVote, ErrNoMemberAvailable = fanout.ErrNoVote, fanout.ErrNoMemberAvailable

// EnsembleFromConfig is fanout.EnsembleFromConfig.
func EnsembleFromConfig(c config.Ensemble) (Ensemble, error) { return fanout.EnsembleFromConfig(c) }

// members is the gateway as its ensembles' fanout.Members.
type members struct{ g *Gateway }

func (m members) Infer(ctx context.Context, c *oip.Call) (*oip.InferenceResponse, error) {
	return m.g.Infer(ctx, c)
}

func (m members) Instances(model string) ([]string, error) { return m.g.Instances(model) }

func (m members) ModelReady(ctx context.Context, model, version string) (bool, error) {
	return m.g.ModelReady(ctx, model, version)
}

func (m members) Metadata(model string) (*oip.ModelMetadata, error) {
	b, err := m.g.batcher(model)
	if err != nil {
		return nil, err
	}
	return b.Metadata(), nil
}

// AddEnsemble starts serving an ensemble over models the gateway already serves.
func (g *Gateway) AddEnsemble(e Ensemble) error { return g.ens.Add(e) }

// AddEnsembles adds cfg's ensembles to g (after its models).
func AddEnsembles(g *Gateway, cfg config.Config) error {
	for _, c := range cfg.Ensembles {
		e, err := EnsembleFromConfig(c)
		if err != nil {
			return err
		}
		if err := g.AddEnsemble(e); err != nil {
			return err
		}
	}
	return nil
}

// EnsembleNames returns the names of the served ensembles, sorted.
func (g *Gateway) EnsembleNames() []string { return g.ens.Names() }

// EnsembleStats returns an ensemble's counters, its members' importance weights (for the
// controller's weighted autoscaling, Alg. 2) and its current selections.
func (g *Gateway) EnsembleStats(name string) (EnsembleStats, error) {
	e, ok := g.ens.Get(name)
	if !ok {
		return EnsembleStats{}, fmt.Errorf("%w: ensemble %q", ErrModelNotFound, name)
	}
	return e.Stats(), nil
}

// Feedback learns labels for answered requests of an ensemble (fanout.Runtime.Feedback).
func (g *Gateway) Feedback(ensembleName string, labels []Label) (FeedbackResult, error) {
	e, ok := g.ens.Get(ensembleName)
	if !ok {
		return FeedbackResult{}, fmt.Errorf("%w: ensemble %q", ErrModelNotFound, ensembleName)
	}
	return e.Feedback(labels)
}

// ensembleIndex lists the ensembles for the repository index.
func (g *Gateway) ensembleIndex(ctx context.Context) []oip.RepositoryIndexEntry {
	return g.ens.Index(ctx)
}
