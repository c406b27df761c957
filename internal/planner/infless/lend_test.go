package infless

import (
	"slices"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/cluster"
)

// lendTable is a predictor over a few ⟨c, g⟩ configurations at b = 1 (ms).
func lendTable(ms map[cluster.Resources]int) (Predictor, []cluster.Resources) {
	var rs []cluster.Resources
	for r := range ms {
		rs = append(rs, r)
	}
	slices.SortFunc(rs, func(a, b cluster.Resources) int {
		if a.CPU != b.CPU {
			return a.CPU - b.CPU
		}
		return a.GPU - b.GPU
	})
	return func(b int, r cluster.Resources) (time.Duration, bool) {
		t, ok := ms[r]
		return time.Duration(t) * time.Millisecond, ok && b == 1
	}, rs
}

func TestLend(t *testing.T) {
	res := func(c, g int) cluster.Resources { return cluster.Resources{CPU: c, GPU: g} }
	// resnet-50-like: faster up to 30 %, flat beyond; lstm-like: fastest without a GPU.
	resnet, resnetCfg := lendTable(map[cluster.Resources]int{res(2, 10): 60, res(2, 20): 55, res(2, 30): 50, res(2, 40): 50, res(2, 50): 52})
	lstm, lstmCfg := lendTable(map[cluster.Resources]int{res(2, 0): 14, res(2, 10): 20, res(2, 20): 17})
	ssd, ssdCfg := lendTable(map[cluster.Resources]int{res(2, 10): 140, res(2, 40): 126, res(4, 40): 139, res(8, 50): 157})
	rn := func(rate float64) Lender {
		return Lender{Base: res(2, 10), Batch: 1, Rate: rate, Configs: resnetCfg, Predict: resnet}
	}
	tests := []struct {
		name string
		free cluster.Resources
		ls   []Lender
		want []cluster.Resources
	}{
		{"fastest configuration, the smaller of two ties", res(14, 90), []Lender{rn(10)}, []cluster.Resources{res(2, 30)}},
		{"only what fits", res(14, 10), []Lender{rn(10)}, []cluster.Resources{res(2, 20)}},
		{"nothing free", res(14, 0), []Lender{rn(10)}, []cluster.Resources{res(2, 10)}},
		{"never a slower or equal configuration", res(14, 90),
			[]Lender{{Base: res(2, 0), Batch: 1, Rate: 50, Configs: lstmCfg, Predict: lstm}}, []cluster.Resources{res(2, 0)}},
		{"never below the base", res(14, 90),
			[]Lender{{Base: res(2, 20), Batch: 1, Rate: 5, Configs: lstmCfg, Predict: lstm}}, []cluster.Resources{res(2, 20)}},
		{"the busier lender first", res(14, 20), []Lender{rn(1), rn(10)}, []cluster.Resources{res(2, 10), res(2, 30)}},
		{"then the other with what is left", res(14, 30), []Lender{rn(1), rn(10)}, []cluster.Resources{res(2, 20), res(2, 30)}},
		{"the larger saving per second wins", res(14, 30),
			[]Lender{rn(10), {Base: res(2, 10), Batch: 1, Rate: 10, Configs: ssdCfg, Predict: ssd}},
			[]cluster.Resources{res(2, 10), res(2, 40)}},
		{"a profile without the batch size lends nothing", res(14, 90),
			[]Lender{{Base: res(2, 10), Batch: 4, Rate: 10, Configs: resnetCfg, Predict: resnet}}, []cluster.Resources{res(2, 10)}},
		{"no predictor lends nothing", res(14, 90), []Lender{{Base: res(2, 10), Batch: 1, Rate: 10, Configs: resnetCfg}}, []cluster.Resources{res(2, 10)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Lend(tc.free, slot, tc.ls)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Lend(%+v) = %+v, want %+v", tc.free, got, tc.want)
			}
			var extra cluster.Resources
			for k, r := range got {
				extra = extra.Add(r.Sub(tc.ls[k].Base))
			}
			if !tc.free.Fits(extra) {
				t.Errorf("lent %+v, more than the free %+v", extra, tc.free)
			}
		})
	}
}
