package config

import (
	"fmt"
	"math"
	"slices"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sloserve/sloserve/internal/ensemble"
)

// Ensemble selection strategies (Ensemble.Selection).
const (
	// SelectionDynamic is Cocktail's per-constraint dynamic selection (Alg. 1, §4.1): start from
	// every member meeting the latency constraint, then prune or grow every interval.
	SelectionDynamic = "dynamic"
	// SelectionStatic is Cocktail's O2 choice alone (§4.1): the cheapest member set whose
	// predicted majority-vote accuracy meets the constraint, cached per constraint.
	SelectionStatic = "static"
	// SelectionFull asks every member meeting the latency constraint (Clipper-like).
	SelectionFull = "full"
)

// Ensemble voting schemes (Ensemble.Voting).
const (
	// VotingWeighted is Cocktail's class-weighted majority voting (§4.1.1), weights learnt from
	// label feedback.
	VotingWeighted = "weighted"
	// VotingMajority is plain majority voting, ties to the most accurate member.
	VotingMajority = "majority"
)

// Ensemble defaults not taken from the ensemble package's paper constants.
const (
	// DefaultEnsembleLatencyMS is the latency constraint of requests that give no latency_ms.
	DefaultEnsembleLatencyMS = 200
	// DefaultEnsembleAccuracy is the accuracy target of requests that give no accuracy: 0.88,
	// about the most accurate bundled model's test accuracy.
	DefaultEnsembleAccuracy = 0.88
	// DefaultFeedbackEntries bounds the recent requests whose member predictions are kept for
	// label feedback (an LRU).
	DefaultFeedbackEntries = 10000
	// DefaultMemberLatencyMS is a member's profiled latency when neither its profile nor the
	// bundled manifest gives one: the bundled models compute one image in well under 1 ms.
	DefaultMemberLatencyMS = 1
)

// Ensemble is one served ensemble (Cocktail, NSDI'22): a name addressed like a model
// (/v2/models/{name}/infer) whose requests fan out to member models served by the same
// gateway and are answered by the members' vote.
type Ensemble struct {
	// Name is the ensemble's name in OIP paths; it must differ from every model's name.
	Name string `yaml:"name"`
	// Members names the models (entries of models) that may vote; at least one.
	Members []string `yaml:"members"`
	// Profiles gives members' profiled accuracy, latency and packing factor; a member without
	// an entry takes its accuracy from the bundled manifest and DefaultMemberLatencyMS.
	Profiles map[string]MemberProfile `yaml:"profiles"`
	// LatencyMS is the latency constraint, in milliseconds, of requests without latency_ms
	// (it is also their deadline).
	LatencyMS float64 `yaml:"latency_ms"`
	// Accuracy is the accuracy target, a fraction in (0, 1], of requests without accuracy.
	Accuracy float64 `yaml:"accuracy"`
	// Selection is dynamic, static or full.
	Selection string `yaml:"selection"`
	// Voting is weighted or majority.
	Voting string `yaml:"voting"`
	// Interval is the dynamic selection's monitoring interval (duration; Cocktail: 30 s).
	Interval time.Duration `yaml:"interval"`
	// AccuracyMargin is Acc_margin, a fraction (Cocktail: 0.002).
	AccuracyMargin float64 `yaml:"accuracy_margin"`
	// LatencyMarginMS is Lat_margin in milliseconds (Cocktail: 5).
	LatencyMarginMS float64 `yaml:"latency_margin_ms"`
	// PopularityWindow is the window of the members' importance weights (duration; Cocktail: 5 min).
	PopularityWindow time.Duration `yaml:"popularity_window"`
	// FeedbackEntries bounds the requests remembered for label feedback (requests).
	FeedbackEntries int `yaml:"feedback_entries"`
}

// MemberProfile is a member model's profile for ensemble selection.
type MemberProfile struct {
	// Accuracy is the member's top-1 accuracy, a fraction in (0, 1]; 0 means from the manifest.
	Accuracy float64 `yaml:"accuracy"`
	// LatencyMS is the member's inference latency in milliseconds; 0 means DefaultMemberLatencyMS.
	LatencyMS float64 `yaml:"latency_ms"`
	// PackingFactor is P_f, requests the member serves at once per instance; 0 means 1.
	PackingFactor float64 `yaml:"packing_factor"`
}

// DefaultEnsemble returns an ensemble entry with the paper's constants (ensemble.DefaultConfig),
// dynamic selection and class-weighted voting.
func DefaultEnsemble(name string) Ensemble {
	d := ensemble.DefaultConfig()
	return Ensemble{
		Name:             name,
		LatencyMS:        DefaultEnsembleLatencyMS,
		Accuracy:         DefaultEnsembleAccuracy,
		Selection:        SelectionDynamic,
		Voting:           VotingWeighted,
		Interval:         d.Interval,
		AccuracyMargin:   d.AccuracyMargin,
		LatencyMarginMS:  float64(d.LatencyMargin) / float64(time.Millisecond),
		PopularityWindow: d.PopularityWindow,
		FeedbackEntries:  DefaultFeedbackEntries,
	}
}

