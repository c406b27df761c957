package dashboard

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// recording is a Source that records when it was asked; block makes it wait for ctx.
type recording struct {
	mu    sync.Mutex
	nows  []time.Time
	errs  []error
	block bool
}

func (r *recording) Sample(ctx context.Context, now time.Time) ([]ModelSample, error) {
	var err error
	if r.block {
		<-ctx.Done()
		err = ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nows = append(r.nows, now)
	r.errs = append(r.errs, err)
	if err != nil {
		return nil, err
	}
	return []ModelSample{sample("m", float64(len(r.nows)))}, nil
}

func (r *recording) offsets(start time.Time) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]time.Duration, len(r.nows))
	for i, n := range r.nows {
		out[i] = n.Sub(start)
	}
	return out
}

func TestRunSamplesEveryInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &recording{}
		d := newTest(t, src, Options{Interval: time.Second, Capacity: 3})
		ctx, cancel := context.WithCancel(t.Context())
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()

		synctest.Wait()
		if diff := diffJSON([]time.Duration{0}, src.offsets(start)); diff != "" {
			t.Errorf("samples right after Run (-want +got):\n%s", diff)
		}
		time.Sleep(2500 * time.Millisecond)
		synctest.Wait()
		if diff := diffJSON([]time.Duration{0, time.Second, 2 * time.Second}, src.offsets(start)); diff != "" {
			t.Errorf("samples after 2.5 s (-want +got):\n%s", diff)
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if got := d.Len(); got != 3 {
			t.Errorf("Len() after 6 samples with capacity 3 = %d, want 3", got)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run after cancel = %v, want nil", err)
		}
	})
}

func TestRunBoundsASlowSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &recording{block: true}
		d := newTest(t, src, Options{Interval: 2 * time.Second})
		ctx, cancel := context.WithCancel(t.Context())
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()

		time.Sleep(2*time.Second - time.Nanosecond)
		synctest.Wait()
		if n := len(src.offsets(start)); n != 0 {
			t.Fatalf("the blocked sample returned before its interval: %d samples", n)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if diff := diffJSON([]time.Duration{0}, src.offsets(start)); diff != "" {
			t.Errorf("samples (-want +got):\n%s", diff)
		}
		if src.errs[0] != context.DeadlineExceeded {
			t.Errorf("the slow Source saw %v, want context.DeadlineExceeded after one interval", src.errs[0])
		}
		_, data, _ := getData(t, d, nil)
		if data.SourceErrors != 1 || data.LastError == "" {
			t.Errorf("source_errors = %d, last_error = %q; want 1 and the deadline error", data.SourceErrors, data.LastError)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run after cancel = %v, want nil", err)
		}
	})
}
