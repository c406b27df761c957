package infless

import (
	"time"

	"github.com/sloserve/sloserve/internal/cluster"
)

// Lender is one instance on a server as Lend sees it.
type Lender struct {
	// Base is the configuration the instance was launched with: its Eq. 1 bounds, and so the
	// α-band's split, stay computed from it whatever it is lent.
	Base cluster.Resources
	// Batch is its batch size b.
	Batch int
	// Rate is its dispatch rate (requests per second): the weight of its execution time.
	Rate float64
	// Configs are the ⟨c, g⟩ configurations its function's profile covers; Predict predicts its
	// execution time on them (the predictor Alg. 1 uses).
	Configs []cluster.Resources
	Predict Predictor
}

// Lend is sloserve's reclaimable lending (INFless has none; §5.3 only measures the fragments): a
// server's free resources, which would otherwise count as fragments, are lent to the instances
// already on it until the scheduler needs them. It returns, per lender, the configuration it runs
// on: Base, or a configuration of its Configs that is at least Base in both dimensions, whose
// extra over Base fits in free (together with the other lenders' extras) and whose predicted t_exec
// at its batch size is strictly below Base's. Configurations that are not faster are never lent:
// holding resources an instance does not use would only hide the fragments.
//
// The split is greedy on the rate-weighted latency saved: repeatedly, among every lender and every
// configuration it could move to with what is left, take the one that lowers Rate·t_exec the most
// (ties: the larger drop in t_exec, then the smaller extra share of capacity — CPU and GPU shares
// averaged — then the lower index) and apply it, until no move lowers a t_exec. A lender that
// moves again returns its previous extra first. Weighting by the rate saves the most
// latency per second of requests (the objective that lowers queueing and violations); the greedy
// is exact for one lender and, with a handful of lenders and configurations per server, close to
// the knapsack optimum at a fraction of its cost. capacity only scales the tie-break.
func Lend(free, capacity cluster.Resources, ls []Lender) []cluster.Resources {
	out := make([]cluster.Resources, len(ls))
	cur := make([]time.Duration, len(ls))
	ok := make([]bool, len(ls))
	for k, l := range ls {
		out[k] = l.Base
		if l.Predict != nil {
			cur[k], ok[k] = l.Predict(max(l.Batch, 1), l.Base)
		}
	}
	for {
		bestK := -1
		var best cluster.Resources
		var bestGain float64
		var bestDrop time.Duration
		var bestExtra float64
		for k, l := range ls {
			if !ok[k] {
				continue
			}
			room := free.Add(out[k].Sub(l.Base)) // what this lender could hold beyond Base
			for _, r := range l.Configs {
				if r.CPU < l.Base.CPU || r.GPU < l.Base.GPU || r == out[k] || !room.Fits(r.Sub(l.Base)) {
					continue
				}
				t, fine := l.Predict(max(l.Batch, 1), r)
				if !fine || t >= cur[k] {
					continue
				}
				drop := cur[k] - t
				gain := l.Rate * drop.Seconds()
				extra := Share(r.Sub(l.Base), capacity)
				if bestK < 0 || gain > bestGain || gain == bestGain && (drop > bestDrop || drop == bestDrop && extra < bestExtra) {
					bestK, best, bestGain, bestDrop, bestExtra = k, r, gain, drop, extra
				}
			}
		}
		if bestK < 0 {
			return out
		}
		free = free.Add(out[bestK]).Sub(best)
		out[bestK] = best
		cur[bestK], _ = ls[bestK].Predict(max(ls[bestK].Batch, 1), best)
	}
}
