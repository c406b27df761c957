package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/sloserve/sloserve/internal/models"
	"github.com/sloserve/sloserve/internal/models/fashion"
	bundled "github.com/sloserve/sloserve/models"
)

// profileReport is the JSON printed by `sloserve profile --json` for several model × runtime
// pairs; a single pair prints its profileEntry alone (internal/profile.ReadWorkerProfile's shape).
type profileReport struct {
	Profiles []profileEntry `json:"profiles"`
}

// profileEntry is one model × runtime profile with the model's recorded test accuracy.
type profileEntry struct {
	models.Profile
	Accuracy float64 `json:"accuracy,omitempty"`
}

// profileOptions are the validated flags of `sloserve profile`: what to measure, on which
// runtimes, and how.
type profileOptions struct {
	targets  []profileTarget
	runtime  string   // --runtime as given: native, onnxruntime or both
	runtimes []string // the runtimes it names
	measure  models.ProfileOptions
	ortLib   string // libonnxruntime.so, "" for the default
	threads  int    // onnxruntime intra-op threads
	asJSON   bool
	store    storeOptions
}

// runProfile measures service time per batch size (and per operator) of bundled models.
func runProfile(ctx context.Context, args []string, e env) error {
	o, err := parseProfileFlags(args)
	if err != nil {
		return err
	}
	if o.store.path != "" || o.store.looFrom != "" {
		return runOperatorStore(ctx, o, e)
	}
	report, err := measureProfiles(ctx, o, e.stderr)
	if err != nil {
		return err
	}
	if o.asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if len(report.Profiles) == 1 {
			return enc.Encode(report.Profiles[0])
		}
		return enc.Encode(report)
	}
	printProfiles(e, report, o.measure.Batches)
	return nil
}

// parseProfileFlags parses and validates the flags of `sloserve profile` and reads the models
// they name; a bad one is a usage error naming it.
func parseProfileFlags(args []string) (profileOptions, error) {
	o := profileOptions{measure: models.DefaultProfileOptions()}
	opts := &o.measure
	fs := flag.NewFlagSet("profile", flag.ContinueOnError)
	modelFlag := fs.String("model", "", "bundled model `names` (comma-separated), 'all', or a path to a .onnx file")
	renameFlag(fs, "model", "models")
	fs.StringVar(&o.runtime, "runtime", models.RuntimeNative, "runtime: native, onnxruntime or both")
	batches := fs.String("batches", "1,8,32,128", "comma-separated batch sizes")
	fs.BoolVar(&o.asJSON, "json", false, "print JSON instead of a table: one profile object, or {\"profiles\": [...]} for several")
	fs.BoolVar(&opts.Operators, "operators", false, "also time each operator node (native runtime)")
	fs.IntVar(&opts.MinRuns, "min-runs", opts.MinRuns, "least timed runs per batch size")
	fs.IntVar(&opts.MaxRuns, "max-runs", opts.MaxRuns, "most timed runs per batch size")
	fs.DurationVar(&opts.MinTime, "min-time", opts.MinTime, "least total timed duration per batch size")
	fs.StringVar(&opts.Clock, "clock", models.ClockThreadCPU, "thread-cpu (service time on a dedicated core; robust on a shared machine) or wall")
	fs.StringVar(&o.ortLib, "onnxruntime-lib", "", "path of libonnxruntime.so (default $ONNXRUNTIME_LIB, else .cache/onnxruntime/)")
	fs.IntVar(&o.threads, "threads", 1, "onnxruntime intra-op threads")
	st := addStoreFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return o, err
	}
	if done, err := st.resolve(&o, *modelFlag, *batches); done || err != nil {
		return o, err
	}
	if *modelFlag == "" {
		return o, usagef("profile: --models is required (one of %s, 'all', or a .onnx path)", strings.Join(bundled.Names(), ", "))
	}
	var err error
	if o.runtimes, err = profileRuntimes(o.runtime); err != nil {
		return o, err
	}
	if opts.Batches, err = parseBatches(*batches); err != nil {
		return o, err
	}
	if o.threads < 1 {
		return o, usagef("profile: --threads %d must be ≥ 1", o.threads)
	}
	if err := opts.Validate(); err != nil {
		return o, usagef("profile: %v", err)
	}
	if opts.Operators && o.runtime == models.RuntimeONNXRuntime {
		return o, usagef("profile: --operators needs --runtime native or both")
	}
	o.targets, err = profileTargets(*modelFlag)
	return o, err
}

// measureProfiles measures every target on every runtime (models.MeasureProfile) on real test
// images; with --runtime both, a runtime that is unavailable is skipped with a note on stderr.
func measureProfiles(ctx context.Context, o profileOptions, stderr io.Writer) (profileReport, error) {
	var report profileReport
	input, err := profileInput()
	if err != nil {
		return report, err
	}
	for _, t := range o.targets {
		for _, rt := range o.runtimes {
			r, meta, err := models.Open(t.onnx, models.Options{Runtime: rt, Name: t.name, ORTLibrary: o.ortLib, IntraOpThreads: o.threads})
			if errors.Is(err, models.ErrRuntimeUnavailable) && o.runtime == "both" {
				fmt.Fprintf(stderr, "profile: skipping %s on %s: %v\n", t.name, rt, err)
				continue
			}
			if err != nil {
				return report, err
			}
			po := o.measure
			po.Operators = o.measure.Operators && rt == models.RuntimeNative
			th := 1
			if rt == models.RuntimeONNXRuntime {
				th = o.threads
			}
			p, err := models.MeasureProfile(ctx, r, meta, th, input, po)
			r.Close()
			if err != nil {
				return report, err
			}
			report.Profiles = append(report.Profiles, profileEntry{Profile: p, Accuracy: t.accuracy})
		}
	}
	return report, nil
}

