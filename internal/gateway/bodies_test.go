package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/oip"
)

type sizedReader struct{ n int }

func (r *sizedReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n)
	r.n -= k
	return k, nil
}

// The model is looked up before the body is read; Content-Length is reserved up front and a
// chunked body as it is read; past the budget the answer is 503 with Retry-After.
func TestGuardBodies(t *testing.T) {
	g := newTestGateway(t, &fakeBackend{}, &fixedPolicy{Max: 1}, time.Second, 16, 1)
	t.Cleanup(func() { g.Close(context.Background()) })
	budget := newBodyBudget(1 << 20)
	var read int64
	h := g.guardBodies(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength < 0 {
			t.Error("the handler got a body of unknown length")
		}
		n, err := io.Copy(io.Discard, r.Body)
		read = n
		if err != nil {
			writeGuardError(w, err, 2*time.Second)
			return
		}
		w.WriteHeader(200)
	}), budget, 64<<20, 2*time.Second)
	tests := []struct {
		name    string
		path    string
		length  int64 // -1: chunked
		size    int
		hold    int64 // reserved by another request meanwhile
		code    int
		maxRead int64
	}{
		{"unknown model: 404 unread", "/v2/models/nope/infer", 1000, 1000, 0, 404, 0},
		{"unknown V1 model: 404 unread", "/v1/models/nope:predict", 1000, 1000, 0, 404, 0},
		{"fits", "/v2/models/m/infer", 1000, 1000, 0, 200, 1000},
		{"content-length past the budget: 503 unread", "/v2/models/m/infer", 300 << 10, 300 << 10, 600 << 10, 503, 0},
		{"content-length charged three times: 503 unread", "/v2/models/m/infer", 400 << 10, 400 << 10, 0, 503, 0},
		{"chunked fits", "/v2/models/m/infer", -1, 200 << 10, 0, 200, 200 << 10},
		{"chunked past the budget: 503 midway", "/v2/models/m/infer", -1, 2 << 20, 0, 503, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			read = 0
			if tt.hold > 0 {
				if !budget.reserve(tt.hold) {
					t.Fatal("hold")
				}
				defer budget.release(tt.hold)
			}
			r := httptest.NewRequest(http.MethodPost, tt.path, &sizedReader{n: tt.size})
			r.ContentLength = tt.length
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.code {
				t.Errorf("status (-want +got): -%d +%d %s", tt.code, w.Code, w.Body)
			}
			if read > tt.maxRead {
				t.Errorf("read %d body bytes, want ≤ %d", read, tt.maxRead)
			}
			if tt.code == 503 && w.Header().Get("Retry-After") != "2" {
				t.Errorf("Retry-After %q, want 2", w.Header().Get("Retry-After"))
			}
			if tt.code != 200 && !strings.Contains(w.Body.String(), `"error"`) {
				t.Errorf("body %s: want a JSON error", w.Body)
			}
		})
	}
	if u := budget.used.Load(); u != 0 {
		t.Errorf("budget still holds %d bytes after every request was answered", u)
	}
}

func TestBodyBudgetReserve(t *testing.T) {
	b := newBodyBudget(100 * bodyCharge)
	r1, err := b.Reserve(60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Reserve(50); !errors.Is(err, oip.ErrUnavailable) {
		t.Errorf("60 + 50 > 100 (times bodyCharge): err %v, want ErrUnavailable", err)
	}
	r1()
	r1() // once
	if b.Free() != 100*bodyCharge {
		t.Errorf("free after release (-want +got): -%d +%d", 100*bodyCharge, b.Free())
	}
}

func TestInferTarget(t *testing.T) {
	for _, tt := range []struct{ path, model, version string }{
		{"/v2/models/m/infer", "m", ""},
		{"/v2/models/m/versions/2/infer", "m", "2"},
		{"/v1/models/m:predict", "m", ""},
		{"/v1/models/m/versions/3:predict", "m", "3"},
		{"/v2/models/a/b/infer", "", ""},
		{"/v2/models/m/ready", "", ""},
	} {
		m, v, _ := inferTarget(tt.path)
		if m != tt.model || v != tt.version {
			t.Errorf("%s (-want +got): -%q %q +%q %q", tt.path, tt.model, tt.version, m, v)
		}
	}
}
