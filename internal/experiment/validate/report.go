package validate

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/sloserve/sloserve/internal/slo"
)

// Acceptance bounds (issue #16): the simulator's attainment within AttainmentPoints points of
// the live run's, instance-seconds and cost within RelativeBound.
const (
	AttainmentPoints = 1.0
	RelativeBound    = 0.10
)

// RelErr is (sim − live) / live, or 0 when both are 0 (NaN when only live is 0).
func RelErr(live, sim float64) float64 {
	if live == 0 {
		if sim == 0 {
			return 0
		}
		return math.NaN()
	}
	return (sim - live) / live
}

// Within reports whether r meets the acceptance bounds.
func (r Result) Within() bool {
	dA := 100 * math.Abs(r.Sim.SLOAttainment-r.Live.SLOAttainment)
	dI := math.Abs(RelErr(r.Live.Extra["instance_seconds"], r.Sim.Extra["instance_seconds"]))
	dC := math.Abs(RelErr(r.Live.CostUSD.Total, r.Sim.CostUSD.Total))
	return dA <= AttainmentPoints && dI <= RelativeBound && dC <= RelativeBound
}

// LiveSpread is the live runs' attainment spread in points (max − min; 0 with one run): the
// live measurement's own noise, against which the simulator's error is to be read.
func (r Result) LiveSpread() float64 {
	if len(r.LiveAttainments) < 2 {
		return 0
	}
	return 100 * (slices.Max(r.LiveAttainments) - slices.Min(r.LiveAttainments))
}

// row is one printed metric of a Result.
type row struct {
	name string
	get  func(s slo.Summary) float64
	abs  bool // the error is a difference in points (×100), not relative
	fmt  string
}

var rows = []row{
	{"attainment", func(s slo.Summary) float64 { return s.SLOAttainment }, true, "%.4f"},
	{"p50 ms", func(s slo.Summary) float64 { return s.LatencyMS.P50 }, false, "%.2f"},
	{"p95 ms", func(s slo.Summary) float64 { return s.LatencyMS.P95 }, false, "%.2f"},
	{"p99 ms", func(s slo.Summary) float64 { return s.LatencyMS.P99 }, false, "%.2f"},
	{"instance-s", func(s slo.Summary) float64 { return s.Extra["instance_seconds"] }, false, "%.1f"},
	{"cost vm $", func(s slo.Summary) float64 { return s.CostUSD.VM }, false, "%.6f"},
	{"cost serverless $", func(s slo.Summary) float64 { return s.CostUSD.Serverless }, false, "%.6f"},
	{"spills", func(s slo.Summary) float64 { return s.Extra["spills"] }, false, "%.0f"},
	{"cold starts", func(s slo.Summary) float64 { return float64(s.ColdStarts) }, false, "%.0f"},
	{"launches", func(s slo.Summary) float64 { return s.Extra["launches"] }, false, "%.0f"},
	{"rejected", func(s slo.Summary) float64 { return float64(s.Rejected) }, false, "%.0f"},
	{"mean batch", func(s slo.Summary) float64 { return s.MeanBatchSize }, false, "%.2f"},
}

// Print writes the profile and one table per Result: each metric live, simulated and the error
// (attainment in points, the rest relative).
func Print(w io.Writer, rep Report) {
	fmt.Fprintf(w, "profile: %s\n", rep.Profile)
	for _, r := range rep.Results {
		verdict := "within bounds"
		if !r.Within() {
			verdict = "OUT of bounds"
		}
		fmt.Fprintf(w, "\n%s on %s (%d requests): %s (attainment ±%.0f pt, instance-s and cost ±%.0f %%)\n",
			r.Policy, r.Trace, r.Live.Requests, verdict, AttainmentPoints, 100*RelativeBound)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "metric\tlive\tsim\terror\t")
		for _, m := range rows {
			l, s := m.get(r.Live), m.get(r.Sim)
			var e string
			switch {
			case m.abs:
				e = fmt.Sprintf("%+.2f pt", 100*(s-l))
			case l == 0 && s == 0:
				e = "="
			case l == 0:
				e = "n/a"
			default:
				e = fmt.Sprintf("%+.1f %%", 100*RelErr(l, s))
			}
			fmt.Fprintf(tw, "%s\t"+m.fmt+"\t"+m.fmt+"\t%s\t\n", m.name, l, s, e)
		}
		tw.Flush()
		if ns := r.SimNoStalls; ns != nil {
			fmt.Fprintf(w, "sim without the stall process: attainment %.4f (%+.2f pt), instance-s %.1f (%+.1f %%), launches %.0f\n", ns.SLOAttainment,
				100*(ns.SLOAttainment-r.Live.SLOAttainment), ns.Extra["instance_seconds"], 100*RelErr(r.Live.Extra["instance_seconds"], ns.Extra["instance_seconds"]), ns.Extra["launches"])
		}
		if len(r.SimSeeds) > 0 {
			fmt.Fprint(w, "sim under other seeds (attainment, instance-s, launches):")
			for _, so := range r.SimSeeds {
				fmt.Fprintf(w, " [%d] %.4f %.1f %.0f;", so.Seed, so.Attainment, so.InstanceSeconds, so.Launches)
			}
			fmt.Fprintln(w)
		}
		if len(r.LiveAttainments) > 1 {
			fmt.Fprintf(w, "live attainment over %d runs: %v (spread %.2f pt", len(r.LiveAttainments), fmtAtt(r.LiveAttainments), r.LiveSpread())
			if r.LiveSpread() > AttainmentPoints {
				fmt.Fprintf(w, ": the live run varies by more than the ±%.0f pt bound", AttainmentPoints)
			}
			fmt.Fprintln(w, ")")
		}
	}
}

// fmtAtt formats attainments to four places.
func fmtAtt(xs []float64) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fmt.Sprintf("%.4f", x)
	}
	return strings.Join(out, " ")
}
