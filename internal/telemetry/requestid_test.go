package telemetry

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestMiddleware(t *testing.T) {
	var logs bytes.Buffer
	log, err := NewLogger(&logs, FormatJSON, slog.LevelInfo)
	if err != nil {
		t.Fatal(err)
	}
	h := Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got, want := RequestID(r.Context()), r.Header.Get(HeaderRequestID); got != want || got == "" {
			t.Errorf("RequestID(ctx) = %q, header %q", got, want)
		}
		switch r.URL.Path {
		case "/ok":
			io.WriteString(w, "fine")
		case "/bad":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"bad input"}`)
		case "/boom":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, `{"error":"backend failed"}`)
		}
	}), AccessLogOptions{Logger: log, SampleRatio: 0.5, Route: func(r *http.Request) (string, string) { return "r" + r.URL.Path, "m" }})
	s := httptest.NewServer(h)
	defer s.Close()
	get := func(path, id string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", s.URL+path, nil)
		if id != "" {
			req.Header.Set(HeaderRequestID, id)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	tests := []struct {
		name, path, id string
		wantID         string // "" means a generated one (32 hex digits)
		wantBody       string
	}{
		{"client id echoed", "/ok", "abc-123", "abc-123", "fine"},
		{"generated when absent", "/ok", "", "", "fine"},
		{"unusable id replaced", "/ok", strings.Repeat("x", 200), "", "fine"},
		{"in error body", "/bad", "req-7", "req-7", `{"error":"bad input","request_id":"req-7"}`},
		{"in 5xx body", "/boom", "req-8", "req-8", `{"error":"backend failed","request_id":"req-8"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := get(tc.path, tc.id)
			id := resp.Header.Get(HeaderRequestID)
			if tc.wantID != "" && id != tc.wantID || tc.wantID == "" && len(id) != 32 {
				t.Errorf("X-Request-Id = %q, want %q (or 32 hex digits)", id, tc.wantID)
			}
			if body != tc.wantBody {
				t.Errorf("body (-want +got):\n- %s\n+ %s", tc.wantBody, body)
			}
		})
	}
	// 4 answers below 500 at ratio 0.5: 2 lines; the 502 always.
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", l, err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 3 {
		t.Fatalf("%d access log lines, want 3:\n%s", len(lines), logs.String())
	}
	last := lines[2]
	for k, want := range map[string]any{"msg": "access", "level": "WARN", "status": 502.0, "route": "r/boom", "model": "m",
		"request_id": "req-8", "method": "GET", "bytes": float64(len(`{"error":"backend failed","request_id":"req-8"}`))} {
		if last[k] != want {
			t.Errorf("5xx log line %s = %v, want %v (line %v)", k, last[k], want, last)
		}
	}
}

func TestValidateAdminAddr(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{{"", true}, {"127.0.0.1:6060", true}, {"[::1]:0", true}, {"localhost:6060", true},
		{"0.0.0.0:6060", false}, {":6060", false}, {"10.0.0.1:6060", false}, {"nope", false}} {
		if err := ValidateAdminAddr(tc.addr); (err == nil) != tc.ok {
			t.Errorf("ValidateAdminAddr(%q) = %v, want ok %v", tc.addr, err, tc.ok)
		}
	}
}

func TestAdminServesPprof(t *testing.T) {
	a, err := StartAdmin("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	resp, err := http.Get("http://" + a.Addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "goroutine profile") {
		t.Errorf("pprof goroutine: %s %.100s", resp.Status, b)
	}
}
