package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
	// Replicas is the largest number of gateway processes: 1, 2, … Replicas are measured,
	// unless Counts names the numbers to measure (increasing, each in [1, Replicas]).
	Replicas int
	Counts   []int
	// GatewayProcs, when > 0, is each gateway's GOMAXPROCS: one replica is one machine's
	// share of cores, so that adding replicas adds cores rather than goroutines on the same ones.
	GatewayProcs int
	// WorkerPIDs are the workers' process ids, whose CPU seconds are reported with the gateways'
	// and the load generator's (0 entries or none: not reported).
	WorkerPIDs []int
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
	// CPU seconds used per measurement (means over rounds) by each of the Replicas gateways,
	// by the workers together and by the load generator (this process), and the measurement's
	// wall seconds: where the machine's cores went.
	GatewayCPU []float64 `json:"gateway_cpu_s"`
	WorkerCPU  float64   `json:"worker_cpu_s"`
	LoadCPU    float64   `json:"load_cpu_s"`
	WallS      float64   `json:"wall_s"`
}

// ReplicasResult is BenchReplicas' answer.
type ReplicasResult struct {
	Points      []ReplicaPoint `json:"points"`
	Workers     int            `json:"workers"`
	Slots       int            `json:"slots"`
	Concurrency int            `json:"concurrency"`
	Rounds      int            `json:"rounds"`
	// GatewayProcs is each gateway's GOMAXPROCS (0: Go's default, every core).
	GatewayProcs int `json:"gateway_gomaxprocs"`
}

// BenchReplicas measures how throughput grows with gateway replicas (issue #19): it starts
// Replicas `sloserve serve --instances` processes on loopback, all attached to the same Workers,
// and in each round drives 1, 2, … Replicas of them in turn with n × Concurrency closed-loop
// clients (client k on replica k mod n). The replicas share the workers' slots through the workers' own
// limits (a worker's 429 is bounced by the gateway, internal/batcher/busy.go).
func BenchReplicas(ctx context.Context, cfg ReplicasConfig) (ReplicasResult, error) {
	if len(cfg.Counts) == 0 {
		for n := 1; n <= cfg.Replicas; n++ {
			cfg.Counts = append(cfg.Counts, n)
		}
	}
	for i, n := range cfg.Counts {
		if n < 1 || n > cfg.Replicas || (i > 0 && n <= cfg.Counts[i-1]) {
			return ReplicasResult{}, fmt.Errorf("bench replicas: counts %v must increase within [1, %d]", cfg.Counts, cfg.Replicas)
		}
	}
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
	env := cfg.Env
	if cfg.GatewayProcs > 0 {
		env = append(slices.Clone(env), "GOMAXPROCS="+strconv.Itoa(cfg.GatewayProcs))
	}
	var urls []string
	meter := cpuMeter{workers: cfg.WorkerPIDs}
	for range cfg.Replicas {
		g, err := StartGateway(ctx, cfg.Binary, args, env, cfg.Stderr, 60*time.Second)
		if err != nil {
			return ReplicasResult{}, fmt.Errorf("bench replicas: %w", err)
		}
		defer g.Terminate(30 * time.Second)
		urls = append(urls, g.URL+"/v2/models/"+cfg.Model+"/infer")
		meter.gateways = append(meter.gateways, g.PID())
	}
	return measureReplicas(ctx, cfg, urls, meter)
}

// measureReplicas runs the rounds over the first n replicas for each n of cfg.Counts.
func measureReplicas(ctx context.Context, cfg ReplicasConfig, urls []string, meter cpuMeter) (ReplicasResult, error) {
	out := ReplicasResult{Workers: len(cfg.Workers), Slots: cfg.Slots, Concurrency: cfg.Concurrency, Rounds: cfg.Rounds, GatewayProcs: cfg.GatewayProcs}
	k := len(cfg.Counts)
	rps, p50, p99 := make([][]float64, k), make([][]float64, k), make([][]float64, k)
	points := make([]ReplicaPoint, k)
	for i := range points {
		points[i].GatewayCPU = make([]float64, len(urls))
	}
	// A short warm-up through every replica: connections, metadata, the batchers' estimates.
	if _, err := load.Closed(ctx, load.ClosedConfig{URLs: urls, Payloads: cfg.Payloads, Concurrency: len(urls) * cfg.Concurrency, Duration: cfg.Duration / 2}); err != nil {
		return out, err
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for range cfg.Rounds {
		for i, n := range cfg.Counts {
			c0, t0 := meter.sample(), time.Now()
			r, err := load.Closed(ctx, load.ClosedConfig{URLs: urls[:n], Payloads: cfg.Payloads, Concurrency: n * cfg.Concurrency, Duration: cfg.Duration})
			if err != nil {
				return out, err
			}
			c1, wall := meter.sample(), time.Since(t0).Seconds()
			rounds := float64(cfg.Rounds)
			for g := range c1.gateways {
				points[i].GatewayCPU[g] += (c1.gateways[g] - c0.gateways[g]) / rounds
			}
			points[i].WorkerCPU += (c1.workers - c0.workers) / rounds
			points[i].LoadCPU += (c1.self - c0.self) / rounds
			points[i].WallS += wall / rounds
			rps[i] = append(rps[i], r.RPS)
			p50[i] = append(p50[i], ms(r.Latency.Quantile(0.5)))
			p99[i] = append(p99[i], ms(r.Latency.Quantile(0.99)))
			points[i].Errors += r.Errors
			points[i].Rejected += r.Codes[429]
			points[i].Lost += r.Lost
		}
		if err := ctx.Err(); err != nil {
			return out, err
		}
	}
	for i := range points {
		points[i].Replicas, points[i].RPS = cfg.Counts[i], median(rps[i])
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
