package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/slo"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// scripted is a Source that returns its samples in turn, then repeats the last one.
type scripted struct {
	samples [][]ModelSample
	errs    []error
	calls   int
	nows    []time.Time
}

func (s *scripted) Sample(_ context.Context, now time.Time) ([]ModelSample, error) {
	i := min(s.calls, len(s.samples)-1)
	s.calls++
	s.nows = append(s.nows, now)
	if i < len(s.errs) && s.errs[i] != nil {
		return nil, s.errs[i]
	}
	return s.samples[i], nil
}

func sample(model string, rate float64, inst ...InstanceCount) ModelSample {
	return ModelSample{
		Model: model, SLO: slo.Spec{Threshold: 200 * time.Millisecond, Target: 0.98},
		ArrivalRate: rate, Forecast: math.NaN(), ForecastHorizon: 30 * time.Second, Instances: inst,
		BatchMean: 3.5, BatchMax: 8,
		Latency:    Latency{P50: 10 * time.Millisecond, P95: 40 * time.Millisecond, P99: 0},
		Attainment: 0.99, Cost: slo.CostUSD{Total: 1.5, VM: 1, Serverless: 0.5},
	}
}

func newTest(t *testing.T, src Source, opts Options) *Dashboard {
	t.Helper()
	d, err := New(src, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return d
}

func getData(t *testing.T, h http.Handler, header http.Header) (int, Data, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/ui/data", nil)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body := rec.Body.String()
	var d Data
	if rec.Code == http.StatusOK {
		if err := json.Unmarshal([]byte(body), &d); err != nil {
			t.Fatalf("decode data: %v\n%s", err, body)
		}
	}
	return rec.Code, d, body
}

func nums(fs ...float64) Column {
	out := make(Column, len(fs))
	for i, f := range fs {
		out[i] = Num(f)
	}
	return out
}

// diffJSON returns "" when want and got encode to the same JSON (so NaN equals NaN), else
// the differing lines of their indented encodings in (-want +got) form.
func diffJSON(want, got any) string {
	w, _ := json.MarshalIndent(want, "", " ")
	g, _ := json.MarshalIndent(got, "", " ")
	if string(w) == string(g) {
		return ""
	}
	wl, gl := strings.Split(string(w), "\n"), strings.Split(string(g), "\n")
	var b strings.Builder
	for i := range max(len(wl), len(gl)) {
		var x, y string
		if i < len(wl) {
			x = wl[i]
		}
		if i < len(gl) {
			y = gl[i]
		}
		if x != y {
			fmt.Fprintf(&b, "line %d:\n-%s\n+%s\n", i+1, x, y)
		}
	}
	return b.String()
}

func TestDataShape(t *testing.T) {
	nan := math.NaN()
	vmReady := InstanceCount{Type: "c5.large", Tier: provider.TierVM, State: provider.StateReady, Count: 2}
	vmLaunch := InstanceCount{Type: "c5.large", Tier: provider.TierVM, State: provider.StateLaunching, Count: 1}
	fn := InstanceCount{Type: "lambda", Tier: provider.TierServerless, State: provider.StateReady, Count: 4}
	gone := InstanceCount{Type: "c5.large", Tier: provider.TierVM, State: provider.StateTerminated, Count: 9}
	src := &scripted{samples: [][]ModelSample{
		{sample("a", 10, vmReady, gone)},
		{sample("a", 20, vmReady, vmLaunch, fn), sample("b", 5)},
		{sample("b", 6)}, // a absent
	}}
	d := newTest(t, src, Options{Title: "test"})
	for i := range 3 {
		if err := d.Step(t.Context(), t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatalf("Step %d: %v", i, err)
		}
	}
	code, got, body := getData(t, d, nil)
	if code != http.StatusOK {
		t.Fatalf("GET /ui/data = %d, want 200: %s", code, body)
	}
	wantA := ModelSeries{
		Name:             "a",
		SLO:              slo.SpecJSON{ThresholdMS: 200, Target: 0.98},
		ArrivalRPS:       nums(10, 20, nan),
		ForecastRPS:      nums(nan, nan, nan),
		ForecastHorizonS: 30,
		Instances: []InstanceSeries{
			{Type: "c5.large", Tier: provider.TierVM, State: provider.StateReady, Count: nums(2, 2, nan)},
			{Type: "c5.large", Tier: provider.TierVM, State: provider.StateLaunching, Count: nums(0, 1, nan)},
			{Type: "lambda", Tier: provider.TierServerless, State: provider.StateReady, Count: nums(0, 4, nan)},
		},
		BatchMean:  nums(3.5, 3.5, nan),
		BatchMax:   nums(8, 8, nan),
		LatencyMS:  LatencySeries{P50: nums(10, 10, nan), P95: nums(40, 40, nan), P99: nums(nan, nan, nan)},
		Attainment: nums(0.99, 0.99, nan),
		CostUSD:    CostSeries{Total: nums(1.5, 1.5, nan), VM: nums(1, 1, nan), Serverless: nums(0.5, 0.5, nan)},
	}
	want := Data{
		Title: "test", IntervalS: 1, RefreshS: 1, Capacity: 600,
		TimesMS: []int64{t0.UnixMilli(), t0.UnixMilli() + 1000, t0.UnixMilli() + 2000},
	}
	header := got
	header.Models, header.Overview = nil, nil
	if diff := diffJSON(want, header); diff != "" {
		t.Errorf("data header (-want +got):\n%s", diff)
	}
	if len(got.Models) != 2 || got.Models[0].Name != "a" || got.Models[1].Name != "b" {
		t.Fatalf("models = %v, want [a b] in order of appearance", modelNames(got))
	}
	if diff := diffJSON(wantA, got.Models[0]); diff != "" {
		t.Errorf("model a (-want +got):\n%s", diff)
	}
	if diff := diffJSON(nums(nan, 5, 6), got.Models[1].ArrivalRPS); diff != "" {
		t.Errorf("model b arrival (-want +got):\n%s", diff)
	}
	// NaN and unknown values are JSON null, never a bare NaN (which is not JSON).
	if !strings.Contains(body, `"forecast_rps":[null,null,null]`) {
		t.Errorf("forecast of model a not encoded as nulls: %s", body)
	}
}

func modelNames(d Data) []string {
	var out []string
	for _, m := range d.Models {
		out = append(out, m.Name)
	}
	return out
}

func TestRingBound(t *testing.T) {
	tests := []struct {
		name     string
		capacity int
		steps    int
		wantLen  int
	}{
		{"below capacity", 5, 3, 3},
		{"at capacity", 5, 5, 5},
		{"wraps", 5, 12, 5},
		{"minimum", 2, 7, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newTest(t, &scripted{samples: [][]ModelSample{{sample("m", 1)}}}, Options{Capacity: tc.capacity})
			for i := range tc.steps {
				if err := d.Step(t.Context(), t0.Add(time.Duration(i)*time.Second)); err != nil {
					t.Fatal(err)
				}
			}
			if got := d.Len(); got != tc.wantLen {
				t.Errorf("Len() = %d, want %d", got, tc.wantLen)
			}
			_, data, _ := getData(t, d, nil)
			var want []int64
			for i := tc.steps - tc.wantLen; i < tc.steps; i++ {
				want = append(want, t0.Add(time.Duration(i)*time.Second).UnixMilli())
			}
			if diff := diffJSON(want, data.TimesMS); diff != "" {
				t.Errorf("t_ms: the newest %d samples, oldest first (-want +got):\n%s", tc.wantLen, diff)
			}
			if n := len(data.Models[0].ArrivalRPS); n != tc.wantLen {
				t.Errorf("len(arrival_rps) = %d, want %d", n, tc.wantLen)
			}
		})
	}
}

