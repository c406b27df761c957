package report

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Figure is one rendered chart.
type Figure struct {
	// Name is the file stem: <Name>.png and <Name>.svg.
	Name string
	// Title is the figure's heading in the HTML page.
	Title string
	// Caption says what the figure shows and where its data came from.
	Caption string
	// Plot is the chart.
	Plot *plot.Plot
}

// Figures builds the report's figures from run, in page order: latency CCDF with the SLO
// (MArk Fig. 8, MLProxy Fig. 6, BATCH Fig. 6), cost by tier (MArk Fig. 9, BATCH's cost
// comparisons), fleet over time (MArk Fig. 10, INFless Fig. 12), batch size over time (MLProxy
// Fig. 7, INFless's non-uniform batching) and tail latency over time.
func Figures(run *Run) ([]Figure, error) {
	builders := []func(*Run) (Figure, error){ccdfFigure, costFigure, fleetFigure, batchFigure, latencyFigure}
	figs := make([]Figure, 0, len(builders))
	for _, b := range builders {
		f, err := b(run)
		if err != nil {
			return nil, fmt.Errorf("report: figure %s: %w", f.Name, err)
		}
		figs = append(figs, f)
	}
	return figs, nil
}

var dashed = []vg.Length{vg.Points(4), vg.Points(3)}

