package infless

import (
	"slices"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/cluster"
)

func TestSpares(t *testing.T) {
	res := func(c, g int) cluster.Resources { return cluster.Resources{CPU: c, GPU: g} }
	opt := func(r cluster.Resources, ms int) Option {
		b, _ := RateBounds(1, time.Duration(ms)*time.Millisecond, 200*time.Millisecond)
		return Option{Batch: 1, Resources: r, Exec: time.Duration(ms) * time.Millisecond, Bounds: b}
	}
	// ssd-like: 2+20 % is 10/s, 2+40 % 12/s; mobilenet-like: 2+10 % 20/s.
	ssd := []Option{opt(res(2, 20), 100), opt(res(2, 40), 83)}
	mob := []Option{opt(res(2, 10), 50)}
	// server 0 full, server 1 holds 4 threads + 40 %, server 2 is idle (not a host).
	used := []cluster.Resources{res(16, 100), res(4, 40), {}}
	tests := []struct {
		name  string
		hosts []int
		fns   []SpareFunction
		want  []SparePlacement // Function, Resources, Server only
	}{
		{"busiest function first, fastest configuration, alternating by utilisation", []int{0, 1},
			[]SpareFunction{{Rate: 18, Core: 20, Options: ssd}, {Rate: 30, Core: 40, Options: mob}},
			[]SparePlacement{
				{Function: 0, Option: Option{Resources: res(2, 40)}, Server: 1}, // 0.9 > 0.75: ssd first, 2+40 (12/s)
				{Function: 1, Option: Option{Resources: res(2, 10)}, Server: 1}, // ssd now 18/32 = 0.56 < 0.75
				{Function: 1, Option: Option{Resources: res(2, 10)}, Server: 1}, // mob 30/60 = 0.5 < 0.56, but ssd's 20 % no longer fits
			}},
		{"no load, no spare", []int{1}, []SpareFunction{{Rate: 0, Core: 20, Options: ssd}}, nil},
		{"below half utilisation, no spare", []int{1}, []SpareFunction{{Rate: 9, Core: 20, Options: ssd}}, nil},
		{"never on a server that is not a host", nil, []SpareFunction{{Rate: 18, Core: 20, Options: ssd}}, nil},
		{"spare capacity at most the core's", []int{1}, []SpareFunction{{Rate: 18, Core: 12, Spare: 0, Options: ssd}},
			[]SparePlacement{{Function: 0, Option: Option{Resources: res(2, 40)}, Server: 1}}},
		{"a function that already keeps its share of spares gets none", []int{1}, []SpareFunction{{Rate: 18, Core: 20, Spare: 12, Options: ssd}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster.NewFromUsed(slices.Repeat([]cluster.Resources{slot}, 3), used)
			got := Spares(c, tc.hosts, tc.fns)
			var short []SparePlacement
			for _, p := range got {
				short = append(short, SparePlacement{Function: p.Function, Option: Option{Resources: p.Resources}, Server: p.Server})
			}
			if !slices.Equal(short, tc.want) {
				t.Fatalf("Spares = %+v, want %+v", short, tc.want)
			}
			if c.Used(2) != (cluster.Resources{}) {
				t.Errorf("the idle server was used: %+v", c.Used(2))
			}
			for _, j := range tc.hosts {
				if !c.Capacity(j).Fits(c.Used(j)) {
					t.Errorf("server %d over capacity: %+v", j, c.Used(j))
				}
			}
			for k, f := range tc.fns {
				s := f.Spare
				for _, p := range got {
					if p.Function == k {
						s += p.Bounds.Up
					}
				}
				if s > f.Core {
					t.Errorf("function %d: spare capacity %v above its own %v", k, s, f.Core)
				}
			}
		})
	}
}