func TestStepCopiesSamples(t *testing.T) {
	buf := []ModelSample{sample("m", 1, InstanceCount{Type: "x", Tier: provider.TierVM, State: provider.StateReady, Count: 1})}
	d := newTest(t, SourceFunc(func(context.Context, time.Time) ([]ModelSample, error) { return buf, nil }), Options{})
	if err := d.Step(t.Context(), t0); err != nil {
		t.Fatal(err)
	}
	buf[0].ArrivalRate = 99 // the Source reuses its memory
	buf[0].Instances[0].Count = 99
	_, data, _ := getData(t, d, nil)
	if got := data.Models[0].ArrivalRPS[0]; got != 1 {
		t.Errorf("arrival after the Source reused its slice = %v, want 1", got)
	}
	if got := data.Models[0].Instances[0].Count[0]; got != 1 {
		t.Errorf("instances after the Source reused its slice = %v, want 1", got)
	}
}

func TestSourceError(t *testing.T) {
	boom := errors.New("boom")
	src := &scripted{
		samples: [][]ModelSample{{sample("m", 1)}, nil, nil, {sample("m", 2)}},
		errs:    []error{nil, boom, boom, nil},
	}
	d := newTest(t, src, Options{})
	type state struct {
		Len    int
		Errors int64
		Last   string
	}
	want := []state{{1, 0, ""}, {1, 1, "boom"}, {1, 2, "boom"}, {2, 2, ""}}
	for i, w := range want {
		err := d.Step(t.Context(), t0.Add(time.Duration(i)*time.Second))
		if (err != nil) != (w.Last != "") || (err != nil && !errors.Is(err, boom)) {
			t.Errorf("Step %d: err = %v, want %v", i, err, w.Last)
		}
		_, data, _ := getData(t, d, nil)
		got := state{d.Len(), data.SourceErrors, data.LastError}
		if diff := diffJSON(w, got); diff != "" {
			t.Errorf("after step %d (-want +got):\n%s", i, diff)
		}
	}
}

