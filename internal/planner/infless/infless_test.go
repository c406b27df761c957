package infless

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/cluster"
	"github.com/sloserve/sloserve/internal/profile"
)

const ms = time.Millisecond

func TestRateBounds(t *testing.T) {
	tests := []struct {
		name      string
		b         int
		exec, slo time.Duration
		want      Bounds
		ok        bool
	}{
		{"paper example §3.2: SLO 200 ms, 50 ms, b=4 → [28, 80]", 4, 50 * ms, 200 * ms, Bounds{Low: 28, Up: 80}, true},
		{"b=1 needs only t_exec ≤ t_slo", 1, 150 * ms, 200 * ms, Bounds{Low: 0, Up: 6}, true},
		{"b=1 over the SLO", 1, 250 * ms, 200 * ms, Bounds{}, false},
		{"b>1 needs t_exec ≤ t_slo/2", 8, 101 * ms, 200 * ms, Bounds{}, false},
		{"exactly half", 2, 100 * ms, 200 * ms, Bounds{Low: 20, Up: 20}, true},
		{"slow feasible instance keeps its exact rate", 1, 2 * time.Second, 3 * time.Second, Bounds{Low: 0, Up: 0.5}, true},
		{"zero batch", 0, 50 * ms, 200 * ms, Bounds{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := RateBounds(tc.b, tc.exec, tc.slo)
			if ok != tc.ok || math.Abs(got.Low-tc.want.Low) > 1e-9 || math.Abs(got.Up-tc.want.Up) > 1e-9 {
				t.Errorf("RateBounds(%d, %v, %v) = %+v, %v; want %+v, %v", tc.b, tc.exec, tc.slo, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestBand(t *testing.T) {
	bounds := []Bounds{{Low: 28, Up: 80}, {Low: 10, Up: 20}} // R_max 100, R_min 38
	tests := []struct {
		name      string
		r         float64
		scale     Scale
		residual  float64
		wantRates []float64
	}{
		{"case i: over R_max", 130, Up, 30, []float64{80, 20}},
		{"case ii: at R_max", 100, Hold, 0, []float64{80, 20}},
		{"case ii: inside the band", 95, Hold, 0, []float64{80 - 5.0/62*52, 20 - 5.0/62*10}},
		{"case iii: below αR_max+(1−α)R_min = 87.6", 60, Down, 0, []float64{80 - 40.0/62*52, 20 - 40.0/62*10}},
		{"case iii below R_min: clamped at r_low", 10, Down, 0, []float64{28, 10}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Band(bounds, tc.r, DefaultAlpha)
			if got.Scale != tc.scale || math.Abs(got.Residual-tc.residual) > 1e-9 {
				t.Fatalf("Band(%v) = scale %v residual %v; want %v %v", tc.r, got.Scale, got.Residual, tc.scale, tc.residual)
			}
			for i := range tc.wantRates {
				if math.Abs(got.Rates[i]-tc.wantRates[i]) > 1e-9 {
					t.Errorf("rate[%d] = %v, want %v", i, got.Rates[i], tc.wantRates[i])
				}
			}
			if tc.scale != Down {
				var sum float64
				for _, x := range got.Rates {
					sum += x
				}
				if want := math.Min(tc.r, 100); math.Abs(sum-want) > 1e-9 {
					t.Errorf("rates sum to %v, want %v", sum, want)
				}
			}
		})
	}
}

func TestRelease(t *testing.T) {
	bounds := []Bounds{{Up: 80}, {Up: 20}, {Up: 30}, {Up: 10}}
	tests := []struct {
		name string
		r    float64
		want []int
	}{
		{"keeps enough for R", 100, []int{1, 3}},
		{"releases the smallest first", 75, []int{1, 2, 3}},
		{"stops before going under R", 125, []int{3}},
		{"low load keeps the largest", 5, []int{1, 2, 3}},
		{"zero load releases everything", 0, []int{0, 1, 2, 3}},
		{"nothing to release", 140, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Release(bounds, tc.r)
			if len(got) != len(tc.want) {
				t.Fatalf("Release(%v) = %v, want %v", tc.r, got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("Release(%v) = %v, want %v", tc.r, got, tc.want)
				}
			}
		})
	}
}

// table is a synthetic profile: t = base + per·b, scaled down by resources.
func table(b int, r cluster.Resources) (time.Duration, bool) {
	speed := float64(r.CPU) + float64(r.GPU)/5
	if speed == 0 {
		return 0, false
	}
	return time.Duration((10 + 6*float64(b)) / speed * float64(20*ms)), true
}

func TestScheduleLargestBatchFirst(t *testing.T) {
	c := cluster.New(8, cluster.Resources{CPU: 16, GPU: 100})
	cfg := Config{SLO: 200 * ms, Batches: []int{1, 2, 4, 8, 16}, Resources: []cluster.Resources{{CPU: 2}, {CPU: 4}, {CPU: 2, GPU: 20}, {CPU: 4, GPU: 50}}}
	largest := Options(cfg, table)[0].Batch // options come largest batch first
	if largest != 8 {
		t.Fatalf("largest feasible batch %d, want 8 (16 takes 151 ms > t_slo/2)", largest)
	}
	res, err := Schedule(c, 500, cfg, table)
	if err != nil {
		t.Fatal(err)
	}
	if res.Unplaced != 0 || len(res.Placements) == 0 {
		t.Fatalf("Schedule = %+v, want the load covered", res)
	}
	if b := res.Placements[0].Batch; b != largest {
		t.Errorf("first instance batch %d, want the largest feasible (%d)", b, largest)
	}
}

func TestScheduleLowLoadPicksSmallBatch(t *testing.T) {
	c := cluster.New(1, cluster.Resources{CPU: 16, GPU: 100})
	cfg := Config{SLO: 200 * ms, Batches: []int{1, 4, 16}, Resources: []cluster.Resources{{CPU: 4}}}
	res, err := Schedule(c, 3, cfg, table)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Placements) != 1 || res.Placements[0].Batch != 1 {
		t.Fatalf("Schedule(3 rps) = %+v, want one b=1 instance: a larger batch would not fill (R ≤ r_low)", res.Placements)
	}
}

func TestScheduleFullCluster(t *testing.T) {
	c := cluster.New(1, cluster.Resources{CPU: 4})
	cfg := Config{SLO: 200 * ms, Batches: []int{1}, Resources: []cluster.Resources{{CPU: 2}}}
	res, err := Schedule(c, 1000, cfg, table)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Placements) != 2 || res.Unplaced <= 0 || res.Reason != "no server has room for a feasible configuration" {
		t.Fatalf("Schedule on a full cluster = %d placements, unplaced %v, %q", len(res.Placements), res.Unplaced, res.Reason)
	}
}

func TestConfigValidate(t *testing.T) {
	good := Config{SLO: ms, Batches: []int{1}, Resources: []cluster.Resources{{CPU: 1}}}
	tests := []struct {
		name string
		edit func(*Config)
	}{
		{"slo", func(c *Config) { c.SLO = 0 }},
		{"batches empty", func(c *Config) { c.Batches = nil }},
		{"batch zero", func(c *Config) { c.Batches = []int{0} }},
		{"resources", func(c *Config) { c.Resources = []cluster.Resources{{}} }},
		{"beta", func(c *Config) { c.Beta = -1 }},
	}
	if err := good.Validate(); err != nil {
		t.Fatalf("good config: %v", err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			if err := c.Validate(); err == nil {
				t.Errorf("Validate accepted a bad %s", tc.name)
			}
		})
	}
}

// TestScheduleProperties checks Alg. 1's invariants on random clusters and loads, with each form of
// e_ij: every placement is SLO-feasible under Eq. 1's conditions, no server is over-committed, and
// unless the cluster ran out, the placed r_up covers the load.
func TestScheduleProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		n := 1 + rng.IntN(20)
		c := cluster.New(n, cluster.Resources{CPU: 8 + rng.IntN(24), GPU: 100 * rng.IntN(2)})
		cfg := Config{
			SLO:       time.Duration(50+rng.IntN(400)) * ms,
			Batches:   []int{1, 2, 4, 8, 16, 32},
			Resources: []cluster.Resources{{CPU: 1}, {CPU: 2}, {CPU: 4}, {CPU: 1, GPU: 10}, {CPU: 2, GPU: 30}, {CPU: 4, GPU: 50}},
			Offset:    DefaultOffset,
		}
		cfg.Metric = []Metric{MetricPaper, MetricOriginal, MetricShare}[i%3]
		load := rng.Float64() * 3000
		res, err := Schedule(c, load, cfg, table)
		if err != nil {
			t.Fatal(err)
		}
		var up float64
		for _, p := range res.Placements {
			up += p.Bounds.Up
			half := cfg.SLO
			if p.Batch > 1 {
				half = cfg.SLO / 2
			}
			if p.Exec > half {
				t.Fatalf("case %d: placement %+v has t_exec %v > %v", i, p, p.Exec, half)
			}
		}
		for j := 0; j < c.Len(); j++ {
			if !c.Capacity(j).Fits(c.Used(j)) {
				t.Fatalf("case %d: server %d over-committed: %+v > %+v", i, j, c.Used(j), c.Capacity(j))
			}
		}
		if res.Unplaced == 0 && up < load {
			t.Fatalf("case %d: r_up sum %v < load %v with nothing unplaced", i, up, load)
		}
		if res.Unplaced > 0 && math.Abs(up+res.Unplaced-load) > 1e-6 {
			t.Fatalf("case %d: placed %v + unplaced %v != load %v", i, up, res.Unplaced, load)
		}
	}
}

