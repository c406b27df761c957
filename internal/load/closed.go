package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sloserve/sloserve/internal/slo"
)

// ClosedConfig configures a closed-loop measurement: Concurrency clients each send a request,
// wait for its answer and send the next, for Duration. Closed loops measure capacity and the
// latency of an unloaded path; Run (open loop) measures latency under a given load.
type ClosedConfig struct {
	// URL is the full inference URL.
	URL string
	// URLs, when not empty, replaces URL with several equivalent inference URLs — gateway
	// replicas: client k starts on URLs[k mod len], and a request that never reached its
	// replica (connection refused: a replica that shut down) is sent again to the next one
	// (ClosedResult.Failovers). Requests carry an Idempotency-Key header, so the HTTP transport
	// also resends one written on a keep-alive connection the replica closed.
	URLs []string
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
	// Requests is the number of answers with status 200; Errors the others, answered or not.
	Requests, Errors int64
	// Lost counts the requests that got no HTTP answer at all (a transport error that no
	// failover could cover), a part of Errors.
	Lost int64
	// Failovers counts the requests resent to another of URLs after a refused connection.
	Failovers int64
	// Codes counts the answers by HTTP status code.
	Codes map[int]int64
	// RPS is Requests per second of Duration.
	RPS float64
	// Latency is the histogram of the 200 answers' latencies.
	Latency slo.Histogram
}

// Closed runs a closed-loop measurement.
func Closed(ctx context.Context, cfg ClosedConfig) (ClosedResult, error) {
	urls := cfg.URLs
	if len(urls) == 0 && cfg.URL != "" {
		urls = []string{cfg.URL}
	}
	if len(urls) == 0 || len(cfg.Payloads) == 0 || cfg.Concurrency < 1 || cfg.Duration <= 0 {
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
		wg.Go(func() { closedClient(ctx, c, urls, cfg.Payloads, k, cfg.Concurrency, &results[k]) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	out := ClosedResult{Codes: map[int]int64{}}
	for i := range results {
		out.Requests += results[i].Requests
		out.Errors += results[i].Errors
		out.Lost += results[i].Lost
		out.Failovers += results[i].Failovers
		for code, n := range results[i].Codes {
			out.Codes[code] += n
		}
		out.Latency.Merge(&results[i].Latency)
	}
	out.RPS = float64(out.Requests) / elapsed.Seconds()
	return out, nil
}

// closedClient is client k of Closed (of n): it sends payloads k, k+n, … until ctx ends, failing
// over between urls on refused connections, and records into r.
func closedClient(ctx context.Context, c *http.Client, urls []string, payloads []Payload, k, n int, r *ClosedResult) {
	r.Codes = map[int]int64{}
	u := k % len(urls)
	for i := k; ctx.Err() == nil; i += n {
		p := payloads[i%len(payloads)]
		t0 := time.Now()
		var resp *http.Response
		var err error
		for try := 0; try < len(urls); try++ {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, urls[u], bytes.NewReader(p.Body))
			req.Header.Set("Content-Type", "application/json")
			if len(urls) > 1 {
				req.Header.Set("Idempotency-Key", strconv.Itoa(k)+"-"+strconv.Itoa(i))
			}
			resp, err = c.Do(req)
			if err == nil || !refused(err) || len(urls) == 1 {
				break
			}
			u = (u + 1) % len(urls) // the replica is gone: this client moves to the next one
			r.Failovers++
		}
		if err != nil {
			if ctx.Err() == nil {
				r.Errors++
				r.Lost++
			}
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		r.Codes[resp.StatusCode]++
		if resp.StatusCode != http.StatusOK {
			r.Errors++
			continue
		}
		r.Latency.Record(time.Since(t0))
		r.Requests++
	}
}

// refused reports whether err means the request never reached a server: the connection was
// refused (nothing listens: a replica that closed its listeners).
func refused(err error) bool {
	var op *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || (errors.As(err, &op) && op.Op == "dial")
}
