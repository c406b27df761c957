package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot/vg"
)

// HTMLFile is the name of the report page Render writes.
const HTMLFile = "report.html"

// Options configures Render. The zero value is usable.
type Options struct {
	// Width and Height are the size of every figure; zero means 8 × 5 inches.
	Width, Height vg.Length
	// Title heads the HTML page; empty means "sloserve report".
	Title string
	// Source names the run directory on the page (informative only).
	Source string
}

func (o Options) withDefaults() Options {
	if o.Width <= 0 {
		o.Width = 8 * vg.Inch
	}
	if o.Height <= 0 {
		o.Height = 5 * vg.Inch
	}
	if o.Title == "" {
		o.Title = "sloserve report"
	}
	return o
}

// Render draws run's figures into outDir as <name>.png and <name>.svg and writes HTMLFile, one
// self-contained page with the summary table and every figure inlined as SVG (no external
// references). It returns the paths written.
func Render(run *Run, outDir string, opts Options) ([]string, error) {
	opts = opts.withDefaults()
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	figs, err := Figures(run)
	if err != nil {
		return nil, err
	}
	var files []string
	svgs := make([]string, len(figs))
	for i, f := range figs {
		for _, format := range []string{"svg", "png"} {
			var buf bytes.Buffer
			if err := drawFigure(&buf, f, opts, format); err != nil {
				return files, err
			}
			if format == "svg" {
				svgs[i] = buf.String()
			}
			path := filepath.Join(outDir, f.Name+"."+format)
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				return files, fmt.Errorf("report: %w", err)
			}
			files = append(files, path)
		}
	}
	var page bytes.Buffer
	if err := writeHTML(&page, run, figs, svgs, opts); err != nil {
		return files, err
	}
	path := filepath.Join(outDir, HTMLFile)
	if err := os.WriteFile(path, page.Bytes(), 0o644); err != nil {
		return files, fmt.Errorf("report: %w", err)
	}
	return append(files, path), nil
}

// drawFigure writes f in format ("svg" or "png").
func drawFigure(w io.Writer, f Figure, opts Options, format string) error {
	wt, err := f.Plot.WriterTo(opts.Width, opts.Height, format)
	if err != nil {
		return fmt.Errorf("report: %s.%s: %w", f.Name, format, err)
	}
	if _, err := wt.WriteTo(w); err != nil {
		return fmt.Errorf("report: %s.%s: %w", f.Name, format, err)
	}
	return nil
}

// inlineSVG strips the XML prolog and generator comment so that the SVG can sit inside HTML.
func inlineSVG(svg string) string {
	if i := strings.Index(svg, "<svg"); i >= 0 {
		svg = svg[i:]
	}
	return svg
}

type pageFigure struct {
	Title, Caption, Name string
	SVG                  template.HTML
}

type pageRow struct {
	Policy                                   string
	Requests, Completed, Failed, Rejected    int64
	Attainment                               string
	Met                                      bool
	P50, P95, P99                            string
	CostTotal, CostVM, CostServerless, Batch string
	ColdStarts                               int64
	Throughput                               string
}

var page = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font-family: sans-serif; margin: 2em auto; max-width: 62em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { padding: 0.25em 0.6em; border-bottom: 1px solid #ddd; text-align: right; }
th:first-child, td:first-child { text-align: left; }
td.miss { color: #b00; }
td.met { color: #070; }
figure { margin: 2em 0; }
figure svg { width: 100%; height: auto; }
figcaption { font-size: 0.9em; color: #555; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{if .Source}}<p>Run: <code>{{.Source}}</code>{{if .Trace}}, trace <code>{{.Trace}}</code>{{end}}{{if .SLO}}; SLO {{.SLO}}{{end}}.</p>{{end}}
<h2>Summary</h2>
<table>
<tr><th>policy</th><th>requests</th><th>completed</th><th>failed</th><th>rejected</th><th>SLO attainment</th><th>p50 ms</th><th>p95 ms</th><th>p99 ms</th><th>throughput rps</th><th>mean batch</th><th>cost US$</th><th>VM US$</th><th>serverless US$</th><th>cold starts</th></tr>
{{range .Rows}}<tr><td>{{.Policy}}</td><td>{{.Requests}}</td><td>{{.Completed}}</td><td>{{.Failed}}</td><td>{{.Rejected}}</td><td class="{{if .Met}}met{{else}}miss{{end}}">{{.Attainment}}</td><td>{{.P50}}</td><td>{{.P95}}</td><td>{{.P99}}</td><td>{{.Throughput}}</td><td>{{.Batch}}</td><td>{{.CostTotal}}</td><td>{{.CostVM}}</td><td>{{.CostServerless}}</td><td>{{.ColdStarts}}</td></tr>
{{end}}</table>
{{range .Figures}}<figure id="{{.Name}}">
<h2>{{.Title}}</h2>
{{.SVG}}
<figcaption>{{.Caption}}</figcaption>
</figure>
{{end}}</body>
</html>
`))

// writeHTML writes the report page.
func writeHTML(w io.Writer, run *Run, figs []Figure, svgs []string, opts Options) error {
	data := struct {
		Title, Source, Trace, SLO string
		Rows                      []pageRow
		Figures                   []pageFigure
	}{Title: opts.Title, Source: opts.Source}
	if thr, target := sloOf(run); thr > 0 {
		data.SLO = fmt.Sprintf("%g ms for %g %% of requests", thr, 100*target)
	}
	for _, pol := range run.Policies {
		s, ok := run.Summaries[pol]
		if !ok {
			continue
		}
		if data.Trace == "" {
			data.Trace = s.Trace
		}
		f2 := func(v float64) string { return fmt.Sprintf("%.2f", v) }
		data.Rows = append(data.Rows, pageRow{
			Policy: pol, Requests: s.Requests, Completed: s.Completed, Failed: s.Failed, Rejected: s.Rejected,
			Attainment: fmt.Sprintf("%.2f %%", 100*s.SLOAttainment), Met: s.SLOAttainment >= s.SLO.Target,
			P50: f2(s.LatencyMS.P50), P95: f2(s.LatencyMS.P95), P99: f2(s.LatencyMS.P99),
			Throughput: f2(s.ThroughputRPS), Batch: f2(s.MeanBatchSize),
			CostTotal: fmt.Sprintf("%.4f", s.CostUSD.Total), CostVM: fmt.Sprintf("%.4f", s.CostUSD.VM),
			CostServerless: fmt.Sprintf("%.4f", s.CostUSD.Serverless), ColdStarts: s.ColdStarts,
		})
	}
	for i, f := range figs {
		// The SVG is gonum/plot's own output (text escaped by svgo), not user HTML.
		data.Figures = append(data.Figures, pageFigure{Title: f.Title, Caption: f.Caption, Name: f.Name, SVG: template.HTML(inlineSVG(svgs[i]))})
	}
	if err := page.Execute(w, data); err != nil {
		return fmt.Errorf("report: %s: %w", HTMLFile, err)
	}
	return nil
}
