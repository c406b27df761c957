package controller

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/cluster"
	"github.com/sloserve/sloserve/internal/keepalive"
	"github.com/sloserve/sloserve/internal/planner/infless"
	"github.com/sloserve/sloserve/internal/policy"
	_ "github.com/sloserve/sloserve/internal/policy/builtin" // the registry's policies
	inflesspol "github.com/sloserve/sloserve/internal/policy/infless"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/provider"
)

// INFless is INFless (ASPLOS '22) live for one model: it drives the simulator's INFless cluster
// policy (inflesspol.New — α-band dispatch and scaling §3.2, Alg. 1 with the share-priced
// Eq. 10 §3.4, emptiest-server-first release, defragmentation, LSTH keep-alive §3.5) with the
// model's live facts, so the live runtime and the simulator run the same decision code
// (ARCHITECTURE.md's keystone). Every step it builds the policy's view — the provider's servers
// with every model's allocations (Snapshot.Cluster), R over the last RateWindow of samples and
// over the last sample, the model's instances with the ⟨b, c, g⟩, server and batch timeout they
// were launched with and their Eq. 1 bounds from the model's profile — and maps the decision
// back: launches become provider specs (MaxBatch b, MaxWait t_slo − t_exec, Resources ⟨c, g⟩,
// Server), releases terminations, the α-band's rates dispatch weights.
//
// Two of sloserve's cluster choices stay off live, both for the same reason: a local worker's
// threads are fixed when it starts, and a terminated worker keeps its resources until its
// batches have drained. Lending (inflesspol.Options.Lend) would have to resize a running worker;
// spares (inflesspol.Options.Spare) rely on preempting at once to make room for a launch in the
// same step. Both only change what is held on servers that are active anyway.
//
// INFless is pure: it reads no clock and does no I/O; the controller owns it.
type INFless struct {
	spec    provider.Spec
	name    string
	slo     time.Duration
	prof    profile.INFlessProfile
	pred    infless.Predictor
	offset  float64
	window  time.Duration
	policy  policy.Cluster
	ids     map[string]int // provider id → the policy's instance id
	names   map[int]string
	next    int
	arrived int64
	seen    time.Time // Start of the last sample counted into arrived
}

// INFlessLiveOptions returns the INFless options the live controller runs: infless.DefaultOptions
// without lending and spares (see INFless), case (iii) held for coolDown before a release
// (controller.cool_down, whose default 30 s is INFless's 3 inactive ticks of 10 s), LSTH on the
// controller's clock (keepalive.ScaledLSTHConfig(unit)) fed per unit.
func INFlessLiveOptions(unit, coolDown time.Duration) inflesspol.Options {
	o := inflesspol.DefaultOptions()
	liveINFless(&o, unit, coolDown)
	return o
}

// liveINFless sets the live world's settings (INFlessLiveOptions) on o. Live, the profile is this
// machine's measurement (or COP's prediction, controller.cluster.operator_store), not the
// generator of the service times as in the simulator, so the policy plans with it as it is
// (inflesspol.PredictionExact): no synthetic error on top.
func liveINFless(o *inflesspol.Options, unit, coolDown time.Duration) {
	o.Prediction = inflesspol.PredictionExact
	o.Lend, o.Spare = false, false
	o.ScaleDownAfter = coolDown
	o.IdleUnit = unit
	o.KeepAlive = func() (keepalive.Policy, error) { return keepalive.NewLSTH(keepalive.ScaledLSTHConfig(unit)) }
}

// NewINFless returns INFless live for the model spec.Model, whose instances serve prof (the
// measured latency per ⟨b, c, g⟩; INFless profile format) within slo. rateWindow is INFless's R
// window (policy.DefaultRateWindow in the simulator).
func NewINFless(spec provider.Spec, slo time.Duration, prof profile.INFlessProfile, rateWindow time.Duration, o inflesspol.Options) (*INFless, error) {
	return newINFless("infless", spec, slo, prof, rateWindow, o)
}

// newINFless is NewINFless with the registered cluster policy name (infless or an ablation).
func newINFless(name string, spec provider.Spec, slo time.Duration, prof profile.INFlessProfile, rateWindow time.Duration, o inflesspol.Options) (*INFless, error) {
	if spec.Model == "" {
		return nil, fmt.Errorf("infless: spec.model must not be empty")
	}
	if slo <= 0 || rateWindow <= 0 {
		return nil, fmt.Errorf("infless %s: slo %v and rate window %v must be > 0", spec.Model, slo, rateWindow)
	}
	if len(prof.Points) == 0 {
		return nil, fmt.Errorf("infless %s: the profile has no points", spec.Model)
	}
	p, err := policy.NewCluster(name, &o) // the registry the simulator builds from too
	if err != nil {
		return nil, fmt.Errorf("infless %s: %w", spec.Model, err)
	}
	return &INFless{spec: spec, name: spec.Model, slo: slo, prof: prof, pred: infless.ProfilePredictor(prof), offset: o.Offset,
		window: rateWindow, policy: p, ids: map[string]int{}, names: map[int]string{}}, nil
}