func TestAuth(t *testing.T) {
	tests := []struct {
		name   string
		token  string
		path   string
		header string
		want   int
	}{
		{"no token configured", "", "/ui/data", "", 200},
		{"no token configured, header ignored", "", "/ui/data", "Bearer whatever", 200},
		{"right token", "s3cret", "/ui/data", "Bearer s3cret", 200},
		{"scheme is case-insensitive", "s3cret", "/ui/data", "bearer s3cret", 200},
		{"missing header", "s3cret", "/ui/data", "", 401},
		{"wrong token", "s3cret", "/ui/data", "Bearer nope", 401},
		{"prefix of the token", "s3cret", "/ui/data", "Bearer s3cre", 401},
		{"wrong scheme", "s3cret", "/ui/data", "Basic s3cret", 401},
		{"no space", "s3cret", "/ui/data", "Bearers3cret", 401},
		{"page needs no token", "s3cret", "/ui", "", 200},
		{"assets need no token", "s3cret", "/ui/dashboard.js", "", 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newTest(t, &scripted{samples: [][]ModelSample{{sample("m", 1)}}}, Options{Token: tc.token})
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			rec := httptest.NewRecorder()
			d.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("GET %s with %q = %d, want %d: %s", tc.path, tc.header, rec.Code, tc.want, rec.Body)
			}
			if tc.want == 401 {
				if got := rec.Header().Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
					t.Errorf("WWW-Authenticate = %q, want a Bearer challenge", got)
				}
				assertJSONError(t, rec)
			}
		})
	}
}

func assertJSONError(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var e struct{ Error string }
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" {
		t.Errorf("body %q is not {\"error\": ...}: %v", rec.Body, err)
	}
}

func TestRoutes(t *testing.T) {
	tests := []struct {
		name, method, path string
		want               int
		wantType           string
		wantBody           string
	}{
		{"page", "GET", "/ui", 200, "text/html; charset=utf-8", `src="/ui/echarts.min.js"`},
		{"page with slash", "GET", "/ui/", 200, "text/html; charset=utf-8", `data-path="/ui"`},
		{"page HEAD", "HEAD", "/ui", 200, "text/html; charset=utf-8", ""},
		{"data", "GET", "/ui/data", 200, "application/json", `"t_ms":[`},
		{"echarts", "GET", "/ui/echarts.min.js", 200, "text/javascript; charset=utf-8", "Apache Software Foundation"},
		{"script", "GET", "/ui/dashboard.js", 200, "text/javascript; charset=utf-8", "__dashboardReady"},
		{"style", "GET", "/ui/dashboard.css", 200, "text/css; charset=utf-8", ".chart"},
		{"unknown asset", "GET", "/ui/nope.js", 404, "application/json", `"error"`},
		{"no traversal", "GET", "/ui/../go.mod", 404, "application/json", `"error"`},
		{"embedded but not served", "GET", "/ui/index.html", 404, "application/json", `"error"`},
		{"other prefix", "GET", "/uix", 404, "application/json", `"error"`},
		{"outside", "GET", "/metrics", 404, "application/json", `"error"`},
		{"POST", "POST", "/ui/data", 405, "application/json", `"error"`},
	}
	d := newTest(t, &scripted{samples: [][]ModelSample{{sample("m", 1)}}}, Options{})
	if err := d.Step(t.Context(), t0); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, "/", nil)
			req.URL.Path = tc.path // unclean paths as a client could send them
			rec := httptest.NewRecorder()
			d.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("%s %s = %d, want %d: %s", tc.method, tc.path, rec.Code, tc.want, rec.Body)
			}
			if got := rec.Header().Get("Content-Type"); got != tc.wantType {
				t.Errorf("Content-Type = %q, want %q", got, tc.wantType)
			}
			if !strings.Contains(rec.Body.String(), tc.wantBody) {
				t.Errorf("body does not contain %q", tc.wantBody)
			}
			if tc.method == "HEAD" && rec.Body.Len() != 0 {
				t.Errorf("HEAD wrote a body of %d bytes", rec.Body.Len())
			}
		})
	}
}

