package experiment

import (
	"bufio"
	"fmt"
	"io"
	"strconv"

	"github.com/sloserve/sloserve/internal/report"
	"github.com/sloserve/sloserve/internal/sim"
)

// WritePlots draws the runs' latency CCDFs, fleets and costs into dir (report.WritePlots).
func WritePlots(dir string, runs []Named, sloMS, target float64) ([]string, error) {
	prs := make([]report.PlotRun, 0, len(runs))
	for _, r := range runs {
		pr := report.PlotRun{Policy: r.Policy, Latency: r.Result.Latency.CCDF(),
			Functions: r.Result.Summary.ColdStarts > 0 || r.Result.Summary.CostUSD.Serverless > 0}
		for _, pt := range r.Result.Series.Points {
			n := 0
			for _, k := range pt.Instances {
				n += k
			}
			pr.Points = append(pr.Points, report.PlotPoint{At: pt.At, VMs: n, Serverless: pt.Serverless, CostUSD: pt.CostVM + pt.CostServerless})
		}
		prs = append(prs, pr)
	}
	return report.WritePlots(dir, prs, sloMS, target)
}

// WriteSeriesCSV writes a run's series with a header: t_s, arrival_rps, one instances_<type> column per
// type, serverless_instances, queue_len, p50_ms, p95_ms, p99_ms, attainment, cost_vm_usd,
// cost_serverless_usd. A policy label column comes first when policy is not empty.
func WriteSeriesCSV(w io.Writer, s sim.Series, policy string, header bool) error {
	bw := bufio.NewWriter(w)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	if header {
		if policy != "" {
			bw.WriteString("policy,")
		}
		bw.WriteString("t_s,arrival_rps")
		for _, t := range s.Types {
			bw.WriteString(",instances_" + t)
		}
		bw.WriteString(",serverless_instances,queue_len,p50_ms,p95_ms,p99_ms,attainment,cost_vm_usd,cost_serverless_usd\n")
	}
	for _, p := range s.Points {
		if policy != "" {
			bw.WriteString(policy + ",")
		}
		bw.WriteString(f(p.At.Seconds()) + "," + f(p.ArrivalRPS))
		for i := range s.Types {
			n := 0
			if i < len(p.Instances) {
				n = p.Instances[i]
			}
			bw.WriteString("," + strconv.Itoa(n))
		}
		fmt.Fprintf(bw, ",%d,%d,%s,%s,%s,%s,%s,%s\n", p.Serverless, p.QueueLen, f(p.P50MS), f(p.P95MS), f(p.P99MS),
			f(p.Attainment), f(p.CostVM), f(p.CostServerless))
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write series: %w", err)
	}
	return nil
}
