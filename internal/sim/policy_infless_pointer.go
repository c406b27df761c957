package sim

import (
	"fmt"

	"github.com/sloserve/sloserve/internal/policy"
)

// The registry's "infless" entry stays a pointer: INFless needs per-instance batch queues,
// several functions and a cluster of CPU/GPU servers, which the shared-queue engine (Run) does
// not model; it runs on the cluster simulator instead (RunCluster, infless.New; see
// docs/infless.md). Returning ErrNotImplemented keeps `sloserve sim --policy all` and the
// conformance test skipping it.
func init() {
	policy.Register(policy.Spec{Name: "infless", Port: policy.PortModel, Needs: policy.NeedsServers,
		Doc: "INFless: non-uniform per-instance batching, α-band dispatch, Alg. 1 placement, LSTH (cluster simulator: sim.RunCluster)",
		New: policy.ModelFactory(func(Env) (Policy, error) {
			return Policy{}, fmt.Errorf("infless runs on the cluster simulator (sim.RunCluster): use `sloserve sim --setting infless`: %w", ErrNotImplemented)
		})})
}
