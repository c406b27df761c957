package forecast

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// LSTMConfig configures the LSTM forecaster. The defaults follow MArk's predictor
// (mark-constants.json, workload/prediction/train.py: 32 neurons, first difference, scaling to
// [−1, 1], a dense multi-step output head) with two changes that make it work as an online,
// resumable learner instead of a Keras script: the input is a window of Lags past units instead
// of a stateful lag-1 stream, and training uses Adam on random mini-batches of windows.
type LSTMConfig struct {
	// Hidden is the number of LSTM cells (MArk: n_neurons = 32).
	Hidden int
	// Lags is how many past units each input window holds.
	Lags int
	// Horizon is the number of units the dense head predicts (MArk: n_seq = 50; here P_w).
	Horizon int
	// Batch is the mini-batch size of one training step.
	Batch int
	// LearningRate is Adam's step size.
	LearningRate float64
	// ClipNorm caps the global gradient norm of one step (0 = no clipping).
	ClipNorm float64
	// Window is how many of the most recent units training samples windows from.
	Window int
	// Seed makes initialisation and sampling deterministic.
	Seed uint64
}

// DefaultLSTMConfig returns 32 cells over 30 lags predicting 60 units, mini-batches of 16,
// Adam with step 3e-3 and gradient clipping at norm 1, training on the last two days of units.
func DefaultLSTMConfig() LSTMConfig {
	return LSTMConfig{Hidden: 32, Lags: 30, Horizon: DefaultWindow, Batch: 16, LearningRate: 3e-3, ClipNorm: 1, Window: 2 * 24 * 60, Seed: 1}
}

// Validate reports the first field that is out of range.
func (c LSTMConfig) Validate() error {
	switch {
	case c.Hidden <= 0:
		return fmt.Errorf("lstm.hidden: must be > 0, got %d", c.Hidden)
	case c.Lags <= 0:
		return fmt.Errorf("lstm.lags: must be > 0, got %d", c.Lags)
	case c.Horizon <= 0:
		return fmt.Errorf("lstm.horizon: must be > 0, got %d", c.Horizon)
	case c.Batch <= 0:
		return fmt.Errorf("lstm.batch: must be > 0, got %d", c.Batch)
	case !(c.LearningRate > 0):
		return fmt.Errorf("lstm.learning_rate: must be > 0, got %v", c.LearningRate)
	case !(c.ClipNorm >= 0):
		return fmt.Errorf("lstm.clip_norm: must be >= 0, got %v", c.ClipNorm)
	case c.Window < c.Lags+c.Horizon+1:
		return fmt.Errorf("lstm.window: must be >= lags+horizon+1 = %d, got %d", c.Lags+c.Horizon+1, c.Window)
	}
	return nil
}

// lstmFeatures is the input width: the scaled first difference and the scaled level.
const lstmFeatures = 2

// LSTM is a single-layer LSTM (Hochreiter & Schmidhuber) with a dense multi-step head, written in
// plain Go: forward pass, backpropagation through time and Adam. The series is differenced and
// scaled (MArk's preprocessing); the net reads Lags steps of (Δx, x) and outputs the next Horizon
// differences, which are integrated from the last value.
//
//	z_t = W_x x_t + W_h h_{t−1} + b        (4H: input i, forget f, cell g, output o)
//	c_t = σ(f)⊙c_{t−1} + σ(i)⊙tanh(g)      h_t = σ(o)⊙tanh(c_t)
//	ŷ   = V h_L + c                        (Horizon scaled differences)
//
// Loss: mean squared error over the head. Until it has trained on at least one step, or while
// the history is shorter than Lags+1, Forecast falls back to the last value.
type LSTM struct {
	cfg     LSTMConfig
	hist    []float64
	rng     *rand.Rand
	params  []float64
	grads   []float64
	m, v    []float64 // Adam moments
	t       int       // Adam step count
	trained int
	// scales, refreshed at each Train call from the training window unless fixed (a loaded
	// model keeps the scaling its weights were trained with)
	dScale, lScale, lMean float64
	fixedScales           bool
	// offsets into params
	oWx, oWh, oB, oV, oC int
	ws                   lstmWork
}

var (
	_ Forecaster = (*LSTM)(nil)
	_ Trainer    = (*LSTM)(nil)
)

// lstmWork holds the per-sequence caches reused across samples (no allocation per step).
type lstmWork struct {
	x              [][lstmFeatures]float64
	h, c           [][]float64 // L+1 rows
	i, f, g, o     [][]float64
	y, dy          []float64
	dh, dc, dz     []float64
	dhPrev, dcPrev []float64
}

