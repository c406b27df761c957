package infless

import (
	"sort"

	"github.com/sloserve/sloserve/internal/cluster"
)

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
	idx := newHostIndex(c, hosts)
	byUp := make([][]Option, len(fns)) // each function's b = 1 options, fastest first
	for k, f := range fns {
		for _, o := range f.Options {
			if o.Batch == 1 {
				byUp[k] = append(byUp[k], o)
			}
		}
		sort.SliceStable(byUp[k], func(a, b int) bool { return byUp[k][a].Bounds.Up > byUp[k][b].Bounds.Up })
	}
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
		p, ok := sparePlace(idx, byUp[k], fns[k].Core-spare[k])
		if !ok {
			full[k] = true
			continue
		}
		before := c.Free(p.Server)
		if err := c.Place(p.Server, p.Resources); err != nil {
			full[k] = true // sparePlace checked the room; cannot happen
			continue
		}
		idx.move(p.Server, before, c.Free(p.Server))
		p.Function = k
		spare[k] += p.Bounds.Up
		out = append(out, p)
	}
}

// hostIndex groups hosts by their free resources and capacity (hosts in one group are alike but
// for their index), so that a placement looks at each distinct group once.
type hostIndex struct {
	capOf  func(int) cluster.Resources
	groups map[[2]cluster.Resources][]int // (free, capacity) → servers, ascending
}

func newHostIndex(c *cluster.Cluster, hosts []int) *hostIndex {
	x := &hostIndex{capOf: c.Capacity, groups: map[[2]cluster.Resources][]int{}}
	hs := append([]int(nil), hosts...)
	sort.Ints(hs)
	for _, h := range hs {
		k := [2]cluster.Resources{c.Free(h), c.Capacity(h)}
		x.groups[k] = append(x.groups[k], h)
	}
	return x
}

// move records that server h's free resources went from before to after.
func (x *hostIndex) move(h int, before, after cluster.Resources) {
	capacity := x.capOf(h)
	k := [2]cluster.Resources{before, capacity}
	g := x.groups[k]
	if i := sort.SearchInts(g, h); i < len(g) && g[i] == h {
		g = append(g[:i], g[i+1:]...)
	}
	if len(g) == 0 {
		delete(x.groups, k)
	} else {
		x.groups[k] = g
	}
	k = [2]cluster.Resources{after, capacity}
	g = x.groups[k]
	i := sort.SearchInts(g, h)
	g = append(g, 0)
	copy(g[i+1:], g[i:])
	g[i] = h
	x.groups[k] = g
}

// sparePlace picks the fastest b = 1 option with r_up ≤ room that fits a host; opts are b = 1
// options sorted by r_up, largest first. Among the options of the largest r_up that fits
// anywhere it takes the smaller share of the server, then the fuller host, then the lower server:
// each distinct (free, capacity) group of hosts is looked at once per r_up.
func sparePlace(idx *hostIndex, opts []Option, room float64) (SparePlacement, bool) {
	var out SparePlacement
	var outShare, outFree float64
	found := false
	for i := 0; i < len(opts) && !found; {
		j := i + 1
		for j < len(opts) && opts[j].Bounds.Up == opts[i].Bounds.Up {
			j++
		}
		if opts[i].Bounds.Up > room {
			i = j
			continue
		}
		for k, g := range idx.groups {
			free, capacity, h := k[0], k[1], g[0]
			left := Share(free, capacity)
			for _, o := range opts[i:j] {
				if !free.Fits(o.Resources) {
					continue
				}
				share := Share(o.Resources, capacity)
				if !found || share < outShare || share == outShare && (left < outFree || left == outFree && h < out.Server) {
					out, outShare, outFree, found = SparePlacement{Option: o, Server: h}, share, left, true
				}
			}
		}
		i = j
	}
	return out, found
}
