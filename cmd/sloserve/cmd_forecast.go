package main

import (
	"context"
	"flag"
	"fmt"
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

// runForecastBacktest runs a rolling-origin backtest of the forecasters on a trace.
func runForecastBacktest(ctx context.Context, args []string, e env) error {
	fs := flag.NewFlagSet("forecast backtest", flag.ContinueOnError)
	tracePath := fs.String("trace", "", "trace `file` (any format internal/trace reads: t_s,count, t_min,count, step,rps, inter-arrivals, Azure 2019)")
	asJSON := fs.Bool("json", false, "print the scores as JSON")
	bc := forecast.DefaultBacktestConfig()
	mc := forecast.DefaultMonitorConfig()
	o := forecast.DefaultOptions()
	fs.IntVar(&bc.Horizon, "horizon", bc.Horizon, "units forecast and scored after each origin (P_w)")
	fs.IntVar(&bc.Warmup, "warmup", bc.Warmup, "units observed before the first origin")
	fs.IntVar(&bc.Stride, "stride", bc.Stride, "units between origins")
	fs.IntVar(&bc.InitialTrainSteps, "train-steps", bc.InitialTrainSteps, "LSTM training steps before the first origin")
	fs.IntVar(&bc.TrainStepsPerOrigin, "train-steps-per-origin", bc.TrainStepsPerOrigin, "LSTM training steps at every later origin")
	fs.IntVar(&o.Season, "season", o.Season, "Holt-Winters seasonal period in units")
	seed := fs.Uint64("seed", o.Seed, "seed of the LSTM")
	modelPath := fs.String("model", "", "pre-trained LSTM `file` ('forecast train --out'): the lstm method starts from it; --train-steps then defaults to 0")
	methods := fs.String("methods", strings.Join(forecast.Methods(), ","), "comma-separated methods: "+strings.Join(forecast.Methods(), ", "))
	fs.DurationVar(&mc.Unit, "unit", mc.Unit, "prediction unit P_u")
	fs.DurationVar(&mc.SampleInterval, "sample", mc.SampleInterval, "arrival-rate sample interval P_s")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *tracePath == "" {
		return usagef("forecast backtest: --trace is required")
	}
	o.Seed = *seed
	if *modelPath != "" {
		m, err := forecast.ReadLSTMModelFile(*modelPath)
		if err != nil {
			return usagef("forecast backtest: --model: %v", err)
		}
		o.LSTM = &m
		set := false
		fs.Visit(func(f *flag.Flag) { set = set || f.Name == "train-steps" })
		if !set {
			bc.InitialTrainSteps = 0
		}
	}
	if err := bc.Validate(); err != nil {
		return usagef("forecast backtest: %v", err)
	}
	if err := mc.Validate(); err != nil {
		return usagef("forecast backtest: %v", err)
	}
	if err := o.Validate(); err != nil {
		return usagef("forecast backtest: --season: %v", err)
	}
	var names []string
	known := map[string]bool{}
	for _, m := range forecast.Methods() {
		known[m] = true
	}
	for _, m := range strings.Split(*methods, ",") {
		m = strings.TrimSpace(strings.ToLower(m))
		if m == "" {
			continue
		}
		if !known[m] {
			return usagef("forecast backtest: --methods: unknown method %q (known: %s)", m, strings.Join(forecast.Methods(), ", "))
		}
		names = append(names, m)
	}
	if len(names) == 0 {
		return usagef("forecast backtest: --methods: no method given")
	}
	units, err := traceUnits(*tracePath, mc)
	if err != nil {
		return fmt.Errorf("forecast backtest: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	start := time.Now()
	scores, err := forecast.Backtest(units, names, o, bc)
	if err != nil {
		return fmt.Errorf("forecast backtest: %w", err)
	}
	rep := backtestReport{Trace: filepath.Base(*tracePath), Units: len(units), UnitS: mc.Unit.Seconds(), Config: bc, Scores: scores, Seconds: time.Since(start).Seconds()}
	for i, sc := range scores {
		if i == 0 || sc.RMSE < scores[indexOf(scores, rep.Best)].RMSE {
			rep.Best = sc.Method
		}
	}
	if *asJSON {
		return slo.WriteJSON(e.stdout, rep)
	}
	fmt.Fprintf(e.stdout, "trace %s: %d units of %v, horizon %d, warm-up %d, stride %d (%.1f s)\n",
		rep.Trace, rep.Units, mc.Unit, bc.Horizon, bc.Warmup, bc.Stride, rep.Seconds)
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "method\tRMSE (req/s)\tMAPE %\tRMSE/EWMA\tMAPE/EWMA\torigins\t")
	for _, sc := range scores {
		fmt.Fprintf(tw, "%s\t%.3f\t%.2f\t%.3f\t%.3f\t%d\t\n", sc.Method, sc.RMSE, sc.MAPE, sc.RMSERatio, sc.MAPERatio, sc.Origins)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "best: %s\n", rep.Best)
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
