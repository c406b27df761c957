package experiment

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/sim"
)

// madeUpINFless writes INFless-format profiles (`model cpu_threads gpu_sm_pct batch latency_ms`)
// for the OSVT + Q&A models and three 6 s-step rate traces into a directory: made-up numbers of
// the published shape (a batch of b costs 0.4 + 0.6 b of one request; more threads and GPU share
// shorten it), so that the INFless experiments run without the shared data.
func madeUpINFless(t *testing.T) (profiles string, traces []string) {
	t.Helper()
	dir := t.TempDir()
	base := map[string]float64{"ssd": 60, "mobilenet": 20, "resnet-50": 50, "textcnn-69": 5, "lstm-maxclass-2365": 8}
	for _, f := range sim.OSVTQA {
		var b strings.Builder
		for _, cpu := range []int{2, 4, 8, 16} {
			for _, gpu := range []int{0, 10, 20, 30, 40, 50} {
				for _, batch := range []int{1, 2, 4, 8, 16} {
					ms := base[f.Model] * (0.4 + 0.6*float64(batch)) * math.Sqrt(8/float64(cpu)) / (1 + float64(gpu)/10)
					fmt.Fprintf(&b, "%s %d %d %d %.2f\n", f.Model, cpu, gpu, batch, ms)
				}
			}
		}
		if err := os.WriteFile(filepath.Join(dir, f.Model+"-profile-results.txt"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		var b strings.Builder
		b.WriteString("step,rps\n")
		for s := range 100 {
			fmt.Fprintf(&b, "%d,%.1f\n", s, 30+20*math.Sin(float64(s)/(5+float64(i))))
		}
		p := filepath.Join(dir, fmt.Sprintf("made-up-%d.csv", i))
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		traces = append(traces, p)
	}
	return dir, traces
}

// TestInflessTableBeatsUniform is the claim of docs/infless.md's tables on made-up profiles and
// traces (10 minutes, 100 rps peaks): INFless serves more requests per unit of resource than the
// BATCH-style uniform baseline, and meets every function's 95 % SLO target.
func TestInflessTableBeatsUniform(t *testing.T) {
	t.Parallel()
	profiles, traces := madeUpINFless(t)
	runs, err := InflessTable(context.Background(), profiles, traces, []string{"infless"}, "made-up", 100, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	writeInflessTable(&b, "made-up", runs)
	t.Logf("\n%s", b.String())
	if len(runs) != 2 || runs[0].Name != "infless" || runs[1].Name != "uniform" {
		t.Fatalf("runs %v, want infless and uniform", runs)
	}
	inf, uni := runs[0].Summary.Extra["rps_per_resource"], runs[1].Summary.Extra["rps_per_resource"]
	if inf <= uni {
		t.Errorf("infless %.4f rps/resource, uniform %.4f: want infless higher", inf, uni)
	}
	for _, f := range runs[0].Functions {
		if f.SLOAttainment < 0.95 {
			t.Errorf("infless: function on %s attains %.4f < 0.95", f.Trace, f.SLOAttainment)
		}
	}
}

// TestInflessLoadRowsAndRatios: the busy-cluster experiment on the made-up data at one peak runs
// uniform and openfaas+ as the ratios' bases beside the policy asked for, and prints their rows.
func TestInflessLoadRowsAndRatios(t *testing.T) {
	t.Parallel()
	profiles, traces := madeUpINFless(t)
	runs, err := InflessLoad(context.Background(), profiles, traces, "made-up", 0, 5*time.Minute, 200, loadVariants([]string{"infless"}))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	writeLoadTable(&b, runs)
	out := b.String()
	t.Logf("\n%s", out)
	for _, want := range []string{"| infless |", "| uniform |", "| openfaas+ |", "1.00× |"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	if inf, uni := runs[0].Summary.Extra["rps_per_resource"], runs[1].Summary.Extra["rps_per_resource"]; inf <= uni {
		t.Errorf("infless %.4f rps/resource, uniform %.4f: want infless higher", inf, uni)
	}
}
