package gateway

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/slo"
)

// One client must not be able to hurt another's requests: these tests replay, at unit scale,
// the attacks of the "one client cannot hurt another" issue.

// rowBackend serves a batch in fixed + perRow·rows of (virtual) time, answers 400 for any batch
// holding a request whose id is in refuse, and records every batch's ids per address. Ready
// answers nil unless the address is in dead (Checker).
type rowBackend struct {
	fixed, perRow time.Duration
	refuse        map[string]bool
	dead          map[string]bool
	extra         map[string]time.Duration // extra time per address

	mu      sync.Mutex
	batches map[string][][]string
}

var _ Checker = (*rowBackend)(nil)

func (f *rowBackend) Infer(ctx context.Context, addr, model string, reqs []*oip.InferenceRequest) ([]*oip.InferenceResponse, error) {
	var rows int64
	ids := make([]string, len(reqs))
	bad := false
	for i, r := range reqs {
		n, _ := oip.Rows(r)
		rows += n
		ids[i] = r.ID
		bad = bad || f.refuse[r.ID]
	}
	f.mu.Lock()
	if f.batches == nil {
		f.batches = map[string][][]string{}
	}
	f.batches[addr] = append(f.batches[addr], ids)
	extra := f.extra[addr]
	f.mu.Unlock()
	if bad {
		return nil, &oip.StatusError{Code: http.StatusBadRequest, Message: "input refused"}
	}
	t := time.NewTimer(f.fixed + time.Duration(rows)*f.perRow + extra)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	out := make([]*oip.InferenceResponse, len(reqs))
	for i, r := range reqs {
		out[i] = &oip.InferenceResponse{ModelName: model, ID: r.ID}
	}
	return out, nil
}

func (f *rowBackend) Metadata(ctx context.Context, addr, model string) (*oip.ModelMetadata, error) {
	return testMetadata(), nil
}

func (f *rowBackend) Ready(ctx context.Context, addr string) error {
	if f.dead[addr] {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (f *rowBackend) sent(addr string) [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]string(nil), f.batches[addr]...)
}

// infer sends one request of rows rows with the given timeout (0: the SLO) and returns its error.
func infer(g *Gateway, id string, rows int, timeout time.Duration) error {
	_, err := g.Infer(context.Background(), &oip.Call{Model: "m", Request: request(id, rows), Arrival: time.Now(),
		SLO: oip.RequestSLO{Timeout: timeout}})
	return err
}

// After one in-limits request of 8,000 rows with a 60 s budget, whose batch takes 2.4 s, the
// next normal request is served: the estimate is per row, so the large batch does not make a
// one-row batch look slow (before: its 2.4 s moved a per-batch mean past half the 100 ms SLO, and
// every later request was refused with 429).
func TestLargeRequestDoesNotLockOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rb := &rowBackend{fixed: time.Millisecond, perRow: 300 * time.Microsecond}
		g := newFaultGateway(t, rb, &fixedPolicy{Max: 4, Wait: time.Millisecond}, 100*time.Millisecond, 1)
		defer g.Close(context.Background())
		for i := range 5 {
			if err := infer(g, fmt.Sprintf("w%d", i), 1, 0); err != nil {
				t.Fatalf("warm-up: %v", err)
			}
		}
		if err := infer(g, "big", 8000, time.Minute); err != nil {
			t.Fatalf("8,000-row request with a 60 s budget: %v", err)
		}
		for i := range 20 {
			if err := infer(g, fmt.Sprintf("n%d", i), 1, 0); err != nil {
				t.Fatalf("normal request %d after the large one: %v, want 200", i, err)
			}
		}
		// Bursts of normal requests are admitted as before.
		for _, a := range fire(g, 8, 0)() {
			if a.Err != "" {
				t.Errorf("burst after the large request: %s: %s", a.ID, a.Err)
			}
		}
	})
}

// An empty queue with a free slot always admits, whatever the estimate says: a request that can
// start at once is never refused, and its batch refreshes the estimate.
func TestEmptyQueueAlwaysAdmits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rb := &rowBackend{fixed: time.Millisecond}
		g := newFaultGateway(t, rb, &fixedPolicy{Max: 1}, 100*time.Millisecond, 1)
		defer g.Close(context.Background())
		b, _ := g.batcher("m")
		b.SeedCost(BatchCost{Fixed: time.Hour}) // a stale, absurd estimate
		if err := infer(g, "a", 1, 0); err != nil {
			t.Fatalf("request to an idle model under a stale estimate: %v", err)
		}
		synctest.Wait() // the completion reaches the batcher
		if c := b.Cost(); c.Of(1) > 10*time.Millisecond {
			t.Errorf("estimate after one batch of 1 ms: %v", c.Of(1))
		}
	})
}

