package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

// Payload is one prepared inference request body, with the class its answer should predict.
type Payload struct {
	// Body is an OIP v2 REST inference request body.
	Body []byte
	// Label is the expected argmax of the first output, or -1 when unknown.
	Label int
}

// Config configures one run.
type Config struct {
	// Target is the base URL of the server under load, e.g. "http://127.0.0.1:8080".
	Target string
	// Model is the model name in the inference path.
	Model string
	// Arrivals yields the send times as offsets from the start of the run.
	Arrivals trace.Source
	// Duration stops scheduling at this offset (duration > 0).
	Duration time.Duration
	// MaxRequests stops scheduling after this many requests (requests > 0).
	MaxRequests int
	// Payloads are sent in turn (at least one).
	Payloads []Payload
	// SLO judges the latencies.
	SLO slo.Spec
	// Timeout bounds one request, in duration; 0 means 10 s.
	Timeout time.Duration
	// MaxInFlight bounds requests awaiting an answer; a request due while the bound is reached is
	// counted as failed on the client side rather than delayed. 0 means 20 000.
	MaxInFlight int
	// Client sends the requests; nil means a keep-alive client sized for MaxInFlight.
	Client *http.Client
	// Policy and Trace name the run in the Summary.
	Policy, Trace string
}

// Validate reports the first field that is out of range.
func (c Config) Validate() error {
	switch {
	case c.Target == "":
		return errors.New("load.target: must not be empty")
	case c.Model == "":
		return errors.New("load.model: must not be empty")
	case c.Arrivals == nil:
		return errors.New("load.arrivals: must not be nil")
	case c.Duration <= 0:
		return fmt.Errorf("load.duration: must be > 0, got %v", c.Duration)
	case c.MaxRequests <= 0:
		return fmt.Errorf("load.max_requests: must be > 0, got %d", c.MaxRequests)
	case len(c.Payloads) == 0:
		return errors.New("load.payloads: at least one is required")
	case c.Timeout < 0:
		return fmt.Errorf("load.timeout: must be ≥ 0, got %v", c.Timeout)
	case c.MaxInFlight < 0:
		return fmt.Errorf("load.max_in_flight: must be ≥ 0, got %d", c.MaxInFlight)
	}
	return c.SLO.Validate()
}

// Result is the outcome of a run.
type Result struct {
	// Summary is the shared Summary; MeanBatchSize is estimated from the answers' batch sizes
	// (requests / Σ 1/batch size) and Accuracy is set when payloads carry labels.
	Summary slo.Summary
	// WorkSeconds is the workers' busy time summed over the answers' Sloserve-Service-Time-Us.
	WorkSeconds float64
	// Codes counts answers per HTTP status code (0: no answer).
	Codes map[int]int64
	// Late counts requests sent more than 1 ms after their scheduled time: the generator could
	// not keep up (a starved machine: late timers, goroutine start). Their latency counts from
	// the actual send, as the server's clock does; the lateness is reported apart (LateP50…).
	Late int64
	// LateP50, LateP99 and LateMax are quantiles (nearest rank) over every sent request of its
	// lateness: actual send − scheduled send (0 when on time).
	LateP50, LateP99, LateMax time.Duration
	// ScheduledAttainment is the SLO attainment had each latency been counted from its scheduled
	// send instead (the generator's lateness counted against the server), for comparison.
	ScheduledAttainment float64
	// WireP50 and WireP99 are quantiles (nearest rank) over the 200 answers of the time from the
	// request's headers being written to the answer's first byte: what the server and the network
	// took, without the generator's own delays before sending (late timers, goroutine start,
	// connection set-up) or after. The Summary's latencies count from the actual send.
	WireP50, WireP99 time.Duration
}

// outcome is one request's result, sent to the collector.
type outcome struct {
	latency   time.Duration // actual send → answer read
	lateness  time.Duration // actual send − scheduled send
	wire      time.Duration // headers written → first answer byte; 0 when unknown
	code      int
	batch     int
	serviceUS int64
	label     int
	predicted int
	late      bool
}

