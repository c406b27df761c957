// Command sloserve serves machine-learning inference under latency SLOs at the lowest cost.
// Each subcommand is a thin shell over one library package; this file is the only place that exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// env carries the process's standard streams to a subcommand.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// command is one subcommand: it parses args (without the command name) and runs.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, e env) error
}

// commands is the table of subcommands; each lives in its own cmd_<name>.go file.
var commands = map[string]command{
	"demo":      {"start gateway + local workers with the bundled models, drive load, print the Summary", runDemo},
	"serve":     {"serve real traffic: gateway + controller (--config FILE)", runServe},
	"worker":    {"the built-in OIP v2 model server for ONNX models", runWorker},
	"sim":       {"replay a trace through the policies in the discrete-event simulator", runSim},
	"load":      {"open-loop, trace-driven load generator against a live gateway", runLoad},
	"bench":     {"measurements: 'bench gateway' (added latency and throughput of the gateway)", runBench},
	"forecast":  {"forecaster evaluation: 'forecast backtest --trace FILE [--model M]', 'forecast train --trace FILE --out M'", runForecast},
	"plan":      {"planners: 'plan batch' (BATCH serverless batching optimiser)", runPlan},
	"profile":   {"measure service time per batch size (and per operator) of a model", runProfile},
	"report":    {"render figures and an HTML page from a run directory", runReport},
	"train":     {"train the bundled Fashion-MNIST models and export them to ONNX", runTrain},
	"ensemble":  {"ensembles: 'ensemble eval' on the bundled labelled sample, 'ensemble sim' on the ImageNet table", runEnsemble},
	"keepalive": {"keep-alive policies: 'keepalive replay --trace FILE' (cold starts, idle time per policy)", runKeepalive},
}

// usageError marks an error caused by bad command-line input; main exits with status 2 for it.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// usagef returns a usageError with a formatted message naming the bad flag or argument.
func usagef(format string, a ...any) error { return &usageError{msg: fmt.Sprintf(format, a...)} }

// parseFlags parses args with fs, turning flag errors into usage errors.
func parseFlags(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%s: %v", fs.Name(), err)
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode prints err and maps it to the process exit status: 0 ok, 2 usage, 1 anything else.
func exitCode(err error, stderr io.Writer) int {
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "sloserve: %v\n", err)
		return 2
	default:
		fmt.Fprintf(stderr, "sloserve: %v\n", err)
		return 1
	}
}

// run dispatches to a subcommand.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	e := env{stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printUsage(stdout)
		if len(args) == 0 {
			return usagef("missing command")
		}
		return nil
	}
	c, ok := commands[args[0]]
	if !ok {
		return usagef("unknown command %q (see 'sloserve help')", args[0])
	}
	return c.run(ctx, args[1:], e)
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: sloserve <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'sloserve <command> -h' for the command's flags.")
}