// A merged batch that the instance refuses with a 4xx is split: each request is sent alone, so
// only the offender gets the error and every other request of the batch its answer.
func TestRefusedBatchRetriedAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rb := &rowBackend{fixed: time.Millisecond, refuse: map[string]bool{"r2": true}}
		g := newFaultGateway(t, rb, &fixedPolicy{Max: 4, Wait: time.Millisecond}, 100*time.Millisecond, 1)
		defer g.Close(context.Background())
		got := fire(g, 4, 0)()
		for _, a := range got {
			switch {
			case a.ID == "r2" && !strings.Contains(a.Err, "input refused"):
				t.Errorf("offender %s: %q, want the instance's 400", a.ID, a.Err)
			case a.ID != "r2" && a.Err != "":
				t.Errorf("innocent %s: %s, want its answer", a.ID, a.Err)
			}
		}
		if sent := rb.sent("a0"); len(sent) != 5 || len(sent[0]) != 4 {
			t.Errorf("batches sent: %v, want the batch of 4 and then each alone", sent)
		}
	})
}

// A batch closes before a request that would take it past the model's MaxBatchBytes: a large
// request goes alone, and the small ones around it are batched without it.
func TestBatchClosesAtByteLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rb := &rowBackend{fixed: time.Millisecond}
		g, err := New(Options{Backend: rb})
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close(context.Background())
		// One row of x is 8 bytes: 4 one-row requests fit in 40 bytes, a 10-row one does not.
		if err := g.AddModel(Model{Name: "m", SLO: slo.Spec{Threshold: 100 * time.Millisecond, Target: 0.98},
			Policy: &fixedPolicy{Max: 8, Wait: time.Millisecond}, MaxBatchBytes: 40}); err != nil {
			t.Fatal(err)
		}
		if err := g.AddInstance(context.Background(), "m", Instance{ID: "i0", Addr: "a0", Slots: 4}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for i, rows := range []int{1, 1, 10, 1, 1, 1, 1, 1, 1} {
			wg.Go(func() {
				if err := infer(g, fmt.Sprintf("q%d", i), rows, 0); err != nil {
					t.Errorf("request q%d (%d rows): %v", i, rows, err)
				}
			})
			synctest.Wait()
		}
		wg.Wait()
		for _, b := range rb.sent("a0") {
			var rows int
			for _, id := range b {
				rows += map[bool]int{true: 10, false: 1}[id == "q2"]
			}
			if rows*8 > 40 && len(b) > 1 {
				t.Errorf("batch %v carries %d bytes, past the 40-byte limit", b, rows*8)
			}
		}
	})
}

// A request of many rows gets an attempt timeout that scales with its rows: it is computed once,
// not cut short after the SLO/4 of a small batch and sent again, and its instance keeps serving.
func TestLargeBatchNotTakenForHung(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rb := &rowBackend{fixed: time.Millisecond, perRow: 300 * time.Microsecond}
		g := newFaultGateway(t, rb, &fixedPolicy{Max: 1}, 100*time.Millisecond, 2)
		defer g.Close(context.Background())
		for i := range 6 {
			if err := infer(g, fmt.Sprintf("w%d", i), 1+i%2, 0); err != nil {
				t.Fatalf("warm-up: %v", err)
			}
		}
		if err := infer(g, "big", 2000, time.Minute); err != nil {
			t.Fatalf("2,000-row request with a 60 s budget: %v", err)
		}
		n := 0
		for _, addr := range []string{"a0", "a1"} {
			for _, b := range rb.sent(addr) {
				if b[0] == "big" {
					n++
				}
			}
		}
		if n != 1 {
			t.Errorf("the 2,000-row batch was sent %d times, want once", n)
		}
	})
}