// NewLSTM returns an untrained LSTM forecaster.
func NewLSTM(c LSTMConfig) (*LSTM, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	H, K := c.Hidden, c.Horizon
	l := &LSTM{cfg: c, rng: rand.New(rand.NewPCG(c.Seed, 0x6d61726b)), dScale: 1, lScale: 1}
	l.oWx = 0
	l.oWh = l.oWx + 4*H*lstmFeatures
	l.oB = l.oWh + 4*H*H
	l.oV = l.oB + 4*H
	l.oC = l.oV + K*H
	n := l.oC + K
	l.params = make([]float64, n)
	l.grads = make([]float64, n)
	l.m = make([]float64, n)
	l.v = make([]float64, n)
	bound := 1 / math.Sqrt(float64(H))
	for i := range l.oB {
		l.params[i] = (2*l.rng.Float64() - 1) * bound
	}
	for j := range H { // forget-gate bias 1 (Jozefowicz et al. 2015)
		l.params[l.oB+H+j] = 1
	}
	for i := l.oV; i < l.oC; i++ {
		l.params[i] = (2*l.rng.Float64() - 1) * bound
	}
	L := c.Lags
	w := &l.ws
	w.x = make([][lstmFeatures]float64, L)
	mk := func(rows, cols int) [][]float64 {
		r := make([][]float64, rows)
		for i := range r {
			r[i] = make([]float64, cols)
		}
		return r
	}
	w.h, w.c = mk(L+1, H), mk(L+1, H)
	w.i, w.f, w.g, w.o = mk(L, H), mk(L, H), mk(L, H), mk(L, H)
	w.y, w.dy = make([]float64, K), make([]float64, K)
	w.dh, w.dc, w.dz = make([]float64, H), make([]float64, H), make([]float64, 4*H)
	w.dhPrev, w.dcPrev = make([]float64, H), make([]float64, H)
	return l, nil
}

// Name returns "lstm".
func (*LSTM) Name() string { return "lstm" }

// Observe appends a value to the history training samples from.
func (l *LSTM) Observe(v float64) { l.hist = appendBounded(l.hist, clean(v), l.cfg.Window) }

// Trained returns the number of optimisation steps run so far.
func (l *LSTM) Trained() int { return l.trained }

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// refreshScales sets the scaling of differences and levels from the training window (MinMax to
// [−1, 1] in MArk; here max |Δx| and mean ± max deviation, which is the same map for a symmetric
// range and cannot divide by zero).
func (l *LSTM) refreshScales(x []float64) {
	var mean float64
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	var ds, ls float64
	for i, v := range x {
		if i > 0 {
			ds = math.Max(ds, math.Abs(v-x[i-1]))
		}
		ls = math.Max(ls, math.Abs(v-mean))
	}
	l.dScale, l.lScale, l.lMean = math.Max(ds, 1e-9), math.Max(ls, 1e-9), mean
}

// load fills the input window from x[end-Lags-1 .. end-1] (needs end ≥ Lags+1).
func (l *LSTM) load(x []float64, end int) {
	L := l.cfg.Lags
	for k := range L {
		t := end - L + k
		l.ws.x[k] = [lstmFeatures]float64{(x[t] - x[t-1]) / l.dScale, (x[t] - l.lMean) / l.lScale}
	}
}

// forward runs the net over the loaded window and leaves ŷ in ws.y.
func (l *LSTM) forward() {
	H, L, K := l.cfg.Hidden, l.cfg.Lags, l.cfg.Horizon
	p, w := l.params, &l.ws
	clear(w.h[0])
	clear(w.c[0])
	z := w.dz // reused as the pre-activation buffer in the forward pass
	for t := range L {
		hp, cp, x := w.h[t], w.c[t], w.x[t]
		for j := range 4 * H {
			wx := p[l.oWx+j*lstmFeatures : l.oWx+(j+1)*lstmFeatures]
			acc := p[l.oB+j] + wx[0]*x[0] + wx[1]*x[1]
			wh := p[l.oWh+j*H : l.oWh+(j+1)*H]
			wh = wh[:len(hp)]
			for k, hv := range hp {
				acc += wh[k] * hv
			}
			z[j] = acc
		}
		gi, gf, gg, gout := w.i[t], w.f[t], w.g[t], w.o[t]
		for u := range H {
			gi[u] = sigmoid(z[u])
			gf[u] = sigmoid(z[H+u])
			gg[u] = math.Tanh(z[2*H+u])
			gout[u] = sigmoid(z[3*H+u])
			c := gf[u]*cp[u] + gi[u]*gg[u]
			w.c[t+1][u] = c
			w.h[t+1][u] = gout[u] * math.Tanh(c)
		}
	}
	hL := w.h[L]
	for k := range K {
		y := p[l.oC+k]
		row := p[l.oV+k*H : l.oV+(k+1)*H]
		for u, hv := range hL {
			y += row[u] * hv
		}
		w.y[k] = y
	}
}

