package policy

import (
	"errors"
	"time"

	"github.com/sloserve/sloserve/internal/admission"
	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/dispatch"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/slo"
)

// The model port: one model served by a VM fleet behind one shared batch queue, with an
// optional serverless tier (MArk, BATCH, MLProxy and their baselines). The simulator's engine
// (sim.Run) drives a Model's parts; so does the live controller.

// Model is one model's serving strategy, as the simulator and the live controller run it: a bundle of pure decision objects that
// the live runtime drives too. The engine owns every Policy it is given and calls its parts from
// one goroutine.
//
// Adding a policy is one package under internal/policy whose init calls Register with a Spec
// of PortModel whose New fills in this struct (see policy/baseline's fixed for the smallest
// example and docs/sim.md, "Adding a policy"). The engine never changes for a new policy.
type Model struct {
	// Name is the registered name.
	Name string
	// Scaler decides the VM fleet: asked at every sampling boundary (Config.SamplePeriod) and at
	// the Next time it returns. Nil means the policy has no VM tier.
	Scaler autoscale.Scaler
	// Initial lists VM instances that are ready when the run starts (a warmed-up fleet).
	Initial []provider.Spec
	// Batching decides the VM tier's shared queue (nil: dispatch one request at a time as soon as
	// a slot is free). An instance whose Spec.MaxBatch is set never gets a larger batch.
	Batching batching.Policy
	// Router decides per request which tier serves it, or rejects it. Nil routes everything to the
	// VM tier when Scaler is set, else to the serverless tier.
	Router Router
	// Dispatcher picks the instance a VM batch goes to (internal/dispatch, the gateway's picks);
	// nil means dispatch.DefaultName. The snapshot lists ready instances with a free slot in
	// launch order; Weight is the instance's capacity at batch 1 in requests per second.
	Dispatcher dispatch.Picker
	// Serverless configures the serverless tier; nil means the policy does not use one.
	Serverless *Serverless
}

// Serverless is a policy's configuration of the serverless tier.
type Serverless struct {
	// MemoryMB is each function instance's memory, in MB (clamped to the catalog's range).
	MemoryMB int
	// Batching decides the serverless tier's queue (nil: one request per invocation, at once).
	Batching batching.Policy
	// KeepAlive overrides the catalog's keep-alive of idle function instances; 0 = catalog's.
	KeepAlive time.Duration
}

// DefaultLambdaMemoryMB is the serverless tier's default function memory (the lambda baseline's,
// and the BATCH and MArk serverless tiers' starting point): 3,008 MB, Lambda's largest in MArk's and
// BATCH's papers.
const DefaultLambdaMemoryMB = 3008

// Route is a routing decision for one request.
type Route uint8

// The routes.
const (
	RouteVM Route = iota
	RouteServerless
	RouteReject
)

// Request is what a Router knows about one arriving request.
type Request struct {
	Arrival, Deadline time.Time
}

// TierView is the VM tier's state as the engine sees it when a request arrives.
type TierView struct {
	// QueueLen is the number of requests waiting in the VM queue.
	QueueLen int
	// Ready is the number of ready instances; Slots their total slots; FreeSlots the idle ones.
	Ready, Slots, FreeSlots int
	// MaxBatch is the VM batching policy's current largest batch.
	MaxBatch int
	// BatchTime is the service time of a MaxBatch batch on the slowest ready instance type
	// (0 when none is ready).
	BatchTime time.Duration
	// Admission is the one admission estimator's verdict on the request (admission.Admit, the
	// live gateway's rule): whether the VM tier finishes it before its deadline. A Router
	// decides what a refusal means (spill to the serverless tier, or reject: the live 429);
	// without a Router a refused request is rejected.
	Admission admission.Verdict
}

// Backlog estimates how long a request admitted now waits before its batch starts service:
// the queue ahead of it drains MaxBatch requests per BatchTime per slot. It is +Inf-like
// (1<<62) when nothing is ready.
func (v TierView) Backlog() time.Duration {
	if v.Slots == 0 || v.BatchTime == 0 {
		return 1 << 62
	}
	if v.FreeSlots > 0 && v.QueueLen < v.FreeSlots*max(v.MaxBatch, 1) {
		return 0
	}
	rounds := (v.QueueLen/max(v.MaxBatch, 1))/v.Slots + 1
	return time.Duration(rounds) * v.BatchTime
}

// Router decides which tier serves a request (MArk's Bouncer is one). Implementations are pure.
type Router interface {
	Route(r Request, v TierView, now time.Time) Route
}

// VerdictRouter is a Router whose route depends on nothing of the request and the tier's view
// but the admission verdict's Admit and Reason (v.Admission): MArk's Bouncer, sloserve's tier
// choice, the serverless-only policies. The simulator asks RouteVerdict without building the
// request's times and the view (issue #17); Route answers the same for every request and view
// carrying that verdict (TestVerdictRoutersMatchRoute).
type VerdictRouter interface {
	Router
	RouteVerdict(admit bool, reason string) Route
}

// ServerlessOnly is the Router of a policy without a VM tier (lambda, batch): every request
// goes to the serverless tier.
type ServerlessOnly struct{}

var _ VerdictRouter = ServerlessOnly{}

// Route implements Router.
func (ServerlessOnly) Route(Request, TierView, time.Time) Route { return RouteServerless }

// RouteVerdict implements VerdictRouter.
func (ServerlessOnly) RouteVerdict(bool, string) Route { return RouteServerless }

// RouterFunc adapts a function to Router.
type RouterFunc func(r Request, v TierView, now time.Time) Route

// Route calls f.
func (f RouterFunc) Route(r Request, v TierView, now time.Time) Route { return f(r, v, now) }

// Env is the world a policy is built for, for one run: what New receives.
type Env struct {
	// Catalog is the virtual cloud's catalog.
	Catalog *cost.Catalog
	// Model is the served model's profile.
	Model profile.Model
	// SLO is the run's latency objective.
	SLO slo.Spec
	// Load summarises the trace (policies that provision statically size for it).
	Load LoadStats
	// Start is when the run starts (the simulator's epoch; the live controller's start).
	Start time.Time
	// Decode decodes the policy's own options (the config's policies.<name> section) into v;
	// it leaves v untouched when the section is absent and rejects unknown fields.
	Decode func(v any) error
}

// LoadStats summarises a trace's request rate.
type LoadStats struct {
	// MeanRPS is the mean rate and PeakRPS the highest one-minute rate, requests per second.
	MeanRPS, PeakRPS float64
}

// Decode calls e.Decode when set: a policy's options decoder.
func (e Env) DecodeOptions(v any) error {
	if e.Decode == nil {
		return nil
	}
	return e.Decode(v)
}

// ErrNotImplemented is returned by the New of a registration that points elsewhere: infless
// and cocktail registered on PortModel run on their own worlds (the cluster and ensemble
// simulators), and the error says how.
var ErrNotImplemented = errors.New("not available in the single-model engine")
