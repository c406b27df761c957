package experiment

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/policy/uniform"
	"github.com/sloserve/sloserve/internal/sim"
)

// gridTune is the baselines' tuner (EVALUATION.md §1) until a shared one replaces it: it runs
// every candidate on the tuning part (eval) and returns the cheapest that meets the SLO there,
// or, when none does, the one that comes closest (the highest worst-unit attainment, then the
// cheaper). eval returns the candidate's cost (lower is better), its worst unit's attainment
// and whether it met the SLO. Candidates are tried in order and ties keep the earlier one, so
// the choice is deterministic.
func gridTune[K any](cands []K, eval func(K) (cost, worst float64, meets bool, err error)) (K, error) {
	var best K
	if len(cands) == 0 {
		return best, fmt.Errorf("tune: no candidates")
	}
	bestCost, bestWorst, bestMeets := math.Inf(1), -1.0, false
	for _, c := range cands {
		cost, worst, meets, err := eval(c)
		if err != nil {
			return best, err
		}
		better := meets && (!bestMeets || cost < bestCost) ||
			!meets && !bestMeets && (worst > bestWorst || worst == bestWorst && cost < bestCost)
		if better {
			best, bestCost, bestWorst, bestMeets = c, cost, worst, meets
		}
	}
	return best, nil
}

// clusterScore is gridTune's view of a cluster run: cost is β-weighted active-server-seconds
// per completed request (1 / rps_per_resource), worst the lowest per-function attainment, and
// the SLO is met when every function attains target (EVALUATION.md §4).
func clusterScore(r *sim.ClusterResult, target float64) (cost, worst float64, meets bool) {
	cost = 1 / max(r.Summary.Extra["rps_per_resource"], 1e-12)
	worst = 1.0
	for _, f := range r.Functions {
		worst = min(worst, f.SLOAttainment)
	}
	return cost, worst, worst >= target
}

// uniformGrid is what the tuned uniform rows search: the keep-alive (INFless's 30 s hold up to
// Lambda's 10 minutes) and, unless the resources are fixed (OpenFaaS+), the price that picks the
// configuration (FLOPS or dominant share); every candidate packs onto the fullest server.
func uniformGrid(base uniform.Options) []uniform.Options {
	prices := []uniform.Price{uniform.PriceShare, uniform.PriceFLOPS}
	if !base.Resources.IsZero() {
		prices = prices[:1]
	}
	var out []uniform.Options
	for _, ka := range []time.Duration{30 * time.Second, 2 * time.Minute, 10 * time.Minute} {
		for _, pr := range prices {
			o := base
			o.KeepAlive, o.Price, o.Fullest = ka, pr, true
			out = append(out, o)
		}
	}
	return out
}

// tunedUniform is a row whose options gridTune picks from uniformGrid(base) on the tuning part.
func tunedUniform(name string, base uniform.Options) inflessVariant {
	return inflessVariant{name: name, tune: func(ctx context.Context, run tuningRun) (policy.Cluster, error) {
		best, err := gridTune(uniformGrid(base), func(o uniform.Options) (float64, float64, bool, error) {
			p, err := uniform.New(o)
			if err != nil {
				return 0, 0, false, err
			}
			r, target, err := run(ctx, p)
			if err != nil {
				return 0, 0, false, err
			}
			cost, worst, meets := clusterScore(r, target)
			return cost, worst, meets, nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s: tune: %w", name, err)
		}
		best.Name = name
		return uniform.New(best)
	}}
}

// tuningRun runs a candidate policy on the tuning part and returns its result and SLO target.
type tuningRun func(ctx context.Context, p policy.Cluster) (*sim.ClusterResult, float64, error)

// fairVariants are the rows of the fair INFless comparison (issue #17): INFless, the paper's
// uniform and OpenFaaS+ rows, the fair uniform (uniform.FairOptions) and the tuned uniform and
// OpenFaaS+ (gridTune on the tuning part).
func fairVariants() []inflessVariant {
	return []inflessVariant{
		{name: "uniform-fair", mk: func() (policy.Cluster, error) { return uniform.New(uniform.FairOptions()) }},
		tunedUniform("uniform-tuned", uniform.DefaultOptions()),
		{name: "openfaas+", mk: func() (policy.Cluster, error) { return uniform.New(uniform.OpenFaaSOptions()) }},
		tunedUniform("openfaas+-tuned", uniform.OpenFaaSOptions()),
	}
}

// InflessFair is the fair comparison of issue #17 on a strict split: the window [from, from+dur)
// is halved, the tuned rows choose their options on the first half and every row (INFless, the
// paper's uniform, uniform-fair, uniform-tuned, OpenFaaS+ and openfaas+-tuned) runs on the second.
func InflessFair(ctx context.Context, profileDir string, traces []string, set string, from, dur time.Duration, peak float64, servers int) ([]InflessTableRun, error) {
	cfg := sim.DefaultClusterConfig()
	if servers > 0 {
		cfg.Servers = servers
	}
	cfg.Trace = fmt.Sprintf("%s peak %.0f (evaluation half)", set, peak)
	half := dur / 2
	tune := sim.WorkloadOptions{PeakRPS: peak, From: from, Duration: half, SLOTarget: 0.95, Seed: 1}
	eval := tune
	eval.From, eval.Duration, eval.Seed = from+half, dur-half, 2
	vs := append(keepVariants(inflessVariants(), []string{"infless"}, "uniform"), fairVariants()...)
	return runSplit(ctx, profileDir, traces, tune, eval, cfg, vs)
}

// FairGain is INFless's throughput per unit of resource over the named row's, 0 when either is
// missing.
func FairGain(runs []InflessTableRun, base string) float64 {
	var inf, b float64
	for _, r := range runs {
		switch r.Name {
		case "infless":
			inf = r.Summary.Extra["rps_per_resource"]
		case base:
			b = r.Summary.Extra["rps_per_resource"]
		}
	}
	if inf == 0 || b == 0 {
		return 0
	}
	return inf / b
}

// writeFairGain prints INFless's gain over each baseline row present (issue #17: the paper's
// rows beside the fair and tuned ones).
func writeFairGain(w io.Writer, runs []InflessTableRun) {
	line := ""
	for _, b := range []string{"uniform", "uniform-fair", "uniform-tuned", "openfaas+", "openfaas+-tuned"} {
		if g := FairGain(runs, b); g > 0 {
			line += fmt.Sprintf(" %s %.2f×;", b, g)
		}
	}
	if line != "" {
		fmt.Fprintf(w, "\ninfless rps/resource over:%s\n", line)
	}
}
