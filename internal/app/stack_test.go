package app

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/gateway/gatewaytest"
	"github.com/sloserve/sloserve/internal/oipgrpc"
)

// The test binary doubles as a worker for Start: with GATEWAY_FAKE_WORKER=1,
// `<test binary> worker --addr A --models m ...` serves model m (y = row sums of x [N,2]).
func TestMain(m *testing.M) {
	if os.Getenv("GATEWAY_FAKE_WORKER") == "1" {
		os.Exit(fakeWorkerMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func fakeWorkerMain(args []string) int {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "")
	fs.String("models", "", "")
	fs.String("runtime", "", "")
	fs.Int("threads", 1, "")       // the local provider passes an INFless instance's threads
	fs.String("cpu-share", "", "") // and a function's share of a vCPU
	fs.Duration("min-row-time", 0, "")
	fs.Int("max-in-flight", 0, "")
	if len(args) == 0 || fs.Parse(args[1:]) != nil {
		return 2
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return 1
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	srv := &http.Server{Handler: fakeWorkerHandler()}
	go srv.Serve(ln)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig
	srv.Close()
	return 0
}

// fakeWorkerHandler serves model m over OIP v2 REST: y = row sums of x [N,2].
func fakeWorkerHandler() http.Handler { return gatewaytest.SumWorker("100", true) }

// localStackConfig is the configuration of the tests that start real worker processes (this test
// binary, with GATEWAY_FAKE_WORKER=1 in StackOptions.Env): the gateway on a free port, fast syncs
// and health checks, a static fleet (controller none) unless the test picks a policy, and models.
func localStackConfig(models ...config.Model) config.Config {
	cfg := config.Default()
	cfg.Gateway.Addr = "127.0.0.1:0"
	cfg.Gateway.SyncInterval = 20 * time.Millisecond
	cfg.Workers.Binary = os.Args[0]
	cfg.Workers.HealthInterval = 50 * time.Millisecond
	cfg.Controller.Policy = config.ControllerNone
	cfg.Models = models
	return cfg
}

func TestStartServesThroughLocalWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	m := config.DefaultModel("m")
	m.Instances = 2
	m.Batching.Policy = batching.PolicyFixed
	m.Batching.MaxBatch = 4
	m.Batching.MaxWait = 5 * time.Millisecond
	cfg := localStackConfig(m)
	cfg.Gateway.GRPCAddr = "127.0.0.1:0"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := Start(ctx, cfg, StackOptions{Env: []string{"GATEWAY_FAKE_WORKER=1"}})
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := st.Gateway.Instances("m")
	if len(ids) != 2 {
		t.Errorf("instances (-want +got): -2 +%d", len(ids))
	}
	postOnes(t, st.URL, 8)
	// The same core over gRPC.
	gc, err := oipgrpc.Dial(st.GRPCAddr, oipgrpc.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gr, err := gc.Infer(ctx, "m", "", request("grpc", 2))
	gc.Close()
	if err != nil || len(gr.Outputs) != 1 || fmt.Sprint(gr.Outputs[0].FP32) != "[1 5]" || gr.ID != "grpc" {
		t.Errorf("gRPC infer: %+v, %v; want id grpc and y = [1 5]", gr, err)
	}
	resp, err := http.Get(st.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(mb, []byte(`sloserve_requests_total{model="m",outcome="ok"} 9`)) {
		t.Errorf("/metrics does not count 9 ok requests (8 REST, 1 gRPC)")
	}
	// An instance the provider terminates leaves the gateway; the other keeps serving.
	insts, _ := st.Provider.Instances(ctx)
	victim := insts[0]
	if err := st.Provider.Terminate(ctx, victim.ID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if ids, _ := st.Gateway.Instances("m"); len(ids) == 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ids, _ := st.Gateway.Instances("m"); len(ids) != 1 || ids[0] == victim.ID {
		t.Errorf("after terminating %s the gateway has %v, want the other instance only", victim.ID, ids)
	}
	if _, err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if left, _ := st.Provider.Instances(ctx); len(left) != 0 {
		t.Errorf("instances left after Close: %v", left)
	}
}

// postOnes posts n one-row requests for model "m" to url's REST endpoint and checks that each
// is answered 200 with y = [1] (the fake worker's answer).
func postOnes(t *testing.T, url string, n int) {
	t.Helper()
	for i := range n {
		resp, err := http.Post(url+"/v2/models/m/infer", "application/json", bytes.NewReader(body(fmt.Sprint(i), 1, "")))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"data":[1]`)) {
			t.Errorf("request %d: %d %s, want 200 with y = [1]", i, resp.StatusCode, b)
		}
	}
}
