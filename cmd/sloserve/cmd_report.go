package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sloserve/sloserve/internal/report"
	"gonum.org/v1/plot/vg"
)

// runReport is `sloserve report --from RUN_DIR [--out DIR]`: render the run's figures as PNG and
// SVG and one self-contained HTML page (docs/report.md).
func runReport(ctx context.Context, args []string, e env) error {
	fset := flag.NewFlagSet("report", flag.ContinueOnError)
	from := fset.String("from", "", "run directory with summaries.json and optional series.csv / ccdf.csv (required; docs/report.md)")
	out := fset.String("out", "", "output directory (default RUN_DIR/report)")
	width := fset.Float64("width", 8, "figure width in inches")
	height := fset.Float64("height", 5, "figure height in inches")
	title := fset.String("title", "", "page title (default \"sloserve report\")")
	if err := parseFlags(fset, args); err != nil {
		return err
	}
	if fset.NArg() > 0 {
		return usagef("report: unexpected argument %q", fset.Arg(0))
	}
	if *from == "" {
		return usagef("report: --from is required")
	}
	if st, err := os.Stat(*from); err != nil || !st.IsDir() {
		return usagef("report: --from %q: not a directory", *from)
	}
	if _, err := os.Stat(filepath.Join(*from, report.SummariesFile)); errors.Is(err, fs.ErrNotExist) {
		return usagef("report: --from %q: no %s in it", *from, report.SummariesFile)
	}
	if !(*width > 0 && *width <= 100) || !(*height > 0 && *height <= 100) {
		return usagef("report: --width and --height must be in (0, 100] inches, got %v and %v", *width, *height)
	}
	if *out == "" {
		*out = filepath.Join(*from, "report")
	}
	run, err := report.Load(*from)
	if err != nil {
		return err
	}
	files, err := report.Render(run, *out, report.Options{
		Width: vg.Length(*width) * vg.Inch, Height: vg.Length(*height) * vg.Inch, Title: *title, Source: *from,
	})
	if err != nil {
		return err
	}
	for _, f := range files {
		fmt.Fprintln(e.stdout, f)
	}
	return nil
}