// backward accumulates into grads the gradient of scale·Σ_k dy_k ŷ_k, given dy in ws.dy.
func (l *LSTM) backward() {
	H, L, K := l.cfg.Hidden, l.cfg.Lags, l.cfg.Horizon
	p, g, w := l.params, l.grads, &l.ws
	hL := w.h[L]
	clear(w.dh)
	for k := range K {
		d := w.dy[k]
		g[l.oC+k] += d
		row := p[l.oV+k*H : l.oV+(k+1)*H]
		grow := g[l.oV+k*H : l.oV+(k+1)*H]
		for u := range H {
			grow[u] += d * hL[u]
			w.dh[u] += d * row[u]
		}
	}
	clear(w.dc)
	for t := L - 1; t >= 0; t-- {
		for u := range H {
			tc := math.Tanh(w.c[t+1][u])
			o, i, f, gg := w.o[t][u], w.i[t][u], w.f[t][u], w.g[t][u]
			dc := w.dc[u] + w.dh[u]*o*(1-tc*tc)
			w.dz[u] = dc * gg * i * (1 - i)          // input gate
			w.dz[H+u] = dc * w.c[t][u] * f * (1 - f) // forget gate
			w.dz[2*H+u] = dc * i * (1 - gg*gg)       // cell candidate
			w.dz[3*H+u] = w.dh[u] * tc * o * (1 - o) // output gate
			w.dcPrev[u] = dc * f
		}
		clear(w.dhPrev)
		hp, x := w.h[t], w.x[t]
		for j := range 4 * H {
			dz := w.dz[j]
			if dz == 0 {
				continue
			}
			g[l.oB+j] += dz
			gx := g[l.oWx+j*lstmFeatures:]
			for k := range lstmFeatures {
				gx[k] += dz * x[k]
			}
			wh := p[l.oWh+j*H : l.oWh+(j+1)*H]
			gh := g[l.oWh+j*H : l.oWh+(j+1)*H]
			dhp := w.dhPrev[:len(wh)]
			gh = gh[:len(wh)]
			hp := hp[:len(wh)]
			for k, wv := range wh {
				gh[k] += dz * hp[k]
				dhp[k] += dz * wv
			}
		}
		copy(w.dh, w.dhPrev)
		copy(w.dc, w.dcPrev)
	}
}

// loss loads the window ending at end, runs forward, sets dy for MSE against the next Horizon
// scaled differences (weighted by weight) and returns the sample's squared error.
func (l *LSTM) loss(x []float64, end int, weight float64) float64 {
	l.load(x, end)
	l.forward()
	K := l.cfg.Horizon
	var se float64
	for k := range K {
		target := (x[end+k] - x[end+k-1]) / l.dScale
		d := l.ws.y[k] - target
		se += d * d
		l.ws.dy[k] = weight * 2 * d / float64(K)
	}
	return se / float64(K)
}

// Train runs up to steps Adam steps on mini-batches of windows drawn from the history and
// returns how many it ran (0 while the history is shorter than Lags+Horizon+1).
func (l *LSTM) Train(steps int) int {
	L, K, B := l.cfg.Lags, l.cfg.Horizon, l.cfg.Batch
	x := tail(l.hist, l.cfg.Window)
	if steps <= 0 || len(x) < L+K+1 {
		return 0
	}
	if !l.fixedScales {
		l.refreshScales(x)
	}
	lo, hi := L+1, len(x)-K // window end positions: x[end-L-1 .. end-1] inputs, x[end .. end+K-1] targets
	for range steps {
		clear(l.grads)
		for range B {
			end := lo + l.rng.IntN(hi-lo+1)
			l.loss(x, end, 1/float64(B))
			l.backward()
		}
		l.adam()
	}
	l.trained += steps
	return steps
}

// Adam hyper-parameters (Kingma & Ba 2015 defaults).
const (
	adamBeta1 = 0.9
	adamBeta2 = 0.999
	adamEps   = 1e-8
)

func (l *LSTM) adam() {
	if c := l.cfg.ClipNorm; c > 0 {
		var n float64
		for _, g := range l.grads {
			n += g * g
		}
		if n = math.Sqrt(n); n > c {
			s := c / n
			for i := range l.grads {
				l.grads[i] *= s
			}
		}
	}
	l.t++
	b1t := 1 - math.Pow(adamBeta1, float64(l.t))
	b2t := 1 - math.Pow(adamBeta2, float64(l.t))
	lr := l.cfg.LearningRate
	for i, g := range l.grads {
		l.m[i] = adamBeta1*l.m[i] + (1-adamBeta1)*g
		l.v[i] = adamBeta2*l.v[i] + (1-adamBeta2)*g*g
		l.params[i] -= lr * (l.m[i] / b1t) / (math.Sqrt(l.v[i]/b2t) + adamEps)
	}
}

// Forecast returns the next h values: the predicted differences integrated from the last value;
// beyond Horizon the last predicted value is repeated.
func (l *LSTM) Forecast(h int) []float64 {
	if h <= 0 {
		return nil
	}
	n := len(l.hist)
	if n == 0 {
		return make([]float64, h)
	}
	last := l.hist[n-1]
	if l.trained == 0 || n < l.cfg.Lags+1 {
		return flat(last, h)
	}
	l.load(l.hist, n)
	l.forward()
	out := make([]float64, h)
	level := last
	for k := range h {
		if k < l.cfg.Horizon {
			level += l.ws.y[k] * l.dScale
		}
		out[k] = nonNeg(level)
	}
	return out
}