func TestScheduleRealProfiles(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "..", "shared", "data", "profiles", "infless")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("INFless profiles not present at %s", dir)
	}
	// SLOs of INFless's function YAMLs (infless-constants.json): ssd 300 ms, mobilenet 200 ms, resnet-50 300 ms.
	for m, slo := range map[string]time.Duration{"resnet-50": 300 * ms, "mobilenet": 200 * ms, "ssd": 300 * ms} {
		t.Run(m, func(t *testing.T) {
			p := readProfile(t, filepath.Join(dir, m+"-profile-results.txt"))
			batches, res := ProfileSpace(p)
			c := cluster.New(16, cluster.Resources{CPU: 32, GPU: 200})
			out, err := Schedule(c, 400, Config{SLO: slo, Batches: batches, Resources: res, Offset: DefaultOffset}, ProfilePredictor(p))
			if err != nil {
				t.Fatal(err)
			}
			if out.Unplaced > 0 {
				t.Fatalf("%s: 400 rps not covered on 8 servers: %+v", m, out)
			}
			t.Logf("%s: %d instances, fragment ratio %.3f, first %+v", m, len(out.Placements), c.FragmentRatio(cluster.DefaultBeta), out.Placements[0].Option)
		})
	}
}

func readProfile(t *testing.T, path string) profile.INFlessProfile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.ReadINFless(f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// BenchmarkSchedule10kOn2k places 10,000 instances on a 2,000-server cluster (INFless §5.3 reports
// 0.5 ms per instance; the goal here is < 100 ms in total), with each form of e_ij.
//
//	go test -run XXX -bench Schedule10kOn2k -benchmem ./internal/planner/infless
func BenchmarkSchedule10kOn2k(b *testing.B) {
	for _, m := range []struct {
		name   string
		metric Metric
	}{{"paper", MetricPaper}, {"original", MetricOriginal}, {"share", MetricShare}} {
		b.Run(m.name, func(b *testing.B) {
			cfg := Config{
				SLO:          200 * ms,
				Batches:      []int{1, 2, 4, 8, 16, 32},
				Resources:    []cluster.Resources{{CPU: 1}, {CPU: 2}, {CPU: 4}, {CPU: 1, GPU: 10}, {CPU: 2, GPU: 20}, {CPU: 4, GPU: 50}},
				Offset:       DefaultOffset,
				MaxInstances: 10_000,
				Metric:       m.metric,
			}
			n := 0
			for b.Loop() {
				c := cluster.New(2000, cluster.Resources{CPU: 32, GPU: 400})
				res, err := Schedule(c, math.Inf(1), cfg, table)
				if err != nil {
					b.Fatal(err)
				}
				n = len(res.Placements)
			}
			b.ReportMetric(float64(n), "instances")
		})
	}
}

// TestScheduleMetrics pins the three forms of e_ij on one empty server with two b = 1
// configurations of equal latency (so equal r_up): a 2-thread CPU-only one, cheapest per FLOPS,
// and a 2-thread + 50 % GPU one. Eq. 10 as printed prefers the CPU-only one (its r_up per
// β-weighted resource is 28× higher); the released scheduler's CRE prefers the one that leaves
// less of the server free; MetricShare prefers the CPU-only one too, for its smaller dominant share.
func TestScheduleMetrics(t *testing.T) {
	flat := func(b int, r cluster.Resources) (time.Duration, bool) { return 100 * ms, b == 1 }
	tests := []struct {
		name   string
		metric Metric
		want   cluster.Resources
	}{
		{"Eq. 10 as printed", MetricPaper, cluster.Resources{CPU: 2}},
		{"released CRE", MetricOriginal, cluster.Resources{CPU: 2, GPU: 50}},
		{"sloserve's share: 2 threads are 1/8 of the server, 50 % GPU half of it", MetricShare, cluster.Resources{CPU: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster.New(1, cluster.Resources{CPU: 16, GPU: 100})
			cfg := Config{SLO: 200 * ms, Batches: []int{1}, Resources: []cluster.Resources{{CPU: 2}, {CPU: 2, GPU: 50}}, Metric: tt.metric}
			res, err := Schedule(c, 1, cfg, flat)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Placements) != 1 || res.Placements[0].Resources != tt.want {
				t.Errorf("placements (-want +got):\n-%+v\n+%+v", tt.want, res.Placements)
			}
		})
	}
}
