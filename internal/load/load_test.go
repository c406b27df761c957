package load

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

// every returns arrivals every gap, starting at gap.
func every(gap time.Duration) trace.Source {
	var t time.Duration
	return trace.SourceFunc(func() (time.Duration, bool) { t += gap; return t, true })
}

func payloads() []Payload {
	return []Payload{
		{Body: []byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[1,1],"data":[0]}]}`), Label: 2},
		{Body: []byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[1,1],"data":[1]}]}`), Label: 1},
	}
}

// answer writes an OIP answer predicting class 2 from a batch of batch, with 400 µs of work.
func answer(w http.ResponseWriter, batch int) {
	w.Header().Set("Sloserve-Service-Time-Us", "400")
	fmt.Fprintf(w, `{"model_name":"m","parameters":{"sloserve_batch_size":%d},"outputs":[{"name":"p","datatype":"FP32","shape":[1,3],"data":[0.1,0.2,0.7]}]}`, batch)
}

func TestRunCountsOutcomes(t *testing.T) {
	var n atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch {
		case strings.Contains(string(b), `"data":[1]`): // the label-1 payload
			w.WriteHeader(http.StatusTooManyRequests)
		case n.Add(1)%2 == 1:
			answer(w, 1)
		default:
			answer(w, 4)
		}
	}))
	defer s.Close()
	res, err := Run(context.Background(), Config{
		Target: s.URL, Model: "m", Arrivals: every(time.Millisecond), Duration: time.Hour, MaxRequests: 40,
		Payloads: payloads(), SLO: slo.Spec{Threshold: 10 * time.Second, Target: 0.9},
	})
	if err != nil {
		t.Fatal(err)
	}
	sum := res.Summary
	got := []any{sum.Requests, sum.Completed, sum.Rejected, sum.Failed, res.Codes[200], res.Codes[429], math.Round(res.WorkSeconds * 1e6)}
	want := []any{int64(40), int64(20), int64(20), int64(0), int64(20), int64(20), 20 * 400.0}
	if fmt.Sprint(want) != fmt.Sprint(got) {
		t.Errorf("requests, completed, rejected, failed, 200s, 429s, work (-want +got):\n- %v\n+ %v", want, got)
	}
	// 10 answers from batches of 1 and 10 from batches of 4: 20 / (10 + 10/4) = 1.6.
	if sum.MeanBatchSize != 1.6 {
		t.Errorf("mean batch size (-want +got): -1.6 +%v", sum.MeanBatchSize)
	}
	// Only label-2 payloads are answered, and the server predicts 2.
	if sum.Accuracy == nil || *sum.Accuracy != 1 {
		t.Errorf("accuracy (-want +got): -1 +%v", sum.Accuracy)
	}
	if sum.SLOAttainment != 0.5 {
		t.Errorf("attainment (-want +got): -0.5 +%v (rejected requests are misses)", sum.SLOAttainment)
	}
}

// TestRunIsOpenLoop: the server answers nothing until it has received every request, so a
// closed-loop generator would deadlock here; the open-loop one sends all on schedule.
func TestRunIsOpenLoop(t *testing.T) {
	const total = 30
	var got atomic.Int64
	release := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if got.Add(1) == total {
			close(release)
		}
		<-release
		answer(w, 1)
	}))
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := Run(ctx, Config{
		Target: s.URL, Model: "m", Arrivals: every(time.Millisecond), Duration: time.Hour, MaxRequests: total,
		Payloads: payloads(), SLO: slo.DefaultSpec(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Completed != total {
		t.Errorf("completed (-want +got): -%d +%d", total, res.Summary.Completed)
	}
}

func TestRunStopsAtDuration(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { answer(w, 1) }))
	defer s.Close()
	res, err := Run(context.Background(), Config{
		Target: s.URL, Model: "m", Arrivals: every(10 * time.Millisecond), Duration: 55 * time.Millisecond, MaxRequests: 1000,
		Payloads: payloads(), SLO: slo.DefaultSpec(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Requests != 5 {
		t.Errorf("requests in 55 ms at one per 10 ms (-want +got): -5 +%d", res.Summary.Requests)
	}
}

func TestPhases(t *testing.T) {
	src := Phases(
		Phase{Name: "a", Arrivals: every(4 * time.Millisecond), Duration: 10 * time.Millisecond},
		Phase{Name: "b", Arrivals: every(3 * time.Millisecond), Duration: 7 * time.Millisecond},
	)
	var got []time.Duration
	for at := range trace.Seq(src) {
		got = append(got, at)
	}
	ms := time.Millisecond
	want := []time.Duration{4 * ms, 8 * ms, 13 * ms, 16 * ms}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("phases (-want +got):\n- %v\n+ %v", want, got)
	}
}

func TestConfigValidate(t *testing.T) {
	good := Config{Target: "http://x", Model: "m", Arrivals: every(time.Second), Duration: time.Second, MaxRequests: 1, Payloads: payloads(), SLO: slo.DefaultSpec()}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"no target", func(c *Config) { c.Target = "" }, "load.target: must not be empty"},
		{"zero duration", func(c *Config) { c.Duration = 0 }, "load.duration: must be > 0, got 0s"},
		{"zero max", func(c *Config) { c.MaxRequests = 0 }, "load.max_requests: must be > 0, got 0"},
		{"no payloads", func(c *Config) { c.Payloads = nil }, "load.payloads: at least one is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.mod(&c)
			if err := c.Validate(); err == nil || err.Error() != tc.want {
				t.Errorf("Validate (-want +got):\n- %s\n+ %v", tc.want, err)
			}
		})
	}
}

// TestSendTimesFromActualSend: a request sent 300 ms after its scheduled time (a starved
// generator) is timed from its actual send — the server answers at once — and its lateness is
// reported apart; counted from the schedule it would miss a 100 ms SLO the server met.
func TestSendTimesFromActualSend(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { answer(w, 1) }))
	defer s.Close()
	due := time.Now().Add(-300 * time.Millisecond)
	o := send(context.Background(), s.Client(), s.URL+"/v2/models/m/infer", payloads()[0], due, 5*time.Second)
	if o.code != http.StatusOK {
		t.Fatalf("code %d, want 200", o.code)
	}
	if !o.late || o.lateness < 300*time.Millisecond {
		t.Errorf("late %v, lateness %v: want late by ≥ 300ms", o.late, o.lateness)
	}
	if o.latency >= 250*time.Millisecond {
		t.Errorf("latency %v counts the generator's lateness %v (want < 250ms from the actual send)", o.latency, o.lateness)
	}
}

// TestRunReportsLateness: the generator's lateness is summarised apart from the latencies,
// and the attainment counted from the schedule is never above the one from the actual send.
func TestRunReportsLateness(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { answer(w, 1) }))
	defer s.Close()
	res, err := Run(context.Background(), Config{
		Target: s.URL, Model: "m", Arrivals: every(time.Millisecond), Duration: time.Hour, MaxRequests: 20,
		Payloads: payloads()[:1], SLO: slo.Spec{Threshold: 5 * time.Second, Target: 0.9},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.LateMax < res.LateP99 || res.LateP99 < res.LateP50 || res.LateP50 < 0 {
		t.Errorf("lateness quantiles p50 %v p99 %v max %v not ordered", res.LateP50, res.LateP99, res.LateMax)
	}
	if res.ScheduledAttainment > res.Summary.SLOAttainment || res.Summary.SLOAttainment != 1 {
		t.Errorf("attainment from the schedule %v, from the send %v: want ≤ and 1", res.ScheduledAttainment, res.Summary.SLOAttainment)
	}
}
