package infless

import (
	"sort"

	"github.com/sloserve/sloserve/internal/cluster"
)

// DefaultDefragmentShare is the largest allocated share (CPU and GPU shares averaged) of a server
// Defragment empties: a server at most half used whose instances fit on fuller servers.
const DefaultDefragmentShare = 0.5

// Resident is one live instance as Defragment sees it.
type Resident struct {
	// ID names the instance to the caller.
	ID int
	// Server is where it runs and Resources what it holds there.
	Server    int
	Resources cluster.Resources
	// Movable is false for an instance that must stay where it is (still starting, or already
	// being moved); a server with an unmovable instance is not emptied.
	Movable bool
}

// Move relaunches instance ID's configuration on server To; the caller releases the instance
// once the new one is ready.
type Move struct {
	ID int
	To int
}

// Share is the allocated share of a server with capacity capacity holding used: the mean of its
// CPU and GPU shares (over the dimensions it has).
func Share(used, capacity cluster.Resources) float64 {
	var s float64
	n := 0
	if capacity.CPU > 0 {
		s += float64(used.CPU) / float64(capacity.CPU)
		n++
	}
	if capacity.GPU > 0 {
		s += float64(used.GPU) / float64(capacity.GPU)
		n++
	}
	if n == 0 {
		return 0
	}
	return s / float64(n)
}

// Defragment is sloserve's fragment-aware second pass after Alg. 1 (INFless has none: §5.3 only
// measures the fragment ratio). Instances come and go at different times, so releases leave
// servers with one or two instances; each keeps a whole server active and its free resources
// count as fragments. Defragment picks the emptiest active server — allocated share at most
// maxShare, every instance on it movable and nothing else (no draining instance) holding
// resources there; ties to the higher index — and, largest instance first, finds each of its
// instances the fullest other active server with room (smallest share left after it; ties to the
// lower index). If every instance finds one it returns the moves, else none: a server is emptied
// whole or not at all, and never onto an idle server. c is not modified.
//
// A move keeps the instance's configuration ⟨b, c, g⟩ (so its Eq. 1 bounds), costs one cold start
// with the old instance serving meanwhile, and empties one server; one server per call bounds the
// churn.
func Defragment(c *cluster.Cluster, rs []Resident, maxShare float64) []Move {
	held := make(map[int]cluster.Resources)
	movable := make(map[int]bool)
	for _, r := range rs {
		held[r.Server] = held[r.Server].Add(r.Resources)
		if _, seen := movable[r.Server]; !seen {
			movable[r.Server] = true
		}
		movable[r.Server] = movable[r.Server] && r.Movable
	}
	src, srcShare, active := -1, 0.0, 0
	for j := 0; j < c.Len(); j++ {
		u := c.Used(j)
		if u.IsZero() {
			continue
		}
		active++
		if held[j] != u || !movable[j] {
			continue
		}
		if s := Share(u, c.Capacity(j)); s <= maxShare && (src < 0 || s <= srcShare) {
			src, srcShare = j, s
		}
	}
	if src < 0 || active < 2 {
		return nil
	}
	var mv []Resident
	for _, r := range rs {
		if r.Server == src {
			mv = append(mv, r)
		}
	}
	capSrc := c.Capacity(src)
	sort.SliceStable(mv, func(a, b int) bool { return Share(mv[a].Resources, capSrc) > Share(mv[b].Resources, capSrc) })
	d := c.Clone()
	out := make([]Move, 0, len(mv))
	for _, r := range mv {
		to, left := -1, 0.0
		for j := 0; j < d.Len(); j++ {
			if j == src || d.Used(j).IsZero() || !d.Free(j).Fits(r.Resources) {
				continue
			}
			if l := Share(d.Free(j).Sub(r.Resources), d.Capacity(j)); to < 0 || l < left {
				to, left = j, l
			}
		}
		if to < 0 {
			return nil
		}
		if err := d.Place(to, r.Resources); err != nil {
			return nil
		}
		out = append(out, Move{ID: r.ID, To: to})
	}
	return out
}
