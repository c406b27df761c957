package attack

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/app"
	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/chaos"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/load"
	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/trace"
	bundled "github.com/sloserve/sloserve/models"
)

// The batch attacks: what one client's requests can do to the others' through a model's queue,
// its batches and its admission, against real `sloserve worker` processes serving mlp256.

const attackModel = "mlp256"

// realStack starts the gateway with instances workers of mlp256 (policy pol, one slot each) from
// the sloserve binary at $SLOSERVE_BIN; it skips unless the attack suite runs.
func realStack(t *testing.T, instances int, pol string) *app.Stack {
	t.Helper()
	bin := needAttack(t)
	cfg := config.Default()
	cfg.Controller.Policy = config.ControllerNone
	cfg.Gateway.Addr = "127.0.0.1:0"
	cfg.Workers.Binary = bin
	cfg.Workers.StateDir = t.TempDir()
	if lib := os.Getenv("ONNXRUNTIME_LIB"); lib != "" {
		cfg.Workers.Runtime, cfg.Workers.ONNXRuntimeLib = "onnxruntime", lib
	}
	m := config.DefaultModel(attackModel)
	m.Instances = instances
	m.Slots = 1
	m.Batching.Policy = pol
	if pol == batching.PolicyFixed {
		m.Batching.MaxBatch, m.Batching.MaxWait = 1, 0
	}
	cfg.Models = []config.Model{m}
	st, err := app.Start(context.Background(), cfg, app.StackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	return st
}

// images returns n one-image request bodies of the bundled sample (JSON).
func images(t *testing.T, n int) []load.Payload {
	t.Helper()
	set, err := bundled.Sample()
	if err != nil {
		t.Fatal(err)
	}
	p, err := load.ImagePayloads(set, "input", n)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// rowsBody is a JSON request of rows rows of 784 values, with the given parameters.
func rowsBody(rows int, params string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{%s"inputs":[{"name":"input","datatype":"FP32","shape":[%d,784],"data":[`, params, rows)
	for i := range rows * 784 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(float64(i%256)/255, 'f', 3, 64))
	}
	b.WriteString(`]}]}`)
	return b.Bytes()
}

// post sends body (binary when headerLen ≥ 0) and returns the status code and the body.
func post(t *testing.T, url string, body []byte, headerLen int) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/v2/models/"+attackModel+"/infer", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if headerLen >= 0 {
		req.Header.Set(oip.HeaderInferenceHeaderLength, strconv.Itoa(headerLen))
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(res.Body, 512))
	return res.StatusCode, string(msg)
}

// After one in-limits request of 8,000 rows with latency_ms 60000, the next normal request
// answers 200 (before: 429 for every default-deadline request until a restart).
func TestAttackLargeRequestNoLockOut(t *testing.T) {
	st := realStack(t, 1, batching.PolicyMLProxy)
	one := images(t, 1)[0].Body
	for range 20 {
		if code, msg := post(t, st.URL, one, -1); code != http.StatusOK {
			t.Fatalf("warm-up: %d %s", code, msg)
		}
	}
	big := rowsBody(8000, `"parameters":{"latency_ms":60000},`)
	start := time.Now()
	code, msg := post(t, st.URL, big, -1)
	t.Logf("8,000-row request (%.1f MB): %d in %v", float64(len(big))/1e6, code, time.Since(start).Round(time.Millisecond))
	if code != http.StatusOK {
		t.Fatalf("8,000-row request with latency_ms 60000: %d %s", code, msg)
	}
	for i := range 50 {
		if code, msg := post(t, st.URL, one, -1); code != http.StatusOK {
			t.Fatalf("normal request %d after the large one: %d %s, want 200", i, code, msg)
		}
	}
}

// 20 requests carrying NaN (binary extension) among 300 normal ones: the NaN requests get 400,
// every normal one 200 (before: 40 of 300 innocent requests failed with 503, NaN ones 503).
func TestAttackNaNBatches(t *testing.T) {
	st := realStack(t, 1, batching.PolicyMLProxy)
	normal := images(t, 1)[0].Body
	nanBody := func() ([]byte, int) {
		head := []byte(`{"inputs":[{"name":"input","datatype":"FP32","shape":[1,784],"parameters":{"binary_data_size":3136}}]}`)
		b := append([]byte(nil), head...)
		for i := range 784 {
			v := float32(0.5)
			if i == 100 {
				v = float32(math.NaN())
			}
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
		return b, len(head)
	}
	var mu sync.Mutex
	codes := map[string]map[int]int{"nan": {}, "normal": {}}
	var wg sync.WaitGroup
	for c := range 10 { // 10 clients × 32 requests, 1 in 16 with NaN
		wg.Go(func() {
			for k := range 32 {
				kind, body, hl := "normal", normal, -1
				if (c*32+k)%16 == 5 {
					kind = "nan"
					body, hl = nanBody()
				}
				code, _ := post(t, st.URL, body, hl)
				mu.Lock()
				codes[kind][code]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("NaN requests: %v; normal requests: %v", codes["nan"], codes["normal"])
	if codes["nan"][http.StatusBadRequest] != 20 || codes["normal"][http.StatusOK] != 300 {
		t.Errorf("want 20 × 400 for NaN and 300 × 200 for normal requests")
	}
}

// One 5 MB request per second beside 150 rps of normal traffic: the normal traffic's attainment
// stays ≥ 0.99 (before: 0.79, the large request's batches were taken for a hung instance,
// benched it and were computed twice).
func TestAttackLargeRequestsBesideTraffic(t *testing.T) {
	st := realStack(t, 2, batching.PolicyMLProxy)
	dur := 20 * time.Second
	big := rowsBody(1000, `"parameters":{"latency_ms":10000},`) // ≈ 5 MB of JSON
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var bigCodes sync.Map
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				go func() {
					code, _ := post(t, st.URL, big, -1)
					v, _ := bigCodes.LoadOrStore(code, new(int64))
					*(v.(*int64))++
				}()
			}
		}
	}()
	res, err := load.Run(context.Background(), load.Config{Target: st.URL, Model: attackModel, Arrivals: trace.Poisson(150, 7),
		Duration: dur, MaxRequests: 1 << 20, Payloads: images(t, 50), SLO: config.DefaultModel(attackModel).SLO.Spec(),
		Policy: "mlproxy", Trace: "poisson-150"})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	bigCodes.Range(func(k, v any) bool { t.Logf("5 MB requests: %d × %v", *(v.(*int64)), k); return true })
	t.Logf("normal traffic (%.1f MB large requests beside): %d requests, attainment %.4f, p99 %.1f ms, codes %v",
		float64(len(big))/1e6, s.Requests, s.SLOAttainment, s.LatencyMS.P99, res.Codes)
	if s.SLOAttainment < 0.99 {
		t.Errorf("normal traffic's attainment %.4f beside one 5 MB request per second, want ≥ 0.99", s.SLOAttainment)
	}
}

// 10× overload on one worker, for the batching policies the issue measured: every request is
// answered once, and under 1 % of the admitted requests end in 504 (before: 23 % with mlproxy,
// 57 % with fixed batches of one, at 5,000 rps offered). So that one in-process load generator
// on this 2-core machine can offer ≥ 10× what the worker serves (past ~3,000 rps it saturates
// both cores itself, and its own queue, not the gateway, decides), the worker is made slower —
// a real process with real stalls, stopped (SIGSTOP/SIGCONT) 49 of every 50 ms for mlproxy, which
// batches (~200 rps served, offered 3,000), and 19 of every 20 ms for fixed batches of one (~90
// rps served, offered 1,200). The test fails if the overload factor reached is under 10.
func TestAttackOverloadAdmittedMeetDeadline(t *testing.T) {
	for _, c := range []struct {
		pol  string
		rate float64
		stop time.Duration // of every stop + 1 ms
	}{{batching.PolicyMLProxy, 3000, 49 * time.Millisecond}, {batching.PolicyFixed, 1200, 19 * time.Millisecond}} {
		t.Run(c.pol, func(t *testing.T) {
			pol, rate := c.pol, c.rate
			st := realStack(t, 1, pol)
			if v, err := strconv.ParseFloat(os.Getenv("SLOSERVE_ATTACK_RPS"), 64); err == nil && v > 0 {
				rate = v
			}
			dur := 10 * time.Second
			ctx, cancel := context.WithTimeout(context.Background(), dur+time.Second)
			defer cancel()
			go dutyCycle(ctx, t, st, c.stop, time.Millisecond)
			res, err := load.Run(context.Background(), load.Config{Target: st.URL, Model: attackModel,
				Arrivals: trace.Poisson(rate, 3), Duration: dur, MaxRequests: 1 << 20, Payloads: images(t, 50),
				SLO: config.DefaultModel(attackModel).SLO.Spec(), Policy: pol, Trace: "poisson", MaxInFlight: 4000})
			if err != nil {
				t.Fatal(err)
			}
			s := res.Summary
			admitted := s.Completed + s.Failed
			late := res.Codes[http.StatusGatewayTimeout]
			factor := float64(s.Requests) / float64(max(s.Completed, 1))
			t.Logf("%s, %.0f rps offered to a worker serving %.0f rps (overload ×%.1f): requests %d = completed %d + failed %d + rejected %d; codes %v",
				pol, rate, float64(s.Completed)/dur.Seconds(), factor, s.Requests, s.Completed, s.Failed, s.Rejected, res.Codes)
			t.Logf("%s: admitted then 504: %d of %d (%.2f %%); attainment of the admitted %.4f, p99 %.1f ms",
				pol, late, admitted, 100*float64(late)/float64(max(admitted, 1)), s.SLOAttainment*float64(s.Requests)/float64(max(admitted, 1)), s.LatencyMS.P99)
			if s.Requests != s.Completed+s.Failed+s.Rejected || res.Codes[0] != 0 {
				t.Errorf("lost requests: %d ≠ %d + %d + %d, %d without an answer", s.Requests, s.Completed, s.Failed, s.Rejected, res.Codes[0])
			}
			if factor < 10 {
				t.Errorf("overload ×%.1f: the scenario did not reach 10× (offered %d requests, served %d)", factor, s.Requests, s.Completed)
			}
			if float64(late) >= 0.01*float64(admitted) {
				t.Errorf("%d of %d admitted requests ended in 504, want under 1 %%", late, admitted)
			}
		})
	}
}

// dutyCycle stops every worker of st for stop and lets it run for run, until ctx ends.
func dutyCycle(ctx context.Context, t *testing.T, st *app.Stack, stop, run time.Duration) {
	target, ok := st.Provider.(chaos.Target)
	if !ok {
		t.Errorf("provider %T has no worker processes", st.Provider)
		return
	}
	insts, err := target.Instances(ctx)
	if err != nil {
		t.Errorf("instances: %v", err)
		return
	}
	var pids []int
	for _, in := range insts {
		if pid, ok := target.PID(in.ID); ok {
			pids = append(pids, pid)
		}
	}
	defer func() {
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGCONT)
		}
	}()
	for ctx.Err() == nil {
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGSTOP)
		}
		time.Sleep(stop)
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGCONT)
		}
		time.Sleep(run)
	}
}