// Scale implements autoscale.Scaler.
func (s *INFless) Scale(snap autoscale.Snapshot, now time.Time) autoscale.Decision {
	if snap.Cluster == nil {
		return autoscale.Decision{Reason: "infless: the provider models no servers (controller.cluster needs provider.kind local)"}
	}
	fv := policy.FunctionView{Index: 0, Name: s.name, Profile: s.prof, SLO: s.slo}
	fv.Rate, fv.RateNow = s.rates(snap.History)
	if fv.Rate == 0 && snap.QueueLen > 0 {
		fv.Rate = float64(snap.QueueLen) / s.window.Seconds() // requests waiting for a first instance are load too
	}
	fv.Arrivals = s.arrived
	live := map[string]bool{}
	for _, m := range snap.Fleet {
		if m.State != provider.StateLaunching && m.State != provider.StateReady {
			continue
		}
		if m.Spec.Resources.IsZero() {
			continue // not placed by INFless (e.g. launched before the policy changed)
		}
		live[m.ID] = true
		fv.Instances = append(fv.Instances, policy.InstanceView{ID: s.id(m.ID), Launch: s.launch(m.Spec), Ready: m.State == provider.StateReady,
			Resources: m.Spec.Resources})
	}
	for id := range s.ids {
		if !live[id] {
			delete(s.names, s.ids[id])
			delete(s.ids, id)
		}
	}
	v := policy.ClusterView{Cluster: snap.Cluster, Beta: cluster.DefaultBeta, Functions: []policy.FunctionView{fv}}
	d, err := s.policy.Control(v, now)
	if err != nil {
		return autoscale.Decision{Reason: "infless: " + err.Error()}
	}
	out := autoscale.Decision{Weights: map[string]float64{}}
	for _, l := range d.Launch {
		sp := s.spec
		sp.MaxBatch, sp.MaxWait, sp.Resources, sp.Server = max(l.Batch, 1), l.Timeout, l.Resources, l.Server
		out.Launch = append(out.Launch, sp)
	}
	for _, id := range append(slices.Clone(d.Release), d.Preempt...) {
		if n, ok := s.names[id]; ok {
			out.Terminate = append(out.Terminate, n)
		}
	}
	for _, in := range fv.Instances {
		// Ready instances only: the gateway knows no other (a new one starts at weight 1 until
		// the next step).
		if w := d.Weights[in.ID]; in.Ready && w > 0 && !slices.Contains(out.Terminate, s.names[in.ID]) {
			out.Weights[s.names[in.ID]] = w
		}
	}
	out.Reason = s.reason(fv, out)
	return out
}

// rates returns R over the last window of samples and over the last sample, and counts the
// samples it has not seen into the cumulative arrivals (the keep-alive's activity signal).
func (s *INFless) rates(h []autoscale.Sample) (rate, rateNow float64) {
	var n int
	var span time.Duration
	for i := len(h) - 1; i >= 0 && span < s.window; i-- {
		n += h[i].Arrivals
		span += h[i].Period
	}
	if span > 0 {
		rate = float64(n) / span.Seconds()
	}
	if k := len(h); k > 0 && h[k-1].Period > 0 {
		rateNow = float64(h[k-1].Arrivals) / h[k-1].Period.Seconds()
	}
	for _, x := range h {
		if x.Start.After(s.seen) {
			s.arrived += int64(x.Arrivals)
			s.seen = x.Start
		}
	}
	return rate, rateNow
}

// id maps a provider instance id to the policy's integer id, stable while the instance lives.
func (s *INFless) id(name string) int {
	if id, ok := s.ids[name]; ok {
		return id
	}
	s.next++
	s.ids[name], s.names[s.next] = s.next, name
	return s.next
}

// launch rebuilds the policy's InstanceLaunch of a live instance from its spec: the predicted
// t_exec (+offset) and Eq. 1 bounds of its ⟨b, c, g⟩, as Alg. 1 computed them when it placed it.
func (s *INFless) launch(sp provider.Spec) policy.InstanceLaunch {
	b := max(sp.MaxBatch, 1)
	l := policy.InstanceLaunch{Function: 0, Server: sp.Server, Resources: sp.Resources, Batch: b, Timeout: sp.MaxWait}
	if t, ok := s.pred(b, sp.Resources); ok && t > 0 {
		l.Exec = time.Duration(float64(t) * (1 + s.offset))
		l.Bounds, _ = infless.RateBounds(b, l.Exec, s.slo)
	}
	return l
}

// reason summarises a decision in one line, naming INFless's pieces.
func (s *INFless) reason(fv policy.FunctionView, d autoscale.Decision) string {
	var parts []string
	if n := len(d.Launch); n > 0 {
		var cfgs []string
		for _, sp := range d.Launch {
			cfgs = append(cfgs, fmt.Sprintf("⟨b=%d, c=%d, g=%d⟩@%d", sp.MaxBatch, sp.Resources.CPU, sp.Resources.GPU, sp.Server))
		}
		parts = append(parts, fmt.Sprintf("Alg. 1 places %s", strings.Join(cfgs, " ")))
	}
	if n := len(d.Terminate); n > 0 {
		parts = append(parts, fmt.Sprintf("release %d (α-band case iii held, a move, or LSTH idle)", n))
	}
	if len(parts) == 0 {
		parts = append(parts, "hold")
	}
	return fmt.Sprintf("infless: R %.1f/s on %d instances: %s", max(fv.Rate, fv.RateNow), len(fv.Instances), strings.Join(parts, "; "))
}
