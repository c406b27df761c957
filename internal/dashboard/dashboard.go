package dashboard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/slo"
)

// Source reports the current state of every model the dashboard shows. The dashboard calls
// Sample from one goroutine at a time (Step, driven by Run), once per Options.Interval, and
// copies what it keeps, so an implementation may reuse the returned slices on the next call.
// An implementation returns quickly (it reads counters; it does not wait for traffic) and
// honours ctx.
type Source interface {
	Sample(ctx context.Context, now time.Time) ([]ModelSample, error)
}

// SourceFunc adapts a plain function to Source.
type SourceFunc func(ctx context.Context, now time.Time) ([]ModelSample, error)

// Sample calls f(ctx, now).
func (f SourceFunc) Sample(ctx context.Context, now time.Time) ([]ModelSample, error) {
	return f(ctx, now)
}

// ModelSample is one model's state at one instant, as a Source reports it. Windowed quantities
// (rate, batch mean, percentiles, attainment) cover the time since the previous Sample call or
// a recent window of the Source's choosing; Cost is cumulative. A NaN float (or a zero
// latency) means "unknown" and is drawn as a gap.
type ModelSample struct {
	// Model is the model's name; samples with an empty name are dropped.
	Model string
	// SLO is the model's latency objective: the threshold is drawn on the latency chart and the
	// target on the attainment chart.
	SLO slo.Spec
	// ArrivalRate is the observed arrival rate, in requests per second.
	ArrivalRate float64
	// Forecast is the forecaster's predicted arrival rate, in requests per second, for the
	// instant ForecastHorizon after the sample; NaN when no forecaster runs for this model.
	Forecast float64
	// ForecastHorizon is how far ahead Forecast looks (e.g. MArk's planning window). The chart
	// draws each forecast at the instant it predicts, over the arrivals it predicts.
	ForecastHorizon time.Duration
	// Instances counts the model's instances by type, tier and state; counts in
	// provider.StateTerminated and zero counts are ignored.
	Instances []InstanceCount
	// BatchMean is the mean size of the batches dispatched in the window, in requests.
	BatchMean float64
	// BatchMax is the current maximum batch size, in requests: the batching policy's current
	// limit (e.g. MLProxy's AIMD N), or the largest batch of the window when the policy has none.
	BatchMax float64
	// Latency holds end-to-end latency percentiles of the requests completed in the window;
	// zero when none completed.
	Latency Latency
	// Attainment is the fraction, in [0, 1], of the window's requests that completed within
	// SLO.Threshold (failed and rejected requests count as misses); NaN when there were none.
	Attainment float64
	// Cost is the cost accumulated since the start, in US dollars, split by tier.
	Cost slo.CostUSD
}

// Latency holds latency percentiles.
type Latency struct {
	// P50, P95 and P99 are the 50th, 95th and 99th percentiles.
	P50, P95, P99 time.Duration
}

// InstanceCount is the number of a model's instances of one type, tier and state.
type InstanceCount struct {
	// Type is the instance type's catalog name (e.g. "c5.large", "local").
	Type string
	// Tier is the tier the instances belong to.
	Tier provider.Tier
	// State is their lifecycle state.
	State provider.State
	// Count is how many there are.
	Count int
}

// Options configures a Dashboard.
type Options struct {
	// Path is the URL path the page is served at (the data endpoint is Path+"/data"); it starts
	// with "/" and does not end with one. Default "/ui".
	Path string
	// Title is shown in the page header. Default "sloserve".
	Title string
	// Capacity is the number of snapshots kept in the ring, in samples; with Interval it bounds
	// the time the charts span (600 × 1 s = 10 minutes). Default 600.
	Capacity int
	// Interval is the sampling period of Run, in wall-clock time. Default 1 s.
	Interval time.Duration
	// Refresh is how often the page polls the data endpoint; between 500 ms and 10 s.
	// Default 1 s.
	Refresh time.Duration
	// Token, when not empty, is the bearer token the data endpoint requires
	// ("Authorization: Bearer <Token>"). The page and its scripts carry no data and are served
	// without it; the page reads the token from its URL fragment (/ui#token=...), which browsers
	// never send to the server.
	Token string
	// Logger receives a warning when the Source starts failing or changes its error; nil
	// discards.
	Logger *slog.Logger
}

// DefaultOptions returns the options used for zero fields.
func DefaultOptions() Options {
	return Options{
		Path:     "/ui",
		Title:    "sloserve",
		Capacity: 600,
		Interval: time.Second,
		Refresh:  time.Second,
	}
}

// withDefaults fills zero fields from DefaultOptions.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Path == "" {
		o.Path = d.Path
	}
	if o.Title == "" {
		o.Title = d.Title
	}
	if o.Capacity == 0 {
		o.Capacity = d.Capacity
	}
	if o.Interval == 0 {
		o.Interval = d.Interval
	}
	if o.Refresh == 0 {
		o.Refresh = d.Refresh
	}
	return o
}

// maxCapacity bounds the ring so that one data response stays small (a day at 1 s is 86 400).
const maxCapacity = 100_000

