package oip

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
)

// repoCore is a fakeCore with a model repository holding "m".
type repoCore struct {
	*fakeCore
	calls []string
}

func (c *repoCore) LoadModel(ctx context.Context, model string, params map[string]any) error {
	c.calls = append(c.calls, fmt.Sprintf("load %s %v", model, params))
	if model != "m" {
		return fmt.Errorf("%w: no model %q", ErrNotFound, model)
	}
	if len(params) > 0 {
		return fmt.Errorf("%w: parameters not supported", ErrBadRequest)
	}
	return nil
}

func (c *repoCore) UnloadModel(ctx context.Context, model string) error {
	c.calls = append(c.calls, "unload "+model)
	if model != "m" {
		return fmt.Errorf("%w: no model %q", ErrNotFound, model)
	}
	return nil
}

func TestRepositoryLoadUnload(t *testing.T) {
	_, fake := newTestServer(t, HandlerOptions{})
	rc := &repoCore{fakeCore: fake}
	h, err := NewHandler(rc, HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	plain := httptest.NewServer(mustHandler(t, fake))
	t.Cleanup(plain.Close)
	tests := []struct {
		name, path, body string
		plain            bool // the core without RepositoryManager
		wantCode         int
		wantBody         string // substring
	}{
		{name: "load", path: "/v2/repository/models/m/load", wantCode: 200, wantBody: "{}"},
		{name: "load empty parameters", path: "/v2/repository/models/m/load", body: `{"parameters":{}}`, wantCode: 200},
		{name: "load parameters", path: "/v2/repository/models/m/load", body: `{"parameters":{"config":"{}"}}`, wantCode: 400, wantBody: "not supported"},
		{name: "load unknown", path: "/v2/repository/models/x/load", wantCode: 404, wantBody: `no model \"x\"`},
		{name: "load bad body", path: "/v2/repository/models/m/load", body: `{"params":1}`, wantCode: 400, wantBody: "unknown field"},
		{name: "load trailing", path: "/v2/repository/models/m/load", body: `{} {}`, wantCode: 400, wantBody: "trailing data"},
		{name: "unload", path: "/v2/repository/models/m/unload", wantCode: 200},
		{name: "unload dependents", path: "/v2/repository/models/m/unload", body: `{"parameters":{"unload_dependents":true}}`, wantCode: 200},
		{name: "unload other parameter", path: "/v2/repository/models/m/unload", body: `{"parameters":{"x":1}}`, wantCode: 400, wantBody: `\"x\" is not supported`},
		{name: "unload unknown", path: "/v2/repository/models/x/unload", wantCode: 404},
		{name: "no repository", path: "/v2/repository/models/m/load", plain: true, wantCode: 501, wantBody: "no model repository"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := srv
			if tc.plain {
				s = plain
			}
			res := do(t, s, "POST", tc.path, tc.body, nil)
			got := readAll(t, res)
			if res.StatusCode != tc.wantCode || !strings.Contains(got, tc.wantBody) {
				t.Errorf("answer (-want +got):\n- %d …%s…\n+ %d %s", tc.wantCode, tc.wantBody, res.StatusCode, got)
			}
		})
	}
}

func mustHandler(t *testing.T, c Core) *handler {
	t.Helper()
	h, err := NewHandler(c, HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return h.(*handler)
}
