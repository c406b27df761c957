package report

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/sloserve/sloserve/internal/slo"
)

// PlotRun is one policy's run as the comparison plots draw it.
type PlotRun struct {
	// Policy labels the run's lines.
	Policy string
	// Latency is the CCDF of the run's request latencies.
	Latency []slo.CCDFPoint
	// Points is the run's time series.
	Points []PlotPoint
	// Functions draws the serverless instances too (the run used the serverless tier).
	Functions bool
}

// PlotPoint is one point of a run's time series.
type PlotPoint struct {
	// At is the offset from the start of the run.
	At time.Duration
	// VMs and Serverless count the instances alive.
	VMs, Serverless int
	// CostUSD is the dollars spent so far.
	CostUSD float64
}

// WritePlots writes three PNGs into dir: latency-ccdf.png (CCDF of latency per policy with the
// SLO threshold as a vertical line and 1 − target as a horizontal one, like MArk Fig. 8 and
// MLProxy Fig. 6), fleet.png (VM instances and serverless instances over time) and cost.png
// (cumulative cost over time). It returns the files written.
func WritePlots(dir string, runs []PlotRun, sloMS, target float64) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	var files []string
	save := func(p *plot.Plot, name string) error {
		path := filepath.Join(dir, name)
		if err := p.Save(8*vg.Inch, 5*vg.Inch, path); err != nil {
			return fmt.Errorf("plot %s: %w", name, err)
		}
		files = append(files, path)
		return nil
	}

	// Latency CCDF.
	p := plot.New()
	p.Title.Text = "Latency CCDF"
	p.X.Label.Text = "latency (ms)"
	p.Y.Label.Text = "P(latency > x)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	ymin, xmax := 1.0, sloMS*2
	for i, r := range runs {
		pts := plotter.XYs{}
		for _, c := range r.Latency {
			if c.Exceeded <= 0 {
				continue
			}
			pts = append(pts, plotter.XY{X: float64(c.Latency) / 1e6, Y: c.Exceeded})
			ymin = min(ymin, c.Exceeded)
			xmax = max(xmax, float64(c.Latency)/1e6)
		}
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return files, err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(r.Policy, l)
	}
	ymin = max(min(ymin, (1-target)/10), 1e-7)
	vline, _ := plotter.NewLine(plotter.XYs{{X: sloMS, Y: ymin}, {X: sloMS, Y: 1}})
	vline.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	vline.Color = color.Black
	hline, _ := plotter.NewLine(plotter.XYs{{X: 0, Y: 1 - target}, {X: xmax, Y: 1 - target}})
	hline.Dashes = vline.Dashes
	hline.Color = color.RGBA{R: 200, A: 255}
	p.Add(vline, hline)
	p.Legend.Add(fmt.Sprintf("SLO %g ms", sloMS), vline)
	p.Legend.Add(fmt.Sprintf("1 − target (%g)", target), hline)
	p.Y.Min, p.Y.Max = ymin, 1
	if err := save(p, "latency-ccdf.png"); err != nil {
		return files, err
	}

	// Fleet over time and cost over time.
	fleet, costp := plot.New(), plot.New()
	fleet.Title.Text, fleet.X.Label.Text, fleet.Y.Label.Text = "Fleet", "time (h)", "instances"
	costp.Title.Text, costp.X.Label.Text, costp.Y.Label.Text = "Cumulative cost", "time (h)", "US$"
	fleet.Legend.Top, costp.Legend.Top = true, true
	for i, r := range runs {
		var vm, sl, cs plotter.XYs
		for _, pt := range r.Points {
			h := pt.At.Hours()
			vm = append(vm, plotter.XY{X: h, Y: float64(pt.VMs)})
			sl = append(sl, plotter.XY{X: h, Y: float64(pt.Serverless)})
			cs = append(cs, plotter.XY{X: h, Y: pt.CostUSD})
		}
		if len(vm) == 0 {
			continue
		}
		add := func(p *plot.Plot, xy plotter.XYs, label string, dashed bool) error {
			l, err := plotter.NewLine(xy)
			if err != nil {
				return err
			}
			l.Color = plotutil.Color(i)
			if dashed {
				l.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
			}
			p.Add(l)
			p.Legend.Add(label, l)
			return nil
		}
		if err := add(fleet, vm, r.Policy+" VMs", false); err != nil {
			return files, err
		}
		if r.Functions {
			if err := add(fleet, sl, r.Policy+" functions", true); err != nil {
				return files, err
			}
		}
		if err := add(costp, cs, r.Policy, false); err != nil {
			return files, err
		}
	}
	if err := save(fleet, "fleet.png"); err != nil {
		return files, err
	}
	if err := save(costp, "cost.png"); err != nil {
		return files, err
	}
	return files, nil
}
