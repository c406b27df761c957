package experiment

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunTogetherMatchesAlone: sagemaker-tuned and its twin sagemaker-ec2-tuned tuned together
// choose, report and score exactly what each does alone — searches coarse to fine with cost caps
// and miss budgets included — in about half the simulations.
func TestRunTogetherMatchesAlone(t *testing.T) {
	for _, st := range DefaultScoreSettings()[:2] {
		w, tuning, eval, parts := excerptWorld(t, st, 6*time.Minute)
		w.TunePrefix = 2 * time.Minute
		var pair []TunedBaseline
		for _, b := range DefaultTunedBaselines() {
			if b.Name == "sagemaker-tuned" || b.TwinOf == "sagemaker-tuned" {
				pair = append(pair, b)
			}
		}
		if g := TwinGroups(pair); len(pair) != 2 || !reflect.DeepEqual(g, [][]int{{0, 1}}) {
			t.Fatalf("%s: twins %d, groups %v; want sagemaker-tuned with its EC2 twin", st.Name, len(pair), g)
		}
		var alone, together atomic.Int64
		w.sims = &alone
		var want []TunedRun
		for _, b := range pair {
			r, err := w.RunTuned(context.Background(), b, tuning, eval, parts[0], parts[1])
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, r)
		}
		w.sims = &together
		got, errs := w.RunTogether(context.Background(), pair, tuning, eval, parts[0], parts[1])
		for i := range pair {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("%s %s together:\n%+v\nalone:\n%+v", st.Name, pair[i].Name, got[i], want[i])
			}
		}
		if want[0].Search.Runs < 4 || together.Load() > alone.Load()/2+1 {
			t.Errorf("%s: %d runs searched; %d simulations together, %d alone: want about half", st.Name, want[0].Search.Runs, together.Load(), alone.Load())
		}
		t.Logf("%s: %d simulations together, %d alone; %s", st.Name, together.Load(), alone.Load(), got[1].Search.Options.Key())
	}
}

// TestTwinGroups: twins follow the baseline they name, in order; a twin without it stands alone.
func TestTwinGroups(t *testing.T) {
	bs := []TunedBaseline{{Name: "b", TwinOf: "a"}, {Name: "a"}, {Name: "c"}, {Name: "d", TwinOf: "a"}, {Name: "e", TwinOf: "x"}, {Name: "f", TwinOf: "b"}}
	want := [][]int{{1, 0, 3}, {2}, {4}, {5}}
	if g := TwinGroups(bs); !reflect.DeepEqual(g, want) {
		t.Fatalf("TwinGroups = %v, want %v", g, want)
	}
}
