package facts

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"valid", `{"identity":"a","leader":true,"models":{"m":{"arrivals":3,"completed":2,"missed":1,"in_system_ns":5,"queued":1}}}`, true},
		{"no models", `{"identity":"a","models":{}}`, true},
		{"unknown field", `{"identity":"a","models":{},"extra":1}`, false},
		{"no identity", `{"models":{}}`, false},
		{"negative", `{"identity":"a","models":{"m":{"arrivals":-1}}}`, false},
		{"negative fleet", `{"identity":"a","models":{},"fleet":{"m":{"queued":-1}}}`, false},
		{"empty model", `{"identity":"a","models":{"":{}}}`, false},
		{"trailing", `{"identity":"a","models":{}} {}`, false},
		{"not json", `nope`, false},
		{"too large", `{"identity":"` + strings.Repeat("a", MaxBytes) + `"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(tc.in))
			if (err == nil) != tc.ok {
				t.Fatalf("Decode: err = %v, want ok %v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
		})
	}
}

// replica is a peer whose counters the test sets.
type replica struct {
	mu  sync.Mutex
	rep Report
	srv *httptest.Server
}

func newReplica(t *testing.T, id, token string) *replica {
	r := &replica{rep: Report{Identity: id, Models: map[string]Counters{}}}
	r.srv = httptest.NewServer(Handler(func() (Report, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		out := r.rep
		out.Models = map[string]Counters{}
		for k, v := range r.rep.Models {
			out.Models[k] = v
		}
		return out, nil
	}, token))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *replica) set(model string, c Counters) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rep.Models[model] = c
}

// TestGatherer: the fleet's counters are the sum of every replica's increase since it was first
// seen; a replica that stops answering keeps its contribution and adds what it missed when it
// answers again; a restarted replica (counters down) counts from zero; the queue is the sum of
// the answering replicas'; the local replica listed among the peers is counted once.
func TestGatherer(t *testing.T) {
	const token = "s3cret"
	local := newReplica(t, "a", token)
	b := newReplica(t, "b", token)
	c := newReplica(t, "c", token)
	localFn := func() (Report, error) {
		local.mu.Lock()
		defer local.mu.Unlock()
		return Report{Identity: "ignored", Models: map[string]Counters{"m": local.rep.Models["m"]}}, nil
	}
	g := NewGatherer("a", localFn, Static{local.srv.URL, b.srv.URL, c.srv.URL}, GathererOptions{Token: token, Timeout: time.Second})
	ctx := context.Background()
	now := time.Unix(0, 0)
	step := func(want Counters, wantErr bool) {
		t.Helper()
		now = now.Add(time.Second)
		err := g.Gather(ctx, now)
		if (err != nil) != wantErr {
			t.Fatalf("Gather: err = %v, want error %v", err, wantErr)
		}
		if got := g.Reading("m"); got != want {
			t.Fatalf("Reading (-want +got):\n- %+v\n+ %+v", want, got)
		}
	}
	// First sight: baselines only (a new leader does not count the peers' past as a burst).
	local.set("m", Counters{Arrivals: 100, Completed: 90, Queued: 1})
	b.set("m", Counters{Arrivals: 50, Completed: 50, Queued: 2})
	c.set("m", Counters{Arrivals: 10, Completed: 10})
	step(Counters{Queued: 3}, false)
	// Increases add up.
	local.set("m", Counters{Arrivals: 110, Completed: 100, Missed: 1, InSystemNS: 7})
	b.set("m", Counters{Arrivals: 70, Completed: 65, Missed: 2, InSystemNS: 3, Queued: 4})
	c.set("m", Counters{Arrivals: 15, Completed: 15})
	step(Counters{Arrivals: 35, Completed: 30, Missed: 3, InSystemNS: 10, Queued: 4}, false)
	// c stops answering: its contribution stays, its queue goes.
	c.srv.Close()
	b.set("m", Counters{Arrivals: 80, Completed: 75, Missed: 2, InSystemNS: 3})
	step(Counters{Arrivals: 45, Completed: 40, Missed: 3, InSystemNS: 10}, true)
	// b restarts: counters down, counted from zero.
	b.set("m", Counters{Arrivals: 5, Completed: 4})
	step(Counters{Arrivals: 50, Completed: 44, Missed: 3, InSystemNS: 10}, true)
	if got, want := g.Replicas(now), []string{"a", "b"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Replicas = %v, want %v", got, want)
	}
}

func TestHandler(t *testing.T) {
	h := Handler(func() (Report, error) {
		return Report{Identity: "a", Leader: true, Models: map[string]Counters{"m": {Arrivals: 1}}}, nil
	}, "tok")
	for _, tc := range []struct {
		name, method, auth string
		code               int
	}{
		{"ok", http.MethodGet, "Bearer tok", 200},
		{"no token", http.MethodGet, "", 401},
		{"post", http.MethodPost, "Bearer tok", 405},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(tc.method, Path, nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			h.ServeHTTP(rec, req)
			if rec.Code != tc.code {
				t.Fatalf("code %d, want %d (%s)", rec.Code, tc.code, rec.Body)
			}
			if tc.code != 200 {
				var e map[string]string
				if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e["error"] == "" {
					t.Errorf("error body %q, want {\"error\": ...}", rec.Body)
				}
				return
			}
			rep, err := Decode(rec.Body)
			if err != nil || !rep.Leader || rep.Models["m"].Arrivals != 1 {
				t.Errorf("Decode(body) = %+v, %v", rep, err)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"identity":"a","leader":true,"models":{"m":{"arrivals":3,"completed":2,"missed":1,"in_system_ns":5,"queued":1}}}`))
	f.Add([]byte(`{"identity":"a","models":{"m":{"arrivals":-1}}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := Decode(strings.NewReader(string(data)))
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if rep.Identity == "" {
			t.Fatal("accepted a report without identity")
		}
		for name, c := range rep.Fleet {
			if name == "" || c.Arrivals < 0 || c.Queued < 0 {
				t.Fatalf("accepted fleet %q %+v", name, c)
			}
		}
		for name, c := range rep.Models {
			if name == "" || c.Arrivals < 0 || c.Completed < 0 || c.Missed < 0 || c.InSystemNS < 0 || c.Queued < 0 {
				t.Fatalf("accepted model %q %+v", name, c)
			}
		}
		// What was accepted encodes and decodes to the same report.
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Decode(strings.NewReader(string(b)))
		if err != nil || again.Identity != rep.Identity || len(again.Models) != len(rep.Models) {
			t.Fatalf("round trip: %+v, %v", again, err)
		}
	})
}
