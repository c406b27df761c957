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
	verbs   []string // sub-verbs, for commands that dispatch ('plan batch'); help and completion list them
}

// commands is the table of subcommands; each lives in its own cmd_<name>.go file.
var commands = map[string]command{
	"demo":      {"start gateway + local workers with the bundled models, drive load, print the Summary", runDemo, nil},
	"serve":     {"serve real traffic: gateway + controller (--config FILE)", runServe, nil},
	"worker":    {"the built-in OIP v2 model server for ONNX models", runWorker, nil},
	"sim":       {"replay a trace through the policies in the discrete-event simulator", runSim, nil},
	"load":      {"open-loop, trace-driven load generator against a live gateway", runLoad, nil},
	"bench":     {"measurements: 'bench gateway' (added latency and throughput of the gateway)", runBench, []string{"gateway"}},
	"forecast":  {"forecaster evaluation: 'forecast backtest --trace FILE [--model M]', 'forecast train --trace FILE --out M'", runForecast, []string{"backtest", "train"}},
	"plan":      {"planners: 'plan batch' (BATCH serverless batching optimiser)", runPlan, []string{"batch"}},
	"profile":   {"measure service time per batch size (and per operator) of a model", runProfile, nil},
	"validate":  {"sim-to-real: replay trace segments live (real workers) and simulated, compare per policy", runValidate, nil},
	"report":    {"render figures and an HTML page from a run directory", runReport, nil},
	"train":     {"train the bundled Fashion-MNIST models and export them to ONNX", runTrain, nil},
	"ensemble":  {"ensembles: 'ensemble eval' on the bundled labelled sample, 'ensemble sim' on the ImageNet table", runEnsemble, []string{"eval", "sim", "simulate"}},
	"version":   {"print the module version and VCS commit this binary was built from", runVersion, nil},
	"keepalive": {"keep-alive policies: 'keepalive replay --trace FILE' (cold starts, idle time per policy)", runKeepalive, []string{"replay"}},
}

func init() {
	// completion lists the command table, so it joins the table here (an initialiser referring to
	// the table through runCompletion would be an initialisation cycle).
	commands["completion"] = command{"print a shell completion script: 'completion bash'", runCompletion, []string{"bash"}}
}

// usageError marks an error caused by bad command-line input; main exits with status 2 for it.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// usagef returns a usageError with a formatted message naming the bad flag or argument.
func usagef(format string, a ...any) error { return &usageError{msg: fmt.Sprintf(format, a...)} }

// parseFlags parses args with fs, turning flag errors into usage errors and -h/--help into a
// helpError (run prints the help).
func parseFlags(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return &helpError{name: fs.Name(), fs: fs}
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

// run dispatches to a subcommand. 'sloserve help CMD [VERB]' is 'sloserve CMD [VERB] -h'; help
// asked for anywhere is printed to stdout and is not an error.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	e := env{stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) > 1 && args[0] == "help" {
		args = append(args[1:len(args):len(args)], "-h")
	}
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		args = []string{"version"}
	}
	if len(args) == 0 || isHelp(args) {
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
	err := c.run(ctx, args[1:], e)
	if he := helpOf(err); he != nil {
		printHelp(stdout, he)
		return nil
	}
	return err
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: sloserve <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'sloserve <command> -h' (or 'sloserve help <command>') for the command's flags and examples;\n'sloserve --version' prints the build.")
}
