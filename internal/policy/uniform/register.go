package uniform

import "github.com/sloserve/sloserve/internal/policy"

// The uniform baselines of the cluster setting: BATCH-style uniform batching and OpenFaaS+
// (INFless §5.1).
func init() {
	for _, v := range []struct {
		name, doc string
		defaults  func() Options
	}{
		{"uniform", "uniform batching (BATCH-style): one configuration for every instance of a function", DefaultOptions},
		{"uniform-fair", "uniform batching priced by INFless's dominant share, packed, with INFless's 30 s scale-down hold (issue #17)", FairOptions},
		{"openfaas+", "OpenFaaS+ (INFless §5.1): OpenFaaS with batching, uniform instances, fixed keep-alive", OpenFaaSOptions},
	} {
		name, defaults := v.name, v.defaults
		policy.Register(policy.Spec{Name: name, Doc: v.doc, Port: policy.PortCluster,
			Needs:   policy.NeedsProfiles | policy.NeedsServers,
			Options: func() any { o := defaults(); return &o },
			New: func(_ policy.Env, options any) (any, error) {
				o, err := policy.OptionsAs(name, options, defaults)
				if err != nil {
					return nil, err
				}
				return New(o)
			}})
	}
}
