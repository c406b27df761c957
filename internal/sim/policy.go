package sim

import (
	"github.com/sloserve/sloserve/internal/policy"
	_ "github.com/sloserve/sloserve/internal/policy/builtin" // the registry's policies
)

// The simulator's single-model engine (Run) drives policy.Model, the model port of the one
// policy registry (internal/policy): the registrations of policy/builtin. These names keep the
// engine's call sites short.
type (
	// Policy is policy.Model.
	Policy = policy.Model
	// Env is policy.Env.
	Env = policy.Env
	// LoadStats is policy.LoadStats.
	LoadStats = policy.LoadStats
	// Request is policy.Request.
	Request = policy.Request
	// TierView is policy.TierView.
	TierView = policy.TierView
	// Route is policy.Route.
	Route = policy.Route
	// Serverless is policy.Serverless.
	Serverless = policy.Serverless
	// VerdictRouter is policy.VerdictRouter.
	VerdictRouter = policy.VerdictRouter
)

// The routes.
const (
	RouteVM         = policy.RouteVM
	RouteServerless = policy.RouteServerless
	RouteReject     = policy.RouteReject
)

// ErrNotImplemented is policy.ErrNotImplemented.
var ErrNotImplemented = policy.ErrNotImplemented

// ErrUnknownPolicy is policy.ErrUnknown.
var ErrUnknownPolicy = policy.ErrUnknown

// New builds the named model policy from the registry for env; a zero env.Start is the
// simulator's epoch (DefaultEpoch).
func New(name string, env Env) (Policy, error) {
	if env.Start.IsZero() {
		env.Start = DefaultEpoch
	}
	return policy.NewModel(name, env)
}

// Names returns the registered model policies' names, sorted.
func Names() []string { return policy.Names(policy.PortModel) }

// Summary returns the one-line description a model policy registered with.
func Summary(name string) string {
	s, _ := policy.Lookup(policy.PortModel, name)
	return s.Doc
}

// Register registers a model policy built by f (policy.Register with PortModel).
func Register(name, summary string, f func(Env) (Policy, error)) {
	policy.Register(policy.Spec{Name: name, Doc: summary, Port: policy.PortModel, New: policy.ModelFactory(f)})
}
