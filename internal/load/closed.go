package load

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/sloserve/sloserve/internal/slo"
)

// ClosedConfig configures a closed-loop measurement: Concurrency clients each send a request,
// wait for its answer and send the next, for Duration. Closed loops measure capacity and the
// latency of an unloaded path; Run (open loop) measures latency under a given load.
type ClosedConfig struct {
	// URL is the full inference URL.
	URL string
	// Payloads are sent in turn (at least one).
	Payloads []Payload
	// Concurrency is the number of clients (≥ 1).
	Concurrency int
	// Duration is how long the clients send (> 0).
	Duration time.Duration
	// Client sends the requests; nil means a keep-alive client for Concurrency connections.
	Client *http.Client
}

// ClosedResult is what a closed-loop measurement saw.
type ClosedResult struct {
	// Requests is the number of answers with status 200; Errors the others.
	Requests, Errors int64
	// RPS is Requests per second of Duration.
	RPS float64
	// Latency is the histogram of the 200 answers' latencies.
	Latency slo.Histogram
}

// Closed runs a closed-loop measurement.
func Closed(ctx context.Context, cfg ClosedConfig) (ClosedResult, error) {
	if cfg.URL == "" || len(cfg.Payloads) == 0 || cfg.Concurrency < 1 || cfg.Duration <= 0 {
		return ClosedResult{}, fmt.Errorf("closed loop: need url, payloads, concurrency ≥ 1 and duration > 0, got %q, %d, %d, %v",
			cfg.URL, len(cfg.Payloads), cfg.Concurrency, cfg.Duration)
	}
	c := cfg.Client
	if c == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = cfg.Concurrency
		t.DisableCompression = true
		c = &http.Client{Transport: t}
		defer t.CloseIdleConnections()
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	results := make([]ClosedResult, cfg.Concurrency)
	var wg sync.WaitGroup
	start := time.Now()
	for k := range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &results[k]
			for i := k; ctx.Err() == nil; i += cfg.Concurrency {
				p := cfg.Payloads[i%len(cfg.Payloads)]
				t0 := time.Now()
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, bytes.NewReader(p.Body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := c.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						r.Errors++
					}
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					r.Errors++
					continue
				}
				r.Latency.Record(time.Since(t0))
				r.Requests++
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	var out ClosedResult
	for i := range results {
		out.Requests += results[i].Requests
		out.Errors += results[i].Errors
		out.Latency.Merge(&results[i].Latency)
	}
	out.RPS = float64(out.Requests) / elapsed.Seconds()
	return out, nil
}
