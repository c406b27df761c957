package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"time"

	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/gateway"
	"github.com/sloserve/sloserve/internal/load"
	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/slo"
)

// BenchConfig configures Bench.
type BenchConfig struct {
	// Worker is the base URL of a running OIP v2 worker serving Model.
	Worker string
	// Model is the model to request.
	Model string
	// Payloads are the request bodies, sent in turn.
	Payloads []load.Payload
	// Concurrency is the number of closed-loop clients of the throughput measurements; default 16.
	Concurrency int
	// Duration is the length of each throughput measurement; default 2 s.
	Duration time.Duration
	// LatencyDuration is the length of each latency measurement (one client); default 1 s.
	LatencyDuration time.Duration
	// Rounds repeats the three paths in turn, so that machine noise hits them alike; every
	// figure is the median over rounds; default 5.
	Rounds int
}

// BenchResult compares three paths to the same worker: direct, through the gateway with
// batching off, and through a bare httputil.ReverseProxy.
type BenchResult struct {
	DirectRPS     float64 `json:"direct_rps"`
	GatewayRPS    float64 `json:"gateway_rps"`
	PlainProxyRPS float64 `json:"plain_proxy_rps"`
	// GatewayToProxy is GatewayRPS / PlainProxyRPS.
	GatewayToProxy float64 `json:"gateway_to_proxy_rps_ratio"`
	// Latencies at one client, in milliseconds.
	DirectP50MS     float64 `json:"direct_p50_ms"`
	DirectP99MS     float64 `json:"direct_p99_ms"`
	GatewayP50MS    float64 `json:"gateway_p50_ms"`
	GatewayP99MS    float64 `json:"gateway_p99_ms"`
	PlainProxyP50MS float64 `json:"plain_proxy_p50_ms"`
	PlainProxyP99MS float64 `json:"plain_proxy_p99_ms"`
	// AddedP50MS and AddedP99MS are the gateway's latency minus the direct latency, measured
	// back to back in each round (median over rounds).
	AddedP50MS float64 `json:"added_p50_ms"`
	AddedP99MS float64 `json:"added_p99_ms"`
	// ProxyAddedP50MS is the plain proxy's latency minus the direct latency, for reference.
	ProxyAddedP50MS float64 `json:"plain_proxy_added_p50_ms"`
	Concurrency     int     `json:"concurrency"`
	// Rounds is the number of rounds; every figure is a median over them.
	Rounds int `json:"rounds"`
}

// median returns the median of xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Bench measures the gateway's cost: it starts, in this process, a gateway with the none policy
// and one instance (the worker) that takes Concurrency batches at once — the same concurrency a
// plain proxy passes through — and a bare httputil.ReverseProxy, then measures throughput
// (Concurrency closed-loop clients) and one-client latency of the direct path and both proxies.
func Bench(ctx context.Context, cfg BenchConfig) (BenchResult, error) {
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 16
	}
	if cfg.Duration == 0 {
		cfg.Duration = 2 * time.Second
	}
	if cfg.LatencyDuration == 0 {
		cfg.LatencyDuration = time.Second
	}
	if cfg.Rounds == 0 {
		cfg.Rounds = 5
	}
	if cfg.Concurrency < 1 || cfg.Duration < 0 || cfg.LatencyDuration < 0 || cfg.Rounds < 1 || len(cfg.Payloads) == 0 {
		return BenchResult{}, errors.New("bench: need concurrency ≥ 1, durations ≥ 0, rounds ≥ 1 and payloads")
	}
	g, err := gateway.New(gateway.Options{})
	if err != nil {
		return BenchResult{}, err
	}
	defer g.Close(context.Background())
	if err := g.AddModel(gateway.Model{Name: cfg.Model, SLO: slo.Spec{Threshold: time.Minute, Target: 0.99},
		Policy: batching.NewNone(), Slots: cfg.Concurrency, QueueLimit: 4 * cfg.Concurrency}); err != nil {
		return BenchResult{}, err
	}
	if err := g.AddInstance(ctx, cfg.Model, gateway.Instance{ID: "bench", Addr: cfg.Worker}); err != nil {
		return BenchResult{}, err
	}
	h, err := g.Handler(gateway.HandlerOptions{})
	if err != nil {
		return BenchResult{}, err
	}
	gwURL, stopGW, err := serve(h)
	if err != nil {
		return BenchResult{}, err
	}
	defer stopGW()
	target, err := url.Parse(cfg.Worker)
	if err != nil {
		return BenchResult{}, fmt.Errorf("bench: worker url: %w", err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = oip.NewTransport()
	rp.ErrorLog = log.New(io.Discard, "", 0) // cancelled requests at the end of each run
	pxURL, stopPX, err := serve(rp)
	if err != nil {
		return BenchResult{}, err
	}
	defer stopPX()

	path := "/v2/models/" + cfg.Model + "/infer"
	bases := []string{cfg.Worker, gwURL, pxURL}
	// Each round measures the three paths back to back; the machine's noise (other processes)
	// moves between rounds, so each figure is the median over rounds, and the added latency is
	// the median of the per-round differences.
	var rps, p50, p99 [3][]float64
	var added50, added99, proxy50 []float64
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for range cfg.Rounds {
		var r50, r99 [3]float64
		for i, base := range bases {
			lr, err := load.Closed(ctx, load.ClosedConfig{URL: base + path, Payloads: cfg.Payloads, Concurrency: 1, Duration: cfg.LatencyDuration})
			if err != nil {
				return BenchResult{}, err
			}
			if lr.Requests == 0 {
				return BenchResult{}, fmt.Errorf("bench: every request to %s failed", base)
			}
			r50[i], r99[i] = ms(lr.Latency.Quantile(0.5)), ms(lr.Latency.Quantile(0.99))
			p50[i], p99[i] = append(p50[i], r50[i]), append(p99[i], r99[i])
		}
		added50 = append(added50, r50[1]-r50[0])
		added99 = append(added99, r99[1]-r99[0])
		proxy50 = append(proxy50, r50[2]-r50[0])
		for i, base := range bases {
			tr, err := load.Closed(ctx, load.ClosedConfig{URL: base + path, Payloads: cfg.Payloads, Concurrency: cfg.Concurrency, Duration: cfg.Duration})
			if err != nil {
				return BenchResult{}, err
			}
			rps[i] = append(rps[i], tr.RPS)
		}
		if err := ctx.Err(); err != nil {
			return BenchResult{}, err
		}
	}
	r := BenchResult{
		DirectRPS: median(rps[0]), GatewayRPS: median(rps[1]), PlainProxyRPS: median(rps[2]), Concurrency: cfg.Concurrency,
		DirectP50MS: median(p50[0]), DirectP99MS: median(p99[0]),
		GatewayP50MS: median(p50[1]), GatewayP99MS: median(p99[1]),
		PlainProxyP50MS: median(p50[2]), PlainProxyP99MS: median(p99[2]),
		AddedP50MS: median(added50), AddedP99MS: median(added99), ProxyAddedP50MS: median(proxy50),
		Rounds: cfg.Rounds,
	}
	if r.PlainProxyRPS > 0 {
		r.GatewayToProxy = r.GatewayRPS / r.PlainProxyRPS
	}
	return r, nil
}

// serve runs h on a loopback listener and returns its base URL and a stop function.
func serve(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := gateway.NewServer(h, gateway.ServerOptions{})
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), func() { srv.Close() }, nil
}
