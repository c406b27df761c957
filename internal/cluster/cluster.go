package cluster

import (
	"container/heap"
	"errors"
	"fmt"
)

// Resources is an amount of CPU and GPU: CPU in cores (threads), GPU in percent of one GPU's
// streaming multiprocessors (INFless §3.3: g_i is an SM share; 100 = a whole GPU).
type Resources struct {
	CPU int `json:"cpu"`
	GPU int `json:"gpu"`
}

// Add returns r + o.
func (r Resources) Add(o Resources) Resources { return Resources{r.CPU + o.CPU, r.GPU + o.GPU} }

// Sub returns r − o.
func (r Resources) Sub(o Resources) Resources { return Resources{r.CPU - o.CPU, r.GPU - o.GPU} }

// Fits reports whether o fits inside r.
func (r Resources) Fits(o Resources) bool { return o.CPU <= r.CPU && o.GPU <= r.GPU }

// IsZero reports whether r is empty.
func (r Resources) IsZero() bool { return r.CPU == 0 && r.GPU == 0 }

// Weighted folds r into one number, β·CPU + GPU (INFless Eq. 2): β converts a CPU core into GPU
// SM-percent units by their FLOPS ratio.
func (r Resources) Weighted(beta float64) float64 { return beta*float64(r.CPU) + float64(r.GPU) }

// DefaultBeta is β = 64/142: INFless's estimator rates one CPU core at 64 GFLOPS and one percent
// of a GPU's SMs at 142 GFLOPS (infless-constants.json, "throughput_efficiency").
const DefaultBeta = 64.0 / 142.0

// ErrNoRoom is returned when a placement does not fit on the chosen server.
var ErrNoRoom = errors.New("resources do not fit on the server")

// Cluster is a set of servers with their capacity and what is allocated on each. It indexes the
// servers by their free resources so that a scheduler can look at each distinct free vector once
// instead of at every server. A Cluster is not safe for concurrent use.
type Cluster struct {
	capacity []Resources
	used     []Resources
	byFree   map[Resources]*idHeap
}

// New returns a cluster of n identical servers with the given capacity each.
func New(n int, capacity Resources) *Cluster {
	caps := make([]Resources, n)
	for i := range caps {
		caps[i] = capacity
	}
	return NewFrom(caps)
}

// NewFrom returns a cluster whose server i has capacity caps[i].
func NewFrom(caps []Resources) *Cluster {
	c := &Cluster{
		capacity: append([]Resources(nil), caps...),
		used:     make([]Resources, len(caps)),
		byFree:   make(map[Resources]*idHeap),
	}
	for i, r := range c.capacity {
		c.index(i, r)
	}
	return c
}

// Len returns the number of servers.
func (c *Cluster) Len() int { return len(c.capacity) }

// Capacity returns server j's capacity.
func (c *Cluster) Capacity(j int) Resources { return c.capacity[j] }

// Used returns what is allocated on server j.
func (c *Cluster) Used(j int) Resources { return c.used[j] }

// Free returns server j's unallocated resources.
func (c *Cluster) Free(j int) Resources { return c.capacity[j].Sub(c.used[j]) }

// Place allocates r on server j.
func (c *Cluster) Place(j int, r Resources) error {
	if j < 0 || j >= len(c.capacity) {
		return fmt.Errorf("place on server %d: no such server (cluster has %d)", j, len(c.capacity))
	}
	free := c.Free(j)
	if !free.Fits(r) || r.CPU < 0 || r.GPU < 0 {
		return fmt.Errorf("place %+v on server %d with %+v free: %w", r, j, free, ErrNoRoom)
	}
	c.unindex(j, free)
	c.used[j] = c.used[j].Add(r)
	c.index(j, c.Free(j))
	return nil
}

// Release frees r on server j.
func (c *Cluster) Release(j int, r Resources) error {
	if j < 0 || j >= len(c.capacity) {
		return fmt.Errorf("release on server %d: no such server", j)
	}
	if !c.used[j].Fits(r) {
		return fmt.Errorf("release %+v on server %d: only %+v allocated", r, j, c.used[j])
	}
	c.unindex(j, c.Free(j))
	c.used[j] = c.used[j].Sub(r)
	c.index(j, c.Free(j))
	return nil
}

// FreeVector is a distinct free-resource vector and the lowest-numbered server that has it.
type FreeVector struct {
	Free   Resources
	Server int
	Count  int
}

// FreeVectors calls fn for every distinct free-resource vector with the lowest-numbered server
// that has it; fn returns false to stop. The order is unspecified.
func (c *Cluster) FreeVectors(fn func(FreeVector) bool) {
	for r, h := range c.byFree {
		if h.Len() == 0 {
			continue
		}
		if !fn(FreeVector{Free: r, Server: h.ids[0], Count: h.Len()}) {
			return
		}
	}
}

