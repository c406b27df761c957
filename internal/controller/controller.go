package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/cluster"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/slo"
)

// Gateway is the part of the gateway the controller drives: Sync adds ready instances and drains
// gone ones; RemoveInstance drains one instance and returns once its batches have completed.
type Gateway interface {
	Sync(ctx context.Context, insts []provider.Instance) error
	RemoveInstance(ctx context.Context, model, id string) error
}

// Weigher is implemented by a gateway whose dispatcher takes per-instance weights
// (gateway.SetWeights); the controller passes a Decision's Weights to it.
type Weigher interface {
	SetWeights(model string, w map[string]float64) error
}

// Placer is implemented by a provider that places instances on servers (the local provider with
// servers configured): Cluster returns a copy of its servers with the live allocations, or nil
// when it models none. The controller hands it to the scalers as Snapshot.Cluster.
type Placer interface {
	Cluster() *cluster.Cluster
}

// Reading is one model's cumulative request counters (gateway.Counters).
type Reading struct {
	// Arrivals counts requests that arrived; Completed those answered; Missed those of them that
	// failed or missed the SLO threshold.
	Arrivals, Completed, Missed int64
	// InSystem is the total time completed requests spent in the gateway.
	InSystem time.Duration
	// Queued is the number of requests waiting in the model's queue now (a gauge).
	Queued int64
}

// Reader returns a model's cumulative counters; it is called once per model per Step.
type Reader func(model string) (Reading, error)

// Model is one model the controller sizes.
type Model struct {
	// Name is the model's name.
	Name string
	// Scaler decides the model's fleet; the controller's goroutine owns it.
	Scaler autoscale.Scaler
	// Type is the instance type launched when a Decision's spec names none, and the type whose
	// price counts; PricePerHour is its price in USD/hour.
	Type         string
	PricePerHour float64
	// Min and Max bound the number of launching and ready instances (Max 0: no bound).
	Min, Max int
	// MaxBatch, when > 0, is the largest batch a launched instance takes (the instance type's
	// max_batch): a policy's per-type batch size is clamped to it.
	MaxBatch int
	// PolicyBatch clears the MaxBatch of launched specs: the model's batching policy alone
	// bounds each instance's batches (used when the scaler's per-type batch size is an artifact
	// of a configured rate rather than a measured curve).
	PolicyBatch bool
	// Route, when set, is the policy's Router (MArk's Bouncer and sloserve's tier choice) for
	// the gateway's function tier, safe for concurrent use; Serverless is the policy's
	// serverless tier (memory, BATCH's buffer). Both are nil without a function tier.
	Route      func(policy.Request, policy.TierView, time.Time) policy.Route
	Serverless *policy.Serverless
	// Forecast, when set, returns the scaler's latest forecast (requests/s) and how far ahead it
	// looks; it is called on the controller's goroutine after every Scale.
	Forecast func() (rate float64, horizon time.Duration, ok bool)
}

// Options are the controller's settings and dependencies; zero fields take defaults.
type Options struct {
	// Period is the sample period of Run; default 1 s.
	Period time.Duration
	// History is how many samples the Snapshot holds; default 600.
	History int
	// DrainTimeout bounds a drain before the instance is terminated anyway; default 30 s.
	DrainTimeout time.Duration
	// Logger receives lifecycle events (launches, terminations); nil discards them.
	Logger *slog.Logger
	// Gather, when set, is called at the start of every Step, before the Reader: the leader of
	// several gateway replicas fetches its peers' counters there (internal/controller/facts), so
	// that one Step reads one consistent fleet-wide sample. Its error is reported by Step, which
	// goes on with what was gathered.
	Gather func(ctx context.Context, now time.Time) error
}

// View is what the controller last saw and decided for one model; safe to read from any
// goroutine (View returns a copy).
type View struct {
	// At is when the view was taken.
	At time.Time
	// Forecast is the scaler's latest forecast in requests/s and Horizon how far ahead it looks;
	// HasForecast is false when the scaler does not forecast.
	Forecast    float64
	Horizon     time.Duration
	HasForecast bool
	// ArrivalRate is the last sample's arrival rate, in requests/s.
	ArrivalRate float64
	// Counts are the model's instances by type, tier and state (terminated excluded).
	Counts []Count
	// CostUSD is the cost accumulated since the controller started: every launching, ready or
	// draining instance at its type's price, per second.
	CostUSD float64
	// InstanceSeconds is the instance time accumulated since the start.
	InstanceSeconds float64
	// Reason is the scaler's latest reason.
	Reason string
}

// Count is the number of a model's instances of one type, tier and state.
type Count struct {
	Type  string
	Tier  provider.Tier
	State provider.State
	Count int
}

