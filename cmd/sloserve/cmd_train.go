package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/sloserve/sloserve/internal/models/train"
)

// runTrain trains the bundled Fashion-MNIST models and writes them, the manifest and the sample.
func runTrain(ctx context.Context, args []string, e env) error {
	cfg := train.DefaultBundleConfig()
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.StringVar(&cfg.Out, "out", cfg.Out, "output `dir` for <name>.onnx, manifest.json and the sample")
	fs.StringVar(&cfg.DataDir, "data", cfg.DataDir, "Fashion-MNIST idx `dir`")
	fs.Uint64Var(&cfg.Train.Seed, "seed", cfg.Train.Seed, "random seed (equal seeds give identical models)")
	fs.IntVar(&cfg.Train.Epochs, "epochs", 0, "epochs per model (0 = each model's default)")
	fs.IntVar(&cfg.TrainLimit, "train-limit", 0, "use only the first N training images (0 = all 50,000 before the held-out validation split)")
	names := fs.String("models", "", "comma-separated model names (default all: "+strings.Join(bundledNames(), ",")+")")
	quiet := fs.Bool("quiet", false, "no progress lines")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if cfg.Train.Epochs < 0 {
		return usagef("train: --epochs %d must be ≥ 0", cfg.Train.Epochs)
	}
	if cfg.TrainLimit < 0 {
		return usagef("train: --train-limit %d must be ≥ 0", cfg.TrainLimit)
	}
	if *names != "" {
		known := map[string]bool{}
		for _, n := range bundledNames() {
			known[n] = true
		}
		for _, n := range strings.Split(*names, ",") {
			if !known[n] {
				return usagef("train: --models: unknown model %q (known: %s)", n, strings.Join(bundledNames(), ","))
			}
			cfg.Models = append(cfg.Models, n)
		}
	}
	if !*quiet {
		cfg.Train.Log = e.stderr
	}
	man, err := train.Bundle(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%-18s %9s %8s %8s  %s\n", "model", "params", "test acc", "sample", "architecture")
	for _, m := range man.Models {
		fmt.Fprintf(e.stdout, "%-18s %9d %8.4f %8.4f  %s\n", m.Name, m.Params, m.Accuracy, m.SampleAccuracy, m.Architecture)
	}
	return nil
}

func bundledNames() []string {
	var out []string
	for _, s := range train.Bundled() {
		out = append(out, s.Arch.Name)
	}
	return out
}
