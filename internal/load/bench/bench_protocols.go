package bench

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
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/gateway"
	"github.com/sloserve/sloserve/internal/load"
	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/oipgrpc"
	pb "github.com/sloserve/sloserve/internal/oipgrpc/inferencepb"
	"github.com/sloserve/sloserve/internal/slo"
)

// Protocols Bench can compare through one gateway (BenchProtocols).
const (
	// ProtocolRESTJSON is REST with JSON in and out (the payloads as they are).
	ProtocolRESTJSON = "rest-json"
	// ProtocolRESTBinary is REST with the binary tensor extension in and out
	// (Inference-Header-Content-Length, binary_data_output), as tritonclient sends it.
	ProtocolRESTBinary = "rest-binary"
	// ProtocolGRPCRaw is gRPC ModelInfer with raw_input_contents (raw out).
	ProtocolGRPCRaw = "grpc-raw"
)

// Protocols lists the protocols BenchProtocols knows, in the order it measures them.
var Protocols = []string{ProtocolRESTJSON, ProtocolRESTBinary, ProtocolGRPCRaw}

// ProtocolBenchConfig configures BenchProtocols.
type ProtocolBenchConfig struct {
	// Worker is the base URL of a running OIP v2 worker serving Model.
	Worker string
	// Model is the model to request.
	Model string
	// Payloads are JSON request bodies; each is also sent re-encoded for the other protocols.
	Payloads []load.Payload
	// Protocols are the protocols to measure (Protocols' names); empty means all.
	Protocols []string
	// Concurrency is the number of closed-loop clients; default 16.
	Concurrency int
	// Duration is the length of each measurement; default 2 s.
	Duration time.Duration
	// Rounds repeats the protocols in turn (figures are medians over rounds); default 5.
	Rounds int
}

// ProtocolBenchResult is the throughput of each protocol through the same gateway and worker.
type ProtocolBenchResult struct {
	// RPS maps a protocol to its answered requests per second (median over rounds).
	RPS map[string]float64 `json:"rps"`
	// ToRESTJSON maps a protocol to its RPS divided by rest-json's (when rest-json was measured).
	ToRESTJSON map[string]float64 `json:"to_rest_json"`
	// Errors counts the requests answered with an error, over all rounds, per protocol.
	Errors map[string]int64 `json:"errors"`
	// FirstError is the first failure's text per protocol, to tell why.
	FirstError  map[string]string `json:"first_error,omitempty"`
	Concurrency int               `json:"concurrency"`
	Rounds      int               `json:"rounds"`
}

