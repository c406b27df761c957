package config

import (
	"strings"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/ensemble"
)

func TestLoadEnsembleExample(t *testing.T) {
	c, err := Load("../../examples/serve-ensemble.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Models) != 7 || len(c.Ensembles) != 2 {
		t.Fatalf("models, ensembles (-want +got): -7, 2 +%d, %d", len(c.Models), len(c.Ensembles))
	}
	e, fast := c.Ensembles[0], c.Ensembles[1]
	type view struct {
		Name, Selection, Voting string
		Members                 int
		LatencyMS, Accuracy     float64
		Interval                time.Duration
		Profile                 MemberProfile
	}
	got := view{e.Name, e.Selection, e.Voting, len(e.Members), e.LatencyMS, e.Accuracy, e.Interval, e.Profiles["mlp256"]}
	want := view{"fashion", SelectionDynamic, VotingWeighted, 7, 200, 0.88, 30 * time.Second, MemberProfile{LatencyMS: 0.053}}
	if got != want {
		t.Errorf("ensembles[0] (-want +got):\n- %+v\n+ %+v", want, got)
	}
	def := DefaultEnsemble("fashion-fast")
	def.Members, def.Selection = fast.Members, SelectionFull
	if fast.Selection != SelectionFull || fast.Voting != def.Voting || fast.FeedbackEntries != def.FeedbackEntries || fast.PopularityWindow != def.PopularityWindow {
		t.Errorf("ensembles[1] = %+v: want full selection and defaults elsewhere", fast)
	}
	if sc := e.SelectionConfig(); sc.LatencyMargin != ensemble.DefaultLatencyMargin || sc.Interval != ensemble.DefaultInterval {
		t.Errorf("selection config %+v: want the paper's margins and interval", sc)
	}
}

func TestEnsembleDecodeErrors(t *testing.T) {
	const models = "models: [{name: a}, {name: b}]\n"
	tests := []struct{ name, yaml, want string }{
		{"unknown field", "ensembles: [{name: e, members: [a], selektion: full}]", "ensembles[0]: yaml: unmarshal errors:\n  line 1: field selektion not found"},
		{"no name", "ensembles: [{members: [a]}]", "ensembles[0].name: must not be empty"},
		{"model name", "ensembles: [{name: a, members: [a]}]", `ensembles[0].name: "a" is also a model's name`},
		{"no members", "ensembles: [{name: e}]", "ensembles[0].members: at least one member is required"},
		{"unknown member", "ensembles: [{name: e, members: [zz]}]", `ensembles[0].members[0]: "zz" is not one of the models`},
		{"duplicate member", "ensembles: [{name: e, members: [a, a]}]", `ensembles[0].members[1]: "a" appears twice`},
		{"duplicate ensemble", "ensembles: [{name: e, members: [a]}, {name: e, members: [b]}]", `ensembles[1].name: "e" appears twice`},
		{"latency", "ensembles: [{name: e, members: [a], latency_ms: 0}]", "ensembles[0].latency_ms: must be > 0, got 0"},
		{"accuracy", "ensembles: [{name: e, members: [a], accuracy: 1.2}]", "ensembles[0].accuracy: must be in (0, 1], got 1.2"},
		{"selection", "ensembles: [{name: e, members: [a], selection: best}]", `ensembles[0].selection: must be dynamic, static or full, got "best"`},
		{"voting", "ensembles: [{name: e, members: [a], voting: loud}]", `ensembles[0].voting: must be weighted or majority, got "loud"`},
		{"interval", "ensembles: [{name: e, members: [a], interval: 0s}]", "ensembles[0]: ensemble.interval: must be > 0, got 0s"},
		{"feedback", "ensembles: [{name: e, members: [a], feedback_entries: 0}]", "ensembles[0].feedback_entries: must be >= 1, got 0"},
		{"profile of a non-member", "ensembles: [{name: e, members: [a], profiles: {b: {accuracy: 0.5}}}]", `ensembles[0].profiles.b: "b" is not a member`},
		{"profile accuracy", "ensembles: [{name: e, members: [a], profiles: {a: {accuracy: 2}}}]", "ensembles[0].profiles.a.accuracy: must be in (0, 1] (0: from the manifest), got 2"},
		{"profile latency", "ensembles: [{name: e, members: [a], profiles: {a: {latency_ms: -1}}}]", "ensembles[0].profiles.a.latency_ms: must be >= 0, got -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(models + tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error (-want +got):\n- …%s…\n+ %v", tt.want, err)
			}
		})
	}
}
