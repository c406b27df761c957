package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/batcher"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/ensemble"
	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/slo"
)

// classBackend answers every row with a one-hot score of a fixed class per model; models in
// slow answer after that delay, models in fail answer 500, models in down refuse connections.
type classBackend struct {
	class map[string]int
	slow  map[string]time.Duration
	fail  map[string]bool
	down  map[string]bool

	mu    sync.Mutex
	calls map[string]int
}

func (b *classBackend) Infer(ctx context.Context, addr, model string, reqs []*oip.InferenceRequest) ([]*oip.InferenceResponse, error) {
	b.mu.Lock()
	if b.calls == nil {
		b.calls = map[string]int{}
	}
	b.calls[model]++
	b.mu.Unlock()
	if b.down[model] {
		return nil, &oip.StatusError{Code: http.StatusServiceUnavailable, Message: "down"}
	}
	if d := b.slow[model]; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if b.fail[model] {
		return nil, &oip.StatusError{Code: http.StatusInternalServerError, Message: "boom"}
	}
	out := make([]*oip.InferenceResponse, len(reqs))
	for i, r := range reqs {
		n := int(r.Inputs[0].Shape[0])
		data := make([]float32, 3*n)
		for j := range n {
			data[3*j+b.class[model]] = 1
		}
		out[i] = &oip.InferenceResponse{ModelName: model, ID: r.ID, Outputs: []oip.Tensor{oip.NewFP32("y", []int64{int64(n), 3}, data)}}
	}
	return out, nil
}

func (b *classBackend) Metadata(ctx context.Context, addr, model string) (*oip.ModelMetadata, error) {
	md := testMetadata()
	md.Outputs[0].Shape = []int64{-1, 3}
	return md, nil
}

func (b *classBackend) count(model string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[model]
}

// ensembleGateway serves models a, b, c (accuracies 0.9, 0.8, 0.7) and ensemble "e" over them.
func ensembleGateway(t *testing.T, be *classBackend, sel string) *Gateway {
	t.Helper()
	g, err := New(Options{Backend: be})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(context.Background()) })
	var members []ensemble.Model
	for i, n := range []string{"a", "b", "c"} {
		if err := g.AddModel(Model{Name: n, SLO: slo.Spec{Threshold: time.Second, Target: 0.9}, Policy: &fixedPolicy{Max: 1}}); err != nil {
			t.Fatal(err)
		}
		if err := g.AddInstance(context.Background(), n, Instance{ID: n, Addr: "http://" + n}); err != nil {
			t.Fatal(err)
		}
		members = append(members, ensemble.Model{Name: n, Latency: time.Millisecond, Accuracy: 0.9 - 0.1*float64(i), PackingFactor: 1})
	}
	err = g.AddEnsemble(Ensemble{Name: "e", Members: members, Default: ensemble.Constraint{Latency: 200 * time.Millisecond, Accuracy: 0.9},
		Selection: sel, Voting: config.VotingWeighted, Config: ensemble.DefaultConfig(), FeedbackEntries: 8})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func ensembleCall(id string, params oip.Parameters) *oip.Call {
	s, _ := oip.ParseSLO(params)
	return &oip.Call{Model: "e", Request: &oip.InferenceRequest{ID: id, Parameters: params, Inputs: request(id, 1).Inputs}, SLO: s, Arrival: time.Now()}
}

