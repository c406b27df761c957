package uniform

import (
	"fmt"
	"math"
	"time"

	"github.com/sloserve/sloserve/internal/cluster"
	"github.com/sloserve/sloserve/internal/keepalive"
	"github.com/sloserve/sloserve/internal/planner/infless"
	"github.com/sloserve/sloserve/internal/policy"
	inflesspol "github.com/sloserve/sloserve/internal/policy/infless"
)

// Options configures the BATCH-style uniform-batching baseline (INFless §5.1's BATCH
// re-developed atop OpenFaaS with CPU and GPU allocations).
type Options struct {
	// Offset inflates predicted execution times as INFless's does, so that both run on the same
	// latency model (+10 %). ≥ 0.
	Offset float64
	// MaxBatch caps the batch sizes considered (≤ 32 as for INFless). ≥ 1.
	MaxBatch int
	// KeepAlive is the fixed keep-alive of instances no longer needed (BATCH relies on the
	// platform's fixed window: AWS Lambda's 10 minutes). ≥ 0.
	KeepAlive time.Duration
	// Resources, when non-zero, fixes every instance's ⟨cpu, gpu⟩ instead of choosing it (the
	// OpenFaaS+ baseline: 2 CPU cores and 10 % of a GPU's SMs, INFless §5.1).
	Resources cluster.Resources
	// Price is how a configuration's resources are priced when the throughput per resource
	// r_up / price picks it: PriceFLOPS (the zero value: βc + g, Eq. 10's FLOPS weight, which
	// rates a thread at 0.45 GPU % and so picks CPU-only configurations that strand the GPU) or
	// PriceShare (INFless's own cost model in sloserve: the dominant share of the server,
	// max(c/C, g/G), plan.ShareCost on an empty server).
	Price Price
	// Fullest places each instance on the fullest server it fits on (the largest plan.Fill, ties
	// to the lower index) instead of the first one; INFless's placement packs the same way.
	Fullest bool
	// Name names the policy; "" = "uniform".
	Name string
}

// Price selects how Options.Price weighs a configuration's ⟨c, g⟩.
type Price int

const (
	// PriceFLOPS weighs βc + g (INFless Eq. 10 as printed, β the run's).
	PriceFLOPS Price = iota
	// PriceShare weighs the dominant share max(c/C, g/G) of the server's capacity.
	PriceShare
)

// MarshalText writes "flops" or "share".
func (p Price) MarshalText() ([]byte, error) {
	switch p {
	case PriceFLOPS:
		return []byte("flops"), nil
	case PriceShare:
		return []byte("share"), nil
	}
	return nil, fmt.Errorf("uniform.price: unknown %d", int(p))
}

// UnmarshalText reads "flops" or "share".
func (p *Price) UnmarshalText(b []byte) error {
	switch string(b) {
	case "flops":
		*p = PriceFLOPS
	case "share":
		*p = PriceShare
	default:
		return fmt.Errorf("uniform.price: want flops or share, got %q", b)
	}
	return nil
}

// FairOptions is the baseline a competent operator would run on INFless's cluster (issue #17):
// BATCH-style uniform batching priced by the same dominant share INFless's placement uses
// (PriceShare), packed onto the fullest server, with INFless's 30-second scale-down hold
// (inflesspol.DefaultScaleDownAfter) instead of Lambda's 10-minute keep-alive.
func FairOptions() Options {
	o := DefaultOptions()
	o.Price, o.Fullest, o.KeepAlive, o.Name = PriceShare, true, inflesspol.DefaultScaleDownAfter, "uniform-fair"
	return o
}

// OpenFaaSOptions returns INFless §5.1's OpenFaaS+ baseline: no batching (b = 1), every
// instance 2 CPU cores and 10 % GPU SMs, a fixed 300-second keep-alive, uniform scaling.
func OpenFaaSOptions() Options {
	return Options{Offset: infless.DefaultOffset, MaxBatch: 1, KeepAlive: 300 * time.Second,
		Resources: cluster.Resources{CPU: 2, GPU: 10}, Name: "openfaas+"}
}

// DefaultOptions returns +10 %, b ≤ 32 and a 10-minute fixed keep-alive.
func DefaultOptions() Options {
	return Options{Offset: infless.DefaultOffset, MaxBatch: inflesspol.DefaultMaxBatch, KeepAlive: keepalive.DefaultFixedKeepAlive}
}

// Validate names the first bad field.
func (o Options) Validate() error {
	switch {
	case !(o.Offset >= 0) || math.IsInf(o.Offset, 1):
		return fmt.Errorf("uniform.offset: must be ≥ 0, got %v", o.Offset)
	case o.MaxBatch < 1:
		return fmt.Errorf("uniform.max_batch: must be ≥ 1, got %d", o.MaxBatch)
	case o.KeepAlive < 0:
		return fmt.Errorf("uniform.keep_alive: must be ≥ 0, got %v", o.KeepAlive)
	case o.Price != PriceFLOPS && o.Price != PriceShare:
		return fmt.Errorf("uniform.price: unknown %d", o.Price)
	case o.Resources.CPU < 0 || o.Resources.GPU < 0:
		return fmt.Errorf("uniform.resources: must be non-negative, got %+v", o.Resources)
	}
	return nil
}

