package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sloserve/sloserve/internal/models"
	"github.com/sloserve/sloserve/internal/profile"
)

// storeOptions are the flags of `sloserve profile --operators --store FILE` (COP's operator
// store, docs/infless.md "Operator-level prediction") and `sloserve profile --loo-from FILE`.
type storeOptions struct {
	path, looFrom string
	loo           bool
	threads       []int
	rounds        int
	batches       []int
}

// storeFlags holds the raw flags until resolve.
type storeFlags struct {
	path, looFrom, threads *string
	loo                    *bool
	rounds                 *int
}

func addStoreFlags(fs *flag.FlagSet) storeFlags {
	return storeFlags{
		path:    fs.String("store", "", "with --operators: measure an operator store (one-node graphs on onnxruntime) and write it to `FILE`"),
		looFrom: fs.String("loo-from", "", "print the leave-one-out prediction errors of the operator store `FILE` (no measurement)"),
		threads: fs.String("thread-counts", "1,2", "with --store: comma-separated intra-op thread counts"),
		loo:     fs.Bool("loo", false, "with --store: also time every model whole and print the leave-one-out prediction errors"),
		rounds:  fs.Int("rounds", 9, "with --store: timing rounds; each graph keeps its fastest"),
	}
}

// resolve validates the store flags into o; done reports that the rest of parseProfileFlags does
// not apply (store or leave-one-out mode).
func (f storeFlags) resolve(o *profileOptions, modelFlag, batches string) (done bool, err error) {
	if *f.path == "" && *f.looFrom == "" {
		if *f.loo {
			return true, usagef("profile: --loo needs --operators --store FILE")
		}
		return false, nil
	}
	if *f.path != "" && *f.looFrom != "" {
		return true, usagef("profile: --store and --loo-from exclude each other")
	}
	o.store = storeOptions{path: *f.path, looFrom: *f.looFrom, loo: *f.loo, rounds: *f.rounds}
	if *f.looFrom != "" {
		return true, nil
	}
	if !o.measure.Operators {
		return true, usagef("profile: --store needs --operators")
	}
	if *f.rounds < 1 {
		return true, usagef("profile: --rounds %d must be ≥ 1", *f.rounds)
	}
	for _, s := range strings.Split(*f.threads, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || c < 1 {
			return true, usagef("profile: --thread-counts: %q is not a positive thread count", s)
		}
		o.store.threads = append(o.store.threads, c)
	}
	if o.store.batches, err = parseBatches(batches); err != nil {
		return true, err
	}
	if modelFlag == "" {
		modelFlag = "all"
	}
	o.targets, err = profileTargets(modelFlag)
	return true, err
}

// runOperatorStore measures and writes an operator store, or prints a store's leave-one-out
// errors (--loo-from).
func runOperatorStore(ctx context.Context, o profileOptions, e env) error {
	st := o.store
	var store *profile.COPStore
	if st.looFrom != "" {
		f, err := os.Open(st.looFrom)
		if err != nil {
			return usagef("profile: --loo-from: %v", err)
		}
		defer f.Close()
		if store, err = profile.ReadCOPStore(f); err != nil {
			return usagef("profile: --loo-from: %v", err)
		}
	} else {
		var ms []models.OpStoreModel
		for _, t := range o.targets {
			ms = append(ms, models.OpStoreModel{Name: t.name, ONNX: t.onnx})
		}
		start := time.Now()
		var err error
		store, err = models.MeasureOperatorStore(ctx, ms, models.OpStoreOptions{Threads: st.threads, Batches: st.batches,
			MinRuns: 10, MaxRuns: 3000, MinTime: 90 * time.Millisecond, Rounds: st.rounds, ORTLibrary: o.ortLib, Whole: st.loo,
			Progress: func(f string, a ...any) { fmt.Fprintf(e.stderr, "profile: "+f+"\n", a...) }})
		if err != nil {
			return fmt.Errorf("profile: %w", err)
		}
		host, _ := os.Hostname()
		store.Machine = fmt.Sprintf("%s, measured %s in %v", host, start.UTC().Format(time.RFC3339), time.Since(start).Round(time.Second))
		if err := writeStore(st.path, store); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "profile: wrote %d operator costs, %d overheads, %d models to %s\n", len(store.Ops), len(store.Overhead), len(store.Models), st.path)
		if !st.loo {
			return nil
		}
	}
	return printLOO(e, store, o.asJSON)
}

func writeStore(path string, s *profile.COPStore) error {
	f, err := os.Create(path)
	if err != nil {
		return usagef("profile: --store: %v", err)
	}
	if err := s.Write(f); err != nil {
		f.Close()
		return fmt.Errorf("profile: write %s: %w", path, err)
	}
	return f.Close()
}

// printLOO prints every leave-one-out point and the mean error per ⟨batch, threads⟩.
func printLOO(e env, s *profile.COPStore, asJSON bool) error {
	pts, err := s.LeaveOneOut()
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	if len(pts) == 0 {
		return usagef("profile: the store has no whole-model times (measure it with --loo)")
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(pts)
	}
	fmt.Fprintf(e.stdout, "%-18s %5s %7s %12s %12s %7s\n", "model", "batch", "threads", "predicted µs", "measured µs", "error")
	for _, p := range pts {
		fmt.Fprintf(e.stdout, "%-18s %5d %7d %12.1f %12.1f %6.1f%%\n", p.Model, p.Batch, p.Threads, p.Predicted/1e3, p.Measured/1e3, 100*p.Error)
	}
	fmt.Fprintln(e.stdout, "\nmean absolute error (leave-one-out):")
	var bs, cs []int
	for _, p := range pts {
		if !slices.Contains(bs, p.Batch) {
			bs = append(bs, p.Batch)
		}
		if !slices.Contains(cs, p.Threads) {
			cs = append(cs, p.Threads)
		}
	}
	for _, b := range bs {
		for _, c := range cs {
			m, n := profile.LOOMean(pts, b, c)
			fmt.Fprintf(e.stdout, "  batch %-3d threads %d: %5.1f %% over %d models\n", b, c, 100*m, n)
		}
	}
	return nil
}