// Run sends the load and returns when every request has been answered or timed out, or ctx ends
// (outstanding requests are then cancelled and counted as failed).
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = 20000
	}
	if cfg.Client == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = cfg.MaxInFlight
		t.MaxIdleConnsPerHost = cfg.MaxInFlight
		t.DisableCompression = true
		cfg.Client = &http.Client{Transport: t}
	}
	url := cfg.Target + "/v2/models/" + cfg.Model + "/infer"
	outs := make(chan outcome, 4096)
	var (
		res   = Result{Codes: map[int]int64{}}
		rec   = slo.NewRecorder(cfg.SLO)
		sched = slo.NewRecorder(cfg.SLO) // latencies from the scheduled send
		done  = make(chan struct{})
	)
	var invBatch float64
	var batched, correct, labelled int64
	var wires, lates []time.Duration
	go func() { // the collector owns the recorders
		defer close(done)
		for o := range outs {
			res.Codes[o.code]++
			if o.late {
				res.Late++
			}
			lates = append(lates, o.lateness)
			switch {
			case o.code == http.StatusOK:
				rec.Completed(o.latency, slo.TierVM)
				sched.Completed(o.latency+o.lateness, slo.TierVM)
				if o.wire > 0 {
					wires = append(wires, o.wire)
				}
				res.WorkSeconds += float64(o.serviceUS) / 1e6
				if o.batch > 0 {
					invBatch += 1 / float64(o.batch)
					batched++
				}
				if o.label >= 0 {
					labelled++
					if o.predicted == o.label {
						correct++
					}
				}
			case o.code == http.StatusTooManyRequests:
				rec.Rejected()
				sched.Rejected()
			default:
				rec.Failed()
				sched.Failed()
			}
		}
	}()

	var wg sync.WaitGroup
	sem := make(chan struct{}, cfg.MaxInFlight)
	start := time.Now()
	timer := time.NewTimer(0)
	<-timer.C
	sent := 0
	src := trace.Take(trace.Until(cfg.Arrivals, cfg.Duration), cfg.MaxRequests)
	var err error
schedule:
	for {
		at, ok := src.Next()
		if !ok {
			break
		}
		due := start.Add(at)
		if wait := time.Until(due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				err = ctx.Err()
				break schedule
			}
		}
		p := cfg.Payloads[sent%len(cfg.Payloads)]
		sent++
		select {
		case sem <- struct{}{}:
		default:
			outs <- outcome{code: 0, late: true, lateness: max(time.Since(due), 0)}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			outs <- send(ctx, cfg.Client, url, p, due, cfg.Timeout)
		}()
	}
	elapsed := time.Since(start)
	wg.Wait()
	close(outs)
	<-done
	if elapsed < cfg.Duration && err == nil {
		elapsed = cfg.Duration
	}
	res.Summary = rec.Summary(cfg.Policy, cfg.Trace, elapsed)
	res.WireP50, res.WireP99 = nearestRank(wires, 50), nearestRank(wires, 99)
	res.LateP50, res.LateP99, res.LateMax = nearestRank(lates, 50), nearestRank(lates, 99), nearestRank(lates, 100)
	res.ScheduledAttainment = sched.Summary(cfg.Policy, cfg.Trace, elapsed).SLOAttainment
	if batched > 0 {
		res.Summary.MeanBatchSize = float64(batched) / invBatch
	}
	if labelled > 0 {
		acc := float64(correct) / float64(labelled)
		res.Summary.Accuracy = &acc
	}
	return res, err
}

// nearestRank returns the p-th percentile of xs by nearest rank (sorting xs), 0 for none.
func nearestRank(xs []time.Duration, p int) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[max(0, (p*len(xs)+99)/100-1)]
}

