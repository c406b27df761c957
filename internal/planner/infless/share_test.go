package infless

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/cluster"
)

var slot = cluster.Resources{CPU: 16, GPU: 100}

func TestSpareGPU(t *testing.T) {
	tests := []struct {
		name           string
		free, capacity cluster.Resources
		want           float64
	}{
		{"empty server: balanced", slot, slot, 0},
		{"2 threads, 30 %: 12.5 % usable", cluster.Resources{CPU: 2, GPU: 30}, slot, 17.5},
		{"no threads left: all spare", cluster.Resources{GPU: 40}, slot, 40},
		{"GPU short of the threads", cluster.Resources{CPU: 8, GPU: 10}, slot, 0},
		{"CPU-only server", cluster.Resources{CPU: 8}, cluster.Resources{CPU: 16}, 0},
		{"GPU-only server", cluster.Resources{GPU: 50}, cluster.Resources{GPU: 100}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := SpareGPU(tc.free, tc.capacity); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("SpareGPU(%+v, %+v) = %v, want %v", tc.free, tc.capacity, got, tc.want)
			}
		})
	}
}

func TestShareCost(t *testing.T) {
	tests := []struct {
		name              string
		r, free, capacity cluster.Resources
		want              float64
	}{
		{"threads dominate", cluster.Resources{CPU: 2, GPU: 10}, slot, slot, 0.125},
		{"CPU-only costs its threads", cluster.Resources{CPU: 2}, slot, slot, 0.125},
		{"GPU dominates", cluster.Resources{CPU: 2, GPU: 20}, slot, slot, 0.2},
		{"half a server", cluster.Resources{CPU: 8, GPU: 50}, slot, slot, 0.5},
		{"spare GPU is free", cluster.Resources{CPU: 2, GPU: 30}, cluster.Resources{CPU: 2, GPU: 30}, slot, 0.125},
		{"only spare GPU: a sliver", cluster.Resources{GPU: 10}, cluster.Resources{GPU: 40}, slot, 1e-9},
		{"CPU-only server", cluster.Resources{CPU: 4}, cluster.Resources{CPU: 16}, cluster.Resources{CPU: 16}, 0.25},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ShareCost(tc.r, tc.free, tc.capacity); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("ShareCost(%+v on %+v free of %+v) = %v, want %v", tc.r, tc.free, tc.capacity, got, tc.want)
			}
		})
	}
}

func TestFill(t *testing.T) {
	tests := []struct {
		name              string
		r, free, capacity cluster.Resources
		want              float64
	}{
		{"small on empty", cluster.Resources{CPU: 2, GPU: 10}, slot, slot, 0.1125},
		{"perfect fit", cluster.Resources{CPU: 2, GPU: 10}, cluster.Resources{CPU: 2, GPU: 10}, slot, 1},
		{"CPU-only on a GPU-rich server", cluster.Resources{CPU: 4}, cluster.Resources{CPU: 8, GPU: 100}, slot, 0.25 / 1.5},
		{"CPU-only server", cluster.Resources{CPU: 4}, cluster.Resources{CPU: 8}, cluster.Resources{CPU: 16}, 0.5},
		{"nothing free", cluster.Resources{}, cluster.Resources{}, slot, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Fill(tc.r, tc.free, tc.capacity); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("Fill(%+v on %+v free of %+v) = %v, want %v", tc.r, tc.free, tc.capacity, got, tc.want)
			}
		})
	}
}

// rates is a b = 1 predictor whose configuration r has r_up = up[r] (no offset): t = 1/(up+0.5).
func rates(up map[cluster.Resources]float64) Predictor {
	return func(b int, r cluster.Resources) (time.Duration, bool) {
		u, ok := up[r]
		if !ok || b != 1 {
			return 0, false
		}
		return time.Duration(float64(time.Second) / (u + 0.5)), true
	}
}

// TestScheduleShare pins MetricShare's choices against Eq. 10 as printed on 16-thread + 100 %
// servers: one b = 1 instance for 1 request/s, with the servers' other resources already taken.
func TestScheduleShare(t *testing.T) {
	r := func(c, g int) cluster.Resources { return cluster.Resources{CPU: c, GPU: g} }
	tests := []struct {
		name       string
		used       []cluster.Resources // one server each
		up         map[cluster.Resources]float64
		metric     Metric
		want       cluster.Resources
		wantServer int
	}{
		{"paper: CPU-only is cheapest per FLOPS", []cluster.Resources{{}}, map[cluster.Resources]float64{r(2, 0): 5, r(2, 10): 9}, MetricPaper, r(2, 0), 0},
		{"share: a GPU share that fits the threads' proportion is free", []cluster.Resources{{}}, map[cluster.Resources]float64{r(2, 0): 5, r(2, 10): 9}, MetricShare, r(2, 10), 0},
		{"share: on an empty server a large GPU share costs", []cluster.Resources{{}}, map[cluster.Resources]float64{r(2, 10): 9, r(2, 30): 10}, MetricShare, r(2, 10), 0},
		{"share: the last threads take the spare GPU", []cluster.Resources{r(14, 70)}, map[cluster.Resources]float64{r(2, 10): 9, r(2, 30): 10}, MetricShare, r(2, 30), 0},
		{"paper: a perfect fit scores +Inf however inefficient", []cluster.Resources{r(8, 50)}, map[cluster.Resources]float64{r(2, 10): 9, r(8, 50): 10}, MetricPaper, r(8, 50), 0},
		{"share: efficiency first, the fit only among near-ties", []cluster.Resources{r(8, 50)}, map[cluster.Resources]float64{r(2, 10): 9, r(8, 50): 10}, MetricShare, r(2, 10), 0},
		{"share: a near-tie goes to the better fit", []cluster.Resources{{}, r(12, 80)}, map[cluster.Resources]float64{r(2, 10): 20, r(4, 20): 39}, MetricShare, r(4, 20), 1},
		{"share: no near-tie, the fuller server", []cluster.Resources{{}, r(12, 80)}, map[cluster.Resources]float64{r(2, 10): 20, r(4, 20): 30}, MetricShare, r(2, 10), 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster.New(len(tc.used), slot)
			for j, u := range tc.used {
				if err := c.Place(j, u); err != nil {
					t.Fatal(err)
				}
			}
			var res []cluster.Resources
			for k := range tc.up {
				res = append(res, k)
			}
			slices.SortFunc(res, func(a, b cluster.Resources) int { return a.CPU*1000 + a.GPU - b.CPU*1000 - b.GPU })
			cfg := Config{SLO: 200 * ms, Batches: []int{1}, Resources: res, Metric: tc.metric}
			out, err := Schedule(c, 1, cfg, rates(tc.up))
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Placements) != 1 {
				t.Fatalf("placements %+v, want one", out.Placements)
			}
			if p := out.Placements[0]; p.Resources != tc.want || p.Server != tc.wantServer {
				t.Errorf("placed (-want +got):\n-%+v on %d\n+%+v on %d", tc.want, tc.wantServer, p.Resources, p.Server)
			}
		})
	}
}

