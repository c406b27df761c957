package measure

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/sloserve/sloserve/internal/ensemble"
	"github.com/sloserve/sloserve/internal/models"
	"github.com/sloserve/sloserve/internal/models/train"
)

// Runner is the part of models.Runner that Collect uses.
type Runner interface {
	Run(ctx context.Context, inputs []models.Tensor) ([]models.Tensor, error)
}

var _ Runner = models.Runner(nil)

// Classifier is one model to measure.
type Classifier struct {
	// Name identifies the model.
	Name string
	// Runner executes it; its first input takes [batch, Dim] float32 rows and its first output
	// is [batch, classes] scores.
	Runner Runner
	// Input names the model's input tensor (empty lets the runtime use its only input).
	Input string
}

// Sample is a labelled set of inputs.
type Sample struct {
	// X holds N rows of Dim float32 values, row-major.
	X []float32
	// Dim is the width of one row.
	Dim int
	// Labels[i] is row i's class.
	Labels []int
}

// Options tunes the measurement.
type Options struct {
	// Batch is the batch size used to compute predictions; ≥ 1 (default 100).
	Batch int
	// LatencyRuns is how many single-request (batch 1) runs measure each model's latency, the
	// median of which is reported; ≥ 1 (default 200). As many runs at LatencyBatch measure the
	// batched latency.
	LatencyRuns int
	// LatencyBatch is the batch size of the second latency measurement; 0 skips it, else ≥ 2
	// (default 8; at most the sample's size).
	LatencyBatch int
	// Clock returns the current time (nil: time.Now).
	Clock func() time.Time
}

// DefaultOptions returns batch 100, 200 latency runs and a batched latency at 8.
func DefaultOptions() Options { return Options{Batch: 100, LatencyRuns: 200, LatencyBatch: 8} }

// Collect runs every classifier over the sample: predictions (argmax of the first output, which
// is also kept as the class probabilities) in batches, then latency as the median of
// opts.LatencyRuns batch-1 runs and as many runs at opts.LatencyBatch, over the first images
// (one warm-up run each first). Models run one after another, never concurrently, and the
// latency runs are interleaved round-robin across models — run r of every model before run r+1
// of any — so load from other processes on a shared machine drifts over all models alike
// instead of penalising whichever model was measured during a busy spell. Each model's Accuracy
// is its accuracy on the sample and its PackingFactor is the slowest model's latency divided by
// its own (how many of its requests fit in the slowest one's time, a stand-in for Table 1's P_f
// on one core).
func Collect(ctx context.Context, cls []Classifier, s Sample, opts Options) (ensemble.Answers, error) {
	if len(cls) == 0 {
		return ensemble.Answers{}, errors.New("collect: no classifiers")
	}
	n := len(s.Labels)
	if s.Dim <= 0 || n == 0 || len(s.X) != n*s.Dim {
		return ensemble.Answers{}, fmt.Errorf("collect: sample has %d values for %d rows of %d", len(s.X), n, s.Dim)
	}
	if opts.Batch < 1 || opts.LatencyRuns < 1 {
		return ensemble.Answers{}, fmt.Errorf("collect: batch %d and latency runs %d must be >= 1", opts.Batch, opts.LatencyRuns)
	}
	if opts.LatencyBatch == 1 || opts.LatencyBatch < 0 {
		return ensemble.Answers{}, fmt.Errorf("collect: latency batch %d must be 0 or >= 2", opts.LatencyBatch)
	}
	lb := min(opts.LatencyBatch, n)
	now := opts.Clock
	if now == nil {
		now = time.Now
	}
	a, err := predict(ctx, cls, s, opts.Batch)
	if err != nil {
		return ensemble.Answers{}, err
	}
	lat, err := latencies(ctx, cls, s, 1, opts.LatencyRuns, now)
	if err != nil {
		return ensemble.Answers{}, err
	}
	slowest := time.Duration(0)
	for i, l := range lat {
		a.Models[i].Latency = l
		slowest = max(slowest, l)
	}
	for i := range a.Models {
		a.Models[i].PackingFactor = float64(slowest) / float64(a.Models[i].Latency)
	}
	if lb >= 2 {
		if a.BatchLatency, err = latencies(ctx, cls, s, lb, opts.LatencyRuns, now); err != nil {
			return ensemble.Answers{}, err
		}
		a.Batch = lb
	}
	return a, nil
}