type uniformPolicy struct {
	o   Options
	fns map[int]*fnState
}

type fnState struct {
	opt    infless.Option
	ok     bool
	recent []target // targets within the keep-alive window, a max-deque
}

type target struct {
	at time.Time
	n  int
}

// New returns the BATCH-style uniform baseline for RunCluster: every instance of a
// function has the same configuration ⟨b, c, g⟩, chosen once from the function's mean rate the
// way BATCH's optimiser minimises the cost per request — the feasible configuration with the
// highest throughput per resource (r_up / (βc + g)) whose batch fills at the mean rate (b = 1, or
// r_low < MeanRPS; resources priced by Options.Price) — and the fleet is scaled uniformly:
// ⌈R / r_up⌉ instances, placed first-fit (or on the fullest server, Options.Fullest),
// each released only after it was not needed for the fixed keep-alive. Requests are spread evenly
// over the ready instances (equal weights).
func New(o Options) (policy.Cluster, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &uniformPolicy{o: o, fns: map[int]*fnState{}}, nil
}

func (p *uniformPolicy) Name() string {
	if p.o.Name != "" {
		return p.o.Name
	}
	return "uniform"
}

// price is what Options.Price charges for r on a server of capacity capacity.
func (p *uniformPolicy) price(r, capacity cluster.Resources, beta float64) float64 {
	if p.o.Price == PriceShare {
		return infless.ShareCost(r, capacity, capacity)
	}
	return r.Weighted(beta)
}

// place returns the server r goes on: the first it fits on, or with Fullest the one it fills most.
func (p *uniformPolicy) place(c *cluster.Cluster, r cluster.Resources) (int, bool) {
	if !p.o.Fullest {
		return c.FirstFit(r)
	}
	best, bestFill := -1, -1.0
	for j := range c.Len() {
		free := c.Free(j)
		if !free.Fits(r) {
			continue
		}
		if f := infless.Fill(r, free, c.Capacity(j)); f > bestFill {
			best, bestFill = j, f
		}
	}
	return best, best >= 0
}

func (p *uniformPolicy) state(fv policy.FunctionView, beta float64, capacity cluster.Resources) *fnState {
	if st, ok := p.fns[fv.Index]; ok {
		return st
	}
	batches, res := infless.ProfileSpace(fv.Profile)
	var bs []int
	for _, b := range batches {
		if b <= p.o.MaxBatch {
			bs = append(bs, b)
		}
	}
	st := &fnState{}
	if !p.o.Resources.IsZero() {
		res = []cluster.Resources{p.o.Resources}
	}
	if len(bs) > 0 {
		cfg := infless.Config{SLO: fv.SLO, Batches: bs, Resources: res, Offset: p.o.Offset}
		best := -1.0
		for _, o := range infless.Options(cfg, infless.ProfilePredictor(fv.Profile)) {
			if o.Batch > 1 && !(fv.MeanRPS > o.Bounds.Low) {
				continue
			}
			if e := o.Bounds.Up / p.price(o.Resources, capacity, beta); e > best {
				best, st.opt, st.ok = e, o, true
			}
		}
	}
	p.fns[fv.Index] = st
	return st
}

// Control scales every function's uniform fleet.
func (p *uniformPolicy) Control(v policy.ClusterView, now time.Time) (policy.ClusterDecision, error) {
	d := policy.ClusterDecision{Weights: map[int]float64{}}
	for _, fv := range v.Functions {
		capacity := cluster.DefaultServer
		if v.Cluster.Len() > 0 {
			capacity = v.Cluster.Capacity(0)
		}
		st := p.state(fv, v.Beta, capacity)
		if !st.ok {
			continue // no configuration meets the SLO: the function's requests fail
		}
		n := int(math.Ceil(max(fv.Rate, fv.RateNow) / st.opt.Bounds.Up))
		// Max-deque of the targets over the keep-alive window: an instance is kept while any
		// target in the last KeepAlive needed it.
		for len(st.recent) > 0 && st.recent[len(st.recent)-1].n <= n {
			st.recent = st.recent[:len(st.recent)-1]
		}
		st.recent = append(st.recent, target{now, n})
		for len(st.recent) > 0 && now.Sub(st.recent[0].at) > p.o.KeepAlive {
			st.recent = st.recent[1:]
		}
		keep := n
		if len(st.recent) > 0 {
			keep = max(keep, st.recent[0].n)
		}
		alive := len(fv.Instances)
		for ; alive < n; alive++ {
			server, ok := p.place(v.Cluster, st.opt.Resources)
			if !ok {
				break
			}
			if err := v.Cluster.Place(server, st.opt.Resources); err != nil {
				return d, err
			}
			d.Launch = append(d.Launch, inflesspol.LaunchOf(fv, st.opt, server))
		}
		// Release the newest surplus instances first.
		for k := len(fv.Instances) - 1; k >= 0 && alive > keep; k-- {
			d.Release = append(d.Release, fv.Instances[k].ID)
			alive--
		}
		for _, in := range fv.Instances {
			d.Weights[in.ID] = st.opt.Bounds.Up
		}
	}
	return d, nil
}