// Validate reports the first field that is out of range.
func (o Options) Validate() error {
	switch {
	case !strings.HasPrefix(o.Path, "/") || (len(o.Path) > 1 && strings.HasSuffix(o.Path, "/")) || o.Path == "/":
		return fmt.Errorf("dashboard.path: must start with \"/\", not end with one and not be \"/\", got %q", o.Path)
	case strings.ContainsAny(o.Path, "?#"):
		return fmt.Errorf("dashboard.path: must not contain '?' or '#', got %q", o.Path)
	case o.Capacity < 2 || o.Capacity > maxCapacity:
		return fmt.Errorf("dashboard.capacity: must be in [2, %d], got %d", maxCapacity, o.Capacity)
	case o.Interval < 10*time.Millisecond:
		return fmt.Errorf("dashboard.interval: must be >= 10ms, got %v", o.Interval)
	case o.Refresh < 500*time.Millisecond || o.Refresh > 10*time.Second:
		return fmt.Errorf("dashboard.refresh: must be in [500ms, 10s], got %v", o.Refresh)
	case strings.ContainsAny(o.Token, " \t\r\n"):
		return errors.New("dashboard.token: must not contain white space")
	}
	return nil
}

// snapshot is every model's sample at one instant.
type snapshot struct {
	at     time.Time
	models []ModelSample
}

// Dashboard samples a Source into a bounded ring and serves the page and its data. It is an
// http.Handler for Options.Path and everything below it; Step and Run may be called from
// one goroutine while ServeHTTP runs on others.
type Dashboard struct {
	src  Source
	opts Options
	log  *slog.Logger
	page []byte // rendered index.html

	mu      sync.RWMutex
	ring    []snapshot // ring buffer, len == opts.Capacity once full
	head    int        // index of the oldest snapshot once the ring is full
	errs    int64      // Source errors so far
	lastErr string     // the latest Source error, "" after a successful sample
}

// New returns a Dashboard over src with opts (zero fields take DefaultOptions).
func New(src Source, opts Options) (*Dashboard, error) {
	if src == nil {
		return nil, errors.New("dashboard: nil Source")
	}
	opts = opts.withDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	page, err := renderPage(opts)
	if err != nil {
		return nil, err
	}
	return &Dashboard{src: src, opts: opts, log: log, page: page, ring: make([]snapshot, 0, opts.Capacity)}, nil
}

// Options returns the options in force, defaults filled in.
func (d *Dashboard) Options() Options { return d.opts }

// Step samples the Source at now and appends the snapshot to the ring, evicting the oldest
// once the ring holds Options.Capacity snapshots. A Source error is counted, shown on the
// page and returned; the ring is left as it was.
func (d *Dashboard) Step(ctx context.Context, now time.Time) error {
	samples, err := d.src.Sample(ctx, now)
	if err != nil {
		d.mu.Lock()
		d.errs++
		changed := d.lastErr != err.Error()
		d.lastErr = err.Error()
		d.mu.Unlock()
		if changed {
			d.log.Warn("dashboard: source failed", "err", err)
		}
		return fmt.Errorf("sample source: %w", err)
	}
	snap := snapshot{at: now, models: cloneSamples(samples)}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lastErr = ""
	if len(d.ring) < d.opts.Capacity {
		d.ring = append(d.ring, snap)
		return nil
	}
	d.ring[d.head] = snap
	d.head = (d.head + 1) % len(d.ring)
	return nil
}

// Run calls Step once at once and then every Options.Interval until ctx is done, when it
// returns nil. Each Step gets at most one Interval to sample; Source errors do not stop it.
func (d *Dashboard) Run(ctx context.Context) error {
	t := time.NewTicker(d.opts.Interval)
	defer t.Stop()
	now := time.Now()
	for {
		sctx, cancel := context.WithTimeout(ctx, d.opts.Interval)
		_ = d.Step(sctx, now) // counted and shown on the page
		cancel()
		select {
		case <-ctx.Done():
			return nil
		case now = <-t.C:
		}
	}
}

// Len returns the number of snapshots in the ring.
func (d *Dashboard) Len() int {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return len(d.ring)
}

// snapshots returns the ring's snapshots oldest first (sharing their immutable contents),
// the Source error count and the latest error.
func (d *Dashboard) snapshots() ([]snapshot, int64, string) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	out := make([]snapshot, 0, len(d.ring))
	out = append(out, d.ring[d.head:]...)
	out = append(out, d.ring[:d.head]...)
	return out, d.errs, d.lastErr
}

// cloneSamples deep-copies samples, dropping unnamed models, terminated and zero instance
// counts, so the ring never aliases the Source's memory.
func cloneSamples(in []ModelSample) []ModelSample {
	out := make([]ModelSample, 0, len(in))
	for _, s := range in {
		if s.Model == "" {
			continue
		}
		ic := make([]InstanceCount, 0, len(s.Instances))
		for _, c := range s.Instances {
			if c.Count <= 0 || c.State == provider.StateTerminated {
				continue
			}
			ic = append(ic, c)
		}
		s.Instances = slices.Clip(ic)
		out = append(out, s)
	}
	return out
}
