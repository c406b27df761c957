package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// helpText is the help of one command or sub-verb beyond its flags: a synopsis, a one-line
// summary (sub-verbs only; commands take theirs from the command table) and examples.
type helpText struct {
	synopsis string
	summary  string
	examples []string
}

// helpTexts holds the help of every command and sub-verb, keyed by "command" or "command verb"
// (the name of its FlagSet). TestHelpEveryCommand fails when an entry of the command table or one
// of its verbs has none.
var helpTexts = map[string]helpText{
	"demo": {synopsis: "sloserve demo [--json] [--batching none|fixed|mlproxy] [--rps R] [--duration D] [--controller NAME] [--chaos]",
		examples: []string{"sloserve demo", "sloserve demo --controller sloserve --duration 30s", "sloserve demo --chaos --json"}},
	"serve": {synopsis: "sloserve serve [--config FILE] [--model-repository DIR] [--addr HOST:PORT] [--grpc-addr HOST:PORT] [--log-level LEVEL]",
		examples: []string{"sloserve serve", "sloserve serve --config examples/serve.yaml --log-level debug",
			"sloserve serve --model-repository ./repo   # <model>/<version>/model.onnx; kill -HUP rescans (docs/serving.md)"}},
	"worker": {synopsis: "sloserve worker [--addr HOST:PORT] [--models a,b | --model-dir DIR] [--runtime native|onnxruntime]",
		examples: []string{"sloserve worker --addr 127.0.0.1:9001 --models logreg,mlp"}},
	"sim": {synopsis: "sloserve sim --trace FILE [--policy NAME|all] [--config FILE] [--json] | sim --scoreboard | sim --setting infless|cocktail",
		examples: []string{"sloserve sim --trace testdata/traces/poisson.csv --policy all", "sloserve sim --scoreboard --duration 10m", "sloserve sim --setting infless --json"}},
	"load": {synopsis: "sloserve load --target URL [--rps R] [--duration D] [--trace FILE] [--model M] [--json] [--fail-on-slo]",
		examples: []string{"sloserve load --target http://127.0.0.1:8080 --rps 200 --duration 30s", "sloserve load --trace trace.csv --fail-on-slo   # exit 1 below the SLO target (CI)"}},
	"bench": {synopsis: "sloserve bench gateway [flags]",
		examples: []string{"sloserve bench gateway", "sloserve bench gateway -h"}},
	"bench gateway": {synopsis: "sloserve bench gateway [--json] [--model M] [--concurrency N] [--duration D] [--rounds R] [--rows N] [--protocol rest-json|rest-binary|grpc-raw|all]",
		summary:  "added latency and throughput of the gateway against a direct call and a plain proxy",
		examples: []string{"sloserve bench gateway --rounds 3 --json", "sloserve bench gateway --protocol all --rounds 3"}},
	"forecast": {synopsis: "sloserve forecast backtest|train --trace FILE [flags]",
		examples: []string{"sloserve forecast backtest -h", "sloserve forecast train -h"}},
	"forecast train": {synopsis: "sloserve forecast train --trace FILE --out MODEL.json [--units N] [--steps N] [--horizon N] [--lags N] [--hidden N]",
		summary:  "train MArk's LSTM forecaster on a trace's unit maxima and write it for 'forecast backtest --model' and policies.mark.forecast_model",
		examples: []string{"sloserve forecast train --trace ../shared/data/traces/azure-functions/fn4.rpm.csv --units 2880 --out fn4-lstm.json"}},
	"forecast backtest": {synopsis: "sloserve forecast backtest --trace FILE [--methods a,b] [--horizon N] [--model M] [--json]",
		summary:  "rolling-origin backtest of the forecasters on a trace",
		examples: []string{"sloserve forecast backtest --trace testdata/traces/poisson.csv --methods ewma,holt-winters"}},
	"plan": {synopsis: "sloserve plan batch [flags]",
		examples: []string{"sloserve plan batch -h"}},
	"plan batch": {synopsis: "sloserve plan batch (--rps R | --trace FILE | --map D0,D1) (--slo-ms MS | --budget USD) [--json]",
		summary:  "BATCH's serverless batching optimiser (memory, max batch, timeout) for one arrival process",
		examples: []string{"sloserve plan batch --rps 50 --slo-ms 500", "sloserve plan batch --trace arrivals.txt --budget 0.00001 --json"}},
	"profile": {synopsis: "sloserve profile --models NAME[,NAME]|all|FILE.onnx [--runtime native|onnxruntime|both] [--batches 1,8,32,128] [--json] [--operators]",
		examples: []string{"sloserve profile --models logreg", "sloserve profile --models all --runtime both --json"}},
	"validate": {synopsis: "sloserve validate [--json] [--policies mark,target-tracking,sloserve] [--traces twitter,azure-burst] [--duration D] [--model M]",
		examples: []string{"sloserve validate", "sloserve validate --policies mark --traces twitter --duration 30s --json"}},
	"report": {synopsis: "sloserve report --from RUN_DIR [--out DIR] [--title T]",
		examples: []string{"sloserve report --from runs/demo"}},
	"train": {synopsis: "sloserve train [--out models] [--seed N] [--epochs N] [--models a,b] [--train-limit N]",
		examples: []string{"sloserve train --out models --models logreg --train-limit 6000"}},
	"ensemble": {synopsis: "sloserve ensemble eval|sim|simulate [flags]",
		examples: []string{"sloserve ensemble eval -h"}},
	"ensemble eval": {synopsis: "sloserve ensemble eval [--target-accuracy A] [--rps R] [--json]",
		summary:  "single models, static ensembles and Cocktail's dynamic selection on the bundled labelled sample",
		examples: []string{"sloserve ensemble eval", "sloserve ensemble eval --target-accuracy 0.85 --json"}},
	"ensemble sim": {synopsis: "sloserve ensemble sim [--target-accuracy A] [--rps R] [--correlation C] [--json]",
		summary:  "Cocktail's selection on the ImageNet per-class table",
		examples: []string{"sloserve ensemble sim --target-accuracy 0.79"}},
	"ensemble simulate": {synopsis: "sloserve ensemble simulate [--mean-rps R] [--slo-ms MS] [--fail-fraction F] [--json]",
		summary:  "ensemble serving with per-model pools on a trace in the simulator",
		examples: []string{"sloserve ensemble simulate --mean-rps 50"}},
	"keepalive": {synopsis: "sloserve keepalive replay --trace FILE [--trace FILE ...]",
		examples: []string{"sloserve keepalive replay -h"}},
	"keepalive replay": {synopsis: "sloserve keepalive replay --trace FILE [--trace FILE ...] [--step D] [--json]",
		summary:  "cold starts and idle instance-time of each keep-alive policy on per-step invocation traces",
		examples: []string{"sloserve keepalive replay --trace 'traces/fn*.rpm.csv' --json"}},
	"experiment": {synopsis: "sloserve experiment list | sloserve experiment NAME [--root DIR] [--data DIR] [--duration D] [flags]",
		examples: []string{"sloserve experiment list", "sloserve experiment scoreboard --duration 1h", "sloserve experiment infless-load --sets burst300 --peaks 800,3200"}},
	"experiment list": {synopsis: "sloserve experiment list",
		summary:  "the registered experiments, one a line",
		examples: []string{"sloserve experiment list"}},
	"version": {synopsis: "sloserve version [--json]   (or: sloserve --version)",
		examples: []string{"sloserve version", "sloserve version --json"}},
	"completion": {synopsis: "sloserve completion bash",
		examples: []string{"source <(sloserve completion bash)"}},
	"completion bash": {synopsis: "sloserve completion bash",
		summary:  "print a bash completion script (commands, sub-verbs, flags)",
		examples: []string{"source <(sloserve completion bash)", "sloserve completion bash > /etc/bash_completion.d/sloserve"}},
}

