package attack

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "github.com/sloserve/sloserve/internal/oipgrpc/inferencepb"
)

// uploadBody streams a 64 MiB JSON inference request of unknown length (sent chunked).
type uploadBody struct {
	head, tail string
	n          int // bytes of the data array left
	off        int // into head
	tailOff    int
}

func newUpload(input string, size int) *uploadBody {
	head := fmt.Sprintf(`{"inputs":[{"name":%q,"datatype":"FP32","shape":[1,784],"data":[`, input)
	tail := `0]}]}`
	return &uploadBody{head: head, tail: tail, n: size - len(head) - len(tail)}
}

func (u *uploadBody) Read(p []byte) (int, error) {
	w := 0
	for w < len(p) {
		switch {
		case u.off < len(u.head):
			k := copy(p[w:], u.head[u.off:])
			u.off += k
			w += k
		case u.n > 0:
			k := min(len(p)-w, u.n)
			for i := range k {
				if (u.n-i)%2 == 0 {
					p[w+i] = '0'
				} else {
					p[w+i] = ','
				}
			}
			u.n -= k
			w += k
		case u.tailOff < len(u.tail):
			k := copy(p[w:], u.tail[u.tailOff:])
			u.tailOff += k
			w += k
		default:
			if w == 0 {
				return 0, io.EOF
			}
			return w, nil
		}
	}
	return w, nil
}

// watchRSS samples the process's RSS every 20 ms until the returned function is called, which
// returns the peak in MiB.
func watchRSS(pid int) func() float64 {
	stop := make(chan struct{})
	peakc := make(chan float64)
	go func() {
		peak := 0.0
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				peakc <- max(peak, rssMB(pid))
				return
			case <-tick.C:
				peak = max(peak, rssMB(pid))
			}
		}
	}()
	return func() float64 {
		close(stop)
		return <-peakc
	}
}

// TestChunkedUploads: ten concurrent 64 MiB chunked uploads (SLOSERVE_ATTACK_UPLOADS changes
// the number). The gateway's RSS must stay under its body budget
// (gateway.max_inflight_body_bytes, 256 MiB) + 200 MB, and uploads past the budget are answered
// 503.
func TestChunkedUploads(t *testing.T) {
	bin := needAttack(t)
	const budgetMiB = 256
	g := startGateway(t, bin, fmt.Sprintf("  max_inflight_body_bytes: %d", budgetMiB<<20))
	time.Sleep(time.Second)
	base := rssMB(g.pid)
	peakRSS := watchRSS(g.pid)
	start := time.Now()
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	uploads := 10
	if v := os.Getenv("SLOSERVE_ATTACK_UPLOADS"); v != "" {
		uploads, _ = strconv.Atoi(v)
	}
	for range uploads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Timeout: 2 * time.Minute}
			res, err := c.Post(g.url+"/v2/models/logreg/infer", "application/json", newUpload(g.modelInput, 64<<20))
			code := 0
			if err == nil {
				b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
				res.Body.Close()
				code = res.StatusCode
				if code == http.StatusServiceUnavailable && !strings.Contains(string(b), `"error"`) {
					t.Errorf("503 body %q: want a JSON error", b)
				}
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	peak := peakRSS()
	t.Logf("10 × 64 MiB chunked uploads in %v: statuses %v; gateway RSS %.0f MiB before, %.0f MiB at peak (budget %d MiB + 200 MB = %.0f MiB)",
		time.Since(start).Round(time.Millisecond), codes, base, peak, budgetMiB, budgetMiB+200e6/(1<<20))
	if peak > budgetMiB+200e6/(1<<20) {
		t.Errorf("peak RSS %.0f MiB, want under the body budget %d MiB + 200 MB", peak, budgetMiB)
	}
	if codes[http.StatusServiceUnavailable] == 0 {
		t.Errorf("no upload was refused with 503 past the budget: %v", codes)
	}
	// The gateway still serves a normal request afterwards.
	res, err := http.Post(g.url+"/v2/models/logreg/infer", "application/json", strings.NewReader(string(g.inferBody())))
	if err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("normal request after the uploads: %v %v", res.StatusCode, err)
	} else {
		res.Body.Close()
	}
}

// TestGRPCLargeRequests: eight concurrent 60 MB gRPC requests (before: RSS 2.95 GB; 1.6 GB with
// the budget charged after unmarshalling). grpc-go reads a whole message into memory before any
// of the gateway's code sees it, and nothing tells its size earlier (gRPC clients send no
// content-length), so the eight messages in reception are held whatever the budget; what the
// gateway holds beyond them is bounded by it. The RSS must stay under the body budget (256 MiB
// here) + 200 MB + the messages in reception, requests past the budget are answered Unavailable,
// and a normal request is answered afterwards.
func TestGRPCLargeRequests(t *testing.T) {
	bin := needAttack(t)
	const budgetMiB = 256
	g := startGateway(t, bin, fmt.Sprintf("  max_inflight_body_bytes: %d", budgetMiB<<20))
	time.Sleep(time.Second)
	base := rssMB(g.pid)
	cols := int64(1)
	for _, d := range g.inputShape[1:] {
		cols *= d
	}
	rows := int64(60e6) / (4 * cols)
	raw := make([]byte, rows*cols*4)
	req := &pb.ModelInferRequest{ModelName: "logreg",
		Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: g.modelInput, Datatype: "FP32", Shape: []int64{rows, cols}}},
		RawInputContents: [][]byte{raw}}
	cc, err := grpc.NewClient(g.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(128<<20), grpc.MaxCallRecvMsgSize(128<<20)))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	client := pb.NewGRPCInferenceServiceClient(cc)
	peakRSS := watchRSS(g.pid)
	start := time.Now()
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			_, err := client.ModelInfer(ctx, req)
			mu.Lock()
			got[status.Code(err).String()]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	peak := peakRSS()
	reception := 8 * float64(len(raw)) / (1 << 20)
	bound := budgetMiB + 200e6/(1<<20) + reception
	t.Logf("8 × %.0f MB gRPC requests (%d rows) in %v: codes %v; gateway RSS %.0f MiB before, %.0f MiB at peak (budget %d MiB + 200 MB + %.0f MiB in reception = %.0f MiB)",
		float64(len(raw))/1e6, rows, time.Since(start).Round(time.Millisecond), got, base, peak, budgetMiB, reception, bound)
	if peak > bound {
		t.Errorf("peak RSS %.0f MiB, want under the body budget %d MiB + 200 MB + %.0f MiB in reception", peak, budgetMiB, reception)
	}
	if got[codes.Unavailable.String()] == 0 {
		t.Errorf("no request was refused with Unavailable past the budget: %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	small := &pb.ModelInferRequest{ModelName: "logreg",
		Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: g.modelInput, Datatype: "FP32", Shape: []int64{1, cols}}},
		RawInputContents: [][]byte{make([]byte, cols*4)}}
	if _, err := client.ModelInfer(ctx, small); err != nil {
		t.Errorf("normal request after the large ones: %v", err)
	}
}