// FreeVectorOf is the FreeVector with free-resource vector free (its lowest-numbered server and
// how many servers have it), or false when no server has exactly free left. A scheduler that keeps
// the FreeVectors list across its own placements refreshes the two vectors a placement changes.
func (c *Cluster) FreeVectorOf(free Resources) (FreeVector, bool) {
	h := c.byFree[free]
	if h == nil || h.Len() == 0 {
		return FreeVector{}, false
	}
	return FreeVector{Free: free, Server: h.ids[0], Count: h.Len()}, true
}

// FragmentRatio is INFless §5.3's resource fragment ratio: the unallocated resources on active
// servers (servers with anything allocated) divided by those servers' total resources, with CPU and
// GPU folded by β. An idle cluster has ratio 0.
func (c *Cluster) FragmentRatio(beta float64) float64 {
	var free, total float64
	for j := range c.capacity {
		if c.used[j].IsZero() {
			continue
		}
		free += c.Free(j).Weighted(beta)
		total += c.capacity[j].Weighted(beta)
	}
	if total == 0 {
		return 0
	}
	return free / total
}

// ActiveServers counts servers with anything allocated.
func (c *Cluster) ActiveServers() int {
	n := 0
	for j := range c.used {
		if !c.used[j].IsZero() {
			n++
		}
	}
	return n
}

func (c *Cluster) index(j int, free Resources) {
	h := c.byFree[free]
	if h == nil {
		h = &idHeap{}
		c.byFree[free] = h
	}
	heap.Push(h, j)
}

func (c *Cluster) unindex(j int, free Resources) {
	h := c.byFree[free]
	for i, id := range h.ids {
		if id == j {
			heap.Remove(h, i)
			break
		}
	}
	if h.Len() == 0 {
		delete(c.byFree, free)
	}
}

// idHeap is a min-heap of server indices.
type idHeap struct{ ids []int }

func (h *idHeap) Len() int           { return len(h.ids) }
func (h *idHeap) Less(i, j int) bool { return h.ids[i] < h.ids[j] }
func (h *idHeap) Swap(i, j int)      { h.ids[i], h.ids[j] = h.ids[j], h.ids[i] }
func (h *idHeap) Push(x any)         { h.ids = append(h.ids, x.(int)) }
func (h *idHeap) Pop() any {
	n := len(h.ids) - 1
	x := h.ids[n]
	h.ids = h.ids[:n]
	return x
}

// Clone returns an independent copy of c, for dry-run scheduling.
func (c *Cluster) Clone() *Cluster { return NewFromUsed(c.capacity, c.used) }

// NewFromUsed returns a cluster with the given capacities and allocations.
func NewFromUsed(caps, used []Resources) *Cluster {
	c := &Cluster{
		capacity: append([]Resources(nil), caps...),
		used:     append([]Resources(nil), used...),
		byFree:   make(map[Resources]*idHeap),
	}
	if len(c.used) < len(c.capacity) {
		c.used = append(c.used, make([]Resources, len(c.capacity)-len(c.used))...)
	}
	for i := range c.capacity {
		c.index(i, c.Free(i))
	}
	return c
}

// FirstFit returns the lowest-numbered server with room for r, or false when none has.
func (c *Cluster) FirstFit(r Resources) (int, bool) {
	server := -1
	c.FreeVectors(func(fv FreeVector) bool {
		if fv.Free.Fits(r) && (server < 0 || fv.Server < server) {
			server = fv.Server
		}
		return true
	})
	return server, server >= 0
}

// Weighted returns the β-weighted allocation and the β-weighted capacity of the active servers
// (those with anything allocated): 1 − used/capacity is FragmentRatio.
func (c *Cluster) Weighted(beta float64) (used, activeCapacity float64) {
	for j := range c.capacity {
		if c.used[j].IsZero() {
			continue
		}
		used += c.used[j].Weighted(beta)
		activeCapacity += c.capacity[j].Weighted(beta)
	}
	return used, activeCapacity
}

// ActiveTotals returns the allocation and the capacity of the active servers (those with
// anything allocated), per dimension: 1 − used.CPU/capacity.CPU is the CPU fragment ratio and
// likewise for GPU (FragmentRatio folds the two with β).
func (c *Cluster) ActiveTotals() (used, capacity Resources) {
	for j := range c.capacity {
		if c.used[j].IsZero() {
			continue
		}
		used = used.Add(c.used[j])
		capacity = capacity.Add(c.capacity[j])
	}
	return used, capacity
}

// DefaultServer is one INFless testbed server half (Table 2: 2 sockets, 32 threads and 2 RTX
// 2080Ti per machine): 16 CPU threads and one GPU (100 % of its SMs). A GPU SM share cannot span
// two GPUs, so the simulator's server is one GPU with its socket.
var DefaultServer = Resources{CPU: 16, GPU: 100}
