package forecast

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Forecaster predicts the next values of a series of per-unit peak rates (MArk §4.2: "users can
// replace the LSTM method with other prediction methods via MArk's APIs"). Implementations are
// pure: no clock, no goroutines, no I/O. A Forecaster is owned by one goroutine; the runtime that
// trains an LSTM in the background serialises Observe, Forecast and Train itself.
type Forecaster interface {
	// Name returns the registered method name.
	Name() string
	// Observe appends the next unit's value (requests/s, ≥ 0; negative and NaN values count as 0).
	Observe(v float64)
	// Forecast returns the next h values (len h, each ≥ 0). With no history it returns zeros.
	Forecast(h int) []float64
}

// Trainer is implemented by forecasters that learn in the background (the LSTM). Train runs at
// most steps optimisation steps on the history observed so far and returns how many it ran; it
// is resumable (state persists between calls) and deterministic for a seed and call sequence.
// The live runtime calls it from its own goroutine, the simulator between events.
type Trainer interface {
	Train(steps int) int
}

// Options are the settings shared by every method's factory.
type Options struct {
	// Horizon is the largest h the caller will ask for (P_w units); the LSTM's output layer has
	// this many units.
	Horizon int
	// Season is the seasonal period in units for Holt-Winters (1440 for a daily cycle of minutes).
	Season int
	// Seed makes stochastic methods (the LSTM's initialisation and sampling) deterministic.
	Seed uint64
	// LSTM, when set, is a pre-trained model (TrainLSTM, `sloserve forecast train`) the lstm
	// method starts from instead of an untrained net; its own horizon and seed apply.
	LSTM *LSTMModel
}

// DefaultOptions returns Horizon = P_w = 60 units, a daily season of 1440 one-minute units, seed 1.
func DefaultOptions() Options { return Options{Horizon: DefaultWindow, Season: 24 * 60, Seed: 1} }

// Validate reports the first field that is out of range.
func (o Options) Validate() error {
	switch {
	case o.Horizon <= 0:
		return fmt.Errorf("forecast.horizon: must be > 0, got %d", o.Horizon)
	case o.Season < 2:
		return fmt.Errorf("forecast.season: must be >= 2 units, got %d", o.Season)
	}
	return nil
}

// Factory builds a Forecaster from the shared options.
type Factory func(Options) (Forecaster, error)

// ErrUnknownMethod is returned by New for a name that is not registered.
var ErrUnknownMethod = errors.New("unknown forecasting method")

// factories is the fixed table of registered methods; it is never mutated.
func factories() map[string]Factory {
	return map[string]Factory{
		"naive": func(Options) (Forecaster, error) { return NewNaive(), nil },
		"ewma":  func(Options) (Forecaster, error) { return NewEWMA(DefaultEWMAAlpha) },
		"holt-winters": func(o Options) (Forecaster, error) {
			c := DefaultHoltWintersConfig()
			c.Season = o.Season
			return NewHoltWinters(c)
		},
		"ar": func(Options) (Forecaster, error) { return NewAR(DefaultARConfig()) },
		"lstm": func(o Options) (Forecaster, error) {
			if o.LSTM != nil {
				return NewLSTMFromModel(*o.LSTM)
			}
			c := DefaultLSTMConfig()
			c.Horizon, c.Seed = o.Horizon, o.Seed
			return NewLSTM(c)
		},
	}
}

// Methods returns the registered method names, sorted.
func Methods() []string {
	f := factories()
	names := make([]string, 0, len(f))
	for n := range f {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// New returns a fresh Forecaster of the named method.
func New(name string, o Options) (Forecaster, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	f, ok := factories()[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownMethod, name, strings.Join(Methods(), ", "))
	}
	return f(o)
}

// clean maps negative, NaN and infinite observations to 0.
func clean(v float64) float64 {
	if v > 0 && !math.IsInf(v, 1) {
		return v
	}
	return 0
}

// nonNeg clamps a forecast value to ≥ 0 and maps NaN to 0.
func nonNeg(v float64) float64 {
	if v > 0 && !math.IsInf(v, 1) {
		return v
	}
	if math.IsInf(v, 1) {
		return math.MaxFloat64
	}
	return 0
}

// appendBounded appends v to s, keeping at most max values.
func appendBounded(s []float64, v float64, max int) []float64 {
	s = append(s, v)
	if over := len(s) - max; over > 0 && over > max/4 {
		s = append(s[:0], s[over:]...)
	}
	return s
}

// tail returns the last max values of s (s itself when shorter).
func tail(s []float64, max int) []float64 {
	if len(s) > max {
		return s[len(s)-max:]
	}
	return s
}