func TestReleaseEmptiestFirst(t *testing.T) {
	bounds := []Bounds{{Up: 10}, {Up: 10}, {Up: 20}, {Up: 10}}
	fill := []float64{0.9, 0.2, 0.2, 0.5}
	tests := []struct {
		name string
		r    float64
		want []int
	}{
		{"emptiest server first, smaller r_up first among equals", 35, []int{1}},
		{"both instances of the emptiest server", 15, []int{1, 2}},
		{"keeps one instance while r > 0: the fullest server's", 5, []int{1, 2, 3}},
		{"zero load releases everything", 0, []int{0, 1, 2, 3}},
		{"nothing to release", 50, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ReleaseEmptiestFirst(bounds, tc.r, fill); !slices.Equal(got, tc.want) {
				t.Errorf("ReleaseEmptiestFirst(%v) (-want +got):\n-%v\n+%v", tc.r, tc.want, got)
			}
		})
	}
	// Release by r_up alone keeps the instance on the 0.2 server and drops the one on the 0.9 one.
	if got, want := Release(bounds, 15), []int{0, 1, 3}; !slices.Equal(got, want) {
		t.Errorf("Release(15) (-want +got):\n-%v\n+%v", want, got)
	}
}

func TestDefragment(t *testing.T) {
	r := func(c, g int) cluster.Resources { return cluster.Resources{CPU: c, GPU: g} }
	res := func(id, server int, x cluster.Resources) Resident {
		return Resident{ID: id, Server: server, Resources: x, Movable: true}
	}
	// Server 0 {12,80} used, server 1 {4,20} (two {2,10}), server 2 {10,60}, server 3 idle.
	base := func() []Resident {
		return []Resident{res(1, 0, r(12, 80)), res(2, 1, r(2, 10)), res(3, 1, r(2, 10)), res(4, 2, r(10, 60))}
	}
	tests := []struct {
		name     string
		rs       []Resident
		extra    map[int]cluster.Resources // allocations of draining instances (no Resident)
		maxShare float64
		want     []Move
	}{
		{"empties the emptiest server onto the fullest with room", base(), nil, DefaultDefragmentShare, []Move{{2, 0}, {3, 0}}},
		{"a draining instance pins its server", base(), map[int]cluster.Resources{1: r(2, 10)}, DefaultDefragmentShare, nil},
		{"an unmovable instance pins its server", func() []Resident { x := base(); x[2].Movable = false; return x }(), nil, DefaultDefragmentShare, nil},
		{"above maxShare", base(), nil, 0.2, nil},
		{"all or nothing", []Resident{res(1, 0, r(14, 90)), res(2, 1, r(2, 10)), res(3, 1, r(4, 10)), res(4, 2, r(14, 90))}, nil, DefaultDefragmentShare, nil},
		{"never onto an idle server", []Resident{res(2, 1, r(2, 10)), res(3, 1, r(2, 10))}, nil, DefaultDefragmentShare, nil},
		{"largest first", []Resident{res(1, 0, r(10, 60)), res(2, 1, r(2, 10)), res(3, 1, r(4, 30)), res(4, 2, r(12, 70))}, nil, DefaultDefragmentShare, []Move{{3, 2}, {2, 0}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster.New(4, slot)
			for _, x := range tc.rs {
				if err := c.Place(x.Server, x.Resources); err != nil {
					t.Fatal(err)
				}
			}
			for j, x := range tc.extra {
				if err := c.Place(j, x); err != nil {
					t.Fatal(err)
				}
			}
			before := c.Clone()
			got := Defragment(c, tc.rs, tc.maxShare)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Defragment (-want +got):\n-%v\n+%v", tc.want, got)
			}
			for j := 0; j < c.Len(); j++ {
				if c.Used(j) != before.Used(j) {
					t.Fatalf("Defragment modified the cluster: server %d %+v, was %+v", j, c.Used(j), before.Used(j))
				}
			}
		})
	}
}