// CollectSplit is Collect over test plus the same classifiers' predictions on val (no latency
// runs): the validation answers carry the test answers' latencies and packing factors, and
// their own accuracies (what ensemble.Evaluate chooses with).
func CollectSplit(ctx context.Context, cls []Classifier, val, test Sample, opts Options) (v, t ensemble.Answers, err error) {
	if len(val.Labels) == 0 || val.Dim <= 0 || len(val.X) != len(val.Labels)*val.Dim {
		return v, t, fmt.Errorf("collect: validation sample has %d values for %d rows of %d", len(val.X), len(val.Labels), val.Dim)
	}
	if t, err = Collect(ctx, cls, test, opts); err != nil {
		return v, t, err
	}
	if v, err = predict(ctx, cls, val, opts.Batch); err != nil {
		return v, t, err
	}
	for i := range v.Models {
		acc := v.Models[i].Accuracy
		v.Models[i] = t.Models[i]
		v.Models[i].Accuracy = acc
	}
	v.Batch, v.BatchLatency = t.Batch, t.BatchLatency
	return v, t, nil
}

// predict runs every classifier over the sample in batches: predictions (argmax of the first
// output, which is also kept as the class probabilities) and accuracies.
func predict(ctx context.Context, cls []Classifier, s Sample, batch int) (ensemble.Answers, error) {
	n := len(s.Labels)
	a := ensemble.Answers{Labels: s.Labels}
	for _, c := range cls {
		pred := make([]int, 0, n)
		var prob []float32
		for from := 0; from < n; from += batch {
			to := min(n, from+batch)
			out, k, err := run(ctx, c, s, from, to)
			if err != nil {
				return ensemble.Answers{}, err
			}
			switch {
			case a.Classes == 0:
				a.Classes = k
			case k != a.Classes:
				return ensemble.Answers{}, fmt.Errorf("collect %s: %d scores per image, other models give %d", c.Name, k, a.Classes)
			}
			for i := range to - from {
				row := out[i*k : (i+1)*k]
				pred = append(pred, train.Argmax(row))
				prob = append(prob, probabilities(row)...)
			}
		}
		right := 0
		for i, p := range pred {
			if p == s.Labels[i] {
				right++
			}
		}
		a.Models = append(a.Models, ensemble.Model{Name: c.Name, Accuracy: max(float64(right)/float64(n), 1e-9), PackingFactor: 1})
		a.Pred = append(a.Pred, pred)
		a.Prob = append(a.Prob, prob)
	}
	return a, nil
}

// latencies returns each classifier's median latency over runs batches of b consecutive rows,
// interleaved round-robin across classifiers after one warm-up run each.
func latencies(ctx context.Context, cls []Classifier, s Sample, b, runs int, now func() time.Time) ([]time.Duration, error) {
	n := len(s.Labels)
	for _, c := range cls { // warm-up
		if _, _, err := run(ctx, c, s, 0, b); err != nil {
			return nil, err
		}
	}
	lat := make([][]time.Duration, len(cls))
	for r := range runs {
		j := (r * b) % (n - b + 1)
		for m, c := range cls {
			t := now()
			if _, _, err := run(ctx, c, s, j, j+b); err != nil {
				return nil, err
			}
			lat[m] = append(lat[m], now().Sub(t))
		}
	}
	out := make([]time.Duration, len(cls))
	for m, l := range lat {
		slices.Sort(l)
		out[m] = max(l[len(l)/2], time.Nanosecond)
	}
	return out, nil
}

// run scores rows [from, to) and returns the first output's rows and their width.
func run(ctx context.Context, c Classifier, s Sample, from, to int) ([]float32, int, error) {
	b := to - from
	in := models.Tensor{Name: c.Input, Shape: []int64{int64(b), int64(s.Dim)}, Data: s.X[from*s.Dim : to*s.Dim]}
	out, err := c.Runner.Run(ctx, []models.Tensor{in})
	if err != nil {
		return nil, 0, fmt.Errorf("run %s: %w", c.Name, err)
	}
	if len(out) == 0 || len(out[0].Data) == 0 || len(out[0].Data)%b != 0 {
		return nil, 0, fmt.Errorf("run %s: unexpected output for a batch of %d", c.Name, b)
	}
	return out[0].Data, len(out[0].Data) / b, nil
}

// probabilities returns row when it is a probability distribution (non-negative, summing to 1
// within 1e-3: the bundled models end in a softmax), else its softmax, so soft voting always
// adds probabilities. Either way the argmax is row's.
func probabilities(row []float32) []float32 {
	var sum float64
	ok := true
	for _, v := range row {
		ok = ok && v >= 0
		sum += float64(v)
	}
	if ok && math.Abs(sum-1) <= 1e-3 {
		return row
	}
	mx := row[train.Argmax(row)]
	out := make([]float32, len(row))
	sum = 0
	for i, v := range row {
		e := math.Exp(float64(v - mx))
		out[i] = float32(e)
		sum += e
	}
	for i := range out {
		out[i] = float32(float64(out[i]) / sum)
	}
	return out
}