// SelectionConfig returns the ensemble package's configuration for e.
func (e Ensemble) SelectionConfig() ensemble.Config {
	c := ensemble.DefaultConfig()
	c.Interval = e.Interval
	c.AccuracyMargin = e.AccuracyMargin
	c.LatencyMargin = msDuration(e.LatencyMarginMS)
	c.PopularityWindow = e.PopularityWindow
	return c
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// Validate reports the first field of e (at path p, e.g. "ensembles[0]") that is out of range.
func (e Ensemble) validate(p string, models map[string]bool) error {
	switch {
	case e.Name == "":
		return fmt.Errorf("%s.name: must not be empty", p)
	case models[e.Name]:
		return fmt.Errorf("%s.name: %q is also a model's name", p, e.Name)
	case len(e.Members) == 0:
		return fmt.Errorf("%s.members: at least one member is required", p)
	case !(e.LatencyMS > 0) || math.IsInf(e.LatencyMS, 0):
		return fmt.Errorf("%s.latency_ms: must be > 0, got %v", p, e.LatencyMS)
	case !(e.Accuracy > 0 && e.Accuracy <= 1):
		return fmt.Errorf("%s.accuracy: must be in (0, 1], got %v", p, e.Accuracy)
	case !slices.Contains([]string{SelectionDynamic, SelectionStatic, SelectionFull}, e.Selection):
		return fmt.Errorf("%s.selection: must be dynamic, static or full, got %q", p, e.Selection)
	case !slices.Contains([]string{VotingWeighted, VotingMajority}, e.Voting):
		return fmt.Errorf("%s.voting: must be weighted or majority, got %q", p, e.Voting)
	case !(e.LatencyMarginMS >= 0):
		return fmt.Errorf("%s.latency_margin_ms: must be >= 0, got %v", p, e.LatencyMarginMS)
	case e.FeedbackEntries < 1:
		return fmt.Errorf("%s.feedback_entries: must be >= 1, got %d", p, e.FeedbackEntries)
	}
	if err := e.SelectionConfig().Validate(); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	seen := map[string]bool{}
	for i, m := range e.Members {
		switch {
		case !models[m]:
			return fmt.Errorf("%s.members[%d]: %q is not one of the models", p, i, m)
		case seen[m]:
			return fmt.Errorf("%s.members[%d]: %q appears twice", p, i, m)
		}
		seen[m] = true
	}
	for name, pr := range e.Profiles {
		q := fmt.Sprintf("%s.profiles.%s", p, name)
		switch {
		case !seen[name]:
			return fmt.Errorf("%s: %q is not a member", q, name)
		case !(pr.Accuracy >= 0 && pr.Accuracy <= 1):
			return fmt.Errorf("%s.accuracy: must be in (0, 1] (0: from the manifest), got %v", q, pr.Accuracy)
		case !(pr.LatencyMS >= 0) || math.IsInf(pr.LatencyMS, 0):
			return fmt.Errorf("%s.latency_ms: must be >= 0, got %v", q, pr.LatencyMS)
		case !(pr.PackingFactor >= 0) || math.IsInf(pr.PackingFactor, 0):
			return fmt.Errorf("%s.packing_factor: must be >= 0, got %v", q, pr.PackingFactor)
		}
	}
	return nil
}

// validateEnsembles checks every ensemble against the configured models.
func validateEnsembles(ms []Model, es []Ensemble) error {
	models := make(map[string]bool, len(ms))
	for _, m := range ms {
		models[m.Name] = true
	}
	seen := map[string]bool{}
	for i, e := range es {
		p := fmt.Sprintf("ensembles[%d]", i)
		if err := e.validate(p, models); err != nil {
			return err
		}
		if seen[e.Name] {
			return fmt.Errorf("%s.name: %q appears twice", p, e.Name)
		}
		seen[e.Name] = true
	}
	return nil
}

// decodeEnsembles decodes each ensemble entry strictly over DefaultEnsemble.
func decodeEnsembles(nodes []yaml.Node) ([]Ensemble, error) {
	var out []Ensemble
	for i := range nodes {
		e := DefaultEnsemble("")
		b, err := yaml.Marshal(&nodes[i])
		if err == nil {
			err = strictDecode(b, &e)
		}
		if err != nil {
			return nil, fmt.Errorf("parse config: ensembles[%d]: %w", i, err)
		}
		out = append(out, e)
	}
	return out, nil
}