// profileRuntimes resolves --runtime: native, onnxruntime or both.
func profileRuntimes(rt string) ([]string, error) {
	switch rt {
	case models.RuntimeNative, models.RuntimeONNXRuntime:
		return []string{rt}, nil
	case "both":
		return []string{models.RuntimeNative, models.RuntimeONNXRuntime}, nil
	}
	return nil, usagef("profile: --runtime %q must be native, onnxruntime or both", rt)
}

// parseBatches parses --batches, a comma-separated list of positive batch sizes.
func parseBatches(list string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		b, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || b < 1 {
			return nil, usagef("profile: --batches: %q is not a positive batch size", s)
		}
		out = append(out, b)
	}
	return out, nil
}

// profileTarget is one model to profile: its name, ONNX bytes and (bundled models) accuracy.
type profileTarget struct {
	name     string
	onnx     []byte
	accuracy float64
}

// profileTargets resolves --models: bundled names (comma-separated), 'all', or .onnx paths.
func profileTargets(spec string) ([]profileTarget, error) {
	var targets []profileTarget
	man, err := bundled.Manifest()
	if err != nil {
		return nil, err
	}
	names := strings.Split(spec, ",")
	if spec == "all" {
		names = man.Names()
	}
	for _, n := range names {
		if strings.HasSuffix(n, ".onnx") {
			b, err := os.ReadFile(n)
			if err != nil {
				return nil, usagef("profile: --models: %v", err)
			}
			targets = append(targets, profileTarget{name: strings.TrimSuffix(n[strings.LastIndex(n, "/")+1:], ".onnx"), onnx: b})
			continue
		}
		mi, ok := man.Model(n)
		if !ok {
			return nil, usagef("profile: --models: unknown model %q (bundled: %s)", n, strings.Join(man.Names(), ", "))
		}
		b, err := bundled.Model(n)
		if err != nil {
			return nil, err
		}
		targets = append(targets, profileTarget{name: n, onnx: b, accuracy: mi.Accuracy})
	}
	return targets, nil
}

// profileInput returns the input of batch size b for timed run number run.
func profileInput() (func(b, run int) []models.Tensor, error) {
	sample, err := bundled.Sample()
	if err != nil {
		return nil, err
	}
	// Inputs are real test images, a different window of the sample on every run: the native
	// runtime skips zero pixels, so one fixed (or random, or all-zero) image would misstate its
	// service time.
	pixels := sample.Floats(nil, 0, sample.Len())
	return func(b, run int) []models.Tensor {
		var data []float32
		if b <= sample.Len() {
			off := (run * b) % (sample.Len() - b + 1)
			data = pixels[off*fashion.Pixels : (off+b)*fashion.Pixels]
		} else {
			data = make([]float32, b*fashion.Pixels)
			for i := 0; i < b; i++ {
				copy(data[i*fashion.Pixels:(i+1)*fashion.Pixels], pixels[(i%sample.Len())*fashion.Pixels:])
			}
		}
		return []models.Tensor{{Shape: []int64{int64(b), fashion.Pixels}, Data: data}}
	}, nil
}

func printProfiles(e env, rep profileReport, batches []int) {
	us := func(ms float64) string { return strconv.FormatFloat(ms*1e3, 'f', 1, 64) }
	fmt.Fprintf(e.stdout, "%-12s %-11s %6s", "model", "runtime", "acc")
	for _, b := range batches {
		fmt.Fprintf(e.stdout, " %11s", fmt.Sprintf("b=%d µs", b))
	}
	fmt.Fprintf(e.stdout, " %10s\n", "cost32/1")
	for _, p := range rep.Profiles {
		fmt.Fprintf(e.stdout, "%-12s %-11s %6.4f", p.Model, p.Runtime, p.Accuracy)
		for _, b := range batches {
			pt, _ := p.Point(b)
			fmt.Fprintf(e.stdout, " %11s", us(pt.P50MS))
		}
		if r, ok := p.CostRatio(32); ok {
			fmt.Fprintf(e.stdout, " %10.3f", r)
		} else {
			fmt.Fprintf(e.stdout, " %10s", "-")
		}
		fmt.Fprintln(e.stdout)
	}
	for _, p := range rep.Profiles {
		for _, op := range p.Operators {
			var total float64
			for _, n := range op.Nodes {
				total += n.P50MS
			}
			fmt.Fprintf(e.stdout, "\n%s (%s) operators at batch %d:\n", p.Model, p.Runtime, op.Batch)
			for _, n := range op.Nodes {
				share := 0.0
				if total > 0 {
					share = 100 * n.P50MS / total
				}
				fmt.Fprintf(e.stdout, "  %-16s %-12s %10s µs %5.1f%%\n", n.Node, n.OpType, us(n.P50MS), share)
			}
		}
	}
}
