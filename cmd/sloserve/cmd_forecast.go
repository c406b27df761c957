package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sloserve/sloserve/internal/forecast"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

// runForecast dispatches 'sloserve forecast <sub>'.
func runForecast(ctx context.Context, args []string, e env) error {
	if isHelp(args) {
		return showHelp("forecast")
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return usagef("forecast: missing subcommand (want: backtest, train)")
	}
	switch args[0] {
	case "backtest":
		return runForecastBacktest(ctx, args[1:], e)
	case "train":
		return runForecastTrain(ctx, args[1:], e)
	default:
		return usagef("forecast: unknown subcommand %q (want: backtest, train)", args[0])
	}
}

// runForecastTrain trains the LSTM on a whole trace's unit maxima and writes the model
// (forecast.TrainLSTM) for 'forecast backtest --model' and policies.mark.forecast_model.
func runForecastTrain(ctx context.Context, args []string, e env) error {
	fs := flag.NewFlagSet("forecast train", flag.ContinueOnError)
	tracePath := fs.String("trace", "", "trace `file` to train on (any format internal/trace reads)")
	out := fs.String("out", "", "model `file` to write (JSON)")
	c := forecast.DefaultLSTMConfig()
	mc := forecast.DefaultMonitorConfig()
	steps := fs.Int("steps", 3000, "training steps (mini-batches of windows sampled from the whole trace)")
	first := fs.Int("units", 0, "train on the first N units only (0: all); with 'backtest --warmup N' no scored unit is seen in training")
	fs.IntVar(&c.Horizon, "horizon", c.Horizon, "units the net predicts (P_w)")
	fs.IntVar(&c.Lags, "lags", c.Lags, "past units in each input window")
	fs.IntVar(&c.Hidden, "hidden", c.Hidden, "LSTM cells")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the initialisation and sampling")
	fs.DurationVar(&mc.Unit, "unit", mc.Unit, "prediction unit P_u")
	fs.DurationVar(&mc.SampleInterval, "sample", mc.SampleInterval, "arrival-rate sample interval P_s")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *tracePath == "":
		return usagef("forecast train: --trace is required")
	case *out == "":
		return usagef("forecast train: --out is required")
	case *steps <= 0:
		return usagef("forecast train: --steps: must be > 0, got %d", *steps)
	case *first < 0:
		return usagef("forecast train: --units: must be >= 0, got %d", *first)
	}
	c.Window = max(c.Window, c.Lags+c.Horizon+1)
	if err := c.Validate(); err != nil {
		return usagef("forecast train: --hidden/--lags/--horizon: %v", err)
	}
	if err := mc.Validate(); err != nil {
		return usagef("forecast train: --unit/--sample: %v", err)
	}
	units, err := traceUnits(*tracePath, mc)
	if err != nil {
		return fmt.Errorf("forecast train: %w", err)
	}
	if *first > 0 && *first < len(units) {
		units = units[:*first]
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	start := time.Now()
	m, err := forecast.TrainLSTM(units, c, *steps)
	if err != nil {
		return fmt.Errorf("forecast train: %w", err)
	}
	f, err := os.Create(*out)
	if err != nil {
		return fmt.Errorf("forecast train: %w", err)
	}
	if err := forecast.WriteLSTMModel(f, m); err != nil {
		f.Close()
		return fmt.Errorf("forecast train: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("forecast train: %w", err)
	}
	_, err = fmt.Fprintf(e.stdout, "trained lstm on %s: %d units of %v, %d steps (%.1f s) → %s\n",
		filepath.Base(*tracePath), len(units), mc.Unit, m.Trained, time.Since(start).Seconds(), *out)
	return err
}

// backtestReport is the --json output of 'forecast backtest'.
type backtestReport struct {
	Trace   string                  `json:"trace"`
	Units   int                     `json:"units"`
	UnitS   float64                 `json:"unit_s"`
	Config  forecast.BacktestConfig `json:"config"`
	Scores  []forecast.Score        `json:"scores"`
	Best    string                  `json:"best"`
	Seconds float64                 `json:"elapsed_s"`
}

// backtestOptions are the validated flags of 'forecast backtest'.
type backtestOptions struct {
	tracePath string
	methods   []string // forecasters to score, lower case
	bc        forecast.BacktestConfig
	mc        forecast.MonitorConfig
	forecast  forecast.Options
	asJSON    bool
}

// runForecastBacktest runs a rolling-origin backtest of the forecasters on a trace.
func runForecastBacktest(ctx context.Context, args []string, e env) error {
	o, err := parseBacktestFlags(args)
	if err != nil {
		return err
	}
	rep, err := backtest(ctx, o)
	if err != nil {
		return err
	}
	if o.asJSON {
		return slo.WriteJSON(e.stdout, rep)
	}
	return printBacktest(e.stdout, o, rep)
}

// parseBacktestFlags parses and validates the flags of 'forecast backtest' (reading a --model);
// a bad one is a usage error naming it.
func parseBacktestFlags(args []string) (backtestOptions, error) {
	o := backtestOptions{bc: forecast.DefaultBacktestConfig(), mc: forecast.DefaultMonitorConfig(), forecast: forecast.DefaultOptions()}
	bc, mc, fo := &o.bc, &o.mc, &o.forecast
	fs := flag.NewFlagSet("forecast backtest", flag.ContinueOnError)
	fs.StringVar(&o.tracePath, "trace", "", "trace `file` (any format internal/trace reads: t_s,count, t_min,count, step,rps, inter-arrivals, Azure 2019)")
	fs.BoolVar(&o.asJSON, "json", false, "print the scores as JSON")
	fs.IntVar(&bc.Horizon, "horizon", bc.Horizon, "units forecast and scored after each origin (P_w)")
	fs.IntVar(&bc.Warmup, "warmup", bc.Warmup, "units observed before the first origin")
	fs.IntVar(&bc.Stride, "stride", bc.Stride, "units between origins")
	fs.IntVar(&bc.InitialTrainSteps, "train-steps", bc.InitialTrainSteps, "LSTM training steps before the first origin")
	fs.IntVar(&bc.TrainStepsPerOrigin, "train-steps-per-origin", bc.TrainStepsPerOrigin, "LSTM training steps at every later origin")
	fs.IntVar(&fo.Season, "season", fo.Season, "Holt-Winters seasonal period in units")
	fs.Uint64Var(&fo.Seed, "seed", fo.Seed, "seed of the LSTM")
	modelPath := fs.String("model", "", "pre-trained LSTM `file` ('forecast train --out'): the lstm method starts from it; --train-steps then defaults to 0")
	methods := fs.String("methods", strings.Join(forecast.Methods(), ","), "comma-separated methods: "+strings.Join(forecast.Methods(), ", "))
	fs.DurationVar(&mc.Unit, "unit", mc.Unit, "prediction unit P_u")
	fs.DurationVar(&mc.SampleInterval, "sample", mc.SampleInterval, "arrival-rate sample interval P_s")
	if err := parseFlags(fs, args); err != nil {
		return o, err
	}
	if o.tracePath == "" {
		return o, usagef("forecast backtest: --trace is required")
	}
	if *modelPath != "" {
		m, err := forecast.ReadLSTMModelFile(*modelPath)
		if err != nil {
			return o, usagef("forecast backtest: --model: %v", err)
		}
		fo.LSTM = &m
		if !flagSet(fs, "train-steps") {
			bc.InitialTrainSteps = 0
		}
	}
	if err := bc.Validate(); err != nil {
		return o, usagef("forecast backtest: %v", err)
	}
	if err := mc.Validate(); err != nil {
		return o, usagef("forecast backtest: %v", err)
	}
	if err := fo.Validate(); err != nil {
		return o, usagef("forecast backtest: --season: %v", err)
	}
	var err error
	o.methods, err = forecastMethods(*methods)
	return o, err
}

// forecastMethods are the known forecasters --methods names (comma-separated, any case).
func forecastMethods(list string) ([]string, error) {
	var names []string
	known := map[string]bool{}
	for _, m := range forecast.Methods() {
		known[m] = true
	}
	for _, m := range strings.Split(list, ",") {
		m = strings.TrimSpace(strings.ToLower(m))
		if m == "" {
			continue
		}
		if !known[m] {
			return nil, usagef("forecast backtest: --methods: unknown method %q (known: %s)", m, strings.Join(forecast.Methods(), ", "))
		}
		names = append(names, m)
	}
	if len(names) == 0 {
		return nil, usagef("forecast backtest: --methods: no method given")
	}
	return names, nil
}

// backtest scores the methods on the trace's unit maxima (forecast.Backtest) and names the best
// by RMSE.
func backtest(ctx context.Context, o backtestOptions) (backtestReport, error) {
	units, err := traceUnits(o.tracePath, o.mc)
	if err != nil {
		return backtestReport{}, fmt.Errorf("forecast backtest: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return backtestReport{}, err
	}
	start := time.Now()
	scores, err := forecast.Backtest(units, o.methods, o.forecast, o.bc)
	if err != nil {
		return backtestReport{}, fmt.Errorf("forecast backtest: %w", err)
	}
	rep := backtestReport{Trace: filepath.Base(o.tracePath), Units: len(units), UnitS: o.mc.Unit.Seconds(), Config: o.bc, Scores: scores, Seconds: time.Since(start).Seconds()}
	for i, sc := range scores {
		if i == 0 || sc.RMSE < scores[indexOf(scores, rep.Best)].RMSE {
			rep.Best = sc.Method
		}
	}
	return rep, nil
}

// printBacktest prints the scores as a table and the best method.
func printBacktest(w io.Writer, o backtestOptions, rep backtestReport) error {
	fmt.Fprintf(w, "trace %s: %d units of %v, horizon %d, warm-up %d, stride %d (%.1f s)\n",
		rep.Trace, rep.Units, o.mc.Unit, o.bc.Horizon, o.bc.Warmup, o.bc.Stride, rep.Seconds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "method\tRMSE (req/s)\tMAPE %\tRMSE/EWMA\tMAPE/EWMA\torigins\t")
	for _, sc := range rep.Scores {
		fmt.Fprintf(tw, "%s\t%.3f\t%.2f\t%.3f\t%.3f\t%d\t\n", sc.Method, sc.RMSE, sc.MAPE, sc.RMSERatio, sc.MAPERatio, sc.Origins)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "best: %s\n", rep.Best)
	return err
}

// countSeries gives a trace's arrivals per step as the arrival monitor's input: a rate series
// keeps its step; an arrival list is counted per second.
func countSeries(tr *trace.Trace) forecast.Series {
	if tr.IsSeries() {
		s := forecast.Series{Step: tr.Step, T: make([]float64, len(tr.Rates)), Count: make([]float64, len(tr.Rates))}
		for i, r := range tr.Rates {
			s.T[i], s.Count[i] = float64(i), r*tr.Step.Seconds()
		}
		return s
	}
	counts := trace.Counts(tr.Arrivals(1), time.Second, tr.Duration())
	s := forecast.Series{Step: time.Second, T: make([]float64, len(counts)), Count: make([]float64, len(counts))}
	for i, c := range counts {
		s.T[i], s.Count[i] = float64(i), float64(c)
	}
	return s
}

func indexOf(scores []forecast.Score, method string) int {
	for i, s := range scores {
		if s.Method == method {
			return i
		}
	}
	return 0
}

// traceUnits is the per-unit maximum arrival rate of the trace at path, as MArk's monitor sees it
// with mc (the series both forecast verbs work on).
func traceUnits(path string, mc forecast.MonitorConfig) ([]float64, error) {
	tr, err := trace.Open(path)
	if err != nil {
		return nil, err
	}
	return countSeries(tr).UnitMaxima(mc)
}