func TestEnsembleVotes(t *testing.T) {
	tests := []struct {
		name        string
		be          *classBackend
		params      oip.Parameters
		wantClass   string
		wantVoters  string
		wantErr     error
		wantMembers string
	}{
		{name: "all answer, majority of two", be: &classBackend{class: map[string]int{"a": 0, "b": 1, "c": 1}},
			wantClass: "1", wantVoters: "a,b,c", wantMembers: "a,b,c"},
		{name: "straggler skipped at the deadline", be: &classBackend{class: map[string]int{"a": 2, "b": 1, "c": 1},
			slow: map[string]time.Duration{"b": time.Second, "c": time.Second}}, params: oip.Parameters{"latency_ms": 50},
			wantClass: "2", wantVoters: "a", wantMembers: "a,b,c"},
		{name: "failed member skipped", be: &classBackend{class: map[string]int{"a": 0, "b": 1, "c": 2}, fail: map[string]bool{"a": true}},
			wantClass: "1", wantVoters: "b,c", wantMembers: "a,b,c"},
		{name: "every member late: 504", be: &classBackend{class: map[string]int{}, slow: map[string]time.Duration{"a": time.Second, "b": time.Second, "c": time.Second}},
			params: oip.Parameters{"latency_ms": 30}, wantErr: ErrNoVote},
		{name: "every member down: 503", be: &classBackend{class: map[string]int{}, down: map[string]bool{"a": true, "b": true, "c": true}},
			wantErr: ErrNoMemberAvailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := ensembleGateway(t, tt.be, config.SelectionFull)
			resp, err := g.Infer(context.Background(), ensembleCall("r1", tt.params))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error (-want +got):\n- %v\n+ %v", tt.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := []any{resp.Parameters[ParamEnsembleClasses], resp.Parameters[ParamEnsembleVoters], resp.Parameters[ParamEnsembleMembers], resp.ID, resp.ModelName}
			if d := diff([]any{tt.wantClass, tt.wantVoters, tt.wantMembers, "r1", "e"}, got); d != "" {
				t.Errorf("answer (-want +got):\n%s", d)
			}
			sum := float32(0)
			for _, v := range resp.Outputs[0].FP32 {
				sum += v
			}
			if d := diff([]int64{1, 3}, resp.Outputs[0].Shape); d != "" || sum < 0.999 || sum > 1.001 {
				t.Errorf("output %+v: want shape [1 3] of vote shares summing to 1", resp.Outputs[0])
			}
		})
	}
}

func TestEnsembleFailedMemberLeftOut(t *testing.T) {
	be := &classBackend{class: map[string]int{"a": 0, "b": 0, "c": 0}, fail: map[string]bool{"c": true}}
	g := ensembleGateway(t, be, config.SelectionFull)
	for i := range 5 {
		if _, err := g.Infer(context.Background(), ensembleCall(strings.Repeat("x", i+1), nil)); err != nil {
			t.Fatal(err)
		}
	}
	if got := be.count("c"); got != 1 {
		t.Errorf("calls to the failing member (-want +got): -1 +%d (it is left out for %v after failing)", got, batcher.DownFor)
	}
	st, _ := g.EnsembleStats("e")
	if d := diff([]int64{5, 0, 11, 10, 1}, []int64{st.Requests, st.Failed, st.Invocations, st.Votes, st.MemberErrors}); d != "" {
		t.Errorf("requests, failed, invocations, votes, member errors (-want +got):\n%s", d)
	}
}

