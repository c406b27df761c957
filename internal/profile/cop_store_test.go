package profile_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/profile"
)

// copSnapshot is the committed operator store: `sloserve profile --operators --store FILE --loo`
// on the bundled models, threads 1 and 2, batches 1, 8 and 32 (docs/infless.md).
const copSnapshot = "testdata/opstore.json"

// copLiveStores are two later live measurements of the same command (`--rounds 5 --batches
// 1,8,32`) on this machine at load 6–40: the one COP did worst on before the convolution fit and
// the node term (18.9 % at batch 8), and the one that confirmed them (docs/infless.md).
var copLiveStores = []string{"testdata/opstore-live4.json", "testdata/opstore-live6.json"}

func readStore(t *testing.T, path string) *profile.COPStore {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := profile.ReadCOPStore(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func readSnapshot(t *testing.T) *profile.COPStore { return readStore(t, copSnapshot) }

// TestCOPLeaveOneOutBand is issue #16's acceptance on the committed snapshot and live stores:
// every bundled model predicted from a store built without it, mean absolute error ≤ 15 % at
// batch 1 and at batch 8 over two thread counts (and ≤ 20 % on each alone).
func TestCOPLeaveOneOutBand(t *testing.T) {
	for _, path := range append([]string{copSnapshot}, copLiveStores...) {
		t.Run(path, func(t *testing.T) { looBand(t, readStore(t, path)) })
	}
}

func looBand(t *testing.T, s *profile.COPStore) {
	pts, err := s.LeaveOneOut()
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Threads(); len(got) < 2 {
		t.Fatalf("store threads %v: want at least two thread counts", got)
	}
	for _, b := range []int{1, 8} {
		for _, c := range s.Threads() {
			m, n := profile.LOOMean(pts, b, c)
			t.Logf("batch %d, %d threads: mean error %.1f %% over %d models", b, c, 100*m, n)
			// Each thread count on its own within 20 % (at batch 8, 1 / 2 threads: the snapshot
			// 9.0 / 10.3 %, live4 10.6 / 17.9 %, live6 8.9 / 7.4 %).
			if n < 10 || !(m <= 0.20) {
				t.Errorf("batch %d, %d threads: mean leave-one-out error %.1f %% over %d models, want ≤ 20 %% over ≥ 10", b, c, 100*m, n)
			}
		}
		// The acceptance band: at each batch size, the mean over the thread counts ≤ 15 %.
		if m, n := profile.LOOMean(pts, b, 0); n < 20 || !(m <= 0.15) {
			t.Errorf("batch %d: mean leave-one-out error %.1f %% over %d (model, threads) points, want ≤ 15 %%", b, 100*m, n)
		}
	}
}

// TestCOPUnseenShapeScaledByWork: an operator whose shape was never measured is interpolated in
// work between the two measured ones of its type that bracket it, and scaled by work beyond them.
func TestCOPUnseenShapeScaledByWork(t *testing.T) {
	gemm := func(size string, work, cost float64) profile.COPOp {
		return profile.COPOp{COPNode: profile.COPNode{Op: "Gemm", Size: size, In: "784", Out: "x", Work: work}, Batch: 1, Threads: 1, CostNS: cost}
	}
	s := &profile.COPStore{
		Ops:      []profile.COPOp{gemm("a", 100, 1000), gemm("b", 300, 2000)},
		Overhead: []profile.COPOverhead{{In: "784", Batch: 1, Threads: 1, NS: 500}, {In: "784", Batch: 8, Threads: 1, NS: 1200}},
	}
	model := func(work float64) profile.COPModel {
		return profile.COPModel{Model: "m", In: "784", Out: "784", Nodes: []profile.COPNode{{Op: "Gemm", Size: "new", In: "784", Out: "y", Work: work}}}
	}
	for _, tc := range []struct {
		name string
		work float64
		b    int
		want time.Duration
	}{
		{"measured shape", 100, 1, 1500},
		{"between: interpolated", 200, 1, 500 + 1500},
		{"beyond: scaled", 600, 1, 500 + 4000},
		{"below: scaled", 50, 1, 500 + 500},
		{"batch 8 of one measured: nearest batch, total work, overhead interpolated", 100, 8, 1200 + 5333},
	} {
		got, err := s.Predict(model(tc.work), tc.b, 1, nil)
		if err != nil || got != tc.want {
			t.Errorf("%s: Predict (-want +got): -%v +%v (err %v)", tc.name, tc.want, got, err)
		}
	}
	if _, err := s.Predict(model(100), 1, 2, nil); err == nil {
		t.Error("a thread count never measured was predicted")
	}
	if _, err := s.Predict(profile.COPModel{Model: "m", In: "784", Nodes: []profile.COPNode{{Op: "Conv", Work: 1}}}, 1, 1, nil); err == nil {
		t.Error("an operator type with no measured member of its family was predicted")
	}
}

// TestCOPINFlessProfile: the INFless grid COP predicts covers every thread count × batch 1, 2, 4,
// … and grows with the batch.
func TestCOPINFlessProfile(t *testing.T) {
	s := readSnapshot(t)
	m, ok := s.Model("mlp256")
	if !ok {
		t.Fatal("snapshot lacks mlp256")
	}
	p, err := s.INFlessProfile(m, 32)
	if err != nil {
		t.Fatal(err)
	}
	if want := 6 * len(s.Threads()); len(p.Points) != want {
		t.Fatalf("%d points, want %d", len(p.Points), want)
	}
	for i := 1; i < len(p.Points); i++ {
		a, b := p.Points[i-1], p.Points[i]
		if a.CPU == b.CPU && b.Latency <= a.Latency {
			t.Errorf("%d threads: batch %d %v ≤ batch %d %v", a.CPU, b.Batch, b.Latency, a.Batch, a.Latency)
		}
	}
}

func TestReadCOPStoreRejects(t *testing.T) {
	for _, in := range []string{"", "{}", `{"ops":[{"op":"Gemm","batch":0,"threads":1}],"overhead":[{"batch":1,"threads":1}]}`,
		`{"ops":[{"op":"Gemm","batch":1,"threads":1,"work":-1}],"overhead":[{"batch":1,"threads":1}]}`} {
		if _, err := profile.ReadCOPStore(bytes.NewReader([]byte(in))); err == nil {
			t.Errorf("ReadCOPStore(%q) accepted", in)
		}
	}
}

func FuzzReadCOPStore(f *testing.F) {
	b, err := os.ReadFile(copSnapshot)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"ops":[{"op":"Relu","batch":1,"threads":1,"cost_ns":5}],"overhead":[{"in":"","batch":1,"threads":1,"ns":1}],"models":[{"model":"m","nodes":[{"op":"Relu"}],"measured":[{"batch":1,"threads":1,"ns":3}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := profile.ReadCOPStore(bytes.NewReader(data))
		if err != nil {
			return
		}
		pts, err := s.LeaveOneOut()
		if err != nil {
			return
		}
		for _, p := range pts {
			if math.IsNaN(p.Error) {
				t.Fatalf("NaN error for %+v", p)
			}
		}
	})
}

// TestCOPConvFitOnTraffic: a convolution never measured is predicted from a fit of the measured
// ones' costs on elements read, elements written and FLOPs — here they follow that model exactly
// (a memory-bound 1-channel one and compute-bound many-channel ones), so the prediction is exact
// where one work scale (2·K + ConvOutputWork per output) is off by tens of percent.
func TestCOPConvFitOnTraffic(t *testing.T) {
	const alpha, beta, gamma = 0.5, 2.0, 0.01 // ns per element read, written, per FLOP
	conv := func(in, out string, k float64, b int) profile.COPOp {
		n := profile.COPNode{Op: "Conv", Size: in + "|" + out, In: in, Out: out}
		inE, outE := float64(elemsOf(in)), float64(elemsOf(out))
		n.Work = outE * (2*k + profile.ConvOutputWork)
		return profile.COPOp{COPNode: n, Batch: b, Threads: 1, CostNS: float64(b) * (alpha*inE + beta*outE + gamma*2*k*outE)}
	}
	var ops []profile.COPOp
	for _, b := range []int{1, 8} {
		ops = append(ops, conv("1x28x28", "8x28x28", 9, b), conv("8x28x28", "8x7x7", 128, b),
			conv("1x28x28", "8x14x14", 25, b), conv("12x14x14", "24x7x7", 108, b))
	}
	s := &profile.COPStore{Ops: ops, Overhead: []profile.COPOverhead{{In: "784", Batch: 1, Threads: 1, NS: 0}, {In: "784", Batch: 8, Threads: 1, NS: 0}}}
	for _, b := range []int{1, 8} {
		want := conv("16x14x14", "32x7x7", 144, b)
		m := profile.COPModel{Model: "cnn", In: "784", Out: "784", Nodes: []profile.COPNode{want.COPNode}}
		got, err := s.Predict(m, b, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if e := math.Abs(float64(got)-want.CostNS) / want.CostNS; e > 0.01 {
			t.Errorf("batch %d: predicted %v, want %.0f ns (error %.1f %%)", b, got, want.CostNS, 100*e)
		}
	}
}

// TestCOPNodeCostFitted: whole models that each cost a fixed dispatch per node on top of their
// operators' one-node costs are predicted, leave-one-out, with that per-node cost fitted on the
// others; without it, the many-small-node model would be under-predicted by about half.
func TestCOPNodeCostFitted(t *testing.T) {
	const over, nu = 1000.0, 800.0
	op := func(name string, cost float64) profile.COPOp {
		return profile.COPOp{COPNode: profile.COPNode{Op: "Relu", Size: name, In: "784", Out: "784", Work: 784}, Batch: 1, Threads: 1, CostNS: cost}
	}
	small, big := op("small", 100), op("big", 20000)
	s := &profile.COPStore{Ops: []profile.COPOp{small, big}, Overhead: []profile.COPOverhead{{In: "784", Batch: 1, Threads: 1, NS: over}}}
	for i, mix := range [][2]int{{12, 0}, {1, 1}, {3, 2}, {20, 1}, {6, 3}, {0, 2}} {
		m := profile.COPModel{Model: fmt.Sprint("m", i), In: "784", Out: "784"}
		for range mix[0] {
			m.Nodes = append(m.Nodes, small.COPNode)
		}
		for range mix[1] {
			m.Nodes = append(m.Nodes, big.COPNode)
		}
		ns := over + float64(mix[0])*(small.CostNS+nu) + float64(mix[1])*(big.CostNS+nu)
		m.Measured = []profile.COPPoint{{Batch: 1, Threads: 1, NS: ns}}
		s.Models = append(s.Models, m)
	}
	pts, err := s.LeaveOneOut()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pts {
		if p.Error > 0.05 {
			t.Errorf("%s: predicted %.0f ns, measured %.0f (error %.1f %%), want ≤ 5 %%", p.Model, p.Predicted, p.Measured, 100*p.Error)
		}
	}
}

// elemsOf is the element count of per-sample dims ("8x28x28" → 6272).
func elemsOf(dims string) int {
	n := 1
	for _, f := range strings.Split(dims, "x") {
		v, _ := strconv.Atoi(f)
		n *= v
	}
	return n
}