// sloOf returns the SLO of the first summary that has one (all policies of a run share it).
func sloOf(run *Run) (thresholdMS, target float64) {
	for _, p := range run.Policies {
		if s, ok := run.Summaries[p]; ok && s.SLO.ThresholdMS > 0 {
			return s.SLO.ThresholdMS, s.SLO.Target
		}
	}
	return 0, 0
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

// headroom leaves room above the data for the legend, which sits at the top right.
func headroom(p *plot.Plot, ymax float64) {
	if ymax > 0 {
		p.Y.Max = 1.3 * ymax
	}
}

// maxY returns the largest Y of xys.
func maxY(xys ...plotter.XYs) float64 {
	m := 0.0
	for _, xy := range xys {
		for _, pt := range xy {
			m = max(m, pt.Y)
		}
	}
	return m
}

func addLine(p *plot.Plot, xy plotter.XYs, i int, label string, dash bool) error {
	l, err := plotter.NewLine(xy)
	if err != nil {
		return err
	}
	l.Color = plotutil.Color(i)
	l.Width = vg.Points(1.5)
	if dash {
		l.Dashes = dashed
	}
	p.Add(l)
	p.Legend.Add(label, l)
	return nil
}

// ccdfFigure plots P(latency > x) per policy on a log scale, with the SLO threshold as a vertical
// line and 1 − target as a horizontal one: a policy meets the SLO when its curve passes below the
// crossing. Policies without a CCDF file are drawn through their Summary's percentiles.
func ccdfFigure(run *Run) (Figure, error) {
	f := Figure{Name: "latency-ccdf", Title: "Latency CCDF"}
	p := newPlot("Latency CCDF", "latency (ms)", "P(latency > x)")
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	thr, target := sloOf(run)
	ymin, xmax := 1.0, 2*thr
	approx := false
	for i, pol := range run.Policies {
		var pts plotter.XYs
		label := pol
		if c, ok := run.CCDF[pol]; ok {
			for _, pt := range c {
				if pt.Exceeded > 0 {
					pts = append(pts, plotter.XY{X: pt.LatencyMS, Y: pt.Exceeded})
				}
			}
		} else if s, ok := run.Summaries[pol]; ok && s.Completed > 0 {
			l := s.LatencyMS
			pts = plotter.XYs{{X: 0, Y: 1}, {X: l.P50, Y: 0.5}, {X: l.P95, Y: 0.05}, {X: l.P99, Y: 0.01}}
			label += " (p50/p95/p99)"
			approx = true
		}
		if len(pts) == 0 {
			continue
		}
		for _, pt := range pts {
			ymin, xmax = min(ymin, pt.Y), max(xmax, pt.X)
		}
		if err := addLine(p, pts, i, label, false); err != nil {
			return f, err
		}
	}
	if target > 0 && target < 1 {
		ymin = min(ymin, (1-target)/10)
	}
	ymin = max(ymin, 1e-7)
	if thr > 0 {
		v, _ := plotter.NewLine(plotter.XYs{{X: thr, Y: ymin}, {X: thr, Y: 1}})
		v.Dashes, v.Color = dashed, color.Black
		p.Add(v)
		p.Legend.Add(fmt.Sprintf("SLO %g ms", thr), v)
		if target > 0 && target < 1 {
			h, _ := plotter.NewLine(plotter.XYs{{X: 0, Y: 1 - target}, {X: xmax, Y: 1 - target}})
			h.Dashes, h.Color = dashed, color.RGBA{R: 200, A: 255}
			p.Add(h)
			p.Legend.Add(fmt.Sprintf("1 − target (%g)", target), h)
		}
	}
	p.Y.Min, p.Y.Max = ymin, 1
	p.X.Min = 0
	f.Plot = p
	f.Caption = fmt.Sprintf("Fraction of requests slower than x, per policy; the dashed lines mark the SLO (%g ms for %g of requests).", thr, target)
	if approx {
		f.Caption += " Policies marked (p50/p95/p99) have no CCDF file and are drawn through their percentiles."
	}
	return f, nil
}

// costFigure stacks each policy's VM and serverless cost.
func costFigure(run *Run) (Figure, error) {
	f := Figure{Name: "cost-by-tier", Title: "Cost by tier",
		Caption: "Total cost of the run per policy, split into the VM fleet and the serverless tier (US$)."}
	p := newPlot("Cost by tier", "", "US$")
	var names []string
	var vm, sl plotter.Values
	for _, pol := range run.Policies {
		s, ok := run.Summaries[pol]
		if !ok {
			continue
		}
		names = append(names, pol)
		vm = append(vm, s.CostUSD.VM)
		sl = append(sl, s.CostUSD.Serverless)
	}
	if len(names) == 0 {
		f.Plot = p
		return f, nil
	}
	w := vg.Points(min(40, 360/float64(len(names))))
	bv, err := plotter.NewBarChart(vm, w)
	if err != nil {
		return f, err
	}
	bv.Color, bv.LineStyle.Width = plotutil.Color(0), 0
	bs, err := plotter.NewBarChart(sl, w)
	if err != nil {
		return f, err
	}
	bs.Color, bs.LineStyle.Width = plotutil.Color(1), 0
	bs.StackOn(bv)
	p.Add(bv, bs)
	p.Legend.Add("VM", bv)
	p.Legend.Add("serverless", bs)
	p.NominalX(names...)
	p.X.Min, p.X.Max, p.Y.Min = -0.6, float64(len(names))-0.4, 0
	top := 0.0
	for i := range vm {
		top = max(top, vm[i]+sl[i])
	}
	headroom(p, top)
	f.Plot = p
	return f, nil
}

// timeAxis picks hours for runs of two hours or more, else minutes, and returns the divisor
// from seconds.
func timeAxis(run *Run) (label string, div float64) {
	end := 0.0
	for _, s := range run.Series {
		if n := len(s.Points); n > 0 {
			end = max(end, s.Points[n-1].T)
		}
	}
	if end >= 7200 {
		return "time (h)", 3600
	}
	return "time (min)", 60
}

// fleetFigure plots the VM instances (all types) and the serverless instances over time.
func fleetFigure(run *Run) (Figure, error) {
	f := Figure{Name: "fleet", Title: "Fleet over time",
		Caption: "VM instances (launching or ready, all types; solid) and live serverless instances (dashed) per policy."}
	label, div := timeAxis(run)
	p := newPlot("Fleet over time", label, "instances")
	top := 0.0
	for i, pol := range run.Policies {
		s := run.Series[pol]
		if s == nil || len(s.Points) == 0 {
			continue
		}
		var vm, fn plotter.XYs
		anyFn := false
		for _, pt := range s.Points {
			n := 0.0
			for _, k := range pt.Instances {
				n += k
			}
			vm = append(vm, plotter.XY{X: pt.T / div, Y: n})
			fn = append(fn, plotter.XY{X: pt.T / div, Y: pt.Serverless})
			anyFn = anyFn || pt.Serverless > 0
		}
		top = max(top, maxY(vm, fn))
		if err := addLine(p, vm, i, pol+" VMs", false); err != nil {
			return f, err
		}
		if anyFn {
			if err := addLine(p, fn, i, pol+" functions", true); err != nil {
				return f, err
			}
		}
	}
	p.X.Min, p.Y.Min = 0, 0
	headroom(p, top)
	f.Plot = p
	return f, nil
}

// batchFigure plots the mean batch size per period; a policy whose series has no batch column is
// drawn as its run mean from the Summary (dashed).
func batchFigure(run *Run) (Figure, error) {
	f := Figure{Name: "batch-size", Title: "Batch size over time",
		Caption: "Mean size of the batches dispatched in each period per policy; dashed lines are run means from the Summary where the series has no batch column."}
	label, div := timeAxis(run)
	p := newPlot("Batch size over time", label, "mean batch size")
	start, end := math.Inf(1), math.Inf(-1)
	for _, s := range run.Series {
		if n := len(s.Points); n > 0 {
			start, end = min(start, s.Points[0].T), max(end, s.Points[n-1].T)
		}
	}
	top := 0.0
	for i, pol := range run.Policies {
		var pts plotter.XYs
		if s := run.Series[pol]; s != nil {
			for _, pt := range s.Points {
				if !math.IsNaN(pt.MeanBatchSize) {
					pts = append(pts, plotter.XY{X: pt.T / div, Y: pt.MeanBatchSize})
				}
			}
		}
		top = max(top, maxY(pts))
		if len(pts) > 0 {
			if err := addLine(p, pts, i, pol, false); err != nil {
				return f, err
			}
			continue
		}
		if s, ok := run.Summaries[pol]; ok && s.MeanBatchSize > 0 && end > start {
			pts = plotter.XYs{{X: start / div, Y: s.MeanBatchSize}, {X: end / div, Y: s.MeanBatchSize}}
			top = max(top, s.MeanBatchSize)
			if err := addLine(p, pts, i, pol+" (run mean)", true); err != nil {
				return f, err
			}
		}
	}
	p.X.Min, p.Y.Min = 0, 0
	headroom(p, top)
	f.Plot = p
	return f, nil
}

// latencyFigure plots each period's p95 latency against the SLO threshold.
func latencyFigure(run *Run) (Figure, error) {
	f := Figure{Name: "latency-p95", Title: "Tail latency over time",
		Caption: "95th-percentile latency of the requests completed in each period per policy; the dashed line is the SLO threshold."}
	label, div := timeAxis(run)
	p := newPlot("p95 latency over time", label, "latency (ms)")
	end, top := 0.0, 0.0
	for i, pol := range run.Policies {
		s := run.Series[pol]
		if s == nil || len(s.Points) == 0 {
			continue
		}
		var pts plotter.XYs
		for _, pt := range s.Points {
			pts = append(pts, plotter.XY{X: pt.T / div, Y: pt.P95MS})
		}
		top = max(top, maxY(pts))
		end = max(end, pts[len(pts)-1].X)
		if err := addLine(p, pts, i, pol, false); err != nil {
			return f, err
		}
	}
	if thr, _ := sloOf(run); thr > 0 && end > 0 {
		h, _ := plotter.NewLine(plotter.XYs{{X: 0, Y: thr}, {X: end, Y: thr}})
		h.Dashes, h.Color = dashed, color.Black
		p.Add(h)
		p.Legend.Add(fmt.Sprintf("SLO %g ms", thr), h)
		top = max(top, thr)
	}
	p.X.Min, p.Y.Min = 0, 0
	headroom(p, top)
	f.Plot = p
	return f, nil
}