func TestPageCustomPathAndEscaping(t *testing.T) {
	d := newTest(t, &scripted{samples: [][]ModelSample{nil}}, Options{Path: "/admin/ui", Title: `<script>x</script>`})
	rec := httptest.NewRecorder()
	d.ServeHTTP(rec, httptest.NewRequest("GET", "/admin/ui", nil))
	body := rec.Body.String()
	for _, want := range []string{`src="/admin/ui/echarts.min.js"`, `data-path="/admin/ui"`, `&lt;script&gt;x&lt;/script&gt;`} {
		if !strings.Contains(body, want) {
			t.Errorf("page does not contain %q", want)
		}
	}
	if strings.Contains(body, "<script>x</script>") {
		t.Error("title is not escaped")
	}
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("Content-Security-Policy = %q, want script-src 'self'", csp)
	}
}

func TestAssetGzipAndETag(t *testing.T) {
	d := newTest(t, &scripted{samples: [][]ModelSample{nil}}, Options{})
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest("GET", srv.URL+"/ui/echarts.min.js", nil)
	req.Header.Set("Accept-Encoding", "gzip") // set by hand: the transport then does not decompress
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	gz, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.Header.Get("Content-Encoding") != "gzip" || len(gz) > 500_000 {
		t.Errorf("echarts.min.js: Content-Encoding %q, %d bytes; want gzip under 500 kB", res.Header.Get("Content-Encoding"), len(gz))
	}
	req.Header.Set("If-None-Match", res.Header.Get("ETag"))
	res, err = srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotModified {
		t.Errorf("revalidation with the ETag = %d, want 304", res.StatusCode)
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Options)
		wantErr string
	}{
		{"defaults", func(*Options) {}, ""},
		{"custom path", func(o *Options) { o.Path = "/admin/ui" }, ""},
		{"relative path", func(o *Options) { o.Path = "ui" }, "dashboard.path"},
		{"trailing slash", func(o *Options) { o.Path = "/ui/" }, "dashboard.path"},
		{"root", func(o *Options) { o.Path = "/" }, "dashboard.path"},
		{"query in path", func(o *Options) { o.Path = "/ui?x" }, "dashboard.path"},
		{"capacity 1", func(o *Options) { o.Capacity = 1 }, "dashboard.capacity"},
		{"capacity huge", func(o *Options) { o.Capacity = 1 << 30 }, "dashboard.capacity"},
		{"interval tiny", func(o *Options) { o.Interval = time.Millisecond }, "dashboard.interval"},
		{"refresh fast", func(o *Options) { o.Refresh = 100 * time.Millisecond }, "dashboard.refresh"},
		{"refresh slow", func(o *Options) { o.Refresh = time.Minute }, "dashboard.refresh"},
		{"token with space", func(o *Options) { o.Token = "a b" }, "dashboard.token"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			tc.mutate(&o)
			err := o.Validate()
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Validate() = %v, want error naming %q", err, tc.wantErr)
			}
		})
	}
	if _, err := New(nil, Options{}); err == nil {
		t.Error("New(nil source) succeeded, want an error")
	}
}

func TestNumJSON(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{1.5, "1.5"}, {0, "0"}, {math.NaN(), "null"}, {math.Inf(1), "null"}, {math.Inf(-1), "null"}, {1e-7, "1e-07"},
	}
	for _, tc := range tests {
		b, err := json.Marshal(Num(tc.in))
		if err != nil || string(b) != tc.want {
			t.Errorf("Marshal(%v) = %s, %v; want %s", tc.in, b, err, tc.want)
		}
		var back Num
		if err := json.Unmarshal(b, &back); err != nil {
			t.Errorf("Unmarshal(%s): %v", b, err)
		}
	}
}

// FuzzServeHTTP checks that no method, path, query or Authorization header makes the handler
// panic or answer outside {200, 304, 401, 404, 405}, and that errors are JSON.
func FuzzServeHTTP(f *testing.F) {
	f.Add("GET", "/ui/data", "Bearer t")
	f.Add("HEAD", "/ui/echarts.min.js", "")
	f.Add("POST", "/ui/../../etc/passwd", "Bearer")
	f.Add("GET", "/ui//data", "bearer  t ")
	d, err := New(&scripted{samples: [][]ModelSample{{sample("m", 1)}}}, Options{Token: "t"})
	if err != nil {
		f.Fatal(err)
	}
	_ = d.Step(context.Background(), t0)
	f.Fuzz(func(t *testing.T, method, path, auth string) {
		req := httptest.NewRequest("GET", "/", nil)
		req.Method = method
		req.URL.Path = path
		req.Header.Set("Authorization", auth)
		rec := httptest.NewRecorder()
		d.ServeHTTP(rec, req)
		switch rec.Code {
		case 200, 304:
		case 401, 404, 405:
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("%s %q = %d with Content-Type %q, want JSON", method, path, rec.Code, ct)
			}
		default:
			t.Errorf("%s %q = %d", method, path, rec.Code)
		}
	})
}
