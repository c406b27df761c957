package forecast

import (
	"fmt"
	"math"
)

// BacktestConfig configures a rolling-origin backtest.
type BacktestConfig struct {
	// Horizon is how many units after each origin are forecast and scored.
	Horizon int
	// Warmup is how many units every method observes before the first origin.
	Warmup int
	// Stride is the number of units between consecutive origins.
	Stride int
	// InitialTrainSteps is how many Train steps a Trainer (the LSTM) runs at the first origin.
	InitialTrainSteps int
	// TrainStepsPerOrigin is how many Train steps it runs at every later origin ("trained on
	// the history in the background", between forecasts).
	TrainStepsPerOrigin int
}

// DefaultBacktestConfig returns a 60-unit horizon, 4 h of warm-up, an origin every 10 units and
// 1500 initial plus 40 per-origin LSTM steps.
func DefaultBacktestConfig() BacktestConfig {
	return BacktestConfig{Horizon: DefaultWindow, Warmup: 240, Stride: 10, InitialTrainSteps: 1500, TrainStepsPerOrigin: 40}
}

// Validate reports the first field that is out of range.
func (c BacktestConfig) Validate() error {
	switch {
	case c.Horizon <= 0:
		return fmt.Errorf("backtest.horizon: must be > 0, got %d", c.Horizon)
	case c.Warmup <= 0:
		return fmt.Errorf("backtest.warmup: must be > 0, got %d", c.Warmup)
	case c.Stride <= 0:
		return fmt.Errorf("backtest.stride: must be > 0, got %d", c.Stride)
	case c.InitialTrainSteps < 0:
		return fmt.Errorf("backtest.initial_train_steps: must be >= 0, got %d", c.InitialTrainSteps)
	case c.TrainStepsPerOrigin < 0:
		return fmt.Errorf("backtest.train_steps_per_origin: must be >= 0, got %d", c.TrainStepsPerOrigin)
	}
	return nil
}

// Score is one method's accuracy over a backtest.
type Score struct {
	// Method is the registered method name.
	Method string `json:"method"`
	// RMSE is the root mean squared error over all scored points, in the series' unit (requests/s).
	RMSE float64 `json:"rmse"`
	// MAPE is the mean absolute percentage error over scored points whose actual value is > 0, in %.
	MAPE float64 `json:"mape_pct"`
	// RMSERatio and MAPERatio are RMSE and MAPE divided by those of the EWMA baseline.
	RMSERatio float64 `json:"rmse_ratio_to_ewma"`
	MAPERatio float64 `json:"mape_ratio_to_ewma"`
	// Points is the number of scored (origin, step) pairs; Origins the number of origins.
	Points  int `json:"points"`
	Origins int `json:"origins"`
	// TrainSteps is how many optimisation steps a Trainer ran in total (0 for the others).
	TrainSteps int `json:"train_steps,omitempty"`
}

// Backtest runs a rolling-origin evaluation of each method on series: every method observes the
// first Warmup units; at each origin o = Warmup, Warmup+Stride, … (while o+Horizon ≤ len(series))
// it forecasts units o … o+Horizon−1, is scored against them, and then observes the next Stride
// units. The EWMA baseline is always run for the ratios, even when not listed.
func Backtest(series []float64, methods []string, o Options, c BacktestConfig) ([]Score, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if len(methods) == 0 {
		return nil, fmt.Errorf("backtest: no methods")
	}
	if len(series) < c.Warmup+c.Horizon {
		return nil, fmt.Errorf("backtest: series has %d units, need at least warmup+horizon = %d", len(series), c.Warmup+c.Horizon)
	}
	if o.Horizon < c.Horizon {
		o.Horizon = c.Horizon
	}
	names := append([]string(nil), methods...)
	ewmaAt := -1
	for i, m := range names {
		if m == "ewma" {
			ewmaAt = i
		}
	}
	if ewmaAt < 0 {
		names = append(names, "ewma")
		ewmaAt = len(names) - 1
	}
	scores := make([]Score, len(names))
	for i, name := range names {
		f, err := New(name, o)
		if err != nil {
			return nil, err
		}
		s, err := backtestOne(f, series, c)
		if err != nil {
			return nil, err
		}
		scores[i] = s
	}
	base := scores[ewmaAt]
	for i := range scores {
		scores[i].RMSERatio = ratio(scores[i].RMSE, base.RMSE)
		scores[i].MAPERatio = ratio(scores[i].MAPE, base.MAPE)
	}
	return scores[:len(methods)], nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		if a == 0 {
			return 1
		}
		return math.Inf(1)
	}
	return a / b
}

// backtestOne scores a single forecaster.
func backtestOne(f Forecaster, series []float64, c BacktestConfig) (Score, error) {
	tr, _ := f.(Trainer)
	s := Score{Method: f.Name()}
	var se, ape float64
	var apeN int
	next := 0
	for origin := c.Warmup; origin+c.Horizon <= len(series); origin += c.Stride {
		for ; next < origin; next++ {
			f.Observe(series[next])
		}
		if tr != nil {
			steps := c.TrainStepsPerOrigin
			if s.Origins == 0 {
				steps = c.InitialTrainSteps
			}
			s.TrainSteps += tr.Train(steps)
		}
		pred := f.Forecast(c.Horizon)
		if len(pred) != c.Horizon {
			return Score{}, fmt.Errorf("backtest %s: forecast returned %d values, want %d", f.Name(), len(pred), c.Horizon)
		}
		for k, p := range pred {
			a := series[origin+k]
			d := p - a
			se += d * d
			if a > 0 {
				ape += math.Abs(d) / a
				apeN++
			}
		}
		s.Points += c.Horizon
		s.Origins++
	}
	if s.Points > 0 {
		s.RMSE = math.Sqrt(se / float64(s.Points))
	}
	if apeN > 0 {
		s.MAPE = 100 * ape / float64(apeN)
	}
	return s, nil
}
