package infless

import "github.com/sloserve/sloserve/internal/cluster"

// SpareUtilisation is the utilisation R / (Core + Spare) below which a function gets no more
// spares: inside the α-band a function's own instances run at ≥ α = 0.8 of their r_up, where
// queueing is what a spare cuts; at half of it a request rarely waits for more than half a batch,
// and another spare would mostly hold resources to no effect.
const SpareUtilisation = 0.5

// SpareFunction is one function as Spares sees it.
type SpareFunction struct {
	// Rate is R, the function's arrival rate (1/s). Functions without load get no spares.
	Rate float64
	// Core is the Σ r_up of the instances the α-band scales (its own instances), Spare the Σ r_up
	// of the spare instances it already keeps.
	Core, Spare float64
	// Options are its b = 1 configurations with their predicted t_exec and Eq. 1 bounds
	// (Options, Batch 1): a spare serves a share of R that is too small to fill a batch.
	Options []Option
}

// SparePlacement is one spare instance: the function (index into the fns of Spares), its
// configuration and its server.
type SparePlacement struct {
	Function int
	Option
	Server int
}

// Spares is sloserve's headroom in the fragments (INFless has none; §5.3 only measures them):
// the free resources of the servers in hosts — active servers that keep at least one of the
// functions' own instances — are filled with spare b = 1 instances of the loaded functions. A
// spare serves like any instance (the α-band gives it a share of R; every instance of the
// function then runs further below its r_up, so queues are shorter), but it is not counted when
// the α-band decides to scale, so it never changes how many instances INFless runs, and the
// scheduler takes its resources back whenever it needs them (the policy preempts it). Spares go
// only where a server is already paid for: they never make a server active.
//
// The split is greedy on load: repeatedly, the function with the highest utilisation
// R / (Core + Spare), if at least SpareUtilisation, that has a configuration fitting some host
// gets one spare, with its fastest
// configuration that fits (largest r_up: the shortest t_exec; ties to the smaller share of the
// server, then the fuller host, then the lower server), until no function fits anywhere. A function
// keeps at most as much spare capacity as its own instances have (Spare + r_up ≤ Core): spares halve
// the utilisation at most, and a lightly loaded function does not soak up a server. Spares
// allocates the chosen resources on c.
func Spares(c *cluster.Cluster, hosts []int, fns []SpareFunction) []SparePlacement {
	spare := make([]float64, len(fns))
	for k, f := range fns {
		spare[k] = f.Spare
	}
	var out []SparePlacement
	full := make([]bool, len(fns)) // nothing of it fits any more
	for {
		k := -1
		for i, f := range fns {
			if full[i] || !(f.Rate > 0) || !(f.Core > 0) || f.Rate/(f.Core+spare[i]) < SpareUtilisation {
				continue
			}
			if k < 0 || f.Rate/(f.Core+spare[i]) > fns[k].Rate/(fns[k].Core+spare[k]) {
				k = i
			}
		}
		if k < 0 {
			return out
		}
		p, ok := sparePlace(c, hosts, fns[k].Options, fns[k].Core-spare[k])
		if !ok {
			full[k] = true
			continue
		}
		if err := c.Place(p.Server, p.Resources); err != nil {
			full[k] = true // sparePlace checked the room; cannot happen
			continue
		}
		p.Function = k
		spare[k] += p.Bounds.Up
		out = append(out, p)
	}
}

// sparePlace picks the fastest b = 1 option with r_up ≤ room that fits a host.
func sparePlace(c *cluster.Cluster, hosts []int, opts []Option, room float64) (SparePlacement, bool) {
	var out SparePlacement
	var outShare, outFree float64
	found := false
	for _, o := range opts {
		if o.Batch != 1 || o.Bounds.Up > room {
			continue
		}
		for _, j := range hosts {
			free, capacity := c.Free(j), c.Capacity(j)
			if !free.Fits(o.Resources) {
				continue
			}
			share, left := Share(o.Resources, capacity), Share(free, capacity)
			if !found || o.Bounds.Up > out.Bounds.Up ||
				o.Bounds.Up == out.Bounds.Up && (share < outShare || share == outShare && (left < outFree || left == outFree && j < out.Server)) {
				out, outShare, outFree, found = SparePlacement{Option: o, Server: j}, share, left, true
			}
		}
	}
	return out, found
}
