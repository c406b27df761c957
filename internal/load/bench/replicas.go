package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sloserve/sloserve/internal/load"
)

// ReplicasConfig configures BenchReplicas.
type ReplicasConfig struct {
	// Binary is the sloserve executable run as `serve`; "" means this executable.
	Binary string
	// Env is added to the gateways' environment.
	Env []string
	// Workers are the base URLs of running workers serving Model, shared by every gateway.
	Workers []string
	// Model is the model to request.
	Model string
	// Slots is the batches each gateway sends one worker at once (the model's slots); the
	// workers' own --max-in-flight should be the same, so that one gateway alone can fill them.
	Slots int
	// Policy is the model's batching policy in the gateways (e.g. mlproxy, fixed, none).
	Policy string
	// Threshold is the model's SLO threshold (each request's deadline).
	Threshold time.Duration
	// Replicas is the largest number of gateway processes: 1, 2, … Replicas are measured.
	Replicas int
	// Payloads are the request bodies, sent in turn.
	Payloads []load.Payload
	// Concurrency is the number of closed-loop clients per replica measured: n replicas are
	// driven by n × Concurrency clients, so that each sees the load one replica alone saw (a
	// fixed total spread thinner would leave each replica's batches short of their size, and
	// measure the batching timeout rather than capacity).
	Concurrency int
	// Duration is the length of one measurement.
	Duration time.Duration
	// Rounds repeats the measurements of 1…Replicas in turn; figures are medians over rounds.
	Rounds int
	// Stderr receives the gateways' logs; nil discards them.
	Stderr io.Writer
}

// ReplicaPoint is the measurement of n gateway replicas.
type ReplicaPoint struct {
	Replicas int     `json:"replicas"`
	RPS      float64 `json:"rps"`
	// ToOne is RPS divided by the RPS of one replica.
	ToOne float64 `json:"to_one_replica"`
	P50MS float64 `json:"p50_ms"`
	P99MS float64 `json:"p99_ms"`
	// Errors counts the answers other than 200 over all rounds, Rejected the 429s among them
	// (the workers' slots, shared by the replicas, were all busy), Lost the requests not
	// answered at all.
	Errors   int64 `json:"errors"`
	Rejected int64 `json:"rejected_429"`
	Lost     int64 `json:"lost"`
}

// ReplicasResult is BenchReplicas' answer.
type ReplicasResult struct {
	Points      []ReplicaPoint `json:"points"`
	Workers     int            `json:"workers"`
	Slots       int            `json:"slots"`
	Concurrency int            `json:"concurrency"`
	Rounds      int            `json:"rounds"`
}

// BenchReplicas measures how throughput grows with gateway replicas (issue #19): it starts
// Replicas `sloserve serve --instances` processes on loopback, all attached to the same Workers,
// and in each round drives 1, 2, … Replicas of them in turn with n × Concurrency closed-loop
// clients (client k on replica k mod n). The replicas share the workers' slots through the workers' own
// limits (a worker's 429 is bounced by the gateway, internal/batcher/busy.go).
func BenchReplicas(ctx context.Context, cfg ReplicasConfig) (ReplicasResult, error) {
	if cfg.Replicas < 1 || len(cfg.Workers) == 0 || len(cfg.Payloads) == 0 || cfg.Concurrency < 1 || cfg.Duration <= 0 || cfg.Rounds < 1 || cfg.Slots < 1 {
		return ReplicasResult{}, errors.New("bench replicas: need replicas ≥ 1, workers, payloads, concurrency ≥ 1, duration > 0, rounds ≥ 1, slots ≥ 1")
	}
	dir, err := os.MkdirTemp("", "sloserve-bench-replicas-")
	if err != nil {
		return ReplicasResult{}, err
	}
	defer os.RemoveAll(dir)
	conf := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(conf, []byte(replicaConfig(cfg)), 0o600); err != nil {
		return ReplicasResult{}, err
	}
	var insts []string
	for _, w := range cfg.Workers {
		insts = append(insts, cfg.Model+"="+w)
	}
	args := []string{"--config", conf, "--instances", strings.Join(insts, ","), "--log-level", "warn"}
	var urls []string
	for range cfg.Replicas {
		g, err := StartGateway(ctx, cfg.Binary, args, cfg.Env, cfg.Stderr, 60*time.Second)
		if err != nil {
			return ReplicasResult{}, fmt.Errorf("bench replicas: %w", err)
		}
		defer g.Terminate(30 * time.Second)
		urls = append(urls, g.URL+"/v2/models/"+cfg.Model+"/infer")
	}
	return measureReplicas(ctx, cfg, urls)
}

// measureReplicas runs the rounds over the first 1…len(urls) replicas.
func measureReplicas(ctx context.Context, cfg ReplicasConfig, urls []string) (ReplicasResult, error) {
	out := ReplicasResult{Workers: len(cfg.Workers), Slots: cfg.Slots, Concurrency: cfg.Concurrency, Rounds: cfg.Rounds}
	rps, p50, p99 := make([][]float64, len(urls)), make([][]float64, len(urls)), make([][]float64, len(urls))
	points := make([]ReplicaPoint, len(urls))
	// A short warm-up through every replica: connections, metadata, the batchers' estimates.
	if _, err := load.Closed(ctx, load.ClosedConfig{URLs: urls, Payloads: cfg.Payloads, Concurrency: len(urls) * cfg.Concurrency, Duration: cfg.Duration / 2}); err != nil {
		return out, err
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for range cfg.Rounds {
		for n := 1; n <= len(urls); n++ {
			r, err := load.Closed(ctx, load.ClosedConfig{URLs: urls[:n], Payloads: cfg.Payloads, Concurrency: n * cfg.Concurrency, Duration: cfg.Duration})
			if err != nil {
				return out, err
			}
			rps[n-1] = append(rps[n-1], r.RPS)
			p50[n-1] = append(p50[n-1], ms(r.Latency.Quantile(0.5)))
			p99[n-1] = append(p99[n-1], ms(r.Latency.Quantile(0.99)))
			points[n-1].Errors += r.Errors
			points[n-1].Rejected += r.Codes[429]
			points[n-1].Lost += r.Lost
		}
		if err := ctx.Err(); err != nil {
			return out, err
		}
	}
	for i := range points {
		points[i].Replicas, points[i].RPS = i+1, median(rps[i])
		points[i].P50MS, points[i].P99MS = median(p50[i]), median(p99[i])
		if points[0].RPS > 0 {
			points[i].ToOne = points[i].RPS / points[0].RPS
		}
	}
	out.Points = points
	return out, nil
}

// replicaConfig is the gateways' configuration: the model with its slots, policy and SLO on a
// free loopback port.
func replicaConfig(cfg ReplicasConfig) string {
	return fmt.Sprintf(`gateway:
  addr: 127.0.0.1:0
models:
  - name: %s
    slo: {threshold: %s, target: 0.99}
    slots: %d
    queue_limit: 4096
    batching:
      policy: %s
`, cfg.Model, cfg.Threshold, cfg.Slots, cfg.Policy)
}
