package infless

import "github.com/sloserve/sloserve/internal/policy"

// INFless and the ablations of its Fig. 11 (BB: no batching; OP1.5, OP2: larger offsets; RS:
// no resource-aware scheduling), and sloserve's default without lending or without spares.
func init() {
	for _, v := range []struct {
		name, doc string
		set       func(*Options)
	}{
		{"infless", "INFless (ASPLOS '22): non-uniform per-instance batching, α-band dispatch and scaling §3.2, Alg. 1 placement §3.4, LSTH keep-alive §3.5", func(*Options) {}},
		{"infless-BB", "INFless Fig. 11 ablation BB: batch size 1", func(o *Options) { o.MaxBatch = 1 }},
		{"infless-OP1.5", "INFless Fig. 11 ablation OP1.5: +50 % execution-time offset", func(o *Options) { o.Offset = 0.5 }},
		{"infless-OP2", "INFless Fig. 11 ablation OP2: +100 % execution-time offset", func(o *Options) { o.Offset = 1.0 }},
		{"infless-RS", "INFless Fig. 11 ablation RS: maximum-throughput configuration, first fit", func(o *Options) { o.FirstFit = true }},
		{"infless-nolend", "INFless without lending free server resources (plan.Lend)", func(o *Options) { o.Lend = false }},
		{"infless-nospare", "INFless without spare b = 1 instances (plan.Spares)", func(o *Options) { o.Spare = false }},
		{"infless-exact", "INFless planning with the exact profile that generates the simulated service times: an oracle, for comparison (issue #17)", func(o *Options) { o.Prediction = PredictionExact }},
	} {
		name, set := v.name, v.set
		defaults := func() Options {
			o := DefaultOptions()
			set(&o)
			return o
		}
		policy.Register(policy.Spec{Name: name, Doc: v.doc, Port: policy.PortCluster,
			Needs:   policy.NeedsProfiles | policy.NeedsServers,
			Options: func() any { o := defaults(); return &o },
			New: func(_ policy.Env, options any) (any, error) {
				o, err := policy.OptionsAs(name, options, defaults)
				if err != nil {
					return nil, err
				}
				return New(name, o)
			}})
	}
}