// Point is one entry of a model's timeline: instances launching, ready and draining at At.
type Point struct {
	At                         time.Time
	Launching, Ready, Draining int
	ArrivalRate, Forecast      float64
	Reason                     string
	Launched, Terminated       int
}

type modelState struct {
	Model
	history []autoscale.Sample
	last    Reading
	lastAt  time.Time
	started bool
	// costUSD and instanceSeconds accumulate in the step goroutine only; view and line are
	// read by View and Timeline from other goroutines and are guarded by Controller.mu.
	costUSD, instanceSeconds float64
	weights                  map[string]float64 // the last decision's dispatch weights
	view                     View
	line                     []Point
}

// Controller is the live control loop. Step and Run are called from one goroutine; View,
// Timeline and Instances from any.
type Controller struct {
	prov   provider.Provider
	gw     Gateway
	read   Reader
	opts   Options
	log    *slog.Logger
	models []*modelState

	mu       sync.Mutex
	draining map[string]bool // ids being drained and terminated
	slCost   func(model string) float64
	drains   sync.WaitGroup
}

// New returns a Controller over the provider's instances, the gateway and its counters.
func New(p provider.Provider, g Gateway, read Reader, models []Model, opts Options) (*Controller, error) {
	if p == nil || g == nil || read == nil {
		return nil, errors.New("controller: provider, gateway and reader must not be nil")
	}
	if opts.Period <= 0 {
		opts.Period = time.Second
	}
	if opts.History <= 0 {
		opts.History = 600
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 30 * time.Second
	}
	c := &Controller{prov: p, gw: g, read: read, opts: opts, log: opts.Logger, draining: map[string]bool{}}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	seen := map[string]bool{}
	for i, m := range models {
		switch {
		case m.Name == "" || seen[m.Name]:
			return nil, fmt.Errorf("controller: models[%d].name: empty or repeated %q", i, m.Name)
		case m.Scaler == nil:
			return nil, fmt.Errorf("controller: models[%d] (%s): scaler must not be nil", i, m.Name)
		case m.Min < 0 || (m.Max > 0 && m.Max < m.Min):
			return nil, fmt.Errorf("controller: models[%d] (%s): bounds [%d, %d] invalid", i, m.Name, m.Min, m.Max)
		}
		seen[m.Name] = true
		c.models = append(c.models, &modelState{Model: m})
	}
	return c, nil
}