// BenchProtocols measures the throughput of the gateway's front protocols: it starts, in this
// process, a gateway (none policy, the worker as its one instance taking Concurrency batches at
// once) with its REST handler and gRPC server on loopback, and drives each protocol with
// Concurrency closed-loop clients for Duration, in turn, Rounds times. The worker hop is the same
// for all (binary), so the differences are the front protocol's encoding and transport.
func BenchProtocols(ctx context.Context, cfg ProtocolBenchConfig) (ProtocolBenchResult, error) {
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 16
	}
	if cfg.Duration == 0 {
		cfg.Duration = 2 * time.Second
	}
	if cfg.Rounds == 0 {
		cfg.Rounds = 5
	}
	if len(cfg.Protocols) == 0 {
		cfg.Protocols = Protocols
	}
	if cfg.Concurrency < 1 || cfg.Duration < 0 || cfg.Rounds < 1 || len(cfg.Payloads) == 0 {
		return ProtocolBenchResult{}, errors.New("bench: need concurrency ≥ 1, duration ≥ 0, rounds ≥ 1 and payloads")
	}
	g, err := gateway.New(gateway.Options{})
	if err != nil {
		return ProtocolBenchResult{}, err
	}
	defer g.Close(context.Background())
	if err := g.AddModel(gateway.Model{Name: cfg.Model, SLO: slo.Spec{Threshold: time.Minute, Target: 0.99},
		Policy: batching.NewNone(), Slots: cfg.Concurrency, QueueLimit: 4 * cfg.Concurrency}); err != nil {
		return ProtocolBenchResult{}, err
	}
	if err := g.AddInstance(ctx, cfg.Model, gateway.Instance{ID: "bench", Addr: cfg.Worker}); err != nil {
		return ProtocolBenchResult{}, err
	}
	h, err := g.Handler(gateway.HandlerOptions{})
	if err != nil {
		return ProtocolBenchResult{}, err
	}
	restURL, stopREST, err := serve(h)
	if err != nil {
		return ProtocolBenchResult{}, err
	}
	defer stopREST()
	gs, err := oipgrpc.NewServer(g, oipgrpc.Options{})
	if err != nil {
		return ProtocolBenchResult{}, err
	}
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return ProtocolBenchResult{}, err
	}
	go gs.Serve(gln)
	defer gs.Stop()
	// One connection per client, as REST's transport keeps one per client in flight and
	// perf_analyzer opens one per concurrent client: a single HTTP/2 connection would serialise
	// every client on its one reader and writer.
	stubs := make([]pb.GRPCInferenceServiceClient, cfg.Concurrency)
	for i := range stubs {
		conn, err := grpc.NewClient(gln.Addr().String(),
			append(oipgrpc.WindowOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
		if err != nil {
			return ProtocolBenchResult{}, err
		}
		defer conn.Close()
		stubs[i] = pb.NewGRPCInferenceServiceClient(conn)
	}

	senders := map[string]func(ctx context.Context, i int) error{}
	hc := &http.Client{Transport: oip.NewTransport()}
	inferURL := restURL + "/v2/models/" + cfg.Model + "/infer"
	post := func(ctx context.Context, body []byte, headerLen int) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, inferURL, bytes.NewReader(body))
		if err != nil {
			return err
		}
		if headerLen >= 0 {
			req.Header.Set("Content-Type", "application/octet-stream")
			req.Header.Set(oip.HeaderInferenceHeaderLength, strconv.Itoa(headerLen))
		} else {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := hc.Do(req)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if err == nil && res.StatusCode != http.StatusOK {
			err = fmt.Errorf("HTTP %d", res.StatusCode)
		}
		return err
	}
	n := len(cfg.Payloads)
	senders[ProtocolRESTJSON] = func(ctx context.Context, i int) error { return post(ctx, cfg.Payloads[i%n].Body, -1) }
	bins, heads := make([][]byte, n), make([]int, n)
	raws := make([]*pb.ModelInferRequest, n)
	for i, p := range cfg.Payloads {
		req, err := oip.DecodeRequest(p.Body, oip.DefaultLimits())
		if err != nil {
			return ProtocolBenchResult{}, fmt.Errorf("bench: payload %d: %w", i, err)
		}
		if raws[i], err = oipgrpc.EncodeRequest(cfg.Model, "", req, true); err != nil {
			return ProtocolBenchResult{}, fmt.Errorf("bench: payload %d: %w", i, err)
		}
		req.Parameters = oip.Parameters{"binary_data_output": true}
		if bins[i], heads[i], err = oip.AppendRequestBinary(nil, req); err != nil {
			return ProtocolBenchResult{}, fmt.Errorf("bench: payload %d: %w", i, err)
		}
	}
	senders[ProtocolRESTBinary] = func(ctx context.Context, i int) error { return post(ctx, bins[i%n], heads[i%n]) }
	senders[ProtocolGRPCRaw] = func(ctx context.Context, i int) error {
		_, err := stubs[i%cfg.Concurrency].ModelInfer(ctx, raws[i%n])
		return err
	}
	for _, p := range cfg.Protocols {
		if senders[p] == nil {
			return ProtocolBenchResult{}, fmt.Errorf("bench: unknown protocol %q (have %v)", p, Protocols)
		}
		if err := senders[p](ctx, 0); err != nil { // fail fast on a broken path
			return ProtocolBenchResult{}, fmt.Errorf("bench: %s: %w", p, err)
		}
	}
	rps := map[string][]float64{}
	r := ProtocolBenchResult{RPS: map[string]float64{}, ToRESTJSON: map[string]float64{}, Errors: map[string]int64{},
		FirstError: map[string]string{}, Concurrency: cfg.Concurrency, Rounds: cfg.Rounds}
	for range cfg.Rounds {
		for _, p := range cfg.Protocols {
			v, errs, first := closedLoop(ctx, cfg.Concurrency, cfg.Duration, senders[p])
			rps[p] = append(rps[p], v)
			r.Errors[p] += errs
			if first != nil && r.FirstError[p] == "" {
				r.FirstError[p] = first.Error()
			}
		}
		if err := ctx.Err(); err != nil {
			return ProtocolBenchResult{}, err
		}
	}
	for p, xs := range rps {
		r.RPS[p] = median(xs)
	}
	if base := r.RPS[ProtocolRESTJSON]; base > 0 {
		for p, v := range r.RPS {
			r.ToRESTJSON[p] = v / base
		}
	}
	return r, nil
}

// closedLoop runs conc clients calling send back to back for d and returns the successful calls
// per second, the number of failed calls and the first failure.
func closedLoop(ctx context.Context, conc int, d time.Duration, send func(ctx context.Context, i int) error) (float64, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var ok, failed atomic.Int64
	var first atomic.Pointer[error]
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(d)
	// The loop ends at end by the clock, not by ctx.Err(): gRPC fails a call at once when its
	// deadline has passed by the clock, before the context's timer has fired.
	for c := range conc {
		wg.Go(func() {
			for i := c; ctx.Err() == nil && time.Now().Before(end); i += conc {
				if err := send(ctx, i); err != nil {
					if ctx.Err() == nil && time.Now().Before(end) {
						failed.Add(1)
						first.CompareAndSwap(nil, &err)
					}
					continue
				}
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	var firstErr error
	if p := first.Load(); p != nil {
		firstErr = *p
	}
	return float64(ok.Load()) / time.Since(start).Seconds(), failed.Load(), firstErr
}
