package sim

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/cluster"
	"github.com/sloserve/sloserve/internal/planner/infless"
	"github.com/sloserve/sloserve/internal/policy"
	inflesspol "github.com/sloserve/sloserve/internal/policy/infless"
	"github.com/sloserve/sloserve/internal/profile"
)

// controlScene is a hard setting for INFless's control step (issue #18 item 11): nFns functions
// on the five real INFless profiles (OSVT + Q&A, their SLOs), a cluster of servers of 16 threads
// + 1 GPU of which about half already hold random b = 1 instances of the functions (a fragmented
// cluster: 20–70 % of each such server allocated), and every function's R above its R_max by
// enough that Alg. 1 must place about want new instances in one step. Control then runs the
// α-band, Alg. 1, the releases, Defragment, the spares and the lending over all of it.
type controlScene struct {
	c   *cluster.Cluster
	fns []policy.FunctionView
}

func newControlScene(tb testing.TB, nFns, servers, want int) controlScene {
	tb.Helper()
	dir := filepath.Join("..", "..", "..", "shared", "data", "profiles", "infless")
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("INFless profiles not present: %v", err)
	}
	var profs []profile.INFlessProfile
	for _, wf := range OSVTQA {
		f, err := os.Open(filepath.Join(dir, wf.Model+"-profile-results.txt"))
		if err != nil {
			tb.Fatal(err)
		}
		p, err := profile.ReadINFless(f)
		f.Close()
		if err != nil {
			tb.Fatal(err)
		}
		profs = append(profs, p)
	}
	rng := rand.New(rand.NewPCG(18, 11))
	c := cluster.New(servers, cluster.DefaultServer)
	fns := make([]policy.FunctionView, nFns)
	opts := make([][]infless.Option, nFns)
	tops := make([]float64, nFns) // the largest r_up of any configuration
	for i := range fns {
		wf := OSVTQA[i%len(OSVTQA)]
		p := profs[i%len(profs)]
		b, res := infless.ProfileSpace(p)
		cfg := infless.Config{SLO: wf.SLO, Batches: b, Resources: res, Offset: infless.DefaultOffset, Target: 0.95, Pool: 4}
		for _, o := range infless.Options(cfg, infless.ProfilePredictor(p)) {
			if o.Batch == 1 {
				opts[i] = append(opts[i], o)
			}
			tops[i] = max(tops[i], o.Bounds.Up)
		}
		fns[i] = policy.FunctionView{Index: i, Name: fmt.Sprintf("%s-%d", wf.Model, i), Profile: p, SLO: wf.SLO, Target: 0.95, Arrivals: 1}
	}
	id := 0
	for s := range servers {
		if rng.Float64() < 0.5 {
			continue
		}
		fill := 0.2 + 0.5*rng.Float64()
		for tries := 0; tries < 20 && infless.Share(c.Used(s), cluster.DefaultServer) < fill; tries++ {
			i := rng.IntN(nFns)
			o := opts[i][rng.IntN(len(opts[i]))]
			if !c.Free(s).Fits(o.Resources) {
				continue
			}
			if err := c.Place(s, o.Resources); err != nil {
				tb.Fatal(err)
			}
			l := policy.InstanceLaunch{Function: i, Server: s, Resources: o.Resources, Batch: 1, Timeout: fns[i].SLO - o.Exec, Exec: o.Exec, Bounds: o.Bounds}
			fns[i].Instances = append(fns[i].Instances, policy.InstanceView{ID: id, Launch: l, Ready: true, Resources: o.Resources})
			id++
		}
	}
	// R: each function's own R_max plus its share of want instances at its largest r_up (Alg. 1
	// tries the largest batch first).
	for i := range fns {
		var rmax float64
		for _, in := range fns[i].Instances {
			rmax += in.Launch.Bounds.Up
		}
		fns[i].Rate = rmax + float64(want)/float64(nFns)*tops[i]
		fns[i].RateNow = fns[i].Rate
	}
	return controlScene{c: c, fns: fns}
}

// BenchmarkINFlessControl10k times one whole control step of the default INFless policy (α-band,
// Alg. 1 with MetricShare, release order, Defragment, spares, lending) in controlScene's setting:
// 50 functions on the real profiles, 2,000 servers (INFless §5.3's simulation), about half
// fragmented, and load for about 10,000 new instances. The goal is < 100 ms per step.
//
//	go test -run XXX -bench INFlessControl10k -benchmem ./internal/sim
func BenchmarkINFlessControl10k(b *testing.B) {
	sc := newControlScene(b, 50, 6000, 10_000)
	var launched int
	cpu0, n := cpuTime(), 0
	for b.Loop() {
		n++
		p, err := inflesspol.New("infless", inflesspol.DefaultOptions())
		if err != nil {
			b.Fatal(err)
		}
		d, err := p.Control(policy.ClusterView{Cluster: sc.c.Clone(), Beta: cluster.DefaultBeta, Functions: sc.fns}, DefaultEpoch.Add(time.Hour))
		if err != nil {
			b.Fatal(err)
		}
		launched = len(d.Launch)
	}
	b.ReportMetric(float64(launched), "launches")
	// CPU time per step: on a shared machine ns/op is wall time and includes waiting for a core.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(n)/1e6, "cpu-ms/op")
}