// Instances returns the provider's instances with those the controller is draining marked
// StateDraining, so that a gateway watching this list never re-adds them.
func (c *Controller) Instances(ctx context.Context) ([]provider.Instance, error) {
	insts, err := c.prov.Instances(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range insts {
		if c.draining[insts[i].ID] && insts[i].State != provider.StateTerminated {
			insts[i].State = provider.StateDraining
		}
	}
	return insts, nil
}

// Step takes one sample of every model at now, asks its scaler, and applies the decision:
// launches through the provider, terminations as drain-then-terminate in the background. It
// then syncs the gateway with the fleet (new ready instances take batches at once).
func (c *Controller) Step(ctx context.Context, now time.Time) error {
	var errs []error
	if c.opts.Gather != nil {
		if err := c.opts.Gather(ctx, now); err != nil {
			errs = append(errs, fmt.Errorf("controller: gather facts: %w", err))
		}
	}
	insts, err := c.Instances(ctx)
	if err != nil {
		return fmt.Errorf("controller: list instances: %w", err)
	}
	// Launch order, as the simulator lists its fleet; ties keep the provider's order.
	sort.SliceStable(insts, func(i, j int) bool { return insts[i].Launched.Before(insts[j].Launched) })
	for _, m := range c.models {
		if err := c.stepModel(ctx, m, insts, now); err != nil {
			errs = append(errs, err)
		}
	}
	if insts, err := c.Instances(ctx); err == nil {
		if err := c.gw.Sync(ctx, insts); err != nil {
			errs = append(errs, fmt.Errorf("controller: sync gateway: %w", err))
		}
	}
	if w, ok := c.gw.(Weigher); ok {
		for _, m := range c.models {
			if len(m.weights) == 0 {
				continue
			}
			if err := w.SetWeights(m.Name, m.weights); err != nil {
				errs = append(errs, fmt.Errorf("controller: dispatch weights of %s: %w", m.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

func (c *Controller) stepModel(ctx context.Context, m *modelState, insts []provider.Instance, now time.Time) error {
	r, err := c.read(m.Name)
	if err != nil {
		return fmt.Errorf("controller: read %s: %w", m.Name, err)
	}
	var fleet []autoscale.Member
	for _, in := range insts {
		if in.Spec.Model != m.Name || in.State == provider.StateTerminated {
			continue
		}
		fleet = append(fleet, autoscale.Member{ID: in.ID, Type: in.Spec.Type, Tier: in.Spec.Tier, State: in.State,
			Launched: in.Launched, Ready: in.Ready, Slots: 1, Spec: in.Spec})
	}
	if !m.started {
		m.started, m.last, m.lastAt = true, r, now
	} else if now.After(m.lastAt) {
		period := now.Sub(m.lastAt)
		s := autoscale.Sample{Start: m.lastAt, Period: period,
			Arrivals: int(r.Arrivals - m.last.Arrivals), Completed: int(r.Completed - m.last.Completed),
			Missed: int(r.Missed - m.last.Missed)}
		s.Concurrency = (r.InSystem - m.last.InSystem).Seconds() / period.Seconds()
		s.Upstream = s.Concurrency
		m.history = append(m.history, s)
		if len(m.history) > c.opts.History {
			m.history = slices.Delete(m.history, 0, len(m.history)-c.opts.History)
		}
		// Cost: every instance that exists bills for the period.
		secs := float64(len(fleet)) * period.Seconds()
		m.instanceSeconds += secs
		m.costUSD += secs * m.PricePerHour / 3600
		m.last, m.lastAt = r, now
	}
	snap := autoscale.Snapshot{Fleet: fleet, History: m.history, QueueLen: int(r.Queued)}
	if pl, ok := c.prov.(Placer); ok {
		snap.Cluster = pl.Cluster() // after the previous models' launches: the provider allocates at Launch
	}
	d := m.Scaler.Scale(snap, now) // the first Step asks with no history, as the simulator's start does
	launch, term := m.Bound(d, fleet)
	c.log.Debug("controller step", append([]any{"model", m.Name, "at", now}, autoscale.StepAttrs(snap, d, len(launch), len(term))...)...)
	var errs []error
	for _, sp := range launch {
		in, err := c.prov.Launch(ctx, sp)
		if err != nil {
			errs = append(errs, fmt.Errorf("controller: launch %s: %w", m.Name, err))
			continue
		}
		c.log.Info("controller launched", "model", m.Name, "instance", in.ID, "type", sp.Type, "reason", d.Reason)
	}
	for _, id := range term {
		c.terminate(m.Name, id, d.Reason)
	}
	m.weights = d.Weights // applied by Step once the gateway is synced
	// View.
	rate := 0.0
	if n := len(m.history); n > 0 {
		h := m.history[n-1]
		rate = float64(h.Arrivals) / h.Period.Seconds()
	}
	v := View{At: now, ArrivalRate: rate, Reason: d.Reason, CostUSD: m.costUSD, InstanceSeconds: m.instanceSeconds}
	if m.Forecast != nil {
		v.Forecast, v.Horizon, v.HasForecast = m.Forecast()
	}
	counts := map[Count]int{}
	p := Point{At: now, ArrivalRate: rate, Forecast: v.Forecast, Reason: d.Reason, Launched: len(launch), Terminated: len(term)}
	for _, f := range fleet {
		st := f.State
		if slices.Contains(term, f.ID) {
			st = provider.StateDraining
		}
		counts[Count{Type: f.Type, Tier: f.Tier, State: st}]++
		switch st {
		case provider.StateLaunching:
			p.Launching++
		case provider.StateReady:
			p.Ready++
		case provider.StateDraining:
			p.Draining++
		}
	}
	p.Launching += len(launch)
	for k, n := range counts {
		k.Count = n
		v.Counts = append(v.Counts, k)
	}
	sort.Slice(v.Counts, func(i, j int) bool {
		a, b := v.Counts[i], v.Counts[j]
		if a.Type != b.Type {
			return a.Type < b.Type
		}
		return a.State < b.State
	})
	c.mu.Lock()
	m.view = v
	m.line = append(m.line, p)
	if len(m.line) > c.opts.History {
		m.line = slices.Delete(m.line, 0, len(m.line)-c.opts.History)
	}
	c.mu.Unlock()
	return errors.Join(errs...)
}

// Bound applies the model's bounds to a scaler's decision d on fleet, as Step does before acting
// on it: launches past Max are dropped, launches are added up to Min, terminations that would
// leave fewer than Min are dropped, and each launched spec is completed (model, type, tier) with
// its MaxBatch clamped to the instance type's (cleared under PolicyBatch). The simulator's
// validation (internal/experiment/validate) wraps a policy's scaler in it so that both sides
// act on the same bounded decisions.
func (m Model) Bound(d autoscale.Decision, fleet []autoscale.Member) (launch []provider.Spec, term []string) {
	launching, ready := autoscale.Snapshot{Fleet: fleet}.Counts("")
	live := launching + ready
	for _, sp := range d.Launch {
		if m.Max > 0 && live+len(launch) >= m.Max {
			break
		}
		launch = append(launch, sp)
	}
	for live+len(launch) < m.Min {
		launch = append(launch, provider.Spec{Model: m.Name, Type: m.Type, Tier: provider.TierVM})
	}
	remaining := live + len(launch)
	for _, id := range d.Terminate {
		if remaining-1 < m.Min {
			break
		}
		term = append(term, id)
		remaining--
	}
	for i := range launch {
		sp := &launch[i]
		if sp.Model == "" {
			sp.Model = m.Name
		}
		if sp.Type == "" {
			sp.Type = m.Type
		}
		if sp.Tier == "" {
			sp.Tier = provider.TierVM
		}
		if m.MaxBatch > 0 && (sp.MaxBatch == 0 || sp.MaxBatch > m.MaxBatch) {
			sp.MaxBatch = m.MaxBatch
		}
		if m.PolicyBatch {
			sp.MaxBatch = 0
		}
	}
	return launch, term
}

// terminate drains id in the gateway (its batches in flight complete; waiting requests stay
// queued for the other instances), then terminates it through the provider, in the background.
func (c *Controller) terminate(model, id, reason string) {
	c.mu.Lock()
	if c.draining[id] {
		c.mu.Unlock()
		return
	}
	c.draining[id] = true
	c.mu.Unlock()
	c.log.Info("controller draining", "model", model, "instance", id, "reason", reason)
	c.drains.Add(1)
	go func() {
		defer c.drains.Done()
		ctx, cancel := context.WithTimeout(context.Background(), c.opts.DrainTimeout)
		defer cancel()
		if err := c.gw.RemoveInstance(ctx, model, id); err != nil {
			c.log.Debug("drain before terminate", "instance", id, "err", err)
		}
		if err := c.prov.Terminate(ctx, id); err != nil && !errors.Is(err, provider.ErrNotFound) {
			c.log.Warn("terminate failed", "instance", id, "err", err)
		}
		c.mu.Lock()
		delete(c.draining, id)
		c.mu.Unlock()
		c.log.Info("controller terminated", "model", model, "instance", id)
	}()
}

// Run calls Step every Options.Period until ctx is done, logging failures, then waits for the
// drains in progress; it returns ctx's error.
//
// Each step is given its tick's instant on the grid start + k·Period (Grid), not the instant the
// goroutine woke: a scaler that acts every n periods (MArk's plan every unit) computes its next
// step as now + n·Period, and a wake-up a millisecond earlier than the previous one's made it
// wait a whole period more (measured: `sloserve validate -v` planned every 2 or 3 s live, every
// 2 s in the simulator, whose steps are exact). A tick that rounds to a grid point already
// stepped (ticks delivered late, then at once) is skipped.
func (c *Controller) Run(ctx context.Context) error {
	t := time.NewTicker(c.opts.Period)
	defer t.Stop()
	start, last := time.Now(), int64(-1)
	for {
		if k, at := Grid(start, time.Now(), c.opts.Period); k > last {
			last = k
			if err := c.Step(ctx, at); err != nil && ctx.Err() == nil {
				c.log.Warn("controller step failed", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			c.Wait()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Grid returns the index k of the grid point start + k·period nearest to now, and that point.
func Grid(start, now time.Time, period time.Duration) (int64, time.Time) {
	k := int64(math.Round(float64(now.Sub(start)) / float64(period)))
	return k, start.Add(time.Duration(k) * period)
}

// Wait returns once every drain-and-terminate in progress has finished.
func (c *Controller) Wait() { c.drains.Wait() }

// View returns the latest view of a model; false for an unknown model.
func (c *Controller) View(model string) (View, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.models {
		if m.Name == model {
			v := m.view
			v.Counts = slices.Clone(v.Counts)
			return v, true
		}
	}
	return View{}, false
}

// Timeline returns a model's points, oldest first (at most Options.History).
func (c *Controller) Timeline(model string) []Point {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.models {
		if m.Name == model {
			return slices.Clone(m.line)
		}
	}
	return nil
}

// CostUSD returns the cost accumulated by a model's instances, split by tier: the VM fleet's
// by instance-seconds, the function tier's as billed per invocation (SetServerlessCost).
func (c *Controller) CostUSD(model string) slo.CostUSD {
	v, _ := c.View(model)
	c.mu.Lock()
	f := c.slCost
	c.mu.Unlock()
	sl := 0.0
	if f != nil {
		sl = f(model)
	}
	return slo.CostUSD{Total: v.CostUSD + sl, VM: v.CostUSD, Serverless: sl}
}

// SetServerlessCost sets where CostUSD reads a model's function-tier bill (safe for
// concurrent use; f must be too).
func (c *Controller) SetServerlessCost(f func(model string) float64) {
	c.mu.Lock()
	c.slCost = f
	c.mu.Unlock()
}
