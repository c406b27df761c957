// Package pool runs independent jobs on a fixed number of goroutines: the scoreboard's runs
// (issue #17 item 6, docs/scoreboard.md "Speed"). It lives apart from internal/experiment so that
// the experiments' own tests stay on one goroutine and run without the race detector
// (tools/racefree); the command line hands the pool in (experiment.ScoreboardConfig.Pool).
package pool

import (
	"context"
	"runtime"
	"sync"
)

// Run calls do(0 … n−1), each once, on workers goroutines (≤ 0: GOMAXPROCS) and waits for them.
// Indices are handed out in order; once ctx is done no further index is handed out. With one
// worker every call runs on the caller's goroutine.
func Run(ctx context.Context, workers, n int, do func(i int)) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if workers == 1 || n <= 1 {
		for i := 0; i < n && ctx.Err() == nil; i++ {
			do(i)
		}
		return
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				do(i)
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// New returns Run with a fixed number of workers (≤ 0: GOMAXPROCS), in the shape
// experiment.ScoreboardConfig.Pool takes.
func New(workers int) func(ctx context.Context, n int, do func(i int)) {
	return func(ctx context.Context, n int, do func(i int)) { Run(ctx, workers, n, do) }
}