// send posts one request scheduled at due and measures its latency from its actual send (now,
// when the request is handed to the client: the clock a server starts when it receives it), and
// its lateness (actual − scheduled send) apart. Timing from the schedule would count a starved
// generator's own delays against the server.
func send(ctx context.Context, c *http.Client, url string, p Payload, due time.Time, timeout time.Duration) outcome {
	start := time.Now()
	o := outcome{label: p.Label, predicted: -1, lateness: max(start.Sub(due), 0)}
	o.late = o.lateness > time.Millisecond
	ctx, cancel := context.WithDeadline(ctx, start.Add(timeout))
	defer cancel()
	var wrote, first atomic.Int64 // ns since start; set by the transport's goroutines
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders:         func() { wrote.Store(int64(time.Since(start))) },
		GotFirstResponseByte: func() { first.Store(int64(time.Since(start))) },
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(p.Body))
	if err != nil {
		return o
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if w, f := wrote.Load(), first.Load(); w > 0 && f > w {
		o.wire = time.Duration(f - w)
	}
	if err != nil {
		o.latency = time.Since(start)
		return o
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	o.latency = time.Since(start)
	if err != nil {
		return o
	}
	o.code = resp.StatusCode
	if o.code != http.StatusOK {
		return o
	}
	if us, err := strconv.ParseInt(resp.Header.Get(oip.HeaderServiceTime), 10, 64); err == nil {
		o.serviceUS = us
	}
	r, err := oip.DecodeResponse(body, oip.DefaultLimits())
	if err != nil {
		o.code = -1 // answered 200 with a body that does not decode: a failure
		return o
	}
	o.batch = batchSize(r.Parameters)
	if p.Label >= 0 && len(r.Outputs) > 0 {
		o.predicted = argmax(&r.Outputs[0])
	}
	return o
}

// ParamBatchSize is the response parameter in which the sloserve gateway reports the size of
// the batch that served a request.
const ParamBatchSize = "sloserve_batch_size"

func batchSize(p oip.Parameters) int {
	v, ok := p[ParamBatchSize]
	if !ok {
		return 0
	}
	switch x := v.(type) {
	case int:
		return x
	case int64:
		return int(x)
	case float64:
		return int(x)
	case interface{ Int64() (int64, error) }:
		n, _ := x.Int64()
		return int(n)
	}
	return 0
}

// argmax returns the index of the largest element of the tensor's first row (-1 if none).
func argmax(t *oip.Tensor) int {
	per := 1
	for _, d := range t.Shape[min(1, len(t.Shape)):] {
		per *= int(d)
	}
	best := -1
	switch t.Datatype {
	case oip.DatatypeFP32:
		for i := 0; i < per && i < len(t.FP32); i++ {
			if best < 0 || t.FP32[i] > t.FP32[best] {
				best = i
			}
		}
	case oip.DatatypeFP64:
		for i := 0; i < per && i < len(t.FP64); i++ {
			if best < 0 || t.FP64[i] > t.FP64[best] {
				best = i
			}
		}
	case oip.DatatypeINT64:
		if len(t.INT64) > 0 {
			best = int(t.INT64[0])
		}
	}
	return best
}

// Phase is one part of a load schedule: an arrival process for a length of time.
type Phase struct {
	// Name labels the phase (e.g. "poisson", "mmpp").
	Name string
	// Arrivals yields offsets from the phase's start.
	Arrivals trace.Source
	// Duration is the phase's length.
	Duration time.Duration
}

// Phases chains phases into one Source: phase k's arrivals are shifted by the total length of
// the phases before it and cut at its own length.
func Phases(ps ...Phase) trace.Source {
	k := 0
	var offset time.Duration
	var cur trace.Source
	return trace.SourceFunc(func() (time.Duration, bool) {
		for k < len(ps) {
			if cur == nil {
				cur = trace.Until(ps[k].Arrivals, ps[k].Duration)
			}
			if at, ok := cur.Next(); ok {
				return offset + at, true
			}
			offset += ps[k].Duration
			k++
			cur = nil
		}
		return 0, false
	})
}
