package sim

import (
	"fmt"
	"sort"
)

// clusterPolicies are the policies of the cluster simulator by name: INFless, its Fig. 11
// ablations and its default without lending (infless-nolend) or without spares (infless-nospare),
// the BATCH-style uniform baseline,
// OpenFaaS+ (INFless §5.1) and sloserve.
var clusterPolicies = map[string]func() (ClusterPolicy, error){
	"infless":   func() (ClusterPolicy, error) { return NewINFlessCluster("infless", DefaultINFlessOptions()) },
	"uniform":   func() (ClusterPolicy, error) { return NewUniformCluster(DefaultUniformOptions()) },
	"openfaas+": func() (ClusterPolicy, error) { return NewUniformCluster(DefaultOpenFaaSOptions()) },
	"sloserve":  func() (ClusterPolicy, error) { return NewSloserveCluster(DefaultSloserveClusterOptions()) },
	"infless-BB": func() (ClusterPolicy, error) {
		o := DefaultINFlessOptions()
		o.MaxBatch = 1
		return NewINFlessCluster("infless-BB", o)
	},
	"infless-OP1.5": func() (ClusterPolicy, error) {
		o := DefaultINFlessOptions()
		o.Offset = 0.5
		return NewINFlessCluster("infless-OP1.5", o)
	},
	"infless-OP2": func() (ClusterPolicy, error) {
		o := DefaultINFlessOptions()
		o.Offset = 1.0
		return NewINFlessCluster("infless-OP2", o)
	},
	"infless-RS": func() (ClusterPolicy, error) {
		o := DefaultINFlessOptions()
		o.FirstFit = true
		return NewINFlessCluster("infless-RS", o)
	},
	"infless-nolend": func() (ClusterPolicy, error) {
		o := DefaultINFlessOptions()
		o.Lend = false
		return NewINFlessCluster("infless-nolend", o)
	},
	"infless-nospare": func() (ClusterPolicy, error) {
		o := DefaultINFlessOptions()
		o.Spare = false
		return NewINFlessCluster("infless-nospare", o)
	},
}

// ClusterPolicyNames returns the names NewClusterPolicy knows, sorted.
func ClusterPolicyNames() []string {
	out := make([]string, 0, len(clusterPolicies))
	for n := range clusterPolicies {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// NewClusterPolicy returns a fresh cluster policy by name (one per run).
func NewClusterPolicy(name string) (ClusterPolicy, error) {
	f, ok := clusterPolicies[name]
	if !ok {
		return nil, fmt.Errorf("cluster policy %q: %w (have %v)", name, ErrUnknownPolicy, ClusterPolicyNames())
	}
	return f()
}

// BusyClusterServers is the cluster of docs/infless.md's busy-cluster evaluation (and of
// `sloserve sim --setting infless`): 1,024 servers of 16 threads + 1 GPU, enough that no policy
// runs out of room at 1,600 rps per function; only active servers count.
const BusyClusterServers = 1024
