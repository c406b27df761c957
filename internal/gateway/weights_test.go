package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sloserve/sloserve/internal/dispatch"
	"github.com/sloserve/sloserve/internal/slo"
)

// countingWorker is fakeWorkerHandler on loopback that takes `service` per inference call and
// counts the calls.
func countingWorker(t *testing.T, service time.Duration) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	h := fakeWorkerHandler()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/infer") {
			n.Add(1)
			time.Sleep(service)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s, &n
}

// weightsOf returns the dispatch weight of each of model m's instances, read on its batcher.
func weightsOf(t *testing.T, g *Gateway) map[string]float64 {
	t.Helper()
	b, err := g.batcher("m")
	if err != nil {
		t.Fatal(err)
	}
	insts, ok := b.Instances()
	if !ok {
		t.Fatal("batcher stopped")
	}
	w := map[string]float64{}
	for _, in := range insts {
		w[in.ID] = in.Weight
	}
	return w
}

// Two instances with dispatch weights 3:1 under the weighted pick share 200 requests from eight
// concurrent HTTP clients about 3:1; with the default pick, or equal weights, about evenly.
func TestSetWeightsSplitsLoad(t *testing.T) {
	tests := []struct {
		name           string
		pick           string
		weights        map[string]float64
		lowPct, hiPct  float64 // band of the share of batches that instance "a" gets, in %
		changeDuringIt bool    // call SetWeights again, with the same weights, while requests run
	}{
		{name: "weighted 3:1", pick: dispatch.WeightedLeastOutstandingName, weights: map[string]float64{"a": 30, "b": 10},
			lowPct: 60, hiPct: 90, changeDuringIt: true},
		{name: "weighted 1:1", pick: dispatch.WeightedLeastOutstandingName, weights: map[string]float64{"a": 5, "b": 5},
			lowPct: 35, hiPct: 65},
		{name: "default pick ignores weights", pick: "", weights: map[string]float64{"a": 30, "b": 10},
			lowPct: 35, hiPct: 65},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			g, err := New(Options{Registerer: reg, Dispatch: tc.pick})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.AddModel(Model{Name: "m", SLO: slo.Spec{Threshold: 10 * time.Second, Target: 0.98},
				Policy: &fixedPolicy{Max: 1}, QueueLimit: 64, Slots: 16}); err != nil {
				t.Fatal(err)
			}
			// "b" first, so that ties of the weighted pick go to the lighter instance.
			count := map[string]*atomic.Int64{}
			for _, id := range []string{"b", "a"} {
				w, n := countingWorker(t, 2*time.Millisecond)
				count[id] = n
				if err := g.AddInstance(context.Background(), "m", Instance{ID: id, Addr: w.URL}); err != nil {
					t.Fatal(err)
				}
			}
			if err := g.SetWeights("m", tc.weights); err != nil {
				t.Fatal(err)
			}
			h, err := g.Handler(HandlerOptions{Gatherer: reg})
			if err != nil {
				t.Fatal(err)
			}
			s := httptest.NewServer(h)
			t.Cleanup(func() { s.Close(); g.Close(context.Background()) })

			stop := make(chan struct{})
			var setter sync.WaitGroup
			if tc.changeDuringIt {
				setter.Add(1)
				go func() {
					defer setter.Done()
					for {
						select {
						case <-stop:
							return
						case <-time.After(time.Millisecond):
						}
						if err := g.SetWeights("m", tc.weights); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			const clients, each = 8, 25
			var wg sync.WaitGroup
			for c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						resp, err := http.Post(s.URL+"/v2/models/m/infer", "application/json",
							bytes.NewReader(body(fmt.Sprintf("c%d-%d", c, i), 1, "")))
						if err != nil {
							t.Error(err)
							return
						}
						b, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						if resp.StatusCode != http.StatusOK {
							t.Errorf("status %d: %s", resp.StatusCode, b)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(stop)
			setter.Wait()
			a, b := count["a"].Load(), count["b"].Load()
			if a+b != clients*each {
				t.Errorf("batches served (-want +got): -%d +%d", clients*each, a+b)
			}
			pct := 100 * float64(a) / float64(a+b)
			t.Logf("a %d, b %d: a's share %.1f %%", a, b, pct)
			if pct < tc.lowPct || pct > tc.hiPct {
				t.Errorf("share of instance a: %.1f %%, want in [%v, %v] %%", pct, tc.lowPct, tc.hiPct)
			}
		})
	}
}

func TestSetWeights(t *testing.T) {
	g, err := New(Options{Backend: &fakeBackend{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(context.Background()) })
	if err := g.AddModel(Model{Name: "m", SLO: slo.DefaultSpec(), Policy: &fixedPolicy{Max: 1}}); err != nil {
		t.Fatal(err)
	}
	add := func(id string) {
		t.Helper()
		if err := g.AddInstance(context.Background(), "m", Instance{ID: id, Addr: "addr-" + id}); err != nil {
			t.Fatal(err)
		}
	}
	add("a")
	add("b")
	steps := []struct {
		name    string
		model   string
		w       map[string]float64
		add     string // an instance added after the call
		wantErr string
		want    map[string]float64
	}{
		{name: "instances start at 1", model: "m", want: map[string]float64{"a": 1, "b": 1}},
		{name: "set both", model: "m", w: map[string]float64{"a": 30, "b": 10}, want: map[string]float64{"a": 30, "b": 10}},
		{name: "unlisted keep theirs; new start at 1", model: "m", w: map[string]float64{"b": 2.5}, add: "c",
			want: map[string]float64{"a": 30, "b": 2.5, "c": 1}},
		{name: "unknown ids are ignored", model: "m", w: map[string]float64{"gone": 7, "c": 4},
			want: map[string]float64{"a": 30, "b": 2.5, "c": 4}},
		{name: "zero weight: nothing set", model: "m", w: map[string]float64{"a": 1, "b": 0},
			wantErr: "set weights of m: instance b: weight must be finite and > 0, got 0", want: map[string]float64{"a": 30, "b": 2.5, "c": 4}},
		{name: "negative weight", model: "m", w: map[string]float64{"c": -3},
			wantErr: "set weights of m: instance c: weight must be finite and > 0, got -3", want: map[string]float64{"a": 30, "b": 2.5, "c": 4}},
		{name: "NaN weight", model: "m", w: map[string]float64{"a": math.NaN()},
			wantErr: "set weights of m: instance a: weight must be finite and > 0, got NaN", want: map[string]float64{"a": 30, "b": 2.5, "c": 4}},
		{name: "infinite weight", model: "m", w: map[string]float64{"a": math.Inf(1)},
			wantErr: "set weights of m: instance a: weight must be finite and > 0, got +Inf", want: map[string]float64{"a": 30, "b": 2.5, "c": 4}},
		{name: "unknown model", model: "nope", w: map[string]float64{"a": 2},
			wantErr: `set weights: gateway: model not found: "nope"`, want: map[string]float64{"a": 30, "b": 2.5, "c": 4}},
	}
	for _, st := range steps { // in order: each step starts from the previous one's weights
		if err := g.SetWeights(st.model, st.w); fmt.Sprint(err) != fmt.Sprint(errOrNil(st.wantErr)) {
			t.Errorf("%s: SetWeights error (-want +got):\n- %v\n+ %v", st.name, errOrNil(st.wantErr), err)
		}
		if st.add != "" {
			add(st.add)
		}
		if got := weightsOf(t, g); fmt.Sprint(got) != fmt.Sprint(st.want) {
			t.Errorf("%s: weights (-want +got):\n- %v\n+ %v", st.name, st.want, got)
		}
	}
	if err := g.SetWeights("nope", nil); !errors.Is(err, ErrModelNotFound) {
		t.Errorf("unknown model: got %v, want ErrModelNotFound", err)
	}
	g.Close(context.Background())
	if err := g.SetWeights("m", map[string]float64{"a": 1}); !errors.Is(err, ErrShuttingDown) {
		t.Errorf("after Close: got %v, want ErrShuttingDown", err)
	}
}

func errOrNil(s string) error {
	if s == "" {
		return nil
	}
	return errors.New(s)
}
