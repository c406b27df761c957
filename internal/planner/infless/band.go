package infless

import "sort"

// DefaultAlpha is INFless's α = 0.8 (§3.2: "α is set to 0.8 in our implementation").
const DefaultAlpha = 0.8

// Scale is what the α-band asks of the scaler.
type Scale int

// The three cases of §3.2.
const (
	// Hold: R inside the band, rates spread in proportion to each range (case ii).
	Hold Scale = iota
	// Up: R > R_max; every instance runs at r_up and the residual needs new instances (case i).
	Up
	// Down: R below the band; extra instances should be released (case iii).
	Down
)

func (s Scale) String() string {
	switch s {
	case Up:
		return "up"
	case Down:
		return "down"
	default:
		return "hold"
	}
}

// Split is the α-band's decision for one function.
type Split struct {
	// Rates[i] is the request rate (1/s) dispatched to instance i; a dispatcher weights by it.
	Rates []float64
	// Scale says whether the scaler must add or release instances.
	Scale Scale
	// Residual is R − R_max when Scale is Up (the load Alg. 1 must schedule), else 0.
	Residual float64
	// Excess is R_max − R when Scale is Down, else 0: the scaler may release instances whose r_up
	// sum stays within it (Release picks them), so that what remains still covers R.
	Excess float64
	// Reason explains the case.
	Reason string
}

// Band splits the rate r over instances with the given bounds (INFless §3.2, cases i–iii).
// In case (iii) the rates are still computed — clamped at r_low — so that the current instances keep
// serving while the scaler releases some.
//
// The band's lower edge: §3.2's text writes αR_min + (1−α)R_max while constraint (7) of §3.4 writes
// αR_max + (1−α)R_min. With α = 0.8 only the second keeps instances "as close to its upper bound as
// possible" as §3.2 says it prefers, so Band uses Eq. 7's edge; Release never takes the fleet below
// R, so scaling down cannot immediately trigger a scale-up (no oscillation).
func Band(bounds []Bounds, r, alpha float64) Split {
	var rMax, rMin float64
	for _, b := range bounds {
		rMax += b.Up
		rMin += b.Low
	}
	rates := make([]float64, len(bounds))
	switch {
	case r > rMax:
		for i, b := range bounds {
			rates[i] = b.Up
		}
		return Split{Rates: rates, Scale: Up, Residual: r - rMax, Reason: "R > R_max: instances at r_up, schedule the residual"}
	case rMax == rMin:
		for i, b := range bounds {
			rates[i] = b.Up
		}
		return Split{Rates: rates, Scale: Hold, Reason: "R_max = R_min"}
	}
	frac := (rMax - r) / (rMax - rMin)
	if frac > 1 {
		frac = 1
	}
	for i, b := range bounds {
		rates[i] = b.Up - frac*(b.Up-b.Low)
	}
	edge := alpha*rMax + (1-alpha)*rMin
	if r < edge {
		return Split{Rates: rates, Scale: Down, Excess: rMax - r, Reason: "R below the α-band (Eq. 7): release instances"}
	}
	return Split{Rates: rates, Scale: Hold, Reason: "R inside the α-band: rates in proportion to each range"}
}

// Release returns the indices of instances to release when R is below the band: greedily the
// instances with the smallest r_up first (the least throughput lost per release), as long as the
// remaining instances' R_max still covers r. It never releases every instance while r > 0.
func Release(bounds []Bounds, r float64) []int {
	return release(bounds, r, func(a, b int) bool { return bounds[a].Up < bounds[b].Up })
}

// ReleaseEmptiestFirst is Release with a fragment-aware order: the instances whose servers are
// the emptiest go first (fill[i] is the allocated share of instance i's server), ties to the
// smaller r_up, under the same rule (what remains still covers r, never the last instance while
// r > 0). §3.2 only says "release instances"; releasing on the emptiest servers first lets them
// become idle (they stop counting towards active servers and §5.3's fragment ratio) instead of
// leaving one instance on each of several half-empty servers.
func ReleaseEmptiestFirst(bounds []Bounds, r float64, fill []float64) []int {
	return release(bounds, r, func(a, b int) bool {
		if fill[a] != fill[b] {
			return fill[a] < fill[b]
		}
		return bounds[a].Up < bounds[b].Up
	})
}

// release greedily drops instances in the order less gives while the others still cover r.
func release(bounds []Bounds, r float64, less func(a, b int) bool) []int {
	idx := make([]int, len(bounds))
	var rMax float64
	for i, b := range bounds {
		idx[i] = i
		rMax += b.Up
	}
	sort.SliceStable(idx, func(a, b int) bool { return less(idx[a], idx[b]) })
	var out []int
	for _, i := range idx {
		left := len(bounds) - len(out) - 1
		if rMax-bounds[i].Up < r || (left == 0 && r > 0) {
			continue
		}
		rMax -= bounds[i].Up
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}