// An instance that misses one batch's attempt timeout but still answers its health check is not
// benched: it keeps taking batches. One that fails the check is (TestHungInstanceBatchRetriedElsewhere).
func TestSlowButAliveInstanceNotBenched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rb := &rowBackend{fixed: 2 * time.Millisecond}
		g := newFaultGateway(t, rb, &fixedPolicy{Max: 1}, 200*time.Millisecond, 2)
		defer g.Close(context.Background())
		for i := range 6 {
			if err := infer(g, fmt.Sprintf("w%d", i), 1+i%2, 0); err != nil {
				t.Fatalf("warm-up: %v", err)
			}
		}
		rb.mu.Lock()
		rb.extra = map[string]time.Duration{"a0": 100 * time.Millisecond, "a1": 100 * time.Millisecond}
		rb.mu.Unlock()
		if err := infer(g, "slow", 1, 0); err != nil { // times out once, retried, answered
			t.Fatalf("slow request: %v", err)
		}
		rb.mu.Lock()
		rb.extra = nil
		rb.mu.Unlock()
		b, _ := g.batcher("m")
		insts, _ := b.Instances()
		n := 0
		for _, in := range insts {
			if !in.Usable {
				n++
			}
		}
		if n != 0 {
			t.Errorf("%d instances benched after one slow batch, want none (both pass their health check)", n)
		}
	})
}

// Requests carrying NaN or ±Inf over the binary extension are refused with 400 at validation;
// the normal requests sent at the same time all get 200 (before: the NaN rows were merged into
// batches the gateway could not encode as JSON, and every request of those batches got 503).
func TestNaNRequestsRefusedAlone(t *testing.T) {
	w := sumWorker(t)
	pol := &fixedPolicy{Max: 8, Wait: 2 * time.Millisecond}
	// A wide SLO: the property is that NaN rows never reach a batch, not latency; with the
	// default 200 ms a loaded machine (make test under -race beside other packages) answered a
	// few normal requests 504.
	_, s := newHTTPGatewaySLO(t, pol, w.URL, slo.Spec{Threshold: 10 * time.Second, Target: 0.98})
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[string]map[int]int{"nan": {}, "normal": {}}
	for c := range 8 { // 8 clients, 40 requests each, one at a time: within the queue's bound
		wg.Go(func() {
			for k := range 40 {
				kind := "normal"
				if (c*40+k)%16 == 3 {
					kind = "nan"
				}
				body, hl := binaryBody(kind == "nan")
				req, _ := http.NewRequest(http.MethodPost, s.URL+"/v2/models/m/infer", bytes.NewReader(body))
				req.Header.Set(oip.HeaderInferenceHeaderLength, strconv.Itoa(hl))
				code := 0
				if res, err := http.DefaultClient.Do(req); err == nil {
					code = res.StatusCode
					res.Body.Close()
				}
				mu.Lock()
				codes[kind][code]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if codes["nan"][http.StatusBadRequest] != 20 {
		t.Errorf("NaN requests: %v, want 20 × 400", codes["nan"])
	}
	if codes["normal"][http.StatusOK] != 300 {
		t.Errorf("normal requests: %v, want 300 × 200", codes["normal"])
	}
}

// binaryBody is a one-row request for model m in the binary tensor extension, with NaN in it when
// nan is set; it returns the body and the JSON header's length.
func binaryBody(nan bool) ([]byte, int) {
	head := []byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"parameters":{"binary_data_size":8}}]}`)
	v := float32(1)
	if nan {
		v = float32(math.NaN())
	}
	b := binary.LittleEndian.AppendUint32(append([]byte(nil), head...), math.Float32bits(v))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(2))
	return b, len(head)
}

// A JSON request asking for binary outputs (what tritonclient.http sends by default) is answered
// in the binary extension: the worker hop is binary whatever the client sent, and the gateway
// encodes the answer as the client asked (before: the flag went to the worker, whose binary
// answer the gateway parsed as JSON: 502).
func TestJSONInBinaryOut(t *testing.T) {
	w := sumWorker(t)
	_, s := newHTTPGateway(t, &fixedPolicy{Max: 1}, w.URL)
	for _, extra := range []string{`"parameters":{"binary_data_output":true},`, `"outputs":[{"name":"y","parameters":{"binary_data":true}}],`} {
		res, err := http.Post(s.URL+"/v2/models/m/infer", "application/json", bytes.NewReader(body("b", 1, extra)))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		hl, err := strconv.Atoi(res.Header.Get(oip.HeaderInferenceHeaderLength))
		if res.StatusCode != http.StatusOK || err != nil || hl > len(b) {
			t.Fatalf("%s: %d, header length %q: %s", extra, res.StatusCode, res.Header.Get(oip.HeaderInferenceHeaderLength), b)
		}
		if got := math.Float32frombits(binary.LittleEndian.Uint32(b[hl:])); len(b)-hl != 4 || got != 1 {
			t.Errorf("%s: binary output %v (%d bytes), want the row sum 1", extra, got, len(b)-hl)
		}
	}
}
