package fanout

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/ensemble"
	"github.com/sloserve/sloserve/internal/oip"
)

// servedModels are Members that serve the named models and answer nothing (the tests here only
// select; the gateway's tests run ensembles end to end).
type servedModels map[string]bool

func (m servedModels) Infer(context.Context, *oip.Call) (*oip.InferenceResponse, error) {
	return nil, oip.ErrUnavailable
}

func (m servedModels) Instances(string) ([]string, error) { return nil, nil }

func (m servedModels) ModelReady(context.Context, string, string) (bool, error) { return false, nil }

func (m servedModels) Metadata(model string) (*oip.ModelMetadata, error) {
	if !m[model] {
		return nil, fmt.Errorf("%w: %q", oip.ErrModelNotFound, model)
	}
	return nil, nil
}

// testEnsemble is ensemble "e" over members a, b, c with the given selection.
func testEnsemble(t *testing.T, sel string) *Runtime {
	t.Helper()
	s := NewSet(servedModels{"a": true, "b": true, "c": true}, nil)
	var members []ensemble.Model
	for i, n := range []string{"a", "b", "c"} {
		members = append(members, ensemble.Model{Name: n, Latency: time.Millisecond, Accuracy: 0.9 - 0.1*float64(i), PackingFactor: 1})
	}
	err := s.Add(Ensemble{Name: "e", Members: members, Default: ensemble.Constraint{Latency: 200 * time.Millisecond, Accuracy: 0.9},
		Selection: sel, Voting: config.VotingWeighted, Config: ensemble.DefaultConfig(), FeedbackEntries: 8})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := s.Get("e")
	return e
}

// The ensembles bucket client-chosen latencies to two significant digits and keep state for at
// most maxConstraints constraints.
func TestBucketLatency(t *testing.T) {
	for _, tt := range []struct{ in, want time.Duration }{
		{200 * time.Millisecond, 200 * time.Millisecond},
		{150 * time.Millisecond, 150 * time.Millisecond},
		{12345 * time.Millisecond, 12 * time.Second},
		{1999 * time.Microsecond, 1900 * time.Microsecond},
		{7, 7},
	} {
		if got := bucketLatency(tt.in); got != tt.want {
			t.Errorf("bucketLatency(%v) (-want +got): -%v +%v", tt.in, tt.want, got)
		}
	}
	n := map[time.Duration]bool{}
	for ms := 1; ms <= 60000; ms++ {
		n[bucketLatency(time.Duration(ms)*time.Millisecond)] = true
	}
	if len(n) > 500 {
		t.Errorf("60,000 distinct latencies give %d buckets, want ≤ 500", len(n))
	}
}

func TestLRUBound(t *testing.T) {
	l := newLRU[int, int](3)
	for i := range 10 {
		l.put(i, i)
		if i == 7 {
			l.get(7)
		}
	}
	if l.len() != 3 {
		t.Errorf("len (-want +got): -3 +%d", l.len())
	}
	var keys []int
	l.each(func(k, _ int) { keys = append(keys, k) })
	if want := []int{9, 8, 7}; !slices.Equal(want, keys) {
		t.Errorf("kept, most recent first (-want +got): -%v +%v", want, keys)
	}
}

func TestEnsembleLRUEvicts(t *testing.T) {
	l := newLRU[string, recentRequest](2)
	for _, id := range []string{"a", "b", "c"} {
		l.put(id, recentRequest{})
	}
	_, a := l.peek("a")
	_, c := l.peek("c")
	if a || !c || l.len() != 2 {
		t.Errorf("after 3 puts into 2 entries: a kept %v, c kept %v, len %d; want false, true, 2", a, c, l.len())
	}
}

// 40,000 distinct client latencies leave at most maxConstraints selection states.
func TestEnsembleConstraintsBounded(t *testing.T) {
	e := testEnsemble(t, config.SelectionDynamic)
	now := time.Unix(0, 0)
	for i := range 40000 {
		k := e.constraint(oip.RequestSLO{Latency: 100*time.Millisecond + time.Duration(i)*time.Microsecond*37})
		if _, err := e.choose(k, now); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.constraints.len(); n > maxConstraints {
		t.Errorf("constraints kept (-want ≤ +got): -%d +%d", maxConstraints, n)
	}
	if st := e.Stats(); len(st.Selections) > maxConstraints || len(st.Reasons) > maxConstraints {
		t.Errorf("stats list %d selections and %d reasons, want ≤ %d", len(st.Selections), len(st.Reasons), maxConstraints)
	}
}
