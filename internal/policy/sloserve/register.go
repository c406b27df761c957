package sloserve

import "github.com/sloserve/sloserve/internal/policy"

func init() {
	policy.Register(policy.Spec{Name: "sloserve", Port: policy.PortCluster,
		Doc:     "sloserve on a cluster: INFless's policy with placement choice, a latency guard and queue-aware dispatch",
		Needs:   policy.NeedsProfiles | policy.NeedsServers,
		Options: func() any { o := DefaultClusterOptions(); return &o },
		New: func(_ policy.Env, options any) (any, error) {
			o, err := policy.OptionsAs("sloserve", options, DefaultClusterOptions)
			if err != nil {
				return nil, err
			}
			return NewCluster(o)
		}})
}