// helpError reports that -h/--help was asked for; run prints the help of name and returns nil.
// It wraps flag.ErrHelp, so callers that test errors.Is(err, flag.ErrHelp) keep working.
type helpError struct {
	name string        // "sim" or "plan batch"
	fs   *flag.FlagSet // the flags to list; nil for a command that only dispatches to sub-verbs
}

func (e *helpError) Error() string { return e.name + ": help requested" }
func (e *helpError) Unwrap() error { return flag.ErrHelp }

// showHelp returns the helpError of a command that dispatches to sub-verbs.
func showHelp(name string) error { return &helpError{name: name} }

// isHelp reports whether args ask for help instead of a sub-verb.
func isHelp(args []string) bool {
	return len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help" || args[0] == "help")
}

// aliasPrefix starts the usage of a hidden alias flag; help does not list such flags.
const aliasPrefix = "alias of --"

// renameFlag makes name the spelling help shows for the flag registered as old, and keeps old as
// a hidden alias (docs/cli.md lists the consistent names). Both names share one value.
func renameFlag(fs *flag.FlagSet, old, name string) {
	f := fs.Lookup(old)
	fs.Var(f.Value, name, f.Usage)
	f.Usage = aliasPrefix + name
}

// visited returns the names of the flags set on the command line; a set alias also marks the
// flag it stands for, and the other way round.
func visited(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) {
		set[f.Name] = true
		if t, ok := strings.CutPrefix(f.Usage, aliasPrefix); ok {
			set[t] = true
		}
	})
	fs.VisitAll(func(f *flag.Flag) {
		if t, ok := strings.CutPrefix(f.Usage, aliasPrefix); ok && set[t] {
			set[f.Name] = true
		}
	})
	return set
}

// printHelp writes the help of the command or sub-verb named by he: synopsis, summary, sub-verbs,
// flags (without hidden aliases) and examples.
func printHelp(w io.Writer, he *helpError) {
	h := helpTexts[he.name]
	syn := h.synopsis
	if syn == "" {
		syn = "sloserve " + he.name + " [flags]"
	}
	fmt.Fprintf(w, "usage: %s\n", syn)
	summary := h.summary
	if c, ok := commands[he.name]; ok {
		summary = c.summary
	}
	if summary != "" {
		fmt.Fprintf(w, "\n%s\n", summary)
	}
	if c, ok := commands[he.name]; ok && len(c.verbs) > 0 {
		fmt.Fprintln(w, "\nsub-verbs:")
		for _, v := range c.verbs {
			fmt.Fprintf(w, "  %-10s %s\n", v, helpTexts[he.name+" "+v].summary)
		}
		fmt.Fprintf(w, "\nRun 'sloserve %s <verb> -h' for the verb's flags.\n", he.name)
	}
	if he.fs != nil {
		fmt.Fprintln(w, "\nflags:")
		printFlags(w, he.fs)
	}
	if len(h.examples) > 0 {
		fmt.Fprintln(w, "\nexamples:")
		for _, x := range h.examples {
			fmt.Fprintf(w, "  %s\n", x)
		}
	}
}

// printFlags is flag.PrintDefaults with double-dash names and without hidden aliases.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if strings.HasPrefix(f.Usage, aliasPrefix) {
			return
		}
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		line += "\n    \t" + strings.ReplaceAll(usage, "\n", "\n    \t")
		switch f.DefValue {
		case "", "0", "false", "0s", "[]":
		default:
			line += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintln(w, line)
	})
}

// helpOf returns the helpError inside err, or nil.
func helpOf(err error) *helpError {
	var he *helpError
	if errors.As(err, &he) {
		return he
	}
	return nil
}
