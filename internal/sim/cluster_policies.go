package sim

import (
	"github.com/sloserve/sloserve/internal/policy"
	_ "github.com/sloserve/sloserve/internal/policy/builtin" // the registry's policies
)

// The cluster simulator's policies are the registry's cluster policies (policy.PortCluster):
// INFless, its Fig. 11 ablations and its default without lending or spares (policy/infless),
// the BATCH-style uniform baseline and OpenFaaS+ (policy/uniform), and sloserve
// (policy/sloserve) — the same registrations the live controller builds from.

// ClusterPolicyNames returns the names NewClusterPolicy knows, sorted.
func ClusterPolicyNames() []string { return policy.Names(policy.PortCluster) }

// NewClusterPolicy returns a fresh cluster policy by name (one per run), with its defaults.
func NewClusterPolicy(name string) (policy.Cluster, error) { return policy.NewCluster(name, nil) }

// BusyClusterServers is the cluster of docs/infless.md's busy-cluster evaluation (and of
// `sloserve sim --setting infless`): 1,024 servers of 16 threads + 1 GPU, enough that no policy
// runs out of room at 1,600 rps per function; only active servers count.
const BusyClusterServers = 1024