func TestEnsembleFeedbackHTTP(t *testing.T) {
	be := &classBackend{class: map[string]int{"a": 0, "b": 1, "c": 1}}
	g := ensembleGateway(t, be, config.SelectionDynamic)
	h, err := g.Handler(HandlerOptions{AdminToken: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	post := func(path, token, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		if token != "" {
			scheme := "Bearer "
			if strings.HasPrefix(token, "lower:") { // RFC 7235: the scheme is case-insensitive
				scheme, token = "bearer ", strings.TrimPrefix(token, "lower:")
			}
			req.Header.Set("Authorization", scheme+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	for _, id := range []string{"r1", "r2"} {
		code, b := post("/v2/models/e/infer", "", string(body(id, 1, `"parameters":{"accuracy":0.9},`)))
		if code != 200 || !strings.Contains(b, `"ensemble_classes":"1"`) {
			t.Fatalf("infer %s: %d %s", id, code, b)
		}
	}
	// No id: the gateway names the request so that feedback can refer to it.
	if code, b := post("/v2/models/e/infer", "", `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"data":[1,2]}]}`); code != 200 || !strings.Contains(b, `"id":"e-1"`) {
		t.Fatalf("infer without id: %d %s", code, b)
	}
	tests := []struct {
		name, token, body string
		code              int
		want              string
	}{
		{"no token", "", `{"id":"r1","label":0}`, 401, "admin bearer token"},
		{"wrong token", "nope", `{"id":"r1","label":0}`, 401, "admin bearer token"},
		{"bad json", "s3cret", `{"id":"r1","lable":0}`, 400, "unknown field"},
		{"no label", "lower:s3cret", `{"id":"r1"}`, 400, "needs an id and a label"},
		{"row count", "s3cret", `{"id":"r1","labels":[0,1]}`, 400, "2 labels for a request of 1 rows"},
		{"one", "s3cret", `{"id":"r1","label":0}`, 200, `{"learned":1}`},
		{"again: learnt once", "s3cret", `{"id":"r1","label":0}`, 200, `{"learned":0,"unknown":["r1"]}`},
		{"batch", "s3cret", `[{"id":"r2","label":0},{"id":"zz","label":1}]`, 200, `{"learned":1,"unknown":["zz"]}`},
		{"unknown ensemble", "s3cret", `{"id":"r1","label":0}`, 404, "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := "/v2/models/e/feedback"
			if tt.name == "unknown ensemble" {
				path = "/v2/models/a/feedback"
			}
			code, b := post(path, tt.token, tt.body)
			if code != tt.code || !strings.Contains(b, tt.want) {
				t.Errorf("(-want +got):\n- %d …%s…\n+ %d %s", tt.code, tt.want, code, b)
			}
		})
	}
	// The ensemble is listed and described like a model.
	resp, err := http.Post(srv.URL+"/v2/repository/index", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	idx, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(idx, []byte(`{"name":"e","state":"READY"}`)) {
		t.Errorf("repository index %s does not list ensemble e as READY", idx)
	}
	resp, _ = http.Get(srv.URL + "/v2/models/e")
	md, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(md, []byte(`"name":"e"`)) || !bytes.Contains(md, []byte(`"shape":[-1,2]`)) {
		t.Errorf("ensemble metadata %s: want name e and the members' input schema", md)
	}
	resp, _ = http.Get(srv.URL + "/v2/models/e/stats")
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("stats without the admin token (-want +got): -401 +%d", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v2/models/e/stats", nil)
	req.Header.Set("Authorization", "BEARER s3cret")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(st, []byte(`"Importance":{"a":1,"b":1,"c":1}`)) || !bytes.Contains(st, []byte(`"Feedback":2`)) {
		t.Errorf("stats %s: want importance 1 for each member and 2 labels learnt", st)
	}
}

func TestAddEnsembleErrors(t *testing.T) {
	be := &classBackend{class: map[string]int{}}
	g := ensembleGateway(t, be, config.SelectionFull)
	m := ensemble.Model{Name: "a", Latency: time.Millisecond, Accuracy: 0.9, PackingFactor: 1}
	ok := Ensemble{Name: "x", Members: []ensemble.Model{m}, Default: ensemble.Constraint{Latency: time.Second, Accuracy: 0.5},
		Selection: config.SelectionFull, Voting: config.VotingMajority, Config: ensemble.DefaultConfig()}
	tests := []struct {
		name string
		edit func(e *Ensemble)
		want string
	}{
		{"model name", func(e *Ensemble) { e.Name = "a" }, "a model has that name"},
		{"already served", func(e *Ensemble) { e.Name = "e" }, "already served"},
		{"unknown member", func(e *Ensemble) {
			e.Members = []ensemble.Model{{Name: "zz", Latency: 1, Accuracy: 0.5, PackingFactor: 1}}
		}, "model not found"},
		{"duplicate member", func(e *Ensemble) { e.Members = []ensemble.Model{m, m} }, "appears twice"},
		{"selection", func(e *Ensemble) { e.Selection = "best" }, "selection must be"},
		{"voting", func(e *Ensemble) { e.Voting = "loud" }, "voting must be"},
		{"default", func(e *Ensemble) { e.Default.Accuracy = 2 }, "constraint.accuracy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := ok
			tt.edit(&e)
			if err := g.AddEnsemble(e); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error (-want +got):\n- …%s…\n+ %v", tt.want, err)
			}
		})
	}
	if err := g.AddEnsemble(ok); err != nil {
		t.Errorf("valid ensemble: %v", err)
	}
}

func FuzzDecodeFeedback(f *testing.F) {
	for _, s := range []string{`{"id":"a","label":1}`, `[{"id":"a","labels":[1,2]}]`, `{"feedback":[{"id":"b","label":0}]}`, `[]`, `{`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		labels, err := decodeFeedback(bytes.NewReader(b))
		if err == nil && len(labels) == 0 {
			t.Errorf("no error and no labels for %q", b)
		}
		if err != nil && !errors.Is(err, oip.ErrBadRequest) {
			t.Errorf("error %v does not wrap ErrBadRequest", err)
		}
	})
}
