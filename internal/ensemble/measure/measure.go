package measure

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sloserve/sloserve/internal/ensemble"
	"github.com/sloserve/sloserve/internal/models"
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
	// median of which is reported; ≥ 1 (default 200).
	LatencyRuns int
	// Clock returns the current time (nil: time.Now).
	Clock func() time.Time
}

// DefaultOptions returns batch 100 and 200 latency runs.
func DefaultOptions() Options { return Options{Batch: 100, LatencyRuns: 200} }

// Collect runs every classifier over the sample: predictions (argmax of the first output) in
// batches, and latency as the median of opts.LatencyRuns batch-1 runs over the first images
// (one warm-up run first). Models run one after another so their latencies do not interfere.
// Each model's Accuracy is its accuracy on the sample and its PackingFactor is the slowest
// model's latency divided by its own (how many of its requests fit in the slowest one's time,
// a stand-in for Table 1's P_f on one core).
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
	now := opts.Clock
	if now == nil {
		now = time.Now
	}
	a := ensemble.Answers{Labels: s.Labels}
	for _, c := range cls {
		pred := make([]int, 0, n)
		for from := 0; from < n; from += opts.Batch {
			to := min(n, from+opts.Batch)
			out, err := run(ctx, c, s, from, to)
			if err != nil {
				return ensemble.Answers{}, err
			}
			pred = append(pred, out...)
		}
		right := 0
		for i, p := range pred {
			if p == s.Labels[i] {
				right++
			}
		}
		if _, err := run(ctx, c, s, 0, 1); err != nil { // warm-up
			return ensemble.Answers{}, err
		}
		lat := make([]time.Duration, opts.LatencyRuns)
		for i := range lat {
			j := i % n
			t := now()
			if _, err := run(ctx, c, s, j, j+1); err != nil {
				return ensemble.Answers{}, err
			}
			lat[i] = now().Sub(t)
		}
		slices.Sort(lat)
		med := max(lat[len(lat)/2], time.Nanosecond)
		a.Models = append(a.Models, ensemble.Model{Name: c.Name, Latency: med,
			Accuracy: max(float64(right)/float64(n), 1e-9), PackingFactor: 1})
		a.Pred = append(a.Pred, pred)
	}
	slowest := time.Duration(0)
	for _, m := range a.Models {
		slowest = max(slowest, m.Latency)
	}
	for i := range a.Models {
		a.Models[i].PackingFactor = float64(slowest) / float64(a.Models[i].Latency)
	}
	return a, nil
}

// run classifies rows [from, to) and returns the argmax class of each.
func run(ctx context.Context, c Classifier, s Sample, from, to int) ([]int, error) {
	b := to - from
	in := models.Tensor{Name: c.Input, Shape: []int64{int64(b), int64(s.Dim)}, Data: s.X[from*s.Dim : to*s.Dim]}
	out, err := c.Runner.Run(ctx, []models.Tensor{in})
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", c.Name, err)
	}
	if len(out) == 0 || len(out[0].Data) == 0 || len(out[0].Data)%b != 0 {
		return nil, fmt.Errorf("run %s: unexpected output for a batch of %d", c.Name, b)
	}
	k := len(out[0].Data) / b
	res := make([]int, b)
	for i := range b {
		row := out[0].Data[i*k : (i+1)*k]
		best := 0
		for j, v := range row {
			if v > row[best] {
				best = j
			}
		}
		res[i] = best
	}
	return res, nil
}
