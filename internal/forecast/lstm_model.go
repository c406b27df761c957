package forecast

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// LSTMModel is a trained LSTM's weights and input scaling, as `sloserve forecast train` writes
// them and `forecast backtest --model` and the mark policy's forecast_model read them. MArk
// trains its predictor offline on months of history (§4.2); a saved model lets a run start from
// that instead of an untrained net.
type LSTMModel struct {
	// Format names the file format and its version.
	Format string `json:"format"`
	// Config is the net's shape and training setup.
	Config LSTMConfig `json:"config"`
	// Trained is how many optimisation steps produced Params.
	Trained int `json:"trained_steps"`
	// DScale, LScale and LMean scale the inputs (first differences and levels, requests/s).
	DScale float64 `json:"d_scale"`
	LScale float64 `json:"l_scale"`
	LMean  float64 `json:"l_mean"`
	// Params are the weights: W_x, W_h, b, V, c (NewLSTM's layout).
	Params []float64 `json:"params"`
}

// LSTMModelFormat is the Format of the files this version writes and reads.
const LSTMModelFormat = "sloserve-lstm/v1"

// ErrBadModel means a saved LSTM model cannot be used.
var ErrBadModel = errors.New("bad LSTM model")

// Model returns the LSTM's weights and scaling (a copy).
func (l *LSTM) Model() LSTMModel {
	return LSTMModel{Format: LSTMModelFormat, Config: l.cfg, Trained: l.trained, DScale: l.dScale, LScale: l.lScale, LMean: l.lMean,
		Params: append([]float64(nil), l.params...)}
}

// NewLSTMFromModel returns an LSTM with a saved model's weights and scaling: it forecasts at
// once (after Lags+1 observed units) and keeps learning when trained, with the model's input
// scaling (the weights were trained for it); Adam's moments start afresh.
func NewLSTMFromModel(m LSTMModel) (*LSTM, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	l, err := NewLSTM(m.Config)
	if err != nil {
		return nil, err
	}
	copy(l.params, m.Params)
	l.trained, l.dScale, l.lScale, l.lMean = m.Trained, m.DScale, m.LScale, m.LMean
	l.fixedScales = true
	return l, nil
}

// Validate reports why a model cannot be loaded: wrong format, an invalid config, a weight count
// that does not match it, or non-finite values.
func (m LSTMModel) Validate() error {
	if m.Format != LSTMModelFormat {
		return fmt.Errorf("%w: format %q, want %q", ErrBadModel, m.Format, LSTMModelFormat)
	}
	if err := m.Config.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadModel, err)
	}
	H, K := m.Config.Hidden, m.Config.Horizon
	if H > 4096 || K > 1<<16 || m.Config.Lags > 1<<16 || m.Config.Batch > 1<<16 {
		return fmt.Errorf("%w: %d cells, %d lags, horizon %d, batch %d: too large", ErrBadModel, H, m.Config.Lags, K, m.Config.Batch)
	}
	if want := 4*H*lstmFeatures + 4*H*H + 4*H + K*H + K; len(m.Params) != want {
		return fmt.Errorf("%w: %d params, the config needs %d", ErrBadModel, len(m.Params), want)
	}
	for _, v := range append([]float64{m.DScale, m.LScale, m.LMean}, m.Params...) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: non-finite value", ErrBadModel)
		}
	}
	if !(m.DScale > 0 && m.LScale > 0) || m.Trained < 0 {
		return fmt.Errorf("%w: scales %v, %v and trained steps %d must be positive", ErrBadModel, m.DScale, m.LScale, m.Trained)
	}
	return nil
}

// WriteLSTMModel writes m as JSON.
func WriteLSTMModel(w io.Writer, m LSTMModel) error {
	enc := json.NewEncoder(w)
	if err := enc.Encode(m); err != nil {
		return fmt.Errorf("write lstm model: %w", err)
	}
	return nil
}

// ReadLSTMModel reads and validates a model WriteLSTMModel wrote.
func ReadLSTMModel(r io.Reader) (LSTMModel, error) {
	var m LSTMModel
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return LSTMModel{}, fmt.Errorf("read lstm model: %w: %w", ErrBadModel, err)
	}
	if err := m.Validate(); err != nil {
		return LSTMModel{}, fmt.Errorf("read lstm model: %w", err)
	}
	return m, nil
}

// ReadLSTMModelFile reads a model file (ReadLSTMModel).
func ReadLSTMModelFile(path string) (LSTMModel, error) {
	f, err := os.Open(path)
	if err != nil {
		return LSTMModel{}, fmt.Errorf("read lstm model: %w", err)
	}
	defer f.Close()
	return ReadLSTMModel(f)
}

// TrainLSTM trains a fresh LSTM on a whole series of unit maxima (requests/s): the training
// window is the series itself (at least c.Window units), so every part of the history is
// sampled, as MArk trains on its history offline. It returns the trained model.
func TrainLSTM(series []float64, c LSTMConfig, steps int) (LSTMModel, error) {
	c.Window = max(c.Window, len(series))
	l, err := NewLSTM(c)
	if err != nil {
		return LSTMModel{}, err
	}
	for _, v := range series {
		l.Observe(v)
	}
	if steps <= 0 {
		return LSTMModel{}, fmt.Errorf("train lstm: steps must be > 0, got %d", steps)
	}
	if l.Train(steps) == 0 {
		return LSTMModel{}, fmt.Errorf("train lstm: %d units, need at least lags+horizon+1 = %d", len(series), c.Lags+c.Horizon+1)
	}
	return l.Model(), nil
}
