package lambda

import (
	"fmt"

	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/policy"
)

// The lambda baseline: every request its own serverless invocation (MArk §3, BATCH §VI).

func init() {
	policy.Register(policy.Spec{Name: "lambda", Port: policy.PortModel, Doc: "vanilla serverless: every request its own invocation, fixed memory, no batching (MArk §3, BATCH §VI)", New: policy.ModelFactory(New)})
}

// Options configures the lambda policy.
type Options struct {
	// MemoryMB is the function memory (default 3008 MB: MArk §3 Table 2's "3 GB for latency
	// comparable with c5.large", BATCH's largest).
	MemoryMB int `yaml:"memory_mb"`
}

func New(env policy.Env) (policy.Model, error) {
	o := Options{MemoryMB: policy.DefaultLambdaMemoryMB}
	if err := env.DecodeOptions(&o); err != nil {
		return policy.Model{}, err
	}
	if o.MemoryMB <= 0 {
		return policy.Model{}, fmt.Errorf("lambda.memory_mb: must be > 0, got %d", o.MemoryMB)
	}
	if env.Model.Serverless == nil {
		return policy.Model{}, fmt.Errorf("lambda: model %s has no serverless profile", env.Model.Name)
	}
	return policy.Model{
		Router:     policy.ServerlessOnly{},
		Serverless: &policy.Serverless{MemoryMB: o.MemoryMB, Batching: batching.NewNone()},
	}, nil
}
