package batcher

import (
	"context"
	"iter"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/dispatch"
	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/slo"
)

// delayedBackend waits wait before each batch (a cold start), reported or not, then answers.
type delayedBackend struct {
	wait   time.Duration
	report bool
	n      atomic.Int64
}

func (d *delayedBackend) Infer(ctx context.Context, _, model string, reqs []*oip.InferenceRequest) ([]*oip.InferenceResponse, error) {
	time.Sleep(d.wait)
	if d.report {
		ReportStartDelay(ctx, d.wait)
	}
	d.n.Add(1)
	out := make([]*oip.InferenceResponse, len(reqs))
	for i := range out {
		out[i] = &oip.InferenceResponse{ModelName: model}
	}
	return out, nil
}

func (*delayedBackend) Metadata(context.Context, string, string) (*oip.ModelMetadata, error) {
	return &oip.ModelMetadata{}, nil
}

type quietObserver struct{}

func (quietObserver) QueueLength(int)                                        {}
func (quietObserver) BatchSize(int)                                          {}
func (quietObserver) InstanceCounts(int, int)                                {}
func (quietObserver) Answered(time.Duration, time.Duration)                  {}
func (quietObserver) Executed(int64, time.Duration, iter.Seq[time.Duration]) {}

// TestStartDelayLeftOutOfTheCost: a backend that waits 150 ms before each batch (a cold start
// or a wait for an instance) and reports it leaves the batch cost estimate near zero; the same
// wait unreported is fitted as the batch's cost. Admission would refuse on the latter.
func TestStartDelayLeftOutOfTheCost(t *testing.T) {
	const wait = 150 * time.Millisecond
	costOf := func(report bool) BatchCost {
		be := &delayedBackend{wait: wait, report: report}
		picker, err := dispatch.New(dispatch.DefaultName)
		if err != nil {
			t.Fatal(err)
		}
		b := New(Config{Model: Model{Name: "m", SLO: slo.Spec{Threshold: 2 * time.Second, Target: 0.9}, Policy: batching.None{},
			QueueLimit: 8, Slots: 1}, Picker: picker, Backend: be, Timeout: 5 * time.Second, Log: slog.New(slog.DiscardHandler), Observer: quietObserver{}})
		go b.Run()
		defer b.Stop(context.Background())
		if err := b.AddInstance(Instance{ID: "i", Addr: "x://i", Slots: 1}); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := b.Submit(context.Background(), &oip.InferenceRequest{}, 1, 0, time.Now(), 2*time.Second); err != nil {
				t.Fatal(err)
			}
		}
		return b.Cost()
	}
	if c := costOf(true); c.Of(1) >= wait/2 {
		t.Errorf("reported start delay: batch cost of 1 row %v, want well below the %v wait", c.Of(1), wait)
	}
	if c := costOf(false); c.Of(1) < wait {
		t.Errorf("unreported: batch cost of 1 row %v, want the %v wait fitted", c.Of(1), wait)
	}
}
