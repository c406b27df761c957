package attack

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
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
	stop := make(chan struct{})
	peakc := make(chan float64)
	go func() {
		peak := 0.0
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				peakc <- max(peak, rssMB(g.pid))
				return
			case <-tick.C:
				peak = max(peak, rssMB(g.pid))
			}
		}
	}()
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
	close(stop)
	peak := <-peakc
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
